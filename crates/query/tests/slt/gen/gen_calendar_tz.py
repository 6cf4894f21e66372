import os
from lib import Slt, ts, iso, NS, A, sample, zoned_bucket

s = Slt(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "calendar_tz.slt"),
    """SAMPLE BY ... ALIGN TO CALENDAR TIME ZONE 'zone' follows that zone's local calendar: 1d and 1M
start at local midnight (the day of a DST change has 23 or 25 hours); a width that divides a
day counts from local midnight plus the offset. time in the result is the bucket start in
UTC. Europe/Oslo: CET (+01:00) until 2024-03-31T01:00Z, CEST (+02:00) until
2024-10-27T01:00Z. America/New_York: EST (-05:00) until 2024-03-10T07:00Z, then EDT (-04:00).
Asia/Kolkata: +05:30 all year. Expected rows come from Python's zoneinfo.""",
)

H = 3600


def hourly(first, n, host="a"):
    return [(iso(ts(first) + i * H * NS), host, 1.0) for i in range(n)]


s.section("Data: hourly points around the DST changes; half in files, half in the memtable")
cols = ["time", "host", "v"]
spring = hourly("2024-03-30T20:00:00Z", 28)   # to 2024-03-31T23:00Z
autumn = hourly("2024-10-26T20:00:00Z", 28)   # to 2024-10-27T23:00Z
s.insert("m", cols, spring[:14] + autumn[:14])
s.flush()
s.insert("m", cols, spring[14:] + autumn[14:])
s.insert("m", cols, [("2024-03-31T02:00:00Z", "a", 1.0), ("2024-10-27T00:30:00Z", "b", 1.0)],
         comment="A duplicate of a flushed point (still one row), and one point of host b.")
ny = hourly("2024-03-10T00:00:00Z", 37)        # to 2024-03-11T12:00Z
s.insert("ny", cols, ny[:10])
s.flush()
s.insert("ny", cols, ny[10:])

ALL = lambda r: True
win = lambda a, b: (lambda r: ts(a) <= r["time"] < ts(b))
CNT = [A["count"]]
T = ["time", "#0"]

s.section("1d: local days of 23 and 25 hours")
s.query(
    "TI",
    "SELECT time, count(*) FROM m SAMPLE BY 1d ALIGN TO CALENDAR TIME ZONE 'Europe/Oslo'",
    lambda st: sample(st, "m", zoned_bucket("Europe/Oslo", "day"), T, CNT),
    comment="""Spring: 2024-03-31 local runs from 2024-03-30T23:00Z to 2024-03-31T22:00Z, 23 points.
Autumn: 2024-10-27 local runs from 2024-10-26T22:00Z to 2024-10-27T23:00Z, 25 points plus
host b's 00:30 point.""",
)
s.query(
    "TI",
    "SELECT time, count(*) FROM ny SAMPLE BY 1d ALIGN TO CALENDAR TIME ZONE 'America/New_York'",
    lambda st: sample(st, "ny", zoned_bucket("America/New_York", "day"), T, CNT),
    comment="2024-03-10 in New York: from 05:00Z to 2024-03-11T04:00Z, 23 hours.",
)
s.query(
    "TTI",
    "SELECT host, time, count(*) FROM m WHERE time >= '2024-10-01T00:00:00Z'\n"
    "SAMPLE BY 1d ALIGN TO CALENDAR TIME ZONE 'Asia/Kolkata'",
    lambda st: sample(st, "m", zoned_bucket("Asia/Kolkata", "day"), ["host", "time", "#0"], CNT,
                      where=lambda r: r["time"] >= ts("2024-10-01T00:00:00Z")),
    comment="Kolkata days start at 18:30Z; per host, ordered by time then host.",
)
s.query(
    "TI",
    "SELECT time, count(*) FROM m SAMPLE BY 1M ALIGN TO CALENDAR TIME ZONE 'Europe/Oslo'",
    lambda st: sample(st, "m", zoned_bucket("Europe/Oslo", "month"), T, CNT),
    comment="""Months start at local midnight: April at 2024-03-31T22:00Z (CEST), March at
2024-02-29T23:00Z (CET), October at 2024-09-30T22:00Z.""",
)

