#!/usr/bin/env bash
# Long fuzz runs, one target after another: each runs until 10 million inputs (or MAXT s),
# with the issue's bounds (1 GiB RSS, 1 s per input), keeping its corpus and artifacts.
#
#   (cd fuzz && RUSTC_WRAPPER=$PWD/../scripts/fuzz-cover-only.sh cargo +nightly fuzz build -O)
#                                                  # once; CARGO_TARGET_DIR is honoured
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
# WORKERS    processes per target (default 1), each running RUNS/WORKERS inputs on the same
#            corpus (libFuzzer reloads it, so each sees what the others find), each with its
#            own log FUZZ_DIR/logs/T.log (the first) and T-N.log; the inputs reported are
#            their sum. On two cores with nothing else running, WORKERS=2 gives one target
#            both cores (influxql, 2026-12-08: 0.8–1.1 k inputs/s in each of two processes).
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
WORKERS=${WORKERS:-1}
[ "$WORKERS" -ge 1 ] || { echo "WORKERS must be at least 1" >&2; exit 2; }
[ $# -gt 0 ] || { echo "usage: $0 TARGET..." >&2; exit 2; }
for t in "$@"; do
  bin=$FUZZ_BIN/$t
  [ -x "$bin" ] || { echo "no fuzz binary $bin (build first: cd fuzz && cargo +nightly fuzz build -O)" >&2; exit 1; }
  mkdir -p "$FUZZ_DIR/corpus/$t" "$FUZZ_DIR/artifacts/$t" "$FUZZ_DIR/logs"
  echo "[fuzz] $t: started $(date -u +%FT%TZ), $WORKERS worker(s), logs $FUZZ_DIR/logs/$t*.log" >&2
  start=$(date +%s)
  pids=()
  for w in $(seq 1 "$WORKERS"); do
    log=$FUZZ_DIR/logs/$t.log
    [ "$w" = 1 ] || log=$FUZZ_DIR/logs/$t-$w.log
    # The first worker takes the remainder, so the workers' inputs add up to RUNS.
    runs=$((RUNS / WORKERS))
    [ "$w" = 1 ] && runs=$((runs + RUNS % WORKERS))
    nice -n "$NICE" "$bin" -runs="$runs" -max_total_time="$MAXT" -rss_limit_mb="$RSS_MB" -malloc_limit_mb=1024 -timeout=1 \
      -print_final_stats=1 -artifact_prefix="$FUZZ_DIR/artifacts/$t/" "$FUZZ_DIR/corpus/$t" >"$log" 2>&1 &
    pids+=($!)
  done
  rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  end=$(date +%s)
  total=0 rss=0
  for log in "$FUZZ_DIR/logs/$t.log" $(seq -f "$FUZZ_DIR/logs/$t-%g.log" 2 "$WORKERS"); do
    n=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
    r=$(grep -o 'stat::peak_rss_mb: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
    total=$((total + ${n:-0}))
    [ "${r:-0}" -gt "$rss" ] && rss=$r
  done
  echo "[fuzz] $t: exit $rc, $total inputs in $((end - start)) s, peak RSS $rss MiB (largest worker), artifacts: $(ls "$FUZZ_DIR/artifacts/$t" | wc -l)" >&2
done
