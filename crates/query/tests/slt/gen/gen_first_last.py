import os
from lib import Slt

s = Slt(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "first_last.slt"),
    """first(v) / last(v): the value of v at the earliest / latest time of each group;
first(v, ts) / last(v, ts): the same ordered by another timestamp. Rows where v is NULL are
skipped; a group with no reading gives NULL. Expected rows: DuckDB's
arg_min / arg_max(v, ts) FILTER (WHERE v IS NOT NULL) over the same rows.""",
)

F = lambda f, v, t: f"{'arg_min' if f == 'first' else 'arg_max'}({v}, {t}) FILTER (WHERE {v} IS NOT NULL)"

s.section("Data")
cols = ["time", "host", "v", "n", "seq"]
s.insert("t", cols, [
    ("2024-01-01T00:00:20Z", "a", 3.0, 30, 5),
    ("2024-01-01T00:00:00Z", "a", 1.0, 10, 7),
    ("2024-01-01T00:00:40Z", "a", 100.0, 99, 9),
    ("2024-01-02T00:00:20Z", "a", 16.0, 160, 2),
    ("2024-01-01T00:00:10Z", "b", 70.0, 700, 9),
    ("2024-01-01T00:00:02Z", "d", None, 1, 1),
], comment="""Out of time order on purpose. seq runs against time, for first(v, ts) by another
timestamp. Host d never has a v.""")
s.insert("t", cols, [("2024-01-01T00:00:10Z", "b", 7.0, 70, 2)],
         comment="b at 00:00:10 again, before the flush: 7.0 replaces 70.0.")
s.flush()
s.insert("t", cols, [
    ("2024-01-01T00:00:05Z", "a", 2.0, 20, 6),
    ("2024-01-01T00:00:40Z", "a", 4.0, 40, 4),
    ("2024-01-01T23:59:50Z", "a", 8.0, 80, 3),
    ("2024-01-02T00:00:10Z", "a", None, 50, 1),
    ("2024-01-01T00:00:01Z", "b", 6.0, 60, 3),
    ("2024-01-01T00:00:30Z", "b", None, 90, 1),
    ("2024-01-01T12:00:00Z", "c", 5.0, 5, 1),
], comment="""In the memtable: a at 00:00:40 replaces the flushed 100.0 with 4.0; a at 00:00:05 and
b at 00:00:01 are older than flushed rows; a at 2024-01-02T00:00:10 and b at 00:00:30 have
no v; c is a single point.""")
s.insert("t", cols, [("2024-01-01T00:00:10Z", "b", None, 71, 2)],
         comment="""A later write of b at 00:00:10 without v: a write merges field by field, so v stays 7.0
and n becomes 71.""")

