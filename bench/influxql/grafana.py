#!/usr/bin/env python3
"""InfluxQL side by side: the statements Grafana's InfluxDB data source (InfluxQL mode) and
its query editor send, run against Tempora's /query and a real InfluxDB 1.8 on the same data
(TSBS cpu-only, 100 hosts x 1 day, loaded into both by bench/peers/setup.sh load tempora |
influxdb; database `benchmark`).

Each statement is sent as Grafana sends it (GET /query?db=benchmark&epoch=ms&q=..., with
`$timeFilter` written as `time >= <ms>ms and time <= <ms>ms` and `$__interval` as a width),
except a few without `epoch` to compare RFC 3339 times. The two answers are compared whole:
the same results, series (name, tags, columns) in the same order, the same rows, numbers
equal within 1e-9 (relative) and of the same kind (an integer stays an integer). Then each is
timed: --warmup runs, then the median of --runs. One JSON line per (system, statement) goes to
--json-out (kind "influxql"), and a table with the agreement and the ratio Tempora / InfluxDB
is printed. Exit status 1 when any answer differs.

    python3 bench/influxql/grafana.py --tempora 127.0.0.1:18086 --influxdb 127.0.0.1:8086 \
        --json-out /var/tmp/influxql-results.jsonl
"""
import argparse
import http.client
import json
import statistics
import sys
import time
import urllib.parse

D0_MS = 1451606400000  # 2016-01-01T00:00:00Z, TSBS's start
H = 3600 * 1000


def tf(start_h: float, end_h: float) -> str:
    """Grafana's $timeFilter for hours [start_h, end_h] of the data, as its panel sends it."""
    return f"time >= {D0_MS + int(start_h * H)}ms and time <= {D0_MS + int(end_h * H) - 1}ms"


