//! SQL clients end to end: the SQL that PostgreSQL and TimescaleDB tools send unmodified
//! (psycopg), the statements Grafana's PostgreSQL data source sends, pgJDBC with the extended
//! protocol and parameters (java), and SCRAM-SHA-256 password authentication (psql, psycopg).

mod common;

use std::process::Command;

use common::{Server, pgjdbc_jar, post, python};

/// Two hosts, one point a minute for ten minutes from 2016-01-01 20:10:00 UTC.
fn load_cpu(s: &Server) {
    let base = 1_451_679_000i64; // 2016-01-01T20:10:00Z
    let mut lines = String::new();
    for i in 0..10 {
        for (h, off) in [("a", 0.0), ("b", 100.0)] {
            lines.push_str(&format!(
                "cpu,host={h},region=eu usage={} {}\n",
                off + i as f64,
                base + i * 60
            ));
        }
    }
    let (code, answer) = post(&s.url("/write?db=ts&precision=s"), &lines);
    assert_eq!(code, "204", "{answer}");
}

/// Runs each statement with psycopg (extended protocol) and prints its rows, one
/// `|`-joined line per row, statements separated by `--`.
const RUN_ALL: &str = r#"
import sys, json, psycopg
stmts = json.loads(sys.argv[2])
with psycopg.connect(host="127.0.0.1", port=int(sys.argv[1]), dbname="ts", user="tempora", autocommit=True) as c:
    for s in stmts:
        try:
            rows = c.execute(s).fetchall()
        except Exception as e:
            print("FAILED", s, "->", e)
            continue
        for r in rows:
            print("|".join(x.isoformat() if hasattr(x, "isoformat") else str(x) for x in r))
        print("--")
"#;

