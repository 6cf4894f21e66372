#!/usr/bin/env bash
# End-to-end ingest over HTTP, side by side: TSBS cpu-only line protocol, loaded by
# `tempora bench load` (2 workers, 10,000-line batches) into Tempora (WAL sync on, the
# default) and, when its jar is present, QuestDB (its ILP-over-HTTP /write endpoint).
#
#   HOSTS=4000 HOURS=1 bench/http_ingest.sh          # Tempora, then QuestDB if installed
#   QUESTDB_JAR=/path/questdb.jar bench/http_ingest.sh
#
# QuestDB: `curl -o questdb.jar https://repo1.maven.org/maven2/org/questdb/questdb/9.3.4/questdb-9.3.4.jar`
# (Java 17+). It runs with its default commit mode (nosync) and with QDB_CAIRO_COMMIT_MODE=sync.
set -euo pipefail
cd "$(dirname "$0")/.."
HOSTS=${HOSTS:-4000}
HOURS=${HOURS:-1}
WORKERS=${WORKERS:-2}
BATCH=${BATCH:-10000}
RUNS=${RUNS:-3}
QUESTDB_JAR=${QUESTDB_JAR:-/var/tmp/peers/questdb/questdb.jar}
work=${WORK:-/var/tmp/tempora-bench}
mkdir -p "$work"
cargo build --release -q -p tempora-cli
bin=${CARGO_TARGET_DIR:-target}/release/tempora
data="$work/cpu-only-${HOSTS}h-${HOURS}h.lp"
if [ ! -s "$data" ]; then
  "$bin" bench gen --hosts "$HOSTS" --duration-secs $((HOURS * 3600)) --out "$data"
fi
echo "data: $data ($(du -h "$data" | cut -f1), $(wc -l < "$data") lines)"

wait_http() { for _ in $(seq 1 600); do curl -sf -o /dev/null "$1" && return 0; sleep 0.1; done; return 1; }

for run in $(seq 1 "$RUNS"); do
  dir="$work/tempora-data"; rm -rf "$dir"
  "$bin" serve --data-dir "$dir" --http-addr 127.0.0.1:18086 --pg-addr 127.0.0.1:15433 \
    2> "$work/tempora.log" & pid=$!
  wait_http http://127.0.0.1:18086/health
  echo -n "tempora run $run: "
  "$bin" bench load "$data" --url "http://127.0.0.1:18086/write?db=benchmark" \
    --workers "$WORKERS" --batch "$BATCH" 2>/dev/null
  kill "$pid"; wait "$pid" || true
done

if [ -f "$QUESTDB_JAR" ]; then
  for mode in nosync sync; do
    for run in $(seq 1 "$RUNS"); do
      root="$work/questdb-root"; rm -rf "$root"; mkdir -p "$root"
      QDB_CAIRO_COMMIT_MODE=$mode QDB_PG_ENABLED=false java -p "$QUESTDB_JAR" \
        -m io.questdb/io.questdb.ServerMain -d "$root" > "$work/questdb.log" 2>&1 & pid=$!
      wait_http "http://127.0.0.1:9000/exec?query=select%201"
      echo -n "questdb ($mode) run $run: "
      "$bin" bench load "$data" --url "http://127.0.0.1:9000/write" \
        --workers "$WORKERS" --batch "$BATCH" 2>/dev/null
      kill "$pid"; wait "$pid" || true
    done
  done
fi
