//! Differential test: queries generated from a grammar, each run with Tempora's operators and
//! plan cache (the defaults) and with neither (DataFusion's plain plan of the same statement,
//! planned afresh), must give the same column names and types and the same rows in the same order (floats to
//! 1e-9 relative, since sums add in another order).
//!
//! The grammar covers time ranges (`>=`, `>`, `<`, `<=`, `BETWEEN`), tag predicates (`=`, `IN`,
//! `<>`, `NOT IN`, regex, `OR`, `IS NULL`), field predicates, `max`/`min`/`sum`/`avg`/`count`
//! and `first`/`last`,
//! bucket spellings (`date_trunc`, `date_bin` with and without origin, `time_bucket`, epoch
//! arithmetic as Grafana and TimescaleDB-format tools write it, `time` itself, `SAMPLE BY`),
//! `GROUP BY` by name, alias and position, `ORDER BY` either way, `LIMIT`, a CTE or a subquery
//! around the aggregate, and bound parameters. Cases are seeded: `DIFF_SEED` and
//! `DIFF_CASES` (default 2000) pick them; a failure prints the query and its parameters.

mod common;

use common::grammar::{DAY0, HOSTS, Rng, assert_same_rows, case, outcome};

use std::sync::Arc;

use tempora_query::{QueryOptions, QueryService};
use tempora_storage::Engine;

