"""A tiny model of Tempora's storage semantics plus an .slt writer.

Rows are kept per table as {(series, time_ns): {field: value}}; a later write of the same
series and time merges field by field (later wins).  Reference results come from DuckDB
(standard SQL over the merged rows) or from Python functions implementing the documented
semantics of Tempora's extensions.
"""
import datetime as dt
import os
import math
import re

import duckdb

UTC = dt.timezone.utc
NS = 1_000_000_000


def ts(s):
    """'2024-01-01T00:00:00Z' -> ns."""
    d = dt.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    return int(d.timestamp()) * NS


def iso(ns, z=True):
    d = dt.datetime.fromtimestamp(ns // NS, UTC)
    assert ns % NS == 0, ns
    return d.strftime("%Y-%m-%dT%H:%M:%S") + ("Z" if z else "")


class Table:
    def __init__(self, name):
        self.name = name
        self.kinds = {}  # column -> 'tag' | 'f64' | 'i64' | 'bool' | 'str'
        self.order = []
        self.rows = {}  # (series tuple, t) -> {field: value}

    def tags(self):
        return [c for c in self.order if self.kinds[c] == "tag"]

    def fields(self):
        return [c for c in self.order if self.kinds[c] != "tag"]


def lit(v):
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    if isinstance(v, float):
        return repr(v)
    return str(v)


class Store:
    def __init__(self):
        self.tables = {}

    def write(self, table, cols, rows):
        t = self.tables.setdefault(table, Table(table))
        # a new column's kind follows its first non-NULL value
        for i, c in enumerate(cols):
            if c == "time" or c in t.kinds:
                continue
            first = next((r[i] for r in rows if r[i] is not None), None)
            if isinstance(first, str):
                k = "tag"
            elif isinstance(first, bool):
                k = "bool"
            elif isinstance(first, float):
                k = "f64"
            else:
                k = "i64"
            t.kinds[c] = k
            t.order.append(c)
        for r in rows:
            rec = dict(zip(cols, r))
            time = ts(rec.pop("time"))
            series = tuple(sorted((k, v) for k, v in rec.items() if t.kinds[k] == "tag" and v is not None))
            fields = {}
            for k, v in rec.items():
                if t.kinds[k] == "tag" or v is None:
                    continue
                if t.kinds[k] == "f64":
                    v = float(v)
                fields[k] = v
            assert fields, f"a row needs a field: {r}"
            t.rows.setdefault((series, time), {}).update(fields)

    def records(self, table):
        """Rows as dicts with every column (None where absent) and 'time' in ns."""
        t = self.tables[table]
        out = []
        for (series, time), fields in t.rows.items():
            rec = {c: None for c in t.order}
            rec.update(dict(series))
            rec.update(fields)
            rec["time"] = time
            out.append(rec)
        return out

    def duck(self):
        con = duckdb.connect()
        con.execute("SET TimeZone = 'UTC'")
        for name, t in self.tables.items():
            types = {"tag": "VARCHAR", "f64": "DOUBLE", "i64": "BIGINT", "bool": "BOOLEAN", "str": "VARCHAR"}
            cols = [f'"{c}" {types[t.kinds[c]]}' for c in t.tags()] + ["time TIMESTAMP"] + [
                f'"{c}" {types[t.kinds[c]]}' for c in t.fields()
            ]
            con.execute(f'CREATE TABLE "{name}" ({", ".join(cols)})')
            order = t.tags() + ["time"] + t.fields()
            for rec in self.records(name):
                vals = []
                for c in order:
                    v = rec[c]
                    if c == "time":
                        vals.append(f"TIMESTAMP '{iso(v, False).replace('T', ' ')}'")
                    else:
                        vals.append(lit(v))
                con.execute(f'INSERT INTO "{name}" VALUES ({", ".join(vals)})')
        return con


def fmt(v, tsfmt="Z"):
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        r = repr(v)
        assert "e" not in r, r
        return r
    if isinstance(v, dt.datetime):
        if v.tzinfo is None:
            v = v.replace(tzinfo=UTC)
        ns = int(v.timestamp()) * NS
        assert v.microsecond == 0
        if tsfmt == "Z":
            return iso(ns)
        if tsfmt == "naive":
            return iso(ns, False)
        raise ValueError(tsfmt)
    if isinstance(v, str):
        return v if v != "" else "(empty)"
    return str(v)


class Slt:
    def __init__(self, path, header):
        self.path = path
        self.out = []
        self.store = Store()
        for line in header.strip().splitlines():
            self.out.append("# " + line if line else "#")
        self.out.append("")

    # -- text
    def c(self, text):
        """A comment block."""
        for line in text.strip().splitlines():
            self.out.append("# " + line.strip() if line.strip() else "#")

    def section(self, title):
        self.out.append("")
        self.out.append("#" * 4 + " " + title)
        self.out.append("")

    # -- statements
    def insert(self, table, cols, rows, comment=None):
        if comment:
            self.c(comment)
        width = max(len(", ".join(lit(v) for v in r)) + 4 for r in rows)
        per = 1 if len(rows) <= 8 else max(1, 110 // width)
        tuples = ["(" + ", ".join(lit(v) for v in r) + ")" for r in rows]
        vals = ",\n  ".join(", ".join(tuples[i:i + per]) for i in range(0, len(tuples), per))
        self.out.append("statement ok")
        self.out.append(f"INSERT INTO {table} ({', '.join(cols)}) VALUES\n  {vals}")
        self.out.append("")
        self.store.write(table, cols, rows)

    def stmt(self, sql, comment=None):
        if comment:
            self.c(comment)
        self.out.append("statement ok")
        self.out.append(sql)
        self.out.append("")

    def flush(self, comment=None):
        self.stmt("FLUSH", comment)

    def compact(self, comment=None):
        self.stmt("COMPACT", comment)

    def error(self, sql, regex, comment=None):
        if comment:
            self.c(comment)
        self.out.append(f"statement error {regex}")
        self.out.append(sql)
        self.out.append("")

    def delete(self, table, where_sql, pred, comment=None):
        """pred(rec) -> True for rows to delete (rec has every column, time in ns)."""
        sql = f"DELETE FROM {table}" + (f" WHERE {where_sql}" if where_sql else "")
        self.stmt(sql, comment)
        t = self.store.tables[table]
        for key in list(t.rows):
            series, time = key
            rec = {c: None for c in t.order}
            rec.update(dict(series))
            rec.update(t.rows[key])
            rec["time"] = time
            if pred(rec):
                del t.rows[key]

    def drop(self, table):
        self.stmt(f"DROP TABLE {table}")
        del self.store.tables[table]

    # -- queries
    def query(self, types, sql, ref=None, rowsort=False, comment=None, tsfmt=None, expect=None):
        """ref: DuckDB SQL (str), a callable(store) -> rows, or None (ref = sql run by DuckDB).
        expect: hand-written expected rows (list of strings); checked against ref if both."""
        if comment:
            self.c(comment)
        if ref is None and expect is None:
            ref = sql
        rows = None
        if ref is not None:
            if callable(ref):
                raw = ref(self.store)
            else:
                con = self.store.duck()
                raw = con.execute(ref).fetchall()
            tsf = tsfmt or ["Z"] * len(types)
            rows = [" ".join(fmt(v, tsf[i]) for i, v in enumerate(r)) if not isinstance(r, str) else r for r in raw]
        if expect is not None:
            if rows is not None and (sorted(rows) if rowsort else rows) != (sorted(expect) if rowsort else expect):
                raise AssertionError(f"{self.path}: hand-written expectation differs\n{sql}\nref:  {rows}\nhand: {expect}")
            rows = expect
        if rowsort:
            rows = sorted(rows)
        self.out.append(f"query {types}" + (" rowsort" if rowsort else ""))
        self.out.append(sql)
        self.out.append("----")
        self.out.extend(rows)
        self.out.append("")
        return rows

    def write(self):
        text = "\n".join(self.out).rstrip() + "\n"
        text = re.sub(r"\n{3,}", "\n\n", text)
        with open(self.path, "w") as f:
            f.write(text)
        print(os.path.normpath(self.path), text.count("\n"), "lines")


def dtm(ns):
    """ns -> an aware datetime (formats as a UTC timestamp)."""
    assert ns % NS == 0
    return dt.datetime.fromtimestamp(ns // NS, UTC)


# ---- reference helpers for SAMPLE BY (documented semantics, not the code's rewrite)

def epoch_bucket(width_s, offset_s=0):
    w, o = width_s * NS, offset_s * NS
    return lambda t: t - ((t - o) % w)


def month_bucket(t):
    d = dt.datetime.fromtimestamp(t // NS, UTC)
    return int(dt.datetime(d.year, d.month, 1, tzinfo=UTC).timestamp()) * NS


def sample(store, table, bucket, select, aggs, where=lambda r: True):
    """select: the select list in order: 'time', tag names, and '#i' for aggs[i].
    Groups rows by bucket and tags; rows ordered by time, then the tags in select order."""
    tags = [c for c in select if c != "time" and not c.startswith("#")]
    groups = {}
    for r in store.records(table):
        if where(r):
            groups.setdefault((bucket(r["time"]),) + tuple(r[t] for t in tags), []).append(r)
    out = []
    for key in sorted(groups, key=lambda k: (k[0],) + tuple((x is None, x) for x in k[1:])):
        rows = sorted(groups[key], key=lambda r: r["time"])
        row = []
        for c in select:
            if c == "time":
                row.append(dtm(key[0]))
            elif c.startswith("#"):
                row.append(aggs[int(c[1:])](rows))
            else:
                row.append(key[1 + tags.index(c)])
        out.append(tuple(row))
    return out


def vals(rows, f):
    return [r[f] for r in rows if r[f] is not None]


A = {
    "count": lambda rows: len(rows),
    "avg": lambda f: (lambda rows: (sum(vals(rows, f)) / len(vals(rows, f))) if vals(rows, f) else None),
    "sum": lambda f: (lambda rows: float(sum(vals(rows, f))) if vals(rows, f) else None),
    "isum": lambda f: (lambda rows: sum(vals(rows, f)) if vals(rows, f) else None),
    "max": lambda f: (lambda rows: max(vals(rows, f)) if vals(rows, f) else None),
    "min": lambda f: (lambda rows: min(vals(rows, f)) if vals(rows, f) else None),
    "countv": lambda f: (lambda rows: len(vals(rows, f))),
    "first": lambda f: (lambda rows: vals(rows, f)[0] if vals(rows, f) else None),
    "last": lambda f: (lambda rows: vals(rows, f)[-1] if vals(rows, f) else None),
}


def fill(sampled, select, aggs_idx, lo, hi, width_ns, mode, value=None, order=None):
    """Reference FILL over sampled rows (tuples in select order).
    select: names ('time', tags, '#i'); lo/hi: first and last bucket (ns), None -> data's.
    mode: NULL | PREV | LINEAR | VALUE. Rows ordered by time then tags unless order given."""
    ti = select.index("time")
    tag_idx = [i for i, c in enumerate(select) if c != "time" and not c.startswith("#")]
    agg_idx = [i for i, c in enumerate(select) if c.startswith("#")]
    tns = lambda d: int(d.timestamp()) * NS
    if lo is None:
        lo = min(tns(r[ti]) for r in sampled) if sampled else None
    if hi is None:
        hi = max(tns(r[ti]) for r in sampled) if sampled else None
    if lo is None or hi is None:
        return []
    buckets = list(range(lo, hi + 1, width_ns))
    groups = sorted({tuple(r[i] for i in tag_idx) for r in sampled}) if tag_idx else [()]
    have = {(tuple(r[i] for i in tag_idx), tns(r[ti])): r for r in sampled}
    out = []
    for g in groups:
        series = []
        for b in buckets:
            r = have.get((g, b))
            series.append([None if r is None else r[i] for i in agg_idx])
        filled = [list(x) for x in series]
        for j in range(len(agg_idx)):
            col = [x[j] for x in series]
            for k, b in enumerate(buckets):
                if col[k] is not None:
                    continue
                if mode == "PREV":
                    prev = [c for c in col[:k] if c is not None]
                    filled[k][j] = prev[-1] if prev else None
                elif mode == "LINEAR":
                    p = [(buckets[i], col[i]) for i in range(k) if col[i] is not None]
                    n = [(buckets[i], col[i]) for i in range(k + 1, len(col)) if col[i] is not None]
                    if p and n:
                        (t0, v0), (t1, v1) = p[-1], n[0]
                        filled[k][j] = v0 + (v1 - v0) * (b - t0) / (t1 - t0)
                elif mode == "VALUE":
                    filled[k][j] = value[j] if isinstance(value, list) else value
        for k, b in enumerate(buckets):
            row = [None] * len(select)
            row[ti] = dtm(b)
            for n_, i in enumerate(tag_idx):
                row[i] = g[n_]
            for j, i in enumerate(agg_idx):
                row[i] = filled[k][j]
            out.append(tuple(row))
    key = order or (lambda r: (r[ti],) + tuple(r[i] for i in tag_idx))
    return sorted(out, key=key)


from zoneinfo import ZoneInfo


def local_midnight_ns(t, tz):
    z = ZoneInfo(tz)
    d = dt.datetime.fromtimestamp(t // NS, UTC).astimezone(z)
    m = dt.datetime(d.year, d.month, d.day, tzinfo=z)
    return int(m.timestamp()) * NS


def zoned_bucket(tz, unit, width_s=None, offset_s=0):
    """unit 'day'|'month': local calendar starts; 'sub': elapsed width from local midnight+offset."""
    z = ZoneInfo(tz)
    def f(t):
        if unit == "day":
            return local_midnight_ns(t, tz)
        if unit == "month":
            d = dt.datetime.fromtimestamp(t // NS, UTC).astimezone(z)
            return int(dt.datetime(d.year, d.month, 1, tzinfo=z).timestamp()) * NS
        day = local_midnight_ns(t, tz) + offset_s * NS
        w = width_s * NS
        return day + ((t - day) // w) * w
    return f
