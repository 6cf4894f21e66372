//! The table scan over a real engine: pushed-down tag predicates give the rows a full scan
//! gives, `EXPLAIN` reports the pruning, limits stop the scan, and latest-value queries read
//! the last-value cache with the same result as reading the data.

mod common;

use std::sync::Arc;

use common::{engine_with_day_partitions, exec, flush, planner_only, table};
use tempora_query::{QueryLimits, QueryService};

/// 8 hosts × 2 regions; series of host h4 and up have a `dc` tag. Three days, so three
/// partitions; the first two are flushed to files and the third is in the memtable.
///
/// Services: the DataFusion plans these tests inspect (fast path off), the same without the
/// last-value cache, and the default service (fast path on).
async fn loaded() -> (
    Arc<tempora_storage::Engine>,
    QueryService,
    QueryService,
    QueryService,
) {
    // One-day partitions: the cases count series × days (learned widths would put the
    // hourly rows of days 2 and 3 in one partition once day 1 is flushed).
    let (engine, dbs) = engine_with_day_partitions();
    let q = planner_only(dbs.clone());
    let fast = QueryService::new(dbs.clone(), QueryLimits::default()).unwrap();
    let plain = QueryService::new(
        dbs,
        QueryLimits {
            last_value_cache: false,
            ..QueryLimits::default()
        },
    )
    .unwrap();
    for day in 1..=3 {
        let mut lp = String::new();
        for h in 0..8 {
            for r in 1..=2 {
                let dc = if h >= 4 { ",dc=d1" } else { "" };
                for i in 0..6 {
                    let t = format!("2024-01-0{day}T0{i}:00:00Z");
                    let v = (day * 100 + h * 10 + r + i) as f64;
                    lp.push_str(&format!(
                        "INSERT INTO cpu (time, host, region{}, v) VALUES ('{t}', 'h{h}', 'r{r}'{}, {v});\n",
                        if dc.is_empty() { "" } else { ", dc" },
                        if dc.is_empty() { "" } else { ", 'd1'" },
                    ));
                }
            }
        }
        for stmt in lp.lines() {
            exec(&q, stmt.trim_end_matches(';')).await;
        }
        if day < 3 {
            flush(&engine).await;
        }
    }
    (engine, q, plain, fast)
}

async fn explain(q: &QueryService, sql: &str) -> String {
    table(q, &format!("EXPLAIN {sql}")).await
}

/// `name=kept/total` from a `TemporaScanExec` line.
fn stat(plan: &str, name: &str) -> (usize, usize) {
    let at = plan
        .find(&format!("{name}="))
        .unwrap_or_else(|| panic!("no {name} in {plan}"));
    let rest = &plan[at + name.len() + 1..];
    let end = rest
        .find(|c: char| !c.is_ascii_digit() && c != '/')
        .unwrap();
    let (k, t) = rest[..end].split_once('/').unwrap();
    (k.parse().unwrap(), t.parse().unwrap())
}

