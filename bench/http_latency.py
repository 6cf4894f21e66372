#!/usr/bin/env python3
"""Server latency of SQL texts over Tempora's HTTP API, with the least client work: one kept
connection, the JSON body read but not parsed (tsbs_queries.py's tempora-http client also
parses the body and converts every value, which is most of its time on small queries).

    python3 bench/http_latency.py [--port 18086] [--db benchmark] [--runs 200] SQL [SQL ...]

Prints mean and median ms per text, after 10 warm-up runs.
"""
import argparse
import http.client
import statistics
import time
import urllib.parse


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=18086)
    ap.add_argument("--db", default="benchmark")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("sql", nargs="+")
    a = ap.parse_args()
    conn = http.client.HTTPConnection(a.host, a.port, timeout=600)
    for q in a.sql:
        path = "/api/v1/sql?" + urllib.parse.urlencode({"db": a.db, "q": q, "format": "json"})
        times = []
        for i in range(a.runs + 10):
            t = time.perf_counter()
            conn.request("GET", path)
            r = conn.getresponse()
            body = r.read()
            if r.status != 200:
                raise SystemExit(f"HTTP {r.status}: {body[:500]!r}")
            if i >= 10:
                times.append(time.perf_counter() - t)
        print(f"mean {1000 * statistics.fmean(times):.3f} ms  median "
              f"{1000 * statistics.median(times):.3f} ms  {q[:70]}")


if __name__ == "__main__":
    main()
