import os
from lib import Slt

s = Slt(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "latest.slt"),
    """Latest values. These give the same rows (each series' newest row):
  SELECT ... LATEST ON time PARTITION BY host, region
  SELECT DISTINCT ON (host, region) ... ORDER BY host, region, time DESC
  SELECT host, region, max(time), last(v) ... GROUP BY host, region (while newest rows have v)
and, for one series, ORDER BY time DESC LIMIT 1. Some are answered from the last-value cache,
some from the data; the answers must not differ. Expected rows: DuckDB's DISTINCT ON.""",
)

REF = "SELECT DISTINCT ON (host, region) host, region, time, v FROM cpu {w} ORDER BY host, region, time DESC"


def shapes(title, where="", duck_where=None, one="a", which="LDGO"):
    """The four shapes under one WHERE (tag predicates and/or time bounds)."""
    w = f"WHERE {where} " if where else ""
    dw = duck_where if duck_where is not None else w
    s.c(title)
    if "L" in which:
        s.query("TTTR", f"SELECT host, region, time, v FROM cpu {w}LATEST ON time PARTITION BY host, region",
                REF.format(w=dw))
    if "D" in which:
        s.query("TTTR",
            f"SELECT DISTINCT ON (host, region) host, region, time, v FROM cpu {w}ORDER BY host, region, time DESC",
            REF.format(w=dw))
    if "G" in which:
        s.query("TTTR",
            f"SELECT host, region, max(time) AS time, last(v) AS v FROM cpu {w}GROUP BY host, region ORDER BY host, region",
            REF.format(w=dw))
    w1 = f"WHERE host = '{one}'" + (f" AND {where}" if where else "")
    dw1 = (dw + f" AND host = '{one}'") if dw else f"WHERE host = '{one}'"
    if "O" in which:
        s.query("TTTR", f"SELECT host, region, time, v FROM cpu {w1} ORDER BY time DESC LIMIT 1",
            f"SELECT host, region, time, v FROM cpu {dw1} ORDER BY time DESC LIMIT 1")


cols = ["time", "host", "region", "v", "n"]
s.section("In the memtable only")
s.insert("cpu", cols, [
    ("2024-01-01T00:00:00Z", "a", "eu", 1.0, 1),
    ("2024-01-01T00:00:30Z", "a", "eu", 3.0, 1),
    ("2024-01-01T00:00:40Z", "b", "eu", 10.0, 1),
    ("2024-01-01T00:00:10Z", "c", "us", 7.0, 1),
    ("2023-12-31T23:59:00Z", "d", "us", 5.0, 1),
])
s.insert("cpu", cols, [("2024-01-01T00:00:30Z", "a", "eu", 3.5, 2)],
         comment="a's newest point written again: 3.5 replaces 3.0.")
shapes("Every series; d's only point is in the previous day's partition.")

s.section("In files only")
s.flush()
shapes("The same rows after the flush.", which="LGO")

s.section("Files and memtable")
s.insert("cpu", cols, [
    ("2024-01-02T00:01:00Z", "b", "eu", 11.0, 1),
    ("2024-01-01T00:00:20Z", "a", "eu", 2.0, 1),
    ("2024-01-01T00:00:10Z", "c", "us", 8.0, 1),
], comment="""b gets a newer point in the next day's partition; a an older point (out of order, so a's
latest stays 3.5 at 00:00:30); c's flushed newest point is written again with 8.0.""")
shapes("b's latest row is in the memtable, a's in a file, c's merged from both.", one="c")
shapes("A tag predicate.", where="region = 'eu'", one="b", which="LGO")
shapes("A lower time bound: d's and c's newest points are older, so they drop out.",
       where="time >= '2024-01-01T00:00:20Z'", duck_where="WHERE time >= TIMESTAMP '2024-01-01 00:00:20'", one="b",
       which="DGO")
shapes("An upper time bound: the newest row before it, not the newest row.",
       where="time < '2024-01-01T00:00:30Z'", duck_where="WHERE time < TIMESTAMP '2024-01-01 00:00:30'",
       which="LGO")
s.query(
    "TTTR",
    "SELECT host, region, time, v FROM cpu WHERE v < 9.0 LATEST ON time PARTITION BY host, region",
    REF.format(w="WHERE v < 9.0"),
    comment="A field predicate filters rows before the latest is taken: b's rows are all >= 10.",
)
s.query(
    "TR",
    "SELECT host, v FROM cpu LATEST ON time PARTITION BY host ORDER BY v DESC LIMIT 2",
    "SELECT host, v FROM (SELECT DISTINCT ON (host) host, time, v FROM cpu ORDER BY host, time DESC) ORDER BY v DESC LIMIT 2",
    comment="ORDER BY and LIMIT after the clause apply to the latest rows.",
)
s.query(
    "TTR",
    "SELECT region, host, v FROM cpu LATEST ON time PARTITION BY region",
    "SELECT DISTINCT ON (region) region, host, v FROM cpu ORDER BY region, time DESC",
    comment="Partitioned by a tag that several series share: the newest row of the region.",
)

s.section("Empty")
s.query("TTTR", "SELECT host, region, time, v FROM cpu WHERE host = 'nobody' LATEST ON time PARTITION BY host, region",
        expect=[])
s.query("TTR", "SELECT host, time, v FROM cpu WHERE host = 'nobody' ORDER BY time DESC LIMIT 1", expect=[])
s.query("TTTR", "SELECT host, region, time, v FROM cpu WHERE time > '2030-01-01T00:00:00Z'\n"
        "LATEST ON time PARTITION BY host, region", expect=[])

s.section("After COMPACT")
s.compact()
shapes("The same rows after compaction.", one="c", which="DGO")

s.section("A newest row without v")
s.insert("cpu", cols, [("2024-01-01T00:00:00Z", "e", "us", 4.0, 1)])
s.insert("cpu", cols, [("2024-01-01T00:00:50Z", "e", "us", None, 2)])
s.query(
    "TTTRI",
    "SELECT host, region, time, v, n FROM cpu WHERE host = 'e' LATEST ON time PARTITION BY host, region",
    "SELECT DISTINCT ON (host, region) host, region, time, v, n FROM cpu WHERE host = 'e' ORDER BY host, region, time DESC",
    comment="The latest row is the 00:00:50 row, whose v is NULL.",
)
s.query(
    "TTTRI",
    "SELECT DISTINCT ON (host, region) host, region, time, v, n FROM cpu WHERE host = 'e'\n"
    "ORDER BY host, region, time DESC",
    "SELECT DISTINCT ON (host, region) host, region, time, v, n FROM cpu WHERE host = 'e' ORDER BY host, region, time DESC",
)
s.query(
    "TTRI",
    "SELECT host, region, last(v), last(n) FROM cpu WHERE host = 'e' GROUP BY host, region",
    "SELECT host, region, arg_max(v, time) FILTER (WHERE v IS NOT NULL), arg_max(n, time) FILTER (WHERE n IS NOT NULL) FROM cpu WHERE host = 'e' GROUP BY host, region",
    comment="last(v) takes each field's newest non-NULL value instead: 4.0.",
)

s.section("Refusals")
s.error("SELECT * FROM cpu LATEST ON ts PARTITION BY host", "LATEST ON")
s.error("SELECT * FROM cpu LATEST ON time PARTITION BY", "at least one")

s.write()
