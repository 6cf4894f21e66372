//! PromQL through the front door over an in-memory engine: selectors, range functions,
//! aggregations, binary operators, functions and the metric-name mapping, on data whose
//! answers are worked by hand. (The comparison against a real Prometheus is in the CLI's
//! end-to-end tests.)

mod common;

use std::collections::BTreeMap;

use arrow::array::{Array, AsArray};
use arrow::datatypes::{Float64Type, Int64Type};
use tempora_query::promql::{self, Steps};
use tempora_query::sql::Statement;
use tempora_query::{QueryOptions, QueryService};

const T0: i64 = 1_700_000_000_000;

/// One answer row: labels (absent ones left out), time, value.
type Row = (BTreeMap<String, String>, i64, f64);

async fn run(
    q: &QueryService,
    text: &str,
    steps: Steps,
    instant: bool,
) -> Result<Vec<Row>, String> {
    let query = promql::parse(text, steps, promql::DEFAULT_LOOKBACK_MS, instant)
        .map_err(|e| e.to_string())?;
    let mut opts = QueryOptions::default();
    let out = q
        .run_statement(
            "db",
            &Statement::PromQl(Box::new(query)),
            &mut opts,
            &tempora_query::access::Unrestricted,
            0,
        )
        .await
        .map_err(|e| e.to_string())?;
    let mut rows = Vec::new();
    for b in &out.batches {
        let n = b.num_columns();
        for i in 0..b.num_rows() {
            let mut labels = BTreeMap::new();
            for c in 0..n - 2 {
                let col = b.column(c).as_string::<i32>();
                if !col.is_null(i) {
                    labels.insert(b.schema().field(c).name().clone(), col.value(i).to_string());
                }
            }
            let t = b.column(n - 2).as_primitive::<Int64Type>().value(i);
            let v = b.column(n - 1).as_primitive::<Float64Type>().value(i);
            rows.push((labels, t, v));
        }
    }
    rows.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    Ok(rows)
}

