//! Query limits against the real binary: memory (per query and server-wide), timeouts,
//! result rows, PostgreSQL cancel requests and HTTP clients that go away. Each query past
//! a limit fails with a clear answer while ingest goes on, and the server stays healthy.

mod common;

use std::time::{Duration, Instant};

use common::{Server, curl, curl_status, post, python};

/// Runs long (minutes) in constant memory: a count over a generated series.
const SLOW: &str = "SELECT count(*) FROM generate_series(1, 100000000000)";
/// Needs about 100 MB: a hash aggregate over four million distinct keys.
const BIG_GROUP: &str = "SELECT v, count(*) FROM (SELECT value % 4000000 AS v \
                         FROM generate_series(1, 4000000)) GROUP BY v";
/// Needs tens of MB that cannot spill: a hash join's build side of a million rows.
const BIG_JOIN: &str = "SELECT count(*) FROM generate_series(1, 1000000) a \
                        JOIN generate_series(1, 1000000) b ON a.value = b.value";
/// Needs little: a thousand distinct keys.
const SMALL_GROUP: &str = "SELECT count(*) AS n FROM (SELECT v, count(*) FROM \
                           (SELECT value % 1000 AS v FROM generate_series(1, 200000)) GROUP BY v)";
/// The server's per-query limit in the HTTP test: too small even to spill.
const QUERY_LIMIT: usize = 3 << 20;

fn sql_get(s: &Server, params: &str, sql: &str) -> (String, String) {
    let url = s.url(&format!("/api/v1/sql?{params}"));
    curl_status(&["-G", &url, "--data-urlencode", &format!("q={sql}")])
}

#[test]
fn http_queries_past_their_limits_fail_cleanly_while_ingest_continues() {
    let dir = tempfile::tempdir().unwrap();
    let limit = QUERY_LIMIT.to_string();
    let s = Server::start_with(
        dir.path(),
        &[
            ("TEMPORA_QUERY_MEMORY_LIMIT_BYTES", &limit),
            ("TEMPORA_MAX_RESULT_ROWS", "1000"),
        ],
    );
    let write = s.url("/write?db=public");
    assert_eq!(post(&write, "m,host=h0 v=0 1\n").0, "204");
    // Ingest goes on in another thread during every query below.
    let writer = {
        let write = write.clone();
        std::thread::spawn(move || {
            let mut codes = Vec::new();
            for b in 1..=60 {
                let body: String = (0..200)
                    .map(|i| format!("m,host=h{} v={i} {}\n", i % 20, b * 1000 + i))
                    .collect();
                codes.push(post(&write, &body).0);
            }
            codes
        })
    };
    let limit_text = format!("memory limit of {QUERY_LIMIT} bytes");
    // (name, parameters, query, status, text the answer must contain)
    let cases: Vec<(&str, &str, &str, &str, String)> = vec![
        (
            "over the server's per-query limit",
            "timeout=60s",
            BIG_JOIN,
            "507",
            limit_text.clone(),
        ),
        ("under it", "", SMALL_GROUP, "200", "[[1000]]".into()),
        (
            "the client lowers it",
            "memory_limit=1kB",
            SMALL_GROUP,
            "507",
            "memory limit of 1024 bytes".into(),
        ),
        (
            "the client cannot raise it",
            "memory_limit=1GB&timeout=60s",
            BIG_JOIN,
            "507",
            limit_text,
        ),
        (
            "a scan over the limit",
            "memory_limit=1kB",
            "SELECT * FROM m",
            "507",
            "TemporaScan".into(),
        ),
        (
            "the client's timeout",
            "timeout=300ms",
            SLOW,
            "408",
            "timeout of 300ms".into(),
        ),
        (
            "a bad timeout",
            "timeout=soon",
            "SELECT 1",
            "400",
            "parameter timeout".into(),
        ),
        (
            "a bad memory limit",
            "memory_limit=lots",
            "SELECT 1",
            "400",
            "parameter memory_limit".into(),
        ),
        (
            "a result over max_result_rows",
            "",
            "SELECT * FROM generate_series(1, 5000)",
            "400",
            "max_result_rows".into(),
        ),
        (
            "within every limit",
            "timeout=30s&memory_limit=64MB",
            "SELECT count(*) AS n FROM generate_series(1, 10)",
            "200",
            "[[10]]".into(),
        ),
    ];
    for (name, params, sql, code, text) in &cases {
        let (got_code, body) = sql_get(&s, params, sql);
        assert_eq!(&got_code, code, "{name}: {body}");
        assert!(body.contains(text.as_str()), "{name}: {body}");
        assert!(s.healthy(), "{name}: server unhealthy afterwards");
    }
    let codes = writer.join().unwrap();
    assert!(codes.iter().all(|c| c == "204"), "{codes:?}");
    let n = s.sql_json("public", "SELECT count(*) AS n FROM m");
    assert_eq!(n["rows"][0][0], 1 + 60 * 200, "{n}");
    assert!(s.metric("tempora_queries_timed_out_total") >= 1.0);
    assert_eq!(s.metric("tempora_queries_running"), 0.0);
    assert_eq!(s.metric("tempora_query_memory_bytes"), 0.0);
}

