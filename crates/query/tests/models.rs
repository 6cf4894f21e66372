//! Models end to end through the query service (issue 24): CREATE MODEL over a table's rows,
//! training in the background, SHOW / DESCRIBE, scoring with kept state, forecasts, the bad
//! inputs, and models surviving a restart of a local engine.

mod common;

use std::sync::Arc;
use std::time::Duration;

use arrow::array::{Array, AsArray};
use arrow::datatypes::Float64Type;
use tempora_query::catalog::Databases;
use tempora_query::{QueryLimits, QueryService};
use tempora_storage::{Engine, EngineIo, EngineOptions};

const MIN: i64 = 60_000_000_000;

/// `hosts` series of `n` minutes from minute `from`: a 24-minute cycle with small noise.
fn values(hosts: &[&str], from: i64, n: i64) -> String {
    let mut rows = Vec::new();
    for h in hosts {
        for i in from..from + n {
            let phase = (i % 24) as f64 * std::f64::consts::TAU / 24.0;
            let noise = ((i * 7919 + h.len() as i64 * 31) % 13) as f64 / 13.0;
            rows.push(format!(
                "({}, '{h}', {:.4}, 'ok')",
                i * MIN,
                50.0 + 10.0 * phase.sin() + noise
            ));
        }
    }
    format!(
        "INSERT INTO cpu (time, host, usage, note) VALUES {}",
        rows.join(", ")
    )
}

async fn setup(q: &QueryService) {
    common::exec(
        q,
        "CREATE TABLE cpu (time TIMESTAMP, host TAG, usage DOUBLE, note TEXT)",
    )
    .await;
    common::exec(q, &values(&["a", "b", "c"], 0, 480)).await;
}

fn wait(q: &QueryService, name: &str) -> String {
    q.models
        .wait("db", name, Duration::from_secs(120))
        .expect("the model exists")
}

