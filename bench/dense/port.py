#!/usr/bin/env python3
"""Point operations on Tempora's dense tables (issue 25) against an ordinary Tempora table and
PostgreSQL, every one over the PostgreSQL wire protocol with psycopg 3, plus the line-protocol
ingest of the same rows into the dense and the ordinary table. Optionally SQLite through
Python's sqlite3 module, in process ("sqlite (python, in process)"); the SQLite figures of the
design brief come from a Rust program elsewhere.

What is measured
----------------
Two histories of one series (device 'd0'), starting 2000-01-01T00:00:00Z, a point every second:

  month  "1 month":  30 days, every second             2,592,000 rows
  years  "20 years": 20 x 365 days, the first hour      26,280,000 rows
                     (3,600 points) of every day

Point i (0-based, in time order) holds kwh = i * 0.001, volts = 230 + (i % 10), ok = (i % 2 == 0).
Tables, per history H (month, years):

  tempora-dense     meter_H    CREATE TABLE meter_H (time TIMESTAMP, device TAG, kwh DOUBLE,
                               volts DOUBLE, ok BOOLEAN) WITH (layout = 'dense', interval = '1s',
                               block = '1d')
  tempora-ordinary  meter_H_o  the same without the WITH clause
  postgresql        meter_H    (device text, time timestamptz, kwh double precision, volts
                               double precision, ok boolean, PRIMARY KEY (device, time))
  sqlite            meter_H    (device TEXT, time INTEGER (ns since the epoch), kwh REAL,
                               volts REAL, ok INTEGER, PRIMARY KEY (device, time)) WITHOUT ROWID

Loads (timed, rows/s printed): Tempora through line protocol over HTTP (`POST /write?db=D&
precision=ns`, batches of --batch lines, `meter_H,device=d0 kwh=…,volts=…,ok=true <ns>`, one
connection, one request at a time; the bodies are generated before the clock starts, so the
time is the server's: from the first request sent to the last 204 received); the dense and the
ordinary table get identical rows, one after the other, in the same run: that pair is the
"ingest" figure. PostgreSQL through `COPY meter_H FROM STDIN` (text, generated beforehand; the
primary key index is maintained during the COPY; VACUUM ANALYZE and CHECKPOINT afterwards, not
timed). SQLite through executemany in one transaction (row tuples generated while timed).

Operations (timed one at a time with time.perf_counter_ns, client to client: execute plus
fetching every row), the same SQL text for every system (SQLite: `?` for `%s`), bound
parameters, psycopg's `prepare=True` (Parse once, then Bind/Execute) on one autocommit
connection per system:

  read    SELECT kwh, volts, ok FROM t WHERE device = %s AND time = %s
  update  UPDATE t SET kwh = %s WHERE device = %s AND time = %s
  delete  DELETE FROM t WHERE device = %s AND time = %s
          (then, untimed, INSERT INTO t (time, device, kwh, volts, ok) VALUES (%s, …) puts the
          point back, so the history keeps its size and a rerun finds every point)
  scan    SELECT time, kwh FROM t WHERE device = %s AND time >= %s AND time < %s
          over one whole UTC day of the series (86,400 rows in "1 month", 3,600 in "20 years")

The scan's time includes psycopg turning every row into a Python datetime and float (the
same client work for both Tempora tables and PostgreSQL; SQLite's times are integers), which
narrows the scan ratios between servers.

Each op: --warmup (200) operations on other random points first, then --n (2000) points (days
for scan) drawn uniformly over the whole history with a fixed seed (the same points for every
system); p50, p90 and p99 in microseconds (nearest rank). Timestamps are passed as Python
datetimes with tzinfo=UTC (psycopg sends them as timestamptz text, which Tempora's
PostgreSQL port and PostgreSQL both take); SQLite gets integer nanoseconds.

Durability (--durability, default sync): `sync` makes every system durable at commit
(Tempora wal_sync = sync, its default, when this script starts the server; PostgreSQL
synchronous_commit = on for the session; SQLite WAL journal with synchronous = FULL).
`async` relaxes all three (Tempora wal_sync = 100ms, synchronous_commit = off, synchronous =
NORMAL). A Tempora server this script did not start keeps its own wal_sync.

Output: a markdown table (system, history, op, p50_us, p90_us, p99_us, n) on stdout, then the
ratios of p50 (ordinary/dense, postgresql/dense, sqlite/dense per op and history), the
flatness (p50 of "20 years" / p50 of "1 month" per system and op; the dense one is the
figure), and the ingest table; JSON lines appended to --out: one `{"kind": "op", ...}` per
system, history and op (those columns plus mean_us, rows per op, misses, error), one
`{"kind": "load", ...}` per load, one `{"kind": "run", ...}` first. `--report FILE` prints
the tables again from such a file (the newest record of each system, history, op and scale),
e.g. after partial reruns.

Commands
--------
Full run, this script starting both servers (Tempora data in /var/tmp/dense-port/tempora,
PostgreSQL 15 in /var/tmp/dense-port/postgresql, port 5444; both stopped at the end; the data
is kept, so a rerun can pass --skip-load):

  python3 bench/dense/port.py --tempora-bin /var/tmp/tempora-target/release/tempora \\
      --systems tempora,postgresql --out /var/tmp/dense-port/results.jsonl

Against a Tempora already running (HTTP 127.0.0.1:8086, PostgreSQL port 127.0.0.1:5433, the
defaults) and a PostgreSQL already running:

  python3 bench/dense/port.py --tempora-http 127.0.0.1:8086 --tempora-pg 127.0.0.1:5433 \\
      --pg-dsn 'host=127.0.0.1 port=5432 user=postgres dbname=postgres' --out results.jsonl

Partial reruns: --systems tempora-dense,tempora-ordinary,postgresql,sqlite (tempora = both
layouts), --histories month,years, --ops read,update,delete,scan, --skip-load (tables are
there and loaded), --n, --warmup. A small trial: --scale 0.01 (1 day and 73 days instead of
30 and 7,300), --n 200 --warmup 50.

Run it on an otherwise idle machine: client and servers share its cores.
"""

