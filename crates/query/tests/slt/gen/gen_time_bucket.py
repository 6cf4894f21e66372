import os
from lib import Slt

s = Slt(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "time_bucket.slt"),
    """time_bucket(width, ts [, origin]) as TimescaleDB defines it, and DataFusion's date_bin.

time_bucket's default origin is Monday 2000-01-03T00:00:00Z (2000-01-01 for widths in months or
years); date_bin's is the Unix epoch (a Thursday). Expected rows were computed with DuckDB,
whose time_bucket follows TimescaleDB (date_bin(w, t, o) == DuckDB time_bucket(w, t, o)).""",
)

s.section("Data: files and memtable, both sides of a UTC midnight, duplicates, out of order")
cols = ["time", "host", "v", "n"]
s.insert("m", cols, [
    ("2024-01-01T23:41:00Z", "a", 1.0, 1),
    ("2024-01-01T23:58:00Z", "a", 2.0, 2),
    ("2024-01-02T00:03:00Z", "a", 4.0, 3),
    ("2024-01-01T23:55:00Z", "b", 10.0, 4),
    ("2024-01-02T00:12:00Z", "a", 100.0, 5),
])
s.insert("m", cols, [("2024-01-01T23:58:00Z", "a", 0.5, 6)],
         comment="The same series and time again before the flush: 0.5 replaces 2.0.")
s.flush()
s.insert("m", cols, [
    ("2024-01-02T00:12:00Z", "a", 8.0, 7),
    ("2024-01-01T23:44:00Z", "a", 16.0, 8),
    ("2024-01-02T00:09:00Z", "b", 20.0, 9),
    ("2024-01-02T00:05:00Z", "a", None, 10),
    ("2024-01-03T06:00:00Z", "c", 64.0, 11),
], comment="""After the flush: 8.0 replaces the flushed 100.0 (same series and time); 23:44 is older
than rows already in files; a's 00:05 row has no v (NULL).""")

s.section("time_bucket over the table")
s.query(
    "TIIR",
    "SELECT time_bucket(INTERVAL '10 minutes', time) AS b, count(*), count(v), sum(v)\n"
    "FROM m GROUP BY b ORDER BY b",
    "SELECT time_bucket(INTERVAL '10 minutes', time) AS b, count(*), count(v), sum(v) FROM m GROUP BY b ORDER BY b",
    comment="""10-minute buckets: 23:40 holds a file row and a memtable row; 00:00 holds a file row,
the NULL row (counted by count(*), not count(v)) and b's memtable row.""",
)
s.query(
    "TTIR",
    "SELECT host, time_bucket('15 minutes', time) AS b, count(*), max(v)\n"
    "FROM m GROUP BY host, b ORDER BY host, b",
    "SELECT host, time_bucket(INTERVAL '15 minutes', time) AS b, count(*), max(v) FROM m GROUP BY host, b ORDER BY host, b",
    comment="The width as a string; per host.",
)
s.query(
    "TI",
    "SELECT time_bucket(INTERVAL '1 day', time) AS d, count(*) FROM m GROUP BY d ORDER BY d",
    "SELECT time_bucket(INTERVAL '1 day', time) AS d, count(*) FROM m GROUP BY d ORDER BY d",
    comment="Days start at UTC midnight (the origin is a midnight).",
)
s.query(
    "TI",
    "SELECT time_bucket(INTERVAL '1 hour', time, TIMESTAMP '2024-01-01T23:30:00Z') AS b, count(*)\n"
    "FROM m GROUP BY b ORDER BY b",
    "SELECT time_bucket(INTERVAL '1 hour', time, TIMESTAMP '2024-01-01 23:30:00') AS b, count(*) FROM m GROUP BY b ORDER BY b",
    comment="""An explicit origin at 23:30: the bucket 23:30-00:30 spans the UTC midnight, so it joins
two day partitions, files and memtable.""",
)
s.query(
    "TI",
    "SELECT time_bucket(INTERVAL '2 days', time) AS b, count(*) FROM m GROUP BY b ORDER BY b",
    "SELECT time_bucket(INTERVAL '2 days', time) AS b, count(*) FROM m GROUP BY b ORDER BY b",
    comment="""2-day buckets count from Monday 2000-01-03: 8764 days before 2024-01-01, an even number,
so 2024-01-01 starts a bucket.""",
)
s.query(
    "TI",
    "SELECT date_bin(INTERVAL '2 days', time) AS b, count(*) FROM m GROUP BY b ORDER BY b",
    "SELECT time_bucket(INTERVAL '2 days', time, TIMESTAMP '1970-01-01') AS b, count(*) FROM m GROUP BY b ORDER BY b",
    comment="""date_bin counts from the epoch: 2024-01-01 is day 19723 (odd), so buckets start on
2023-12-31 and 2024-01-02.""",
)
s.query(
    "TT",
    "SELECT DISTINCT time_bucket(INTERVAL '1 week', time) AS tb, date_bin(INTERVAL '1 week', time) AS db\n"
    "FROM m ORDER BY tb",
    "SELECT DISTINCT time_bucket(INTERVAL '1 week', time) AS tb, time_bucket(INTERVAL '1 week', time, TIMESTAMP '1970-01-01') AS db FROM m ORDER BY tb",
    comment="Weeks: time_bucket's start on Monday 2024-01-01, date_bin's on Thursday 2023-12-28.",
)
s.query(
    "TI",
    "SELECT time_bucket(INTERVAL '1 month', time) AS mo, count(*) FROM m GROUP BY mo ORDER BY mo",
    "SELECT time_bucket(INTERVAL '1 month', time) AS mo, count(*) FROM m GROUP BY mo ORDER BY mo",
)

