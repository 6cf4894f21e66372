#!/usr/bin/env python3
"""TSBS cpu-only queries, side by side: Tempora and its peers on one machine.

Runs the thirteen TSBS "cpu-only" query types against one system at a time (QUERY_SPECS):

  lastpoint               the latest row of every host
  single-groupby-M-H-1    max of M fields per minute, H random hosts together, random 1 h window
                          (M-H: 1-1, 1-8, 5-1, 5-8)
  double-groupby-M        avg of M fields per host per hour, all hosts, random 12 h window
                          (M: 1, 5, all = 10)
  high-cpu-1, high-cpu-all  every row with usage_user > 90, 1 random host / every host,
                          random 12 h window
  cpu-max-all-H           max of all 10 fields per hour, H random hosts together, random 8 h
                          window (H: 1, 8)
  groupby-orderby-limit   max(usage_user) per minute, the 5 latest minutes before a random time

The M fields are the first M of FIELDS, as TSBS's GetCPUMetricsSlice takes them.

Parameters are drawn as `tsbs_generate_queries --use-case cpu-only --seed S` draws them, for each
query type separately (it seeds once per query type): Go's math/rand seeded with S, the random
window `start = lower + Int63n(upper - lower)` inside [data start, data end - window)
(utils.TimeInterval.RandWindow), hosts by `Intn(scale)` without repeats (getRandomSubsetPerm),
and in the TimescaleDB generator's order (hosts first for high-cpu, window first elsewhere).
Go's generator is reproduced bit for bit when Go is installed (its rngCooked table is read from
$GOROOT/src/math/rand/rng.go); otherwise Python's `random` stands in, and the JSON says so
(`"rng": "python-random"`). Bounds are cut to microseconds, as TSBS's TimescaleDB format does.

Each query type: --warmup runs (default 5, over the first parameter sets), then --runs timed runs
(default 50), run i with parameter set i. Time is wall time on the client, from sending the query
to holding every row in Python. Prints one JSON line per (system, query type) and a table.

Systems (`--system`):
  tempora          PostgreSQL wire protocol (psycopg), 127.0.0.1:15433, db benchmark
  tempora-http     the same SQL over HTTP GET /api/v1/sql?db=benchmark&format=json
  postgresql       plain PostgreSQL 15 table (no TimescaleDB), indexes (hostname, time DESC) and
                   (time DESC), as TSBS's loader makes them without hypertables
  duckdb           in-process, the persistent file built by bench/peers/setup.sh
  chdb             in-process ClickHouse (PyPI chdb), MergeTree ORDER BY (hostname, time)
  questdb          PostgreSQL wire protocol, 127.0.0.1:8812, admin/quest, db qdb; SAMPLE BY / LATEST ON
  victoriametrics  MetricsQL over HTTP (/api/v1/query_range, /api/v1/query); approximate, see below
  influxdb         InfluxDB 1.8 (built by bench/peers/setup.sh), InfluxQL over HTTP GET
                   /query?db=benchmark&epoch=ns, 127.0.0.1:8086; TSBS's Influx text (see influxql)
  tempora-influxql the same InfluxQL text sent to Tempora's /query (port --tempora-http-port):
                   its rows are digested as InfluxDB's are, so the two can be compared

The SQL of tempora, tempora-http, postgresql and duckdb is one standard text (`standard_sql`), so
results can be compared row for row; `--print-sql` prints it. Differences from TSBS's text:
explicit column lists instead of `*` (same columns in the same order everywhere) and an
`ORDER BY hostname, time` on high-cpu, so every system returns rows in one order.

Spellings (`--spelling`, SPELLINGS): the bucketed types (single-groupby-*, double-groupby-*,
cpu-max-all-*, groupby-orderby-limit) written as users and tools write a fixed-width bucket:
date_trunc (the default), date_bin, date_bin_origin, time_bucket, sample_by (Tempora's SAMPLE
BY), grafana_epoch (Grafana's floor(extract(epoch from time)/60)*60, GROUP BY 1), timescale_epoch
(to_timestamp(((extract(epoch from time)::int)/60)*60)), group_by_position (GROUP BY 1, 2), cte
and subquery (the aggregate inside WITH / FROM (...), ORDER BY and LIMIT outside). lastpoint and
high-cpu-* are the same text in every spelling. Each JSON line says its "spelling" ("native" for
the systems with their own dialect). Rows are digested after normalise_rows, which makes an
epoch-seconds bucket a timestamp, so every spelling's rows can be compared. `--spelling all`
runs every spelling a system takes, one after another for each type (after one untimed pass over
the type's parameter sets, so that every spelling runs on warm caches); `--table-from` then prints,
per system and type, each spelling's latency and its ratio to the fastest (bench/spellings.sh).

    bench/peers/setup.sh load tempora
    python3 bench/tsbs_queries.py --system tempora --json-out /var/tmp/tsbs-results.jsonl
    python3 bench/tsbs_queries.py --table-from /var/tmp/tsbs-results.jsonl   # every system, side by side
    python3 bench/tsbs_queries.py --print-sql --system duckdb --query-type high-cpu-1
    python3 bench/tsbs_queries.py --print-sql --system tempora --spelling sample_by
    python3 bench/tsbs_queries.py --system tempora --spelling all --runs 20 --json-out /var/tmp/s.jsonl
"""
from __future__ import annotations

import argparse
import functools
import hashlib
import http.client
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
import urllib.parse
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from proctree import descendants, stat_table  # noqa: E402  (same directory)

SYSTEMS = ["tempora", "tempora-http", "postgresql", "duckdb", "chdb", "questdb", "victoriametrics", "influxdb",
           "tempora-influxql"]

TAGS = ["hostname", "region", "datacenter", "rack", "os", "arch", "team", "service",
        "service_version", "service_environment"]
FIELDS = ["usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait", "usage_irq",
          "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"]
ROW_COLUMNS = ["time"] + TAGS + FIELDS  # the columns of lastpoint and high-cpu, in this order

HOUR_NS = 3600 * 10**9


@dataclass(frozen=True)
class QuerySpec:
    """One TSBS cpu-only query type (cmd/tsbs_generate_queries/uses/devops): its shape and sizes."""
    shape: str       # lastpoint | single-groupby | double-groupby | high-cpu | cpu-max-all | groupby-orderby-limit
    metrics: int     # how many of FIELDS it reads: the first `metrics` (GetCPUMetricsSlice)
    hosts: int       # hosts drawn at random (getRandomSubsetPerm); 0 = every host
    window_ns: int   # the random window's length (devops/common.go); 0 = no window

    @property
    def fields(self) -> list[str]:
        return FIELDS[:self.metrics]


QUERY_SPECS = {
    "lastpoint": QuerySpec("lastpoint", 10, 0, 0),
    "single-groupby-1-1-1": QuerySpec("single-groupby", 1, 1, 1 * HOUR_NS),
    "single-groupby-1-8-1": QuerySpec("single-groupby", 1, 8, 1 * HOUR_NS),
    "single-groupby-5-1-1": QuerySpec("single-groupby", 5, 1, 1 * HOUR_NS),
    "single-groupby-5-8-1": QuerySpec("single-groupby", 5, 8, 1 * HOUR_NS),
    "double-groupby-1": QuerySpec("double-groupby", 1, 0, 12 * HOUR_NS),     # DoubleGroupByDuration
    "double-groupby-5": QuerySpec("double-groupby", 5, 0, 12 * HOUR_NS),
    "double-groupby-all": QuerySpec("double-groupby", 10, 0, 12 * HOUR_NS),
    "high-cpu-1": QuerySpec("high-cpu", 10, 1, 12 * HOUR_NS),               # HighCPUDuration
    "high-cpu-all": QuerySpec("high-cpu", 10, 0, 12 * HOUR_NS),
    "cpu-max-all-1": QuerySpec("cpu-max-all", 10, 1, 8 * HOUR_NS),          # MaxAllDuration
    "cpu-max-all-8": QuerySpec("cpu-max-all", 10, 8, 8 * HOUR_NS),
    "groupby-orderby-limit": QuerySpec("groupby-orderby-limit", 1, 0, 1 * HOUR_NS),
}
QUERY_TYPES = list(QUERY_SPECS)


def spec(query_type: str) -> QuerySpec:
    try:
        return QUERY_SPECS[query_type]
    except KeyError:
        raise ValueError(f"unknown query type {query_type!r}; known: {', '.join(QUERY_TYPES)}") from None


# ------------------------------------------------------------------ Go's math/rand, bit for bit

