"""Differential check: each query on Tempora (over PostgreSQL, psycopg) and on DuckDB (from
the same CSV) must give identical rows. Usage: tsbs_diff.py PG_PORT CSV START_ISO
Prints one line per query ("ok <name> <rows>") or ("DIFF <name> ...") and exits 1 on any
difference."""
import datetime as dt
import sys

import duckdb
import psycopg

port, csv, start = sys.argv[1], sys.argv[2], dt.datetime.fromisoformat(sys.argv[3])
FIELDS = ["usage_user", "usage_system", "usage_idle", "usage_nice", "usage_iowait",
          "usage_irq", "usage_softirq", "usage_steal", "usage_guest", "usage_guest_nice"]


def ts(hours=0, minutes=0):
    return "TIMESTAMP '%s'" % (start + dt.timedelta(hours=hours, minutes=minutes)).strftime(
        "%Y-%m-%d %H:%M:%S")


def maxes(names):
    return ", ".join(f"max({f}) AS max_{f}" for f in names)


def avgs(names):
    return ", ".join(f"avg({f}) AS avg_{f}" for f in names)


# (name, Tempora SQL, DuckDB SQL or None when it is the same text)
T0, T1 = ts(1), ts(2)
QUERIES = [
    # The TSBS cpu-only query types.
    ("lastpoint",
     "SELECT DISTINCT ON (hostname) hostname, time, usage_user FROM cpu "
     "ORDER BY hostname, time DESC", None),
    ("single-groupby-1-1-1",
     f"SELECT date_trunc('minute', time) AS minute, max(usage_user) AS m FROM cpu "
     f"WHERE hostname IN ('host_3') AND time >= {T0} AND time < {T1} "
     "GROUP BY minute ORDER BY minute", None),
    ("single-groupby-5-8-1",
     f"SELECT date_trunc('minute', time) AS minute, {maxes(FIELDS[:5])} FROM cpu "
     f"WHERE hostname IN ('host_1','host_2','host_3','host_5','host_8','host_9','host_11','host_13') "
     f"AND time >= {T0} AND time < {T1} GROUP BY minute ORDER BY minute", None),
    ("double-groupby-1",
     f"SELECT date_trunc('hour', time) AS hour, hostname, avg(usage_user) AS a FROM cpu "
     f"WHERE time >= {ts(0)} AND time < {ts(5)} GROUP BY hour, hostname ORDER BY hour, hostname",
     None),
    ("double-groupby-all",
     f"SELECT date_trunc('hour', time) AS hour, hostname, {avgs(FIELDS)} FROM cpu "
     f"WHERE time >= {ts(0)} AND time < {ts(5)} GROUP BY hour, hostname ORDER BY hour, hostname",
     None),
    ("high-cpu-1",
     f"SELECT hostname, time, usage_user, usage_system FROM cpu WHERE usage_user > 55 "
     f"AND time >= {ts(0)} AND time < {ts(4)} AND hostname IN ('host_5') ORDER BY time", None),
    ("high-cpu-all",
     f"SELECT hostname, time, usage_user FROM cpu WHERE usage_user > 60 "
     f"AND time >= {ts(0)} AND time < {ts(4)} ORDER BY hostname, time", None),
    ("cpu-max-all-1",
     f"SELECT date_trunc('hour', time) AS hour, {maxes(FIELDS)} FROM cpu "
     f"WHERE hostname IN ('host_7') AND time >= {ts(0)} AND time < {ts(4)} "
     "GROUP BY hour ORDER BY hour", None),
    ("groupby-orderby-limit",
     f"SELECT date_trunc('minute', time) AS minute, max(usage_user) AS m FROM cpu "
     f"WHERE time < {ts(3, 17)} GROUP BY minute ORDER BY minute DESC LIMIT 5", None),
    # The monitoring shapes and Tempora's spellings of them.
    ("avg per region every 10 minutes",
     f"SELECT region, time_bucket(INTERVAL '10 minutes', time) AS b, avg(usage_user) AS a "
     f"FROM cpu WHERE time >= {ts(1)} AND time < {ts(5)} GROUP BY region, b ORDER BY region, b",
     None),
    ("SAMPLE BY 10m per region",
     f"SELECT region, time, avg(usage_user) AS a FROM cpu WHERE time >= {ts(1)} "
     f"AND time < {ts(5)} SAMPLE BY 10m",
     f"SELECT region, time_bucket(INTERVAL '10 minutes', time) AS time, avg(usage_user) AS a "
     f"FROM cpu WHERE time >= {ts(1)} AND time < {ts(5)} GROUP BY ALL ORDER BY time, region"),
    ("LATEST ON",
     "SELECT hostname, time, usage_idle FROM cpu LATEST ON time PARTITION BY hostname "
     "ORDER BY hostname",
     "SELECT DISTINCT ON (hostname) hostname, time, usage_idle FROM cpu "
     "ORDER BY hostname, time DESC"),
    ("latest of all, LIMIT 1",
     "SELECT hostname, time, usage_user FROM cpu WHERE region = 'eu-west-1' "
     "ORDER BY time DESC, hostname LIMIT 1", None),
    ("last and first by host",
     "SELECT hostname, last(usage_user) AS l, first(usage_system, time) AS f FROM cpu "
     "GROUP BY hostname ORDER BY hostname",
     "SELECT hostname, arg_max(usage_user, time) AS l, arg_min(usage_system, time) AS f "
     "FROM cpu GROUP BY hostname ORDER BY hostname"),
    ("tag regex, OR, NOT IN, LIKE",
     f"SELECT hostname, count(*) AS n, sum(usage_user) AS s FROM cpu WHERE "
     f"(hostname ~ '^host_1' OR region = 'us-west-2') AND hostname NOT IN ('host_10') "
     f"AND datacenter NOT LIKE '%b' AND time >= {ts(2)} GROUP BY hostname ORDER BY hostname",
     f"SELECT hostname, count(*) AS n, sum(usage_user) AS s FROM cpu WHERE "
     f"(regexp_matches(hostname, '^host_1') OR region = 'us-west-2') AND hostname NOT IN ('host_10') "
     f"AND datacenter NOT LIKE '%b' AND time >= {ts(2)} GROUP BY hostname ORDER BY hostname"),
    ("count per os and hour, all data",
     "SELECT os, date_trunc('hour', time) AS h, count(*) AS n, min(usage_idle) AS lo "
     "FROM cpu GROUP BY os, h ORDER BY os, h", None),
]


