//! The bucket-aggregate fast path (`tempora_query::fast`) against DataFusion on the same
//! engine: every query of the shape is recognised and gives DataFusion's column names, types,
//! rows and order; queries outside the shape are left to DataFusion; a fold that cannot match
//! DataFusion exactly (NaN under max) hands the query back; the memory limit holds.

mod common;

use std::sync::Arc;

use arrow::array::Array;
use arrow::util::display::array_value_to_string;
use common::{engine, exec, flush, planner_only};
use tempora_query::service::QueryOutput;
use tempora_query::{QueryLimits, QueryOptions, QueryService};

/// Table `m`: hosts h0..h5 (h5 without a `region` tag, the others r0/r1), fields `i`
/// (integer) and `f` (float, NULL on every fifth row), every 7 minutes from 2024-01-01 22:00
/// to 02:00 the next day, so across a partition boundary. The first half is flushed to
/// files; the second half is in the memtable, written newest first (out of order), and
/// overwrites ten points of the first half (duplicates: the newest value wins).
async fn loaded() -> (Arc<tempora_storage::Engine>, QueryService, QueryService) {
    let (engine, dbs) = engine();
    let fast = QueryService::new(dbs.clone(), QueryLimits::default()).unwrap();
    let planner = planner_only(dbs);
    let start = 1_704_146_400i64; // 2024-01-01T22:00:00Z
    let row = |h: i64, k: i64, bump: i64| {
        let t = start + k * 420 + h * 11;
        let i = (h * 37 + k * 13) % 101 + bump;
        let f = if k % 5 == 1 {
            "NULL".to_string()
        } else {
            format!("{:.2}", (h * 7 + k) as f64 * 0.25 - 3.0)
        };
        let ts = format!(
            "'{}'",
            chrono::DateTime::from_timestamp(t, 0)
                .unwrap()
                .format("%Y-%m-%dT%H:%M:%SZ")
        );
        match h {
            5 => format!("INSERT INTO m (time, host, i, f) VALUES ({ts}, 'h{h}', {i}, {f})"),
            _ => format!(
                "INSERT INTO m (time, host, region, i, f) VALUES ({ts}, 'h{h}', 'r{}', {i}, {f})",
                h % 2
            ),
        }
    };
    for k in 0..18 {
        for h in 0..6 {
            exec(&fast, &row(h, k, 0)).await;
        }
    }
    flush(&engine).await;
    for k in (18..35).rev() {
        for h in 0..6 {
            exec(&fast, &row(h, k, 0)).await;
        }
    }
    for k in 3..8 {
        for h in [1, 4] {
            exec(&fast, &row(h, k, 1000)).await;
        }
    }
    (engine, fast, planner)
}

