//! Partitions sized to the data and retention users set: widths chosen from the measured rate
//! and from settings, buckets from the series count, settings kept across a restart, expiry
//! at the deadline with an injected clock, and too-old rows refused per row.

mod common;

use common::*;
use tempora_model::{FieldValue, RowBatchBuilder, Timestamp};
use tempora_storage::catalog::settings::{Setting, StorageSettings, parse_partition, parse_ttl};
use tempora_storage::clock::ManualClock;
use tempora_storage::{Engine, EngineIo, EngineOptions};

const HOUR: i64 = 3600 * SEC;
const DAY: i64 = 24 * HOUR;

/// Engine options as a server runs them: widths and buckets follow the data.
fn auto_opts() -> EngineOptions {
    EngineOptions {
        maintenance_interval: std::time::Duration::from_secs(3600),
        ..EngineOptions::default()
    }
}

/// Rows `(host, time, v)` of `table`; returns the number of rows refused.
fn put(e: &Engine, table: &str, rows: impl Iterator<Item = (String, i64, f64)>) -> Vec<String> {
    let mut b = RowBatchBuilder::new(table).unwrap();
    for (h, t, v) in rows {
        b.push(&[("host", &h)], &[("v", FieldValue::F64(v))], Timestamp(t))
            .unwrap();
    }
    let out = e.write(b.finish()).unwrap();
    out.rejected.into_iter().map(|r| r.reason).collect()
}

/// An in-memory engine's I/O on a manual clock, and options with fixed one-hour partitions.
fn hourly() -> (EngineIo, std::sync::Arc<ManualClock>, EngineOptions) {
    let clock = ManualClock::new(0);
    let (mut io, _) = EngineIo::memory();
    io.clock = clock.clone();
    let mut opts = auto_opts();
    opts.partition_ns = HOUR;
    opts.partition_auto = false;
    (io, clock, opts)
}

/// Creates table `cpu` with `rollups` and retention `ttl`.
fn create_with_rollups(e: &Engine, rollups: &str, ttl_text: &str) {
    let settings = StorageSettings {
        rollups: Some(tempora_storage::catalog::rollups::RollupList::parse(rollups).unwrap()),
        ..ttl(ttl_text)
    };
    let schema = tempora_model::TableSchema::new("cpu");
    e.create_table_with("cpu", schema, false, settings).unwrap();
}

fn ttl(v: &str) -> StorageSettings {
    StorageSettings {
        ttl: Some(parse_ttl(v).unwrap()),
        partition: None,
        rollups: None,
    }
}

#[test]
fn widths_follow_the_data_rate_and_buckets_the_series_count() {
    let e = Engine::open(auto_opts(), EngineIo::memory().0).unwrap();
    // (table, series, spacing, points per series, one batch per series, width, buckets)
    let cases = [
        ("hourly", 5, HOUR, 24 * 200, true, 365 * DAY, 1),
        ("daily", 3, DAY, 2000, true, 7305 * DAY, 1),
        ("ten_seconds", 100, 10 * SEC, 40, false, DAY, 4),
        ("ten_seconds_few", 20, 10 * SEC, 40, false, DAY, 1),
    ];
    for (table, series, step, points, per_series, width, buckets) in cases {
        if per_series {
            // One batch per series, as an import of one file per sensor sends them.
            for s in 0..series {
                let rows = (0..points).map(move |i| (format!("h{s}"), i64::from(i) * step, 1.0));
                assert!(put(&e, table, rows).is_empty());
            }
        } else {
            // Every series at each time, as agents report (TSBS's order).
            let rows = (0..points).flat_map(move |i| {
                (0..series).map(move |s| (format!("h{s}"), i64::from(i) * step, 1.0))
            });
            assert!(put(&e, table, rows).is_empty());
        }
        let spans = e.partitions(table);
        let first = spans[0];
        assert_eq!(first.end - first.start, width, "{table}: {spans:?}");
        assert_eq!(first.buckets, buckets, "{table}: {spans:?}");
        let (_, _, next) = e.table_settings(table).unwrap();
        assert_eq!(next, width, "{table}: the next partition's width");
    }
    // A year of hourly points of five series is one or two partitions, not 200.
    assert!(e.partitions("hourly").len() <= 2);
    e.flush().unwrap();
    let (_, files, _) = e.storage_counts();
    assert!(files <= 2 + 1 + 4 + 1, "{files} files: {}", e.debug_state());
}