class GoRand:
    """Go's math/rand (rngSource, the Additive Lagged Fibonacci generator) after rand.Seed(seed)."""

    LEN, TAP = 607, 273
    MASK64 = (1 << 64) - 1

    def __init__(self, seed: int, cooked: list[int]):
        self.tap, self.feed = 0, self.LEN - self.TAP
        int32max = (1 << 31) - 1
        seed %= int32max  # Go's % truncates toward zero; seeds here are >= 0
        if seed == 0:
            seed = 89482311
        x = seed
        self.vec = [0] * self.LEN
        for i in range(-20, self.LEN):
            x = self._seedrand(x)
            if i >= 0:
                u = (x << 40) & self.MASK64
                x = self._seedrand(x)
                u ^= (x << 20) & self.MASK64
                x = self._seedrand(x)
                u ^= x
                u ^= cooked[i] & self.MASK64
                self.vec[i] = u

    @staticmethod
    def _seedrand(x: int) -> int:
        A, Q, R = 48271, 44488, 3399
        hi, lo = int(x / Q), x % Q  # x > 0 here, so floor division equals Go's
        x = A * lo - R * hi
        if x < 0:
            x += (1 << 31) - 1
        return x

    def uint64(self) -> int:
        self.tap -= 1
        if self.tap < 0:
            self.tap += self.LEN
        self.feed -= 1
        if self.feed < 0:
            self.feed += self.LEN
        x = (self.vec[self.feed] + self.vec[self.tap]) & self.MASK64
        self.vec[self.feed] = x
        return x

    def int63(self) -> int:
        return self.uint64() & ((1 << 63) - 1)

    def int31(self) -> int:
        return self.int63() >> 32

    def int63n(self, n: int) -> int:
        if n & (n - 1) == 0:
            return self.int63() & (n - 1)
        mx = (1 << 63) - 1 - (1 << 63) % n
        v = self.int63()
        while v > mx:
            v = self.int63()
        return v % n

    def int31n(self, n: int) -> int:
        if n & (n - 1) == 0:
            return self.int31() & (n - 1)
        mx = (1 << 31) - 1 - (1 << 31) % n
        v = self.int31()
        while v > mx:
            v = self.int31()
        return v % n

    def intn(self, n: int) -> int:
        return self.int31n(n) if n <= (1 << 31) - 1 else self.int63n(n)


@functools.lru_cache(maxsize=1)
def go_rng_cooked() -> tuple[int, ...] | None:
    """The rngCooked table of Go's math/rand, read from the installed Go's source (once)."""
    candidates = []
    if os.environ.get("GOROOT"):
        candidates.append(os.environ["GOROOT"])
    go = shutil.which("go") or ("/usr/local/go/bin/go" if os.path.exists("/usr/local/go/bin/go") else None)
    if go:
        try:
            candidates.append(subprocess.run([go, "env", "GOROOT"], capture_output=True, text=True,
                                             timeout=30).stdout.strip())
        except (OSError, subprocess.SubprocessError):
            pass
    candidates.append("/usr/local/go")
    for root in candidates:
        path = os.path.join(root, "src", "math", "rand", "rng.go")
        try:
            with open(path) as f:
                text = f.read()
        except OSError:
            continue
        m = re.search(r"rngCooked \[rngLen\]int64 = \[\.\.\.\]int64\{(.*?)\}", text, re.S)
        if m:
            nums = [int(v) for v in re.findall(r"-?\d+", m.group(1))]
            if len(nums) == GoRand.LEN:
                return tuple(nums)
    return None


class PyRand:
    """Stand-in when Go's table is not available: same draws, Python's generator."""

    def __init__(self, seed: int):
        import random
        self.r = random.Random(seed)

    def int63n(self, n: int) -> int:
        return self.r.randrange(n)

    def intn(self, n: int) -> int:
        return self.r.randrange(n)


# ------------------------------------------------------------------ parameters

@dataclass
class Params:
    query_type: str
    start_ns: int = 0        # window start (inclusive)
    end_ns: int = 0          # window end (exclusive); groupby-orderby-limit: the "before" time
    hosts: list[str] = field(default_factory=list)
    data_start_ns: int = 0   # the data set's range (lastpoint on VictoriaMetrics needs it)
    data_end_ns: int = 0

    def to_json(self) -> dict:
        return {"start": ts_literal(self.start_ns) if self.start_ns else None,
                "end": ts_literal(self.end_ns) if self.end_ns else None, "hosts": self.hosts}


def make_rng(seed: int):
    cooked = go_rng_cooked()
    return (GoRand(seed, cooked), "go-math-rand") if cooked else (PyRand(seed), "python-random")


def generate_params(query_type: str, n: int, seed: int, scale: int, data_start_ns: int,
                    data_end_ns: int) -> tuple[list[Params], str]:
    """The first n parameter sets of `tsbs_generate_queries --seed seed --query-type query_type`."""
    rng, kind = make_rng(seed)

    def rand_window(window_ns: int) -> tuple[int, int]:
        lower, upper = data_start_ns, data_end_ns - window_ns
        if upper <= lower:
            raise ValueError(f"window {window_ns} ns does not fit in the data's range")
        start = lower + rng.int63n(upper - lower)
        end = start + window_ns
        return start // 1000 * 1000, end // 1000 * 1000  # goTimeFmt keeps microseconds

    def rand_hosts(k: int) -> list[str]:
        if k > scale:  # TSBS: "number of hosts cannot be larger than scale"
            raise ValueError(f"{query_type} draws {k} hosts but the data has {scale} (--scale)")
        seen, out = set(), []
        for _ in range(k):
            while True:
                v = rng.intn(scale)
                if v not in seen:
                    seen.add(v)
                    out.append(f"host_{v}")
                    break
        return out

    qs = spec(query_type)
    out = []
    for _ in range(n):
        p = Params(query_type, data_start_ns=data_start_ns, data_end_ns=data_end_ns)
        if qs.shape == "lastpoint":
            pass
        elif qs.shape == "high-cpu":  # TimescaleDB's HighCPUForHosts: hosts (if any), then window
            p.hosts = rand_hosts(qs.hosts)
            p.start_ns, p.end_ns = rand_window(qs.window_ns)
        elif qs.shape == "groupby-orderby-limit":
            _, p.end_ns = rand_window(qs.window_ns)
        else:  # single-groupby, double-groupby, cpu-max-all: window, then hosts (if any)
            p.start_ns, p.end_ns = rand_window(qs.window_ns)
            p.hosts = rand_hosts(qs.hosts)
        out.append(p)
    return out, kind


