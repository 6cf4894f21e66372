#!/usr/bin/env python3
"""PromQL range queries side by side: Tempora and VictoriaMetrics on the same TSBS cpu-only
data (bench/peers/setup.sh loads it into both: 100 hosts x 1 day, 10 s interval, metric names
cpu_usage_user{hostname=...} as VictoriaMetrics names line protocol).

Each query is run --warmup times, then --runs times against each system (VictoriaMetrics with
nocache=1 and its rollup cache off, as the harness starts it); the median wall time of the
HTTP request is recorded, with the series and points of the answer and how many of the
points agree within 1e-6 (relative) between the two systems (their lookback and window rules
differ a little: PromQL 2.x's closed windows against MetricsQL's). One JSON line per (system,
query) goes to --json-out (kind "promql"), and a table with the ratio Tempora / VM is printed.

    python3 bench/prom/queries.py --tempora 127.0.0.1:18086 --vm 127.0.0.1:8428 \
        --json-out /var/tmp/prom-results.jsonl
"""
import argparse
import http.client
import json
import statistics
import time
import urllib.parse

D0 = 1451606400  # 2016-01-01T00:00:00Z, TSBS's start
DAY = 86400
HOSTS8 = "|".join(f"host_{i}" for i in (3, 11, 27, 40, 52, 68, 79, 95))

# (name, query, start offset s, end offset s, step s)
QUERIES = [
    ("1 host, 1 h, max per minute", 'max(max_over_time(cpu_usage_user{hostname="host_1"}[1m]))', 43200, 46800, 60),
    ("1 host, 12 h, max per minute", 'max(max_over_time(cpu_usage_user{hostname="host_1"}[1m]))', 43200, 86400, 60),
    ("8 hosts, 1 h, max per minute", f'max(max_over_time(cpu_usage_user{{hostname=~"{HOSTS8}"}}[1m]))', 43200, 46800, 60),
    ("all hosts, 1 day, hourly avg by host", "avg by (hostname) (avg_over_time(cpu_usage_user[1h]))", 3600, DAY, 3600),
    ("all hosts, 1 day, avg by region every 5 min", "avg by (region) (cpu_usage_user)", 0, DAY, 300),
    ("all hosts, 1 day, top 5 of 10-min max", "topk(5, max_over_time(cpu_usage_user[10m]))", 600, DAY, 600),
    ("all hosts, 1 day, p99 across hosts every 5 min", "quantile(0.99, cpu_usage_user)", 0, DAY, 300),
    ("1 host, 1 day, deriv per minute", 'deriv(cpu_usage_user{hostname="host_1"}[5m])', 300, DAY, 60),
    ("all hosts, 1 h, above 90 every 10 s", "cpu_usage_user > 90", 43200, 46800, 10),
    ("all hosts, 1 h, sum of 10 fields by host", 'sum by (hostname) ({__name__=~"cpu_usage_.*"})', 43200, 46800, 60),
    ("all hosts, 1 day, max per hour", "max(max_over_time(cpu_usage_user[1h]))", 3600, DAY, 3600),
]


def get(conn, path):
    conn.request("GET", path)
    r = conn.getresponse()
    body = r.read()
    if r.status != 200:
        raise RuntimeError(f"HTTP {r.status}: {body[:500]!r}")
    return json.loads(body)


def points(answer):
    out = {}
    for s in answer["data"]["result"]:
        key = json.dumps(s["metric"], sort_keys=True)
        for t, v in s.get("values", []):
            out[(key, float(t))] = float(v)
    return out


def agree(a, b):
    """How many points of a have a point of b (same labels and time) within 1e-6."""
    n = 0
    for k, v in a.items():
        w = b.get(k)
        if w is not None and (v == w or abs(v - w) <= 1e-6 * max(abs(v), abs(w))):
            n += 1
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tempora", default="127.0.0.1:18086")
    ap.add_argument("--tempora-db", default="benchmark")
    ap.add_argument("--vm", default="127.0.0.1:8428")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--json-out")
    args = ap.parse_args()
    systems = {
        "tempora": (args.tempora, {"db": args.tempora_db}),
        "victoriametrics": (args.vm, {"nocache": "1"}),
    }
    rows = []
    for name, q, s0, s1, step in QUERIES:
        answers = {}
        for system, (addr, extra) in systems.items():
            host, port = addr.rsplit(":", 1)
            conn = http.client.HTTPConnection(host, int(port), timeout=600)
            params = {"query": q, "start": D0 + s0, "end": D0 + s1, "step": step, **extra}
            path = "/api/v1/query_range?" + urllib.parse.urlencode(params)
            for _ in range(args.warmup):
                get(conn, path)
            times = []
            for _ in range(args.runs):
                t = time.perf_counter()
                ans = get(conn, path)
                times.append(time.perf_counter() - t)
            conn.close()
            answers[system] = points(ans)
            rec = {"kind": "promql", "system": system, "query": name, "promql": q,
                   "start": D0 + s0, "end": D0 + s1, "step": step, "runs": args.runs,
                   "median_s": statistics.median(times), "min_s": min(times),
                   "series": len(ans["data"]["result"]), "points": len(answers[system])}
            rows.append(rec)
        t, v = answers["tempora"], answers["victoriametrics"]
        same = agree(t, v)
        for r in rows[-2:]:
            r["agreeing_points"] = same
        if args.json_out:
            with open(args.json_out, "a") as f:
                for r in rows[-2:]:
                    f.write(json.dumps(r) + "\n")
    print(f"{'query':48} {'Tempora ms':>11} {'VM ms':>9} {'T/VM':>6} {'points T/VM':>15} {'agree':>7}")
    for i in range(0, len(rows), 2):
        t, v = rows[i], rows[i + 1]
        ratio = t["median_s"] / v["median_s"] if v["median_s"] else float("inf")
        print(f"{t['query']:48} {t['median_s'] * 1000:11.1f} {v['median_s'] * 1000:9.1f} {ratio:6.2f} "
              f"{t['points']:>7}/{v['points']:<7} {t['agreeing_points']:>7}")


if __name__ == "__main__":
    main()