def norm(v):
    if isinstance(v, dt.datetime):
        return v.replace(tzinfo=None).isoformat()
    if isinstance(v, float):
        return float("%.9g" % v)
    if isinstance(v, int):
        return float(v)
    return v


def main():
    duck = duckdb.connect()
    duck.execute(f"""CREATE TABLE cpu AS SELECT make_timestamp(time // 1000) AS time,
        * EXCLUDE (time) FROM read_csv('{csv}', header=true, all_varchar=false,
        types={{'rack': 'VARCHAR', 'service': 'VARCHAR', 'service_version': 'VARCHAR'}})""")
    pg = psycopg.connect(f"host=127.0.0.1 port={port} dbname=benchmark user=tempora",
                         autocommit=True)
    failed = 0
    for name, tempora_sql, duck_sql in QUERIES:
        got = [tuple(map(norm, r)) for r in pg.execute(tempora_sql).fetchall()]
        want = [tuple(map(norm, r)) for r in duck.execute(duck_sql or tempora_sql).fetchall()]
        if got == want and want:
            print(f"ok {name} {len(want)}")
        else:
            failed += 1
            extra = [r for r in got if r not in want][:3]
            missing = [r for r in want if r not in got][:3]
            print(f"DIFF {name}: {len(got)} rows vs DuckDB {len(want)}; "
                  f"extra {extra}; missing {missing}")
    sys.exit(1 if failed else 0)


main()