def ts_literal(ns: int) -> str:
    """RFC 3339 in UTC with microseconds: '2016-01-01T05:03:22.123456Z'."""
    sec, rem = divmod(ns, 10**9)
    return datetime.fromtimestamp(sec, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S") + f".{rem // 1000:06d}Z"


def host_clause(hosts: list[str], col: str = "hostname") -> str:
    return "(" + " OR ".join(f"{col} = '{h}'" for h in hosts) + ")"


# ------------------------------------------------------------------ standard SQL (Tempora, DuckDB, PostgreSQL)

# Spellings of the fixed-width time bucket (issue 21: every spelling users and tools send must
# reach the same operators). Each is the standard text of every bucketed type (single-groupby-*,
# double-groupby-*, cpu-max-all-*, groupby-orderby-limit) written that way; lastpoint and
# high-cpu-* have no bucket and keep their one text in every spelling. Name -> how it is written.
SPELLINGS = {
    "date_trunc": "date_trunc('minute', time) AS minute ... GROUP BY minute ORDER BY minute (the default)",
    "date_bin": "date_bin(INTERVAL '1 minute', time) (no origin)",
    "date_bin_origin": "date_bin(INTERVAL '1 minute', time, TIMESTAMP '1970-01-01T00:00:00Z')",
    "time_bucket": "time_bucket(INTERVAL '1 minute', time)",
    "sample_by": "SELECT time AS minute, ... SAMPLE BY 1m ORDER BY minute (Tempora's extension)",
    "grafana_epoch": ("Grafana's $__timeGroupAlias(time,'1m'): floor(extract(epoch from time)/60)*60 "
                      "AS \"time\", GROUP BY 1 ORDER BY 1; the bucket is a number of epoch seconds"),
    "timescale_epoch": "to_timestamp(((extract(epoch from time)::int)/60)*60) AS minute",
    "group_by_position": "date_trunc with GROUP BY 1[, 2] ORDER BY 1[, 2]",
    "cte": "WITH q AS (SELECT ... GROUP BY ...) SELECT * FROM q ORDER BY ... [LIMIT]",
    "subquery": "SELECT * FROM (SELECT ... GROUP BY ...) AS q ORDER BY ... [LIMIT]",
}
DEFAULT_SPELLING = "date_trunc"
NATIVE_SPELLING = "native"  # the JSON's spelling for systems with their own dialect (questdb, ...)
# Spellings whose bucket column comes back as a number of epoch seconds, not a timestamp:
# normalise_rows makes it a timestamp before the rows are digested.
EPOCH_SPELLINGS = {"grafana_epoch"}
# Which systems take which spellings. DuckDB has no date_bin, and its `/` on integers divides
# as floats (`//` is its integer division), so timescale_epoch's text runs there but gives one
# bucket per point: left out. PostgreSQL's date_bin needs its origin and it has no time_bucket
# (TimescaleDB's) nor SAMPLE BY.
SPELLING_SYSTEMS = {
    "tempora": list(SPELLINGS),
    "tempora-http": list(SPELLINGS),
    "duckdb": ["date_trunc", "time_bucket", "grafana_epoch", "group_by_position", "cte", "subquery"],
    "postgresql": ["date_trunc", "date_bin_origin", "grafana_epoch", "timescale_epoch",
                   "group_by_position", "cte", "subquery"],
}
BUCKETED_SHAPES = ("single-groupby", "double-groupby", "cpu-max-all", "groupby-orderby-limit")
_UNIT_SECS = {"minute": 60, "hour": 3600}


def spellings_of(system: str) -> list[str]:
    """The spellings a system takes: SPELLING_SYSTEMS, or only its native text."""
    return SPELLING_SYSTEMS.get(system, [NATIVE_SPELLING])


def check_spelling(system: str, spelling: str):
    if spelling not in SPELLINGS:
        raise ValueError(f"unknown spelling {spelling!r}; known: {', '.join(SPELLINGS)}")
    ok = spellings_of(system)
    if spelling not in ok:
        raise ValueError(f"{system} does not take the spelling {spelling!r}; it takes: {', '.join(ok)}")


def bucket_expr(unit: str, spelling: str) -> str:
    """The bucket expression of `time` in a spelling (unit: minute or hour)."""
    secs = _UNIT_SECS[unit]
    if spelling in ("date_trunc", "group_by_position", "cte", "subquery"):
        return f"date_trunc('{unit}', time)"
    if spelling == "date_bin":
        return f"date_bin(INTERVAL '1 {unit}', time)"
    if spelling == "date_bin_origin":
        return f"date_bin(INTERVAL '1 {unit}', time, TIMESTAMP '1970-01-01T00:00:00Z')"
    if spelling == "time_bucket":
        return f"time_bucket(INTERVAL '1 {unit}', time)"
    if spelling == "grafana_epoch":
        return f"floor(extract(epoch from time)/{secs})*{secs}"
    if spelling == "timescale_epoch":
        return f"to_timestamp(((extract(epoch from time)::int)/{secs})*{secs})"
    raise ValueError(f"unknown spelling {spelling!r}; known: {', '.join(SPELLINGS)}")


def _quoted(values: list[str]) -> str:
    return ", ".join(f"'{v}'" for v in values)


def _aggs(fn: str, prefix: str, fields: list[str]) -> str:
    return ", ".join(f"{fn}({f}) AS {prefix}_{f}" for f in fields)


def _window(p: Params, col: str = "time") -> str:
    return f"{col} >= '{ts_literal(p.start_ns)}' AND {col} < '{ts_literal(p.end_ns)}'"


def bucketed_sql(unit: str, by_host: bool, aggs: str, where: str, tail: str, spelling: str) -> str:
    """One bucketed aggregate in a spelling: bucket [, hostname], aggregates, grouped by both,
    ordered by both, then `tail` (" ASC", " DESC LIMIT 5" or "")."""
    alias = "minute" if unit == "minute" else "hour"
    if spelling == "sample_by":  # `time` in the select list is the bucket; groups by hostname too
        width = "1m" if unit == "minute" else "1h"
        keys = f"{alias}, hostname" if by_host else alias
        return (f"SELECT time AS {alias}{', hostname' if by_host else ''}, {aggs} FROM cpu WHERE {where} "
                f"SAMPLE BY {width} ORDER BY {keys}{tail}")
    if spelling == "grafana_epoch":
        alias = '"time"'  # what $__timeGroupAlias writes
    host = ", hostname" if by_host else ""
    select = f"SELECT {bucket_expr(unit, spelling)} AS {alias}{host}, {aggs} FROM cpu WHERE {where}"
    if spelling in ("group_by_position", "grafana_epoch"):
        keys = "1, 2" if by_host else "1"
    else:
        keys = f"{alias}, hostname" if by_host else alias
    if spelling == "cte":
        return f"WITH q AS ({select} GROUP BY {keys}) SELECT * FROM q ORDER BY {keys}{tail}"
    if spelling == "subquery":
        return f"SELECT * FROM ({select} GROUP BY {keys}) AS q ORDER BY {keys}{tail}"
    return f"{select} GROUP BY {keys} ORDER BY {keys}{tail}"


def standard_sql(query_type: str, p: Params, spelling: str = DEFAULT_SPELLING) -> str:
    """The one SQL text Tempora, DuckDB and PostgreSQL run (TSBS's TimescaleDB text, date_trunc
    form, hostname as a column, explicit column lists, ORDER BY on high-cpu), its bucket written
    in `spelling` (SPELLINGS; lastpoint and high-cpu-* are the same in every spelling)."""
    if spelling not in SPELLINGS:
        raise ValueError(f"unknown spelling {spelling!r}; known: {', '.join(SPELLINGS)}")
    qs = spec(query_type)
    hosts = f"{host_clause(p.hosts)} AND " if p.hosts else ""
    if qs.shape == "lastpoint":
        return f"SELECT DISTINCT ON (hostname) {', '.join(ROW_COLUMNS)} FROM cpu ORDER BY hostname, time DESC"
    if qs.shape == "high-cpu":
        hosts = f" AND {host_clause(p.hosts)}" if p.hosts else ""
        return (f"SELECT {', '.join(ROW_COLUMNS)} FROM cpu WHERE usage_user > 90.0 AND {_window(p)}{hosts} "
                f"ORDER BY hostname, time")
    if qs.shape == "single-groupby":
        return bucketed_sql("minute", False, _aggs("max", "max", qs.fields), f"{hosts}{_window(p)}", " ASC", spelling)
    if qs.shape == "double-groupby":
        return bucketed_sql("hour", True, _aggs("avg", "mean", qs.fields), _window(p), "", spelling)
    if qs.shape == "cpu-max-all":
        return bucketed_sql("hour", False, _aggs("max", "max", qs.fields), f"{hosts}{_window(p)}", "", spelling)
    if qs.shape == "groupby-orderby-limit":
        return bucketed_sql("minute", False, "max(usage_user) AS max_usage_user",
                            f"time < '{ts_literal(p.end_ns)}'", " DESC LIMIT 5", spelling)
    raise ValueError(query_type)


# Short names for correctness tests.
def tempora_sql(query_type: str, p: Params, spelling: str = DEFAULT_SPELLING) -> str:
    return standard_sql(query_type, p, spelling)


def duckdb_sql(query_type: str, p: Params, spelling: str = DEFAULT_SPELLING) -> str:
    return standard_sql(query_type, p, spelling)


# ------------------------------------------------------------------ ClickHouse (chdb)

def _ch_ts(ns: int) -> str:
    return f"toDateTime64('{ts_literal(ns)[:-1].replace('T', ' ')}', 6, 'UTC')"


def clickhouse_sql(query_type: str, p: Params) -> str:
    qs = spec(query_type)
    hosts = f"hostname IN ({_quoted(p.hosts)}) AND " if p.hosts else ""
    window = f"time >= {_ch_ts(p.start_ns)} AND time < {_ch_ts(p.end_ns)}"
    if qs.shape == "lastpoint":
        return f"SELECT {', '.join(ROW_COLUMNS)} FROM cpu ORDER BY hostname, time DESC LIMIT 1 BY hostname"
    if qs.shape == "single-groupby":
        return (f"SELECT toStartOfMinute(time) AS minute, {_aggs('max', 'max', qs.fields)} FROM cpu "
                f"WHERE {hosts}{window} GROUP BY minute ORDER BY minute ASC")
    if qs.shape == "double-groupby":
        return (f"SELECT toStartOfHour(time) AS hour, hostname, {_aggs('avg', 'mean', qs.fields)} FROM cpu "
                f"WHERE {window} GROUP BY hour, hostname ORDER BY hour, hostname")
    if qs.shape == "high-cpu":
        return (f"SELECT {', '.join(ROW_COLUMNS)} FROM cpu WHERE usage_user > 90.0 AND {hosts}{window} "
                f"ORDER BY hostname, time")
    if qs.shape == "cpu-max-all":
        return (f"SELECT toStartOfHour(time) AS hour, {_aggs('max', 'max', qs.fields)} FROM cpu "
                f"WHERE {hosts}{window} GROUP BY hour ORDER BY hour")
    if qs.shape == "groupby-orderby-limit":
        return (f"SELECT toStartOfMinute(time) AS minute, max(usage_user) AS max_usage_user FROM cpu "
                f"WHERE time < {_ch_ts(p.end_ns)} GROUP BY minute ORDER BY minute DESC LIMIT 5")
    raise ValueError(query_type)


# ------------------------------------------------------------------ QuestDB

def questdb_sql(query_type: str, p: Params) -> str:
    """QuestDB idiom: designated timestamp `timestamp`, SAMPLE BY (calendar-aligned, UTC) and
    LATEST ON. Same columns, in the same order, as standard_sql."""
    qs = spec(query_type)
    hosts = f"hostname IN ({_quoted(p.hosts)}) AND " if p.hosts else ""
    cols = ", ".join(["timestamp AS time"] + TAGS + FIELDS)
    window = _window(p, "timestamp")
    if qs.shape == "lastpoint":
        return (f"SELECT * FROM (SELECT {cols} FROM cpu LATEST ON timestamp PARTITION BY hostname) "
                f"ORDER BY hostname")
    if qs.shape == "single-groupby":  # the hosts together: SAMPLE BY groups by the time bucket only
        return (f"SELECT timestamp AS minute, {_aggs('max', 'max', qs.fields)} FROM cpu "
                f"WHERE {hosts}{window} SAMPLE BY 1m ALIGN TO CALENDAR")
    if qs.shape == "double-groupby":
        return (f"SELECT timestamp AS hour, hostname, {_aggs('avg', 'mean', qs.fields)} FROM cpu "
                f"WHERE {window} SAMPLE BY 1h ALIGN TO CALENDAR ORDER BY hour, hostname")
    if qs.shape == "high-cpu":
        return (f"SELECT {cols} FROM cpu WHERE usage_user > 90.0 AND {hosts}{window} "
                f"ORDER BY hostname, time")
    if qs.shape == "cpu-max-all":
        return (f"SELECT timestamp AS hour, {_aggs('max', 'max', qs.fields)} FROM cpu "
                f"WHERE {hosts}{window} SAMPLE BY 1h ALIGN TO CALENDAR")
    if qs.shape == "groupby-orderby-limit":
        # TSBS's QuestDB text ends in `SAMPLE BY 1m LIMIT 5`, which gives the 5 *earliest*
        # minutes; this gives the 5 latest, as every other system does.
        return (f"SELECT timestamp AS minute, max(usage_user) AS max_usage_user FROM cpu "
                f"WHERE timestamp < '{ts_literal(p.end_ns)}' SAMPLE BY 1m ALIGN TO CALENDAR "
                f"ORDER BY minute DESC LIMIT 5")
    raise ValueError(query_type)


# ------------------------------------------------------------------ VictoriaMetrics (MetricsQL)

def _vm_sel(metric_re: str, hosts: list[str]) -> str:
    hc = ""
    if hosts:
        hc = f', hostname="{hosts[0]}"' if len(hosts) == 1 else f', hostname=~"{"|".join(hosts)}"'
    return f'{{__name__=~"{metric_re}"{hc}}}'


def _vm_names(fields: list[str]) -> str:
    """The metric-name regex of these fields (VictoriaMetrics anchors it): cpu_usage_user,
    cpu_usage_(user|system|...), or cpu_usage_.* for all ten."""
    if len(fields) == len(FIELDS):
        return "cpu_usage_.*"
    short = [f.removeprefix("usage_") for f in fields]
    return "cpu_usage_" + (short[0] if len(short) == 1 else "(" + "|".join(short) + ")")


def victoriametrics_query(query_type: str, p: Params) -> dict:
    """The MetricsQL request for a query type: {path, params, shift_ms}. Approximate by nature:
    a range query evaluates `f(x[w])` at t over (t - w, t]; to get the SQL buckets [b, b + w),
    points are evaluated at b + w - 1 ms (and reported back as b, shift_ms), so a bucket covers
    the whole minute/hour even where the SQL window starts or ends inside it. Rows are counted
    as distinct (timestamp, hostname) keys, one per SQL row."""
    def floor(ns, w):
        return ns // w * w

    def buckets(w: int, q: str, first: int, last: int) -> dict:
        ms = 10**6
        return {"path": "/api/v1/query_range", "shift_ms": w // ms - 1, "params": {
            "query": q, "start": f"{(first + w - ms) / 1e9:.3f}", "end": f"{(last + w - ms) / 1e9:.3f}",
            "step": "1h" if w == HOUR_NS else f"{w // 10**9}s", "nocache": "1"}}
    qs = spec(query_type)
    names = _vm_names(qs.fields)
    minute = 60 * 10**9
    by_name = " by (__name__)" if qs.metrics > 1 else ""  # one series per field, when several
    if qs.shape == "lastpoint":
        dur_s = (p.data_end_ns - p.data_start_ns) // 10**9
        return {"path": "/api/v1/query", "shift_ms": 0, "params": {
            "query": f'last_over_time({_vm_sel(names, [])}[{dur_s}s])',
            "time": f"{p.data_end_ns / 1e9:.3f}"}}
    if qs.shape == "single-groupby":
        q = f'max(max_over_time({_vm_sel(names, p.hosts)}[1m])){by_name}'
        return buckets(minute, q, floor(p.start_ns, minute), floor(p.end_ns - 1, minute))
    if qs.shape == "groupby-orderby-limit":
        last = floor(p.end_ns - 1, minute)
        q = f'max(max_over_time({_vm_sel(names, [])}[1m]))'
        return buckets(minute, q, last - 4 * minute, last)
    if qs.shape == "double-groupby":
        q = f'avg(avg_over_time({_vm_sel(names, [])}[1h])) by (hostname{", __name__" if by_name else ""})'
        return buckets(HOUR_NS, q, floor(p.start_ns, HOUR_NS), floor(p.end_ns - 1, HOUR_NS))
    if qs.shape == "cpu-max-all":
        q = f'max(max_over_time({_vm_sel(names, p.hosts)}[1h])) by (__name__)'
        return buckets(HOUR_NS, q, floor(p.start_ns, HOUR_NS), floor(p.end_ns - 1, HOUR_NS))
    if qs.shape == "high-cpu":
        w = 10 * 10**9  # the data's interval: evaluate exactly at the points' timestamps
        first = -(-p.start_ns // w) * w
        last = floor(p.end_ns - 1, w)
        cond = f'{_vm_sel("cpu_usage_user", p.hosts)} > 90'
        return {"path": "/api/v1/query_range", "shift_ms": 0, "params": {
            "query": f"{_vm_sel(names, p.hosts)} and on(hostname) ({cond})",
            "start": f"{first / 1e9:.3f}", "end": f"{last / 1e9:.3f}", "step": "10s", "nocache": "1"}}
    raise ValueError(query_type)


# ------------------------------------------------------------------ InfluxDB 1.x (InfluxQL)

def influxql(query_type: str, p: Params) -> str:
    """TSBS's InfluxQL text (cmd/tsbs_generate_queries/databases/influx/devops.go) with this
    runner's parameters. Differences from TSBS's text, each so that the rows are the ones every
    other system returns:
      - the bounds carry microseconds (ts_literal), as every other system's do here (TSBS's
        Influx generator cuts them to seconds);
      - cpu-max-all-H groups by time(1h): TSBS's Influx text says time(1m), while its comment
        and every other database's text say one hour;
      - groupby-orderby-limit adds ORDER BY time DESC: TSBS's `group by time(1m) limit 5`
        gives the 5 *earliest* minutes of the data (as QuestDB's text does), not the 5 latest.
    Results come back as series (one per GROUP BY tag value) of rows; influx_rows makes them
    the standard rows: lastpoint and high-cpu-* reordered into ROW_COLUMNS (SELECT * lists the
    columns alphabetically; lastpoint's hostname is a series tag), double-groupby-M flattened
    into (hour, hostname, means...) rows in hour, hostname order, and the empty buckets that
    GROUP BY time() fills with null (its default fill(null); SQL's GROUP BY has no row for
    them: a window starting in the last 10 s of a minute) dropped."""
    qs = spec(query_type)
    hosts = "(" + " or ".join(f"hostname = '{h}'" for h in p.hosts) + ") and " if p.hosts else ""
    window = f"time >= '{ts_literal(p.start_ns)}' and time < '{ts_literal(p.end_ns)}'"

    def aggs(fn):
        return ",".join(f"{fn}({f})" for f in qs.fields)
    if qs.shape == "lastpoint":
        return 'SELECT * from cpu group by "hostname" order by time desc limit 1'
    if qs.shape == "single-groupby":
        return f"SELECT {aggs('max')} from cpu where {hosts}{window} group by time(1m)"
    if qs.shape == "double-groupby":
        return f"SELECT {aggs('mean')} from cpu where {window} group by time(1h),hostname"
    if qs.shape == "high-cpu":
        return f"SELECT * from cpu where usage_user > 90.0 and {hosts}{window}"
    if qs.shape == "cpu-max-all":
        return f"SELECT {aggs('max')} from cpu where {hosts}{window} group by time(1h)"
    if qs.shape == "groupby-orderby-limit":
        return (f"SELECT max(usage_user) from cpu WHERE time < '{ts_literal(p.end_ns)}' "
                f"group by time(1m) order by time desc limit 5")
    raise ValueError(query_type)


def _ns_datetime(ns: int) -> datetime:
    sec, rem = divmod(ns, 10**9)
    return datetime.fromtimestamp(sec, tz=timezone.utc).replace(microsecond=rem // 1000)


def influx_rows(query_type: str, series: list[dict]) -> list:
    """InfluxDB's series (name, tags, columns, values; time as epoch ns) as the standard rows."""
    shape = spec(query_type).shape
    if shape in ("lastpoint", "high-cpu"):
        out = []
        for s in series:
            cols = s["columns"]
            for v in s["values"]:
                row = {**s.get("tags", {}), **dict(zip(cols, v))}
                out.append(tuple(_ns_datetime(row["time"]) if c == "time" else row.get(c)
                                 for c in ROW_COLUMNS))
        out.sort(key=lambda r: (r[1], r[0]))  # hostname, time
        return out
    # GROUP BY time(): drop the empty buckets, rows whose aggregates are all null
    if shape == "double-groupby":
        out = [(_ns_datetime(v[0]), s.get("tags", {}).get("hostname"), *v[1:])
               for s in series for v in s["values"] if any(x is not None for x in v[1:])]
        out.sort(key=lambda r: (r[0], r[1]))
        return out
    # one series, (time, aggregates...) rows in the order asked for
    return [(_ns_datetime(v[0]), *v[1:]) for s in series for v in s["values"]
            if any(x is not None for x in v[1:])]


# ------------------------------------------------------------------ result normalisation

def _norm(v):
    if isinstance(v, datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=timezone.utc)
        d = v - datetime(1970, 1, 1, tzinfo=timezone.utc)
        return ("t", (d.days * 86400 + d.seconds) * 10**6 + d.microseconds)
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, (int, float, Decimal)):
        f = float(v)
        return ("n", None if math.isnan(f) else round(f, 6))
    if isinstance(v, date):
        return ("d", v.isoformat())
    return ("s", str(v))


_ISO_TS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?")


def _http_ts(v) -> object:
    """Tempora's JSON has timestamps as RFC 3339 strings: make them datetimes. One without a
    zone (a `timestamp` without time zone, as to_timestamp gives) is read as UTC by _norm."""
    if isinstance(v, str) and len(v) >= 19 and v[4] == "-" and v[10] == "T" and _ISO_TS.fullmatch(v):
        try:
            return datetime.fromisoformat(v[:-1] + "+00:00" if v.endswith("Z") else v)
        except ValueError:
            return v
    return v


def epoch_datetime(v) -> object:
    """A number of epoch seconds (int, float, Decimal; Grafana's bucket) as a UTC datetime,
    to the microsecond; anything else as it is."""
    if isinstance(v, bool) or not isinstance(v, (int, float, Decimal)):
        return v
    if isinstance(v, float) and not math.isfinite(v):
        return v
    us = int((Decimal(v) * 10**6).to_integral_value()) if isinstance(v, Decimal) else round(v * 10**6)
    return datetime(1970, 1, 1, tzinfo=timezone.utc) + timedelta(microseconds=us)


def normalise_rows(query_type: str, rows, spelling: str):
    """The rows with the bucket column (the first) as a timestamp, for the spellings whose
    bucket is a number of epoch seconds (EPOCH_SPELLINGS), so that every spelling's rows digest
    the same. Other spellings' rows, and the types without a bucket, are returned as they are."""
    if spelling not in EPOCH_SPELLINGS or spec(query_type).shape not in BUCKETED_SHAPES:
        return rows
    return [(epoch_datetime(r[0]), *r[1:]) for r in rows]


def digest_rows(rows) -> str:
    h = hashlib.sha1()
    for r in rows:
        h.update(repr(tuple(_norm(v) for v in r)).encode())
    return h.hexdigest()[:12]


# ------------------------------------------------------------------ clients

def tempora_auth_headers() -> dict:
    """The Authorization header for a Tempora with authentication on: the token in
    $TEMPORA_TOKEN (none when unset)."""
    token = os.environ.get("TEMPORA_TOKEN")
    return {"Authorization": f"Token {token}"} if token else {}


def tempora_pg_login() -> str:
    """The PostgreSQL login: $TEMPORA_TOKEN_NAME with $TEMPORA_TOKEN as the password, or the
    default user without a password."""
    token = os.environ.get("TEMPORA_TOKEN")
    if not token:
        return "user=tempora"
    return f"user={os.environ.get('TEMPORA_TOKEN_NAME', 'tempora')} password={token}"


def http_get(conn: http.client.HTTPConnection, path: str):
    """GET on a kept-alive connection: (body, response). A failed request closes the
    connection, so that the next one opens a new one instead of failing with CannotSendRequest
    (one refused connection used to fail every later query type)."""
    try:
        conn.request("GET", path, headers=tempora_auth_headers())
        resp = conn.getresponse()
        return resp.read(), resp
    except (http.client.HTTPException, OSError):
        conn.close()
        raise


class Client:
    dialect = "standard"
    spelling = NATIVE_SPELLING

    def run(self, query_type: str, p: Params) -> list:
        raise NotImplementedError

    def text(self, query_type: str, p: Params) -> str:
        raise NotImplementedError

    def close(self):
        pass


class PgClient(Client):
    def __init__(self, conninfo: str, dialect: str = "standard", spelling: str = DEFAULT_SPELLING,
                 options: str | None = None):
        import psycopg
        kw = {"autocommit": True, "prepare_threshold": None}
        if options:
            kw["options"] = options
        self.conn = psycopg.connect(conninfo, **kw)
        self.dialect = dialect
        self.spelling = NATIVE_SPELLING if dialect == "questdb" else spelling

    def text(self, qt, p):
        return questdb_sql(qt, p) if self.dialect == "questdb" else standard_sql(qt, p, self.spelling)

    def run(self, qt, p):
        cur = self.conn.execute(self.text(qt, p))
        return cur.fetchall() if cur.description else []

    def close(self):
        self.conn.close()


class TemporaHttpClient(Client):
    def __init__(self, host: str, port: int, db: str, spelling: str):
        self.conn = http.client.HTTPConnection(host, port, timeout=600)
        self.db, self.spelling = db, spelling

    def text(self, qt, p):
        return standard_sql(qt, p, self.spelling)

    def run(self, qt, p):
        qs = urllib.parse.urlencode({"db": self.db, "q": self.text(qt, p), "format": "json"})
        body, resp = http_get(self.conn, "/api/v1/sql?" + qs)
        if resp.status != 200:
            raise RuntimeError(f"HTTP {resp.status}: {body.decode(errors='replace')[:2000]}")
        return [[_http_ts(v) for v in r] for r in json.loads(body)["rows"]]

    def close(self):
        self.conn.close()


class DuckDbClient(Client):
    def __init__(self, path: str, spelling: str):
        import duckdb
        self.con = duckdb.connect(path, read_only=True)
        self.con.execute("SET TimeZone = 'UTC'")
        self.spelling = spelling

    def text(self, qt, p):
        return standard_sql(qt, p, self.spelling)

    def run(self, qt, p):
        return self.con.execute(self.text(qt, p)).fetchall()

    def close(self):
        self.con.close()


class ChdbClient(Client):
    dialect = "clickhouse"

    def __init__(self, path: str):
        import chdb
        self.con = chdb.connect(path)
        self.cur = self.con.cursor()

    def text(self, qt, p):
        return clickhouse_sql(qt, p)

    def run(self, qt, p):
        self.cur.execute(self.text(qt, p))
        return self.cur.fetchall()

    def close(self):
        self.cur.close()
        self.con.close()


class VictoriaMetricsClient(Client):
    dialect = "metricsql"

    def __init__(self, host: str, port: int):
        self.conn = http.client.HTTPConnection(host, port, timeout=600)

    def text(self, qt, p):
        q = victoriametrics_query(qt, p)
        return q["path"] + "?" + urllib.parse.urlencode(q["params"])

    def run(self, qt, p):
        q = victoriametrics_query(qt, p)
        body, resp = http_get(self.conn, q["path"] + "?" + urllib.parse.urlencode(q["params"]))
        if resp.status != 200:
            raise RuntimeError(f"HTTP {resp.status}: {body.decode(errors='replace')[:2000]}")
        data = json.loads(body)["data"]
        # Pivot series x points into SQL-like rows keyed by (timestamp, hostname).
        rows: dict = {}
        for s in data["result"]:
            host = s["metric"].get("hostname", "")
            name = s["metric"].get("__name__", "value")
            points = s["values"] if "values" in s else [s["value"]]
            for ts, val in points:
                key = (round(float(ts) * 1000) - q["shift_ms"], host)
                rows.setdefault(key, {})[name] = float(val)
        def field_order(name):
            return FIELDS.index(name[4:]) if name.startswith("cpu_") and name[4:] in FIELDS else -1
        shape = spec(qt).shape
        with_host = shape in ("lastpoint", "high-cpu", "double-groupby")
        out = []
        for (ts_ms, host), vals in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])
                                          if shape in ("lastpoint", "high-cpu") else kv[0]):
            ts = datetime.fromtimestamp(ts_ms / 1000, tz=timezone.utc)
            values = [vals[k] for k in sorted(vals, key=field_order)]
            out.append((ts, host, *values) if with_host else (ts, *values))
        if shape == "groupby-orderby-limit":
            out.sort(key=lambda r: r[0], reverse=True)
        return out

    def close(self):
        self.conn.close()