/// Three days of points for six hosts (one without `dc`), out of order, some overwritten,
/// some fields missing; the first half flushed to files, the rest in the memtable.
async fn load(engine: &Arc<Engine>, q: &QueryService) {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let mut batches: Vec<String> = Vec::new();
    for _ in 0..2 {
        let mut rows = Vec::new();
        for (i, h) in HOSTS.iter().enumerate() {
            for _ in 0..120 {
                let secs = DAY0 + rng.below(3 * 86_400) as i64;
                let nanos = rng.below(1_000_000_000) as i64;
                let t = secs * 1_000_000_000 + nanos;
                let region = if i % 2 == 0 { "'eu'" } else { "'us'" };
                let dc = if i == 5 {
                    "NULL".to_string()
                } else {
                    format!("'dc{}'", i % 3)
                };
                let v = if rng.chance(10) {
                    "NULL".to_string()
                } else {
                    format!("{:.3}", (rng.below(20_000) as f64 - 5_000.0) / 100.0)
                };
                let n = rng.below(1000) as i64 - 300;
                rows.push(format!("({t}, '{h}', {region}, {dc}, {v}, {n})"));
            }
        }
        batches.push(format!(
            "INSERT INTO cpu (time, host, region, dc, v, n) VALUES {}",
            rows.join(", ")
        ));
    }
    common::exec(q, &batches[0]).await;
    common::flush(engine).await;
    common::exec(q, &batches[1]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operators_give_the_plain_plans_rows() {
    let (engine, dbs) = common::engine();
    // Every aggregate over two regions or more is folded on several threads (the threshold
    // is for speed, not for answers), so the split and merge are compared too.
    let q = QueryService::new(
        dbs.clone(),
        tempora_query::QueryLimits {
            parallel_min_values: 0,
            ..tempora_query::QueryLimits::default()
        },
    )
    .unwrap();
    // The reference: DataFusion's plain plans, planned afresh each time.
    let plain = QueryService::new(
        dbs,
        tempora_query::QueryLimits {
            operators: false,
            plan_cache_entries: 0,
            ..tempora_query::QueryLimits::default()
        },
    )
    .unwrap();
    load(&engine, &q).await;
    let seed: u64 = std::env::var("DIFF_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0xd1ff_0000_0000_0001);
    let cases: usize = std::env::var("DIFF_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let mut rng = Rng(seed);
    let (mut on_ops, mut errors) = (0, 0);
    for n in 0..cases {
        let c = case(&mut rng);
        let (mut o1, mut o2) = (QueryOptions::default(), QueryOptions::default());
        let on = q
            .run(
                "db",
                &c.sql,
                0,
                &mut o1,
                c.params.clone(),
                &tempora_query::access::Unrestricted,
            )
            .await;
        let off = plain
            .run(
                "db",
                &c.sql,
                0,
                &mut o2,
                c.params.clone(),
                &tempora_query::access::Unrestricted,
            )
            .await;
        let ctx = || format!("case {n}: {}  params {:?}", c.sql, c.params);
        if c.params.is_empty() {
            // The same text again: the second run keeps it in the plan cache, the third runs
            // from what was kept (its physical plan run again, when kept).
            for run in ["second", "third"] {
                let again = q
                    .run(
                        "db",
                        &c.sql,
                        0,
                        &mut o1,
                        Vec::new(),
                        &tempora_query::access::Unrestricted,
                    )
                    .await;
                assert_eq!(
                    outcome(&on),
                    outcome(&again),
                    "the {run} run differs: {}",
                    ctx()
                );
            }
        }
        match (on, off) {
            (Ok(a), Ok(b)) => {
                let (fa, fb): (Vec<_>, Vec<_>) = (
                    a.schema
                        .fields()
                        .iter()
                        .map(|f| (f.name().clone(), f.data_type().clone()))
                        .collect(),
                    b.schema
                        .fields()
                        .iter()
                        .map(|f| (f.name().clone(), f.data_type().clone()))
                        .collect(),
                );
                assert_eq!(fa, fb, "columns differ: {}", ctx());
                assert_same_rows(&a.batches, &b.batches, &ctx);
                on_ops += 1;
            }
            (Err(a), Err(b)) => {
                errors += 1;
                assert_eq!(
                    a.sqlstate(),
                    b.sqlstate(),
                    "errors differ ({a} / {b}): {}",
                    ctx()
                );
            }
            (a, b) => panic!(
                "one way failed: on={:?} off={:?}: {}",
                a.err().map(|e| e.to_string()),
                b.err().map(|e| e.to_string()),
                ctx()
            ),
        }
    }
    // Most generated queries are valid; a grammar that produces only errors tests nothing.
    assert!(
        errors * 10 < cases,
        "{errors} of {cases} cases failed both ways"
    );
    assert!(on_ops > 0);
}

/// The operators are really used: the plan of a generated bucket query names them.
#[tokio::test]
async fn the_operator_is_in_the_plans_of_every_spelling() {
    let (engine, q) = common::service().await;
    load(&engine, &q).await;
    for b in [
        "date_trunc('hour', time)",
        "date_bin(INTERVAL '1 hour', time)",
        "date_bin(INTERVAL '1 hour', time, TIMESTAMP '1970-01-01T00:00:00Z')",
        "time_bucket(INTERVAL '1 hour', time)",
        "floor(extract(epoch from time)/3600)*3600",
        "to_timestamp(((extract(epoch from time)::int)/3600)*3600)",
    ] {
        for shape in [
            format!(
                "SELECT {b} AS b, host, max(v) FROM cpu WHERE host = 'h1' GROUP BY b, host ORDER BY b"
            ),
            format!("SELECT {b}, max(v) FROM cpu GROUP BY 1 ORDER BY 1 DESC LIMIT 3"),
            format!(
                "WITH q AS (SELECT {b} AS b, avg(n) AS a FROM cpu GROUP BY b) SELECT * FROM q ORDER BY b"
            ),
        ] {
            let out = common::table(&q, &format!("EXPLAIN {shape}")).await;
            assert!(out.contains("TemporaAggregateExec"), "{shape}\n{out}");
        }
    }
    let out = common::table(&q, "EXPLAIN SELECT time, max(v) FROM cpu SAMPLE BY 1h").await;
    assert!(out.contains("TemporaAggregateExec"), "{out}");
    // With the setting off, DataFusion's own plan: the comparison above compares two plans.
    let off = common::table(
        &q,
        "SET tempora.operators = off; EXPLAIN SELECT time, max(v) FROM cpu SAMPLE BY 1h",
    )
    .await;
    assert!(!off.contains("TemporaAggregate"), "{off}");
    assert!(off.contains("AggregateExec"), "{off}");
}
