#!/usr/bin/env bash
# Prometheus remote-write ingest, side by side: Tempora, VictoriaMetrics and InfluxDB 1.8
# receive the same requests a real Prometheus sent.
#
#   bench/prom/ingest.sh capture     # Debian's Prometheus scrapes Debian's node exporter as
#                                    # $TARGETS hosts (relabelled instances) and itself every
#                                    # second for $CAPTURE_SECS s; `tempora bench capture`
#                                    # records its remote writes (its default queue settings)
#   bench/prom/ingest.sh run [SYSTEM...]   # replays the capture $REPEAT times (timestamps
#                                    # shifted per copy) to each system, fresh, with $WORKERS
#                                    # connections; one "ingest" line each in $RESULTS
#
# SYSTEM: tempora victoriametrics influxdb (default: all three). VictoriaMetrics and InfluxDB
# are built and started by bench/peers/setup.sh (Go module proxy); every server binds 127.0.0.1
# and keeps its data under $PEERS/prom-*.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
TEMPORA_BIN=${TEMPORA_BIN:-/var/tmp/tempora-target/release/tempora}
PEERS=${PEERS:-/var/tmp/peers}
CAPTURE=${CAPTURE:-$PEERS/prom-capture.prw}
TARGETS=${TARGETS:-100}
CAPTURE_SECS=${CAPTURE_SECS:-60}
REPEAT=${REPEAT:-10}
WORKERS=${WORKERS:-4}
RESULTS=${RESULTS:-/var/tmp/prom-results.jsonl}
T_HTTP=${BENCH_HTTP_PORT:-18086}
T_PG=${BENCH_PG_PORT:-15433}
log() { echo "[prom-ingest] $*" >&2; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

capture() {
  mkdir -p "$PEERS/prom-capture"
  local dir=$PEERS/prom-capture node_port prom_port cap_port
  node_port=$(free_port); prom_port=$(free_port); cap_port=$(free_port)
  prometheus-node-exporter --web.listen-address="127.0.0.1:$node_port" --collector.disable-defaults \
    --collector.cpu --collector.meminfo --collector.loadavg --collector.netdev --collector.diskstats \
    --collector.filesystem --collector.vmstat --collector.stat >/dev/null 2>&1 &
  local node_pid=$!
  {
    echo "global:"
    echo "  scrape_interval: 1s"
    echo "scrape_configs:"
    echo "  - job_name: self"
    echo "    static_configs: [{targets: ['127.0.0.1:$prom_port']}]"
    echo "  - job_name: node"
    echo "    static_configs:"
    for i in $(seq -w 1 "$TARGETS"); do
      echo "      - {targets: ['127.0.0.1:$node_port'], labels: {host: 'host-$i'}}"
    done
    echo "    relabel_configs:"
    echo "      - {source_labels: [host], target_label: instance, replacement: '\$1:9100'}"
    echo "remote_write:"
    echo "  - url: http://127.0.0.1:$cap_port/api/v1/write"
  } > "$dir/prometheus.yml"
  "$TEMPORA_BIN" bench capture --listen "127.0.0.1:$cap_port" --out "$CAPTURE" --max-secs "$((CAPTURE_SECS + 15))" &
  local cap_pid=$!
  rm -rf "$dir/data"
  prometheus --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/data" \
    --web.listen-address="127.0.0.1:$prom_port" >"$dir/prometheus.log" 2>&1 &
  local prom_pid=$!
  sleep "$CAPTURE_SECS"
  kill "$prom_pid" "$node_pid"; wait "$prom_pid" "$node_pid" 2>/dev/null || true
  wait "$cap_pid"
  log "capture: $CAPTURE ($(du -h "$CAPTURE" | cut -f1))"
}

load() { # system url
  "$TEMPORA_BIN" bench load "$CAPTURE" --format prom-rw --repeat "$REPEAT" --url "$2" \
    --workers "$WORKERS" --json-out "$RESULTS" --system "$1" \
    --dataset "Prometheus remote write: node exporter x $TARGETS hosts + self, ${CAPTURE_SECS} s x $REPEAT"
}

run_tempora() {
  local dir=$PEERS/prom-tempora
  rm -rf "$dir"; mkdir -p "$dir"
  env -u TEMPORA_BIN "$TEMPORA_BIN" serve --data-dir "$dir/data" --http-addr "127.0.0.1:$T_HTTP" \
    --pg-addr "127.0.0.1:$T_PG" >"$dir/server.log" 2>&1 &
  local pid=$!
  for _ in $(seq 1 600); do curl -sf -o /dev/null "http://127.0.0.1:$T_HTTP/health" && break; sleep 0.1; done
  load tempora "http://127.0.0.1:$T_HTTP/api/v1/write?db=prom"
  local n
  n=$(curl -sG "http://127.0.0.1:$T_HTTP/api/v1/sql" --data-urlencode db=prom --data-urlencode format=csv \
        --data-urlencode 'q=SELECT count(*) FROM up' | tail -1)
  log "tempora: table up holds $n samples"
  kill "$pid"; wait "$pid" || true
}

run_victoriametrics() {
  PEERS=$PEERS "$HERE/../peers/setup.sh" install victoriametrics
  local dir=$PEERS/prom-vm bin=$PEERS/victoriametrics/bin/victoria-metrics
  rm -rf "$dir"; mkdir -p "$dir"
  "$bin" -storageDataPath="$dir/data" -httpListenAddr=127.0.0.1:8428 -retentionPeriod=100y \
    -loggerLevel=WARN >"$dir/server.log" 2>&1 &
  local pid=$!
  for _ in $(seq 1 600); do curl -sf -o /dev/null http://127.0.0.1:8428/health && break; sleep 0.1; done
  load victoriametrics http://127.0.0.1:8428/api/v1/write
  kill "$pid"; wait "$pid" || true
}

run_influxdb() {
  PEERS=$PEERS "$HERE/../peers/setup.sh" install influxdb
  local dir=$PEERS/prom-influx bin=$PEERS/influxdb/bin/influxd
  rm -rf "$dir"; mkdir -p "$dir"
  cat > "$dir/influxdb.conf" <<CONF
reporting-disabled = true
bind-address = "127.0.0.1:8088"
[meta]
  dir = "$dir/meta"
[data]
  dir = "$dir/data"
  wal-dir = "$dir/wal"
  query-log-enabled = false
[monitor]
  store-enabled = false
[http]
  bind-address = "127.0.0.1:8086"
  log-enabled = false
  flux-enabled = false
CONF
  "$bin" -config "$dir/influxdb.conf" >"$dir/server.log" 2>&1 &
  local pid=$!
  for _ in $(seq 1 600); do curl -sf -o /dev/null http://127.0.0.1:8086/ping && break; sleep 0.1; done
  curl -sf -XPOST http://127.0.0.1:8086/query --data-urlencode 'q=CREATE DATABASE prom' >/dev/null
  load influxdb "http://127.0.0.1:8086/api/v1/prom/write?db=prom"
  kill "$pid"; wait "$pid" || true
}

case ${1:-} in
  capture) capture ;;
  run)
    shift
    [ -s "$CAPTURE" ] || capture
    systems=${*:-tempora victoriametrics influxdb}
    for s in $systems; do "run_$s"; done ;;
  *) sed -n '2,17p' "$0"; exit 2 ;;
esac
