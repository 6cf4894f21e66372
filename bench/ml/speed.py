#!/usr/bin/env python3
"""Speed of in-database training and scoring (issue 24) against exporting the rows to Python
and running the same algorithm there, on N series x P points (default 10,000 x 1,440: a day
of minutes per host).

In the database (timed): `CREATE MODEL m WITH (task = 'anomaly_detection', algorithm =
'mad')` until SHOW MODELS says ready (training: each series' detector run over its rows), then
scoring every row, `SELECT count(*) FROM (SELECT anomaly_detect(value, 'm') AS a FROM t) WHERE
a`. The ad hoc spelling (`anomaly_detect(value, 'mad')`, no model) is timed too.

In Python (timed): the rows exported over the same HTTP API (`format=csv`, read by pandas, or
`format=arrow`, read by pyarrow), then per series the same detector: the median and MAD of
the previous 60 points (numpy sliding windows), flagged beyond 3.5 robust deviations — once
for "training" (as the model does) and once for scoring.

Usage: speed.py --url http://127.0.0.1:8086 [--series 10000 --points 1440] [--json out.json]
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import time
import urllib.request

import numpy as np

MIN = 60_000_000_000


def post(url: str, body: bytes) -> bytes:
    req = urllib.request.Request(url, data=body, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=3600) as r:
            return r.read()
    except urllib.error.HTTPError as e:
        raise RuntimeError(f"{url}: {e.code} {e.read().decode()[:500]}") from None


def sql(base: str, db: str, q: str, fmt: str = "json") -> bytes:
    return post(f"{base}/api/v1/sql?db={db}&format={fmt}", q.encode())


def load(base: str, db: str, series: int, points: int) -> None:
    rng = np.random.default_rng(7)
    for s0 in range(0, series, 500):
        lines = []
        for s in range(s0, min(series, s0 + 500)):
            v = 50 + 10 * np.sin(np.arange(points) * 2 * np.pi / 1440) + rng.normal(0, 1, points)
            spikes = rng.choice(points, 3, replace=False)
            v[spikes] += 25
            lines.extend(f"t,series=s{s} value={x:.4f} {i * MIN}" for i, x in enumerate(v))
        post(f"{base}/write?db={db}", "\n".join(lines).encode())


def wait_ready(base: str, db: str, model: str) -> None:
    while True:
        body = json.loads(sql(base, db, "SHOW MODELS"))
        names = [c["name"] for c in body["columns"]]
        rows = [dict(zip(names, r)) for r in body["rows"]]
        st = [r for r in rows if r["name"] == model][0]
        if st["status"] == "ready":
            return
        if st["status"].startswith("failed"):
            raise RuntimeError(st["reason"])
        time.sleep(0.05)


def mad_flags(x: np.ndarray, window: int = 60, k: float = 3.5, min_points: int = 15) -> np.ndarray:
    from numpy.lib.stride_tricks import sliding_window_view

    out = np.zeros(len(x), bool)
    if len(x) <= window:
        return out
    w = sliding_window_view(x[:-1], window)  # w[i] = x[i : i + window], before point i + window
    med = np.median(w, axis=1)
    mad = 1.4826 * np.median(np.abs(w - med[:, None]), axis=1)
    z = np.abs(x[window:] - med) / np.where(mad > 0, mad, np.inf)
    out[window:] = z > k
    return out


def python_side(base: str, db: str, fmt: str) -> tuple[float, float, int]:
    import pandas as pd

    t0 = time.perf_counter()
    raw = sql(base, db, "SELECT series, time, value FROM t ORDER BY series, time", fmt)
    if fmt == "csv":
        df = pd.read_csv(io.BytesIO(raw))
    else:
        import pyarrow.ipc as ipc

        df = ipc.open_stream(io.BytesIO(raw)).read_all().to_pandas()
    export = time.perf_counter() - t0
    flagged = 0
    for _, g in df.groupby("series", sort=False):
        x = g["value"].to_numpy(float)
        mad_flags(x)  # training: the detector over the training rows
        flagged += int(mad_flags(x).sum())  # scoring
    return export, time.perf_counter() - t0, flagged


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="http://127.0.0.1:8086")
    ap.add_argument("--db", default="mlspeed")
    ap.add_argument("--series", type=int, default=10_000)
    ap.add_argument("--points", type=int, default=1_440)
    ap.add_argument("--json")
    ap.add_argument("--skip-load", action="store_true", help="the rows are already there")
    a = ap.parse_args()
    post(f"{a.url}/api/v1/sql?db=public", f"CREATE DATABASE IF NOT EXISTS {a.db}".encode())
    if not a.skip_load:
        t0 = time.perf_counter()
        load(a.url, a.db, a.series, a.points)
        print(f"loaded {a.series} x {a.points} in {time.perf_counter() - t0:.1f}s")
    sql(a.url, a.db, "DROP MODEL IF EXISTS m")
    t0 = time.perf_counter()
    sql(a.url, a.db, "CREATE MODEL m WITH (task = 'anomaly_detection', algorithm = 'mad') AS SELECT time, series, value FROM t")
    wait_ready(a.url, a.db, "m")
    train = time.perf_counter() - t0
    count = "SELECT count(*) AS n FROM (SELECT anomaly_detect(value, {}) AS a FROM t) WHERE a"
    t1 = time.perf_counter()
    n_model = json.loads(sql(a.url, a.db, count.format("'m'")))["rows"][0][0]
    score = time.perf_counter() - t1
    t2 = time.perf_counter()
    n_adhoc = json.loads(sql(a.url, a.db, count.format("'mad'")))["rows"][0][0]
    adhoc = time.perf_counter() - t2
    points = a.series * a.points
    res = {
        "series": a.series, "points": a.points,
        "tempora_train_s": round(train, 3), "tempora_score_s": round(score, 3),
        "tempora_total_s": round(train + score, 3), "tempora_flagged": n_model,
        "tempora_us_per_point_scored": round(1e6 * score / points, 3),
        "tempora_adhoc_score_s": round(adhoc, 3), "tempora_adhoc_flagged": n_adhoc,
    }
    for fmt in ["arrow", "csv"]:
        export, total, flagged = python_side(a.url, a.db, fmt)
        res[f"python_{fmt}_export_s"] = round(export, 3)
        res[f"python_{fmt}_total_s"] = round(total, 3)
        res[f"python_{fmt}_flagged"] = flagged
        res[f"ratio_python_{fmt}_over_tempora"] = round(total / (train + score), 2)
    print(json.dumps(res, indent=2))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
