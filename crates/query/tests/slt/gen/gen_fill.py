import os
from lib import Slt, ts, A, sample, epoch_bucket, fill, NS

s = Slt(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fill.slt"),
    """SAMPLE BY ... FILL(NONE | NULL | PREV | LINEAR | <number>): every group (tag values seen in the
sampled rows) gets a row for every bucket of the query's time range, taken from its
WHERE time >= / > / < / <= / BETWEEN bounds, or from the data's range (all groups' first and
last bucket) for a side the query leaves open. PREV: the group's last value before; LINEAR:
interpolated by time between the neighbouring values, the ends staying NULL; a number:
that number. Expected rows come from a reference implementation of those rules.""",
)

H = 3600
HNS = H * NS
RANGE = "time >= '2024-01-01T21:00:00Z' AND time < '2024-01-02T03:00:00Z'"
LO, HI = ts("2024-01-01T21:00:00Z"), ts("2024-01-02T02:00:00Z")
in_range = lambda r: ts("2024-01-01T21:00:00Z") <= r["time"] < ts("2024-01-02T03:00:00Z")

s.section("Data: hours 21:00 to 03:00 across a UTC midnight, files and memtable")
cols = ["time", "host", "v", "n"]
s.insert("cpu", cols, [
    ("2024-01-01T21:10:00Z", "a", 1.0, 1),
    ("2024-01-02T02:30:00Z", "a", 10.0, 1),
    ("2024-01-01T22:40:00Z", "b", 99.0, 1),
    ("2024-01-01T23:20:00Z", "b", 20.0, 1),
])
s.flush()
s.insert("cpu", cols, [
    ("2024-01-02T00:20:00Z", "a", 4.0, 1),
    ("2024-01-01T22:40:00Z", "b", 10.0, 1),
    ("2024-01-01T23:50:00Z", "b", 30.0, 1),
    ("2024-01-02T00:30:00Z", "b", None, 1),
    ("2024-01-02T01:15:00Z", "c", 5.0, 1),
    ("2024-01-01T20:30:00Z", "a", 50.0, 1),
], comment="""b at 22:40 replaces the flushed 99.0 with 10.0; b's 00:30 row has no v; c is a single
point; a at 20:30 is older than everything and outside the range used below.""")


def sampled(select, aggs, where):
    return lambda st: sample(st, "cpu", epoch_bucket(H), select, aggs, where=where)


def filled(select, aggs, where, mode, lo=LO, hi=HI, value=None, order=None, limit=None):
    def run(st):
        rows = fill(sample(st, "cpu", epoch_bucket(H), select, aggs, where=where),
                    select, None, lo, hi, HNS, mode, value, order)
        return rows[:limit] if limit else rows
    return run


SEL = ["host", "time", "#0"]
AVG = [A["avg"]("v")]
notnull = lambda r: in_range(r) and r["v"] is not None

s.section("Over the query's time range")
s.query(
    "TTR",
    f"SELECT host, time, avg(v) FROM cpu WHERE {RANGE}\nSAMPLE BY 1h FILL(NONE)",
    sampled(SEL, AVG, in_range),
    comment="FILL(NONE) is plain SAMPLE BY. b's 00:00 bucket has a row, whose v is NULL.",
)
s.query(
    "TTR",
    f"SELECT host, time, avg(v) FROM cpu WHERE {RANGE}\nSAMPLE BY 1h FILL(NULL)",
    filled(SEL, AVG, in_range, "NULL"),
    comment="Six buckets (21:00 to 02:00; the bound 03:00 is exclusive) for each of a, b, c.",
)
s.query(
    "TTR",
    f"SELECT host, time, avg(v) FROM cpu WHERE {RANGE} AND v IS NOT NULL\nSAMPLE BY 1h FILL(PREV)",
    filled(SEL, AVG, notnull, "PREV"),
    comment="""PREV carries each group's last value forward; before a group's first value it stays
NULL (a's 20:30 row is outside the range, so it is not a previous value).""",
)
s.query(
    "TTRR",
    f"SELECT host, time, avg(v) AS v, max(v) AS mx FROM cpu WHERE {RANGE} AND v IS NOT NULL\n"
    "SAMPLE BY 1h FILL(LINEAR)",
    filled(["host", "time", "#0", "#1"], [A["avg"]("v"), A["max"]("v")], notnull, "LINEAR"),
    comment="""LINEAR: a goes 1.0 (21:00) -> 4.0 (00:00) -> 10.0 (02:00), so 2.0, 3.0 and 7.0 between;
b's and c's buckets after their last value and before their first stay NULL.""",
)
s.query(
    "TTII",
    f"SELECT host, time, count(*) AS cnt, count(v) AS cntv FROM cpu WHERE {RANGE} AND host = 'b'\nSAMPLE BY 1h FILL(0)",
    filled(["host", "time", "#0", "#1"], [A["count"], A["countv"]("v")], lambda r: in_range(r) and r["host"] == "b",
           "VALUE", value=[0, 0]),
    comment="A constant fills every aggregate; b's 00:00 bucket is not empty (1 row, no v).",
)
s.query(
    "TTR",
    f"SELECT time, host, avg(v) FROM cpu WHERE {RANGE} AND host = 'c'\nSAMPLE BY 1h FILL(-1.5)",
    filled(["time", "host", "#0"], AVG, lambda r: in_range(r) and r["host"] == "c", "VALUE", value=-1.5),
    comment="A single point, a negative constant, time listed first.",
)

