#!/usr/bin/env bash
# Quick mode of the benchmark suite, so that it cannot rot (run by `cargo test`, crates/cli/tests/
# e2e_bench_quick.rs; under 2 minutes): a small TSBS cpu-only data set, Tempora (PostgreSQL and
# HTTP) and DuckDB side by side through bench/peers/setup.sh, every query type checked to return
# the same rows on every system, then the report with its charts.
#
#   TEMPORA_BIN=target/release/tempora bench/quick.sh [WORK_DIR]
#
# Everything lives under WORK_DIR (default: a new temporary directory): data, servers, results
# (results.jsonl) and the report (report/report.md and its PNGs). The full run is
# `bench/peers/setup.sh bench all` (see docs/benchmarks.md).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=${1:-$(mktemp -d)}
mkdir -p "$WORK"
export TEMPORA_BIN=${TEMPORA_BIN:?set TEMPORA_BIN to the tempora binary}
export PEERS=$WORK/peers DATA_DIR=$WORK/data RESULTS=$WORK/results.jsonl
# 13 h: the longest TSBS window (12 h) must fit inside the data; 10 hosts: the types that draw
# 8 hosts (single-groupby-*-8-1, cpu-max-all-8) need at least 8.
export HOSTS=${HOSTS:-10} DURATION_SECS=${DURATION_SECS:-46800}
export BENCH_HTTP_PORT=${BENCH_HTTP_PORT:-18096} BENCH_PG_PORT=${BENCH_PG_PORT:-15443}
rm -f "$RESULTS"
"$HERE/peers/setup.sh" bench tempora,duckdb --runs 3 --warmup 1
python3 "$HERE/tsbs_queries.py" --table-from "$RESULTS" --check-same-rows > /dev/null
python3 "$HERE/report.py" "$RESULTS" --out-dir "$WORK/report" --markdown "$WORK/report/report.md" \
  --title "Tempora benchmark, quick mode ($HOSTS hosts x $((DURATION_SECS / 3600)) h)"
echo "quick benchmark: same rows on every system; report in $WORK/report/report.md"