class InfluxClient(Client):
    dialect = "influxql"

    def __init__(self, host: str, port: int, db: str):
        self.conn = http.client.HTTPConnection(host, port, timeout=600)
        self.db = db

    def text(self, qt, p):
        return influxql(qt, p)

    def run(self, qt, p):
        qs = urllib.parse.urlencode({"db": self.db, "epoch": "ns", "q": self.text(qt, p)})
        body, resp = http_get(self.conn, "/query?" + qs)
        if resp.status != 200:
            raise RuntimeError(f"HTTP {resp.status}: {body.decode(errors='replace')[:2000]}")
        res = json.loads(body)["results"][0]
        if "error" in res:
            raise RuntimeError(res["error"])
        return influx_rows(qt, res.get("series", []))

    def close(self):
        self.conn.close()


def make_client(args) -> Client:
    s = args.system
    if s == "tempora":
        return PgClient(f"host={args.host} port={args.tempora_pg_port} dbname=benchmark "
                        f"{tempora_pg_login()}",
                        spelling=args.spelling)
    if s == "tempora-http":
        return TemporaHttpClient(args.host, args.tempora_http_port, "benchmark", args.spelling)
    if s == "postgresql":
        return PgClient(f"host={args.host} port={args.pg_port} dbname=benchmark user=postgres",
                        spelling=args.spelling, options="-c TimeZone=UTC")
    if s == "duckdb":
        return DuckDbClient(args.duckdb_path, args.spelling)
    if s == "chdb":
        return ChdbClient(args.chdb_path)
    if s == "questdb":
        return PgClient(f"host={args.host} port={args.questdb_port} dbname=qdb user=admin password=quest",
                        dialect="questdb")
    if s == "victoriametrics":
        return VictoriaMetricsClient(args.host, args.vm_port)
    if s == "influxdb":
        return InfluxClient(args.host, args.influx_port, "benchmark")
    if s == "tempora-influxql":
        return InfluxClient(args.host, args.tempora_http_port, "benchmark")
    raise ValueError(s)


