#!/usr/bin/env bash
# Long fuzz runs, one target after another: each runs until 10 million inputs (or MAXT s),
# with the issue's bounds (1 GiB RSS, 1 s per input), keeping its corpus and artifacts.
#
#   (cd fuzz && cargo +nightly fuzz build -O)      # once; CARGO_TARGET_DIR is honoured
#   scripts/fuzz-long.sh sql lineproto csv_import influxql prometheus
#
# FUZZ_BIN   where the built targets are (default $CARGO_TARGET_DIR or fuzz/target, then
#            x86_64-unknown-linux-gnu/release)
# FUZZ_DIR   corpora (FUZZ_DIR/corpus/T), artifacts (FUZZ_DIR/artifacts/T/) and logs
#            (FUZZ_DIR/logs/T.log) (default /var/tmp/fuzz)
# RUNS       inputs per target (default 10000000); MAXT seconds at most (default 7200)
# RSS_MB     libFuzzer's -rss_limit_mb (default 1024); -malloc_limit_mb is always 1024, the
#            issue's bound on one allocation. A target whose corpus and ASan quarantine start
#            near 800 MiB (prometheus, 2026-12-08) runs with RSS_MB=2048: the process's size
#            is not the bound, one allocation is.
# NICE       niceness (default 0). libFuzzer's -timeout is wall-clock time: a fuzzer at nice 19
#            beside a build or a test run is starved for seconds and reports a timeout that is
#            not one (seen 2026-12-07), so run at the same priority as the rest or alone.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/fuzz/target}
FUZZ_BIN=${FUZZ_BIN:-$TARGET_DIR/x86_64-unknown-linux-gnu/release}
FUZZ_DIR=${FUZZ_DIR:-/var/tmp/fuzz}
RUNS=${RUNS:-10000000}
MAXT=${MAXT:-7200}
NICE=${NICE:-0}
RSS_MB=${RSS_MB:-1024}
[ $# -gt 0 ] || { echo "usage: $0 TARGET..." >&2; exit 2; }
for t in "$@"; do
  bin=$FUZZ_BIN/$t
  [ -x "$bin" ] || { echo "no fuzz binary $bin (build first: cd fuzz && cargo +nightly fuzz build -O)" >&2; exit 1; }
  mkdir -p "$FUZZ_DIR/corpus/$t" "$FUZZ_DIR/artifacts/$t" "$FUZZ_DIR/logs"
  log=$FUZZ_DIR/logs/$t.log
  echo "[fuzz] $t: started $(date -u +%FT%TZ), log $log" >&2
  start=$(date +%s)
  set +e
  nice -n "$NICE" "$bin" -runs="$RUNS" -max_total_time="$MAXT" -rss_limit_mb="$RSS_MB" -malloc_limit_mb=1024 -timeout=1 \
    -print_final_stats=1 -artifact_prefix="$FUZZ_DIR/artifacts/$t/" "$FUZZ_DIR/corpus/$t" >"$log" 2>&1
  rc=$?
  set -e
  end=$(date +%s)
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  rss=$(grep -o 'stat::peak_rss_mb: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  echo "[fuzz] $t: exit $rc, ${runs:-?} inputs in $((end - start)) s, peak RSS ${rss:-?} MiB, artifacts: $(ls "$FUZZ_DIR/artifacts/$t" | wc -l)" >&2
done