from __future__ import annotations

import argparse
import datetime as dt
import http.client
import json
import math
import os
import platform
import random
import shlex
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

EPOCH0 = 946_684_800  # 2000-01-01T00:00:00Z, seconds
NS = 1_000_000_000
DAY = 86_400
UTC = dt.timezone.utc
T0 = dt.datetime(2000, 1, 1, tzinfo=UTC)
DEVICE = "d0"
OK_WORD = ("true", "false")  # LP, by i & 1
OK_PG = ("t", "f")

OPS = ["read", "update", "delete", "scan"]
SQL = {
    "read": "SELECT kwh, volts, ok FROM {t} WHERE device = %s AND time = %s",
    "update": "UPDATE {t} SET kwh = %s WHERE device = %s AND time = %s",
    "delete": "DELETE FROM {t} WHERE device = %s AND time = %s",
    "scan": "SELECT time, kwh FROM {t} WHERE device = %s AND time >= %s AND time < %s",
}
REINSERT = "INSERT INTO {t} (time, device, kwh, volts, ok) VALUES (%s, %s, %s, %s, %s)"
SYSTEMS = ["tempora-dense", "tempora-ordinary", "postgresql", "sqlite"]
LABEL = {"sqlite": "sqlite (python, in process)"}


def log(msg: str) -> None:
    print(f"[port] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------- histories


@dataclass(frozen=True)
class History:
    key: str  # month | years
    label: str  # "1 month" | "20 years"
    days: int
    per_day: int  # points per day, from 00:00:00 on

    @property
    def rows(self) -> int:
        return self.days * self.per_day

    def offset(self, i: int) -> int:
        """Seconds after 2000-01-01T00:00:00Z of point i."""
        return (i // self.per_day) * DAY + i % self.per_day

    @staticmethod
    def values(i: int) -> tuple[float, float, bool]:
        return i * 0.001, float(230 + i % 10), i % 2 == 0


def histories(scale: float) -> dict[str, History]:
    def days(d: int) -> int:
        return max(1, round(d * scale))

    return {
        "month": History("month", "1 month", days(30), DAY),
        "years": History("years", "20 years", days(20 * 365), 3_600),
    }


def lp_chunks(h: History, table: str, batch: int) -> list[bytes]:
    """The whole history as line-protocol bodies of `batch` lines each."""
    out = []
    pd = h.per_day
    for s in range(0, h.rows, batch):
        e = min(h.rows, s + batch)
        out.append("\n".join([
            f"{table},device={DEVICE} kwh={i * 0.001},volts={230 + i % 10},ok={OK_WORD[i & 1]} "
            f"{(EPOCH0 + (i // pd) * DAY + i % pd) * NS}"
            for i in range(s, e)
        ]).encode())
    return out


def copy_chunks(h: History, batch: int) -> list[bytes]:
    """The whole history as COPY text (device, time, kwh, volts, ok)."""
    hms = [f"{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}" for s in range(h.per_day)]
    out, rows, pd = [], [], h.per_day
    for d in range(h.days):
        day = (T0 + dt.timedelta(days=d)).strftime("%Y-%m-%d ")
        base = d * pd
        rows.extend([
            f"{DEVICE}\t{day}{hms[s]}+00\t{(base + s) * 0.001}\t{230 + (base + s) % 10}\t"
            f"{OK_PG[(base + s) & 1]}\n"
            for s in range(pd)
        ])
        if len(rows) >= batch:
            out.append("".join(rows).encode())
            rows = []
    if rows:
        out.append("".join(rows).encode())
    return out


# ------------------------------------------------------------------------------- helpers


def port_open(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


def split_addr(addr: str) -> tuple[str, int]:
    host, _, port = addr.rpartition(":")
    return host or "127.0.0.1", int(port)


def proc_cpu_ticks(pid: int) -> int | None:
    try:
        f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(f[11]) + int(f[12])  # utime + stime
    except (OSError, IndexError, ValueError):
        return None


def wait_idle(pid: int, what: str, max_s: float, busy: float = 0.05) -> None:
    """Until `pid` uses under `busy` of one core for 3 s in a row (or `max_s` passes)."""
    hz = os.sysconf("SC_CLK_TCK")
    t_end, quiet = time.monotonic() + max_s, 0
    last = proc_cpu_ticks(pid)
    while last is not None and time.monotonic() < t_end and quiet < 3:
        time.sleep(1)
        now = proc_cpu_ticks(pid)
        if now is None:
            return
        quiet = quiet + 1 if (now - last) / hz < busy else 0
        last = now
    if quiet < 3 and last is not None:
        log(f"{what} still busy after {max_s:.0f} s; measuring anyway")


def percentile(sorted_us: list[float], p: float) -> float:
    """Nearest rank."""
    k = math.ceil(round(p * len(sorted_us), 6)) - 1
    return sorted_us[max(0, min(len(sorted_us) - 1, k))]


# ------------------------------------------------------------------------------- Tempora


class TemporaHttp:
    def __init__(self, addr: str, db: str):
        self.host, self.port = split_addr(addr)
        self.db = db
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=3600)

    def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        for attempt in (0, 1):
            try:
                self.conn.request("POST", path, body=body)
                r = self.conn.getresponse()
                return r.status, r.read()
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = http.client.HTTPConnection(self.host, self.port, timeout=3600)
                if attempt:
                    raise
        raise AssertionError

    def sql(self, q: str, db: str | None = None, check: bool = True) -> dict:
        qs = urllib.parse.urlencode({"db": db or self.db, "format": "json"} if db != "" else
                                    {"format": "json"})
        st, body = self.post(f"/api/v1/sql?{qs}", q.encode())
        if st != 200:
            if check:
                raise RuntimeError(f"Tempora {q[:80]!r}: HTTP {st} {body[:500].decode(errors='replace')}")
            return {"error": body.decode(errors="replace")[:500]}
        return json.loads(body)

    def write(self, body: bytes) -> None:
        st, out = self.post(f"/write?db={urllib.parse.quote(self.db)}&precision=ns", body)
        if st != 204:
            raise RuntimeError(f"Tempora /write: HTTP {st} {out[:500].decode(errors='replace')}")

    def close(self) -> None:
        self.conn.close()


class TemporaServer:
    """A server this script starts (--tempora-bin) and stops."""

    def __init__(self, binary: str, data_dir: Path, http_addr: str, pg_addr: str, wal_sync: str):
        self.binary, self.data_dir = binary, data_dir
        self.http_addr, self.pg_addr, self.wal_sync = http_addr, pg_addr, wal_sync
        self.proc: subprocess.Popen | None = None
        self.log_path = data_dir.parent / "tempora-server.log"

    def start(self) -> None:
        for a in (self.http_addr, self.pg_addr):
            if port_open(*split_addr(a)):
                raise SystemExit(f"something already listens on {a}: stop it or pass other "
                                 "--tempora-http/--tempora-pg ports")
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # The server reads every TEMPORA_* variable as a setting: pass none but wal_sync.
        env = {k: v for k, v in os.environ.items() if not k.startswith("TEMPORA_")}
        env["TEMPORA_WAL_SYNC"] = self.wal_sync
        cmd = [self.binary, "serve", "--data-dir", str(self.data_dir),
               "--http-addr", self.http_addr, "--pg-addr", self.pg_addr]
        log(f"starting {shlex.join(cmd)} (wal_sync={self.wal_sync}; log {self.log_path})")
        self.proc = subprocess.Popen(cmd, env=env, stdout=open(self.log_path, "ab"),
                                     stderr=subprocess.STDOUT, start_new_session=True)
        host, port = split_addr(self.http_addr)
        t_end = time.monotonic() + 300
        while time.monotonic() < t_end:
            if self.proc.poll() is not None:
                raise SystemExit(f"tempora exited with {self.proc.returncode}; see {self.log_path}")
            try:
                c = http.client.HTTPConnection(host, port, timeout=2)
                c.request("GET", "/health")
                if c.getresponse().status == 200:
                    c.close()
                    log(f"tempora up (pid {self.proc.pid})")
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise SystemExit("tempora did not answer /health in 300 s")

    def stop(self) -> None:
        if not self.proc or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)  # drains writes, flushes, exits
        try:
            self.proc.wait(timeout=600)
        except subprocess.TimeoutExpired:
            log(f"tempora (pid {self.proc.pid}) did not stop in 600 s: SIGKILL")
            self.proc.kill()
            self.proc.wait()
        log("tempora stopped")
        self.proc = None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None


# ------------------------------------------------------------------------------- PostgreSQL


class PgServer:
    """PostgreSQL initialised and started by this script (as bench/peers/setup.sh does)."""

    def __init__(self, bindir: str, root: Path, port: int, shared_buffers: str):
        self.bindir, self.root, self.port = bindir, root, port
        self.data = root / "data"
        self.shared_buffers = shared_buffers
        self.started = False

    def _run(self, args: list[str]) -> subprocess.CompletedProcess:
        cmd = shlex.join(args)
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            return subprocess.run(["su", "postgres", "-c", cmd], capture_output=True, text=True)
        return subprocess.run(cmd, shell=True, capture_output=True, text=True)

    def start(self) -> None:
        b = self.bindir
        self.root.mkdir(parents=True, exist_ok=True)
        if os.geteuid() == 0:
            subprocess.run(["chown", "postgres:", str(self.root)], check=True)
        if not (self.data / "PG_VERSION").exists():
            r = self._run([f"{b}/initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust",
                           "-E", "UTF8", "--locale=C.UTF-8"])
            if r.returncode:
                raise SystemExit(f"initdb failed: {r.stderr}")
            conf = (f"\nlisten_addresses = '127.0.0.1'\nport = {self.port}\n"
                    f"unix_socket_directories = '{self.root}'\nshared_buffers = {self.shared_buffers}\n"
                    "work_mem = 64MB\nmaintenance_work_mem = 512MB\neffective_cache_size = 8GB\n"
                    "max_wal_size = 8GB\ntimezone = 'UTC'\n")
            with open(self.data / "postgresql.conf", "a") as f:  # root may append to it
                f.write(conf)
        if self._run([f"{b}/pg_ctl", "-D", str(self.data), "status"]).returncode == 0:
            log(f"postgresql already running in {self.data} (left running at the end)")
            return
        if port_open("127.0.0.1", self.port):
            raise SystemExit(f"port {self.port} is taken: pass another --pg-port")
        r = self._run([f"{b}/pg_ctl", "-D", str(self.data), "-l", str(self.root / "server.log"),
                       "-w", "start"])
        if r.returncode:
            raise SystemExit(f"pg_ctl start failed: {r.stdout}{r.stderr}")
        self.started = True
        log(f"postgresql up (127.0.0.1:{self.port}, data {self.data})")

    def stop(self) -> None:
        if self.started:
            self._run([f"{self.bindir}/pg_ctl", "-D", str(self.data), "-w", "-m", "fast", "stop"])
            self.started = False
            log("postgresql stopped")

    @property
    def pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def dsn(self, db: str) -> str:
        return f"host=127.0.0.1 port={self.port} user=postgres dbname={db}"


def with_dbname(dsn: str, db: str) -> str:
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    d = conninfo_to_dict(dsn)
    d["dbname"] = db
    return make_conninfo(**d)


# ------------------------------------------------------------------------------- clients


class PsycopgTarget:
    """One system over the PostgreSQL wire protocol: one autocommit connection, prepared."""

    def __init__(self, system: str, dsn: str, tables: dict[str, str], setup: list[str]):
        import psycopg

        self.system, self.tables = system, tables
        self.conn = psycopg.connect(dsn, autocommit=True)
        self.cur = self.conn.cursor()
        for s in setup:
            self.cur.execute(s)

    @staticmethod
    def ts(offset_s: int) -> dt.datetime:
        return T0 + dt.timedelta(seconds=offset_s)

    def sql(self, text: str, h: History) -> str:
        return text.format(t=self.tables[h.key])

    def run(self, sql: str, params: tuple) -> int:
        cur = self.cur
        cur.execute(sql, params, prepare=True)
        if cur.description is not None:
            return len(cur.fetchall())
        return cur.rowcount

    def close(self) -> None:
        self.conn.close()


class SqliteTarget:
    def __init__(self, path: Path, tables: dict[str, str], synchronous: str):
        self.system, self.tables = "sqlite", tables
        self.conn = sqlite3.connect(path, isolation_level=None, cached_statements=64)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute(f"PRAGMA synchronous = {synchronous}")

    @staticmethod
    def ts(offset_s: int) -> int:
        return (EPOCH0 + offset_s) * NS

    def sql(self, text: str, h: History) -> str:
        return text.format(t=self.tables[h.key]).replace("%s", "?")

    def run(self, sql: str, params: tuple) -> int:
        cur = self.conn.execute(sql, params)
        if cur.description is not None:
            return len(cur.fetchall())
        return cur.rowcount

    def close(self) -> None:
        self.conn.close()


# ------------------------------------------------------------------------------- timing


def op_params(target, h: History, op: str, rng: random.Random) -> tuple[tuple, tuple | None, int]:
    """(the op's parameters, the re-insert's parameters or None, rows expected)."""
    ts = target.ts
    if op == "scan":
        d = rng.randrange(h.days)
        return (DEVICE, ts(d * DAY), ts((d + 1) * DAY)), None, h.per_day
    i = rng.randrange(h.rows)
    t = ts(h.offset(i))
    if op == "read":
        return (DEVICE, t), None, 1
    if op == "update":
        return (round(rng.uniform(0, 1000), 3), DEVICE, t), None, 1
    kwh, volts, ok = h.values(i)
    return (DEVICE, t), (t, DEVICE, kwh, volts, ok if target.system != "sqlite" else int(ok)), 1


def measure(target, h: History, op: str, n: int, warmup: int, seed: int, budget_s: float) -> dict:
    sql = target.sql(SQL[op], h)
    reinsert = target.sql(REINSERT, h)
    rec = {"kind": "op", "system": target.system, "history": h.label, "op": op,
           "p50_us": None, "p90_us": None, "p99_us": None, "n": 0, "sql": sql}
    warm = random.Random(f"{seed}/{h.key}/{op}/warmup")
    timed = random.Random(f"{seed}/{h.key}/{op}")
    times: list[int] = []
    rows_seen: list[int] = []
    misses = 0
    t_end = None
    log(f"{target.system} {h.label} {op}: {warmup} warm-up + {n} timed")
    try:
        for k in range(warmup + n):
            params, back, expect = op_params(target, h, op, warm if k < warmup else timed)
            if k == warmup:
                t_end = time.monotonic() + budget_s
            t = time.perf_counter_ns()
            rows = target.run(sql, params)
            el = time.perf_counter_ns() - t
            if back is not None:
                target.run(reinsert, back)
            if k >= warmup:
                times.append(el)
                rows_seen.append(rows)
                if op != "update" and rows != expect:
                    misses += 1
                if time.monotonic() > t_end:
                    log(f"{target.system} {h.label} {op}: time budget of {budget_s:.0f} s spent "
                        f"after {len(times)} of {n}")
                    break
    except Exception as e:  # noqa: BLE001 — recorded, and the next op runs
        rec["error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300]}"
        log(f"{target.system} {h.label} {op}: {rec['error']}")
        try:
            target.conn.rollback()
        except Exception:  # noqa: BLE001
            pass
    if times:
        us = sorted(x / 1000 for x in times)
        rec.update(p50_us=round(percentile(us, 0.50), 1), p90_us=round(percentile(us, 0.90), 1),
                   p99_us=round(percentile(us, 0.99), 1), n=len(us),
                   mean_us=round(sum(us) / len(us), 1), rows_min=min(rows_seen),
                   rows_max=max(rows_seen), misses=misses)
        if misses:
            log(f"{target.system} {h.label} {op}: {misses} of {len(us)} returned an unexpected "
                "number of rows")
    return rec


# ------------------------------------------------------------------------------- loads


def load_tempora(http: TemporaHttp, h: History, layouts: list[str], batch: int, block: str,
                 interval: str) -> tuple[list[dict], set[str]]:
    """Creates and loads the dense and/or ordinary table of `h`; the layouts that failed."""
    recs, failed = [], set()
    dense, ordinary = f"meter_{h.key}", f"meter_{h.key}_o"
    log(f"generating {h.rows:,} rows of line protocol ({h.label})")
    chunks = lp_chunks(h, dense, batch)
    for layout in layouts:
        table = dense if layout == "dense" else ordinary
        system = f"tempora-{layout}"
        http.sql(f"DROP TABLE IF EXISTS {table}")
        ddl = (f"CREATE TABLE {table} (time TIMESTAMP, device TAG, kwh DOUBLE, volts DOUBLE, "
               "ok BOOLEAN)")
        if layout == "dense":
            ddl += f" WITH (layout = 'dense', interval = '{interval}', block = '{block}')"
        r = http.sql(ddl, check=False)
        if "error" in r:
            log(f"{system}: {ddl!r} failed: {r['error']}")
            failed.add(layout)
            recs.append({"kind": "load", "system": system, "history": h.label, "table": table,
                         "error": r["error"]})
            continue
        old, new = f"{dense},".encode(), f"{table},".encode()
        log(f"{system}: loading {table} ({len(chunks)} requests of {batch} lines)")
        t = time.perf_counter()
        for c in chunks:
            http.write(c if old == new else c.replace(old, new))
        secs = time.perf_counter() - t
        n = http.sql(f"SELECT count(*) AS n FROM {table}")["rows"][0][0]
        rec = {"kind": "load", "system": system, "history": h.label, "table": table,
               "rows": h.rows, "seconds": round(secs, 3), "rows_per_s": round(h.rows / secs),
               "batch_lines": batch, "method": "line protocol over HTTP, 1 connection",
               "count_after": n}
        if n != h.rows:
            log(f"{system}: {table} has {n} rows after the load, expected {h.rows}")
        log(f"{system} {h.label}: {h.rows:,} rows in {secs:.1f} s = {h.rows / secs:,.0f} rows/s")
        recs.append(rec)
    return recs, failed


def load_pg(dsn: str, h: History, batch: int) -> dict:
    import psycopg

    table = f"meter_{h.key}"
    log(f"generating {h.rows:,} rows of COPY text ({h.label})")
    chunks = copy_chunks(h, batch)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {table}")
        conn.execute(f"CREATE TABLE {table} (device text, time timestamptz, kwh double precision, "
                     "volts double precision, ok boolean, PRIMARY KEY (device, time))")
        log(f"postgresql: COPY {table}")
        t = time.perf_counter()
        with conn.cursor() as cur:
            with cur.copy(f"COPY {table} (device, time, kwh, volts, ok) FROM STDIN") as cp:
                for c in chunks:
                    cp.write(c)
        secs = time.perf_counter() - t
        del chunks
        conn.execute(f"VACUUM ANALYZE {table}")
        conn.execute("CHECKPOINT")
        n = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    log(f"postgresql {h.label}: {h.rows:,} rows in {secs:.1f} s = {h.rows / secs:,.0f} rows/s")
    if n != h.rows:
        log(f"postgresql: {table} has {n} rows, expected {h.rows}")
    return {"kind": "load", "system": "postgresql", "history": h.label, "table": table,
            "rows": h.rows, "seconds": round(secs, 3), "rows_per_s": round(h.rows / secs),
            "method": "COPY FROM STDIN (text), primary key maintained", "count_after": n}


def load_sqlite(path: Path, h: History, synchronous: str) -> dict:
    table = f"meter_{h.key}"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {synchronous}")
    conn.execute(f"DROP TABLE IF EXISTS {table}")
    conn.execute(f"CREATE TABLE {table} (device TEXT, time INTEGER, kwh REAL, volts REAL, "
                 "ok INTEGER, PRIMARY KEY (device, time)) WITHOUT ROWID")
    pd = h.per_day

    def rows():
        for i in range(h.rows):
            yield (DEVICE, (EPOCH0 + (i // pd) * DAY + i % pd) * NS, i * 0.001,
                   float(230 + i % 10), 1 - (i & 1))

    log(f"sqlite: loading {table}")
    t = time.perf_counter()
    conn.execute("BEGIN")
    conn.executemany(f"INSERT INTO {table} VALUES (?, ?, ?, ?, ?)", rows())
    conn.execute("COMMIT")
    secs = time.perf_counter() - t
    conn.execute(f"ANALYZE {table}")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    n = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    conn.close()
    log(f"sqlite {h.label}: {h.rows:,} rows in {secs:.1f} s = {h.rows / secs:,.0f} rows/s")
    return {"kind": "load", "system": "sqlite", "history": h.label, "table": table,
            "rows": h.rows, "seconds": round(secs, 3), "rows_per_s": round(h.rows / secs),
            "method": "executemany in one transaction (rows generated while timed)",
            "count_after": n}


# ------------------------------------------------------------------------------- report


def fmt(v) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, float):
        return f"{v:,.1f}" if v < 100 else f"{v:,.0f}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def ratio(a, b) -> str:
    return f"{a / b:.2f}" if a and b else "n/a"


def report(records: list[dict]) -> str:
    def order(r: dict) -> tuple:
        return (r["history"] != "1 month", r["history"],
                SYSTEMS.index(r["system"]) if r["system"] in SYSTEMS else 99,
                OPS.index(r["op"]) if r.get("op") in OPS else 99)

    ops = sorted((r for r in records if r.get("kind") == "op"), key=order)
    loads = sorted((r for r in records if r.get("kind") == "load"), key=order)
    out = ["| system | history | op | p50_us | p90_us | p99_us | n |", "|---|---|---|---:|---:|---:|---:|"]
    for r in ops:
        note = f" ({r['error'][:60]})" if r.get("error") else ""
        out.append(f"| {LABEL.get(r['system'], r['system'])} | {r['history']} | {r['op']}{note} | "
                   f"{fmt(r['p50_us'])} | {fmt(r['p90_us'])} | {fmt(r['p99_us'])} | {r['n']} |")
    p50 = {(r["system"], r["history"], r["op"]): r["p50_us"] for r in ops}
    rows = {(r["system"], r["history"]): r.get("rows_max") for r in ops if r["op"] == "scan"}
    hist = list(dict.fromkeys(r["history"] for r in ops))
    opn = list(dict.fromkeys(r["op"] for r in ops))
    others = [s for s in SYSTEMS[1:] if any(r["system"] == s for r in ops)]
    if ops:
        out += ["", "Ratios of p50 to tempora-dense (above 1: dense is faster)", "",
                "| history | op | " + " | ".join(f"{s}/dense" for s in others) + " |",
                "|---|---|" + "---:|" * len(others)]
        for h in hist:
            for op in opn:
                d = p50.get(("tempora-dense", h, op))
                out.append(f"| {h} | {op} | " + " | ".join(
                    ratio(p50.get((s, h, op)), d) for s in others) + " |")
        if "1 month" in hist and "20 years" in hist:
            systems = [s for s in SYSTEMS if any(r["system"] == s for r in ops)]
            out += ["", "Flatness: p50 of 20 years / p50 of 1 month (1.00: no slower on the longer "
                    "history)", "", "| op | " + " | ".join(systems) + " |",
                    "|---|" + "---:|" * len(systems)]
            for op in opn:
                out.append(f"| {op} | " + " | ".join(
                    ratio(p50.get((s, "20 years", op)), p50.get((s, "1 month", op)))
                    for s in systems) + " |")
            if "scan" in opn:  # a day holds 86,400 points in "1 month", 3,600 in "20 years"
                def per_row(s, h):
                    v, n = p50.get((s, h, "scan")), rows.get((s, h))
                    return v / n if v and n else None

                out.append("| scan, per row returned | " + " | ".join(
                    ratio(per_row(s, "20 years"), per_row(s, "1 month")) for s in systems) + " |")
    if loads:
        out += ["", "Ingest", "", "| system | history | rows | seconds | rows/s |",
                "|---|---|---:|---:|---:|"]
        for r in loads:
            if r.get("error"):
                out.append(f"| {r['system']} | {r['history']} | failed: {r['error'][:80]} | | |")
            else:
                out.append(f"| {LABEL.get(r['system'], r['system'])} | {r['history']} | "
                           f"{r['rows']:,} | {r['seconds']:.1f} | {r['rows_per_s']:,} |")
        lr = {(r["system"], r["history"]): r.get("rows_per_s") for r in loads}
        for h in dict.fromkeys(r["history"] for r in loads):
            d, o = lr.get(("tempora-dense", h)), lr.get(("tempora-ordinary", h))
            if d and o:
                out.append(f"\n{h}: dense/ordinary ingest rows/s = {d / o:.2f}")
    return "\n".join(out)


def report_from_file(path: str) -> str:
    newest: dict[tuple, dict] = {}
    for line in Path(path).read_text().splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        if r.get("kind") in ("op", "load"):
            newest[(r["kind"], r["system"], r["history"], r.get("op"), r.get("scale"))] = r
    return report(list(newest.values()))


# ------------------------------------------------------------------------------- main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--systems", default="tempora,postgresql",
                    help="tempora (= tempora-dense,tempora-ordinary), tempora-dense, "
                         "tempora-ordinary, postgresql, sqlite; comma-separated")
    ap.add_argument("--histories", default="month,years")
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--n", type=int, default=2000, help="timed operations per op")
    ap.add_argument("--n-scan", type=int, help="timed day scans (default: --n)")
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--seed", type=int, default=25)
    ap.add_argument("--scale", type=float, default=1.0,
                    help="fraction of the days of each history (at least one day)")
    ap.add_argument("--skip-load", action="store_true", help="the tables are there and loaded")
    ap.add_argument("--batch", type=int, default=50_000, help="lines per /write, rows per COPY chunk")
    ap.add_argument("--op-budget-s", type=float, default=900,
                    help="stop timing an op after this many seconds (its n says how many ran)")
    ap.add_argument("--durability", choices=["sync", "async"], default="sync")
    ap.add_argument("--out", default="/var/tmp/dense-port/results.jsonl",
                    help="JSON lines, appended")
    ap.add_argument("--report", metavar="FILE", help="only print the tables from FILE")
    ap.add_argument("--workdir", default="/var/tmp/dense-port",
                    help="data of the servers this script starts, and SQLite's file")
    ap.add_argument("--keep-servers", action="store_true",
                    help="leave the servers this script started running")
    g = ap.add_argument_group("Tempora")
    g.add_argument("--tempora-bin", help="start this binary (data in WORKDIR/tempora) and stop "
                   "it at the end; without it, use the server already running")
    g.add_argument("--tempora-http", default="127.0.0.1:8086", help="its HTTP address")
    g.add_argument("--tempora-pg", default="127.0.0.1:5433", help="its PostgreSQL address")
    g.add_argument("--tempora-user", default="tempora")
    g.add_argument("--tempora-password", default=os.environ.get("BENCH_TEMPORA_PASSWORD"))
    g.add_argument("--tempora-db", default="dense_port")
    g.add_argument("--tempora-pid", type=int, help="pid of a running server, to wait until "
                   "it is idle after the loads")
    g.add_argument("--no-restart", action="store_true", help="do not restart a server this "
                   "script started between loading and measuring (the restart flushes every "
                   "memtable, so both layouts are read from their files)")
    g.add_argument("--settle-s", type=float, default=180,
                   help="after the loads, wait at most this long for the servers to go idle")
    g.add_argument("--dense-block", default="1d")
    g.add_argument("--dense-interval", default="1s")
    g = ap.add_argument_group("PostgreSQL")
    g.add_argument("--pg-dsn", help="a running PostgreSQL (its database is replaced by "
                   "--pg-db); without it, start one from --pg-bin")
    g.add_argument("--pg-bin", default="/usr/lib/postgresql/15/bin")
    g.add_argument("--pg-port", type=int, default=5444)
    g.add_argument("--pg-db", default="dense_port")
    g.add_argument("--pg-shared-buffers", default="2GB")
    a = ap.parse_args()

    if a.report:
        print(report_from_file(a.report))
        return 0

    systems: list[str] = []
    for s in a.systems.split(","):
        s = s.strip()
        add = ["tempora-dense", "tempora-ordinary"] if s == "tempora" else [s]
        for x in add:
            if x not in SYSTEMS:
                ap.error(f"unknown system {x!r}")
            if x not in systems:
                systems.append(x)
    hs_all = histories(a.scale)
    hs = [hs_all[k.strip()] for k in a.histories.split(",")]
    ops = [o.strip() for o in a.ops.split(",")]
    for o in ops:
        if o not in OPS:
            ap.error(f"unknown op {o!r}")
    workdir = Path(a.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    sync = a.durability == "sync"

    layouts = [s.removeprefix("tempora-") for s in systems if s.startswith("tempora-")]
    t_server: TemporaServer | None = None
    pg_server: PgServer | None = None
    records: list[dict] = []
    pg_dsn = None
    try:
        # ---- servers
        if layouts and a.tempora_bin:
            t_server = TemporaServer(a.tempora_bin, workdir / "tempora", a.tempora_http,
                                     a.tempora_pg, "sync" if sync else "100ms")
            t_server.start()
        if "postgresql" in systems:
            if a.pg_dsn:
                admin = a.pg_dsn
            else:
                pg_server = PgServer(a.pg_bin, workdir / "postgresql", a.pg_port,
                                     a.pg_shared_buffers)
                pg_server.start()
                admin = pg_server.dsn("postgres")
            import psycopg

            with psycopg.connect(admin, autocommit=True) as c:
                if not c.execute("SELECT 1 FROM pg_database WHERE datname = %s",
                                 (a.pg_db,)).fetchone():
                    c.execute(f"CREATE DATABASE {a.pg_db}")
                pg_version = c.execute("SHOW server_version").fetchone()[0]
            pg_dsn = with_dbname(admin, a.pg_db)

        run = {"kind": "run", "when": dt.datetime.now(UTC).isoformat(timespec="seconds"),
               "systems": systems, "histories": [h.label for h in hs], "ops": ops, "n": a.n,
               "warmup": a.warmup, "seed": a.seed, "scale": a.scale, "durability": a.durability,
               "histories_rows": {h.label: h.rows for h in hs}, "machine": {
                   "cpus": os.cpu_count(), "kernel": platform.release(),
                   "python": platform.python_version()}}
        if a.tempora_bin:
            run["tempora_version"] = subprocess.run([a.tempora_bin, "--version"],
                                                    capture_output=True, text=True).stdout.strip()
        if pg_dsn:
            run["postgresql_version"] = pg_version
        records.append(run)

        t_http = TemporaHttp(a.tempora_http, a.tempora_db) if layouts else None
        if t_http:
            t_http.sql(f"CREATE DATABASE IF NOT EXISTS {a.tempora_db}", db="")

        # ---- loads
        unavailable: dict[str, set[str]] = {}  # history key -> tempora layouts that failed
        if not a.skip_load:
            for h in hs:
                if t_http:
                    recs, failed = load_tempora(t_http, h, layouts, a.batch, a.dense_block,
                                                a.dense_interval)
                    records += recs
                    unavailable[h.key] = failed
                if pg_dsn:
                    records.append(load_pg(pg_dsn, h, a.batch))
                if "sqlite" in systems:
                    records.append(load_sqlite(workdir / "sqlite.db", h,
                                               "FULL" if sync else "NORMAL"))
            if t_server and not a.no_restart:
                log("restarting tempora (its close flushes every memtable)")
                t_server.stop()
                t_server.start()
        for pid, what in ((t_server.pid if t_server else a.tempora_pid, "tempora"),
                          (pg_server.pid if pg_server else None, "postgresql")):
            if pid:
                wait_idle(pid, what, a.settle_s)

        # ---- operations
        for h in hs:
            for system in systems:
                layout = system.removeprefix("tempora-")
                if system.startswith("tempora-") and layout in unavailable.get(h.key, ()):
                    for op in ops:
                        records.append({"kind": "op", "system": system, "history": h.label,
                                        "op": op, "p50_us": None, "p90_us": None,
                                        "p99_us": None, "n": 0, "error": "table not created"})
                    continue
                try:
                    if system.startswith("tempora-"):
                        host, port = split_addr(a.tempora_pg)
                        dsn = f"host={host} port={port} dbname={a.tempora_db} user={a.tempora_user}"
                        if a.tempora_password:
                            dsn += f" password={a.tempora_password}"
                        suffix = "" if layout == "dense" else "_o"
                        target = PsycopgTarget(system, dsn, {h.key: f"meter_{h.key}{suffix}"}, [])
                    elif system == "postgresql":
                        target = PsycopgTarget(system, pg_dsn, {h.key: f"meter_{h.key}"}, [
                            f"SET synchronous_commit = {'on' if sync else 'off'}"])
                    else:
                        target = SqliteTarget(workdir / "sqlite.db", {h.key: f"meter_{h.key}"},
                                              "FULL" if sync else "NORMAL")
                except Exception as e:  # noqa: BLE001
                    log(f"{system}: cannot connect: {e}")
                    records.append({"kind": "op", "system": system, "history": h.label,
                                    "op": "connect", "p50_us": None, "p90_us": None,
                                    "p99_us": None, "n": 0, "error": str(e)[:300]})
                    continue
                for op in ops:
                    n = a.n_scan if op == "scan" and a.n_scan is not None else a.n
                    r = measure(target, h, op, n, a.warmup, a.seed, a.op_budget_s)
                    if r["n"]:
                        log(f"  p50 {r['p50_us']} us, p90 {r['p90_us']} us, p99 {r['p99_us']} us")
                    records.append(r)
                target.close()
        if t_http:
            t_http.close()
    finally:
        if not a.keep_servers:
            if t_server:
                t_server.stop()
            if pg_server:
                pg_server.stop()
        with open(a.out, "a") as f:
            for r in records:
                if r.get("kind") != "run":
                    r.setdefault("scale", a.scale)
                    r.setdefault("durability", a.durability)
                f.write(json.dumps(r) + "\n")
        if records:
            log(f"{len(records)} records appended to {a.out}")

    print(report(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