s.section("Bounds: BETWEEN, >, <=, and the data's range for an open side")
s.query(
    "TTR",
    "SELECT host, time, avg(v) FROM cpu\n"
    "WHERE time BETWEEN '2024-01-01T22:00:00Z' AND '2024-01-02T00:00:00Z' SAMPLE BY 1h FILL(NULL)",
    filled(SEL, AVG, lambda r: ts("2024-01-01T22:00:00Z") <= r["time"] <= ts("2024-01-02T00:00:00Z"), "NULL",
           lo=ts("2024-01-01T22:00:00Z"), hi=ts("2024-01-02T00:00:00Z")),
    comment="""BETWEEN includes its upper bound, so the 00:00 bucket is in the range (empty: a's
00:20 is past the bound). Only b has rows in the range, so only b is filled.""",
)
s.query(
    "TTR",
    "SELECT host, time, avg(v) FROM cpu\n"
    "WHERE time > '2024-01-01T23:00:00Z' AND time <= '2024-01-02T01:00:00Z' AND v IS NOT NULL\n"
    "SAMPLE BY 1h FILL(PREV)",
    filled(SEL, AVG, lambda r: ts("2024-01-01T23:00:00Z") < r["time"] <= ts("2024-01-02T01:00:00Z") and r["v"] is not None,
           "PREV", lo=ts("2024-01-01T23:00:00Z"), hi=ts("2024-01-02T01:00:00Z")),
    comment="""> 23:00 starts at the 23:00 bucket; <= 01:00 ends with the 01:00 bucket (which holds
only the instant 01:00:00, no rows).""",
)
s.query(
    "TTR",
    "SELECT host, time, avg(v) FROM cpu WHERE time >= '2024-01-02T00:00:00Z' AND v IS NOT NULL\n"
    "SAMPLE BY 1h FILL(PREV)",
    filled(SEL, AVG, lambda r: r["time"] >= ts("2024-01-02T00:00:00Z") and r["v"] is not None, "PREV",
           lo=ts("2024-01-02T00:00:00Z"), hi=None),
    comment="No upper bound: the range ends with the data's last bucket (a's 02:00).",
)
s.query(
    "TI",
    "SELECT time, count(*) FROM cpu SAMPLE BY 1h FILL(0)",
    filled(["time", "#0"], [A["count"]], lambda r: True, "VALUE", lo=None, hi=None, value=0),
    comment="""No bounds, no tags: one group, from the data's first bucket (a's 20:30 -> 20:00) to its
last (02:00).""",
)

s.section("ORDER BY and LIMIT apply to the filled rows")
s.query(
    "TTR",
    f"SELECT host, time, avg(v) FROM cpu WHERE {RANGE} AND host = 'a'\n"
    "SAMPLE BY 1h FILL(PREV) ORDER BY time DESC LIMIT 3",
    filled(SEL, AVG, lambda r: in_range(r) and r["host"] == "a", "PREV",
           order=lambda r: -r[1].timestamp(), limit=3),
)

s.section("Empty ranges")
s.query(
    "TTR",
    "SELECT host, time, avg(v) FROM cpu\n"
    "WHERE time >= '2030-01-01T00:00:00Z' AND time < '2030-01-01T03:00:00Z' SAMPLE BY 1h FILL(NULL)",
    expect=[],
    comment="No rows in the range: no group, so no rows.",
)
s.query(
    "TI",
    "SELECT time, count(*) FROM cpu\n"
    "WHERE time >= '2030-01-01T00:00:00Z' AND time < '2030-01-01T03:00:00Z' SAMPLE BY 1h FILL(0)",
    expect=["2030-01-01T00:00:00Z 0", "2030-01-01T01:00:00Z 0", "2030-01-01T02:00:00Z 0"],
    comment="""Without tags there is one group, the whole table, as for an ungrouped aggregate: it
gets a row for every bucket of the range even when no row matched.""",
)

s.section("After COMPACT the answers are the same")
s.compact()
s.query(
    "TTR",
    f"SELECT host, time, avg(v) FROM cpu WHERE {RANGE} AND host = 'a'\nSAMPLE BY 1h FILL(LINEAR)",
    filled(SEL, AVG, lambda r: in_range(r) and r["host"] == "a", "LINEAR"),
)

s.section("Refusals")
s.error("SELECT host, avg(v) FROM cpu SAMPLE BY 1h FILL(PREV)", "FILL needs `time`")
s.error("SELECT time, avg(v) FROM cpu SAMPLE BY 1h FILL(MAYBE)", "FILL takes NONE, NULL")

s.write()
