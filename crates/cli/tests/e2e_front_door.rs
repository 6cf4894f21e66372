//! The one front door, seen from the clients: every extension statement gives the same answer
//! over HTTP, psql (the simple protocol) and psycopg with a bound parameter (the extended
//! protocol); data definition does what it says on every protocol and survives a restart;
//! a statement Tempora does not run is refused by name.

mod common;

use common::{Server, post, python};

/// Two hosts in two regions, ten minutes each, one minute apart (host b has a gap).
fn load(s: &Server, db: &str) {
    let base = 1_451_679_000i64; // 2016-01-01T20:10:00Z
    let mut lines = String::new();
    for i in 0..10 {
        lines.push_str(&format!(
            "cpu,host=a,region=eu v={} {}\n",
            i as f64 + 0.5,
            base + i * 60
        ));
        if !(3..6).contains(&i) {
            lines.push_str(&format!(
                "cpu,host=b,region=us v={} {}\n",
                i * 10,
                base + i * 60
            ));
        }
    }
    let (code, answer) = post(&s.url(&format!("/write?db={db}&precision=s")), &lines);
    assert_eq!(code, "204", "{answer}");
}

/// For each (statement with `$1`, its value): the rows over HTTP (`params=`), psql (the value
/// written into the text) and psycopg (bound), normalised to text, one JSON line each.
const THREE_PROTOCOLS: &str = r#"
import sys, json, re, subprocess, urllib.request, urllib.parse, datetime, psycopg
http, port, db = sys.argv[1], sys.argv[2], sys.argv[3]
cases = json.loads(sys.argv[4])
ts = re.compile(r"^(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d(?:\.\d+)?)(?:Z|\+00(?::00)?)?$")
def norm(v):
    if v is None: return "NULL"
    if isinstance(v, datetime.datetime): v = v.astimezone(datetime.timezone.utc).replace(tzinfo=None).isoformat()
    if isinstance(v, float): v = repr(v)
    v = str(v)
    m = ts.match(v)
    if m: v = m.group(1) + "T" + re.sub(r"\.0*$", "", m.group(2))
    if re.fullmatch(r"-?\d+\.0", v): v = v[:-2]
    return v
conn = psycopg.connect(host="127.0.0.1", port=int(port), dbname=db, user="tempora", autocommit=True)
for sql, value in cases:
    lit = sql.replace("$1", "'%s'" % value) if value is not None else sql
    q = urllib.parse.urlencode({"db": db, "q": sql, "params": json.dumps([value] if value is not None else [])})
    body = json.loads(urllib.request.urlopen(http + "/api/v1/sql?" + q).read())
    over_http = [[norm(x) for x in r] for r in body["rows"]]
    out = subprocess.run(["psql", "-h", "127.0.0.1", "-p", port, "-d", db, "-U", "tempora", "-X", "-A", "-t",
                          "-F", "\t", "-P", "null=NULL", "-c", lit], capture_output=True, text=True, check=True).stdout
    over_psql = [[norm(x) for x in line.split("\t")] for line in out.splitlines() if line != ""]
    cur = conn.execute(sql.replace("$1", "%s"), [value] if value is not None else None)
    over_psycopg = [[norm(x) for x in r] for r in cur.fetchall()]
    print(json.dumps([over_http, over_psql, over_psycopg]))
"#;