SYSTEM_NOTES = {
    "tempora": "Tempora over the PostgreSQL wire protocol (psycopg 3, extended protocol, no server-side prepare)",
    "tempora-http": "Tempora over HTTP GET /api/v1/sql (JSON), one kept-alive connection",
    "postgresql": "PostgreSQL 15 without TimescaleDB: plain table, indexes (hostname, time DESC) and (time DESC)",
    "duckdb": "DuckDB in-process, persistent file, rows in file (time) order, no index",
    "chdb": "chdb (ClickHouse in-process), MergeTree ORDER BY (hostname, time)",
    "questdb": "QuestDB 9.3.4 over the PostgreSQL wire protocol, SAMPLE BY / LATEST ON, partitioned by day (ILP default)",
    "victoriametrics": ("VictoriaMetrics MetricsQL, approximate: whole minute/hour buckets at the window's ends; "
                        "lastpoint = last_over_time over the whole data range; rows = (timestamp, host) keys"),
    "influxdb": ("InfluxDB 1.8.10 (inmem index, TSM files settled: cache written, fully compacted), InfluxQL "
                 "over HTTP GET /query (JSON, epoch=ns), one kept-alive connection; TSBS's Influx text but "
                 "cpu-max-all-* by 1h (TSBS: 1m) and groupby-orderby-limit ORDER BY time DESC (TSBS: the 5 "
                 "earliest minutes); series made into the standard rows, empty buckets (fill(null)) dropped"),
    "tempora-influxql": ("Tempora's /query (InfluxQL over HTTP GET, JSON, epoch=ns), one kept-alive connection; "
                         "the same text and row handling as influxdb"),
}


