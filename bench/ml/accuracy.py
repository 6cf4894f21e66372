#!/usr/bin/env python3
"""Accuracy of Tempora's in-database anomaly detection and forecasting (issue 24) on labelled
public data, side by side with plain Python baselines, one configuration for every series.

Data (all shipped inside PyPI wheels): sktime's yahoo.csv and mitdb.csv, aeon's UCR
KDD-TSAD_135 (InternalBleeding16: TRAIN is normal, TEST holds the anomaly), statsmodels' co2
(monthly mean, h 24), sktime's airline (h 24), pmdarima's taylor (half-hourly, h 336).

Tempora runs through its HTTP API (a running server, --url): each series is written with line
protocol, detection is `anomaly_detect(value, '<model>')` of a model trained with
`CREATE MODEL ... WITH (task = 'anomaly_detection', algorithm = 'auto')` (and the ad hoc
algorithms, no model), forecasting is `forecast('<model>', h)` of a model trained with
`WITH (task = 'forecasting', algorithm = 'auto', season = '<points>')` on all but the last h
points.

Detection figures: point-adjusted F1 (a detection anywhere in a labelled window finds the
whole window), point-wise F1, and false-alarm events (runs of flagged points outside every
labelled window) per 1,000 points. Forecasting: MASE (scaled by the training part's seasonal
naive one-step error) and sMAPE (percent).

Usage: accuracy.py --url http://127.0.0.1:8086 [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import urllib.parse
import urllib.request

import numpy as np
import pandas as pd

SECOND = 1_000_000_000


# --- data -----------------------------------------------------------------------------------

def site(pkg: str) -> str:
    return os.path.dirname(__import__(pkg).__file__)


def detection_sets() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    out = {}
    for name in ["yahoo", "mitdb"]:
        d = pd.read_csv(os.path.join(site("sktime"), "datasets", "data", name, f"{name}.csv"))
        out[name] = (d["data"].to_numpy(float), d["label"].to_numpy(int))
    ucr = os.path.join(site("aeon"), "datasets", "data", "KDD-TSAD_135")
    test = pd.read_csv(os.path.join(ucr, "135_UCR_Anomaly_InternalBleeding16_TEST.csv"))
    out["ucr135"] = (test["value"].to_numpy(float), test["is_anomaly"].to_numpy(int))
    return out


def forecasting_sets() -> dict[str, tuple[np.ndarray, int, list[int]]]:
    """name -> (series, horizon, seasons in points)."""
    import statsmodels.api as sm
    from sktime.datasets import load_airline
    from pmdarima.datasets import load_taylor

    co2 = sm.datasets.co2.load_pandas().data["co2"].resample("MS").mean().ffill()
    return {
        "co2": (co2.to_numpy(float), 24, [12]),
        "airline": (load_airline().to_numpy(float), 24, [12]),
        "taylor": (np.asarray(load_taylor(), float), 336, [48, 336]),
    }


# --- metrics --------------------------------------------------------------------------------

def windows(labels: np.ndarray) -> list[tuple[int, int]]:
    """Runs of 1s as [start, end)."""
    out, start = [], None
    for i, v in enumerate(list(labels) + [0]):
        if v and start is None:
            start = i
        elif not v and start is not None:
            out.append((start, i))
            start = None
    return out


def f1(pred: np.ndarray, labels: np.ndarray) -> float:
    tp = int(np.sum(pred & (labels == 1)))
    fp = int(np.sum(pred & (labels == 0)))
    fn = int(np.sum(~pred & (labels == 1)))
    if tp == 0:
        return 0.0
    p, r = tp / (tp + fp), tp / (tp + fn)
    return 2 * p * r / (p + r)


def detection_scores(pred: np.ndarray, labels: np.ndarray) -> dict:
    pred = np.asarray(pred, bool)
    adjusted = pred.copy()
    wins = windows(labels)
    found = 0
    for s, e in wins:
        if adjusted[s:e].any():
            adjusted[s:e] = True
            found += 1
    outside = pred & (labels == 0)
    events = len(windows(outside.astype(int)))
    return {
        "pa_f1": round(f1(adjusted, labels), 4),
        "f1": round(f1(pred, labels), 4),
        "windows_found": f"{found}/{len(wins)}",
        "false_alarms_per_1000": round(1000 * events / len(labels), 3),
    }


def mase(train: np.ndarray, truth: np.ndarray, pred: np.ndarray, m: int) -> float:
    scale = np.mean(np.abs(train[m:] - train[:-m]))
    return float(np.mean(np.abs(truth - pred)) / scale)


def smape(truth: np.ndarray, pred: np.ndarray) -> float:
    return float(100 * np.mean(2 * np.abs(truth - pred) / (np.abs(truth) + np.abs(pred))))


# --- Python baselines -----------------------------------------------------------------------

def rolling_zscore(x: np.ndarray, window: int = 60, k: float = 3.0) -> np.ndarray:
    s = pd.Series(x)
    prev = s.shift(1).rolling(window, min_periods=window // 4)
    z = (s - prev.mean()) / prev.std()
    return (z.abs() > k).fillna(False).to_numpy()


def stl_mad(x: np.ndarray, k: float = 3.5) -> np.ndarray:
    from statsmodels.tsa.seasonal import STL
    from statsmodels.tsa.stattools import acf

    d = np.diff(x)
    r = acf(d, nlags=min(len(d) // 2, 1000), fft=True)
    peaks = [p for p in range(2, len(r) - 1) if r[p] >= 0.3 and r[p] >= r[p - 1] and r[p] >= r[p + 1]]
    period = max(peaks, key=lambda p: r[p]) if peaks else 7
    resid = STL(x, period=max(period, 2), robust=True).fit().resid
    med = np.median(resid)
    mad = 1.4826 * np.median(np.abs(resid - med))
    return np.abs(resid - med) > k * mad if mad > 0 else np.zeros(len(x), bool)


def python_forecasts(train: np.ndarray, h: int, seasons: list[int]) -> dict[str, np.ndarray]:
    from statsforecast import StatsForecast
    from statsforecast.models import AutoETS, SeasonalNaive, MSTL

    m = seasons[-1]
    df = pd.DataFrame({"unique_id": "s", "ds": np.arange(len(train)), "y": train})
    models = [SeasonalNaive(season_length=m), AutoETS(season_length=min(m, 24) if m <= 24 else 1)]
    models.append(MSTL(season_length=seasons, trend_forecaster=AutoETS(model="ZZN")))
    sf = StatsForecast(models=models, freq=1, n_jobs=1)
    f = sf.forecast(df=df, h=h)
    return {c: f[c].to_numpy(float) for c in f.columns if c not in ("unique_id", "ds")}


# --- Tempora over HTTP ----------------------------------------------------------------------

class Tempora:
    def __init__(self, url: str, db: str):
        self.url, self.db = url.rstrip("/"), db

    def sql(self, q: str) -> list[dict]:
        u = f"{self.url}/api/v1/sql?db={self.db}&format=json"
        req = urllib.request.Request(u, data=q.encode(), method="POST")
        try:
            with urllib.request.urlopen(req, timeout=600) as r:
                body = json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            raise RuntimeError(f"{q}: {e.code} {e.read().decode()}") from None
        if not isinstance(body, dict) or "columns" not in body:
            return []
        names = [c["name"] for c in body["columns"]]
        return [dict(zip(names, r)) for r in body["rows"]]

    def write(self, table: str, series: str, values: np.ndarray, step_ns: int) -> None:
        lines = [f"{table},series={series} value={float(v)!r} {i * step_ns}" for i, v in enumerate(values) if not math.isnan(v)]
        for i in range(0, len(lines), 50_000):
            body = "\n".join(lines[i:i + 50_000]).encode()
            req = urllib.request.Request(f"{self.url}/write?db={self.db}", data=body, method="POST")
            urllib.request.urlopen(req, timeout=600).read()

    def wait_ready(self, model: str, timeout: float = 600) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            rows = [r for r in self.sql("SHOW MODELS") if r["name"] == model]
            status = rows[0]["status"] if rows else "missing"
            if status == "ready":
                return
            if status.startswith("failed"):
                raise RuntimeError(f"model {model} failed: {rows[0].get('reason')}")
            time.sleep(0.2)
        raise RuntimeError(f"model {model} still training after {timeout}s")


def tempora_detection(t: Tempora, name: str, x: np.ndarray) -> dict[str, np.ndarray]:
    table = f"det_{name}"
    t.sql(f"DROP TABLE IF EXISTS {table}")
    t.sql(f"DROP MODEL IF EXISTS m_{name}")
    t.write(table, name, x, SECOND)
    t.sql(f"CREATE MODEL m_{name} WITH (task = 'anomaly_detection', algorithm = 'auto') "
          f"AS SELECT time, series, value FROM {table}")
    t.wait_ready(f"m_{name}")
    out = {}
    for label, call in [("tempora auto model", f"'m_{name}'"), ("tempora mad", "'mad'"),
                        ("tempora stl", "'stl'"), ("tempora nsigma", "'nsigma'")]:
        rows = t.sql(f"SELECT time, anomaly_detect(value, {call}) AS a FROM {table} ORDER BY time")
        pred = np.array([bool(r["a"]) for r in rows])
        out[label] = pred
    return out


def tempora_forecast(t: Tempora, name: str, train: np.ndarray, h: int, seasons: list[int]) -> np.ndarray:
    table = f"fc_{name}"
    t.sql(f"DROP TABLE IF EXISTS {table}")
    t.sql(f"DROP MODEL IF EXISTS f_{name}")
    t.write(table, name, train, SECOND)
    season = ",".join(str(s) for s in seasons)
    t.sql(f"CREATE MODEL f_{name} WITH (task = 'forecasting', algorithm = 'auto', season = '{season}', horizon = {h}) "
          f"AS SELECT time, series, value FROM {table}")
    t.wait_ready(f"f_{name}")
    rows = t.sql(f"SELECT time, value FROM forecast('f_{name}', {h}) ORDER BY time")
    return np.array([float(r["value"]) for r in rows])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", default="http://127.0.0.1:8086")
    ap.add_argument("--db", default="mlbench")
    ap.add_argument("--json")
    a = ap.parse_args()
    t = Tempora(a.url, "public")
    t.sql(f"CREATE DATABASE IF NOT EXISTS {a.db}")
    t = Tempora(a.url, a.db)
    report: dict = {"detection": {}, "forecasting": {}}
    for name, (x, labels) in detection_sets().items():
        preds = tempora_detection(t, name, x)
        preds["python rolling z-score"] = rolling_zscore(x)
        preds["python STL + MAD"] = stl_mad(x)
        report["detection"][name] = {k: detection_scores(v, labels) for k, v in preds.items()}
        for k, v in report["detection"][name].items():
            print(f"{name:8} {k:24} {v}")
    for name, (y, h, seasons) in forecasting_sets().items():
        train, truth = y[:-h], y[-h:]
        m = seasons[-1] if name != "taylor" else seasons[0]
        preds = {"tempora auto": tempora_forecast(t, name, train, h, seasons)}
        preds.update({f"python {k}": v for k, v in python_forecasts(train, h, seasons).items()})
        report["forecasting"][name] = {
            k: {"mase": round(mase(train, truth, v, m), 4), "smape": round(smape(truth, v), 3)} for k, v in preds.items()
        }
        for k, v in report["forecasting"][name].items():
            print(f"{name:8} {k:24} {v}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
