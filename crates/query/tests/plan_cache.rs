//! The plan cache: a repeated query with other literals reuses its plan and gives the rows a
//! fresh plan gives; a schema change, a re-created table and the current time are never
//! answered from a stale plan; the cache holds at most its limit.

mod common;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use tempora_query::{QueryLimits, QueryService};

fn hits(q: &QueryService) -> u64 {
    q.cache_stats().hits.load(Ordering::Relaxed)
}

async fn loaded(limits: QueryLimits) -> (Arc<tempora_storage::Engine>, QueryService) {
    let (engine, dbs) = common::engine();
    let q = QueryService::new(dbs, limits).unwrap();
    common::exec(
        &q,
        "INSERT INTO cpu (time, host, v, n) VALUES ('2024-01-01T00:00:00Z', 'a', 1.5, 1), \
         ('2024-01-01T00:01:00Z', 'a', 2.5, 2), ('2024-01-01T00:02:00Z', 'b', 3.5, 3)",
    )
    .await;
    (engine, q)
}

#[tokio::test]
async fn other_literals_reuse_the_plan_and_get_their_own_rows() {
    let (_e, q) = loaded(QueryLimits::default()).await;
    let sql = |host: &str, from: &str| {
        format!(
            "SELECT date_trunc('minute', time) AS m, max(v) AS x FROM cpu WHERE host = '{host}' \
             AND time >= '{from}' GROUP BY m ORDER BY m"
        )
    };
    let first = common::table(&q, &sql("a", "2024-01-01T00:00:00Z")).await;
    assert!(first.contains("1.5") && first.contains("2.5"), "{first}");
    let before = hits(&q);
    let second = common::table(&q, &sql("a", "2024-01-01T00:01:00Z")).await;
    assert_eq!(hits(&q), before + 1, "the second text reuses the plan");
    assert!(
        !second.contains("1.5") && second.contains("2.5"),
        "{second}"
    );
    let third = common::table(&q, &sql("b", "2024-01-01T00:00:00Z")).await;
    assert!(third.contains("3.5") && !third.contains("2.5"), "{third}");
}

#[tokio::test]
async fn a_literal_that_would_change_value_is_not_bound_to_the_plan() {
    let (_e, q) = loaded(QueryLimits::default()).await;
    // n is an integer: n < 2 and n < 2.5 keep different rows; the second must not reuse the
    // first's plan with 2.5 cast to an integer.
    let a = common::table(&q, "SELECT count(*) AS c FROM cpu WHERE n < 2").await;
    let b = common::table(&q, "SELECT count(*) AS c FROM cpu WHERE n < 2.5").await;
    let c = common::table(&q, "SELECT count(*) AS c FROM cpu WHERE n < 3.5").await;
    assert!(a.contains("| 1 "), "{a}");
    assert!(b.contains("| 2 "), "{b}");
    assert!(c.contains("| 3 "), "{c}");
}

#[tokio::test]
async fn schema_changes_and_recreated_tables_plan_again() {
    let (_e, q) = loaded(QueryLimits::default()).await;
    let star = "SELECT * FROM cpu WHERE host = 'b'";
    let before = common::table(&q, star).await;
    assert!(!before.contains("extra"), "{before}");
    common::exec(
        &q,
        "INSERT INTO cpu (time, host, v, extra) VALUES ('2024-01-01T00:03:00Z', 'b', 4.5, 7)",
    )
    .await;
    let after = common::table(&q, star).await;
    assert!(after.contains("extra") && after.contains("4.5"), "{after}");
    common::exec(&q, "DROP TABLE cpu").await;
    common::exec(
        &q,
        "INSERT INTO cpu (time, host, w) VALUES ('2024-01-01T00:00:00Z', 'b', 9)",
    )
    .await;
    let recreated = common::table(&q, star).await;
    assert!(
        recreated.contains("| w") && !recreated.contains("extra"),
        "{recreated}"
    );
}

#[tokio::test]
async fn queries_of_the_current_time_are_planned_each_time() {
    let (_e, q) = loaded(QueryLimits::default()).await;
    let sql = "SELECT count(*) FROM cpu WHERE time < now()";
    common::table(&q, sql).await;
    let before = hits(&q);
    common::table(&q, sql).await;
    assert_eq!(hits(&q), before, "now() is never cached");
}