# ------------------------------------------------------------------ measuring

class CpuMeter:
    """How much CPU the rest of the machine used while a query type ran: all busy CPU time
    (/proc/stat) less this process's and the server's (its process tree). The machine has few
    cores and may be shared, so this says whether a figure was taken on a quiet machine."""

    def __init__(self, server_pids: list[int]):
        self.server_pids = server_pids
        self.hz = os.sysconf("SC_CLK_TCK")
        self.ncpu = os.cpu_count() or 1

    @staticmethod
    def _busy_jiffies() -> int | None:
        try:
            with open("/proc/stat") as f:
                v = [int(x) for x in f.readline().split()[1:]]
        except OSError:
            return None
        return sum(v[:8]) - v[3] - v[4]  # all but idle and iowait (guest is inside user)

    def _tree_jiffies(self) -> int:
        if not self.server_pids:
            return 0
        table = stat_table()
        # utime + stime, and cutime + cstime: children it has reaped (PostgreSQL's parallel
        # workers live for one query, so they are gone by the next look)
        return sum(sum(int(x) for x in table[pid][11:15])
                   for pid in descendants(table, self.server_pids) if pid in table)

    def start(self):
        t = os.times()
        self.t0 = (time.monotonic(), self._busy_jiffies(), t.user + t.system, self._tree_jiffies())

    def stop(self) -> dict:
        t = os.times()
        w0, b0, own0, srv0 = self.t0
        wall = time.monotonic() - w0
        b1 = self._busy_jiffies()
        if b0 is None or b1 is None or wall <= 0:
            return {}
        busy = (b1 - b0) / self.hz
        own = (t.user + t.system) - own0
        srv = (self._tree_jiffies() - srv0) / self.hz
        other = max(0.0, busy - own - srv)
        return {"cpu_client_s": round(own, 2), "cpu_server_s": round(srv, 2),
                "cpu_other_pct": round(100 * other / (wall * self.ncpu), 1)}