async fn err(q: &QueryService, sql: &str) -> tempora_query::QueryError {
    match q.sql("db", sql, 0).await {
        Ok(_) => panic!("{sql}: succeeded"),
        Err(e) => e,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_detection_model_trains_scores_keeps_state_and_says_what_it_chose() {
    let (_e, q) = common::service().await;
    setup(&q).await;
    common::exec(&q, "CREATE MODEL cpu_anomaly WITH (task = 'anomaly_detection', algorithm = 'auto') AS SELECT time, host, usage FROM cpu").await;
    assert_eq!(wait(&q, "cpu_anomaly"), "ready");
    let show = common::table(&q, "SHOW MODELS").await;
    assert!(
        show.contains("| cpu_anomaly | anomaly_detection | auto"),
        "{show}"
    );
    let row = &q.models.show("db")[0];
    assert_eq!(
        (row.series, row.rows, row.status.as_str()),
        (3, 1440, "ready"),
        "{row:?}"
    );
    assert!(
        row.chosen.contains("x 3") && row.training_seconds.is_some(),
        "{row:?}"
    );
    let d = common::table(&q, "DESCRIBE MODEL cpu_anomaly").await;
    assert!(
        d.contains("host=a") && d.contains("trained") && d.contains("season=24"),
        "{d}"
    );

    // New points after training, one a spike; scored per host in time order without OVER.
    common::exec(&q, &values(&["a", "b"], 480, 30)).await;
    common::exec(
        &q,
        &format!(
            "INSERT INTO cpu (time, host, usage) VALUES ({}, 'a', 500.0)",
            510 * MIN
        ),
    )
    .await;
    let sql = "SELECT time, host, anomaly_detect(usage, 'cpu_anomaly') AS is_anomaly, anomaly_score(usage, 'cpu_anomaly') AS score \
         FROM cpu WHERE time >= '1970-01-01T08:00:00Z' ORDER BY host, time";
    let out = q.sql("db", sql, 0).await.unwrap();
    let b = arrow::compute::concat_batches(&out.schema, &out.batches).unwrap();
    assert_eq!(b.num_rows(), 61);
    let flagged: Vec<usize> = (0..61)
        .filter(|&i| b.column(2).as_boolean().value(i))
        .collect();
    assert_eq!(
        flagged,
        vec![30],
        "only the spike (row 30: host a, minute 510)"
    );
    let scores = b.column(3).as_primitive::<Float64Type>();
    assert!(scores.null_count() == 0 && scores.value(30) > 10.0);
    // The same query again reads every verdict from the kept state: same answer.
    let again = q.sql("db", sql, 0).await.unwrap();
    let b2 = arrow::compute::concat_batches(&again.schema, &again.batches).unwrap();
    assert_eq!(
        b2.column(3).as_primitive::<Float64Type>().values(),
        scores.values()
    );

    // With OVER written out, the model is used the same way.
    let over = "SELECT anomaly_detect(usage, 'cpu_anomaly') OVER (PARTITION BY host ORDER BY time) AS x FROM cpu WHERE time >= '1970-01-01T08:00:00Z' AND host = 'a'";
    let t = common::table(&q, &format!("SELECT count(*) FROM ({over}) WHERE x")).await;
    assert!(t.contains("| 1 "), "{t}");

    // A host training never saw is scored with auto's defaults, and DESCRIBE says so.
    common::exec(&q, &values(&["newhost"], 0, 30)).await;
    let t = common::table(
        &q,
        "SELECT count(s) FROM (SELECT anomaly_score(usage, 'cpu_anomaly') AS s FROM cpu WHERE host = 'newhost')",
    )
    .await;
    assert!(t.contains("| 30 "), "{t}");
    let d = common::table(&q, "DESCRIBE MODEL cpu_anomaly").await;
    assert!(d.contains("host=newhost") && d.contains("untrained"), "{d}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forecasting_model_forecasts_each_series_with_intervals() {
    let (_e, q) = common::service().await;
    setup(&q).await;
    common::exec(&q, "CREATE MODEL f WITH (task = 'forecasting', algorithm = 'auto', season = '24m') AS SELECT time, host, usage FROM cpu").await;
    assert_eq!(wait(&q, "f"), "ready");
    let out = q
        .sql(
            "db",
            "SELECT * FROM forecast('f', 24) WHERE host = 'a' ORDER BY time",
            0,
        )
        .await
        .unwrap();
    let b = arrow::compute::concat_batches(&out.schema, &out.batches).unwrap();
    let schema = b.schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["time", "host", "value", "lower", "upper"]);
    assert_eq!(b.num_rows(), 24);
    let (v, lo, hi) = (
        b.column(2).as_primitive::<Float64Type>(),
        b.column(3).as_primitive::<Float64Type>(),
        b.column(4).as_primitive::<Float64Type>(),
    );
    for i in 0..24 {
        let truth =
            50.0 + 10.0 * ((480 + i) as f64 % 24.0 * std::f64::consts::TAU / 24.0).sin() + 0.5;
        assert!(
            (v.value(i) - truth).abs() < 2.0,
            "point {i}: {} vs {truth}",
            v.value(i)
        );
        assert!(lo.value(i) <= v.value(i) && v.value(i) <= hi.value(i));
    }
    let e = err(&q, "SELECT * FROM forecast('f', 100000)")
        .await
        .to_string();
    assert!(e.contains("horizon"), "{e}");
    let e = err(&q, "SELECT * FROM forecast('nope', 3)").await;
    assert_eq!((e.http_status(), e.sqlstate()), (404, "42704"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_models_are_refused_or_fail_with_their_reason() {
    let (_e, q) = common::service().await;
    setup(&q).await;
    let cases = [
        (
            "CREATE MODEL m WITH (task = 'anomaly_detection') AS SELECT time, host, note FROM cpu",
            "no numeric value column",
        ),
        (
            "CREATE MODEL m WITH (task = 'anomaly_detection', algorithm = 'lstm') AS SELECT time, host, usage FROM cpu",
            "lstm",
        ),
        (
            "CREATE MODEL m WITH (task = 'anomaly_detection', colour = 'red') AS SELECT time, host, usage FROM cpu",
            "colour",
        ),
        (
            "CREATE MODEL m WITH (task = 'forecasting') AS SELECT time, host, usage FROM nope",
            "nope",
        ),
        (
            "CREATE MODEL mad WITH (task = 'anomaly_detection') AS SELECT time, host, usage FROM cpu",
            "algorithm",
        ),
        (
            "CREATE MODEL m WITH (task = 'forecasting') AS SELECT time, host, usage FROM cpu WHERE time < 0",
            "no rows",
        ),
        (
            "SELECT anomaly_detect(usage, 'nope') FROM cpu",
            "neither an algorithm",
        ),
        ("DROP MODEL nope", "does not exist"),
    ];
    for (sql, want) in cases {
        let e = err(&q, sql).await.to_string();
        assert!(e.contains(want), "{sql}: {e}");
    }
    // Too few points in every series: the model fails, saying why, and using it says so.
    common::exec(&q, &format!("CREATE MODEL few WITH (task = 'forecasting') AS SELECT time, host, usage FROM cpu WHERE time < {}", 3 * MIN)).await;
    let status = wait(&q, "few");
    assert!(
        status.starts_with("failed") && status.contains("needs at least"),
        "{status}"
    );
    let e = err(&q, "SELECT * FROM forecast('few', 3)").await;
    assert_eq!(e.sqlstate(), "55000", "{e}");
    assert!(e.to_string().contains("failed to train"), "{e}");
    // A detection model is not a forecast, and takes no options when scoring.
    common::exec(&q, "CREATE MODEL d WITH (task = 'anomaly_detection', algorithm = 'mad') AS SELECT time, host, usage FROM cpu").await;
    assert_eq!(wait(&q, "d"), "ready");
    let e = err(&q, "SELECT * FROM forecast('d', 3)").await.to_string();
    assert!(e.contains("anomaly detection model"), "{e}");
    let e = err(&q, "SELECT anomaly_detect(usage, 'd', 'k=3') FROM cpu")
        .await
        .to_string();
    assert!(e.contains("takes no options"), "{e}");
    let e = err(
        &q,
        "CREATE MODEL d WITH (task = 'anomaly_detection') AS SELECT time, host, usage FROM cpu",
    )
    .await;
    assert_eq!(e.sqlstate(), "42710", "{e}");
    common::exec(&q, "CREATE MODEL IF NOT EXISTS d WITH (task = 'anomaly_detection') AS SELECT time, host, usage FROM cpu").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_still_training_is_refused_by_name() {
    let (_e, q) = common::service().await;
    setup(&q).await;
    let def = tempora_query::models::registry::Definition {
        options: vec![("task".into(), "forecasting".into())],
        query: "SELECT time, host, usage FROM cpu".into(),
    };
    let (_generation, progress) = q.models.begin("db", "slow", def, false, 0).unwrap();
    progress
        .total
        .store(3, std::sync::atomic::Ordering::Relaxed);
    let e = err(&q, "SELECT * FROM forecast('slow', 3)").await;
    assert_eq!((e.http_status(), e.sqlstate()), (409, "55000"));
    assert!(
        e.to_string()
            .contains("still training (0 of 3 series done)"),
        "{e}"
    );
    let show = common::table(&q, "SHOW MODELS").await;
    assert!(show.contains("training (0 of 3 series)"), "{show}");
    // DROP MODEL cancels it.
    common::exec(&q, "DROP MODEL slow").await;
    assert!(progress.cancel.load(std::sync::atomic::Ordering::Relaxed));
}

fn local(dir: &std::path::Path) -> (Arc<Engine>, QueryService) {
    let engine =
        Arc::new(Engine::open(EngineOptions::default(), EngineIo::local(dir).unwrap()).unwrap());
    let dbs = Arc::new(Databases::open(engine.clone(), None).unwrap());
    dbs.create("db").unwrap();
    let q = QueryService::new(dbs, QueryLimits::default()).unwrap();
    (engine, q)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_survive_a_restart_and_drop_removes_their_file() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (engine, q) = local(dir.path());
        setup(&q).await;
        common::exec(
            &q,
            "CREATE MODEL m WITH (task = 'anomaly_detection') AS SELECT time, host, usage FROM cpu",
        )
        .await;
        common::exec(&q, "CREATE MODEL f WITH (task = 'forecasting', season = '24') AS SELECT time, host, usage FROM cpu").await;
        assert_eq!(wait(&q, "m"), "ready");
        assert_eq!(wait(&q, "f"), "ready");
        engine.shutdown().unwrap();
    }
    let files = |d: &std::path::Path| std::fs::read_dir(d.join("models")).map_or(0, |r| r.count());
    assert_eq!(files(dir.path()), 2);
    {
        let (engine, q) = local(dir.path());
        let rows: Vec<(String, String, u64)> = q
            .models
            .show("db")
            .into_iter()
            .map(|r| (r.name, r.status, r.series))
            .collect();
        assert_eq!(
            rows,
            [
                ("f".into(), "ready".into(), 3),
                ("m".into(), "ready".into(), 3)
            ]
        );
        let t = common::table(&q, "SELECT count(*) FROM forecast('f', 5)").await;
        assert!(t.contains("| 15 "), "{t}");
        let t = common::table(
            &q,
            "SELECT count(s) FROM (SELECT anomaly_score(usage, 'm') AS s FROM cpu)",
        )
        .await;
        assert!(t.contains("| 1440 "), "{t}");
        common::exec(&q, "DROP MODEL m").await;
        // REFRESH retrains from the same query's current rows.
        common::exec(&q, &values(&["d"], 0, 100)).await;
        common::exec(&q, "ALTER MODEL f REFRESH").await;
        assert_eq!(wait(&q, "f"), "ready");
        assert_eq!(q.models.show("db")[0].series, 4);
        engine.shutdown().unwrap();
    }
    assert_eq!(
        files(dir.path()),
        1,
        "m's file is gone, f's old version replaced"
    );
    let (_engine, q) = local(dir.path());
    let names: Vec<String> = q.models.show("db").into_iter().map(|r| r.name).collect();
    assert_eq!(names, ["f"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn training_rows_past_the_memory_budget_are_refused_naming_the_setting() {
    let (_engine, dbs) = common::engine();
    let limits = QueryLimits {
        model_memory_bytes: 20_000,
        ..QueryLimits::default()
    };
    let q = QueryService::new(dbs, limits).unwrap();
    setup(&q).await;
    let e = err(
        &q,
        "CREATE MODEL m WITH (task = 'anomaly_detection') AS SELECT time, host, usage FROM cpu",
    )
    .await;
    assert!(
        e.to_string().contains("model_memory_bytes") && e.to_string().contains("20000"),
        "{e}"
    );
    assert!(q.models.show("db").is_empty(), "nothing recorded");
}
