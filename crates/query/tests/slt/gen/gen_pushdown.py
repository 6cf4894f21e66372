import os
import re

from lib import Slt

s = Slt(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pushdown.slt"),
    """Tag predicates pushed into the scan (through each region's inverted index) must select exactly
the rows plain SQL semantics select, including SQL's NULL logic for a series without a tag
(dc IS NULL): dc <> 'd1', dc NOT IN (...), dc !~ ..., NOT (dc = 'd1') all drop it.

Each row has a distinct power of two in `bit`, so `count(*), sum(bit)` names the exact set of
rows kept; the comment above each query lists them (host/day). Expected rows: DuckDB over the
same rows, with ~ ~* !~ !~* written as regexp_matches (partial match, as in PostgreSQL).""",
)

D1, D2 = "2024-01-01T10:00:00Z", "2024-01-02T10:00:00Z"
series = [
    ("h1", "r1", None), ("h2", "r1", "d1"), ("h3", "r2", None), ("h4", "r2", "d2"),
    ("H5", "r1", "d1"), ("h10", "r2", None), ("h.x", "r1", "d2"), ("hax", "r2", "d1"),
]
day1 = [x for x in series if x[0] != "h10"]
day2 = [x for x in series if x[0] != "hax"]

s.section("Data: day 1 in files, day 2 in the memtable")
bit = 1
rows1, rows2 = [], []
for h, r, dc in day1:
    rows1.append((D1, h, r, dc, float(len(rows1) + 1), bit)); bit *= 2
s.insert("cpu", ["time", "host", "region", "dc", "v", "bit"], rows1,
         comment="Series without dc: h1, h3, h10. h10 exists on day 2 only, hax on day 1 only.")
s.flush()
for h, r, dc in day2:
    rows2.append((D2, h, r, dc, float(len(rows2) + 11), bit)); bit *= 2
s.insert("cpu", ["time", "host", "region", "dc", "v", "bit"], rows2)
s.insert("cpu", ["time", "host", "region", "dc", "v", "bit"], [(D1, "h1", "r1", None, 100.0, 1)],
         comment="h1's day-1 row again, after the flush: v becomes 100.0 (bit unchanged).")


def duck(sql):
    sql = re.sub(r"(\w+) !~\* '([^']*)'", r"NOT regexp_matches(\1, '\2', 'i')", sql)
    sql = re.sub(r"(\w+) ~\* '([^']*)'", r"regexp_matches(\1, '\2', 'i')", sql)
    sql = re.sub(r"(\w+) !~ '([^']*)'", r"NOT regexp_matches(\1, '\2')", sql)
    sql = re.sub(r"(\w+) ~ '([^']*)'", r"regexp_matches(\1, '\2')", sql)
    sql = re.sub(r"'(\d{4}-\d\d-\d\d)T(\d\d:\d\d:\d\d)Z'", r"TIMESTAMP '\1 \2'", sql)
    return sql


def check(pred):
    con = s.store.duck()
    kept = con.execute(duck(
        f"SELECT host || '/' || strftime(time, '%d') FROM cpu WHERE {pred} ORDER BY host, time")).fetchall()
    names = " ".join(k[0].replace("/0", "/") for k in kept) or "none"
    s.query("II", f"SELECT count(*), sum(bit) FROM cpu WHERE {pred}",
            duck(f"SELECT count(*), sum(bit) FROM cpu WHERE {pred}"), comment=names)


s.section("Rows, to see the data")
s.query("TTTTR", "SELECT host, region, dc, time, v FROM cpu WHERE dc IS NULL ORDER BY host, time",
        duck("SELECT host, region, dc, time, v FROM cpu WHERE dc IS NULL ORDER BY host, time"))
s.query("TTTTR", "SELECT host, region, dc, time, v FROM cpu WHERE dc <> 'd1' ORDER BY host, time",
        duck("SELECT host, region, dc, time, v FROM cpu WHERE dc <> 'd1' ORDER BY host, time"),
        comment="A series without dc is not <> 'd1': NULL is not true.")

s.section("=, <>, IN, NOT IN")
for p in ["host = 'h1'", "host = 'H5'", "host = 'nobody'", "host <> 'h1'",
          "host IN ('h1', 'h2', 'nobody')", "host NOT IN ('h1', 'h2')", "dc = 'd1'", "dc NOT IN ('d1')"]:
    check(p)

s.section("Regular expressions (partial match unless anchored)")
for p in ["host ~ '^h1'", "host ~ 'h.x'", "host ~ '^h[0-9]$'", "host !~ '1'", "host ~* '^h5$'",
          "host !~* '^H'", "dc !~ '1'"]:
    check(p)

s.section("LIKE and ILIKE")
for p in ["host LIKE 'h_'", "host LIKE 'h1%'", "host LIKE 'h.x'", "host ILIKE 'h5'",
          "host NOT LIKE 'h%'", "host NOT ILIKE 'h%'", "dc NOT LIKE 'd1'"]:
    check(p)

s.section("IS NULL, IS NOT NULL")
for p in ["dc IS NULL", "dc IS NOT NULL", "NOT (dc IS NULL)"]:
    check(p)

s.section("AND, OR, NOT")
for p in ["host = 'h1' OR region = 'r2'", "(host = 'h1' OR host = 'h2') AND region = 'r1'",
          "NOT (host = 'h1' OR region = 'r2')", "NOT (dc = 'd1')", "dc IS NULL OR dc <> 'd1'",
          "region = 'r1' AND NOT (dc = 'd1')", "host = 'h1' AND dc = 'd1'",
          "region IN ('r1') AND host NOT IN ('h2') AND dc IS NOT NULL", "host > 'h3'"]:
    check(p)

s.section("With time ranges and field predicates")
for p in ["host = 'h1' AND time >= '2024-01-02T00:00:00Z'",
          "host LIKE 'h%' AND time < '2024-01-02T00:00:00Z'",
          "dc IS NULL AND time BETWEEN '2024-01-01T10:00:00Z' AND '2024-01-02T09:00:00Z'",
          "region = 'r2' AND time = '2024-01-02T10:00:00Z'",
          "host = 'h1' OR v > 15.0",
          "(host = 'h1' AND time < '2024-01-02T00:00:00Z') OR (host = 'h2' AND time >= '2024-01-02T00:00:00Z')",
          "host ~ '^h[0-9]+$' AND v < 12.0 AND time > '2024-01-01T00:00:00Z'",
          "host = 'h1' AND time > '2030-01-01T00:00:00Z'"]:
    check(p)

s.section("After COMPACT")
s.compact()
for p in ["dc IS NULL OR dc <> 'd1'", "host ~* '^h5$' OR host LIKE 'h1_'"]:
    check(p)

s.write()