s.section("Widths that divide a day, counted from local midnight")
s.query(
    "TI",
    "SELECT time, count(*) FROM m WHERE time >= '2024-03-30T22:00:00Z' AND time < '2024-03-31T03:00:00Z'\n"
    "SAMPLE BY 1h ALIGN TO CALENDAR TIME ZONE 'Europe/Oslo'",
    lambda st: sample(st, "m", zoned_bucket("Europe/Oslo", "sub", H), T, CNT,
                      where=win("2024-03-30T22:00:00Z", "2024-03-31T03:00:00Z")),
    comment="Oslo's offsets are whole hours, so its hours are UTC hours, also across the gap.",
)
s.query(
    "TI",
    "SELECT time, count(*) FROM m WHERE time >= '2024-03-30T00:00:00Z' AND time < '2024-04-01T00:00:00Z'\n"
    "SAMPLE BY 6h ALIGN TO CALENDAR TIME ZONE 'Europe/Oslo'",
    lambda st: sample(st, "m", zoned_bucket("Europe/Oslo", "sub", 6 * H), T, CNT,
                      where=win("2024-03-30T00:00:00Z", "2024-04-01T00:00:00Z")),
    comment="""6h counted from local midnight. 2024-03-31 local starts at 2024-03-30T23:00Z: buckets at
23:00Z, 05:00Z, 11:00Z, 17:00Z, the last cut to 5 hours by the next local midnight (22:00Z),
which starts a new bucket. The 2024-03-30 local day's last bucket starts at 17:00Z.""",
)
s.query(
    "TI",
    "SELECT time, count(*) FROM m WHERE time >= '2024-10-26T20:00:00Z'\n"
    "SAMPLE BY 6h ALIGN TO CALENDAR TIME ZONE 'Europe/Oslo'",
    lambda st: sample(st, "m", zoned_bucket("Europe/Oslo", "sub", 6 * H), T, CNT,
                      where=lambda r: r["time"] >= ts("2024-10-26T20:00:00Z")),
    comment="""The 25-hour day 2024-10-27 starts at 2024-10-26T22:00Z: buckets at 22:00Z, 04:00Z, 10:00Z,
16:00Z and a one-hour bucket at 22:00Z; the next local day starts at 23:00Z.""",
)
s.query(
    "TI",
    "SELECT time, count(*) FROM m WHERE time >= '2024-03-30T20:00:00Z' AND time < '2024-03-31T00:00:00Z'\n"
    "SAMPLE BY 1h ALIGN TO CALENDAR TIME ZONE 'Asia/Kolkata'",
    lambda st: sample(st, "m", zoned_bucket("Asia/Kolkata", "sub", H), T, CNT,
                      where=win("2024-03-30T20:00:00Z", "2024-03-31T00:00:00Z")),
    comment="Kolkata hours start at :30 UTC.",
)
s.query(
    "TI",
    "SELECT time, count(*) FROM m WHERE time >= '2024-03-30T20:00:00Z' AND time < '2024-03-31T02:00:00Z'\n"
    "SAMPLE BY 2h ALIGN TO CALENDAR TIME ZONE 'Europe/Oslo' WITH OFFSET '00:30'",
    lambda st: sample(st, "m", zoned_bucket("Europe/Oslo", "sub", 2 * H, 30 * 60), T, CNT,
                      where=win("2024-03-30T20:00:00Z", "2024-03-31T02:00:00Z")),
    comment="""2h from local midnight + 30 min: local 00:30 CET on 2024-03-31 is 23:30Z; before it the
previous local day's grid (19:30Z, 21:30Z) applies.""",
)

s.section("Time zones in displayed timestamps")
s.query(
    "TT",
    "SELECT time, time AT TIME ZONE 'Europe/Oslo' AS local FROM m\n"
    "WHERE host = 'a' AND time >= '2024-03-31T00:00:00Z' AND time < '2024-03-31T02:00:00Z' ORDER BY time",
    expect=["2024-03-31T00:00:00Z 2024-03-31T01:00:00+01:00", "2024-03-31T01:00:00Z 2024-03-31T03:00:00+02:00"],
    comment="The same instants shown in Oslo time: the local clock jumps from 02:00 to 03:00.",
)

s.section("An empty range")
s.query(
    "TI",
    "SELECT time, count(*) FROM m WHERE time >= '2030-01-01T00:00:00Z'\n"
    "SAMPLE BY 1d ALIGN TO CALENDAR TIME ZONE 'Europe/Oslo'",
    expect=[],
)

s.section("Refusals")
s.error("SELECT time, count(*) FROM m SAMPLE BY 2d ALIGN TO CALENDAR TIME ZONE 'Europe/Oslo'", "must be 1")
s.error("SELECT time, count(*) FROM m SAMPLE BY 1d ALIGN TO CALENDAR TIME ZONE 'Europe/Oslo' WITH OFFSET '01:00'",
        "without an offset")
s.error("SELECT time, count(*) FROM m SAMPLE BY 7h ALIGN TO CALENDAR TIME ZONE 'Europe/Oslo'", "must divide a day")
s.error("SELECT time, count(*) FROM m SAMPLE BY 1h FILL(0) ALIGN TO CALENDAR TIME ZONE 'Europe/Oslo'",
        "FILL with TIME ZONE")
s.error("SELECT time, count(*) FROM m SAMPLE BY 1h ALIGN TO CALENDAR TIME ZONE 'Mars/Olympus'", "unknown time zone")

s.write()
