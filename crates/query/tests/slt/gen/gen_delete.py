import os
from lib import Slt, ts, A, sample, epoch_bucket

s = Slt(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "delete.slt"),
    """DELETE FROM t [WHERE <AND of time comparisons (>, >=, <, <=, =, BETWEEN) and tag predicates>].
Matching rows disappear from every query at once, wherever they are (files, memtable, both
versions of a point written twice), stay deleted through FLUSH and COMPACT, and latest-value
queries then show the newest remaining row. A row written after the DELETE at the same series
and time is a new row: visible, with only the fields it was written with. DELETE without
WHERE empties the table. A predicate on a field is an error naming `field`; an OR mixing time
and tags is an error naming DELETE. Expected rows: DuckDB over the rows left.""",
)

hosts = [("a", "eu", None, 100), ("b", "eu", "d1", 200), ("c", "us", None, 300)]
cols = ["time", "host", "region", "dc", "v", "n"]


def rows(days, hours):
    out = []
    for d in days:
        for h in hours:
            for host, region, dc, base in hosts:
                out.append((f"2024-01-0{d}T{h:02d}:00:00Z", host, region, dc, float(base + d * 10 + h // 6), 1))
    return out


STATE = "SELECT host, count(*), min(time), max(time), sum(v) FROM cpu GROUP BY host ORDER BY host"


def state(comment=None):
    s.query("TITTR", STATE, STATE, comment=comment)


def latest(comment=None, one="b", which="LDGO"):
    ref = "SELECT DISTINCT ON (host) host, time, v FROM cpu ORDER BY host, time DESC"
    if comment:
        s.c(comment)
    if "L" in which:
        s.query("TTR", "SELECT host, time, v FROM cpu LATEST ON time PARTITION BY host", ref)
    if "D" in which:
        s.query("TTR", "SELECT DISTINCT ON (host) host, time, v FROM cpu ORDER BY host, time DESC", ref)
    if "G" in which:
        s.query("TTR", "SELECT host, max(time), last(v) FROM cpu GROUP BY host ORDER BY host", ref)
    if "O" in which:
        s.query("TTR", f"SELECT host, time, v FROM cpu WHERE host = '{one}' ORDER BY time DESC LIMIT 1",
                f"SELECT host, time, v FROM cpu WHERE host = '{one}' ORDER BY time DESC LIMIT 1")


T = lambda x: ts(x)

s.section("Data: three days of 00:00, 06:00, 12:00, 18:00 per host; day 1 and the first half of day 2 in files")
s.insert("cpu", cols, rows([1], [0, 6, 12, 18]) + rows([2], [0, 6]))
s.flush()
s.insert("cpu", cols, rows([2], [12, 18]) + rows([3], [0, 6, 12, 18]))
s.insert("cpu", cols, [("2024-01-02T00:00:00Z", "b", "eu", "d1", 999.0, 1)],
         comment="b's flushed 2024-01-02T00:00 point written again: 999.0 in the memtable.")
state("v is 100/200/300 for a/b/c + 10 * day + hour / 6.")

s.section("A time range inside the files")
s.delete("cpu", "time >= '2024-01-01T06:00:00Z' AND time < '2024-01-01T18:00:00Z'",
         lambda r: T("2024-01-01T06:00:00Z") <= r["time"] < T("2024-01-01T18:00:00Z"))
state("Every host loses 06:00 and 12:00 of day 1.")

s.section("A tag and a range across midnight and the flush")
s.delete("cpu", "host = 'a' AND time BETWEEN '2024-01-01T18:00:00Z' AND '2024-01-02T12:00:00Z'",
         lambda r: r["host"] == "a" and T("2024-01-01T18:00:00Z") <= r["time"] <= T("2024-01-02T12:00:00Z"))
s.query("TR", "SELECT time, v FROM cpu WHERE host = 'a' ORDER BY time",
        "SELECT time, v FROM cpu WHERE host = 'a' ORDER BY time",
        comment="a keeps day 1 00:00, then day 2 18:00 on (BETWEEN is inclusive: 12:00 went too).")

s.section("A point written twice: neither version comes back")
s.delete("cpu", "host = 'b' AND time = '2024-01-02T00:00:00Z'",
         lambda r: r["host"] == "b" and r["time"] == T("2024-01-02T00:00:00Z"))
s.query("TR", "SELECT time, v FROM cpu WHERE host = 'b' AND time < '2024-01-02T12:00:00Z' ORDER BY time",
        "SELECT time, v FROM cpu WHERE host = 'b' AND time < TIMESTAMP '2024-01-02 12:00:00' ORDER BY time",
        comment="Neither 999.0 (memtable) nor the flushed 220.0 is left at 2024-01-02T00:00.")

s.section("A series' newest row")
s.delete("cpu", "host = 'b' AND time > '2024-01-03T12:00:00Z'",
         lambda r: r["host"] == "b" and r["time"] > T("2024-01-03T12:00:00Z"))
latest("b's newest row is now 2024-01-03T12:00 (232.0).")

s.section("The same after FLUSH")
s.flush()
state()
latest(which="DO")

s.section("A whole series, by tag only")
s.delete("cpu", "region = 'us'", lambda r: r["region"] == "us")
s.query("T", "SHOW TAG VALUES FROM cpu WITH KEY = host", expect=["a", "b"])
latest("c is gone from the latest values too.", which="LG")

s.section("Other tag forms")
s.delete("cpu", "host IN ('a', 'zz') AND dc IS NULL AND time <= '2024-01-01T00:00:00Z'",
         lambda r: r["host"] in ("a", "zz") and r["dc"] is None and r["time"] <= T("2024-01-01T00:00:00Z"))
s.delete("cpu", "host ~ '^b' AND region LIKE 'e%' AND time >= '2024-01-03T06:00:00Z' AND time < '2024-01-03T07:00:00Z'",
         lambda r: r["host"].startswith("b") and r["region"].startswith("e")
         and T("2024-01-03T06:00:00Z") <= r["time"] < T("2024-01-03T07:00:00Z"))
s.delete("cpu", "(host = 'a' OR host = 'b') AND NOT (dc = 'd1') AND time > '2024-01-03T12:00:00Z'",
         lambda r: False,
         comment="""NOT (dc = 'd1') is false for b and NULL (not true) for a, which has no dc: nothing is
deleted, as a SELECT with that WHERE selects nothing.""")
s.delete("cpu", "host = 'nobody'", lambda r: False)
state("a lost day 1 00:00, b lost day 3 06:00.")

s.section("The same after COMPACT")
s.compact()
state()
s.query("TTI", "SELECT host, time, count(*) FROM cpu SAMPLE BY 1d",
        lambda st: sample(st, "cpu", epoch_bucket(86400), ["host", "time", "#0"], [A["count"]]),
        comment="Other queries see the same rows: SAMPLE BY, first/last.")
s.query("TRR", "SELECT host, first(v), last(v) FROM cpu GROUP BY host ORDER BY host",
        "SELECT host, arg_min(v, time), arg_max(v, time) FROM cpu GROUP BY host ORDER BY host")

s.section("Writing again where rows were deleted")
s.insert("cpu", ["time", "host", "region", "dc", "v"], [
    ("2024-01-01T06:00:00Z", "a", "eu", None, 1.5),
    ("2024-01-03T18:00:00Z", "b", "eu", "d1", 2.5),
], comment="""The same series and times as deleted rows, without n: the deleted rows' n does not come
back. b's row is its newest again.""")
s.query("TTRI", "SELECT host, time, v, n FROM cpu WHERE time = '2024-01-01T06:00:00Z' OR time = '2024-01-03T18:00:00Z'\n"
        "ORDER BY host, time",
        "SELECT host, time, v, n FROM cpu WHERE time = TIMESTAMP '2024-01-01 06:00:00' OR time = TIMESTAMP '2024-01-03 18:00:00' ORDER BY host, time")
s.insert("cpu", cols, [("2024-01-03T12:00:00Z", "b", "eu", "d1", 7.5, 2)],
         comment="An older point of b written again: b's latest stays 18:00.")
latest(which="LO")

s.section("Refusals change nothing")
s.error("DELETE FROM cpu WHERE v > 100.0", "field")
s.error("DELETE FROM cpu WHERE host = 'a' AND n = 1", "field")
s.error("DELETE FROM cpu WHERE host = 'a' OR time < '2024-01-02T00:00:00Z'", "DELETE")
s.error("DELETE FROM nope WHERE host = 'a'", "not found")
s.error("DELETE FROM nope", "not found")
state()

s.section("DELETE without WHERE")
s.delete("cpu", "", lambda r: True)
s.query("I", "SELECT count(*) FROM cpu", expect=["0"])
s.query("TTR", "SELECT host, time, v FROM cpu LATEST ON time PARTITION BY host", expect=[])
s.query("T", "SHOW TAG VALUES FROM cpu WITH KEY = host", expect=[])
s.flush()
s.compact()
s.query("I", "SELECT count(*) FROM cpu", expect=["0"])
s.insert("cpu", ["time", "host", "region", "v"], [("2024-01-01T00:00:00Z", "a", "eu", 42.0)],
         comment="The table still exists; a row at a deleted series and time is visible.")
s.query("TTTRI", "SELECT host, region, time, v, n FROM cpu", expect=["a eu 2024-01-01T00:00:00Z 42.0 NULL"])
s.query("TTR", "SELECT host, time, v FROM cpu LATEST ON time PARTITION BY host",
        expect=["a 2024-01-01T00:00:00Z 42.0"])

s.write()
