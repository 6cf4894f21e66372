#!/usr/bin/env bash
# The long ingest run: a fresh Tempora server, `tempora bench gen --hosts $INGEST_HOSTS`
# (TSBS cpu-only, 30 days of data, more than the run can send) piped into
# `tempora bench load --max-secs $INGEST_SECS`, rows/s sampled every second, the server's RSS
# every 0.5 s (bench/rss_sampler.py). The generator runs on the same cores.
#
#   bench/long_ingest.sh                                  # 30 minutes, 4,000 hosts, default budget
#   MEMORY_BUDGET=1GiB INGEST_SECS=1800 bench/long_ingest.sh
#
# Env: TEMPORA_BIN, RESULTS (JSON lines appended), WORK (server data; deleted at the end),
# INGEST_SECS (1800), INGEST_HOSTS (4000), MEMORY_BUDGET (unset: the server's `auto`),
# LONG_HTTP_PORT / LONG_PG_PORT. The records' dataset and phase name the budget.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TEMPORA_BIN=${TEMPORA_BIN:-/var/tmp/tempora-target/release/tempora}
WORK=${WORK:-/var/tmp/bench-long-ingest}
RESULTS=${RESULTS:-$WORK/results.jsonl}
INGEST_SECS=${INGEST_SECS:-1800}
INGEST_HOSTS=${INGEST_HOSTS:-4000}
PYTHON=${PYTHON:-python3}
budget=${MEMORY_BUDGET:-auto}
L=$WORK/long-ingest
rm -rf "$L"; mkdir -p "$L"
port_http=${LONG_HTTP_PORT:-18186} port_pg=${LONG_PG_PORT:-15533}
env -u TEMPORA_BIN TEMPORA_MEMORY_BUDGET="$budget" "$TEMPORA_BIN" serve --data-dir "$L/data" \
  --http-addr "127.0.0.1:$port_http" --pg-addr "127.0.0.1:$port_pg" >> "$L/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do curl -sf -o /dev/null "http://127.0.0.1:$port_http/health" && break; sleep 0.1; done
fifo=$L/ready; mkfifo "$fifo"
$PYTHON "$HERE/rss_sampler.py" --pid "$server" --system tempora \
  --phase "ingest ${INGEST_SECS} s, memory_budget $budget" --out "$RESULTS" --ready "$fifo" &
sampler=$!
read -t 30 -r _ <> "$fifo" || echo "[long_ingest] memory sampler not ready after 30 s" >&2
dataset="cpu-only $INGEST_HOSTS hosts, ${INGEST_SECS} s run, memory_budget $budget"
{ "$TEMPORA_BIN" bench gen --hosts "$INGEST_HOSTS" --duration-secs 2592000 2>/dev/null || true; } \
  | "$TEMPORA_BIN" bench load --url "http://127.0.0.1:$port_http/write?db=long" --workers 2 \
      --batch 10000 --max-secs "$INGEST_SECS" --json-out "$RESULTS" --system tempora --dataset "$dataset"
kill -TERM "$sampler"; wait "$sampler" || true
kill -TERM "$server"; wait "$server" || true
trap - EXIT
du -sh "$L/data" >&2
rm -rf "$L"