/// A stream that sends one point per series per batch (an agent reporting every host each
/// hour) tells nothing in any one batch; the rate is learned from flushes, where each series
/// has many points, and the partitions begun after it follow it.
#[test]
fn a_rate_seen_only_across_batches_is_learned_at_flush() {
    let e = Engine::open(auto_opts(), EngineIo::memory().0).unwrap();
    for hour in 0..24 * 40 {
        let rows = (0..5).map(move |s| (format!("h{s}"), hour * HOUR, 1.0));
        assert!(put(&e, "agent", rows).is_empty());
    }
    let (_, _, next) = e.table_settings("agent").unwrap();
    assert_eq!(next, DAY, "no batch says how often a series writes");
    e.flush().unwrap();
    let (_, _, next) = e.table_settings("agent").unwrap();
    assert_eq!(next, 365 * DAY, "hourly, learned from the flush");
    let later = 1000 * DAY;
    assert!(put(&e, "agent", std::iter::once(("h0".to_string(), later, 1.0))).is_empty());
    let last = *e.partitions("agent").last().unwrap();
    assert_eq!(last.end - last.start, 365 * DAY, "{last:?}");
}

#[test]
fn a_width_set_by_the_user_applies_to_new_partitions_only() {
    let e = Engine::open(auto_opts(), EngineIo::memory().0).unwrap();
    let week = StorageSettings {
        partition: Some(parse_partition("7d").unwrap()),
        ttl: None,
        rollups: None,
    };
    e.create_database("iot").unwrap();
    e.set_database_settings("iot", week).unwrap();
    assert!(put(&e, "iot.m", (0..3).map(|i| ("a".into(), i * DAY, 1.0))).is_empty());
    assert_eq!(
        e.partitions("iot.m")[0].end,
        7 * DAY,
        "the database's width"
    );
    let hours = StorageSettings {
        partition: Some(parse_partition("12h").unwrap()),
        ttl: None,
        rollups: None,
    };
    e.set_table_settings("iot.m", hours).unwrap();
    // Inside the old partition: it stays. Past it: 12-hour partitions.
    assert!(put(&e, "iot.m", [("a".into(), 5 * DAY, 2.0)].into_iter()).is_empty());
    assert!(put(&e, "iot.m", [("a".into(), 8 * DAY, 3.0)].into_iter()).is_empty());
    let spans: Vec<(i64, i64)> = e
        .partitions("iot.m")
        .iter()
        .map(|s| (s.start, s.end))
        .collect();
    assert_eq!(spans, vec![(0, 7 * DAY), (8 * DAY, 8 * DAY + 12 * HOUR)]);
    assert_eq!(read_table(&e, "iot.m").len(), 5);
}

