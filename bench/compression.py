#!/usr/bin/env python3
"""Compression on real data that ships inside packages: Tempora against other formats.

    python3 bench/compression.py [--datasets tmy3,glucose,stocks,flights] [--out RESULTS.jsonl]
        [--systems tempora,parquet-zstd,duckdb,chdb,csv,csv.gz,source] [--tempora-bin BIN]
        [--work-dir DIR] [--vega-datasets DIR] [--http-port 18286] [--pg-port 15633]

Appends one "compression" line per (data set, system) to --out, in the schema of the docstring
of bench/report.py, and prints a table. Every system stores the same frame: the same rows, the
same numeric values (null where the source has none), sorted by (tags, time).

Data sets (each from a package; a missing one stops the run with the command that installs it):
  tmy3     pvlib (PyPI): pvlib/data/703165TY.csv and 723170TYA.CSV read with
           pvlib.iotools.read_tmy3: two station-years, hourly. Table tmy3, tag station (USAF id),
           every numeric column a field (integers stay integers; names in snake case); the text
           columns (date, time and the one-letter source flags) are dropped. Time in UTC.
  glucose  bokeh_sampledata (PyPI): _data/CGM.csv.gz. Table glucose, no tag, fields isig
           (float; "nil" is null) and glucose (integer).
  stocks   bokeh_sampledata (PyPI): _data/stocks.csv.gz (AAPL FB GOOG IBM MSFT daily). Table
           stocks, tag ticker, fields open high low close adj_close (float), volume (integer).
  flights  vega-datasets (npm, 3.x): data/flights-3m.parquet. Table flights, tags origin and
           destination, fields delay and distance (integers).
  weather  vega-datasets: data/weather.csv, daily readings of Seattle and New York, 2012-2015.
           Table weather, tag location, fields precipitation temp_max temp_min wind (float); the
           text column weather is dropped. Long and sparse: four years of daily points.
  co2      vega-datasets: data/co2-concentration.csv, monthly Mauna Loa CO2 since 1958. Table
           co2, no tag, fields co2 and adjusted_co2 (float). Sixty years of monthly points, one series.
values = the non-null field values stored (rows x fields less the nulls).

Repeated times. Tempora keeps one row per (series, time), the last write winning. glucose has 3
and flights 7,851 (series, minute) pairs that occur more than once (with different values); the
k-th repeat (k = 0, 1, ..., file order) is moved k seconds later. Both sets are at minute
resolution, so flooring to the minute gives the source back; a shift that would hit another
row's time stops the run. Tempora's count(*) must then equal the source's rows.

Systems:
  tempora       the prebuilt server (--tempora-bin), a fresh data dir per data set, default
                settings (TEMPORA_* variables other than TEMPORA_LOG are removed from its
                environment). Line protocol over HTTP, --batch lines per POST to
                /write?db=compression&precision=s|ms|us|ns. Tempora has no flush or compact
                endpoint: the server is stopped with SIGTERM (drains writes, flushes memtables),
                started again (WAL replay) and, when some region directory holds more than one
                data file, left running until its maintenance thread (every 60 s) has compacted
                them (--compact-timeout). count(*) and count(field) over SQL must match the frame;
                then SIGTERM again. bytes = Parquet data files + series index files (.tidx) +
                manifest + databases.json, by file size; the WAL left behind is reported
                separately as wal_bytes and not counted; disk_bytes is the same files' allocated
                blocks (what du counts).
  parquet-zstd  pyarrow, one file, zstd level 3 (Tempora's level), pyarrow's other defaults
  duckdb        a DuckDB database file after CHECKPOINT (TIMESTAMPTZ, VARCHAR, DOUBLE, BIGINT)
  chdb          chDB MergeTree ORDER BY (tags, time), tags LowCardinality(String), DateTime64(6,
                'UTC'), Nullable where a column has nulls, default codecs (LZ4), OPTIMIZE FINAL;
                bytes = bytes_on_disk of the active parts
  csv, csv.gz   the frame as CSV (RFC 3339 times), and that gzipped at level 6
  source        the file(s) as shipped (TMY3: with its text columns, so not the same values)
"""
from __future__ import annotations

