//! Time-series functions through SQL over a real engine, with rows in files and in the
//! memtable at once: `first`/`last` in both spellings, grouped and not; `time_bucket`.

mod common;

use common::{exec, flush, service, table};
use tempora_query::QueryService;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_and_last_by_time_across_files_and_memtable() {
    let (engine, q) = service().await;
    // Out of time order on purpose; host b has a NULL reading (no `v`) at its latest time.
    exec(
        &q,
        "INSERT INTO cpu (time, host, v, n) VALUES \
         ('2024-01-01T00:00:20Z', 'a', 3.0, 30), ('2024-01-01T00:00:00Z', 'a', 1.0, 10), \
         ('2024-01-01T00:00:10Z', 'b', 7.0, 70)",
    )
    .await;
    flush(&engine).await;
    exec(
        &q,
        "INSERT INTO cpu (time, host, v, n) VALUES \
         ('2024-01-01T00:00:05Z', 'a', 2.0, 20), ('2024-01-01T00:00:30Z', 'b', NULL, 90), \
         ('2024-01-01T00:00:01Z', 'b', 6.0, 60)",
    )
    .await;
    let got = table(
        &q,
        "SELECT host, first(v) AS fv, last(v) AS lv, first(n, time) AS fn, last(n, time) AS ln \
         FROM cpu GROUP BY host ORDER BY host",
    )
    .await;
    let want = "\
+------+-----+-----+----+----+
| host | fv  | lv  | fn | ln |
+------+-----+-----+----+----+
| a    | 1.0 | 3.0 | 10 | 30 |
| b    | 6.0 | 7.0 | 60 | 90 |
+------+-----+-----+----+----+";
    assert_eq!(got, want);
    // Ungrouped, unaliased (the plan above refers to the aggregate by its name), and empty.
    let got = table(&q, "SELECT last(v), first(v) FROM cpu").await;
    assert!(got.contains("| 3.0") && got.contains("| 1.0"), "{got}");
    let got = table(&q, "SELECT last(v) AS x FROM cpu WHERE host = 'none'").await;
    assert!(
        got.contains("|   |") || got.contains("|    |"),
        "NULL for no rows: {got}"
    );
    // Errors name the function.
    let err = q
        .sql("db", "SELECT last(v, host) FROM cpu", 0)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("must be a timestamp"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn time_bucket_buckets_like_timescaledb() {
    let (_engine, q) = service().await;
    exec(&q, "INSERT INTO m (time, v) VALUES ('2024-01-03T10:00:00Z', 1.0), ('2024-01-08T23:59:59Z', 2.0), \
         ('2024-01-15T00:00:00Z', 3.0), ('2024-02-20T00:00:00Z', 4.0)").await;
    let got = table(
        &q,
        "SELECT time_bucket(INTERVAL '1 week', time) AS w, count(*) AS c FROM m GROUP BY w ORDER BY w",
    )
    .await;
    // Weeks start on Monday: 2024-01-01, 01-08, 01-15, 02-19.
    for w in [
        "2024-01-01T00:00:00Z | 1",
        "2024-01-08T00:00:00Z | 1",
        "2024-01-15T00:00:00Z | 1",
        "2024-02-19T00:00:00Z | 1",
    ] {
        assert!(got.contains(w), "{w} in\n{got}");
    }
    let got = table(
        &q,
        "SELECT time_bucket(INTERVAL '1 month', time) AS mo, count(*) AS c FROM m GROUP BY mo ORDER BY mo",
    )
    .await;
    assert!(
        got.contains("2024-01-01T00:00:00Z | 3") && got.contains("2024-02-01T00:00:00Z | 1"),
        "{got}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sample_by_groups_by_bucket_and_tags() {
    let (_engine, q) = service().await;
    exec(
        &q,
        "INSERT INTO cpu (time, host, v) VALUES \
         ('2024-01-01T00:00:00Z', 'a', 1.0), ('2024-01-01T00:00:30Z', 'a', 3.0), \
         ('2024-01-01T00:01:10Z', 'a', 5.0), ('2024-01-01T00:00:40Z', 'b', 10.0), \
         ('2024-01-01T00:16:00Z', 'b', 20.0)",
    )
    .await;
    let got = table(
        &q,
        "SELECT host, time, avg(v) AS v, first(v) AS f FROM cpu SAMPLE BY 1m",
    )
    .await;
    let want = "\
+------+----------------------+------+------+
| host | time                 | v    | f    |
+------+----------------------+------+------+
| a    | 2024-01-01T00:00:00Z | 2.0  | 1.0  |
| b    | 2024-01-01T00:00:00Z | 10.0 | 10.0 |
| a    | 2024-01-01T00:01:00Z | 5.0  | 5.0  |
| b    | 2024-01-01T00:16:00Z | 20.0 | 20.0 |
+------+----------------------+------+------+";
    assert_eq!(got, want, "ordered by time, then host");
    // A 15-minute offset moves the bucket edges.
    let got = table(
        &q,
        "SELECT time, count(*) AS c FROM cpu SAMPLE BY 1h WITH OFFSET '00:15'",
    )
    .await;
    assert!(
        got.contains("2023-12-31T23:15:00Z | 4") && got.contains("2024-01-01T00:15:00Z | 1"),
        "{got}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latest_on_matches_the_other_latest_value_shapes() {
    let (engine, q) = service().await;
    exec(
        &q,
        "INSERT INTO cpu (time, host, v) VALUES \
         ('2024-01-01T00:00:00Z', 'a', 1.0), ('2024-01-01T00:00:30Z', 'a', 3.0), \
         ('2024-01-01T00:00:40Z', 'b', 10.0), ('2024-01-01T00:00:10Z', 'c', 7.0)",
    )
    .await;
    flush(&engine).await;
    // Host b's latest point is in the memtable, host a's in a file.
    exec(
        &q,
        "INSERT INTO cpu (time, host, v) VALUES ('2024-01-01T00:01:00Z', 'b', 11.0), \
         ('2024-01-01T00:00:20Z', 'a', 2.0)",
    )
    .await;
    let latest = table(
        &q,
        "SELECT host, time, v FROM cpu LATEST ON time PARTITION BY host",
    )
    .await;
    let want = "\
+------+----------------------+------+
| host | time                 | v    |
+------+----------------------+------+
| a    | 2024-01-01T00:00:30Z | 3.0  |
| b    | 2024-01-01T00:01:00Z | 11.0 |
| c    | 2024-01-01T00:00:10Z | 7.0  |
+------+----------------------+------+";
    assert_eq!(latest, want);
    for shape in [
        "SELECT DISTINCT ON (host) host, time, v FROM cpu ORDER BY host, time DESC",
        "SELECT host, max(time) AS time, last(v) AS v FROM cpu GROUP BY host ORDER BY host",
    ] {
        assert_eq!(table(&q, shape).await, want, "{shape}");
    }
    let top = table(
        &q,
        "SELECT host, v FROM cpu LATEST ON time PARTITION BY host ORDER BY v DESC LIMIT 1",
    )
    .await;
    assert!(
        top.contains("| b    | 11.0 |") && !top.contains("| a "),
        "{top}"
    );
}

/// Result rows as `a,b,c` lines (NULL as empty), from the pretty table.
async fn rows(q: &QueryService, sql: &str) -> Vec<String> {
    table(q, sql)
        .await
        .lines()
        .filter(|l| l.starts_with('|'))
        .skip(1)
        .map(|l| {
            l.trim_matches('|')
                .split('|')
                .map(str::trim)
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sample_by_fill_fills_each_group_across_the_range() {
    let (_engine, q) = service().await;
    exec(
        &q,
        "INSERT INTO cpu (time, host, v) VALUES \
         ('2024-01-01T00:00:10Z', 'a', 1.0), ('2024-01-01T00:03:00Z', 'a', 4.0), \
         ('2024-01-01T00:01:00Z', 'b', 10.0)",
    )
    .await;
    let range = "WHERE time >= '2024-01-01T00:00:00Z' AND time < '2024-01-01T00:05:00Z'";
    let sampled = |fill: &str| {
        format!(
            "SELECT host, time, avg(v) AS v FROM cpu {range} SAMPLE BY 1m FILL({fill}) ORDER BY host, time"
        )
    };
    let col = |rows: Vec<String>, host: &str| -> String {
        rows.iter()
            .filter(|r| r.starts_with(&format!("{host},")))
            .map(|r| r.rsplit(',').next().unwrap().to_string())
            .collect::<Vec<_>>()
            .join(" ")
    };
    for (fill, want_a, want_b) in [
        ("NULL", "1.0   4.0 ", " 10.0   "),
        ("PREV", "1.0 1.0 1.0 4.0 4.0", " 10.0 10.0 10.0 10.0"),
        ("LINEAR", "1.0 2.0 3.0 4.0 ", " 10.0   "),
        ("0", "1.0 0.0 0.0 4.0 0.0", "0.0 10.0 0.0 0.0 0.0"),
        ("NONE", "1.0 4.0", "10.0"),
    ] {
        let got = rows(&q, &sampled(fill)).await;
        assert_eq!(
            col(got.clone(), "a"),
            want_a,
            "FILL({fill}) host a: {got:?}"
        );
        assert_eq!(
            col(got.clone(), "b"),
            want_b,
            "FILL({fill}) host b: {got:?}"
        );
    }
    // The bucket times cover the query's range, bucket starts in UTC.
    let got = rows(&q, &sampled("NULL")).await;
    assert_eq!(got[0], "a,2024-01-01T00:00:00Z,1.0");
    assert_eq!(got[4], "a,2024-01-01T00:04:00Z,");
    // Without a time range, the data's range: minutes 0 to 3.
    let got = rows(
        &q,
        "SELECT time, count(*) AS n FROM cpu SAMPLE BY 1m FILL(0)",
    )
    .await;
    assert_eq!(
        got,
        vec![
            "2024-01-01T00:00:00Z,1",
            "2024-01-01T00:01:00Z,1",
            "2024-01-01T00:02:00Z,0",
            "2024-01-01T00:03:00Z,1"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_handle_resets_per_group() {
    let (engine, q) = service().await;
    exec(
        &q,
        "INSERT INTO net (time, host, bytes) VALUES \
         ('2024-01-01T00:00:00Z', 'a', 100), ('2024-01-01T00:00:10Z', 'a', 150), \
         ('2024-01-01T00:00:30Z', 'b', 5)",
    )
    .await;
    flush(&engine).await;
    // Host a's counter restarts (150 → 20) and grows to 50; the last point arrives first.
    exec(
        &q,
        "INSERT INTO net (time, host, bytes) VALUES ('2024-01-01T00:00:40Z', 'a', 50), \
         ('2024-01-01T00:00:20Z', 'a', 20), ('2024-01-01T00:00:40Z', 'b', 25)",
    )
    .await;
    let got = rows(
        &q,
        "SELECT host, increase(bytes) AS inc, rate(bytes) AS r, delta(bytes, time) AS d \
         FROM net GROUP BY host ORDER BY host",
    )
    .await;
    // a: +50, reset (+20), +30 = 100 over 40 s; b: +20 over 10 s.
    assert_eq!(got, vec!["a,100.0,2.5,-50.0", "b,20.0,2.0,20.0"]);
    let err = q
        .sql("db", "SELECT rate(host) FROM net", 0)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("must be numeric"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sample_by_keeps_names_case_and_column_order() {
    let (_engine, q) = service().await;
    exec(
        &q,
        "INSERT INTO cpu (time, host, v) VALUES ('2024-01-01T00:00:00Z', 'a', 1.0), \
         ('2024-01-01T00:02:00Z', 'a', 3.0), ('2024-01-01T00:00:00Z', 'b', 5.0)",
    )
    .await;
    // An aliased time column orders the result; unquoted names are case-insensitive.
    let got = rows(
        &q,
        "SELECT Time AS Ts, HOST, max(V) AS Top FROM cpu SAMPLE BY 1m",
    )
    .await;
    assert_eq!(
        got,
        vec![
            "2024-01-01T00:00:00Z,a,1.0",
            "2024-01-01T00:00:00Z,b,5.0",
            "2024-01-01T00:02:00Z,a,3.0"
        ]
    );
    // FILL keeps the select list's order (time first here) and case rules.
    let got = rows(
        &q,
        "SELECT Time, Host, avg(v) AS V FROM cpu WHERE host = 'a' SAMPLE BY 1m FILL(LINEAR)",
    )
    .await;
    assert_eq!(
        got,
        vec![
            "2024-01-01T00:00:00Z,a,1.0",
            "2024-01-01T00:01:00Z,a,2.0",
            "2024-01-01T00:02:00Z,a,3.0"
        ]
    );
    // time_bucket on a timestamp in seconds.
    let got = rows(
        &q,
        "SELECT time_bucket(INTERVAL '1 day', to_timestamp_seconds(1700000000)) AS d",
    )
    .await;
    assert_eq!(got, vec!["2023-11-14T00:00:00"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_databases_and_tag_values() {
    let (_engine, q) = service().await;
    q.dbs.create("other").unwrap();
    exec(
        &q,
        "INSERT INTO cpu (time, host, region, v) VALUES ('2024-01-01T00:00:00Z', 'b', 'eu', 1.0), \
         ('2024-01-01T00:00:01Z', 'a', 'eu', 2.0), ('2024-01-01T00:00:02Z', 'b', 'us', 3.0)",
    )
    .await;
    assert_eq!(
        rows(&q, "SHOW TAG VALUES FROM cpu WITH KEY = host").await,
        vec!["a", "b"]
    );
    assert_eq!(
        rows(&q, "show tag values from cpu with key=region;").await,
        vec!["eu", "us"]
    );
    let dbs = rows(&q, "SHOW DATABASES").await;
    assert!(
        dbs.contains(&"db,forever,auto".to_string())
            && dbs.contains(&"other,forever,auto".to_string()),
        "{dbs:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_says_which_columns_are_tags_and_fields() {
    let (_engine, q) = service().await;
    exec(
        &q,
        "INSERT INTO cpu (time, host, v, n, note) VALUES ('2024-01-01T00:00:00Z', 'a', 1.0, 2, 'x')",
    )
    .await;
    // INSERT's string values are tags (schema on write); numbers are fields.
    let mut got = rows(&q, "DESCRIBE cpu").await;
    got[3..].sort();
    assert_eq!(
        got,
        vec![
            "host,string,tag",
            "note,string,tag",
            "time,timestamp,time",
            "n,integer,field",
            "v,float,field"
        ]
    );
    let err = q.sql("db", "DESCRIBE nope", 0).await.unwrap_err();
    assert!(err.to_string().contains("\"nope\" not found"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn insert_errors_name_the_table_as_written() {
    let (_engine, q) = service().await;
    exec(
        &q,
        "INSERT INTO cpu (time, v) VALUES ('2024-01-01T00:00:00Z', 1.0)",
    )
    .await;
    let err = q
        .sql(
            "db",
            "INSERT INTO cpu (time, v) VALUES ('2024-01-01T00:00:01Z', 'x')",
            0,
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("table \"cpu\"") && !err.contains("db.cpu"),
        "{err}"
    );
}

/// Calendar alignment in a time zone: a local day is 23 hours on the spring DST change and
/// 25 in autumn; sub-day buckets count from local midnight (Kolkata is UTC+05:30).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sample_by_time_zone_follows_the_local_calendar_across_dst() {
    let (engine, q) = service().await;
    let hour = 3_600_000_000_000i64;
    // Hourly points from 2024-03-30T20:00Z to 2024-04-01T00:00Z, and around 2024-10-27.
    let spring = 1_711_828_800_000_000_000i64;
    let autumn = 1_729_972_800_000_000_000i64; // 2024-10-26T20:00Z
    let mut values = Vec::new();
    for (start, n) in [(spring, 29), (autumn, 30)] {
        for i in 0..n {
            let t = arrow::temporal_conversions::timestamp_ns_to_datetime(start + i * hour)
                .unwrap()
                .format("%Y-%m-%dT%H:%M:%SZ");
            values.push(format!("('{t}', 'a', 1.0)"));
        }
    }
    // Half in files, half in the memtable.
    let (first, second) = values.split_at(values.len() / 2);
    exec(
        &q,
        &format!("INSERT INTO m (time, host, v) VALUES {}", first.join(", ")),
    )
    .await;
    flush(&engine).await;
    exec(
        &q,
        &format!("INSERT INTO m (time, host, v) VALUES {}", second.join(", ")),
    )
    .await;
    let got = table(
        &q,
        "SELECT time, count(*) AS n FROM m SAMPLE BY 1d ALIGN TO CALENDAR TIME ZONE 'Europe/Oslo'",
    )
    .await;
    let want = "\
+----------------------+----+
| time                 | n  |
+----------------------+----+
| 2024-03-29T23:00:00Z | 3  |
| 2024-03-30T23:00:00Z | 23 |
| 2024-03-31T22:00:00Z | 3  |
| 2024-10-25T22:00:00Z | 2  |
| 2024-10-26T22:00:00Z | 25 |
| 2024-10-27T23:00:00Z | 3  |
+----------------------+----+";
    assert_eq!(got, want);
    let got = table(
        &q,
        "SELECT time, count(*) AS n FROM m WHERE time < '2024-03-30T23:00:00Z' \
         SAMPLE BY 1h ALIGN TO CALENDAR TIME ZONE 'Asia/Kolkata'",
    )
    .await;
    let want = "\
+----------------------+---+
| time                 | n |
+----------------------+---+
| 2024-03-30T19:30:00Z | 1 |
| 2024-03-30T20:30:00Z | 1 |
| 2024-03-30T21:30:00Z | 1 |
+----------------------+---+";
    assert_eq!(got, want);
    // With an offset: 2-hour buckets from local 00:30.
    let got = table(
        &q,
        "SELECT time, count(*) AS n FROM m WHERE time < '2024-03-31T00:00:00Z' \
         SAMPLE BY 2h ALIGN TO CALENDAR TIME ZONE 'Europe/Oslo' WITH OFFSET '00:30'",
    )
    .await;
    let want = "\
+----------------------+---+
| time                 | n |
+----------------------+---+
| 2024-03-30T19:30:00Z | 2 |
| 2024-03-30T21:30:00Z | 2 |
+----------------------+---+";
    assert_eq!(got, want);
}