async fn run(q: &QueryService, sql: &str) -> QueryOutput {
    q.sql("db", sql, 0)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// Rows as text, floats rounded to 9 significant digits (float sums may differ in the last
/// bits between the two, as between two DataFusion runs).
fn rows(out: &QueryOutput) -> Vec<Vec<String>> {
    let mut all = Vec::new();
    for b in &out.batches {
        for r in 0..b.num_rows() {
            all.push(
                b.columns()
                    .iter()
                    .map(|c| cell(c.as_ref(), r))
                    .collect::<Vec<_>>(),
            );
        }
    }
    all
}

fn cell(c: &dyn Array, r: usize) -> String {
    if c.is_null(r) {
        return "NULL".into();
    }
    let s = array_value_to_string(c, r).unwrap();
    match c.data_type() {
        arrow::datatypes::DataType::Float64 => format!("{:.9e}", s.parse::<f64>().unwrap()),
        _ => s,
    }
}

fn columns(out: &QueryOutput) -> Vec<(String, arrow::datatypes::DataType)> {
    out.schema
        .fields()
        .iter()
        .map(|f| (f.name().clone(), f.data_type().clone()))
        .collect()
}

/// Queries of the shape: (name, SQL, whether the order is defined by the query).
const SHAPED: &[(&str, &str, bool)] = &[
    (
        "single-groupby: one host, max per 10 minutes, a window across midnight",
        "SELECT date_trunc('hour', time) AS hour, max(i) AS max_i FROM m \
         WHERE (host = 'h1') AND time >= '2024-01-01T23:10:00Z' AND time < '2024-01-02T01:20:00Z' \
         GROUP BY hour ORDER BY hour ASC",
        true,
    ),
    (
        "cpu-max-all: hosts OR-ed together, every aggregate",
        "SELECT date_trunc('hour', time) AS hour, max(i) AS a, min(i) AS b, sum(i) AS c, \
         avg(i) AS d, count(i) AS e, max(f) AS g, min(f) AS h, sum(f) AS k, avg(f) AS l, \
         count(f) AS n, count(*) AS o FROM m \
         WHERE (host = 'h0' OR host = 'h3' OR host = 'h5') AND time >= '2024-01-01T22:30:00Z' \
         AND time < '2024-01-02T02:00:00Z' GROUP BY hour ORDER BY hour",
        true,
    ),
    (
        "double-groupby: per host per minute bucket, tag in the select list",
        "SELECT date_trunc('minute', time) AS minute, host, avg(i) AS mean_i FROM m \
         WHERE time >= '2024-01-01T22:00:00Z' AND time < '2024-01-02T00:30:00Z' \
         GROUP BY minute, host ORDER BY minute, host",
        true,
    ),
    (
        "groupby-orderby-limit: newest 5 minutes before a time",
        "SELECT date_trunc('minute', time) AS minute, max(i) AS max_i FROM m \
         WHERE time < '2024-01-02T01:00:00Z' GROUP BY minute ORDER BY minute DESC LIMIT 5",
        true,
    ),
    (
        "DESC LIMIT where the newest buckets are sparse (the window widens)",
        "SELECT date_trunc('second', time) AS s, host, count(*) AS n FROM m \
         WHERE time < '2024-01-02T01:00:00Z' GROUP BY s, host ORDER BY s DESC, host LIMIT 40",
        true,
    ),
    (
        "DESC LIMIT larger than the data",
        "SELECT date_trunc('hour', time) AS h, sum(i) AS s FROM m \
         WHERE time < '2030-01-01T00:00:00Z' GROUP BY h ORDER BY h DESC LIMIT 100",
        true,
    ),
    (
        "a tag some series lack groups them under NULL",
        "SELECT region, date_trunc('day', time) AS d, count(*) AS n, max(f) AS mf FROM m \
         GROUP BY region, d ORDER BY region, d",
        true,
    ),
    (
        "DESC sorts NULL first",
        "SELECT region, count(i) AS n FROM m GROUP BY region ORDER BY region DESC",
        true,
    ),
    (
        "NULLS LAST on DESC, and a position in ORDER BY",
        "SELECT region, sum(i) AS s FROM m GROUP BY 1 ORDER BY 1 DESC NULLS LAST",
        true,
    ),
    (
        "ordered by an aggregate, grouped by a tag that is not selected",
        "SELECT max(i) AS top FROM m GROUP BY host ORDER BY top DESC, 1",
        true,
    ),
    (
        "no GROUP BY: one row of the whole range",
        "SELECT count(*), max(i), avg(f) FROM m WHERE host IN ('h2', 'h4')",
        true,
    ),
    (
        "no GROUP BY and no matching row: still one row",
        "SELECT count(*) AS n, max(i) AS mx, sum(f) AS s FROM m WHERE host = 'nobody'",
        true,
    ),
    (
        "GROUP BY and an empty time range: no row",
        "SELECT date_trunc('hour', time) AS h, count(*) AS n FROM m \
         WHERE time >= '2024-01-02T00:00:00Z' AND time < '2024-01-01T00:00:00Z' GROUP BY h",
        true,
    ),
    (
        "time compared both ways round, > and <=, and a naive literal",
        "SELECT date_trunc('minute', time) AS m1, count(*) AS n FROM m \
         WHERE '2024-01-01T23:00:00Z' < time AND time <= '2024-01-02 00:00:00' \
         AND region = 'r1' GROUP BY m1 ORDER BY m1",
        true,
    ),
    (
        "tag AND tag, IN, a table alias with qualified columns",
        "SELECT date_trunc('hour', c.time) AS h, c.host, min(c.i) AS lo FROM m c \
         WHERE c.region = 'r0' AND c.host IN ('h0', 'h2', 'h5') GROUP BY h, c.host \
         ORDER BY h, host",
        true,
    ),
    (
        "week buckets (Monday) and GROUP BY the expression itself",
        "SELECT date_trunc('week', time) AS w, count(*) AS n FROM m \
         GROUP BY date_trunc('week', time) ORDER BY w",
        true,
    ),
    (
        "unaliased aggregates and tags keep DataFusion's names; no ORDER BY",
        "SELECT host, max(i), count(*), avg(i) FROM m GROUP BY host",
        false,
    ),
    (
        "LIMIT without ORDER BY on a unique group count",
        "SELECT count(*) AS n FROM m WHERE host = 'h3' LIMIT 1",
        true,
    ),
    (
        "ORDER BY ASC with LIMIT (no window: the whole range is read)",
        "SELECT date_trunc('minute', time) AS minute, max(i) AS mx FROM m \
         GROUP BY minute ORDER BY minute LIMIT 3",
        true,
    ),
];

#[tokio::test]
async fn shaped_queries_answer_as_datafusion_does() {
    let (_engine, fast, planner) = loaded().await;
    for (name, sql, ordered) in SHAPED {
        assert!(
            fast.recognize_fast("db", sql).is_some(),
            "{name}: not recognised: {sql}"
        );
        let (a, b) = (run(&fast, sql).await, run(&planner, sql).await);
        assert_eq!(columns(&a), columns(&b), "{name}: columns");
        let (mut ra, mut rb) = (rows(&a), rows(&b));
        if !ordered {
            ra.sort();
            rb.sort();
        }
        assert_eq!(ra, rb, "{name}: rows of {sql}");
    }
}

#[tokio::test]
async fn the_data_really_is_in_files_and_memtable_and_across_partitions() {
    // The fixture the comparisons rely on: both halves and both days answer.
    let (_engine, fast, _) = loaded().await;
    let out = run(
        &fast,
        "SELECT date_trunc('day', time) AS d, count(*) AS n FROM m GROUP BY d ORDER BY d",
    )
    .await;
    assert_eq!(
        rows(&out),
        vec![
            vec!["2024-01-01T00:00:00Z".to_string(), "108".to_string()],
            vec!["2024-01-02T00:00:00Z".to_string(), "102".to_string()],
        ]
    );
    // The overwritten points hold their second value: i = (37 + 13 k) % 101 + 1000 for
    // k = 3..=7 is 1076, 1089, 1001, 1014, 1027.
    let out = run(&fast, "SELECT min(i) AS lo FROM m WHERE host = 'h1' AND time >= '2024-01-01T22:21:00Z' AND time < '2024-01-01T22:56:00Z'").await;
    assert_eq!(rows(&out), vec![vec!["1001".to_string()]]);
}

/// Latest-value queries of the shape (answered from the last-value cache).
const LATEST: &[(&str, &str)] = &[
    (
        "lastpoint as TSBS writes it",
        "SELECT DISTINCT ON (host) time, host, region, i, f FROM m ORDER BY host, time DESC",
    ),
    (
        "a key some series lack (NULL sorts last), aliases",
        "SELECT DISTINCT ON (region) region AS r, time AS t, i AS value FROM m \
         ORDER BY region, time DESC",
    ),
    (
        "two keys, one descending, tag filter, LIMIT",
        "SELECT DISTINCT ON (region, host) host, f FROM m WHERE host IN ('h1', 'h2', 'h5') \
         ORDER BY region DESC, host, time DESC LIMIT 2",
    ),
    (
        "no field at all",
        "SELECT DISTINCT ON (host) host, time FROM m WHERE region = 'r0' ORDER BY host, time DESC",
    ),
];

#[tokio::test]
async fn latest_queries_answer_as_datafusion_does() {
    let (_engine, fast, planner) = loaded().await;
    for (name, sql) in LATEST {
        assert!(
            matches!(
                fast.recognize_fast("db", sql),
                Some(tempora_query::fast::FastQuery::Latest(_))
            ),
            "{name}: not recognised: {sql}"
        );
        let (a, b) = (run(&fast, sql).await, run(&planner, sql).await);
        assert_eq!(columns(&a), columns(&b), "{name}: columns");
        assert_eq!(rows(&a), rows(&b), "{name}: rows of {sql}");
    }
    // The newest row per host is the overwritten or the latest point: h1's newest is k = 34.
    let out = run(&fast, LATEST[0].1).await;
    assert_eq!(rows(&out)[1][0], "2024-01-02T01:58:11Z");
}

/// Row selections of the shape: (name, SQL, whether the order is defined by the query).
const ROWS: &[(&str, &str, bool)] = &[
    (
        "high-cpu as TSBS writes it: an integer field against a float",
        "SELECT time, host, region, i, f FROM m WHERE i > 50.0 AND time >= '2024-01-01T23:00:00Z' \
         AND time < '2024-01-02T01:00:00Z' AND (host = 'h1') ORDER BY host, time",
        true,
    ),
    (
        "every host, an integer literal",
        "SELECT time, host, i FROM m WHERE i >= 60 ORDER BY host, time",
        true,
    ),
    (
        "a float field against an integer, newest first",
        "SELECT time, host, f FROM m WHERE f < 2 ORDER BY time DESC, host",
        true,
    ),
    (
        "literal first, two comparisons, descending host, LIMIT",
        "SELECT host, time, i, f FROM m WHERE 30 < i AND f >= -1.5 ORDER BY host DESC, time LIMIT 7",
        true,
    ),
    (
        "no WHERE, ordered by an alias",
        "SELECT host, time AS t FROM m ORDER BY t DESC, host LIMIT 5",
        true,
    ),
    (
        "not equal, and a NULL field never passes a comparison",
        "SELECT host, time, f FROM m WHERE i <> 37 AND f > -100 ORDER BY host, time",
        true,
    ),
    (
        "ordered by columns not selected",
        "SELECT host FROM m WHERE i = 50 ORDER BY time, host",
        true,
    ),
    (
        "a tag some series lack, NULLS FIRST",
        "SELECT host, region, time FROM m WHERE i > 90 ORDER BY region NULLS FIRST, host, time",
        true,
    ),
    (
        "no ORDER BY",
        "SELECT host, i FROM m WHERE region = 'r1' AND i < 20",
        false,
    ),
];

#[tokio::test]
async fn row_selections_answer_as_datafusion_does() {
    let (_engine, fast, planner) = loaded().await;
    for (name, sql, ordered) in ROWS {
        assert!(
            matches!(
                fast.recognize_fast("db", sql),
                Some(tempora_query::fast::FastQuery::Rows(_))
            ),
            "{name}: not recognised: {sql}"
        );
        let (a, b) = (run(&fast, sql).await, run(&planner, sql).await);
        assert_eq!(columns(&a), columns(&b), "{name}: columns");
        let (mut ra, mut rb) = (rows(&a), rows(&b));
        assert!(!ra.is_empty(), "{name}: the case selects rows");
        if !ordered {
            ra.sort();
            rb.sort();
        }
        assert_eq!(ra, rb, "{name}: rows of {sql}");
    }
}

/// Texts outside the shape, each for one reason: DataFusion answers them.
const UNSHAPED: &[(&str, &str)] = &[
    (
        "HAVING",
        "SELECT host, max(i) AS m1 FROM m GROUP BY host HAVING max(i) > 3",
    ),
    ("DISTINCT", "SELECT DISTINCT host FROM m"),
    (
        "a month has no fixed length",
        "SELECT date_trunc('month', time) AS mo, count(*) AS n FROM m GROUP BY mo",
    ),
    (
        "unaliased date_trunc",
        "SELECT date_trunc('hour', time), count(*) FROM m GROUP BY 1",
    ),
    (
        "a field predicate",
        "SELECT count(*) AS n FROM m WHERE i > 3",
    ),
    (
        "!= on a tag",
        "SELECT count(*) AS n FROM m WHERE host != 'h1'",
    ),
    (
        "a join",
        "SELECT count(*) AS n FROM m a JOIN m b ON a.host = b.host",
    ),
    ("a subquery", "SELECT count(*) AS n FROM (SELECT * FROM m)"),
    (
        "an alias that names a column",
        "SELECT host, max(i) AS f FROM m GROUP BY host ORDER BY f",
    ),
    ("an aggregate over a tag", "SELECT max(host) AS h FROM m"),
    (
        "time relative to now()",
        "SELECT count(*) AS n FROM m WHERE time > now() - interval '1 hour'",
    ),
    (
        "OFFSET",
        "SELECT host, count(*) AS n FROM m GROUP BY host ORDER BY host LIMIT 2 OFFSET 1",
    ),
    ("two statements", "SELECT count(*) AS n FROM m; SELECT 1"),
    (
        "a selected tag that is not grouped",
        "SELECT host, count(*) AS n FROM m",
    ),
    (
        "a bucket that is not grouped",
        "SELECT date_trunc('hour', time) AS h, count(*) AS n FROM m GROUP BY host",
    ),
    (
        "a table that does not exist",
        "SELECT count(*) AS n FROM nope",
    ),
    (
        "a time literal that does not parse",
        "SELECT count(*) AS n FROM m WHERE time > 'yesterday'",
    ),
    ("count(DISTINCT)", "SELECT count(DISTINCT i) AS n FROM m"),
    ("a wildcard", "SELECT * FROM m WHERE host = 'h1'"),
    ("two outputs of one name", "SELECT i, i FROM m"),
    (
        "two aliases of one name",
        "SELECT i AS a, f AS a FROM m ORDER BY a",
    ),
    (
        "latest with two outputs of one name",
        "SELECT DISTINCT ON (host) host, i AS host FROM m ORDER BY host, time DESC",
    ),
    ("an empty select list", "SELECT FROM m"),
    (
        "a qualified name that is an output alias",
        "SELECT host, time AS t2 FROM m t ORDER BY t.t2",
    ),
    (
        "an expression in the select list",
        "SELECT time, i + 1 AS j FROM m",
    ),
    (
        "a field comparison inside OR",
        "SELECT time, i FROM m WHERE i > 1 OR host = 'h1'",
    ),
    (
        "a field against a string",
        "SELECT time, i FROM m WHERE i > '5'",
    ),
    (
        "an alias that names another column",
        "SELECT i AS f, time FROM m ORDER BY f",
    ),
    (
        "DISTINCT ON without time DESC",
        "SELECT DISTINCT ON (host) host, i FROM m ORDER BY host, time",
    ),
    (
        "DISTINCT ON a field",
        "SELECT DISTINCT ON (i) i, time FROM m ORDER BY i, time DESC",
    ),
    (
        "DISTINCT ON with a time bound",
        "SELECT DISTINCT ON (host) host, i FROM m WHERE time > '2024-01-01T00:00:00Z' ORDER BY host, time DESC",
    ),
    (
        "DISTINCT ON with an extra sort key",
        "SELECT DISTINCT ON (host) host, i FROM m ORDER BY host, time DESC, i",
    ),
    (
        "DISTINCT ON an expression",
        "SELECT DISTINCT ON (upper(host)) host, i FROM m ORDER BY upper(host), time DESC",
    ),
];

#[tokio::test]
async fn other_queries_are_left_to_datafusion() {
    let (_engine, fast, _) = loaded().await;
    for (why, sql) in UNSHAPED {
        assert!(
            fast.recognize_fast("db", sql).is_none(),
            "{why}: recognised: {sql}"
        );
    }
}

#[tokio::test]
async fn a_nan_under_max_hands_the_query_back_to_datafusion() {
    let (_engine, fast, planner) = loaded().await;
    exec(
        &fast,
        "INSERT INTO m (time, host, region, i, f) VALUES ('2024-01-01T23:00:00Z', 'h0', 'r0', 1, 'NaN'::double)",
    )
    .await;
    // Row selections compare with Arrow's kernels, as DataFusion does, NaN included.
    for sql in [
        "SELECT host, time, f FROM m WHERE f > 0 ORDER BY host, time",
        "SELECT host, time, f FROM m WHERE f <= 1 ORDER BY host, time",
    ] {
        assert!(fast.recognize_fast("db", sql).is_some(), "{sql}");
        assert_eq!(
            rows(&run(&fast, sql).await),
            rows(&run(&planner, sql).await),
            "{sql}"
        );
    }
    let sql = "SELECT host, max(f) AS mf, min(f) AS lo FROM m GROUP BY host ORDER BY host";
    let q = fast.recognize_fast("db", sql).expect("recognised");
    // The fold itself turns it down ...
    assert!(
        fast.run_fast("db", q, &QueryOptions::default())
            .await
            .is_none()
    );
    // ... and the service's answer is DataFusion's.
    let (a, b) = (run(&fast, sql).await, run(&planner, sql).await);
    assert_eq!(rows(&a), rows(&b));
}

#[tokio::test]
async fn signed_zeros_under_max_hand_the_query_back_to_datafusion() {
    let (_engine, fast, planner) = loaded().await;
    for (t, f) in [
        ("2024-01-01T23:00:00Z", "0.0"),
        ("2024-01-01T23:01:00Z", "-0.0"),
    ] {
        exec(
            &fast,
            &format!("INSERT INTO m (time, host, i, f) VALUES ('{t}', 'hz', 1, {f})"),
        )
        .await;
    }
    for sql in [
        "SELECT max(f) AS mx FROM m WHERE host = 'hz'",
        "SELECT min(f) AS mn FROM m WHERE host = 'hz'",
    ] {
        let q = fast.recognize_fast("db", sql).expect("recognised");
        assert!(
            fast.run_fast("db", q, &QueryOptions::default())
                .await
                .is_none(),
            "{sql}"
        );
        assert_eq!(
            rows(&run(&fast, sql).await),
            rows(&run(&planner, sql).await)
        );
    }
    // One zero alone is folded as any value.
    let sql = "SELECT max(f) AS mx FROM m WHERE host = 'hz' AND time < '2024-01-01T23:00:30Z'";
    let q = fast.recognize_fast("db", sql).expect("recognised");
    assert!(
        fast.run_fast("db", q, &QueryOptions::default())
            .await
            .is_some()
    );
}

#[tokio::test]
async fn the_memory_limit_holds_on_the_fast_path() {
    let (_engine, fast, _) = loaded().await;
    let sql = "SELECT date_trunc('second', time) AS s, host, max(i) AS mx FROM m GROUP BY s, host";
    let q = fast.recognize_fast("db", sql).expect("recognised");
    let tiny = QueryOptions {
        memory_bytes: Some(512),
        ..QueryOptions::default()
    };
    let err = fast
        .run_fast("db", q, &tiny)
        .await
        .expect("answered, not handed back")
        .expect_err("over its limit");
    assert_eq!(err.sqlstate(), "53200", "{err}");
    assert_eq!(err.http_status(), 507, "{err}");
    // The same query within the default limit answers.
    assert!(!rows(&run(&fast, sql).await).is_empty());
}

#[tokio::test]
async fn the_result_row_cap_holds_on_the_fast_path() {
    let (_engine, fast, _) = loaded().await;
    let sql = "SELECT host, count(*) AS n FROM m GROUP BY host";
    let capped = QueryOptions {
        max_rows: Some(3),
        ..QueryOptions::default()
    };
    let err = fast.sql_with("db", sql, 0, &capped).await.unwrap_err();
    assert!(err.to_string().contains("more than 3 rows"), "{err}");
}

#[tokio::test]
async fn explain_shows_the_fast_path_and_its_pruning() {
    let (_engine, fast, planner) = loaded().await;
    let sql = "SELECT date_trunc('hour', time) AS h, max(i) AS mx FROM m \
               WHERE host = 'h1' AND time >= '2024-01-02T00:00:00Z' GROUP BY h ORDER BY h";
    let text = |out: QueryOutput| rows(&out).concat().join("\n");
    let plan = text(run(&fast, &format!("EXPLAIN {sql}")).await);
    assert!(
        plan.contains(
            "TemporaFastAggregate: bucket=3600000000000ns, group=[], aggregates=[max(i)]"
        ),
        "{plan}"
    );
    // One partition of two, one host of six.
    assert!(plan.contains("regions=1/"), "{plan}");
    assert!(plan.contains("series=1/"), "{plan}");
    assert!(plan.contains("tags=host = 'h1'"), "{plan}");
    // DataFusion's plan where the fast path is off, and for EXPLAIN ANALYZE.
    let df = text(run(&planner, &format!("EXPLAIN {sql}")).await);
    assert!(
        !df.contains("TemporaFast") && df.contains("TemporaScanExec"),
        "{df}"
    );
    let analyze = text(run(&fast, &format!("EXPLAIN ANALYZE {sql}")).await);
    assert!(!analyze.contains("TemporaFast"), "{analyze}");
    let latest = text(run(&fast, &format!("EXPLAIN {}", LATEST[0].1)).await);
    assert!(
        latest.contains("TemporaFastLatest: newest per [host]"),
        "{latest}"
    );
}

/// Enough series (300 hosts, over several regions and two partitions, half in files) for the
/// fast path to read regions ahead on a thread of its own: the rows are DataFusion's.
#[tokio::test]
async fn many_series_read_ahead_answer_as_datafusion_does() {
    let (engine, dbs) = engine();
    let fast = QueryService::new(dbs.clone(), QueryLimits::default()).unwrap();
    let planner = planner_only(dbs);
    let start = 1_704_150_000i64; // 2024-01-01T23:00:00Z
    for k in 0..6i64 {
        let ts = chrono::DateTime::from_timestamp(start + k * 1200, 0)
            .unwrap()
            .format("%Y-%m-%dT%H:%M:%SZ");
        let values: Vec<String> = (0..300i64)
            .map(|h| {
                format!(
                    "('{ts}', 'h{h}', 'r{}', {}, {}.5)",
                    h % 7,
                    (h * 31 + k) % 97,
                    h - k
                )
            })
            .collect();
        exec(
            &fast,
            &format!(
                "INSERT INTO w (time, host, region, i, f) VALUES {}",
                values.join(", ")
            ),
        )
        .await;
        if k == 2 {
            flush(&engine).await;
        }
    }
    let explain = run(&fast, "EXPLAIN SELECT date_trunc('hour', time) AS hour, host, avg(i) AS a FROM w GROUP BY hour, host").await;
    let plan = format!("{:?}", rows(&explain));
    assert!(
        plan.contains("series=600/600"),
        "two partitions of 300 series: {plan}"
    );
    for sql in [
        "SELECT date_trunc('hour', time) AS hour, host, avg(i) AS a, max(f) AS b FROM w \
         GROUP BY hour, host ORDER BY hour, host",
        "SELECT date_trunc('minute', time) AS m, region, sum(i) AS s, count(*) AS n FROM w \
         WHERE time >= '2024-01-01T23:10:00Z' GROUP BY m, region ORDER BY m, region",
        "SELECT date_trunc('hour', time) AS hour, max(i) AS a, min(f) AS b FROM w \
         GROUP BY hour ORDER BY hour",
    ] {
        assert!(
            fast.recognize_fast("db", sql).is_some(),
            "not recognised: {sql}"
        );
        let (a, b) = (run(&fast, sql).await, run(&planner, sql).await);
        assert_eq!(columns(&a), columns(&b), "columns of {sql}");
        assert_eq!(rows(&a), rows(&b), "rows of {sql}");
        assert!(!rows(&a).is_empty(), "{sql}");
    }
}