s.section("Grouped")
s.query(
    "TRRII",
    "SELECT host, first(v), last(v), first(n), last(n) FROM t GROUP BY host ORDER BY host",
    f"SELECT host, {F('first','v','time')}, {F('last','v','time')}, {F('first','n','time')}, {F('last','n','time')} FROM t GROUP BY host ORDER BY host",
    comment="""a: first 1.0 (00:00:00), last v 16.0 (2024-01-02T00:00:20, newer than the NULL at 00:00:10).
b: last v is 7.0 (00:00:30 has no v), last n 90. d: no v at all, so NULL.""",
)
s.query(
    "TRRTT",
    "SELECT host, first(v, time) AS f, last(v, time) AS l, min(time), max(time)\n"
    "FROM t GROUP BY host ORDER BY host",
    f"SELECT host, {F('first','v','time')} AS f, {F('last','v','time')} AS l, min(time), max(time) FROM t GROUP BY host ORDER BY host",
    comment="The two-argument form with time is the same.",
)
s.query(
    "TRR",
    "SELECT host, first(v, to_timestamp_seconds(seq)) AS f, last(v, to_timestamp_seconds(seq)) AS l\n"
    "FROM t GROUP BY host ORDER BY host",
    f"SELECT host, {F('first','v','seq')} AS f, {F('last','v','seq')} AS l FROM t GROUP BY host ORDER BY host",
    comment="""Ordered by another timestamp (seq seconds): a's smallest seq (1) has no v, so first is
seq 2's 16.0 and last is seq 7's 1.0; b's seq 1 has no v, so first is 7.0 (seq 2).""",
)
s.query(
    "TRR",
    "SELECT host, first(v), last(v) FROM t\n"
    "WHERE time >= '2024-01-01T00:00:05Z' AND time < '2024-01-01T00:00:30Z' GROUP BY host ORDER BY host",
    f"SELECT host, {F('first','v','time')}, {F('last','v','time')} FROM t WHERE time >= TIMESTAMP '2024-01-01 00:00:05' AND time < TIMESTAMP '2024-01-01 00:00:30' GROUP BY host ORDER BY host",
    comment="A time range: only the rows inside count.",
)
s.query(
    "TTRRI",
    "SELECT host, date_bin(INTERVAL '1 hour', time, TIMESTAMP '2024-01-01T23:30:00Z') AS b,\n"
    "       first(v), last(v), last(n)\n"
    "FROM t WHERE host = 'a' GROUP BY host, b ORDER BY host, b",
    f"SELECT host, time_bucket(INTERVAL '1 hour', time, TIMESTAMP '2024-01-01 23:30:00') AS b, {F('first','v','time')}, {F('last','v','time')}, {F('last','n','time')} FROM t WHERE host = 'a' GROUP BY host, b ORDER BY host, b",
    comment="""Hour buckets from 23:30: a's 23:30 bucket spans midnight (two partitions) and holds a
memtable row (8.0 at 23:59:50), the NULL row and a file row (16.0 at 00:00:20).""",
)
s.query(
    "TR",
    "SELECT host, last(v) FROM t GROUP BY host ORDER BY last(v) DESC NULLS LAST",
    f"SELECT host, {F('last','v','time')} AS l FROM t GROUP BY host ORDER BY l DESC NULLS LAST",
    comment="The aggregate by its name in ORDER BY and HAVING.",
)
s.query(
    "TR",
    "SELECT host, last(v) FROM t GROUP BY host HAVING last(v) > 6.0 ORDER BY host",
    f"SELECT host, {F('last','v','time')} AS l FROM t GROUP BY host HAVING l > 6.0 ORDER BY host",
)

s.section("Ungrouped")
s.query(
    "RRII",
    "SELECT first(v), last(v), first(n), last(n) FROM t",
    f"SELECT {F('first','v','time')}, {F('last','v','time')}, {F('first','n','time')}, {F('last','n','time')} FROM t",
    comment="""Over every series: the earliest reading is a's 1.0 at 00:00:00, the latest a's 16.0 at
2024-01-02T00:00:20 (n 160).""",
)
s.query(
    "RR",
    "SELECT first(v), last(v) FROM t WHERE host = 'c'",
    f"SELECT {F('first','v','time')}, {F('last','v','time')} FROM t WHERE host = 'c'",
    comment="A single point is both first and last.",
)
s.query(
    "RI",
    "SELECT last(v), last(n) FROM t WHERE host = 'd'",
    f"SELECT {F('last','v','time')}, {F('last','n','time')} FROM t WHERE host = 'd'",
    comment="Only NULL readings: NULL.",
)

s.section("Empty ranges")
s.query(
    "RR",
    "SELECT first(v), last(v) FROM t WHERE time > '2030-01-01T00:00:00Z'",
    expect=["NULL NULL"],
    comment="Ungrouped over no rows: one row of NULLs.",
)
s.query(
    "TR",
    "SELECT host, last(v) FROM t WHERE host = 'nobody' GROUP BY host",
    expect=[],
    comment="Grouped over no rows: no rows.",
)

s.section("After COMPACT the answers are the same")
s.compact()
s.query(
    "TRRII",
    "SELECT host, first(v), last(v), first(n), last(n) FROM t GROUP BY host ORDER BY host",
    f"SELECT host, {F('first','v','time')}, {F('last','v','time')}, {F('first','n','time')}, {F('last','n','time')} FROM t GROUP BY host ORDER BY host",
)

s.section("Errors")
s.error("SELECT last(v, host) FROM t", "must be a timestamp")

s.write()
