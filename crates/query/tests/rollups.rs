//! Rollups give the raw rows' answer: a table declaring `rollups = '1m,1h'` is written in
//! several flushes, with late writes into flushed buckets, overwrites of flushed points,
//! NULL fields, a DELETE, a compaction and a restart; every generated query (the grammar of
//! the differential test: every bucket spelling, multiples of the resolutions and not, tag
//! filters and groups, field predicates) gives the same rows with `tempora.rollups` on and
//! off, floats to 1e-9 relative.

mod common;

use std::sync::Arc;

use common::grammar::{DAY0, HOSTS, Rng, assert_same_rows, case};
use tempora_query::catalog::Databases;
use tempora_query::{QueryLimits, QueryOptions, QueryService};
use tempora_storage::{Engine, EngineIo, EngineOptions};

const SEC: i64 = 1_000_000_000;

/// Opens the engine; `min_rows`: its `rollup_min_rows_per_state` (0 in the differential
/// tests, so that every rollup that fits is read, however few rows its states hold).
fn open(
    files: &tempora_storage::files::store::FileStore,
    wals: &Arc<tempora_storage::MemWals>,
    min_rows: u32,
) -> (Arc<Engine>, QueryService) {
    let io = EngineIo {
        files: files.clone(),
        wals: wals.clone(),
        clock: Arc::new(tempora_storage::clock::SystemClock),
        dense_dir: None,
    };
    let opts = EngineOptions {
        rollup_min_rows_per_state: min_rows,
        ..EngineOptions::default()
    };
    let engine = Arc::new(Engine::open(opts, io).unwrap());
    let dbs = Arc::new(Databases::open(engine.clone(), None).unwrap());
    if !dbs.exists("db") {
        dbs.create("db").unwrap();
    }
    let limits = QueryLimits {
        parallel_min_values: 0,
        ..QueryLimits::default()
    };
    (engine, QueryService::new(dbs, limits).unwrap())
}

/// `INSERT`s of the points of hosts `hosts` every 30 s (with a jitter below a second) from
/// `from` for `secs` seconds; `tweak` makes the values differ between writes of one point.
fn points(rng: &mut Rng, hosts: &[&str], from: i64, secs: i64, tweak: f64) -> Vec<String> {
    let mut rows = Vec::new();
    for (i, h) in hosts.iter().enumerate() {
        let mut s = from;
        while s < from + secs {
            let t = s * SEC + (rng.below(1000) as i64) * 1_000_000 + i as i64;
            let region = if i % 2 == 0 { "'eu'" } else { "'us'" };
            let dc = if *h == "h6" {
                "NULL".to_string()
            } else {
                format!("'dc{}'", i % 3)
            };
            let v = if rng.chance(10) {
                "NULL".to_string()
            } else {
                format!(
                    "{:.3}",
                    (rng.below(20_000) as f64 - 5_000.0) / 100.0 + tweak
                )
            };
            let n = rng.below(1000) as i64 - 300;
            rows.push(format!("({t}, '{h}', {region}, {dc}, {v}, {n})"));
            s += 30;
        }
    }
    rows.chunks(2000)
        .map(|c| {
            format!(
                "INSERT INTO cpu (time, host, region, dc, v, n) VALUES {}",
                c.join(", ")
            )
        })
        .collect()
}

async fn write(q: &QueryService, stmts: Vec<String>) {
    for s in stmts {
        common::exec(q, &s).await;
    }
}

