#!/usr/bin/env bash
# What authentication costs (issue 26): ingest rows/s over HTTP line protocol and TSBS cpu-only
# query latency (PostgreSQL wire protocol), with authentication off and on — the same binary,
# the same data, rounds interleaved (off on, on off, …) so drift and order hit both alike.
#
#   TEMPORA_BIN=target/release/tempora bench/auth_cost.sh [WORK_DIR]
#
# ROUNDS (6), HOSTS (100), DURATION_SECS (86400: one day every 10 s, 864,000 rows) and
# QUERY_RUNS (30) size it. Prints one line per round and the medians' ratios (on / off).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${TEMPORA_BIN:?set TEMPORA_BIN to the tempora binary}
WORK=${1:-$(mktemp -d)}
ROUNDS=${ROUNDS:-6} HOSTS=${HOSTS:-100} DURATION_SECS=${DURATION_SECS:-86400}
QUERY_RUNS=${QUERY_RUNS:-30}
HTTP_PORT=${BENCH_HTTP_PORT:-18186} PG_PORT=${BENCH_PG_PORT:-15533}
mkdir -p "$WORK"
LP=$WORK/cpu.lp
[ -s "$LP" ] || "$BIN" bench gen --use-case cpu-only --hosts "$HOSTS" \
  --duration-secs "$DURATION_SECS" --out "$LP"
RESULTS=$WORK/auth_cost.jsonl
: > "$RESULTS"

start() { # data_dir auth(on|off)
  local flags=()
  [ "$2" = on ] && flags=(--auth)
  TEMPORA_LOG=warn "$BIN" serve --data-dir "$1" --http-addr "127.0.0.1:$HTTP_PORT" \
    --pg-addr "127.0.0.1:$PG_PORT" "${flags[@]}" &
  SERVER=$!
  for _ in $(seq 600); do
    curl -sf "http://127.0.0.1:$HTTP_PORT/health" >/dev/null && return 0
    sleep 0.1
  done
  echo "server did not start" >&2; exit 1
}
stop() { kill -TERM "$SERVER"; wait "$SERVER" || true; }

for round in $(seq "$ROUNDS"); do
  # Odd rounds run off first, even rounds on first: neither mode always follows the other.
  order="off on"
  [ $((round % 2)) -eq 0 ] && order="on off"
  for mode in $order; do
    dir=$WORK/data-$mode
    rm -rf "$dir"
    token=""
    if [ "$mode" = on ]; then
      token=$("$BIN" token create --name bench --admin --data-dir "$dir" 2>/dev/null)
    fi
    start "$dir" "$mode"
    # Ingest: the whole file, two workers, 10,000 lines per request.
    TEMPORA_TOKEN=$token "$BIN" bench load "$LP" --url "http://127.0.0.1:$HTTP_PORT/write?db=benchmark" \
      --workers 2 --batch 10000 --json-out "$RESULTS" --system "tempora-auth-$mode" \
      --dataset "cpu-only $HOSTS hosts round $round" 2>/dev/null
    # Queries: the TSBS types a dashboard sends most, over the PostgreSQL protocol.
    TEMPORA_TOKEN=$token TEMPORA_TOKEN_NAME=bench python3 "$HERE/tsbs_queries.py" --system tempora \
      --tempora-pg-port "$PG_PORT" --scale "$HOSTS" --duration-secs "$DURATION_SECS" \
      --runs "$QUERY_RUNS" --warmup 3 \
      --query-type lastpoint --query-type single-groupby-1-1-1 --query-type single-groupby-5-8-1 \
      --query-type double-groupby-1 --query-type high-cpu-1 --query-type cpu-max-all-8 \
      --query-type groupby-orderby-limit \
      | python3 -c "import sys, json
for l in sys.stdin:
    if l.startswith('{'):
        d = json.loads(l); d['auth'] = '$mode'; d['round'] = $round; print(json.dumps(d))" >> "$RESULTS"
    stop
  done
done

python3 - "$RESULTS" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
ingest = {m: [r["rows_per_s"] for r in rows if r.get("system") == f"tempora-auth-{m}"]
          for m in ("off", "on")}
print("ingest rows/s   off", [round(x) for x in ingest["off"]], " on", [round(x) for x in ingest["on"]])
off, on = statistics.median(ingest["off"]), statistics.median(ingest["on"])
print(f"ingest median   off {off:,.0f}  on {on:,.0f}  on/off {on / off:.3f}")
types = sorted({r["query_type"] for r in rows if "query_type" in r})
ratios = []
for t in types:
    m = {a: statistics.median([r["mean_ms"] for r in rows if r.get("query_type") == t and r["auth"] == a])
         for a in ("off", "on")}
    ratios.append(m["on"] / m["off"])
    print(f"{t:24} off {m['off']:8.2f} ms  on {m['on']:8.2f} ms  on/off {m['on'] / m['off']:.3f}")
print(f"queries: geometric mean of on/off {statistics.geometric_mean(ratios):.3f}")
PY