#[test]
fn extension_statements_answer_alike_over_http_psql_and_psycopg() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    load(&s, "fd");
    let w = "time >= '2016-01-01T20:10:00Z' AND time < '2016-01-01T20:20:00Z'";
    let cases: Vec<(String, Option<&str>)> = vec![
        (
            format!("SELECT host, time, avg(v) AS a FROM cpu WHERE host = $1 AND {w} SAMPLE BY 2m"),
            Some("b"),
        ),
        (
            format!(
                "SELECT host, time, max(v) AS m FROM cpu WHERE host = $1 AND {w} SAMPLE BY 1m \
                 FILL(PREV) ORDER BY time DESC LIMIT 6"
            ),
            Some("b"),
        ),
        (
            format!("SELECT time, count(*) AS n FROM cpu WHERE region = $1 AND {w} SAMPLE BY 5m FILL(0)"),
            Some("us"),
        ),
        (
            "SELECT host, time, v FROM cpu WHERE region = $1 LATEST ON time PARTITION BY host".into(),
            Some("eu"),
        ),
        (
            "SELECT * FROM cpu WHERE host <> $1 LATEST ON time PARTITION BY host ORDER BY v DESC LIMIT 1"
                .into(),
            Some("zz"),
        ),
        (
            format!(
                "SELECT date_bin(INTERVAL '5 minutes', time) AS b, host, max(v) AS m FROM cpu \
                 WHERE host = $1 AND {w} GROUP BY 1, 2 ORDER BY 1"
            ),
            Some("a"),
        ),
        (
            format!(
                "SELECT floor(extract(epoch from time)/300)*300 AS t, sum(v) AS s FROM cpu \
                 WHERE host = $1 AND {w} GROUP BY 1 ORDER BY 1"
            ),
            Some("b"),
        ),
        ("SELECT DISTINCT ON (host) host, time, v FROM cpu WHERE time >= $1 ORDER BY host, time DESC".into(),
            Some("2016-01-01T20:15:00Z")),
        ("SHOW TAG VALUES FROM cpu WITH KEY = host".into(), None),
        ("DESCRIBE cpu".into(), None),
        ("SHOW DATABASES".into(), None),
    ];
    let out = python(
        THREE_PROTOCOLS,
        &[
            &format!("http://{}", s.http),
            &s.pg.to_string(),
            "fd",
            &serde_json::to_string(&cases).unwrap(),
        ],
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), cases.len(), "{out}");
    for ((sql, _), line) in cases.iter().zip(&lines) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v[0], v[1], "HTTP and psql differ for {sql}: {line}");
        assert_eq!(v[0], v[2], "HTTP and psycopg differ for {sql}: {line}");
        assert!(
            !v[0].as_array().unwrap().is_empty(),
            "a case with no rows tests little: {sql}"
        );
    }
    // Spot checks that the answers are the right ones, not only alike.
    let rows = |i: usize| serde_json::from_str::<serde_json::Value>(lines[i]).unwrap()[0].clone();
    assert_eq!(
        rows(1).as_array().unwrap().len(),
        6,
        "FILL(PREV) fills b's gap"
    );
    assert_eq!(rows(3).as_array().unwrap().len(), 1, "one host in eu");
    assert_eq!(rows(9)[0][2], "tag", "DESCRIBE names tags");
}

/// The psycopg part of the DDL test: CREATE TABLE declared up front, schema on write beside
/// it, an unsupported statement's SQLSTATE, DROP TABLE.
const PSYCOPG_DDL: &str = r#"
import sys, psycopg
c = psycopg.connect(host="127.0.0.1", port=int(sys.argv[1]), dbname="d1", user="tempora", autocommit=True)
c.execute("CREATE TABLE m (time TIMESTAMP, host TAG, site TEXT, v DOUBLE, n BIGINT, PRIMARY KEY (site))")
print(sorted(tuple(r) for r in c.execute("DESCRIBE m").fetchall()))
try:
    c.execute("CREATE TABLE m (v DOUBLE)")
    print("no error")
except psycopg.Error as e:
    print(e.sqlstate)
c.execute("CREATE TABLE IF NOT EXISTS m (v DOUBLE)")
c.execute("INSERT INTO m (time, host, site, v, n) VALUES ('2024-01-01T00:00:00Z', %s, 's1', 1.5, 2)", ["h1"])
print(c.execute("SELECT host, site, v, n FROM m").fetchall())
for bad in ["UPDATE m SET host = 'x'", "CREATE VIEW w AS SELECT 1", "CREATE TABLE x (v JSON)"]:
    try:
        c.execute(bad)
        print("no error")
    except psycopg.Error as e:
        print(e.sqlstate, str(e).splitlines()[0])