def percentile(sorted_vals: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default)."""
    if not sorted_vals:
        return float("nan")
    k = (len(sorted_vals) - 1) * q
    lo, hi = math.floor(k), math.ceil(k)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (k - lo)


def prime(client: Client, args, qt: str):
    """Every parameter set of the type run once, untimed: with several spellings, so that the
    first spelling timed does not pay alone for the first reads of windows the others then find
    in the caches."""
    params, _ = generate_params(qt, max(args.runs, args.warmup, 1), args.seed, args.scale,
                                args.start_ns, args.end_ns)
    for p in params:
        client.run(qt, p)


def run_query_type(client: Client, args, qt: str, primed: bool = False) -> dict:
    params, rng_kind = generate_params(qt, max(args.runs, args.warmup, 1), args.seed, args.scale,
                                       args.start_ns, args.end_ns)
    rec = {"system": args.system, "query_type": qt, "runs": args.runs, "warmup": args.warmup,
           "seed": args.seed, "scale": args.scale, "rng": rng_kind, "dialect": client.dialect,
           "spelling": client.spelling, "primed": primed,
           "note": SYSTEM_NOTES[args.system], "first_query": client.text(qt, params[0]),
           "first_params": params[0].to_json(), "when": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    rec["loadavg_1m_before"] = round(os.getloadavg()[0], 2)
    for pid in args.server_pid or []:  # which build answered: a rebuilt binary changes the figures
        try:
            exe = os.readlink(f"/proc/{pid}/exe")
            rec["server_exe"] = exe  # ends in " (deleted)" if the file was replaced since start
            st = os.stat(exe.removesuffix(" (deleted)"))
            rec["server_exe_mtime"] = datetime.fromtimestamp(st.st_mtime, timezone.utc).isoformat(timespec="seconds")
            rec["server_exe_bytes"] = st.st_size
        except OSError:
            pass
        break
    meter = CpuMeter(args.server_pid or [])
    meter.start()
    try:
        for i in range(args.warmup):
            client.run(qt, params[i % len(params)])
        times, rows, digests = [], [], []
        for i in range(args.runs):
            p = params[i]
            t0 = time.perf_counter()
            result = client.run(qt, p)
            times.append((time.perf_counter() - t0) * 1000)
            rows.append(len(result))
            digests.append(digest_rows(normalise_rows(qt, result, client.spelling)))
    except Exception as e:  # record the error verbatim and go on with the next query type
        rec["error"] = f"{type(e).__name__}: {e}".strip()
        return rec
    st = sorted(times)
    rec.update({
        "min_ms": round(st[0], 3), "median_ms": round(statistics.median(st), 3),
        "mean_ms": round(statistics.fmean(st), 3), "p99_ms": round(percentile(st, 0.99), 3),
        "max_ms": round(st[-1], 3),
        "rows_total": sum(rows), "rows_min": min(rows), "rows_max": max(rows), "rows_per_run": rows,
        "digest": hashlib.sha1("".join(digests).encode()).hexdigest()[:12],
        "loadavg_1m_after": round(os.getloadavg()[0], 2),
        **meter.stop(),
    })
    return rec


def spelling_of(r: dict) -> str:
    """A record's spelling (SPELLINGS, or "native" for a system with its own dialect). Records
    written before the key existed: their "bucket" (date_trunc or time_bucket), else date_trunc
    for the standard-SQL systems and native for the others."""
    sp = r.get("spelling") or r.get("bucket")
    if sp:
        return sp
    return DEFAULT_SPELLING if r.get("system") in SPELLING_SYSTEMS else NATIVE_SPELLING


def is_default_spelling(r: dict) -> bool:
    return spelling_of(r) in (DEFAULT_SPELLING, NATIVE_SPELLING)


def pick_records(records: list[dict], pick: str = "last", by_spelling: bool = False) -> dict:
    """One record per (system, query type), keyed so; with by_spelling, one per (system, query
    type, spelling). pick="last": the last record of each key; "quietest": the one taken while
    other processes used the least CPU (one without an error wins over one with an error).
    Without by_spelling a pair's records of the default spelling (date_trunc, or native) stand
    for it, and another spelling's only when it has none. bench/report.py uses this too."""
    if not by_spelling:
        has_default = {(r["system"], r["query_type"]) for r in records if is_default_spelling(r)}
        records = [r for r in records
                   if is_default_spelling(r) or (r["system"], r["query_type"]) not in has_default]
    latest: dict = {}
    for r in records:
        k = (r["system"], r["query_type"]) + ((spelling_of(r),) if by_spelling else ())
        if pick == "quietest" and k in latest and "error" not in latest[k]:
            old, new = latest[k].get("cpu_other_pct", 1e9), r.get("cpu_other_pct", 1e9)
            if "error" in r or new >= old:
                continue
        latest[k] = r
    return latest


def different_rows(picked: dict) -> list[str]:
    """Query types whose systems (and spellings, when picked by_spelling) disagree on the rows
    (result digests differ) or failed, as messages; empty when all agree. `picked` is
    pick_records' result."""
    problems = []
    for qt in QUERY_TYPES:
        recs = {(k[0] if len(k) == 2 else f"{k[0]} {k[2]}"): r for k, r in picked.items() if k[1] == qt}
        problems += [f"{qt}: {s} failed: {r['error']}" for s, r in recs.items() if "error" in r]
        digests = {s: r["digest"] for s, r in recs.items() if "error" not in r}
        if len(set(digests.values())) > 1:
            problems.append(f"{qt}: different rows: {digests}")
    return problems


def print_table(records: list[dict], out=sys.stdout, pick: str = "last", spelling_stat: str = "mean_ms"):
    systems = []
    for r in records:
        if r["system"] not in systems:
            systems.append(r["system"])
    latest = pick_records(records, pick)
    qts = [q for q in QUERY_TYPES if any((s, q) in latest for s in systems)]

    def cell(r, key):
        if r is None:
            return "-"
        if "error" in r:
            return "ERROR"
        return f"{r[key]:.2f}" if isinstance(r[key], float) else str(r[key])

    for title, keys in (("mean / median / p99 ms", ("mean_ms", "median_ms", "p99_ms")),):
        w0 = max(len(q) for q in qts + ["query type"])
        cols = [max(24, len(s)) for s in systems]
        print(f"\n{title} (wall time on the client, {records[0].get('runs')} runs each)", file=out)
        print("query type".ljust(w0) + " | " + " | ".join(s.ljust(c) for s, c in zip(systems, cols)), file=out)
        print("-" * w0 + "-+-" + "-+-".join("-" * c for c in cols), file=out)
        for q in qts:
            cells = []
            for s, c in zip(systems, cols):
                r = latest.get((s, q))
                v = " / ".join(cell(r, k) for k in keys) if r and "error" not in r else cell(r, keys[0])
                cells.append(v.ljust(c))
            print(q.ljust(w0) + " | " + " | ".join(cells), file=out)
    print("\nrows returned (total over the runs; min-max per run) and result digest", file=out)
    w0 = max(len(q) for q in qts + ["query type"])
    cols = [max(24, len(s)) for s in systems]
    print("query type".ljust(w0) + " | " + " | ".join(s.ljust(c) for s, c in zip(systems, cols)), file=out)
    print("-" * w0 + "-+-" + "-+-".join("-" * c for c in cols), file=out)
    for q in qts:
        cells = []
        for s, c in zip(systems, cols):
            r = latest.get((s, q))
            if r is None:
                v = "-"
            elif "error" in r:
                v = "ERROR"
            else:
                v = f"{r['rows_total']} ({r['rows_min']}-{r['rows_max']}) {r['digest'][:6]}"
            cells.append(v.ljust(c))
        print(q.ljust(w0) + " | " + " | ".join(cells), file=out)
    print("\nCPU used by other processes while each system ran (% of all cores; warm-up and timed "
          "runs; above a few % the times are skewed by other work)", file=out)
    for s in systems:
        oth = [r["cpu_other_pct"] for q in qts if (r := latest.get((s, q))) and "cpu_other_pct" in r]
        if oth:
            print(f"  {s}: max {max(oth):.1f} % (per query type: {', '.join(f'{v:.1f}' for v in oth)})", file=out)
    errs = [r for r in latest.values() if "error" in r]
    for r in errs:
        print(f"\nERROR {r['system']} {r['query_type']}: {r['error']}", file=out)
    print_spelling_tables(records, out, pick, spelling_stat)


SPELLING_LIMIT = 1.2  # issue 21: every spelling within 1.2x of the fastest, per TSBS type


def spelling_matrix(records: list[dict], pick: str = "last") -> dict:
    """{system: {query type: {spelling: record}}} for the systems measured in more than one
    spelling, spellings in SPELLINGS order. bench/report.py uses this too."""
    picked = pick_records(records, pick, by_spelling=True)
    out: dict = {}
    for (s, q, sp), r in picked.items():
        out.setdefault(s, {}).setdefault(q, {})[sp] = r
    order = {sp: i for i, sp in enumerate(SPELLINGS)}
    multi = {s: m for s, m in out.items() if len({sp for by in m.values() for sp in by}) > 1}
    return {s: {q: dict(sorted(m[q].items(), key=lambda kv: order.get(kv[0], len(order))))
                for q in QUERY_TYPES if q in m} for s, m in multi.items()}


def spelling_ratios(by_spelling: dict, stat: str = "mean_ms") -> dict:
    """{spelling: stat ÷ the fastest spelling's stat} over one query type's records (errors and
    missing figures left out)."""
    ok = {sp: r[stat] for sp, r in by_spelling.items() if "error" not in r and r.get(stat)}
    best = min(ok.values(), default=None)
    return {sp: v / best for sp, v in ok.items()} if best else {}


def spelling_rows_agree(by_spelling: dict) -> str:
    """"same" when every spelling without an error returned the same rows (digest), else the
    spellings grouped by digest."""
    digests: dict = {}
    for sp, r in by_spelling.items():
        if "error" not in r:
            digests.setdefault(r.get("digest"), []).append(sp)
    if len(digests) <= 1:
        return "same"
    return "DIFFER: " + "; ".join(f"{d[:6] if d else '?'} {','.join(sps)}" for d, sps in digests.items())


