#!/usr/bin/env bash
# The full benchmark run, one command: Tempora and every peer on the same TSBS cpu-only data
# (100 hosts x 1 day unless HOSTS / DURATION_SECS say otherwise), then compression on real
# data, then a long ingest run, then the report regenerated into docs/benchmarks.md.
#
#   bench/full.sh                   # everything: about 70 minutes on the 2-core machine
#   SYSTEMS=tempora,duckdb INGEST_SECS=60 bench/full.sh     # a subset, a 1-minute ingest run
#
# Steps:
#  1. bench/peers/setup.sh install + reset for every system in SYSTEMS (default all), so that
#     each load is measured (ingest rows/s, memory during the load), then
#     `setup.sh bench SYSTEMS`: load, storage record, the thirteen TSBS query types (50 timed runs
#     each, results checked to be the same rows on every system), memory during the queries.
#  2. bench/compression.py: pvlib TMY3, bokeh glucose and stocks, vega-datasets flights 3M in
#     Tempora, Parquet (zstd), DuckDB, chDB, CSV and CSV.gz. Installs the packages it reads
#     (PyPI: pvlib bokeh_sampledata; npm: vega-datasets) into $WORK.
#  3. The long ingest run (bench/long_ingest.sh): a fresh Tempora server, `tempora bench gen --hosts $INGEST_HOSTS`
#     (TSBS cpu-only, 30 days of data, more than the run can send) piped into
#     `tempora bench load --max-secs $INGEST_SECS` (default 1800 s), rows/s sampled every
#     second, the server's memory every 0.5 s. The generator runs on the same 2 cores.
#  4. bench/report.py --into docs/benchmarks.md (between its report.py markers), charts in
#     docs/bench/.
#
# WORK (default /var/tmp/bench-full) holds the results (results.jsonl), the commands run and
# the long run's server data (deleted at the end: it can be tens of GB).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
WORK=${WORK:-/var/tmp/bench-full}
SYSTEMS=${SYSTEMS:-all}
INGEST_SECS=${INGEST_SECS:-1800}
INGEST_HOSTS=${INGEST_HOSTS:-4000}
export TEMPORA_BIN=${TEMPORA_BIN:-/var/tmp/tempora-target/release/tempora}
export RESULTS=${RESULTS:-$WORK/results.jsonl}
export WAIT_IDLE_SECS=${WAIT_IDLE_SECS:-60}
PYTHON=${PYTHON:-python3}
mkdir -p "$WORK"
COMMANDS=$WORK/commands.txt
log() { echo "[full] $*" >&2; }
run() { echo "$*" >> "$COMMANDS"; "$@"; }
: > "$COMMANDS"
echo "# $(date -u +%Y-%m-%dT%H:%M:%SZ) bench/full.sh (SYSTEMS=$SYSTEMS INGEST_SECS=$INGEST_SECS)" >> "$COMMANDS"

# 1. Peers side by side.
all=$SYSTEMS; [ "$all" = all ] && all="tempora,postgresql,duckdb,chdb,questdb,victoriametrics,influxdb"
for s in ${all//,/ }; do
  run "$HERE/peers/setup.sh" install "$s"
  run "$HERE/peers/setup.sh" reset "$s"
done
run "$HERE/peers/setup.sh" bench "$all"

# 2. Compression on real data.
PKGS=$WORK/packages
$PYTHON -c 'import pvlib, bokeh_sampledata, chdb, duckdb, pyarrow, pandas' 2>/dev/null \
  || run $PYTHON -m pip install -q pvlib bokeh_sampledata chdb duckdb pyarrow pandas
[ -f "$PKGS/node_modules/vega-datasets/data/flights-3m.parquet" ] \
  || run npm install --silent --prefix "$PKGS" vega-datasets@3.2.1
run $PYTHON "$HERE/compression.py" --out "$RESULTS" --work-dir "$WORK/compression" \
  --tempora-bin "$TEMPORA_BIN" --vega-datasets "$PKGS/node_modules/vega-datasets"

# 3. The long ingest run, on a fresh server.
if [ "$INGEST_SECS" -gt 0 ]; then
  echo "WORK=$WORK INGEST_SECS=$INGEST_SECS INGEST_HOSTS=$INGEST_HOSTS $HERE/long_ingest.sh" >> "$COMMANDS"
  WORK=$WORK RESULTS=$RESULTS INGEST_SECS=$INGEST_SECS INGEST_HOSTS=$INGEST_HOSTS "$HERE/long_ingest.sh"
fi

# 4. The report, into docs/benchmarks.md.
run $PYTHON "$HERE/report.py" "$RESULTS" --out-dir "$ROOT/docs/bench" --markdown "$ROOT/docs/benchmarks.md" \
  --into --commands "$COMMANDS" --title "Latest full run (bench/full.sh)"
log "done: $RESULTS, docs/benchmarks.md, docs/bench/*.png"
