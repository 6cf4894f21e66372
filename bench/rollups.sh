#!/usr/bin/env bash
# Rollups side by side (issue 23): TSBS cpu-only, $HOSTS hosts x 1 day, loaded into two
# Tempora servers — one declaring rollups before the load (TEMPORA_DEFAULT_ROLLUPS=$ROLLUPS),
# one without — then the query types run on both (rewrite on / rewrite off: the same raw
# data, no rollups to read) and on the peers, each into its own results file, and the table.
#
#   HOSTS=4000 bench/rollups.sh load      # both loads: ingest records, storage, rollup bytes, CPU
#   HOSTS=4000 bench/rollups.sh queries   # the query types on both servers
#   HOSTS=4000 bench/rollups.sh peers     # the same query types on $PEER_SYSTEMS
#   bench/rollups.sh table                # on/off/peers table from the results files
#
# WORK (default /var/tmp/bench-rollups): on.jsonl, off.jsonl, peers.jsonl, rollup-bytes.txt.
# The servers' directories are $WORK/tempora-on and $WORK/tempora-off (kept between runs, so
# `queries` reuses the loads; VARIANTS=on runs one of them); bench/peers/setup.sh does the
# loading and the timing.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
export HOSTS=${HOSTS:-4000}
WORK=${WORK:-/var/tmp/bench-rollups}
ROLLUPS=${ROLLUPS:-1m,1h}
RUNS=${RUNS:-10}
WARMUP=${WARMUP:-2}
PEER_SYSTEMS=${PEER_SYSTEMS:-questdb,victoriametrics,duckdb}
TYPES=${TYPES:-double-groupby-1 double-groupby-5 double-groupby-all cpu-max-all-1 cpu-max-all-8 single-groupby-1-1-1 single-groupby-1-8-1 single-groupby-5-1-1 single-groupby-5-8-1}
PYTHON=${PYTHON:-python3}
mkdir -p "$WORK"
qargs=(--runs "$RUNS" --warmup "$WARMUP")
for t in $TYPES; do qargs+=(--query-type "$t"); done

variant() { # on|off: the environment of that server
  local v=$1 r=none
  [ "$v" = on ] && r=$ROLLUPS
  echo "BENCH_TEMPORA_DIR=$WORK/tempora-$v TEMPORA_DEFAULT_ROLLUPS=$r RESULTS=$WORK/$v.jsonl"
}

rollup_bytes() { # dir: bytes of data files and of each resolution's rollup files
  find "$1" -type f \( -name '*.parquet' -o -name '*.r[0-9]*' \) -printf '%s %f\n' | awk '
    /\.parquet$/ { d += $1; next }
    { split($2, a, ".r"); r[a[2]] += $1 }
    END { printf "data %d\n", d; for (k in r) printf "rollup_%s_ns %d (%.1f%% of data)\n", k, r[k], 100 * r[k] / d }'
}

case ${1:-} in
  load)
    for v in ${VARIANTS:-on off}; do
      # shellcheck disable=SC2046
      env $(variant "$v") "$HERE/peers/setup.sh" load tempora 2>&1 | tee "$WORK/load-$v.log"
      # The server's CPU over the load (user + system, from start-up), and the compaction and
      # rollup time its metrics count; then the close flushes the memtables.
      pid=$(cat "$WORK/tempora-$v/pid")
      cpu=$(awk -v hz="$(getconf CLK_TCK)" '{ printf "%.1f", ($14 + $15) / hz }' "/proc/$pid/stat")
      metrics=$(curl -s "http://127.0.0.1:${BENCH_HTTP_PORT:-18086}/metrics" | grep -E '^tempora_(compaction|rollup)_microseconds_total' | tr '\n' ' ')
      env $(variant "$v") "$HERE/peers/setup.sh" stop tempora
      echo "$v: server cpu ${cpu}s; $metrics; $(rollup_bytes "$WORK/tempora-$v/data" | tr '\n' ';')" | tee -a "$WORK/rollup-bytes.txt"
    done ;;
  queries)
    for v in ${VARIANTS:-on off}; do
      # shellcheck disable=SC2046
      env $(variant "$v") "$HERE/peers/setup.sh" bench tempora "${qargs[@]}"
    done ;;
  peers)
    RESULTS=$WORK/peers.jsonl "$HERE/peers/setup.sh" bench "$PEER_SYSTEMS" "${qargs[@]}" ;;
  table)
    $PYTHON - "$WORK" <<'PY'
import json, sys, statistics
work = sys.argv[1]
def medians(path, systems=None):
    out = {}
    try:
        lines = open(path).read().splitlines()
    except FileNotFoundError:
        return out
    for l in lines:
        r = json.loads(l)
        if r.get("kind", "query") != "query" or "query_type" not in r:
            continue
        s = r.get("system")
        if systems and s not in systems:
            continue
        ms = r.get("median_ms") or (statistics.median(r["times_ms"]) if r.get("times_ms") else None)
        if ms is not None:
            out[(s, r["query_type"])] = ms
    return out
on, off, peers = medians(f"{work}/on.jsonl"), medians(f"{work}/off.jsonl"), medians(f"{work}/peers.jsonl")
types = sorted({t for (_, t) in on} | {t for (_, t) in off})
psys = sorted({s for (s, _) in peers})
print("| query type | rewrite on (pg) | rewrite off (pg) | off/on | " + " | ".join(psys) + " | best peer/on |")
print("|---" * (5 + len(psys)) + "|")
for t in types:
    a, b = on.get(("tempora", t)), off.get(("tempora", t))
    ps = [peers.get((s, t)) for s in psys]
    best = min([p for p in ps if p is not None], default=None)
    f = lambda x: "—" if x is None else f"{x:.3f}"
    r = lambda x, y: "—" if x is None or y is None else f"{x / y:.1f}×"
    print(f"| {t} | {f(a)} | {f(b)} | {r(b, a)} | " + " | ".join(f(p) for p in ps) + f" | {r(best, a)} |")
PY
    ;;
  *) sed -n 2,15p "$0"; exit 2 ;;
esac