s.section("date_bin")
s.query(
    "TIR",
    "SELECT date_bin(INTERVAL '15 minutes', time, TIMESTAMP '2024-01-01T00:05:00Z') AS b, count(*), sum(v)\n"
    "FROM m WHERE time < '2024-01-03T00:00:00Z' GROUP BY b ORDER BY b",
    "SELECT time_bucket(INTERVAL '15 minutes', time, TIMESTAMP '2024-01-01 00:05:00') AS b, count(*), sum(v) FROM m WHERE time < TIMESTAMP '2024-01-03 00:00:00' GROUP BY b ORDER BY b",
    comment="15-minute bins offset by 5 minutes: 23:35, 23:50, 00:05; the 23:50 bin spans midnight.",
)
s.query(
    "TTIRR",
    "SELECT host, date_bin(INTERVAL '1 hour', time) AS b, count(v), min(v), avg(v)\n"
    "FROM m WHERE host IN ('a', 'b') AND time >= '2024-01-02T00:00:00Z' GROUP BY host, b ORDER BY host, b",
    "SELECT host, time_bucket(INTERVAL '1 hour', time, TIMESTAMP '1970-01-01') AS b, count(v), min(v), avg(v) FROM m WHERE host IN ('a', 'b') AND time >= TIMESTAMP '2024-01-02 00:00:00' GROUP BY host, b ORDER BY host, b",
    comment="count and avg skip a's NULL: a's 00:00 hour averages (4.0 + 8.0) / 2.",
)

s.section("A single point, an empty range")
s.query(
    "TTR",
    "SELECT time, time_bucket(INTERVAL '1 hour', time) AS b, v FROM m WHERE host = 'c'",
    "SELECT time, time_bucket(INTERVAL '1 hour', time) AS b, v FROM m WHERE host = 'c'",
)
s.query(
    "TI",
    "SELECT time_bucket(INTERVAL '10 minutes', time) AS b, count(*) FROM m\n"
    "WHERE time >= '2030-01-01T00:00:00Z' GROUP BY b ORDER BY b",
    "SELECT time_bucket(INTERVAL '10 minutes', time) AS b, count(*) FROM m WHERE time >= TIMESTAMP '2030-01-01 00:00:00' GROUP BY b ORDER BY b",
    comment="Nothing in the range: no buckets.",
)
s.query(
    "IT",
    "SELECT count(*), min(time_bucket(INTERVAL '1 hour', time)) FROM m WHERE host = 'nobody'",
    "SELECT count(*), min(time_bucket(INTERVAL '1 hour', time)) FROM m WHERE host = 'nobody'",
    comment="Ungrouped over no rows: one row, the bucket NULL.",
)

