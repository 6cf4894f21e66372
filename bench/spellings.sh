#!/usr/bin/env bash
# Every spelling of the fixed-width time bucket (issue 21), every TSBS cpu-only query type:
# runs bench/tsbs_queries.py --spelling all against a running Tempora, over the PostgreSQL
# protocol and over HTTP, and optionally against DuckDB's file, into one results file; then
# prints the side-by-side table and, per system, the spelling table: for each query type each
# spelling's mean latency and its ratio to the fastest spelling of that type (`!` above 1.2x),
# and whether every spelling returned the same rows.
#
#   bench/peers/setup.sh load tempora            # once; then, with the server up:
#   bench/peers/setup.sh start tempora
#   RESULTS=/var/tmp/spellings.jsonl bench/spellings.sh --runs 20 --warmup 3
#   DUCKDB_FILE=/var/tmp/peers/duckdb/cpu-100h-1d.duckdb bench/spellings.sh --runs 20 --warmup 3
#
# Spellings (bench/tsbs_queries.py's SPELLINGS): date_trunc, date_bin, date_bin_origin,
# time_bucket, sample_by, grafana_epoch, timescale_epoch, group_by_position, cte, subquery.
# lastpoint and high-cpu-* are one text in every spelling and are recorded in each anyway: their
# spread is the noise floor of the run. For each query type, one untimed pass over its parameter
# sets warms the caches, then the spellings run one after another (warm-up, then the timed
# runs), so that they are compared on one machine state. `--spelling-stat median` on
# `tsbs_queries.py --table-from RESULTS` compares medians instead of means. DuckDB takes six of them (no date_bin, SAMPLE BY, and
# its `/` on integers divides as floats, so timescale_epoch is left out).
#
# Arguments are passed to bench/tsbs_queries.py (--runs, --warmup, --query-type, --seed, ...).
# Environment:
#   RESULTS        results file, appended to (default /var/tmp/spellings.jsonl)
#   SPELLINGS      all (default: every spelling each system takes) or a comma-separated list
#   SYSTEMS        default "tempora tempora-http", and duckdb when DUCKDB_FILE is set
#   DUCKDB_FILE    DuckDB database built by `bench/peers/setup.sh load duckdb`
#   BENCH_HTTP_PORT, BENCH_PG_PORT   Tempora's ports, as in bench/peers/setup.sh (18086, 15433)
#   HOSTS, DURATION_SECS             the data set's shape, as in setup.sh (100, 86400)
#   TEMPORA_PID    the server's pid, for the CPU accounting (default: the pid file of
#                  $BENCH_TEMPORA_DIR, or $PEERS/tempora, when that process is alive)
#   CHECK_SAME_ROWS=1  exit 1 unless every system and spelling returned the same rows per type
#   WAIT_IDLE_SECS=N   before each system, wait up to N s for the machine to be idle (<= 8 % of
#                  the CPU busy over 3 s), as bench/peers/setup.sh bench does
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PYTHON=${PYTHON:-python3}
RESULTS=${RESULTS:-/var/tmp/spellings.jsonl}
SPELLINGS=${SPELLINGS:-all}
HOSTS=${HOSTS:-100}
DURATION_SECS=${DURATION_SECS:-86400}
T_HTTP=${BENCH_HTTP_PORT:-18086}
T_PG=${BENCH_PG_PORT:-15433}
PEERS=${PEERS:-/var/tmp/peers}
T_DIR=${BENCH_TEMPORA_DIR:-$PEERS/tempora}
DUCKDB_FILE=${DUCKDB_FILE:-}
SYSTEMS=${SYSTEMS:-tempora tempora-http${DUCKDB_FILE:+ duckdb}}

log() { echo "[spellings] $*" >&2; }
cpu_busy_pct() { # share of all cores busy over 3 s, from /proc/stat
  local a b tot=0 idle i
  a=($(head -1 /proc/stat)); sleep 3; b=($(head -1 /proc/stat))
  for i in 1 2 3 4 5 6 7 8; do tot=$((tot + b[i] - a[i])); done
  idle=$(( (b[4] - a[4]) + (b[5] - a[5]) ))
  echo $(( tot > 0 ? 100 * (tot - idle) / tot : 0 ))
}
wait_idle() {
  [ "${WAIT_IDLE_SECS:-0}" -gt 0 ] || return 0
  local end=$((SECONDS + WAIT_IDLE_SECS)) b
  while :; do
    b=$(cpu_busy_pct)
    [ "$b" -le 8 ] && { log "machine idle ($b% busy)"; return 0; }
    [ $SECONDS -ge $end ] && { log "machine still $b% busy after ${WAIT_IDLE_SECS}s; running anyway"; return 0; }
    log "machine $b% busy; waiting"; sleep 10
  done
}

case " $SYSTEMS " in *" tempora "*|*" tempora-http "*)
  curl -sf -o /dev/null "http://127.0.0.1:$T_HTTP/health" \
    || { log "no Tempora on 127.0.0.1:$T_HTTP (bench/peers/setup.sh start tempora)"; exit 1; } ;;
esac
case " $SYSTEMS " in *" duckdb "*)
  [ -f "$DUCKDB_FILE" ] || { log "DUCKDB_FILE=$DUCKDB_FILE: no such file (bench/peers/setup.sh load duckdb)"; exit 1; } ;;
esac
if [ -z "${TEMPORA_PID:-}" ] && [ -f "$T_DIR/pid" ] && kill -0 "$(cat "$T_DIR/pid")" 2>/dev/null; then
  TEMPORA_PID=$(cat "$T_DIR/pid")
fi

mkdir -p "$(dirname "$RESULTS")"
common=(--scale "$HOSTS" --duration-secs "$DURATION_SECS" --tempora-http-port "$T_HTTP"
        --tempora-pg-port "$T_PG" --json-out "$RESULTS" --spelling "$SPELLINGS")
for s in $SYSTEMS; do
  extra=()
  case $s in
    tempora|tempora-http) [ -n "${TEMPORA_PID:-}" ] && extra=(--server-pid "$TEMPORA_PID") ;;
    duckdb) extra=(--duckdb-path "$DUCKDB_FILE") ;;
  esac
  wait_idle
  log "$s: spellings $SPELLINGS -> $RESULTS"
  # the JSON lines go to $RESULTS; the per-run table is printed once, below, for every system
  "$PYTHON" "$HERE/tsbs_queries.py" --system "$s" "${common[@]}" "${extra[@]}" "$@" > /dev/null
done
check=()
[ "${CHECK_SAME_ROWS:-0}" = 1 ] && check=(--check-same-rows)
"$PYTHON" "$HERE/tsbs_queries.py" --table-from "$RESULTS" "${check[@]}"
