"""Paired cold-query A/B for single-groupby-1-8-1 (docs/benchmarks.md, session 15).

Two servers on copies of the same data listen on PostgreSQL ports 25433 (A) and 25434 (B).
Each round draws a new query (8 hosts, one hour) and runs it on both, alternating which goes
first, so both read row groups no query has touched. Usage: ab_pair.py ROUNDS SEED."""
import psycopg, time, random, sys, statistics, datetime
N=int(sys.argv[1]); random.seed(int(sys.argv[2]))
def q():
    hosts=random.sample(range(4000),8); start=1451606400+random.randint(0,86400-3600)
    s=datetime.datetime.utcfromtimestamp(start).isoformat()+"Z"; e=datetime.datetime.utcfromtimestamp(start+3600).isoformat()+"Z"
    w=" OR ".join("hostname = 'host_%d'"%h for h in hosts)
    return f"SELECT date_trunc('minute', time) AS minute, max(usage_user) AS max_usage_user FROM cpu WHERE ({w}) AND time >= '{s}' AND time < '{e}' GROUP BY minute ORDER BY minute ASC"
c={p:psycopg.connect(f"host=127.0.0.1 port={p} dbname=benchmark user=postgres", autocommit=True).cursor() for p in (25433,25434)}
for cur in c.values(): cur.execute("SELECT 1"); cur.fetchall()
# warm the plan path once on each
w=q()
for cur in c.values():
    for _ in range(3): cur.execute(w); cur.fetchall()
t={25433:[],25434:[]}
for i in range(N):
    x=q(); order=(25433,25434) if i%2==0 else (25434,25433)
    for p in order:
        t0=time.perf_counter(); c[p].execute(x); c[p].fetchall(); t[p].append((time.perf_counter()-t0)*1000)
a,b=t[25433],t[25434]
print("A mean %.3f median %.3f | B mean %.3f median %.3f | B/A median of ratios %.3f" % (statistics.mean(a),statistics.median(a),statistics.mean(b),statistics.median(b),statistics.median([y/x for x,y in zip(a,b)])))