#[test]
fn retention_of_a_table_and_of_its_database_expire_at_the_deadline() {
    // Fixed one-hour partitions so that expiry is visible hour by hour.
    let (io, clock, opts) = hourly();
    let e = Engine::open(opts.clone(), io.clone()).unwrap();
    e.create_database_with("d", ttl("1d")).unwrap();
    e.create_table_with(
        "d.short",
        tempora_model::TableSchema::new("d.short"),
        false,
        ttl("1h"),
    )
    .unwrap();
    // Ten days of rows, one per hour, written at "now" = day 10.
    let now = 10 * DAY;
    clock.set(now);
    let rows = || (0..240).map(|i| ("a".to_string(), i * HOUR, i as f64));
    let refused_long = put(&e, "d.long", rows());
    let refused_short = put(&e, "d.short", rows());
    // Too-old rows are refused one by one, each saying why.
    assert_eq!(refused_long.len(), 240 - 24, "{:?}", refused_long.first());
    assert_eq!(refused_short.len(), 240 - 1);
    assert!(
        refused_short[0].contains("retention"),
        "{}",
        refused_short[0]
    );
    assert_eq!(read_table(&e, "d.long").len(), 24);
    assert_eq!(read_table(&e, "d.short").len(), 1);
    e.flush().unwrap();
    // Before the deadline nothing goes; at it, the expired partitions go.
    assert_eq!(e.enforce_retention().unwrap(), 0);
    clock.set(now + HOUR);
    assert!(e.enforce_retention().unwrap() >= 1);
    assert_eq!(read_table(&e, "d.short").len(), 0, "the table's 1 h");
    assert_eq!(read_table(&e, "d.long").len(), 23, "the database's 1 d");
    // A restart keeps the settings.
    drop(e);
    let e = Engine::open(opts, io).unwrap();
    let (own, eff, _) = e.table_settings("d.short").unwrap();
    assert_eq!(own.ttl, Some(Setting::Ns(HOUR)));
    assert_eq!(eff.ttl_ns, Some(HOUR));
    let (db, _) = e.database_settings("d");
    assert_eq!(db.ttl, Some(Setting::Ns(DAY)));
    assert_eq!(e.table_settings("d.long").unwrap().1.ttl_ns, Some(DAY));
    // `forever` on the table overrides its database.
    e.set_table_settings("d.long", ttl("forever")).unwrap();
    assert_eq!(e.table_settings("d.long").unwrap().1.ttl_ns, None);
    assert!(put(&e, "d.long", rows()).is_empty());
    // Changing the database's retention reaches its tables without their own.
    e.set_database_settings("d", ttl("2d")).unwrap();
    assert_eq!(e.table_settings("d.short").unwrap().1.ttl_ns, Some(HOUR));
}

/// The states of every region's rollup at `res` over `range`, by (series key, bucket).
fn rollup_states(e: &Engine, res: i64, range: (i64, i64)) -> Vec<arrow::array::RecordBatch> {
    let req = tempora_storage::ScanRequest {
        time: Some(range),
        ..Default::default()
    };
    let plan = e.plan_scan("cpu", &req).unwrap();
    (0..plan.regions())
        .filter_map(|i| {
            let read = plan.read_rollup(i, res, range).unwrap();
            assert!(read.raw.is_empty(), "region {i}: buckets left to raw rows");
            read.run.map(|r| r.batch)
        })
        .collect()
}

/// Paths under `data/` ending in `suffix`.
fn stored(io: &EngineIo, suffix: &str) -> usize {
    let files = io.files.list("data").unwrap();
    files.iter().filter(|(p, _)| p.ends_with(suffix)).count()
}