/// Two days in four flushes, late points and overwrites in a fifth, a delete, a compaction,
/// then writes left in the memtable after a restart.
async fn load(
    files: &tempora_storage::files::store::FileStore,
    wals: &Arc<tempora_storage::MemWals>,
    min_rows: u32,
) -> (Arc<Engine>, QueryService) {
    let mut rng = Rng(0x0011_2233_4455_6677);
    let (engine, q) = open(files, wals, min_rows);
    write(&q, points(&mut rng, &HOSTS, DAY0, 60, 0.0)).await;
    common::exec(&q, "ALTER TABLE cpu SET (rollups = '1m,1h')").await;
    for k in 0..4 {
        write(
            &q,
            points(&mut rng, &HOSTS, DAY0 + 60 + k * 43_200, 43_200, 0.0),
        )
        .await;
        common::flush(&engine).await;
    }
    // Late points (new times) and overwrites (the same times again, other values) in hours
    // already flushed: 3 of 6 hosts, a few minutes each.
    write(
        &q,
        points(
            &mut Rng(0x0011_2233_4455_6677),
            &HOSTS[..3],
            DAY0 + 60,
            600,
            0.5,
        ),
    )
    .await;
    write(
        &q,
        points(&mut rng, &HOSTS[3..], DAY0 + 7_200 + 7, 300, 0.0),
    )
    .await;
    common::flush(&engine).await;
    common::exec(
        &q,
        &format!(
            "DELETE FROM cpu WHERE host = 'h2' AND time >= to_timestamp({}) AND time < to_timestamp({})",
            DAY0 + 30_000,
            DAY0 + 40_000
        ),
    )
    .await;
    let e = engine.clone();
    tokio::task::spawn_blocking(move || e.compact())
        .await
        .unwrap()
        .unwrap();
    drop(q);
    drop(engine);
    let (engine, q) = open(files, wals, min_rows);
    write(&q, points(&mut rng, &HOSTS, DAY0 + 86_400 + 60, 900, 0.0)).await;
    write(&q, points(&mut rng, &HOSTS[..2], DAY0 + 3_600, 120, 1.0)).await;
    (engine, q)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollups_give_the_raw_rows_answer() {
    let (io, wals) = EngineIo::memory();
    let (_engine, q) = load(&io.files, &wals, 0).await;
    let seed: u64 = std::env::var("DIFF_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x7011_0000_0000_0001);
    let cases: usize = std::env::var("DIFF_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let mut rng = Rng(seed);
    let mut compared = 0;
    for n in 0..cases {
        let c = case(&mut rng);
        let mut on = QueryOptions::default();
        let mut off = QueryOptions {
            rollups: Some(false),
            ..QueryOptions::default()
        };
        let a = q
            .run(
                "db",
                &c.sql,
                0,
                &mut on,
                c.params.clone(),
                &tempora_query::access::Unrestricted,
            )
            .await;
        let b = q
            .run(
                "db",
                &c.sql,
                0,
                &mut off,
                c.params.clone(),
                &tempora_query::access::Unrestricted,
            )
            .await;
        let ctx = || format!("case {n}: {}  params {:?}", c.sql, c.params);
        match (a, b) {
            (Ok(a), Ok(b)) => {
                assert_same_rows(&a.batches, &b.batches, &ctx);
                compared += 1;
            }
            (Err(a), Err(b)) => assert_eq!(a.sqlstate(), b.sqlstate(), "{}", ctx()),
            (a, b) => panic!(
                "one way failed: on={:?} off={:?}: {}",
                a.err().map(|e| e.to_string()),
                b.err().map(|e| e.to_string()),
                ctx()
            ),
        }
    }
    assert!(compared * 10 > cases * 9, "{compared} of {cases} compared");
}

/// The rollups are really read: EXPLAIN names them for the spellings that can use them, and
/// says why not for the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_names_the_rollup_or_why_not() {
    let (io, wals) = EngineIo::memory();
    let (_engine, q) = load(&io.files, &wals, 0).await;
    for (sql, want) in [
        (
            "SELECT date_trunc('hour', time) AS b, host, avg(v) FROM cpu GROUP BY 1, 2",
            "rollup=1h>1m ",
        ),
        (
            "SELECT time_bucket(INTERVAL '1 day', time) AS b, max(n) FROM cpu GROUP BY 1",
            "rollup=1h>1m ",
        ),
        (
            "SELECT date_bin(INTERVAL '5 minutes', time) AS b, count(*) FROM cpu GROUP BY 1",
            "rollup=1m ",
        ),
        (
            "SELECT floor(extract(epoch from time)/3600)*3600 AS b, sum(v) FROM cpu GROUP BY 1",
            "rollup=1h>1m (each bucket checked)",
        ),
        ("SELECT time, max(v) FROM cpu SAMPLE BY 1h", "rollup=1h>1m "),
        ("SELECT max(v) FROM cpu WHERE host = 'h1'", "rollup=1h>1m "),
        (
            "SELECT date_bin(INTERVAL '90 seconds', time) AS b, max(v) FROM cpu GROUP BY 1",
            "rollup=none (its buckets do not hold whole rollup buckets",
        ),
        (
            "SELECT date_trunc('hour', time) AS b, max(v) FROM cpu WHERE v > 3 GROUP BY 1",
            "rollup=none (a predicate on field v needs raw rows)",
        ),
        (
            "SET tempora.rollups = off; SELECT date_trunc('hour', time) AS b, max(v) FROM cpu GROUP BY 1",
            "rollup=none (tempora.rollups is off)",
        ),
    ] {
        let explain = match sql.split_once("; ") {
            Some((set, query)) => format!("{set}; EXPLAIN {query}"),
            None => format!("EXPLAIN {sql}"),
        };
        let out = common::table(&q, &explain).await;
        assert!(out.contains(want), "{sql}\n{out}");
    }
}

/// `tempora_rollup('cpu', '1h')` gives one row per (series, hour) whose statistics equal the
/// raw rows' aggregates.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rollup_is_queryable_by_name() {
    let (io, wals) = EngineIo::memory();
    let (_engine, q) = load(&io.files, &wals, 0).await;
    let by_name = common::table(
        &q,
        "SELECT host, region, dc, time, rows, v_count, v_sum, v_min, v_max, n_count, n_sum FROM tempora_rollup('cpu', '1h') ORDER BY host, region, dc, time",
    )
    .await;
    let raw = common::table(
        &q,
        "SET tempora.rollups = off; SELECT host, region, dc, date_trunc('hour', time) AS time, count(*) AS rows, count(v) AS v_count, sum(v) AS v_sum, min(v) AS v_min, max(v) AS v_max, count(n) AS n_count, sum(n) AS n_sum FROM cpu GROUP BY 1, 2, 3, 4 ORDER BY host, region, dc, time",
    )
    .await;
    let lines = |t: &str| {
        t.lines()
            .skip(3)
            .filter(|l| l.starts_with('|'))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let (a, b) = (lines(&by_name), lines(&raw));
    assert!(a.len() > 100, "{} rows", a.len());
    assert_eq!(a.len(), b.len());
    // Float sums may differ in the last bits; compare every other column exactly.
    for (x, y) in a.iter().zip(&b) {
        let strip = |l: &str| {
            // `| host | region | dc | time | rows | v_count | v_sum | ...`
            let mut c: Vec<String> = l.split('|').map(|s| s.trim().to_string()).collect();
            c.remove(7);
            c
        };
        assert_eq!(strip(x), strip(y), "\n{x}\n{y}");
    }
    let e = q
        .sql("db", "SELECT * FROM tempora_rollup('cpu', '5m')", 0)
        .await
        .unwrap_err();
    assert!(e.to_string().contains("declares no rollup of 5m"), "{e}");
}

/// With the default `rollup_min_rows_per_state` (16), the 1m rollup of 30-second data (2 rows
/// per state) is not read where raw rows exist, and EXPLAIN says so; the 1h rollup is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollup_of_few_rows_per_state_is_left_to_raw_rows() {
    let (io, wals) = EngineIo::memory();
    let (_engine, q) = load(&io.files, &wals, 16).await;
    for (sql, want) in [
        (
            "SELECT date_trunc('hour', time) AS b, host, avg(v) FROM cpu GROUP BY 1, 2 ORDER BY 1, 2",
            "rollup=1h; 1m not written (no files yet, or fewer than 16 raw rows per state)",
        ),
        (
            "SELECT date_bin(INTERVAL '5 minutes', time) AS b, count(*) FROM cpu GROUP BY 1 ORDER BY 1",
            "rollup=none (1m not written (no files yet, or fewer than 16 raw rows per state))",
        ),
    ] {
        let out = common::table(&q, &format!("EXPLAIN {sql}")).await;
        assert!(out.contains(want), "{sql}\n{out}");
        let mut off = QueryOptions {
            rollups: Some(false),
            ..QueryOptions::default()
        };
        let a = q
            .run(
                "db",
                sql,
                0,
                &mut QueryOptions::default(),
                vec![],
                &tempora_query::access::Unrestricted,
            )
            .await
            .unwrap();
        let b = q
            .run(
                "db",
                sql,
                0,
                &mut off,
                vec![],
                &tempora_query::access::Unrestricted,
            )
            .await
            .unwrap();
        assert_same_rows(&a.batches, &b.batches, &|| sql.to_string());
    }
}