import argparse
import gzip
import http.client
import importlib
import importlib.metadata
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
from dataclasses import dataclass

ALL_DATASETS = ["tmy3", "glucose", "stocks", "flights", "weather", "co2"]
ALL_SYSTEMS = ["tempora", "parquet-zstd", "duckdb", "chdb", "csv", "csv.gz", "source"]
DB = "compression"
PRECISIONS = [("s", 10**9), ("ms", 10**6), ("us", 10**3), ("ns", 1)]
VEGA_VERSION = "3.2.1"


class BenchError(Exception):
    """Stops the run with a message (no traceback)."""


# ------------------------------------------------------------------ pure parts (tested)

def _escape(s: str, chars: str) -> str:
    if "\n" in s or "\r" in s:
        raise ValueError(f"line protocol cannot carry a newline: {s!r}")
    for ch in "\\" + chars:
        s = s.replace(ch, "\\" + ch)
    return s


def escape_measurement(s: str) -> str:
    return _escape(s, ", ")


def escape_key(s: str) -> str:
    """A tag key, tag value or field key."""
    return _escape(s, ",= ")


def is_null(v) -> bool:
    return v is None or (isinstance(v, float) and v != v) or type(v).__name__ in ("NAType", "NaTType")


def format_value(v, kind: str) -> str | None:
    """A field value in line protocol; None for a null (the field is left out of the line)."""
    if is_null(v):
        return None
    if kind == "float":
        f = float(v)
        if f in (float("inf"), float("-inf")):
            raise ValueError(f"line protocol cannot carry {f}")
        return repr(f)
    if kind == "integer":
        return f"{int(v)}i"
    if kind == "boolean":
        return "true" if v else "false"
    if kind == "string":
        return '"' + _escape(str(v), '"') + '"'
    raise ValueError(f"unknown field kind {kind!r}")


def line_protocol(table: str, tag_cols: dict, field_cols: dict, kinds: dict, times: list) -> list[str]:
    """Lines for columns given as lists: tag_cols {key: [str]}, field_cols {key: [value]},
    kinds {key: "float"|"integer"|...}, times [int in the write precision]. Null or empty tag
    values leave the tag out; null field values leave the field out; a row with no field left
    is an error (line protocol needs one)."""
    meas = escape_measurement(table)
    cache: dict = {}
    tag_keys = sorted(tag_cols)
    tag_rows = zip(*(tag_cols[k] for k in tag_keys)) if tag_keys else ((),) * len(times)
    prefixes = []
    for vals in tag_rows:
        p = cache.get(vals)
        if p is None:
            p = cache[vals] = meas + "".join(f",{escape_key(k)}={escape_key(str(v))}"
                                             for k, v in zip(tag_keys, vals) if not is_null(v) and str(v) != "")
        prefixes.append(p)
    cols = []
    for k, values in field_cols.items():
        key = escape_key(k) + "="
        cols.append([None if s is None else key + s for s in (format_value(v, kinds[k]) for v in values)])
    lines = []
    for i, (p, t, *vals) in enumerate(zip(prefixes, times, *cols)):
        fields = ",".join(v for v in vals if v is not None)
        if not fields:
            raise ValueError(f"row {i + 1} has no non-null field")
        lines.append(f"{p} {fields} {t}")
    return lines


def sanitize(name: str) -> str:
    """Snake case, [a-z0-9_] only: 'Alb uncert (code)' -> 'alb_uncert_code'."""
    s = re.sub(r"[^a-z0-9]+", "_", name.strip().lower()).strip("_")
    return s if s and not s[0].isdigit() else f"c_{s}"


def unique_names(names: list[str]) -> list[str]:
    out, seen = [], set()
    for n in names:
        s, i = sanitize(n), 2
        base = s
        while s in seen or s == "time":
            s, i = f"{base}_{i}", i + 1
        seen.add(s)
        out.append(s)
    return out


def field_kind(dtype) -> str:
    k = getattr(dtype, "kind", "O")
    if k == "b":
        return "boolean"
    if k in "iu":
        return "integer"
    if k == "f":
        return "float"
    raise ValueError(f"not a numeric column type: {dtype}")