#[tokio::test]
async fn the_cache_holds_at_most_its_limit() {
    let limits = QueryLimits {
        plan_cache_entries: 2,
        ..QueryLimits::default()
    };
    let (_e, q) = loaded(limits).await;
    for f in ["max", "min", "sum", "avg"] {
        common::table(&q, &format!("SELECT {f}(v) FROM cpu")).await;
    }
    assert_eq!(q.cache_len(), 2);
    let off = QueryLimits {
        plan_cache_entries: 0,
        ..QueryLimits::default()
    };
    let (_e, q) = loaded(off).await;
    common::table(&q, "SELECT max(v) FROM cpu").await;
    common::table(&q, "SELECT max(v) FROM cpu").await;
    assert_eq!((q.cache_len(), hits(&q)), (0, 0));
}

fn text_hits(q: &QueryService) -> u64 {
    q.cache_stats().text_hits.load(Ordering::Relaxed)
}

#[tokio::test]
async fn a_repeated_text_runs_again_and_reads_the_rows_written_since() {
    let (_e, q) = loaded(QueryLimits::default()).await;
    let newest = "SELECT date_trunc('minute', time) AS m, max(v) AS x FROM cpu \
                  GROUP BY m ORDER BY m DESC LIMIT 1";
    let rows = "SELECT * FROM cpu WHERE host = 'b' ORDER BY time";
    let filtered = "SELECT date_trunc('minute', time) AS m, max(v) AS x FROM cpu \
                    GROUP BY m HAVING max(v) > 0 ORDER BY x DESC LIMIT 1";
    // A text is kept the second time it is seen.
    for sql in [newest, rows, filtered] {
        common::table(&q, sql).await;
        assert_eq!(q.cache_texts_len(), 0, "seen once, not kept: {sql}");
    }
    for sql in [newest, rows, filtered] {
        common::table(&q, sql).await;
    }
    assert_eq!(q.cache_texts_len(), 3);
    let before = text_hits(&q);
    let first = common::table(&q, newest).await;
    assert!(
        first.contains("00:02:00") && first.contains("3.5"),
        "{first}"
    );
    assert_eq!(
        text_hits(&q),
        before + 1,
        "the second run is the text's entry"
    );
    common::exec(
        &q,
        "INSERT INTO cpu (time, host, v, n) VALUES ('2024-01-01T00:05:00Z', 'b', 9.5, 4)",
    )
    .await;
    // The kept TopK runs again with fresh state: the newer, larger row is seen.
    let second = common::table(&q, newest).await;
    assert!(
        second.contains("00:05:00") && second.contains("9.5"),
        "{second}"
    );
    // A kept scan is planned again: its regions are those of now.
    let scanned = common::table(&q, rows).await;
    assert!(
        scanned.contains("3.5") && scanned.contains("9.5"),
        "{scanned}"
    );
    let top = common::table(&q, filtered).await;
    assert!(top.contains("9.5") && !top.contains("3.5"), "{top}");
    assert_eq!(text_hits(&q), before + 4);
}

#[tokio::test]
async fn texts_of_the_current_time_parameters_or_two_statements_are_not_kept() {
    let (_e, q) = loaded(QueryLimits::default()).await;
    for sql in [
        "SELECT count(*) FROM cpu WHERE time < now()",
        "SELECT max(v) FROM cpu; SELECT min(v) FROM cpu",
        "SHOW TABLES",
    ] {
        for _ in 0..3 {
            common::table(&q, sql).await;
        }
    }
    let mut opts = tempora_query::QueryOptions::default();
    let with_param = "SELECT max(v) FROM cpu WHERE n < $1";
    for _ in 0..3 {
        let out = q
            .run(
                "db",
                with_param,
                0,
                &mut opts,
                vec![2i64.into()],
                &tempora_query::access::Unrestricted,
            )
            .await
            .unwrap();
        assert_eq!(out.batches[0].num_rows(), 1);
    }
    assert_eq!((text_hits(&q), q.cache_texts_len()), (0, 0));
}

#[tokio::test]
async fn kept_texts_follow_the_limit_and_dropped_databases() {
    let limits = QueryLimits {
        plan_cache_entries: 2,
        ..QueryLimits::default()
    };
    let (_e, q) = loaded(limits).await;
    for f in ["max", "min", "sum", "avg"] {
        for _ in 0..2 {
            common::table(&q, &format!("SELECT {f}(v) FROM cpu")).await;
        }
    }
    assert_eq!(q.cache_texts_len(), 2);
    q.forget("db");
    assert_eq!(q.cache_texts_len(), 0);
}

#[tokio::test]
async fn latest_rows_by_distinct_on_are_kept_by_text() {
    let (_e, q) = loaded(QueryLimits::default()).await;
    let sql = "SELECT DISTINCT ON (host) time, host, v FROM cpu ORDER BY host, time DESC;";
    let first = common::table(&q, sql).await;
    let second = common::table(&q, sql).await;
    let third = common::table(&q, sql).await;
    assert_eq!((&first, &first), (&second, &third));
    assert_eq!(text_hits(&q), 1);
}
