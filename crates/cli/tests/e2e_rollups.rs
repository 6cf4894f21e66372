//! Rollups outlive the raw rows, end to end over psql: a table with `rollups = '1m,1h:400d'`
//! answers an hourly dashboard query from raw rows and rollups alike (averages to 6 digits:
//! sums from states may differ from sums of rows in the last bits); after its raw TTL
//! passes (lowered with ALTER TABLE, retention run by the maintenance thread) the same query
//! gives the same rows from the 1h rollup, and says so in EXPLAIN; queries that need raw rows
//! over that range (count DISTINCT, a row read, minute buckets whose rollup expired with the
//! raw rows) get an error naming the table and the horizon; a restart keeps all of it.

mod common;

use common::{Server, post_args};

fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Polls `f` until it holds; at most 60 s (the maintenance thread runs every second).
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !f() {
        assert!(std::time::Instant::now() < deadline, "never: {what}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
fn a_dashboard_query_gives_the_same_rows_before_and_after_the_raw_ttl() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("TEMPORA_MAINTENANCE_SECS", "1")];
    let s = Server::start_with(dir.path(), &env);
    s.psql(
        "public",
        "CREATE TABLE cpu (host TAG, usage DOUBLE, n BIGINT) WITH (partition = '1h', rollups = '1m,1h:400d')",
    );
    // Four whole hours, ending 3 h before now, every 10 s, 3 hosts.
    let end = (now_s() / 3600 - 3) * 3600;
    let start = end - 4 * 3600;
    let mut lines = String::new();
    for host in ["a", "b", "c"] {
        for (i, t) in (start..end).step_by(10).enumerate() {
            let v = ((t * 7 + host.as_bytes()[0] as i64 * 13) % 1000) as f64 / 10.0;
            lines.push_str(&format!("cpu,host={host} usage={v},n={}i {t}\n", i % 17));
        }
    }
    let scratch = tempfile::tempdir().unwrap();
    let body = scratch.path().join("lines.lp");
    std::fs::write(&body, &lines).unwrap();
    let (code, answer) = post_args(
        &s.url("/write?db=public&precision=s"),
        &["--data-binary", &format!("@{}", body.display())],
    );
    assert_eq!(code, "204", "{answer}");
    // The clean stop flushes: the rollups are written beside the data files.
    s.stop();
    let s = Server::start_with(dir.path(), &env);
    let (lo, hi) = (start + 3600, end);
    let dashboard = format!(
        "SELECT date_trunc('hour', time) AS t, host, round(avg(usage), 6), min(usage), max(usage), sum(n), count(*) \
         FROM cpu WHERE time >= to_timestamp({lo}) AND time < to_timestamp({hi}) GROUP BY 1, 2 ORDER BY 1, 2"
    );
    let before = s.psql("public", &dashboard);
    assert_eq!(before.lines().count(), 9, "3 hours x 3 hosts:\n{before}");
    let raw = s.psql("public", &format!("SET tempora.rollups = off; {dashboard}"));
    assert_eq!(
        raw.strip_prefix("SET\n"),
        Some(before.as_str()),
        "the rollups give the raw rows' answer"
    );
    let distinct = format!(
        "SELECT count(DISTINCT usage) FROM cpu WHERE time >= to_timestamp({lo}) AND time < to_timestamp({hi})"
    );
    assert!(s.psql("public", &distinct).trim().parse::<u64>().unwrap() > 100);

    // Raw rows now expire; the 1h rollup (400 days) outlives them, the 1m one goes with them.
    s.psql("public", "ALTER TABLE cpu SET (ttl = '2h')");
    let explain = format!("EXPLAIN {dashboard}");
    eventually("EXPLAIN names the expired raw rows", || {
        s.psql("public", &explain)
            .contains("expired: buckets there from rollups 1h only")
    });
    assert_eq!(
        s.psql("public", &dashboard),
        before,
        "the same rows from the 1h rollup"
    );
    let fails = |sql: &str| {
        let out = s.psql_output("public", sql);
        assert!(!out.status.success(), "{sql} succeeded");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    for sql in [
        distinct.clone(),
        format!("SELECT * FROM cpu WHERE time >= to_timestamp({lo}) LIMIT 5"),
        format!(
            "SELECT date_trunc('minute', time) AS t, max(usage) FROM cpu WHERE time >= to_timestamp({lo}) GROUP BY 1"
        ),
    ] {
        let err = fails(&sql);
        assert!(
            err.contains("storage: raw rows of public.cpu before") && err.contains("have expired"),
            "{sql}: {err}"
        );
    }
    // No raw data file is left: only rollup files (`<id>.r<ns>`).
    let files: Vec<String> = walk(dir.path())
        .into_iter()
        .filter(|p| p.contains("/data/") && !p.ends_with(".tidx"))
        .collect();
    assert!(
        files.iter().all(|p| p.contains(".r3600000000000")),
        "{files:#?}"
    );
    s.stop();
    let s = Server::start_with(dir.path(), &env);
    assert_eq!(s.psql("public", &dashboard), before, "after a restart");
    s.stop();
}

fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p.to_string_lossy().into_owned());
        }
    }
    out
}