/// Runs every case and reports every mismatch at once.
fn check_all(s: &Server, cases: &[(&str, &str, &str)]) {
    let stmts: Vec<&str> = cases.iter().map(|c| c.1).collect();
    let got = run_all(s, &stmts);
    let wrong: Vec<String> = cases
        .iter()
        .zip(&got)
        .filter(|((_, _, want), got)| got != want)
        .map(|((name, _, want), got)| format!("{name}: got {got:?}, want {want:?}"))
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

fn run_all(s: &Server, stmts: &[&str]) -> Vec<String> {
    let out = python(
        RUN_ALL,
        &[&s.pg.to_string(), &serde_json::to_string(stmts).unwrap()],
    );
    assert!(!out.contains("FAILED"), "{out}");
    out.split("--\n").map(String::from).collect()
}

#[test]
fn timescaledb_style_sql_runs_unmodified() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    load_cpu(&s);
    let cases: &[(&str, &str, &str)] = &[
        (
            "DISTINCT ON: latest point per host",
            "SELECT DISTINCT ON (host) host, time, usage FROM cpu ORDER BY host, time DESC",
            "a|2016-01-01T20:19:00+00:00|9.0\nb|2016-01-01T20:19:00+00:00|109.0\n",
        ),
        (
            // PostgreSQL types this timestamptz; DataFusion's to_timestamp gives a timestamp
            // without zone, whose value is UTC.
            "to_timestamp of an integer epoch rounded to 5 minutes",
            "SELECT to_timestamp(((extract(epoch from time)::int)/300)*300) AS t, count(*) \
             FROM cpu GROUP BY 1 ORDER BY 1",
            "2016-01-01T20:10:00|10\n2016-01-01T20:15:00|10\n",
        ),
        (
            "a timestamp literal with a +0000 offset",
            "SELECT count(*) FROM cpu WHERE time > '2016-01-01 20:16:22.646325 +0000'",
            "6\n",
        ),
        (
            "a CTE joined back to the table",
            "WITH last AS (SELECT host, max(time) AS t FROM cpu GROUP BY host) \
             SELECT c.host, c.usage FROM cpu c JOIN last l ON c.host = l.host AND c.time = l.t \
             ORDER BY c.host",
            "a|9.0\nb|109.0\n",
        ),
        (
            "now() and interval arithmetic",
            "SELECT count(*) FROM cpu WHERE time < now() AND time > now() - interval '100 years'",
            "20\n",
        ),
        (
            "time_bucket with a string width",
            "SELECT time_bucket('5 minutes', time) AS b, avg(usage) FROM cpu \
             WHERE host = 'a' GROUP BY b ORDER BY b",
            "2016-01-01T20:10:00+00:00|2.0\n2016-01-01T20:15:00+00:00|7.0\n",
        ),
        (
            "time_bucket of a week starts on Monday",
            "SELECT time_bucket(INTERVAL '1 week', time) AS b, count(*) FROM cpu GROUP BY b",
            "2015-12-28T00:00:00+00:00|20\n",
        ),
        (
            "time_bucket with an origin",
            "SELECT time_bucket(INTERVAL '10 minutes', time, TIMESTAMP '2016-01-01 20:05:00') AS b, \
             count(*) FROM cpu GROUP BY b ORDER BY b",
            "2016-01-01T20:05:00+00:00|10\n2016-01-01T20:15:00+00:00|10\n",
        ),
        (
            "SAMPLE BY over the extended protocol",
            "SELECT host, time, avg(usage) FROM cpu WHERE host = 'b' SAMPLE BY 5m",
            "b|2016-01-01T20:10:00+00:00|102.0\nb|2016-01-01T20:15:00+00:00|107.0\n",
        ),
        (
            "date_bin keeps working",
            "SELECT date_bin(INTERVAL '10 minutes', time) AS b, count(*) FROM cpu GROUP BY b",
            "2016-01-01T20:10:00+00:00|20\n",
        ),
    ];
    check_all(&s, cases);
    // And over the simple protocol (psql), with its errors.
    assert_eq!(
        s.psql("ts", "SELECT region, count(*) FROM cpu SAMPLE BY 1h"),
        "eu,20\n"
    );
    assert_eq!(
        s.psql(
            "ts",
            "SELECT time, max(usage) AS m FROM cpu WHERE host = 'a' \
             AND time >= '2016-01-01T20:08:00Z' AND time < '2016-01-01T20:30:00Z' \
             SAMPLE BY 5m FILL(PREV)"
        ),
        "2016-01-01 20:05:00.000000+00,\n2016-01-01 20:10:00.000000+00,4\n\
         2016-01-01 20:15:00.000000+00,9\n2016-01-01 20:20:00.000000+00,9\n\
         2016-01-01 20:25:00.000000+00,9\n"
    );
    let out = s.psql_output(
        "ts",
        "SELECT time, avg(usage) FROM cpu SAMPLE BY 1m ALIGN TO FIRST OBSERVATION",
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("only ALIGN TO CALENDAR"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    s.stop();
}

#[test]
fn grafana_postgres_data_source_statements_run() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    load_cpu(&s);
    // What Grafana sends: the connection test, the query builder's table and column lists,
    // and a time series panel with its macros expanded ($__timeGroupAlias, $__timeFilter).
    let cases: &[(&str, &str, &str)] = &[
        ("connection test", "SELECT 1", "1\n"),
        (
            "table list",
            "SELECT quote_ident(table_name) AS \"table\" FROM information_schema.tables \
             WHERE table_schema NOT IN ('information_schema', 'pg_catalog') \
             AND table_type = 'BASE TABLE' ORDER BY 1",
            "cpu\n",
        ),
        (
            "column list",
            "SELECT quote_ident(column_name) AS \"column\", data_type AS \"type\" \
             FROM information_schema.columns WHERE quote_ident(table_name) = 'cpu' \
             ORDER BY ordinal_position",
            // Tags, then time, then fields, as the table stores them.
            "host|text\nregion|text\ntime|timestamp with time zone\nusage|double precision\n",
        ),
        (
            "time series panel",
            "SELECT floor(extract(epoch from time)/300)*300 AS \"time\", host AS metric, \
             avg(usage) AS value FROM cpu \
             WHERE time BETWEEN '2016-01-01T20:00:00Z' AND '2016-01-01T20:14:59Z' \
             GROUP BY 1, 2 ORDER BY 1, 2",
            "1451679000.0|a|2.0\n1451679000.0|b|102.0\n",
        ),
        (
            "unix epoch filter",
            "SELECT count(*) FROM cpu WHERE time >= to_timestamp(1451679000) \
             AND time <= to_timestamp(1451679299)",
            "10\n",
        ),
    ];
    check_all(&s, cases);
    s.stop();
}

const JDBC_PROGRAM: &str = r#"
import java.sql.*;
public class Jdbc {
    public static void main(String[] a) throws Exception {
        String url = "jdbc:postgresql://127.0.0.1:" + a[0] + "/ts";
        try (Connection c = DriverManager.getConnection(url, "tempora", a.length > 1 ? a[1] : "")) {
            try (PreparedStatement p = c.prepareStatement(
                    "SELECT host, usage, time FROM cpu WHERE usage > ? AND host = ? ORDER BY time LIMIT 3")) {
                p.setDouble(1, 104.5);
                p.setString(2, "b");
                try (ResultSet r = p.executeQuery()) {
                    while (r.next()) {
                        System.out.println(r.getString(1) + " " + r.getDouble(2) + " "
                            + r.getTimestamp(3).toInstant());
                    }
                }
            }
            try (Statement st = c.createStatement();
                 ResultSet r = st.executeQuery("SELECT count(*) FROM cpu")) {
                r.next();
                System.out.println("count " + r.getLong(1));
            }
            System.out.println("product " + c.getMetaData().getDatabaseProductName());
        }
    }
}
"#;

#[test]
fn pgjdbc_runs_prepared_statements_with_parameters() {
    let jar = pgjdbc_jar();
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    load_cpu(&s);
    let src = dir.path().join("Jdbc.java");
    std::fs::write(&src, JDBC_PROGRAM).unwrap();
    let out = Command::new("java")
        .arg("-cp")
        .arg(&jar)
        .arg(&src)
        .arg(s.pg.to_string())
        .output()
        .expect("java is installed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout,
        "b 105.0 2016-01-01T20:15:00Z\nb 106.0 2016-01-01T20:16:00Z\nb 107.0 2016-01-01T20:17:00Z\n\
         count 20\nproduct PostgreSQL\n"
    );
    s.stop();
}

#[test]
fn a_set_password_is_required_with_scram_sha_256() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start_with(dir.path(), &[("TEMPORA_PG_PASSWORD", "s3cret pass")]);
    load_cpu(&s);
    // psql with the right password (SCRAM: the password never crosses the wire).
    assert_eq!(s.psql("ts", "SELECT count(*) FROM cpu"), "20\n");
    // Wrong password, wrong user, no password: refused, and the server stays up.
    let attempt = |user: &str, password: Option<&str>| {
        let mut cmd = Command::new("psql");
        cmd.args(["-h", "127.0.0.1", "-p", &s.pg.to_string(), "-d", "ts"])
            .args(["-U", user, "-w", "-X", "-A", "-t", "-c", "SELECT 1"])
            .env_remove("PGPASSWORD");
        if let Some(p) = password {
            cmd.env("PGPASSWORD", p);
        }
        cmd.output().unwrap()
    };
    for (name, user, password, want) in [
        (
            "wrong password",
            "tempora",
            Some("nope"),
            "password authentication failed",
        ),
        (
            "unknown user",
            "mallory",
            Some("s3cret pass"),
            "password authentication failed",
        ),
        ("no password", "tempora", None, "no password supplied"),
    ] {
        let out = attempt(user, password);
        let err = String::from_utf8_lossy(&out.stderr).to_lowercase();
        assert!(!out.status.success(), "{name}: accepted");
        assert!(err.contains(want), "{name}: {err}");
    }
    let out = attempt("tempora", Some("s3cret pass"));
    assert!(out.status.success());
    // psycopg negotiates SCRAM-SHA-256 too.
    let got = python(
        "import sys, psycopg\n\
         with psycopg.connect(host='127.0.0.1', port=int(sys.argv[1]), dbname='ts', user='tempora', password=sys.argv[2]) as c:\n    \
         print(c.execute('SELECT max(usage) FROM cpu').fetchone()[0])\n    \
         print(c.info.parameter_status('TimeZone'))",
        &[&s.pg.to_string(), "s3cret pass"],
    );
    assert_eq!(got, "109.0\nUTC\n");
    assert_eq!(distinct_backend_pids(&s, "s3cret pass"), "3\n");
    // And pgJDBC.
    let src = dir.path().join("Jdbc.java");
    std::fs::write(&src, JDBC_PROGRAM).unwrap();
    let out = Command::new("java")
        .arg("-cp")
        .arg(pgjdbc_jar())
        .arg(&src)
        .args([&s.pg.to_string(), "s3cret pass"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("count 20"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(s.healthy());
    s.stop();
}

/// Opens three psycopg connections at once and prints how many distinct backend process ids
/// they were given (the id a cancel request names).
fn distinct_backend_pids(s: &Server, password: &str) -> String {
    python(
        "import sys, psycopg\n\
         cs = [psycopg.connect(host='127.0.0.1', port=int(sys.argv[1]), dbname='ts', user='tempora', password=sys.argv[2] or None) for _ in range(3)]\n\
         print(len({c.info.backend_pid for c in cs}))",
        &[&s.pg.to_string(), password],
    )
}

#[test]
fn timestamps_reach_python_in_utc() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    load_cpu(&s);
    // The session's zone is reported as `UTC`, so psycopg gives each timestamptz Python's
    // fixed UTC zone (any other name gets a zoneinfo zone, slower to convert into), in text
    // and in binary, from the fast path and from DataFusion.
    let got = python(
        "import sys, datetime, psycopg\n\
         with psycopg.connect(host='127.0.0.1', port=int(sys.argv[1]), dbname='ts', user='tempora') as c:\n    \
         print(c.info.parameter_status('TimeZone'))\n    \
         for binary in (False, True):\n        \
         for q in ('SELECT time FROM cpu ORDER BY time LIMIT 1', \
                   'SELECT max(time) AS t FROM cpu WHERE usage + 0 > 0'):\n            \
         t = c.cursor(binary=binary).execute(q).fetchone()[0]\n            \
         print(t.tzinfo is datetime.timezone.utc, t.isoformat())",
        &[&s.pg.to_string()],
    );
    let lines: Vec<&str> = got.lines().collect();
    assert_eq!(lines[0], "UTC", "{got}");
    assert_eq!(lines.len(), 5, "{got}");
    for l in &lines[1..] {
        assert!(l.starts_with("True 20"), "not UTC: {got}");
        assert!(l.ends_with("+00:00"), "{got}");
    }
    assert_eq!(distinct_backend_pids(&s, ""), "3\n");
    s.stop();
}

#[test]
fn deletes_over_both_protocols_are_kept_through_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    load_cpu(&s);
    // psql (simple protocol): host a's first five minutes.
    let n = s.psql(
        "ts",
        "DELETE FROM cpu WHERE host = 'a' AND time < '2016-01-01T20:15:00Z'",
    );
    assert_eq!(n.trim(), "DELETE 5", "PostgreSQL's command tag");
    // HTTP: the last minute of every host.
    let v = s.sql_json("ts", "DELETE FROM cpu WHERE time >= '2016-01-01T20:19:00Z'");
    assert_eq!(v["rows"][0][0], 2, "{v}");
    // Refused deletes name the reason and change nothing (HTTP 400, SQLSTATE over psycopg).
    let (code, body) = post(
        &s.url("/api/v1/sql?db=ts"),
        "DELETE FROM cpu WHERE usage > 100",
    );
    assert_eq!(code, "400", "{body}");
    assert!(body.contains("is a field"), "{body}");
    let out = python(
        r#"
import sys, psycopg
c = psycopg.connect(host="127.0.0.1", port=int(sys.argv[1]), dbname="ts", user="tempora", autocommit=True)
for q in ["DELETE FROM cpu WHERE time < '2016-01-01T20:12:00Z' OR host = 'b'",
          "DELETE FROM nope WHERE host = 'a'"]:
    try:
        c.execute(q)
        print("no error")
    except psycopg.Error as e:
        print(e.sqlstate, str(e).splitlines()[0])
# PostgreSQL's answer to a DELETE: a command tag with the row count, no rows.
print(c.execute("DELETE FROM cpu WHERE host IN ('b') AND time BETWEEN '2016-01-01T20:10:00Z' AND '2016-01-01T20:10:00Z'").rowcount)
"#,
        &[&s.pg.to_string()],
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(
        lines[0].starts_with("0A000") && lines[0].contains("inside OR"),
        "{out}"
    );
    assert!(lines[1].starts_with("42P01"), "{out}");
    assert_eq!(lines[2], "1", "{out}");
    let want = "a,4\nb,8\n";
    let q = "SELECT host, count(*) FROM cpu GROUP BY host ORDER BY host";
    assert_eq!(s.psql("ts", q), want);
    s.kill9();
    let s = Server::start(dir.path());
    assert_eq!(s.psql("ts", q), want, "after kill -9");
}

/// Runs each query three ways over the extended protocol: as written with text results, as
/// written with binary results (both without parameters: the server executes those plans
/// itself, crates/server/src/pg.rs `run_plan`), and with its literal 1 bound as a parameter
/// (datafusion-postgres executes those). Prints one line per query with the three row lists,
/// then runs a query that fails while it executes and one more after it on the same connection.
const THREE_WAYS: &str = r#"
import sys, json, psycopg
qs = json.loads(sys.argv[2])
with psycopg.connect(host="127.0.0.1", port=int(sys.argv[1]), dbname="ts", user="tempora", autocommit=True) as c:
    for q in qs:
        text = c.execute(q.replace("{one}", "1")).fetchall()
        binary = c.cursor(binary=True).execute(q.replace("{one}", "1")).fetchall()
        param = c.execute(q.replace("{one}", "%s::BIGINT"), (1,)).fetchall()
        print(json.dumps([text == binary == param, len(text), repr(text)]))
    try:
        c.execute("SELECT CAST(host AS BIGINT) FROM cpu").fetchall()
        print("no error")
    except psycopg.Error as e:
        print("error", e.sqlstate, str(e).splitlines()[0])
    print(c.execute("SELECT count(*) FROM cpu").fetchone()[0])
"#;

#[test]
fn extended_protocol_queries_answer_alike_in_text_binary_and_with_parameters() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    load_cpu(&s);
    let queries = [
        "SELECT host, time, usage FROM cpu WHERE usage > {one} ORDER BY host, time",
        "SELECT host, count(*) AS n, avg(usage) AS a, max(time) AS t FROM cpu \
         WHERE usage >= {one} GROUP BY host ORDER BY host",
        "SELECT date_trunc('minute', time) AS m, max(usage) AS mx FROM cpu \
         WHERE host = 'b' AND {one} = 1 GROUP BY m ORDER BY m DESC LIMIT 3",
        "SELECT DISTINCT ON (host) host, time, usage FROM cpu WHERE {one} = 1 \
         ORDER BY host, time DESC",
        "SELECT host, usage FROM cpu WHERE usage > 1000 + {one}",
        // The fast path's shapes (text and binary run it; the parameter goes to DataFusion).
        "SELECT date_trunc('minute', time) AS m, max(usage) AS mx, avg(usage) AS a FROM cpu \
         WHERE host = 'b' GROUP BY m ORDER BY m DESC LIMIT {one}",
        "SELECT DISTINCT ON (host) host, time, usage FROM cpu ORDER BY host, time DESC \
         LIMIT {one}",
    ];
    let out = python(
        THREE_WAYS,
        &[&s.pg.to_string(), &serde_json::to_string(&queries).unwrap()],
    );
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), queries.len() + 2, "{out}");
    let rows: Vec<u64> = lines[..queries.len()]
        .iter()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            assert_eq!(v[0], true, "text, binary and parameter rows differ: {l}");
            v[1].as_u64().unwrap()
        })
        .collect();
    assert_eq!(rows, [18, 2, 3, 2, 0, 1, 1], "{out}");
    assert!(
        lines[queries.len()].starts_with("error "),
        "a failing execution is an error: {out}"
    );
    assert_eq!(
        lines[queries.len() + 1],
        "20",
        "the connection still works: {out}"
    );
    s.stop();
}
