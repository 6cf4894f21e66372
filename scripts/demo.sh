#!/usr/bin/env bash
# Builds Tempora, starts it on 127.0.0.1 (HTTP 8086, PostgreSQL 5433) with its data in
# ./tempora-data, loads a day of example cpu data for 10 hosts, and runs a first query.
# The server keeps running; stop it with: kill $(cat tempora-data/tempora.pid)
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${PROFILE:-release}
flag=$([ "$profile" = release ] && echo --release || true)
cargo build $flag -p tempora-cli
bin="${CARGO_TARGET_DIR:-target}/$profile/tempora"
mkdir -p tempora-data
"$bin" serve --data-dir tempora-data >tempora-data/server.log 2>&1 &
echo $! > tempora-data/tempora.pid
curl -s --retry 100 --retry-connrefused --retry-delay 0 --retry-all-errors -f \
  http://127.0.0.1:8086/health >/dev/null
# A day at 10 s for 10 hosts: 86,400 rows of line protocol.
python3 - <<'PY' | curl -s -f -XPOST 'http://127.0.0.1:8086/write?db=demo&precision=s' --data-binary @-
import math
start = 1_700_000_000
for step in range(8640):
    t = start + step * 10
    for h in range(10):
        v = 50 + 40 * math.sin(step / 360 + h)
        print(f"cpu,host=host_{h},region={['eu-west','us-east'][h % 2]} usage_user={v:.1f} {t}")
PY
echo "loaded 86,400 rows into demo.cpu; first query:"
"$bin" sql --db demo -c "SELECT region, count(*) AS points, round(avg(usage_user), 2) AS avg_usage FROM cpu GROUP BY region ORDER BY region"
echo "psql: psql -h 127.0.0.1 -p 5433 -d demo    |    stop: kill \$(cat tempora-data/tempora.pid)"