def prepare(frame, time_col: str, tags: list[str], fields: list[str], step_ns: int = 10**9):
    """The stored frame: columns time (datetime64[ns, UTC]), tags (str), fields (numeric), names
    sanitized, repeated (tags, time) pairs moved step_ns apart (k-th repeat by k steps, file
    order), sorted by (tags, time). Returns (frame, kinds {field: kind}, rows shifted)."""
    import pandas as pd
    names = unique_names(tags + fields)
    out = pd.DataFrame({"time": pd.to_datetime(frame[time_col], utc=True).astype("datetime64[ns, UTC]")
                        .reset_index(drop=True)})
    for src, dst in zip(tags + fields, names):
        out[dst] = frame[src].reset_index(drop=True)
    tags, fields = names[:len(tags)], names[len(tags):]
    for t in tags:
        out[t] = out[t].astype(str)
    k = out.groupby(tags + ["time"], sort=False).cumcount()
    shifted = int((k > 0).sum())
    if shifted:
        out["time"] = out["time"] + pd.to_timedelta(k.to_numpy() * step_ns, unit="ns")
        if out.duplicated(tags + ["time"]).any():
            raise BenchError(f"moving repeated times by {step_ns} ns made new repeats; use a smaller step")
    out = out.sort_values(tags + ["time"], kind="mergesort").reset_index(drop=True)
    kinds = {f: field_kind(out[f].dtype) for f in fields}
    return out, kinds, shifted


def time_ns(col):
    """datetime64[ns, UTC] column -> numpy int64 nanoseconds since the epoch."""
    return col.dt.tz_convert("UTC").dt.tz_localize(None).to_numpy("datetime64[ns]").astype("int64")


def count_values(frame, fields: list[str]) -> int:
    return int(sum(frame[f].notna().sum() for f in fields))


def precision_for(ns_values) -> tuple[str, int]:
    """The coarsest line-protocol precision that keeps every timestamp exact."""
    import numpy as np
    a = np.asarray(ns_values, dtype=np.int64)
    for name, div in PRECISIONS:
        if not (a % div).any():
            return name, div
    return "ns", 1


def make_record(dataset: str, system: str, nbytes: int, values: int, rows: int, source_bytes: int,
                **extra) -> dict:
    if values <= 0:
        raise ValueError(f"{dataset}: no values")
    rec = {"kind": "compression", "dataset": dataset, "system": system,
           "bytes_per_value": round(nbytes / values, 6), "bytes": int(nbytes), "values": int(values),
           "source_bytes": int(source_bytes), "rows": int(rows)}
    rec.update({k: v for k, v in extra.items() if v is not None})
    return rec


def format_table(records: list[dict], baseline: str = "tempora") -> str:
    """dataset x system: bytes, bytes/value and peer bytes/value / baseline's (> 1: baseline smaller)."""
    base = {r["dataset"]: r["bytes_per_value"] for r in records if r["system"] == baseline}
    head = f"{'data set':<18} {'system':<13} {'rows':>10} {'values':>11} {'bytes':>12} {'bytes/value':>11} {'÷ ' + baseline:>10}"
    out = [head, "-" * len(head)]
    for r in records:
        b = base.get(r["dataset"])
        ratio = "baseline" if r["system"] == baseline else ("-" if not b else f"{r['bytes_per_value'] / b:.2f}")
        out.append(f"{r['dataset']:<18} {r['system']:<13} {r['rows']:>10,} {r['values']:>11,} "
                   f"{r['bytes']:>12,} {r['bytes_per_value']:>11.3f} {ratio:>10}")
    return "\n".join(out)


# ------------------------------------------------------------------ data sets

@dataclass
class Dataset:
    key: str
    name: str
    table: str
    frame: object
    tags: list
    kinds: dict
    sources: list
    package: str
    shifted: int = 0

    @property
    def fields(self):
        return list(self.kinds)

    @property
    def source_bytes(self):
        return sum(os.path.getsize(p) for p in self.sources)


