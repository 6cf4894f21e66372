//! Aggregates folded on several threads (`exec::aggregate`, `parallel_min_values` = 0 here so
//! that every read over two regions or more is split): the answer equals one thread's, and a
//! thread that fails reports its own cause rather than the "stopped" of the others.

mod common;

use tempora_query::{QueryLimits, QueryOptions, QueryService};

/// Six hosts over three days (several partitions and buckets), half of it flushed to files.
async fn load(engine: &std::sync::Arc<tempora_storage::Engine>, q: &QueryService) {
    for half in 0..2 {
        let rows: Vec<String> = (0..6)
            .flat_map(|h| {
                (0..300).map(move |i| {
                    let t = 1_704_067_200_000_000_000i64
                        + (half * 300 + i) * 432_000_000_000
                        + h * 1_000_000_007;
                    format!("({t}, 'h{h}', {}.5)", (i * 7 + h) % 100)
                })
            })
            .collect();
        common::exec(
            q,
            &format!("INSERT INTO cpu (time, host, v) VALUES {}", rows.join(", ")),
        )
        .await;
        if half == 0 {
            common::flush(engine).await;
        }
    }
}

const SQL: &str = "SELECT date_trunc('hour', time) AS hour, host, avg(v) AS a, max(v) AS m, \
                   count(*) AS n FROM cpu WHERE time >= '2024-01-01T00:00:00Z' \
                   GROUP BY hour, host ORDER BY hour, host";

fn service(dbs: std::sync::Arc<tempora_query::catalog::Databases>, min: u64) -> QueryService {
    let limits = QueryLimits {
        parallel_min_values: min,
        ..QueryLimits::default()
    };
    QueryService::new(dbs, limits).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_split_fold_answers_as_one_thread_does() {
    let (engine, dbs) = common::engine();
    let split = service(dbs.clone(), 0);
    let single = service(dbs, u64::MAX);
    load(&engine, &split).await;
    let explain = common::table(&split, &format!("EXPLAIN {SQL}")).await;
    assert!(explain.contains("TemporaAggregate"), "{explain}");
    let a = common::table(&split, SQL).await;
    let b = common::table(&single, SQL).await;
    assert_eq!(a, b);
    assert!(a.lines().count() > 100, "{a}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_split_fold_over_its_memory_reports_the_limit() {
    let (engine, dbs) = common::engine();
    let split = service(dbs, 0);
    load(&engine, &split).await;
    let mut opts = QueryOptions {
        memory_bytes: Some(4096),
        ..QueryOptions::default()
    };
    let Err(err) = split
        .run(
            "db",
            SQL,
            0,
            &mut opts,
            Vec::new(),
            &tempora_query::access::Unrestricted,
        )
        .await
    else {
        panic!("4 KiB is too little for this aggregate");
    };
    let text = err.to_string();
    assert!(
        text.contains("esources exhausted") && !text.contains("stopped"),
        "{text}"
    );
}