#[test]
fn an_http_client_that_goes_away_stops_its_query() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    let url = s.url("/api/v1/sql");
    let out = curl(&[
        "-G",
        "--max-time",
        "1",
        &url,
        "--data-urlencode",
        &format!("q={SLOW}"),
    ]);
    assert_eq!(
        out.status.code(),
        Some(28),
        "curl gave up at its own timeout"
    );
    // The server notices the closed connection and drops the query: watch it go.
    let deadline = Instant::now() + Duration::from_secs(20);
    while s.metric("tempora_queries_running") != 0.0 {
        assert!(Instant::now() < deadline, "the query still runs");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(s.metric("tempora_queries_cancelled_total"), 1.0);
    assert!(s.healthy());
}

#[test]
fn postgres_statement_timeout_cancel_and_memory_limit() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    let program = r#"
import sys, threading, psycopg
port, slow, big, join = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
conn = psycopg.connect(f"host=127.0.0.1 port={port} dbname=public user=tempora", autocommit=True)
def expect(sql, state):
    try:
        conn.execute(sql).fetchall()
        print("no error:", sql)
    except psycopg.Error as e:
        print(e.sqlstate, str(e).strip().splitlines()[0])
# A cancel request from another thread (psycopg sends CancelRequest on a new socket).
threading.Timer(0.5, conn.cancel).start()
expect(slow, "57014")
print("after cancel", conn.execute("SELECT 1").fetchone()[0])
conn.execute("SET statement_timeout = '300ms'")
expect(slow, "57014")
conn.execute("SET statement_timeout = 0")
# Too small for a hash join's build side, which cannot spill: fails at once.
conn.execute("SET tempora.query_memory_limit = '1kB'")
expect(join, "53200")
# With 32 MB the same aggregate (about 100 MB in memory) spills to disk and completes. (16 MB
# was too close: DataFusion's final aggregate stage sometimes asked past it while spilling.)
conn.execute("SET tempora.query_memory_limit = '32MB'")
print("spilled", conn.execute(f"SELECT count(*) FROM ({big})").fetchone()[0])
expect("SET tempora.query_memory_limit = 'lots'", "22023")
conn.execute("RESET tempora.query_memory_limit")
print("rows", len(conn.execute("SELECT * FROM generate_series(1, 300)").fetchall()))
"#;
    let out = python(program, &[&s.pg.to_string(), SLOW, BIG_GROUP, BIG_JOIN]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 7, "{out}");
    assert_eq!(
        lines[0], "57014 canceling statement due to user request",
        "{out}"
    );
    assert_eq!(lines[1], "after cancel 1", "{out}");
    assert!(
        lines[2].starts_with("57014 canceling statement due to statement timeout"),
        "{out}"
    );
    assert!(
        lines[3].starts_with("53200 ") && lines[3].contains("1024 bytes"),
        "{out}"
    );
    assert_eq!(lines[4], "spilled 4000000", "{out}");
    assert!(
        lines[5].starts_with("22023 ") && lines[5].contains("lots"),
        "{out}"
    );
    assert_eq!(lines[6], "rows 300", "{out}");
    assert_eq!(s.metric("tempora_queries_cancelled_total"), 1.0);
    assert_eq!(s.metric("tempora_queries_timed_out_total"), 1.0);
    assert!(s.healthy());
}