def need(module: str, dataset: str, install: str):
    try:
        return importlib.import_module(module)
    except ImportError as e:
        raise BenchError(f"data set {dataset!r} needs the Python package {module} ({e}); "
                         f"install it with: {install}") from None


def pkg_version(dist: str) -> str:
    try:
        return f"{dist} {importlib.metadata.version(dist)}"
    except importlib.metadata.PackageNotFoundError:
        return dist


def load_tmy3(args) -> Dataset:
    pvlib = need("pvlib", "tmy3", "python3 -m pip install pvlib")
    import pandas as pd
    files = [os.path.join(os.path.dirname(pvlib.__file__), "data", f) for f in ("703165TY.csv", "723170TYA.CSV")]
    files = [f for f in files if os.path.exists(f)]
    if not files:
        raise BenchError("data set 'tmy3': pvlib/data holds no TMY3 file; reinstall: python3 -m pip install pvlib")
    parts, int_cols = [], set()
    for f in files:
        data, meta = pvlib.iotools.read_tmy3(f, map_variables=True)
        num = [c for c in data.columns if data[c].dtype.kind in "iuf"]
        int_cols |= {c for c in num if data[c].dtype.kind in "iu"}
        part = data[num].copy()
        part.insert(0, "station", str(meta["USAF"]))
        part.insert(0, "t", data.index.tz_convert("UTC"))
        parts.append(part)
    frame = pd.concat(parts, ignore_index=True)
    fields = [c for c in frame.columns if c not in ("t", "station")]
    for c in fields:  # a column only one station has: nulls for the other, integers kept
        if c in int_cols:
            frame[c] = frame[c].astype("Int64")
    out, kinds, shifted = prepare(frame, "t", ["station"], fields)
    return Dataset("tmy3", "pvlib TMY3", "tmy3", out, ["station"], kinds, files, pkg_version("pvlib"), shifted)


def bokeh_file(dataset: str, name: str) -> str:
    bs = need("bokeh_sampledata", dataset, "python3 -m pip install bokeh_sampledata")
    path = os.path.join(os.path.dirname(bs.__file__), "_data", name)
    if not os.path.exists(path):
        raise BenchError(f"data set {dataset!r}: {path} is missing; reinstall: python3 -m pip install bokeh_sampledata")
    return path


def load_glucose(args) -> Dataset:
    import pandas as pd
    path = bokeh_file("glucose", "CGM.csv.gz")
    raw = pd.read_csv(path, na_values=["nil"])  # isig, datetime, glucose; file order kept
    raw["isig"] = raw["isig"].astype("float64")
    out, kinds, shifted = prepare(raw, "datetime", [], ["isig", "glucose"])
    return Dataset("glucose", "bokeh glucose", "glucose", out, [], kinds, [path], pkg_version("bokeh_sampledata"),
                   shifted)


def load_stocks(args) -> Dataset:
    import pandas as pd
    path = bokeh_file("stocks", "stocks.csv.gz")
    raw = pd.read_csv(path)  # Ticker,Date,Open,High,Low,Close,Volume,Adj Close
    out, kinds, shifted = prepare(raw, "Date", ["Ticker"], ["Open", "High", "Low", "Close", "Volume", "Adj Close"])
    return Dataset("stocks", "bokeh stocks", "stocks", out, ["ticker"], kinds, [path],
                   pkg_version("bokeh_sampledata"), shifted)


def vega_dir(args) -> str:
    cands = [args.vega_datasets, os.environ.get("VEGA_DATASETS_DIR"),
             os.path.join(args.work_dir, "node_modules", "vega-datasets"), os.path.join("node_modules", "vega-datasets")]
    if shutil.which("npm"):
        r = subprocess.run(["npm", "root", "-g"], capture_output=True, text=True)
        if r.returncode == 0:
            cands.append(os.path.join(r.stdout.strip(), "vega-datasets"))
    for c in cands:
        if c and os.path.exists(os.path.join(c, "data", "flights-3m.parquet")):
            return c
    raise BenchError(f"data set 'flights' needs the npm package vega-datasets with data/flights-3m.parquet; "
                     f"install it with: npm install --prefix {args.work_dir} vega-datasets@{VEGA_VERSION} "
                     f"(or pass --vega-datasets DIR)")


