#!/usr/bin/env bash
# Installs what the end-to-end tests call, on a Debian machine (root): curl, psql, gzip,
# python3 with pyarrow, duckdb, psycopg, influxdb-client, cryptography (TLS test certificates),
# Telegraf (built from the Go module proxy with the plugins its test uses),
# playwright (the console test, with Debian's chromium-headless-shell), Prometheus with its
# node exporter and promtool, influx and
# Python's influxdb (InfluxQL), matplotlib
# (bench/report.py) and
# pandas (bench/test_compression.py),
# a JDK and pgJDBC from Maven Central (into target/test-deps/postgresql.jar). Safe to run
# again: it skips what is there.
set -euo pipefail
cd "$(dirname "$0")/.."
need_apt=()
command -v python3 >/dev/null || need_apt+=(python3)
python3 -m pip --version >/dev/null 2>&1 || need_apt+=(python3-pip)
command -v psql >/dev/null || need_apt+=(postgresql-client)
command -v curl >/dev/null || need_apt+=(curl)
command -v gzip >/dev/null || need_apt+=(gzip)
[ -x /usr/bin/time ] || need_apt+=(time)   # bench/peers/setup.sh times its loads
command -v java >/dev/null || need_apt+=(openjdk-17-jdk-headless)
# The console test's browser (driven by Playwright with executable_path; never downloaded).
[ -x /usr/bin/chromium-headless-shell ] || need_apt+=(chromium-headless-shell)
# A real Prometheus (2.42) remote-writing into Tempora.
command -v prometheus >/dev/null || need_apt+=(prometheus)
# A node exporter for Prometheus to scrape (the PromQL comparison's data).
command -v prometheus-node-exporter >/dev/null || need_apt+=(prometheus-node-exporter)
# InfluxDB 1.x's shell (the InfluxQL test).
command -v influx >/dev/null || need_apt+=(influxdb-client)
if [ ${#need_apt[@]} -gt 0 ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
fi
if ! python3 -c "import pyarrow, duckdb, pytz, psycopg, influxdb_client, matplotlib, pandas, cryptography, playwright, influxdb" 2>/dev/null; then
  pkgs=(pyarrow duckdb pytz "psycopg[binary]" influxdb-client matplotlib pandas cryptography playwright influxdb)
  python3 -m pip install -q "${pkgs[@]}" 2>/dev/null \
    || python3 -m pip install -q --break-system-packages "${pkgs[@]}"
fi
# Telegraf, the real agent, with only the plugins e2e_telegraf.rs uses (its custom build
# tags), from the Go module proxy: Debian has no package.
telegraf=target/test-deps/telegraf
if [ ! -x "$telegraf" ]; then
  command -v go >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq golang-go; }
  mkdir -p "$(dirname "$telegraf")"
  dir=$(cd /tmp && go mod download -json github.com/influxdata/telegraf@v1.37.2 \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["Dir"])')
  out=$(pwd)/$telegraf
  (cd "$dir" && go build -mod=mod -trimpath \
     -tags "custom,inputs.cpu,inputs.mem,inputs.internal,outputs.influxdb,outputs.influxdb_v2" \
     -o "$out.part" ./cmd/telegraf)
  mv "$out.part" "$out"
fi
jar=target/test-deps/postgresql.jar
if [ ! -s "$jar" ]; then
  mkdir -p "$(dirname "$jar")"
  curl -fsSL -o "$jar.part" \
    https://repo1.maven.org/maven2/org/postgresql/postgresql/42.7.4/postgresql-42.7.4.jar
  mv "$jar.part" "$jar"
fi