# (name, statement, epoch or None for RFC 3339)
STATEMENTS = [
    ("default panel: mean by $__interval, 1 host, 1 h",
     f'SELECT mean("usage_user") FROM "cpu" WHERE ("hostname" = \'host_1\') AND {tf(12, 13)} '
     'GROUP BY time(10s) fill(null)', "ms"),
    ("mean per minute, all hosts, 6 h",
     f'SELECT mean("usage_user") FROM "cpu" WHERE {tf(6, 12)} GROUP BY time(1m) fill(null)', "ms"),
    ("mean per 5 min by host, 1 day (100 series)",
     f'SELECT mean("usage_user") FROM "autogen"."cpu" WHERE {tf(0, 24)} '
     'GROUP BY time(5m), "hostname" fill(null)', "ms"),
    ("max per 5 min, regex hosts, fill(none)",
     f'SELECT max("usage_system") FROM "cpu" WHERE ("hostname" =~ /^host_(1|2|3)$/) AND '
     f'{tf(0, 6)} GROUP BY time(5m) fill(none)', "ms"),
    ("count per hour, fill(0)",
     f'SELECT count("usage_user") FROM "cpu" WHERE {tf(0, 24)} GROUP BY time(1h) fill(0)', "ms"),
    ("several aggregates by region, no time grouping",
     f'SELECT last("usage_idle"), min("usage_idle"), sum("usage_nice") FROM "cpu" '
     f'WHERE {tf(0, 24)} GROUP BY "region"', "ms"),
    ("spread and stddev by datacenter",
     f'SELECT spread("usage_user"), stddev("usage_user") FROM "cpu" WHERE {tf(0, 24)} '
     'GROUP BY "datacenter"', "ms"),
    ("non_negative_derivative of mean, 1 host",
     f'SELECT non_negative_derivative(mean("usage_user"), 1s) FROM "cpu" WHERE '
     f'"hostname" = \'host_2\' AND {tf(12, 14)} GROUP BY time(1m) fill(null)', "ms"),
    ("derivative of max, 1 host",
     f'SELECT derivative(max("usage_guest"), 1m) FROM "cpu" WHERE "hostname" = \'host_7\' '
     f'AND {tf(1, 2)} GROUP BY time(1m)', "ms"),
    ("arithmetic on an aggregate, fill(previous)",
     f'SELECT mean("usage_user") * 2 + 1 AS "x" FROM "cpu" WHERE "hostname" = \'host_9\' '
     f'AND {tf(3, 4)} GROUP BY time(30s) fill(previous)', "ms"),
    ("fill(linear), 10 s buckets",
     f'SELECT mean("usage_iowait") FROM "cpu" WHERE "hostname" = \'host_11\' AND {tf(5, 6)} '
     'GROUP BY time(10s) fill(linear)', "ms"),
    ("regex measurement, median per hour",
     f'SELECT median("usage_user") FROM /^cpu$/ WHERE {tf(0, 24)} GROUP BY time(1h) fill(null)',
     "ms"),
    ("raw field, 1 host, 1 h, RFC 3339 times",
     f'SELECT "usage_user", "usage_system" FROM "cpu" WHERE "hostname" = \'host_5\' AND {tf(20, 21)}',
     None),
    ("raw field with a field condition, tag != ",
     f'SELECT "usage_user" FROM "cpu" WHERE "usage_user" > 95 AND "region" != \'us-east-1\' '
     f'AND {tf(0, 1)}', "ms"),
    ("first and last of 1 host",
     f'SELECT first("usage_user"), last("usage_user") FROM "cpu" WHERE "hostname" = \'host_3\' '
     f'AND {tf(0, 24)}', "ms"),
    ("max by $tag variable regex, per hour by host",
     f'SELECT max("usage_user") FROM "cpu" WHERE "hostname" =~ /^(host_10|host_20)$/ AND '
     f'{tf(0, 24)} GROUP BY time(1h), "hostname" fill(null)', "ms"),
    ("ORDER BY time DESC LIMIT",
     f'SELECT mean("usage_user") FROM "cpu" WHERE {tf(0, 24)} GROUP BY time(1m) '
     'ORDER BY time DESC LIMIT 5', "ms"),
    ("now()-relative window (no data: empty)",
     'SELECT mean("usage_user") FROM "cpu" WHERE time > now() - 1h GROUP BY time(1m) fill(null)',
     "ms"),
    # The editor's and variables' statements.
    ("SHOW MEASUREMENTS LIMIT", 'SHOW MEASUREMENTS LIMIT 100', None),
    ("SHOW MEASUREMENTS WITH regex", 'SHOW MEASUREMENTS WITH MEASUREMENT =~ /cp.*/ LIMIT 100', None),
    ("SHOW TAG KEYS FROM", 'SHOW TAG KEYS FROM "cpu"', None),
    ("SHOW TAG VALUES WITH KEY", 'SHOW TAG VALUES FROM "cpu" WITH KEY = "region"', None),
    ("SHOW TAG VALUES WITH KEY WHERE",
     'SHOW TAG VALUES FROM "cpu" WITH KEY = "hostname" WHERE "region" = \'eu-west-1\'', None),
    ("SHOW FIELD KEYS FROM", 'SHOW FIELD KEYS FROM "cpu"', None),
    ("SHOW RETENTION POLICIES", 'SHOW RETENTION POLICIES ON "benchmark"', None),
    ("two statements in one text",
     f'SELECT max("usage_user") FROM "cpu" WHERE {tf(0, 1)}; '
     f'SELECT min("usage_user") FROM "cpu" WHERE {tf(0, 1)}', "ms"),
]


# Differences kept on purpose, by statement name: reported as "known", not as failures.
KNOWN = {
    "SHOW RETENTION POLICIES": "shardGroupDuration: Tempora reports its own time-partition width "
                               "(24h here), InfluxDB its shard group duration (168h)",
    "several aggregates by region, no time grouping": "last() over several series with a point at "
        "the same last time: InfluxDB takes the first series in series-key order, Tempora any one",
}


def get(conn: http.client.HTTPConnection, path: str):
    conn.request("GET", path)
    r = conn.getresponse()
    body = r.read()
    return r.status, json.loads(body)


