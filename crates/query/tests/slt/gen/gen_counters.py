import os
from lib import Slt, ts, NS, dtm

s = Slt(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "counters.slt"),
    """increase(v [, ts]), rate(v [, ts]), delta(v [, ts]) over each group's points in time order.
increase: the counter's growth, a drop being a reset (the value after it is all growth);
rate: increase per second between the group's first and last point; delta: last minus first.
NULL values are skipped; fewer than two points give NULL. Results are DOUBLE.""",
)


def counters(kinds, field, groups=("host",), where=lambda r: True, bucket=None):
    """Reference: per group (and bucket), sorted by time, the documented formulas."""
    def run(store):
        g = {}
        for r in store.records("net"):
            if not where(r) or r[field] is None:
                continue
            key = tuple(r[c] for c in groups)
            if bucket:
                key += (dtm(bucket(r["time"])),)
            g.setdefault(key, []).append((r["time"], float(r[field])))
        # groups with rows but no non-NULL value still appear
        for r in store.records("net"):
            if where(r):
                key = tuple(r[c] for c in groups) + ((dtm(bucket(r["time"])),) if bucket else ())
                g.setdefault(key, [])
        out = []
        for key in sorted(g):
            pts = sorted(g[key])
            vals = []
            for k in kinds:
                if len(pts) < 2:
                    vals.append(None)
                    continue
                inc = 0.0
                for (t0, a), (t1, b) in zip(pts, pts[1:]):
                    inc += b - a if b >= a else b
                if k == "increase":
                    vals.append(inc)
                elif k == "rate":
                    vals.append(inc / ((pts[-1][0] - pts[0][0]) / NS))
                else:
                    vals.append(pts[-1][1] - pts[0][1])
            out.append(tuple(key) + tuple(vals))
        return out
    return run


s.section("Data")
cols = ["time", "host", "bytes", "temp"]
s.insert("net", cols, [
    ("2024-01-01T00:00:00Z", "a", 100, 20.5),
    ("2024-01-01T00:00:10Z", "a", 150, None),
    ("2024-01-01T00:00:30Z", "a", 999, None),
    ("2024-01-01T23:59:50Z", "b", 5, None),
    ("2024-01-01T00:00:00Z", "d", 7, None),
    ("2024-01-01T00:01:00Z", "d", 7, None),
    ("2024-01-01T00:00:00Z", "e", 1, None),
], comment="bytes is a counter (BIGINT), temp a gauge (DOUBLE).")
s.insert("net", cols, [("2024-01-01T00:00:00Z", "e", 10, None)],
         comment="e at 00:00:00 again before the flush: 10 replaces 1.")
s.flush()
s.insert("net", cols, [
    ("2024-01-01T00:00:50Z", "a", 30, 18.0),
    ("2024-01-01T00:00:20Z", "a", 20, None),
    ("2024-01-01T00:00:30Z", "a", 50, None),
    ("2024-01-01T00:00:40Z", "a", 10, None),
    ("2024-01-02T00:00:10Z", "b", 25, None),
    ("2024-01-01T00:00:05Z", "c", 42, None),
    ("2024-01-01T00:00:10Z", "e", None, 1.0),
    ("2024-01-01T00:00:20Z", "e", 30, None),
], comment="""In the memtable, out of order: a resets twice (150 -> 20 and 50 -> 10); a at 00:00:30
replaces the flushed 999 with 50; b's second point is past midnight (another partition);
c is a single point; e has a row without bytes.""")

s.section("Per group")
s.query(
    "TRRR",
    "SELECT host, increase(bytes), rate(bytes), delta(bytes) FROM net GROUP BY host ORDER BY host",
    counters(["increase", "rate", "delta"], "bytes"),
    comment="""a: 100, 150, 20, 50, 10, 30 -> +50, reset +20, +30, reset +10, +20 = 130 over 50 s = 2.6;
delta 30 - 100 = -70. b: +20 over 20 s across midnight. c: one point, NULL. d: flat, 0.
e: 10, 30 (the NULL skipped, not a reset to zero) -> 20 over 20 s.""",
)
s.query(
    "TRRR",
    "SELECT host, increase(bytes, time), rate(bytes, time), delta(bytes, time)\n"
    "FROM net GROUP BY host ORDER BY host",
    counters(["increase", "rate", "delta"], "bytes"),
    comment="The two-argument form with time is the same.",
)
s.query(
    "TR",
    "SELECT host, delta(temp) FROM net GROUP BY host ORDER BY host",
    counters(["delta"], "temp"),
    comment="A gauge: a's temp goes 20.5 -> 18.0; e has one reading; the others none.",
)

s.section("Per bucket, and time ranges")
s.query(
    "TRRR",
    "SELECT date_bin(INTERVAL '30 seconds', time) AS b, increase(bytes), rate(bytes), delta(bytes)\n"
    "FROM net WHERE host = 'a' GROUP BY b ORDER BY b",
    counters(["increase", "rate", "delta"], "bytes", groups=(), where=lambda r: r["host"] == "a",
             bucket=lambda t: t - t % (30 * NS)),
    comment="""Each bucket on its own points: 00:00 has 100, 150, 20 (+50, reset +20 = 70 over 20 s);
00:30 has 50, 10, 30 (reset +10, +20 = 30 over 20 s).""",
    tsfmt=None,
)
s.query(
    "RRR",
    "SELECT increase(bytes), rate(bytes), delta(bytes) FROM net\n"
    "WHERE host = 'a' AND time >= '2024-01-01T00:00:10Z' AND time <= '2024-01-01T00:00:30Z'",
    counters(["increase", "rate", "delta"], "bytes", groups=(),
             where=lambda r: r["host"] == "a" and ts("2024-01-01T00:00:10Z") <= r["time"] <= ts("2024-01-01T00:00:30Z")),
    comment="150, 20, 50: reset +20, +30 = 50 over 20 s; delta -100.",
)
s.query(
    "TTR",
    "SELECT host, time, increase(bytes) AS inc FROM net WHERE host IN ('a', 'b') SAMPLE BY 1d",
    expect=["a 2024-01-01T00:00:00Z 130.0", "b 2024-01-01T00:00:00Z NULL", "b 2024-01-02T00:00:00Z NULL"],
    comment="""In SAMPLE BY 1d: b's two points fall in different days, one point each, so NULL; rows
ordered by time, then host.""",
)

s.section("A single point, empty ranges")
s.query(
    "RRR",
    "SELECT increase(bytes), rate(bytes), delta(bytes) FROM net WHERE host = 'c'",
    expect=["NULL NULL NULL"],
)
s.query(
    "RRR",
    "SELECT increase(bytes), rate(bytes), delta(bytes) FROM net WHERE time > '2030-01-01T00:00:00Z'",
    expect=["NULL NULL NULL"],
    comment="Ungrouped over no rows: NULLs.",
)
s.query(
    "TR",
    "SELECT host, rate(bytes) FROM net WHERE host = 'nobody' GROUP BY host",
    expect=[],
)

s.section("Errors")
s.error("SELECT rate(host) FROM net", "must be numeric")

s.write()