def load_flights(args) -> Dataset:
    import pyarrow.parquet as pq
    d = vega_dir(args)
    path = os.path.join(d, "data", "flights-3m.parquet")
    with open(os.path.join(d, "package.json")) as f:
        version = json.load(f).get("version", "?")
    raw = pq.read_table(path).to_pandas()  # date, delay, distance, origin, destination
    out, kinds, shifted = prepare(raw, "date", ["origin", "destination"], ["delay", "distance"])
    return Dataset("flights", "vega flights 3M", "flights", out, ["origin", "destination"], kinds, [path],
                   f"vega-datasets {version} (npm)", shifted)


def load_weather(args) -> Dataset:
    import pandas as pd
    d = vega_dir(args)
    path = os.path.join(d, "data", "weather.csv")
    with open(os.path.join(d, "package.json")) as f:
        version = json.load(f).get("version", "?")
    raw = pd.read_csv(path)  # location,date,precipitation,temp_max,temp_min,wind,weather
    out, kinds, shifted = prepare(raw, "date", ["location"], ["precipitation", "temp_max", "temp_min", "wind"])
    return Dataset("weather", "vega weather (daily, 2 cities, 4 years)", "weather", out, ["location"], kinds,
                   [path], f"vega-datasets {version} (npm)", shifted)


def load_co2(args) -> Dataset:
    import pandas as pd
    d = vega_dir(args)
    path = os.path.join(d, "data", "co2-concentration.csv")
    with open(os.path.join(d, "package.json")) as f:
        version = json.load(f).get("version", "?")
    raw = pd.read_csv(path)  # Date,CO2,adjusted CO2 (monthly, Mauna Loa, 1958-)
    out, kinds, shifted = prepare(raw, "Date", [], ["CO2", "adjusted CO2"])
    return Dataset("co2", "vega CO2 (monthly, 60 years)", "co2", out, [], kinds, [path],
                   f"vega-datasets {version} (npm)", shifted)


LOADERS = {"tmy3": load_tmy3, "glucose": load_glucose, "stocks": load_stocks, "flights": load_flights,
           "weather": load_weather, "co2": load_co2}


# ------------------------------------------------------------------ other systems

def arrow_table(ds: Dataset):
    import pyarrow as pa
    t = pa.Table.from_pandas(ds.frame, preserve_index=False)
    i = t.schema.get_field_index("time")
    return t.set_column(i, "time", t.column("time").cast(pa.timestamp("us", tz="UTC")))


def store_csv(ds: Dataset, d: str) -> dict:
    path = os.path.join(d, f"{ds.table}.csv")
    ds.frame.to_csv(path, index=False, date_format="%Y-%m-%dT%H:%M:%SZ")
    with open(path, "rb") as f:
        gz = gzip.compress(f.read(), compresslevel=6, mtime=0)
    with open(path + ".gz", "wb") as f:
        f.write(gz)
    return {"csv": (os.path.getsize(path), {}), "csv.gz": (len(gz), {})}


def store_parquet(ds: Dataset, d: str) -> tuple:
    import pyarrow.parquet as pq
    path = os.path.join(d, f"{ds.table}.parquet")
    pq.write_table(arrow_table(ds), path, compression="zstd", compression_level=3)
    return os.path.getsize(path), {}


def store_duckdb(ds: Dataset, d: str) -> tuple:
    duckdb = need("duckdb", ds.key, "python3 -m pip install duckdb")
    path = os.path.join(d, f"{ds.table}.duckdb")
    con = duckdb.connect(path)
    src = arrow_table(ds)  # noqa: F841  (read by name below)
    con.execute(f'CREATE TABLE "{ds.table}" AS SELECT * FROM src')
    con.execute("CHECKPOINT")
    n = con.execute(f'SELECT count(*) FROM "{ds.table}"').fetchone()[0]
    con.close()
    check_rows("duckdb", ds, n)
    files = [p for p in (path, path + ".wal") if os.path.exists(p)]
    return sum(os.path.getsize(p) for p in files), {"version": pkg_version("duckdb")}