s.section("time_bucket on literals (timestamps without a zone print without Z)")
naive = ["naive"] * 8
s.query(
    "TTTT",
    "SELECT time_bucket(INTERVAL '1 week', TIMESTAMP '2024-01-07 12:00:00'),\n"
    "       time_bucket(INTERVAL '1 week', TIMESTAMP '2024-01-08 00:00:00'),\n"
    "       time_bucket(INTERVAL '1 week', TIMESTAMP '1999-12-31 00:00:00'),\n"
    "       time_bucket(INTERVAL '2 days', TIMESTAMP '2000-01-02 12:00:00')",
    "SELECT time_bucket(INTERVAL '1 week', TIMESTAMP '2024-01-07 12:00:00'),"
    " time_bucket(INTERVAL '1 week', TIMESTAMP '2024-01-08 00:00:00'),"
    " time_bucket(INTERVAL '1 week', TIMESTAMP '1999-12-31 00:00:00'),"
    " time_bucket(INTERVAL '2 days', TIMESTAMP '2000-01-02 12:00:00')",
    tsfmt=naive,
    comment="""Sunday 2024-01-07 is in the week of Monday 2024-01-01; Monday 2024-01-08 starts its own;
before the origin, buckets still start on Mondays (1999-12-27) and every other day from
2000-01-03 (2000-01-01).""",
)
s.query(
    "TTTT",
    "SELECT time_bucket(INTERVAL '1 month', TIMESTAMP '2024-01-31 23:59:59'),\n"
    "       time_bucket(INTERVAL '3 months', TIMESTAMP '2024-05-15 00:00:00'),\n"
    "       time_bucket(INTERVAL '1 year', TIMESTAMP '2024-06-01 00:00:00'),\n"
    "       time_bucket(INTERVAL '2 years', TIMESTAMP '2025-06-01 00:00:00')",
    "SELECT time_bucket(INTERVAL '1 month', TIMESTAMP '2024-01-31 23:59:59'),"
    " time_bucket(INTERVAL '3 months', TIMESTAMP '2024-05-15 00:00:00'),"
    " time_bucket(INTERVAL '1 year', TIMESTAMP '2024-06-01 00:00:00'),"
    " time_bucket(INTERVAL '2 years', TIMESTAMP '2025-06-01 00:00:00')",
    tsfmt=naive,
    comment="Months and years count from 2000-01-01: quarters start in Jan/Apr/Jul/Oct, 2-year buckets in even years.",
)
s.query(
    "TT",
    "SELECT time_bucket(INTERVAL '5 minutes', TIMESTAMP '2024-01-01 10:07:00', TIMESTAMP '2024-01-01 00:01:00'),\n"
    "       time_bucket(INTERVAL '1 hour', CAST(NULL AS TIMESTAMP))",
    "SELECT time_bucket(INTERVAL '5 minutes', TIMESTAMP '2024-01-01 10:07:00', TIMESTAMP '2024-01-01 00:01:00'),"
    " time_bucket(INTERVAL '1 hour', CAST(NULL AS TIMESTAMP))",
    tsfmt=naive,
    comment="An origin at 00:01 gives buckets at :01, :06, ...; a NULL timestamp gives NULL.",
)

s.section("Errors")
s.error("SELECT time_bucket(INTERVAL '1 hour', v) FROM m", "time_bucket",
        comment="The second argument must be a timestamp.")

s.write()