"#;

#[test]
fn data_definition_does_what_it_says_on_every_protocol() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    // HTTP: CREATE DATABASE makes a database that SHOW DATABASES lists and queries can use.
    let (code, body) = post(&s.url("/api/v1/sql"), "CREATE DATABASE d1");
    assert_eq!(code, "200", "{body}");
    let (code, body) = post(&s.url("/api/v1/sql"), "CREATE DATABASE d1");
    assert_eq!(code, "409", "{body}");
    assert!(body.contains("already exists"), "{body}");
    let (code, body) = post(&s.url("/api/v1/sql"), "CREATE DATABASE IF NOT EXISTS d1");
    assert_eq!(code, "200", "{body}");
    let dbs = s.sql_json("public", "SHOW DATABASES").to_string();
    assert!(dbs.contains("\"d1\""), "{dbs}");
    let (code, body) = post(&s.url("/api/v1/sql?db=d1"), "SELECT 1 AS one");
    assert_eq!(code, "200", "{body}");
    // psql: CREATE and DROP DATABASE.
    assert_eq!(
        s.psql("public", "CREATE DATABASE d2").trim(),
        "CREATE DATABASE"
    );
    assert_eq!(s.psql("d2", "SELECT 2").trim(), "2");
    assert_eq!(s.psql("public", "DROP DATABASE d2").trim(), "DROP DATABASE");
    let dbs = s.psql("public", "SHOW DATABASES");
    assert!(dbs.contains("d1") && !dbs.contains("d2"), "{dbs}");
    let out = s.psql_output("public", "DROP DATABASE d2");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("does not exist"),
        "{out:?}"
    );
    assert_eq!(
        s.psql("public", "DROP DATABASE IF EXISTS d2").trim(),
        "DROP DATABASE"
    );
    // psycopg: tables.
    let out = python(PSYCOPG_DDL, &[&s.pg.to_string()]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 6, "{out}");
    assert_eq!(
        lines[0],
        "[('host', 'string', 'tag'), ('n', 'integer', 'field'), ('site', 'string', 'tag'), \
         ('time', 'timestamp', 'time'), ('v', 'float', 'field')]",
        "{out}"
    );
    assert_eq!(lines[1], "42P07", "{out}");
    assert_eq!(lines[2], "[('h1', 's1', 1.5, 2)]", "{out}");
    assert!(
        lines[3].starts_with("0A000") && lines[3].contains("UPDATE"),
        "{out}"
    );
    assert!(
        lines[4].starts_with("0A000") && lines[4].contains("CREATE VIEW"),
        "{out}"
    );
    assert!(lines[5].contains("JSON"), "{out}");
    // Line protocol into the declared table: a type conflict rejects that line only.
    let (code, body) = post(
        &s.url("/write?db=d1"),
        "m,host=h2,site=s2 v=2.5 1704067260000000000\nm,host=h3,site=s2 v=\"text\" 1704067320000000000\n",
    );
    assert_eq!(code, "400", "{body}");
    assert_eq!(s.psql("d1", "SELECT count(*) FROM m").trim(), "2");
    // Everything survives a restart: the catalog is the engine's.
    s.stop();
    let s = Server::start(dir.path());
    let dbs = s.psql("public", "SHOW DATABASES");
    assert!(dbs.contains("d1") && !dbs.contains("d2"), "{dbs}");
    assert_eq!(s.psql("d1", "SELECT count(*) FROM m").trim(), "2");
    assert_eq!(s.psql("d1", "DROP TABLE m").trim(), "DROP TABLE");
    let out = s.psql_output("d1", "SELECT * FROM m");
    assert!(!out.status.success(), "the table is gone");
    // HTTP refuses what Tempora does not run by name, as 400.
    let (code, body) = post(
        &s.url("/api/v1/sql?db=d1"),
        "ALTER TABLE m ADD COLUMN x INT",
    );
    assert_eq!(code, "400", "{body}");
    assert!(body.contains("ALTER takes SET"), "{body}");
    s.stop();
}