def store_chdb(ds: Dataset, d: str) -> tuple:
    chdb = need("chdb", ds.key, "python3 -m pip install chdb")
    pq_path = os.path.join(d, f"{ds.table}.parquet")
    if not os.path.exists(pq_path):
        store_parquet(ds, d)
    types = {"float": "Float64", "integer": "Int64", "boolean": "Bool"}
    cols = ["time DateTime64(6, 'UTC')"] + [f"{t} LowCardinality(String)" for t in ds.tags]
    for f, k in ds.kinds.items():
        ty = types[k]
        cols.append(f"{f} Nullable({ty})" if ds.frame[f].isna().any() else f"{f} {ty}")
    con = chdb.connect(os.path.join(d, "chdb"))
    cur = con.cursor()
    cur.execute(f"CREATE TABLE {ds.table} ({', '.join(cols)}) ENGINE = MergeTree ORDER BY ({', '.join(ds.tags + ['time'])})")
    cur.execute(f"INSERT INTO {ds.table} SELECT * FROM file('{pq_path}', 'Parquet')")
    cur.execute(f"OPTIMIZE TABLE {ds.table} FINAL")
    cur.execute(f"SELECT sum(bytes_on_disk), sum(rows), count() FROM system.parts "
                f"WHERE database = currentDatabase() AND table = '{ds.table}' AND active")
    nbytes, n, parts = cur.fetchone()
    con.close()
    check_rows("chdb", ds, n)
    return int(nbytes), {"parts": int(parts), "version": pkg_version("chdb")}


def check_rows(system: str, ds: Dataset, n):
    if int(n) != len(ds.frame):
        raise BenchError(f"{ds.name}: {system} holds {n} rows, the data set {len(ds.frame)}")


# ------------------------------------------------------------------ tempora

class Tempora:
    def __init__(self, binary: str, data_dir: str, http_port: int, pg_port: int, log: str):
        self.binary, self.data_dir, self.log = binary, data_dir, log
        self.http, self.pg = f"127.0.0.1:{http_port}", f"127.0.0.1:{pg_port}"
        self.proc = self.conn = None

    def start(self):
        for addr in (self.http, self.pg):
            with socket.socket() as sock:
                if sock.connect_ex((addr.split(":")[0], int(addr.split(":")[1]))) == 0:
                    raise BenchError(f"something already listens on {addr} (--http-port, --pg-port)")
        env = {k: v for k, v in os.environ.items() if not k.startswith("TEMPORA_") or k == "TEMPORA_LOG"}
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen([self.binary, "serve", "--data-dir", self.data_dir, "--http-addr", self.http,
                                          "--pg-addr", self.pg], stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + 120
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise BenchError(f"tempora exited with status {self.proc.returncode}; see {self.log}")
            try:
                if self.request("GET", "/health")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise BenchError(f"tempora did not become healthy in 120 s; see {self.log}")

    def stop(self):
        """SIGTERM: the server drains writes, flushes its memtables and exits 0."""
        if self.conn:
            self.conn.close()
            self.conn = None
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout=300)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise BenchError(f"tempora (pid {self.proc.pid}) did not stop in 300 s; killed it")
        if rc != 0:
            raise BenchError(f"tempora exited with status {rc} on SIGTERM; see {self.log}")

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        try:
            self.conn = self.conn or http.client.HTTPConnection(self.http, timeout=600)
            self.conn.request(method, path, body=body, headers={"Content-Type": "text/plain"})
            r = self.conn.getresponse()
            return r.status, r.read()
        except (http.client.HTTPException, OSError):
            self.conn.close()
            self.conn = None
            raise

    def write(self, lines: list[str], precision: str, batch: int):
        path = f"/write?db={DB}&precision={precision}"
        for i in range(0, len(lines), batch):
            body = ("\n".join(lines[i:i + batch]) + "\n").encode()
            for _ in range(600):
                status, text = self.request("POST", path, body)
                if status != 503:
                    break
                time.sleep(1)  # the ingest queue is full: Retry-After 1
            if status != 204:
                raise BenchError(f"write of lines {i + 1}-{i + batch} answered {status}: {text[:500]!r}")

    def sql(self, q: str) -> list[list[str]]:
        status, text = self.request("GET", "/api/v1/sql?" + urllib.parse.urlencode({"db": DB, "format": "csv", "q": q}))
        if status != 200:
            raise BenchError(f"SQL {q[:80]!r} answered {status}: {text[:500]!r}")
        return [line.split(",") for line in text.decode().strip().splitlines()]


