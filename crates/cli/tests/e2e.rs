//! End to end against the real `tempora` binary: curl writes line protocol over HTTP, psql
//! and psycopg read the same rows over the PostgreSQL port, and the server keeps what it
//! acknowledged across SIGTERM and restart. Needs curl, psql and python3 with psycopg
//! (`.ci/run` installs them).

mod common;

use std::process::Command;

use common::{Server, curl, post};

#[test]
fn curl_writes_psql_and_psycopg_read_and_sigterm_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    let lp = "cpu,host=a\\ 1,region=eu usage=1.5,n=3i 1700000000\n\
              cpu,host=b,region=us usage=2.5 1700000010\n\
              cpu,host=c\\,x,region=us usage=-1 1700000020\n";
    let (code, body) = post(&format!("http://{}/write?db=demo&precision=s", s.http), lp);
    assert_eq!(code, "204", "{body}");
    let rows = s.psql("demo", "SELECT host, region, usage FROM cpu ORDER BY time");
    assert_eq!(rows, "a 1,eu,1.5\nb,us,2.5\nc,x,us,-1\n");
    let py = Command::new("python3")
        .args(["-c", "import sys, psycopg\nwith psycopg.connect(host='127.0.0.1', port=int(sys.argv[1]), dbname='demo', user='tempora') as c:\n    rows = c.execute('SELECT host, usage FROM cpu WHERE usage > %s ORDER BY host', (0.0,)).fetchall()\n    print(rows)", &s.pg.to_string()])
        .output()
        .expect("python3");
    assert!(
        py.status.success(),
        "psycopg: {}",
        String::from_utf8_lossy(&py.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&py.stdout).trim(),
        "[('a 1', 1.5), ('b', 2.5)]"
    );
    let tables = s.psql("demo", "\\dt");
    assert!(tables.contains("cpu"), "\\dt lists the table: {tables}");
    // psql's pattern commands send `OPERATOR(pg_catalog.~)`, which the front door's name
    // check must let through.
    let described = s.psql("demo", "\\d cpu");
    assert!(
        described.contains("time,timestamp with time zone,,not null,"),
        "\\d cpu describes the table: {described}"
    );
    assert!(s.psql("demo", "\\dt c*").contains("cpu"));
    // The REPL's \dt lists this database's tables only; \d shows a table's columns.
    let mut repl = Command::new(env!("CARGO_BIN_EXE_tempora"))
        .args(["sql", "--host", &s.http, "--db", "demo"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    repl.stdin
        .take()
        .unwrap()
        .write_all(b"\\dt\n\\d cpu\nSELECT count(*)\n AS n FROM cpu;\n\\q\n")
        .unwrap();
    let out = repl.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("cpu") && text.contains("usage"), "{text}");
    assert!(
        !text.contains("pg_catalog") && !text.contains("pg_type"),
        "{text}"
    );
    assert!(text.contains("(3 rows)") || text.contains(" 3 "), "{text}");
    // One more SQL statement over HTTP (after the REPL's three); then /metrics shows the writes and both latency histograms.
    let v = s.sql_json("demo", "SELECT count(*) AS n FROM cpu");
    assert!(v.to_string().contains('3'), "{v}");
    let metrics = String::from_utf8(curl(&[&s.url("/metrics")]).stdout).unwrap();
    let value = |name: &str| s.metric(name);
    assert_eq!(value("tempora_ingest_rows_total"), 3.0);
    assert!(value("tempora_ingest_bytes_total") >= lp.len() as f64);
    assert_eq!(
        value("tempora_query_duration_seconds_count{protocol=\"http\"}"),
        4.0
    );
    assert!(value("tempora_query_duration_seconds_count{protocol=\"postgres\"}") >= 3.0);
    assert_eq!(
        value("tempora_query_duration_seconds_bucket{protocol=\"http\",le=\"+Inf\"}"),
        4.0
    );
    assert!(
        value("tempora_wal_commits_total") >= 1.0,
        "WAL syncs are counted"
    );
    for name in [
        "tempora_flushes_total",
        "tempora_compactions_total",
        "tempora_ingest_queue_depth",
        "tempora_ingest_queue_capacity",
        "tempora_memtable_bytes",
    ] {
        value(name);
    }
    assert!(
        metrics.contains("# TYPE tempora_query_duration_seconds histogram"),
        "{metrics}"
    );
    s.stop();
    let s = Server::start(dir.path());
    assert_eq!(s.psql("demo", "SELECT count(*) FROM cpu"), "3\n");
    s.stop();
}