/// `memory_budget` alone bounds the query pool: with 256 MiB a join's build side of a million
/// rows is refused with 507 naming the derived per-query limit (`tempora config show` prints
/// it), while writes and small queries go on, and the ingest buffer's gauge is exported.
#[test]
fn a_small_memory_budget_bounds_queries_and_is_shown() {
    let shown = std::process::Command::new(env!("CARGO_BIN_EXE_tempora"))
        .args(["config", "show"])
        .env("TEMPORA_MEMORY_BUDGET", "256MiB")
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&shown.stdout).to_string();
    assert!(shown.contains("memory_budget = \"256MiB\""), "{shown}");
    let limit: usize = shown
        .lines()
        .find(|l| l.starts_with("#   query_memory_limit_bytes"))
        .and_then(|l| l.split_whitespace().nth(2))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no derived query limit in {shown}"));
    assert!(
        limit < 64 << 20,
        "a small budget gives a small query limit: {limit}"
    );

    let dir = tempfile::tempdir().unwrap();
    let s = Server::start_with(dir.path(), &[("TEMPORA_MEMORY_BUDGET", "256MiB")]);
    let write = s.url("/write?db=public");
    assert_eq!(post(&write, "m,host=h0 v=0 1\n").0, "204");
    let (code, body) = sql_get(&s, "timeout=60s", BIG_JOIN);
    assert_eq!(code, "507", "{body}");
    assert!(
        body.contains(&format!("memory limit of {limit} bytes")),
        "{body}"
    );
    let (code, body) = sql_get(&s, "", SMALL_GROUP);
    assert_eq!(
        (code.as_str(), body.contains("[[1000]]")),
        ("200", true),
        "{body}"
    );
    assert_eq!(post(&write, "m,host=h1 v=1 2\n").0, "204");
    assert_eq!(
        s.metric("tempora_ingest_buffer_bytes"),
        0.0,
        "no write in flight"
    );
    assert!(s.healthy());
}

/// Settings that cannot fit the budget stop the server at start with a message naming them.
#[test]
fn a_budget_its_parts_do_not_fit_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tempora"))
        .args(["serve", "--data-dir", dir.path().to_str().unwrap()])
        .env("TEMPORA_MEMORY_BUDGET", "1GiB")
        .env("TEMPORA_DECODED_CACHE_BYTES", "1GiB")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("decoded_cache_bytes set to 1 GiB"), "{err}");
}

/// Expressions nest as deep as their chains of operators are long, and planning recurses
/// once per level: `SELECT 1+1+…` with 5,000 terms (10 KB) overflowed a thread's stack and
/// killed the server (issue 26's hostile inputs). A chain past the front door's bound
/// (1,024 operators) is refused by position over HTTP and psql; chains at the bound are
/// answered, over a table too; the server stays up throughout.
#[test]
fn long_operator_chains_are_refused_or_answered_never_fatal() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    let url = s.url("/api/v1/sql?db=public");
    post(&url, "CREATE TABLE chains (host TAG, v DOUBLE)");
    let (code, body) = post(
        &url,
        "INSERT INTO chains (time, host, v) VALUES (1000000000, 'a', 1), (2000000000, 'b', 2)",
    );
    assert_eq!(code, "200", "{body}");
    let plus = |n: usize| format!("SELECT 1{}", "+1".repeat(n));
    for sql in [plus(4_999), plus(1_025)] {
        let (code, body) = post(&url, &sql);
        assert_eq!(code, "400", "{body}");
        assert!(
            body.contains("more than 1024 operators in one chain"),
            "{body}"
        );
        assert!(s.healthy());
    }
    let refused = s.psql_output("public", &plus(4_999));
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("operators in one chain"));
    let (code, body) = post(&url, &plus(1_024));
    assert_eq!(code, "200", "{body}");
    assert!(body.contains("[[1025]]"), "{}", &body[body.len() - 40..]);
    // At the bound over a table: the filter goes through pushdown and the file pruner.
    let ors: Vec<String> = (0..512).map(|i| format!("v = {i}")).collect();
    let v = s.sql_json(
        "public",
        &format!(
            "SELECT count(*) AS n FROM chains WHERE {}",
            ors.join(" OR ")
        ),
    );
    assert_eq!(v["rows"], serde_json::json!([[2]]), "{v}");
    let sum = format!(
        "SELECT v{} AS s FROM chains ORDER BY time",
        "+v".repeat(1_000)
    );
    let v = s.sql_json("public", &sum);
    let got: Vec<f64> = v["rows"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|r| r[0].as_f64().unwrap())
        .collect();
    assert_eq!(got, [1001.0, 2002.0]);
    assert!(s.healthy());
}