def tempora_files(data_dir: str) -> dict:
    """{category: [paths]}: data (.parquet), index (.tidx), manifest, catalog, wal, other."""
    out: dict = {k: [] for k in ("data", "index", "manifest", "catalog", "wal", "other")}
    for root, _, files in os.walk(data_dir):
        for f in files:
            p = os.path.join(root, f)
            rel = os.path.relpath(p, data_dir).split(os.sep)
            cat = ("wal" if "wal" in rel[:-1] else "manifest" if "manifest" in rel[:-1] else
                   "data" if f.endswith(".parquet") else "index" if f.endswith(".tidx") else
                   "catalog" if f == "databases.json" else "other")
            out[cat].append(p)
    return out


def parquet_footer_bytes(path: str) -> int:
    """Bytes of a Parquet file's footer (its metadata), from the length before the closing PAR1."""
    with open(path, "rb") as f:
        f.seek(-8, os.SEEK_END)
        tail = f.read(8)
    return int.from_bytes(tail[:4], "little") + 8 if tail[4:] == b"PAR1" else 0


def crowded_regions(data_dir: str) -> int:
    """Region directories holding more than one data file (work for compaction)."""
    n = 0
    for root, _, files in os.walk(data_dir):
        n += sum(f.endswith(".parquet") for f in files) > 1
    return n