async fn instant(q: &QueryService, text: &str, t: i64) -> Vec<Row> {
    run(q, text, Steps::instant(t), true)
        .await
        .unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Counters every 15 s for 10 minutes: `a` +1/s, `b` +2/s, `c` +1/s with a reset to 0 at
/// 5 minutes; gauges in `cpu`; a histogram.
async fn setup() -> QueryService {
    let (_engine, q) = common::service().await;
    common::exec(
        &q,
        "CREATE TABLE http_requests_total (job TAG, instance TAG, value DOUBLE)",
    )
    .await;
    common::exec(
        &q,
        "CREATE TABLE cpu (hostname TAG, usage_user DOUBLE, usage_system DOUBLE)",
    )
    .await;
    common::exec(
        &q,
        "CREATE TABLE latency_bucket (le TAG, job TAG, value DOUBLE)",
    )
    .await;
    let mut rows = Vec::new();
    for i in 0..=40 {
        let t = T0 + i * 15_000;
        let s = i * 15;
        let c = if i < 20 { s } else { s - 300 };
        for (job, inst, v) in [("api", "a", s), ("api", "b", 2 * s), ("db", "c", c)] {
            rows.push(format!("({t} * 1000000, '{job}', '{inst}', {v})"));
        }
    }
    common::exec(
        &q,
        &format!(
            "INSERT INTO http_requests_total (time, job, instance, value) VALUES {}",
            rows.join(",")
        ),
    )
    .await;
    let cpu: Vec<String> = (0..=4)
        .flat_map(|i| {
            let t = T0 + i * 60_000;
            [
                format!("({t} * 1000000, 'h1', {}, 1)", 10 + i),
                format!("({t} * 1000000, 'h2', {}, 2)", 50 - i),
            ]
        })
        .collect();
    common::exec(
        &q,
        &format!(
            "INSERT INTO cpu (time, hostname, usage_user, usage_system) VALUES {}",
            cpu.join(",")
        ),
    )
    .await;
    // 100 observations: 50 ≤ 0.1, 90 ≤ 0.5, 100 ≤ 1.
    common::exec(
        &q,
        &format!(
            "INSERT INTO latency_bucket (time, job, le, value) VALUES \
             ({T0} * 1000000, 'api', '0.1', 50), ({T0} * 1000000, 'api', '0.5', 90), \
             ({T0} * 1000000, 'api', '1', 100), ({T0} * 1000000, 'api', '+Inf', 100)"
        ),
    )
    .await;
    q
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn selectors_and_range_functions() {
    let q = setup().await;
    let t = T0 + 60_000;
    assert_eq!(
        instant(&q, r#"http_requests_total{job="api"}"#, t).await,
        vec![
            (
                labels(&[
                    ("__name__", "http_requests_total"),
                    ("instance", "a"),
                    ("job", "api")
                ]),
                t,
                60.0
            ),
            (
                labels(&[
                    ("__name__", "http_requests_total"),
                    ("instance", "b"),
                    ("job", "api")
                ]),
                t,
                120.0
            ),
        ]
    );
    // Between samples the newest one is taken; past the lookback nothing.
    assert_eq!(
        instant(&q, r#"http_requests_total{instance="a"}"#, t + 14_999).await[0].2,
        60.0
    );
    assert!(
        instant(
            &q,
            r#"http_requests_total{instance="a"}"#,
            T0 + 10 * 60_000 + 300_001
        )
        .await
        .is_empty()
    );
    // Matchers: regex (anchored), negative, absent label as "".
    assert_eq!(
        instant(&q, r#"http_requests_total{instance=~"a|c"}"#, t)
            .await
            .len(),
        2
    );
    assert_eq!(
        instant(&q, r#"http_requests_total{instance=~"a.*|"}"#, t)
            .await
            .len(),
        1
    );
    assert_eq!(
        instant(&q, r#"http_requests_total{job!="api"}"#, t)
            .await
            .len(),
        1
    );
    assert_eq!(
        instant(&q, r#"http_requests_total{nolabel="", job="db"}"#, t)
            .await
            .len(),
        1
    );
    assert!(
        instant(&q, r#"http_requests_total{nolabel="x"}"#, t)
            .await
            .is_empty()
    );
    assert_eq!(
        instant(&q, r#"{__name__=~"http_.*", instance="b"}"#, t)
            .await
            .len(),
        1
    );
    // rate over a whole window of regular samples: exact.
    let at = T0 + 4 * 60_000;
    let rate = instant(&q, "rate(http_requests_total[1m])", at).await;
    assert_eq!(
        rate.iter()
            .map(|r| (r.0["instance"].as_str(), r.2))
            .collect::<Vec<_>>(),
        [("a", 1.0), ("b", 2.0), ("c", 1.0)]
    );
    assert!(!rate[0].0.contains_key("__name__"), "rate drops the name");
    // A reset inside the window: c goes 270, 285, 0, 15, 30; the drop to 0 adds the 285
    // before it, so the increase is 30 - 270 + 285 = 45.
    let inc = instant(
        &q,
        r#"increase(http_requests_total{instance="c"}[1m])"#,
        T0 + 5 * 60_000 + 30_000,
    )
    .await;
    assert_eq!(inc[0].2, 45.0);
    assert_eq!(
        instant(
            &q,
            r#"resets(http_requests_total{instance="c"}[10m])"#,
            T0 + 10 * 60_000
        )
        .await[0]
            .2,
        1.0
    );
    assert_eq!(
        instant(&q, r#"irate(http_requests_total{instance="b"}[1m])"#, at).await[0].2,
        2.0
    );
    assert_eq!(
        instant(
            &q,
            r#"count_over_time(http_requests_total{instance="b"}[1m])"#,
            at
        )
        .await[0]
            .2,
        5.0
    );
    let last = instant(
        &q,
        r#"last_over_time(http_requests_total{instance="b"}[1m])"#,
        at,
    )
    .await;
    assert_eq!(
        last[0].0["__name__"], "http_requests_total",
        "last_over_time keeps the name"
    );
    // Offset reads earlier and stamps the step.
    assert_eq!(
        instant(&q, r#"http_requests_total{instance="a"} offset 1m"#, at).await[0],
        (
            labels(&[
                ("__name__", "http_requests_total"),
                ("instance", "a"),
                ("job", "api")
            ]),
            at,
            180.0
        )
    );
    assert_eq!(
        instant(&q, r#"http_requests_total{instance="a"} @ 1700000030"#, at).await[0].2,
        30.0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregations_and_operators() {
    let q = setup().await;
    let at = T0 + 4 * 60_000;
    let sum = instant(&q, "sum by (job) (rate(http_requests_total[1m]))", at).await;
    assert_eq!(
        sum,
        vec![
            (labels(&[("job", "api")]), at, 3.0),
            (labels(&[("job", "db")]), at, 1.0)
        ]
    );
    assert_eq!(
        instant(&q, "sum(http_requests_total)", at).await,
        vec![(labels(&[]), at, 240.0 + 480.0 + 240.0)]
    );
    assert_eq!(
        instant(&q, "count without (instance) (http_requests_total)", at)
            .await
            .len(),
        2
    );
    let max = instant(&q, "max by (job) (http_requests_total)", at).await;
    assert_eq!(max[0].2, 480.0);
    let top = instant(&q, "topk(1, http_requests_total)", at).await;
    assert_eq!(top.len(), 1);
    assert_eq!(top[0].0["instance"], "b");
    let bottom = instant(&q, "bottomk by (job) (1, http_requests_total)", at).await;
    assert_eq!(
        bottom
            .iter()
            .map(|r| r.0["instance"].as_str())
            .collect::<Vec<_>>(),
        ["a", "c"]
    );
    assert_eq!(
        instant(&q, "quantile(0.5, http_requests_total)", at).await[0].2,
        240.0
    );
    // 240, 480, 240: mean 320, population variance (80² + 160² + 80²) / 3.
    assert_eq!(
        instant(&q, "stddev(http_requests_total)", at).await[0].2,
        12800f64.sqrt()
    );
    // vector ∘ scalar and comparisons.
    let halves = instant(&q, r#"http_requests_total{instance="a"} / 2"#, at).await;
    assert_eq!(
        halves,
        vec![(labels(&[("instance", "a"), ("job", "api")]), at, 120.0)]
    );
    assert_eq!(instant(&q, "http_requests_total > 300", at).await.len(), 1);
    assert_eq!(
        instant(&q, "300 < http_requests_total", at).await[0].2,
        480.0
    );
    let b = instant(&q, "http_requests_total > bool 300", at).await;
    assert_eq!(b.iter().map(|r| r.2).collect::<Vec<_>>(), [0.0, 1.0, 0.0]);
    assert!(!b[0].0.contains_key("__name__"));
    // vector ∘ vector with matching.
    let ratio = instant(&q, r#"http_requests_total{instance="b"} / ignoring(instance) group_left http_requests_total{instance="a"}"#, at).await;
    assert_eq!(
        ratio,
        vec![(labels(&[("instance", "b"), ("job", "api")]), at, 2.0)]
    );
    let on = instant(
        &q,
        r#"sum by (job) (http_requests_total) / on(job) sum by (job) (http_requests_total)"#,
        at,
    )
    .await;
    assert_eq!(on.iter().map(|r| r.2).collect::<Vec<_>>(), [1.0, 1.0]);
    let and = instant(
        &q,
        r#"http_requests_total and http_requests_total{instance="a"}"#,
        at,
    )
    .await;
    assert_eq!(and.len(), 1);
    let unless = instant(
        &q,
        r#"http_requests_total unless http_requests_total{instance="a"}"#,
        at,
    )
    .await;
    assert_eq!(unless.len(), 2);
    let or = instant(
        &q,
        r#"http_requests_total{instance="a"} or http_requests_total"#,
        at,
    )
    .await;
    assert_eq!(or.len(), 3);
    // `or on(job)`: the right side's series whose job the left lacks (db/c), with their own
    // labels; a right series of a job the left has (api/b) is dropped.
    let or_on = instant(
        &q,
        r#"http_requests_total{instance="a"} or on(job) (http_requests_total * 10)"#,
        at,
    )
    .await;
    let got: Vec<(Option<&str>, Option<&str>, f64)> = or_on
        .iter()
        .map(|r| {
            (
                r.0.get("instance").map(String::as_str),
                r.0.get("__name__").map(String::as_str),
                r.2,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (Some("a"), Some("http_requests_total"), 240.0),
            (Some("c"), None, 2400.0)
        ]
    );
    // Absent labels are equal (null to null): `vector(1)`'s empty signature matches only a
    // left series without labels, as in the `sum(x) or vector(0)` idiom.
    assert_eq!(
        instant(&q, "http_requests_total or vector(1)", at)
            .await
            .len(),
        4
    );
    assert_eq!(
        instant(&q, "sum(http_requests_total) or vector(1)", at).await,
        vec![(labels(&[]), at, 960.0)]
    );
    assert_eq!(
        instant(&q, "nonexistent or vector(1)", at).await,
        vec![(labels(&[]), at, 1.0)]
    );
    // Scalars.
    assert_eq!(
        instant(&q, "1 + 2 * 3", at).await,
        vec![(labels(&[]), at, 7.0)]
    );
    assert_eq!(instant(&q, "time()", at).await[0].2, at as f64 / 1000.0);
    assert_eq!(
        instant(&q, r#"scalar(http_requests_total{instance="a"})"#, at).await[0].2,
        240.0
    );
    assert!(
        instant(&q, "scalar(http_requests_total)", at).await[0]
            .2
            .is_nan()
    );
    assert_eq!(
        instant(&q, "vector(5)", at).await,
        vec![(labels(&[]), at, 5.0)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn functions_names_and_ranges() {
    let q = setup().await;
    let at = T0 + 4 * 60_000;
    // TSBS naming: table cpu, field usage_user.
    let cpu = instant(&q, "cpu_usage_user", at).await;
    assert_eq!(cpu.len(), 2);
    assert_eq!(cpu[0].0["__name__"], "cpu_usage_user");
    assert_eq!(cpu[0].2, 14.0);
    assert_eq!(
        instant(&q, r#"{__name__=~"cpu_.*", hostname="h1"}"#, at)
            .await
            .len(),
        2
    );
    let h = instant(&q, "histogram_quantile(0.7, latency_bucket)", T0).await;
    assert_eq!((&h[0].0, h[0].1), (&labels(&[("job", "api")]), T0));
    assert!((h[0].2 - 0.3).abs() < 1e-12, "{h:?}");
    let replaced = instant(
        &q,
        r#"label_replace(cpu_usage_user, "host", "$1", "hostname", "h(.*)")"#,
        at,
    )
    .await;
    assert_eq!(replaced[0].0["host"], "1");
    let joined = instant(
        &q,
        r#"label_join(cpu_usage_user, "both", "-", "hostname", "missing", "hostname")"#,
        at,
    )
    .await;
    assert_eq!(joined[0].0["both"], "h1--h1");
    assert_eq!(instant(&q, "abs(-cpu_usage_user)", at).await[0].2, 14.0);
    assert_eq!(
        instant(&q, "clamp_max(cpu_usage_user, 20)", at).await[1].2,
        20.0
    );
    assert_eq!(instant(&q, "round(cpu_usage_user / 3)", at).await[0].2, 5.0);
    assert_eq!(
        instant(
            &q,
            r#"timestamp(cpu_usage_user{hostname="h1"})"#,
            at + 30_000
        )
        .await[0]
            .2,
        at as f64 / 1000.0
    );
    assert!(
        instant(&q, r#"absent(cpu_usage_user{hostname="h1"})"#, at)
            .await
            .is_empty()
    );
    assert_eq!(
        instant(&q, r#"absent(nothing{job="x"})"#, at).await,
        vec![(labels(&[("job", "x")]), at, 1.0)]
    );
    assert_eq!(
        instant(&q, "deriv(cpu_usage_user{hostname=\"h1\"}[5m])", at).await[0].2,
        1.0 / 60.0
    );
    // A range query: one point per step.
    let range = run(
        &q,
        r#"cpu_usage_user{hostname="h2"}"#,
        Steps::range(T0, T0 + 240_000, 60_000).unwrap(),
        false,
    )
    .await
    .unwrap();
    assert_eq!(
        range.iter().map(|r| r.2).collect::<Vec<_>>(),
        [50.0, 49.0, 48.0, 47.0, 46.0]
    );
    let range = run(
        &q,
        "sum(rate(http_requests_total[1m]))",
        Steps::range(T0 + 60_000, T0 + 240_000, 15_000).unwrap(),
        false,
    )
    .await
    .unwrap();
    assert_eq!(range.len(), 13);
    assert!(range.iter().all(|r| r.2 == 4.0), "{range:?}");
    let t = run(
        &q,
        "time()",
        Steps::range(T0, T0 + 2000, 1000).unwrap(),
        false,
    )
    .await
    .unwrap();
    assert_eq!(
        t.iter().map(|r| r.2).collect::<Vec<_>>(),
        [1.7e9, 1.7e9 + 1.0, 1.7e9 + 2.0]
    );
    // Refusals name what is wrong.
    let err = run(
        &q,
        "rate(http_requests_total[5m])[10m:1m]",
        Steps::instant(at),
        true,
    )
    .await
    .unwrap_err();
    assert!(err.contains("not supported yet"), "{err}");
    let err = run(
        &q,
        "http_requests_total[5m]",
        Steps::range(T0, T0 + 60_000, 15_000).unwrap(),
        false,
    )
    .await
    .unwrap_err();
    assert!(err.contains("range vector"), "{err}");
    assert!(
        run(&q, "sum(", Steps::instant(at), true)
            .await
            .unwrap_err()
            .contains("parse error")
    );
    // Raw samples of a range vector in an instant query.
    let raw = instant(&q, r#"http_requests_total{instance="a"}[1m]"#, at).await;
    assert_eq!(
        raw.iter().map(|r| r.1).collect::<Vec<_>>(),
        [at - 60_000, at - 45_000, at - 30_000, at - 15_000, at]
    );
}

/// Long chains of binary operators plan and answer as short ones do: each level of the
/// planner builds its nodes without re-walking the plan below (a chain of 114 comparisons
/// took 1.3 s to plan under the fuzzer when every projection normalised its columns). Run
/// as the server runs a query, on a worker with the server's stack (16 MiB, cli main.rs):
/// the optimizer and the operators recurse once per level.
#[test]
fn long_operator_chains() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_stack_size(16 << 20)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async { tokio::spawn(operator_chains()).await.unwrap() });
}

async fn operator_chains() {
    let q = setup().await;
    let at = T0 + 4 * 60_000;
    let x = "http_requests_total";
    // 250 levels: near the bound of 256 operators a query may have.
    let compared = instant(&q, &vec![x; 250].join(" >= "), at).await;
    assert_eq!(
        compared.iter().map(|r| r.2).collect::<Vec<_>>(),
        [240.0, 480.0, 240.0]
    );
    assert_eq!(compared[0].0["__name__"], x, "a comparison keeps the name");
    let summed = instant(&q, &vec![x; 100].join(" + "), at).await;
    assert_eq!(
        summed.iter().map(|r| r.2).collect::<Vec<_>>(),
        [24_000.0, 48_000.0, 24_000.0]
    );
    assert!(!summed[0].0.contains_key("__name__"));
    let scalars = instant(&q, &vec!["time()"; 100].join(" - "), at).await;
    assert_eq!(scalars[0].2, -98.0 * at as f64 / 1000.0);
    // `or` reads each side once: 100 terms plan in linear size (an anti-join per `or`
    // doubled the plan, 2^99 nodes), and the answer is each series once.
    let ored = instant(&q, &vec![x; 100].join(" or "), at).await;
    assert_eq!(
        ored.iter().map(|r| r.2).collect::<Vec<_>>(),
        [240.0, 480.0, 240.0]
    );
    let alternating = (0..99)
        .map(|i| format!(r#"{x}{{instance="{}"}}"#, ["a", "b", "c"][i % 3]))
        .collect::<Vec<_>>()
        .join(" or ");
    assert_eq!(instant(&q, &alternating, at).await.len(), 3);
    let mixed = format!("{} > bool 0", vec![format!("{x} * 2"); 60].join(" - "));
    assert_eq!(
        instant(&q, &mixed, at)
            .await
            .iter()
            .map(|r| r.2)
            .collect::<Vec<_>>(),
        [0.0, 0.0, 0.0]
    );
}