def print_spelling_tables(records: list[dict], out=sys.stdout, pick: str = "last", stat: str = "mean_ms"):
    """Per system measured in several spellings: per TSBS type, each spelling's latency and its
    ratio to the fastest spelling of that type; `!` marks a ratio above SPELLING_LIMIT."""
    for system, by_type in spelling_matrix(records, pick).items():
        spellings = [sp for sp in list(SPELLINGS) + [NATIVE_SPELLING]
                     if any(sp in by for by in by_type.values())]
        w0 = max(len(q) for q in list(by_type) + ["query type"])
        cols = [max(15, len(sp)) for sp in spellings]
        print(f"\n{system}: {stat.removesuffix('_ms')} ms per spelling (÷ the fastest spelling of the type; "
              f"! above {SPELLING_LIMIT}x)", file=out)
        print("query type".ljust(w0) + " | " + " | ".join(sp.ljust(c) for sp, c in zip(spellings, cols))
              + " | worst  | rows", file=out)
        print("-" * w0 + "-+-" + "-+-".join("-" * c for c in cols) + "-+--------+-----", file=out)
        over = []
        for q, by in by_type.items():
            ratios = spelling_ratios(by, stat)
            cells = []
            for sp, c in zip(spellings, cols):
                r = by.get(sp)
                if r is None:
                    v = "-"
                elif "error" in r:
                    v = "ERROR"
                else:
                    x = ratios.get(sp)
                    v = f"{r[stat]:.3g} ({x:.2f}{'!' if x and x > SPELLING_LIMIT else ''})" if x else f"{r[stat]:.3g}"
                cells.append(v.ljust(c))
            worst = max(ratios.values(), default=None)
            over += [f"{q} {sp} {x:.2f}x" for sp, x in ratios.items() if x > SPELLING_LIMIT]
            print(q.ljust(w0) + " | " + " | ".join(cells) + " | "
                  + (f"{worst:.2f}x" if worst else "-").ljust(6) + " | " + spelling_rows_agree(by), file=out)
        print(f"  {system}: {len(over)} of {sum(len(by) for by in by_type.values())} (type, spelling) pairs "
              f"above {SPELLING_LIMIT}x the fastest spelling of their type", file=out)
        for q, by in by_type.items():
            for sp, r in by.items():
                if "error" in r:
                    print(f"  ERROR {system} {q} {sp}: {r['error'][:300]}", file=out)


def resolve_spellings(system: str, text: str) -> list[str]:
    """--spelling's value for a system: the spellings to run, in SPELLINGS order for `all`. A
    system with its own dialect (questdb, chdb, victoriametrics, influxdb) runs its one native
    text whatever was asked; a standard-SQL system refuses a spelling it does not take."""
    if system not in SPELLING_SYSTEMS:
        for sp in text.split(","):
            if sp != "all" and sp not in SPELLINGS:
                raise ValueError(f"unknown spelling {sp!r}; known: {', '.join(SPELLINGS)}, all")
        return [NATIVE_SPELLING]
    if text == "all":
        return list(SPELLING_SYSTEMS[system])
    out = []
    for sp in text.split(","):
        check_spelling(system, sp.strip())
        if sp.strip() not in out:
            out.append(sp.strip())
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--system", choices=SYSTEMS)
    ap.add_argument("--query-type", action="append", choices=QUERY_TYPES,
                    help="repeatable; default: all thirteen")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--seed", type=int, default=123)
    ap.add_argument("--scale", type=int, default=100, help="number of hosts in the data")
    ap.add_argument("--start", default="2016-01-01T00:00:00Z", help="the data's first timestamp")
    ap.add_argument("--duration-secs", type=int, default=86400, help="the data's length (end = start + this)")
    ap.add_argument("--spelling", default=None,
                    help="how the standard SQL writes its time bucket (tempora, tempora-http, duckdb, "
                         "postgresql; the other systems have their own text and ignore it): one of "
                         f"{', '.join(SPELLINGS)}; several separated by commas, or `all` (every "
                         "spelling the system takes), run one after another for each query type. "
                         "Default date_trunc")
    ap.add_argument("--bucket", choices=["date_trunc", "time_bucket"], default=None,
                    help="the older name of --spelling date_trunc / time_bucket")
    ap.add_argument("--http", action="store_true", help="with --system tempora: use HTTP (= tempora-http)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--tempora-pg-port", type=int, default=15433)
    ap.add_argument("--tempora-http-port", type=int, default=18086)
    ap.add_argument("--pg-port", type=int, default=5442)
    ap.add_argument("--questdb-port", type=int, default=8812)
    ap.add_argument("--vm-port", type=int, default=8428)
    ap.add_argument("--influx-port", type=int, default=8086)
    ap.add_argument("--duckdb-path", default="/var/tmp/peers/duckdb/cpu-100h-1d.duckdb")
    ap.add_argument("--chdb-path", default="/var/tmp/peers/chdb/cpu-100h-1d")
    ap.add_argument("--server-pid", type=int, action="append",
                    help="the server's pid (repeatable): its CPU, with its children's, is not counted "
                         "as other processes' CPU")
    ap.add_argument("--json-out", help="append the JSON lines to this file too")
    ap.add_argument("--table-from", help="print the side-by-side table of a JSON-lines file and exit")
    ap.add_argument("--spelling-stat", choices=["mean", "median", "min", "p99"], default="mean",
                    help="with --table-from: the figure the spelling tables compare (default mean)")
    ap.add_argument("--pick", choices=["last", "quietest"], default="last",
                    help="with --table-from, several records of one (system, query type): the last, "
                         "or the one taken while other processes used the least CPU")
    ap.add_argument("--check-same-rows", action="store_true",
                    help="with --table-from: exit 1 unless every system, in every spelling, returned "
                         "the same rows (result digest) for each query type, and none failed")
    ap.add_argument("--print-sql", action="store_true",
                    help="print the first query of each type (in each spelling asked for) and exit")
    args = ap.parse_args(argv)

    if args.table_from:
        with open(args.table_from) as f:
            records = [json.loads(line) for line in f if line.strip()]
        # Only query lines (no "kind", or "query"): bench/peers/setup.sh also writes machine,
        # ingest, storage and memory lines into the same file (bench/report.py's schema).
        records = [r for r in records if r.get("kind", "query") == "query"]
        print_table(records, pick=args.pick, spelling_stat=f"{args.spelling_stat}_ms")
        if args.check_same_rows:
            problems = different_rows(pick_records(records, args.pick, by_spelling=True))
            for p in problems:
                print(f"MISMATCH {p}", file=sys.stderr)
            return 1 if problems else 0
        return 0
    if not args.system:
        ap.error("--system is required")
    if args.http and args.system == "tempora":
        args.system = "tempora-http"
    start = datetime.fromisoformat(args.start.replace("Z", "+00:00"))
    args.start_ns = int(start.timestamp()) * 10**9
    args.end_ns = args.start_ns + args.duration_secs * 10**9
    qts = args.query_type or QUERY_TYPES
    if args.spelling and args.bucket and args.spelling != args.bucket:
        ap.error(f"--spelling {args.spelling} and --bucket {args.bucket} disagree")
    try:
        spellings = resolve_spellings(args.system, args.spelling or args.bucket or DEFAULT_SPELLING)
    except ValueError as e:
        ap.error(str(e))

    if args.print_sql:
        for qt, sp in ((qt, sp) for qt in qts for sp in spellings):
            p = generate_params(qt, 1, args.seed, args.scale, args.start_ns, args.end_ns)[0][0]
            if args.system == "chdb":
                t = clickhouse_sql(qt, p)
            elif args.system == "questdb":
                t = questdb_sql(qt, p)
            elif args.system == "victoriametrics":
                q = victoriametrics_query(qt, p)
                t = q["path"] + " " + json.dumps(q["params"])
            elif args.system in ("influxdb", "tempora-influxql"):
                t = influxql(qt, p)
            else:
                t = standard_sql(qt, p, sp)
            label = f" spelling={sp}" if len(spellings) > 1 else ""
            print(f"-- {qt}{label} {json.dumps(p.to_json())}\n{t};")
        return 0

    args.spelling = spellings[0]
    client = make_client(args)
    records = []
    try:
        for qt in qts:
            # Every spelling of one type back to back, so that they are measured on one machine
            # state, after a pass over every parameter set (prime) so that all of them run on
            # warm caches; then each its own warm-up and timed runs.
            primed = len(spellings) > 1
            if primed:
                client.spelling = spellings[0]
                try:
                    prime(client, args, qt)
                except Exception as e:  # noqa: BLE001  the spellings' own runs record the error
                    print(f"prime {qt}: {type(e).__name__}: {e}", file=sys.stderr)
            for sp in spellings:
                if sp != NATIVE_SPELLING:
                    client.spelling = sp
                rec = run_query_type(client, args, qt, primed)
                records.append(rec)
                line = json.dumps(rec)
                print(line, flush=True)
                if args.json_out:
                    with open(args.json_out, "a") as f:
                        f.write(line + "\n")
    finally:
        client.close()
    print_table(records)
    return 0


if __name__ == "__main__":
    sys.exit(main())