#[test]
fn rollups_outlive_the_raw_rows_each_to_its_own_ttl() {
    const MIN: i64 = 60 * SEC;
    let (io, clock, opts) = hourly();
    let e = Engine::open(opts.clone(), io.clone()).unwrap();
    create_with_rollups(&e, "1m:2d,1h:5d", "1d");
    let now = 10 * DAY;
    clock.set(now);
    // Four hours of two hosts every 10 s, ending 2 h before now.
    let range = (now - 6 * HOUR, now - 2 * HOUR);
    let rows = (range.0..range.1)
        .step_by(10 * SEC as usize)
        .flat_map(|t| ["a", "b"].map(|h| (h.to_string(), t, (t / SEC % 97) as f64)));
    assert!(put(&e, "cpu", rows).is_empty());
    e.flush().unwrap();
    let hours = rollup_states(&e, HOUR, range);
    let minutes = rollup_states(&e, MIN, range);
    assert_eq!(hours.iter().map(|b| b.num_rows()).sum::<usize>(), 8);
    assert_eq!(minutes.iter().map(|b| b.num_rows()).sum::<usize>(), 480);
    let (data, r1m, r1h) = (".parquet", ".r60000000000", ".r3600000000000");
    assert_eq!(
        (stored(&io, data), stored(&io, r1m), stored(&io, r1h)),
        (4, 4, 4)
    );
    assert_eq!(e.rollup_view("cpu").unwrap().raw_expired_until, None);

    // A day later the raw rows expire; both rollups remain.
    clock.set(now + DAY);
    assert_eq!(e.enforce_retention().unwrap(), 0, "no region is dropped");
    assert!(read_table(&e, "cpu").is_empty(), "no raw row is read");
    assert_eq!(
        (stored(&io, data), stored(&io, r1m), stored(&io, r1h)),
        (0, 4, 4)
    );
    assert_eq!(rollup_states(&e, HOUR, range), hours);
    assert_eq!(rollup_states(&e, MIN, range), minutes);
    assert_eq!(
        e.rollup_view("cpu").unwrap().raw_expired_until,
        Some(now - 2 * HOUR)
    );
    let req = tempora_storage::ScanRequest {
        time: Some(range),
        ..Default::default()
    };
    let plan = e.plan_scan("cpu", &req).unwrap();
    let err = plan.read_run(0).unwrap_err();
    assert_eq!(err.sqlstate(), "0A000", "{err}");
    assert!(
        err.to_string().contains("raw rows of cpu before")
            && err.to_string().contains("this query needs raw rows"),
        "{err}"
    );
    drop(plan);
    // A second run changes nothing; a restart keeps it.
    assert_eq!(e.enforce_retention().unwrap(), 0);
    drop(e);
    let e = Engine::open(opts.clone(), io.clone()).unwrap();
    assert_eq!(rollup_states(&e, HOUR, range), hours, "after a restart");
    assert_eq!(rollup_states(&e, MIN, range), minutes, "after a restart");

    // Past the 1m rollup's 2 days only the 1h rollup is left.
    clock.set(now + 2 * DAY);
    assert_eq!(e.enforce_retention().unwrap(), 0);
    assert_eq!(
        (stored(&io, data), stored(&io, r1m), stored(&io, r1h)),
        (0, 0, 4)
    );
    assert_eq!(rollup_states(&e, HOUR, range), hours);
    // Past the 1h rollup's 5 days the regions go.
    clock.set(now + 5 * DAY);
    assert_eq!(e.enforce_retention().unwrap(), 4);
    assert_eq!(
        (stored(&io, data), stored(&io, r1m), stored(&io, r1h)),
        (0, 0, 0)
    );
    drop(e);
    let e = Engine::open(opts, io.clone()).unwrap();
    assert_eq!(e.rollup_view("cpu").unwrap().raw_expired_until, None);
    let left: Vec<String> = io
        .files
        .list("data")
        .unwrap()
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    assert_eq!(
        left,
        Vec::<String>::new(),
        "the dropped regions' index files swept"
    );
}

#[test]
fn a_rollup_ttl_shorter_than_the_raw_rows_drops_only_that_rollup() {
    let (io, clock, opts) = hourly();
    let e = Engine::open(opts, io.clone()).unwrap();
    create_with_rollups(&e, "1m:1h,1h", "forever");
    let now = 10 * DAY;
    clock.set(now);
    let rows = (0..360).map(|i| ("a".to_string(), now - 3 * HOUR + i * 10 * SEC, i as f64));
    assert!(put(&e, "cpu", rows).is_empty());
    e.flush().unwrap();
    let before = read_table(&e, "cpu");
    assert_eq!(stored(&io, ".r60000000000"), 1);
    clock.set(now + 2 * HOUR);
    assert_eq!(e.enforce_retention().unwrap(), 0);
    assert_eq!(stored(&io, ".r60000000000"), 0, "the 1m rollup expired");
    assert_eq!(stored(&io, ".r3600000000000"), 1);
    assert_eq!(stored(&io, ".parquet"), 1);
    assert_eq!(read_table(&e, "cpu"), before, "raw rows stay");
}