/// Asserts that rows filtered by `pred` are the same whether the scan takes it or not, and
/// returns the plan of the query that pushes it.
async fn same_rows_as_unpushed(q: &QueryService, pred: &str) -> String {
    let pushed = format!(
        "SELECT host, region, dc, time, v FROM cpu WHERE {pred} ORDER BY host, region, time"
    );
    // A LIMIT in a subquery keeps the filter above the scan, so nothing is pushed.
    let reference = format!(
        "SELECT host, region, dc, time, v FROM (SELECT * FROM cpu LIMIT 1000000) s \
         WHERE {pred} ORDER BY host, region, time"
    );
    assert_eq!(
        table(q, &pushed).await,
        table(q, &reference).await,
        "{pred}"
    );
    explain(q, &pushed).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushed_tag_predicates_give_the_rows_of_a_full_scan() {
    let (_e, q, _, _) = loaded().await;
    // (predicate, series kept of the 48 = 16 series × 3 days)
    let cases: Vec<(&str, usize)> = vec![
        ("host = 'h1'", 6),
        ("host <> 'h1'", 42),
        ("host IN ('h1', 'h2')", 12),
        ("host NOT IN ('h1')", 42),
        ("host ~ '^h[12]$'", 12),
        ("host !~ '1'", 42),
        ("host ~* 'H3'", 6),
        ("host !~* 'H3'", 42),
        ("host LIKE 'h%'", 48),
        ("host LIKE 'h_'", 48),
        ("host LIKE 'h1_'", 0),
        ("host ILIKE 'H1'", 6),
        ("host NOT LIKE 'h1%'", 42),
        ("host = 'h1' OR region = 'r1'", 27),
        ("NOT (host = 'h1')", 42),
        ("(host = 'h1' OR host = 'h2') AND region = 'r2'", 6),
        ("dc IS NULL", 24),
        ("dc IS NOT NULL", 24),
        ("dc = 'd1' AND host = 'h1'", 0),
        ("host = 'h1' AND time >= '2024-01-03T00:00:00Z'", 2),
        (
            "host = 'h1' AND time BETWEEN '2024-01-01T02:00:00Z' AND '2024-01-02T01:00:00Z'",
            4,
        ),
        ("host = 'h1' OR v > 250", 48),
        ("host = 'nobody'", 0),
    ];
    for (pred, kept) in cases {
        let plan = same_rows_as_unpushed(&q, pred).await;
        assert_eq!(stat(&plan, "series"), (kept, 48), "{pred}\n{plan}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushed_field_bounds_give_the_rows_of_the_exact_filter() {
    let (_e, q, _, _) = loaded().await;
    // v = day × 100 + host × 10 + region + hour: 102 ..= 376.
    let cases: Vec<(&str, Option<&str>)> = vec![
        ("v > 250", Some("v >= 250")),
        ("v >= 250", Some("v >= 250")),
        ("250 < v", Some("v >= 250")),
        ("v > 250.5", Some("v >= 250.5")),
        ("v < 120", Some("v <= 120")),
        ("v <= 120", Some("v <= 120")),
        ("v = 215", Some("v = 215")),
        ("v > 200 AND v < 210", Some("v >= 200 AND v <= 210")),
        ("v > 200 AND host = 'h2'", Some("v >= 200")),
        ("v <> 215", None),
        ("v > 250 OR host = 'h1'", None),
        ("v > 10000", Some("v >= 10000")),
    ];
    for (pred, pushed_text) in cases {
        let plan = same_rows_as_unpushed(&q, pred).await;
        match pushed_text {
            Some(t) => assert!(plan.contains(&format!("fields={t}")), "{pred}\n{plan}"),
            None => assert!(!plan.contains("fields="), "{pred}\n{plan}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_reports_regions_and_files_pruned_by_time() {
    let (_e, q, _, _) = loaded().await;
    let all = explain(&q, "SELECT * FROM cpu").await;
    let (regions, total_regions) = stat(&all, "regions");
    let (files, total_files) = stat(&all, "files");
    assert_eq!(regions, total_regions);
    assert_eq!(files, total_files);
    assert!(total_files > 0, "two days were flushed: {all}");
    // The memtable day: no file is kept.
    let day3 = explain(&q, "SELECT * FROM cpu WHERE time >= '2024-01-03T00:00:00Z'").await;
    assert_eq!(stat(&day3, "files"), (0, total_files), "{day3}");
    assert!(stat(&day3, "regions").0 < total_regions, "{day3}");
    // Day one only, within the files' time ranges: about half the files.
    let day1 = explain(&q, "SELECT * FROM cpu WHERE time < '2024-01-02T00:00:00Z'").await;
    let (kept, _) = stat(&day1, "files");
    assert!(kept > 0 && kept < total_files, "{day1}");
    assert!(
        day1.contains("pushed=[time=[-inf, 2024-01-02T00:00:00Z)]"),
        "{day1}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limit_without_filters_stops_the_scan() {
    let (_e, q, _, _) = loaded().await;
    let plan = explain(&q, "SELECT * FROM cpu LIMIT 5").await;
    assert!(plan.contains("limit=5"), "{plan}");
    let out = q.sql("db", "SELECT * FROM cpu LIMIT 5", 0).await.unwrap();
    assert_eq!(out.batches.iter().map(|b| b.num_rows()).sum::<usize>(), 5);
    // With a filter left above the scan, no limit is pushed (it would cut rows too early).
    let plan = explain(&q, "SELECT * FROM cpu WHERE v > 300 LIMIT 5").await;
    assert!(!plan.contains("limit=5"), "{plan}");
    let out = q
        .sql("db", "SELECT * FROM cpu WHERE v > 300 LIMIT 5", 0)
        .await
        .unwrap();
    assert_eq!(out.batches.iter().map(|b| b.num_rows()).sum::<usize>(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latest_value_queries_read_the_cache_with_the_result_of_the_data() {
    let (engine, q, plain, fast) = loaded().await;
    // h0/r1's newest row lacks `v`; h1/r1's newest time is written twice, with different
    // fields (the cache and the scan both merge them).
    exec(
        &q,
        "INSERT INTO cpu (time, host, region, w) VALUES ('2024-01-03T09:00:00Z', 'h0', 'r1', 1)",
    )
    .await;
    exec(
        &q,
        "INSERT INTO cpu (time, host, region, v) VALUES ('2024-01-03T09:00:00Z', 'h1', 'r1', 7)",
    )
    .await;
    flush(&engine).await;
    exec(
        &q,
        "INSERT INTO cpu (time, host, region, w) VALUES ('2024-01-03T09:00:00Z', 'h1', 'r1', 8)",
    )
    .await;
    let cached = [
        "SELECT DISTINCT ON (host, region) host, region, dc, time, v, w FROM cpu \
         ORDER BY host, region, time DESC",
        "SELECT * FROM cpu LATEST ON time PARTITION BY host, region ORDER BY host, region",
        "SELECT DISTINCT ON (region) region, host, time, v FROM cpu ORDER BY region, time DESC, host",
        "SELECT DISTINCT ON (host) host, time, v FROM cpu WHERE region = 'r2' AND dc IS NOT NULL \
         ORDER BY host, time DESC",
        "SELECT DISTINCT ON (host, region) host, region, time, v FROM cpu \
         WHERE time >= '2024-01-03T04:00:00Z' ORDER BY host, region, time DESC",
        "SELECT host, region, time, v FROM cpu WHERE host = 'h5' ORDER BY time DESC, region LIMIT 1",
        "SELECT time, v FROM cpu WHERE host = 'h1' AND region = 'r1' ORDER BY time DESC LIMIT 1",
        "SELECT DISTINCT ON (host, region) host, region, time, v FROM cpu \
         WHERE time > now() - INTERVAL '100000 days' ORDER BY host, region, time DESC",
    ];
    let data = [
        // A field filter, an upper time bound, a second row, an aggregate: not the cache.
        "SELECT DISTINCT ON (host, region) host, region, time, v FROM cpu WHERE v > 150 \
         ORDER BY host, region, time DESC",
        "SELECT DISTINCT ON (host, region) host, region, time, v FROM cpu \
         WHERE time < '2024-01-02T00:00:00Z' ORDER BY host, region, time DESC",
        "SELECT host, region, time, v FROM cpu ORDER BY time DESC, host, region LIMIT 2",
        "SELECT host, region, last(v) AS v FROM cpu GROUP BY host, region ORDER BY host, region",
        "SELECT DISTINCT ON (host, region) host, region, time, v FROM cpu \
         ORDER BY host, region, time ASC",
    ];
    for sql in cached.iter().chain(data.iter()) {
        let uses_cache = explain(&q, sql).await.contains("last_value_cache=true");
        assert_eq!(uses_cache, cached.contains(sql), "{sql}");
        assert!(
            !explain(&plain, sql).await.contains("last_value_cache"),
            "{sql}"
        );
        let (a, b) = (table(&q, sql).await, table(&plain, sql).await);
        assert_eq!(a, b, "{sql}");
        assert!(a.lines().count() > 4, "{sql} returned no rows:\n{a}");
    }
    // The merged row and the row without `v`.
    let got = table(
        &q,
        "SELECT host, region, v, w FROM cpu WHERE region = 'r1' AND host IN ('h0', 'h1') \
         LATEST ON time PARTITION BY host, region ORDER BY host",
    )
    .await;
    let want = "\
+------+--------+---+---+
| host | region | v | w |
+------+--------+---+---+
| h0   | r1     |   | 1 |
| h1   | r1     | 7 | 8 |
+------+--------+---+---+";
    assert_eq!(got, want);

    // A second series for h2/r1 (another dc), newer than every other series of h2.
    exec(
        &q,
        "INSERT INTO cpu (time, host, region, dc, v) VALUES ('2024-01-03T07:00:00Z', 'h2', 'r1', 'd9', 5)",
    )
    .await;
    // Keyed by a tag that several series share: the scan keeps the newest row per host and
    // nothing is aggregated. A filter on a tag outside the keys (region) must be applied
    // before the newest row is chosen, so that shape aggregates the cached rows instead: were
    // the newest row per host chosen first, h2's would be the r1 row, which the filter drops.
    let newest_per_host = "SELECT DISTINCT ON (host) host, region, dc, time, v FROM cpu \
         WHERE host IN ('h0', 'h1', 'h2') ORDER BY host, time DESC";
    let filtered_off_key = "SELECT DISTINCT ON (host) host, region, time, v FROM cpu \
         WHERE region = 'r2' AND host IN ('h0', 'h2') ORDER BY host, time DESC";
    for (sql, aggregates, rows) in [(newest_per_host, false, 3), (filtered_off_key, true, 2)] {
        let plan = explain(&q, sql).await;
        assert!(plan.contains("last_value_cache=true"), "{sql}\n{plan}");
        assert_eq!(plan.contains("AggregateExec"), aggregates, "{sql}\n{plan}");
        let (a, b) = (table(&q, sql).await, table(&plain, sql).await);
        assert_eq!(a, b, "{sql}");
        assert_eq!(table(&fast, sql).await, a, "fast path: {sql}");
        assert_eq!(a.lines().count(), rows + 4, "{sql}\n{a}");
    }
    let got = table(&q, newest_per_host).await;
    assert!(got.contains("| h2   | r1     | d9 |"), "{got}");
}

/// A field bound applied while a file is read must not drop the newest version of a point
/// that another source (a second file, the memtable) overwrites: the scan applies bounds that
/// early only when a region has one source. Both services, DataFusion's and the fast path.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn field_bounds_see_the_newest_version_of_each_point() {
    // One-day partitions: the cases count series × days (learned widths would put the
    // hourly rows of days 2 and 3 in one partition once day 1 is flushed).
    let (engine, dbs) = engine_with_day_partitions();
    let q = planner_only(dbs.clone());
    let fast = QueryService::new(dbs, QueryLimits::default()).unwrap();
    let put = |day: u32, host: &str, v: Option<i64>, w: i64| match v {
        Some(v) => format!(
            "INSERT INTO cpu (time, host, w, v) VALUES ('2024-01-0{day}T00:00:00Z', '{host}', {w}, {v})"
        ),
        None => format!(
            "INSERT INTO cpu (time, host, w) VALUES ('2024-01-0{day}T00:00:00Z', '{host}', {w})"
        ),
    };
    // Day 1. a: 300 in a file, then 5 in the memtable. b: 300 in a file, then 5 in a second
    // file. c: 5 in a file, then 300 in the memtable. d: 300 and w = 1 in a file, then only
    // w = 2 in the memtable (v stays 300). Day 5, e: 300 in a file, its region's one source.
    for (host, v) in [("a", 300), ("b", 300), ("c", 5), ("d", 300)] {
        exec(&q, &put(1, host, Some(v), 1)).await;
    }
    exec(&q, &put(5, "e", Some(300), 1)).await;
    flush(&engine).await;
    exec(&q, &put(1, "b", Some(5), 2)).await;
    flush(&engine).await;
    exec(&q, &put(1, "a", Some(5), 2)).await;
    exec(&q, &put(1, "c", Some(300), 2)).await;
    exec(&q, &put(1, "d", None, 2)).await;
    let cases = [
        ("v > 250", "c 300 2, d 300 2, e 300 1"),
        ("v < 10", "a 5 2, b 5 2"),
        ("v = 300", "c 300 2, d 300 2, e 300 1"),
        ("v > 250 AND w = 1", "e 300 1"),
    ];
    for (svc, name) in [(&q, "DataFusion"), (&fast, "fast path")] {
        for (pred, want) in cases {
            let sql = format!("SELECT host, v, w FROM cpu WHERE {pred} ORDER BY host");
            let got = table(svc, &sql).await;
            let rows: Vec<String> = got
                .lines()
                .filter(|l| l.starts_with('|'))
                .skip(1)
                .map(|l| {
                    let cells: Vec<&str> = l.split('|').map(str::trim).collect();
                    cells[1..cells.len() - 1].join(" ")
                })
                .collect();
            assert_eq!(rows.join(", "), want, "{name}: {pred}\n{got}");
        }
    }
}