def path_for(q: str, epoch) -> str:
    p = {"db": "benchmark", "q": q}
    if epoch:
        p["epoch"] = epoch
    return "/query?" + urllib.parse.urlencode(p)


def same(a, b, where="") -> str | None:
    """None when the answers agree (numbers within 1e-9 relative, of the same kind), else
    where they part."""
    if isinstance(a, bool) or isinstance(b, bool):
        return None if a == b else f"{where}: {a!r} != {b!r}"
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, int) != isinstance(b, int):
            return f"{where}: {a!r} ({type(a).__name__}) != {b!r} ({type(b).__name__})"
        if a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b)):
            return None
        return f"{where}: {a!r} != {b!r}"
    if isinstance(a, dict) and isinstance(b, dict):
        if sorted(a) != sorted(b):
            return f"{where}: keys {sorted(a)} != {sorted(b)}"
        for k in a:
            d = same(a[k], b[k], f"{where}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{where}: {len(a)} items != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = same(x, y, f"{where}[{i}]")
            if d:
                return d
        return None
    return None if a == b else f"{where}: {a!r} != {b!r}"


def points(answer) -> int:
    return sum(len(s.get("values", [])) for r in answer.get("results", [])
               for s in r.get("series", []))


def timed(conn, path: str, warmup: int, runs: int) -> float:
    for _ in range(warmup):
        get(conn, path)
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        get(conn, path)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tempora", default="127.0.0.1:18086")
    ap.add_argument("--influxdb", default="127.0.0.1:8086")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--json-out")
    args = ap.parse_args()
    conns = {"tempora": http.client.HTTPConnection(*args.tempora.split(":"), timeout=600),
             "influxdb": http.client.HTTPConnection(*args.influxdb.split(":"), timeout=600)}
    out = open(args.json_out, "a") if args.json_out else None
    differ = 0
    rows = []
    for name, q, epoch in STATEMENTS:
        path = path_for(q, epoch)
        answers = {s: get(c, path) for s, c in conns.items()}
        (st_t, a_t), (st_i, a_i) = answers["tempora"], answers["influxdb"]
        diff = None if st_t == st_i else f"HTTP {st_t} != {st_i}"
        diff = diff or same(a_t, a_i, "answer")
        if diff and name in KNOWN:
            print(f"known difference, {name}: {KNOWN[name]} ({diff})", file=sys.stderr)
        elif diff:
            differ += 1
            print(f"DIFFERS {name}: {diff}\n  q: {q}\n  tempora:  {json.dumps(a_t)[:600]}\n"
                  f"  influxdb: {json.dumps(a_i)[:600]}", file=sys.stderr)
        secs = {s: timed(c, path, args.warmup, args.runs) for s, c in conns.items()}
        verdict = "same" if not diff else ("known" if name in KNOWN else "DIFFERS")
        rows.append((name, points(a_i), verdict, secs))
        if out:
            for s in conns:
                out.write(json.dumps({"kind": "influxql", "system": s, "query": name, "text": q,
                                      "epoch": epoch, "median_s": secs[s], "runs": args.runs,
                                      "points": points(answers[s][1]),
                                      "same_as_influxdb": diff is None}) + "\n")
    if out:
        out.close()
    print(f"| statement | points | answer | Tempora ms | InfluxDB 1.8 ms | Tempora / InfluxDB |")
    print("|---|---|---|---|---|---|")
    ratios = []
    for name, pts, verdict, secs in rows:
        r = secs["tempora"] / secs["influxdb"]
        ratios.append(r)
        print(f"| {name} | {pts} | {verdict} | {secs['tempora'] * 1e3:.2f} | "
              f"{secs['influxdb'] * 1e3:.2f} | {r:.2f} |")
    geo = statistics.geometric_mean(ratios)
    known = sum(1 for r in rows if r[2] == "known")
    print(f"\n{len(rows) - differ - known} of {len(rows)} answers the same, {known} known differences; geometric mean of the ratios "
          f"{geo:.2f} (below 1: Tempora faster)")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