def store_tempora(ds: Dataset, d: str, args) -> tuple:
    data_dir = os.path.join(d, "tempora")
    t = Tempora(args.tempora_bin, data_dir, args.http_port, args.pg_port, os.path.join(d, "tempora.log"))
    ns = time_ns(ds.frame["time"])
    precision, div = precision_for(ns)
    lines = line_protocol(ds.table, {k: ds.frame[k].tolist() for k in ds.tags},
                          {f: ds.frame[f].tolist() for f in ds.fields}, ds.kinds, (ns // div).tolist())
    t.start()
    try:
        t0 = time.time()
        t.write(lines, precision, args.batch)
        log(f"  tempora: {len(lines):,} lines written in {time.time() - t0:.1f} s (precision {precision})")
        del lines
    finally:
        t.stop()
    t.start()
    try:
        crowded, deadline = crowded_regions(data_dir), time.time() + args.compact_timeout
        log(f"  tempora: flushed by SIGTERM, restarted; {crowded} region dirs hold several data files"
            + ("; waiting for compaction (maintenance every 60 s)" if crowded else " (nothing to compact)"))
        while crowded and time.time() < deadline:
            time.sleep(1)
            crowded = crowded_regions(data_dir)
        if crowded:
            log(f"  tempora: {crowded} region dirs still hold several files after {args.compact_timeout} s")
        q = ", ".join(["count(*)"] + [f'count("{f}")' for f in ds.fields])
        got = [int(x) for x in t.sql(f'SELECT {q} FROM "{ds.table}"')[1]]
    finally:
        t.stop()
    check_rows("tempora", ds, got[0])
    want = [int(ds.frame[f].notna().sum()) for f in ds.fields]
    if got[1:] != want:
        bad = [(f, g, w) for f, g, w in zip(ds.fields, got[1:], want) if g != w]
        raise BenchError(f"{ds.name}: tempora holds other value counts (field, stored, expected): {bad[:5]}")
    files = tempora_files(data_dir)
    counted = files["data"] + files["index"] + files["manifest"] + files["catalog"]
    size = lambda ps: sum(os.path.getsize(p) for p in ps)  # noqa: E731
    extra = {"files": len(files["data"]), "data_bytes": size(files["data"]),
             "footer_bytes": sum(parquet_footer_bytes(p) for p in files["data"]), "index_bytes": size(files["index"]),
             "manifest_bytes": size(files["manifest"]), "wal_bytes": size(files["wal"]),
             "disk_bytes": sum(os.stat(p).st_blocks * 512 for p in counted), "compaction_pending": crowded or None}
    return size(counted), extra


# ------------------------------------------------------------------ driver

def log(msg: str):
    print(msg, file=sys.stderr, flush=True)


def run_dataset(key: str, args) -> list[dict]:
    t0 = time.time()
    need("pandas", key, "python3 -m pip install pandas pyarrow")
    ds = LOADERS[key](args)
    values, rows = count_values(ds.frame, ds.fields), len(ds.frame)
    log(f"{ds.name}: {rows:,} rows, {len(ds.fields)} fields, {values:,} values, tags {ds.tags or '-'} "
        f"({ds.package}; loaded in {time.time() - t0:.1f} s)")
    d = os.path.join(args.work_dir, key)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    sizes: dict = {}
    store = {"tempora": lambda: store_tempora(ds, d, args), "parquet-zstd": lambda: store_parquet(ds, d),
             "duckdb": lambda: store_duckdb(ds, d), "chdb": lambda: store_chdb(ds, d),
             "source": lambda: (ds.source_bytes, {"source_files": [os.path.basename(p) for p in ds.sources]})}
    for system in args.systems:
        t0 = time.time()
        if system in ("csv", "csv.gz"):
            sizes.update(store_csv(ds, d) if system not in sizes else {})
        else:
            sizes[system] = store[system]()
        log(f"  {system}: {sizes[system][0]:,} bytes ({time.time() - t0:.1f} s)")
    common = {"package": ds.package, "shifted_rows": ds.shifted or None, "fields": len(ds.fields),
              "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    return [make_record(ds.name, s, sizes[s][0], values, rows, ds.source_bytes, **{**common, **sizes[s][1]})
            for s in args.systems]


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", default=",".join(ALL_DATASETS), help=f"comma-separated: {', '.join(ALL_DATASETS)}")
    ap.add_argument("--systems", default=",".join(ALL_SYSTEMS), help=f"comma-separated: {', '.join(ALL_SYSTEMS)}")
    ap.add_argument("--out", help="append the records (JSON lines) to this file")
    ap.add_argument("--tempora-bin", default=os.environ.get("TEMPORA_BIN", "/var/tmp/tempora-target/release/tempora"))
    ap.add_argument("--work-dir", default="/var/tmp/tempora-compression")
    ap.add_argument("--vega-datasets", help="directory of the npm package vega-datasets")
    ap.add_argument("--http-port", type=int, default=18286)
    ap.add_argument("--pg-port", type=int, default=15633)
    ap.add_argument("--batch", type=int, default=20000, help="lines per write request")
    ap.add_argument("--compact-timeout", type=int, default=180, help="seconds to wait for compaction")
    args = ap.parse_args(argv)
    args.datasets = [s for s in args.datasets.split(",") if s]
    args.systems = [s for s in args.systems.split(",") if s]
    for name, got, known in (("data set", args.datasets, ALL_DATASETS), ("system", args.systems, ALL_SYSTEMS)):
        bad = [g for g in got if g not in known]
        if bad or not got:
            ap.error(f"unknown {name} {', '.join(bad) or '(none)'}; known: {', '.join(known)}")
    args.work_dir = os.path.abspath(args.work_dir)
    if "tempora" in args.systems and not os.access(args.tempora_bin, os.X_OK):
        ap.error(f"no Tempora binary at {args.tempora_bin} (--tempora-bin)")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    os.makedirs(args.work_dir, exist_ok=True)
    records = []
    try:
        for key in args.datasets:
            recs = run_dataset(key, args)
            records += recs
            if args.out:
                with open(args.out, "a") as f:
                    f.writelines(json.dumps(r) + "\n" for r in recs)
    except BenchError as e:
        log(f"error: {e}")
        return 1
    finally:
        if records:
            print(format_table(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
