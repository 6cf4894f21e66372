//! End-to-end behaviour of the engine through its public API, on real files and in memory.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::AsArray;

use common::*;
use tempora_model::{FieldValue, RowBatchBuilder, Timestamp};
use tempora_storage::clock::ManualClock;
use tempora_storage::{Engine, EngineIo, Matcher, ScanRequest, StorageError};

#[test]
fn rows_read_back_from_memtable_files_and_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let rows: Vec<(String, i64, f64)> = (0..200)
        .map(|i| (format!("h{}", i % 7), i * SEC, i as f64))
        .collect();
    let refs: Vec<(&str, i64, f64)> = rows.iter().map(|(h, t, v)| (h.as_str(), *t, *v)).collect();
    let want: BTreeMap<(String, i64), Option<f64>> = rows
        .iter()
        .map(|(h, t, v)| ((h.clone(), *t), Some(*v)))
        .collect();
    let e = open_local(dir.path());
    write(&e, &refs[..100]);
    assert_eq!(read_all(&e).len(), 100, "memtable");
    e.flush().unwrap();
    write(&e, &refs[100..]);
    assert_eq!(read_all(&e), want, "files and memtable together");
    e.close().unwrap();
    let e = open_local(dir.path());
    assert_eq!(read_all(&e), want, "after a clean restart");
}

#[test]
fn acknowledged_rows_survive_a_crash_without_flush() {
    let dir = tempfile::tempdir().unwrap();
    let e = open_local(dir.path());
    write(&e, &[("a", SEC, 1.0), ("b", 2 * SEC, 2.0)]);
    e.flush().unwrap();
    write(&e, &[("a", 3 * SEC, 3.0)]);
    drop(e); // no flush: the last row lives only in the WAL
    let e = open_local(dir.path());
    let got = read_all(&e);
    assert_eq!(got.len(), 3);
    assert_eq!(got[&("a".to_string(), 3 * SEC)], Some(3.0));
}

/// `write_many` of several batches, two of one table: each batch gets its own outcome, with its
/// own row numbers, and the later batch's row wins for the same series and time.
#[test]
fn batches_written_together_keep_their_own_outcomes() {
    let (io, _) = EngineIo::memory();
    let e = Engine::open(small_opts(), io).unwrap();
    let batch = |table: &str, rows: &[(i64, FieldValue)]| {
        let mut b = RowBatchBuilder::new(table).unwrap();
        for (t, v) in rows {
            b.push(&[("host", "a")], &[("v", v.clone())], Timestamp(*t))
                .unwrap();
        }
        b.finish()
    };
    let out = e.write_many(vec![
        batch(
            "cpu",
            &[(1, FieldValue::F64(1.0)), (2, FieldValue::F64(2.0))],
        ),
        batch("mem", &[(1, FieldValue::I64(7))]),
        // Its second row has the wrong type; its first overwrites the first batch's t=2.
        batch(
            "cpu",
            &[
                (2, FieldValue::F64(20.0)),
                (3, FieldValue::Str("x".into())),
                (4, FieldValue::F64(4.0)),
            ],
        ),
        RowBatchBuilder::new("empty").unwrap().finish(),
    ]);
    let out: Vec<_> = out.into_iter().map(Result::unwrap).collect();
    assert_eq!(
        out.iter().map(|o| o.written).collect::<Vec<_>>(),
        [2, 1, 2, 0]
    );
    assert!(out[0].rejected.is_empty() && out[1].rejected.is_empty());
    assert_eq!(out[2].rejected.len(), 1);
    assert_eq!(out[2].rejected[0].row, 1, "numbered within its own batch");
    let got = read_all(&e);
    assert_eq!(got.len(), 3, "cpu at 1, 2 and 4: {got:?}");
    assert_eq!(
        got[&("a".to_string(), 2)],
        Some(20.0),
        "the later write wins"
    );
}

#[test]
fn same_series_and_time_keeps_the_last_write_field_by_field() {
    let (io, _) = EngineIo::memory();
    let e = Engine::open(small_opts(), io).unwrap();
    let mut b = RowBatchBuilder::new("cpu").unwrap();
    b.push(
        &[("host", "a")],
        &[("v", FieldValue::F64(1.0)), ("w", FieldValue::I64(1))],
        Timestamp(10),
    )
    .unwrap();
    e.write(b.finish()).unwrap();
    e.flush().unwrap();
    let mut b = RowBatchBuilder::new("cpu").unwrap();
    b.push(
        &[("host", "a")],
        &[("v", FieldValue::F64(2.0))],
        Timestamp(10),
    )
    .unwrap();
    e.write(b.finish()).unwrap();
    let batches = e.scan("cpu", &ScanRequest::default()).unwrap();
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    assert_eq!(rows, 1);
    let b = &batches[0];
    use arrow::array::AsArray;
    let v = b
        .column_by_name("v")
        .unwrap()
        .as_primitive::<arrow::datatypes::Float64Type>()
        .value(0);
    let w = b
        .column_by_name("w")
        .unwrap()
        .as_primitive::<arrow::datatypes::Int64Type>()
        .value(0);
    assert_eq!((v, w), (2.0, 1), "v overwritten, w kept");
}

#[test]
fn type_conflict_rejects_only_that_row() {
    let (io, _) = EngineIo::memory();
    let e = Engine::open(small_opts(), io).unwrap();
    let mut b = RowBatchBuilder::new("cpu").unwrap();
    b.push(
        &[("host", "a")],
        &[("v", FieldValue::F64(1.0))],
        Timestamp(1),
    )
    .unwrap();
    b.push(
        &[("host", "a")],
        &[("v", FieldValue::Str("x".into()))],
        Timestamp(2),
    )
    .unwrap();
    b.push(
        &[("host", "a")],
        &[("v", FieldValue::F64(3.0))],
        Timestamp(3),
    )
    .unwrap();
    let out = e.write(b.finish()).unwrap();
    assert_eq!(out.written, 2);
    assert_eq!(out.rejected.len(), 1);
    assert_eq!(out.rejected[0].row, 1);
    assert!(
        out.rejected[0].reason.contains("type string"),
        "{}",
        out.rejected[0].reason
    );
    assert_eq!(read_all(&e).len(), 2);
}

#[test]
fn tag_filters_select_series() {
    let (io, _) = EngineIo::memory();
    let e = Engine::open(small_opts(), io).unwrap();
    write(&e, &[("a", 1, 1.0), ("b", 1, 2.0), ("c", 1, 3.0)]);
    e.flush().unwrap();
    write(&e, &[("a", 2, 4.0), ("c", 2, 5.0)]);
    let cases: Vec<(&str, Matcher, usize)> = vec![
        ("eq", Matcher::Eq("host".into(), "a".into()), 2),
        (
            "in",
            Matcher::In("host".into(), vec!["a".into(), "b".into()]),
            3,
        ),
        (
            "regex",
            Matcher::Regex("host".into(), regex::Regex::new("^[bc]$").unwrap()),
            3,
        ),
        ("not eq", Matcher::NotEq("host".into(), "a".into()), 3),
        ("missing tag", Matcher::Eq("dc".into(), "x".into()), 0),
    ];
    for (name, m, want) in cases {
        let req = ScanRequest {
            matcher: m,
            ..ScanRequest::default()
        };
        let n: usize = e
            .scan("cpu", &req)
            .unwrap()
            .iter()
            .map(|b| b.num_rows())
            .sum();
        assert_eq!(n, want, "{name}");
    }
    let req = ScanRequest {
        time: Some((2, 3)),
        ..ScanRequest::default()
    };
    let n: usize = e
        .scan("cpu", &req)
        .unwrap()
        .iter()
        .map(|b| b.num_rows())
        .sum();
    assert_eq!(n, 2, "time range");
}

#[test]
fn latest_values_come_from_the_cache_and_survive_restart() {
    let dir = tempfile::tempdir().unwrap();
    let e = open_local(dir.path());
    write(
        &e,
        &[
            ("a", SEC, 1.0),
            ("a", 3 * SEC, 3.0),
            ("b", 2 * SEC, 2.0),
            ("a", 2 * SEC, 9.0),
        ],
    );
    let check = |e: &Engine| {
        let b = e.latest("cpu", &Matcher::All, None).unwrap();
        let mut got = BTreeMap::new();
        collect(&b, &mut got);
        let want: BTreeMap<(String, i64), Option<f64>> = [
            (("a".to_string(), 3 * SEC), Some(3.0)),
            (("b".to_string(), 2 * SEC), Some(2.0)),
        ]
        .into();
        assert_eq!(got, want);
    };
    check(&e);
    e.close().unwrap();
    let e = open_local(dir.path());
    check(&e);
}

/// Latest values across partitions (the newest partition's point wins, wherever the series'
/// older points sit), in series-key order, and an empty answer with the full schema when
/// nothing matches.
#[test]
fn latest_values_take_each_series_newest_partition_in_key_order() {
    let dir = tempfile::tempdir().unwrap();
    let e = open_local(dir.path());
    let day = 24 * 3600 * SEC;
    // c and a on days 0 and 2, b on day 1 only; day 0 flushed to files.
    write(&e, &[("c", SEC, 1.0), ("a", 5 * SEC, 2.0), ("b", day, 3.0)]);
    e.flush().unwrap();
    write(
        &e,
        &[
            ("a", 2 * day, 4.0),
            ("c", 2 * day + SEC, 5.0),
            ("c", 7 * SEC, 6.0),
        ],
    );
    let b = e.latest("cpu", &Matcher::All, None).unwrap();
    let hosts: Vec<&str> = b
        .column_by_name("host")
        .unwrap()
        .as_string::<i32>()
        .iter()
        .map(|h| h.unwrap())
        .collect();
    assert_eq!(hosts, ["a", "b", "c"], "ordered by series key");
    let mut got = BTreeMap::new();
    collect(&b, &mut got);
    let want: BTreeMap<(String, i64), Option<f64>> = [
        (("a".to_string(), 2 * day), Some(4.0)),
        (("b".to_string(), day), Some(3.0)),
        (("c".to_string(), 2 * day + SEC), Some(5.0)),
    ]
    .into();
    assert_eq!(got, want);
    let none = e
        .latest("cpu", &Matcher::Eq("host".into(), "nobody".into()), None)
        .unwrap();
    assert_eq!(none.num_rows(), 0);
    assert_eq!(none.schema(), b.schema());
    // Cache slots: a and c on day 0 and day 2, b on day 1.
    assert_eq!(e.latest_rows_bound("cpu"), Some(5));
    assert_eq!(e.latest_rows_bound("nothing"), None);
}

#[test]
fn compaction_leaves_one_file_per_window_without_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let e = open_local(dir.path());
    for round in 0..4 {
        let rows: Vec<(String, i64, f64)> = (0..50)
            .map(|i| (format!("h{}", i % 5), i * SEC, (round * 100 + i) as f64))
            .collect();
        let refs: Vec<(&str, i64, f64)> =
            rows.iter().map(|(h, t, v)| (h.as_str(), *t, *v)).collect();
        write(&e, &refs);
        e.flush().unwrap();
    }
    let before = read_all(&e);
    assert!(e.compact().unwrap() >= 1);
    assert_eq!(read_all(&e), before);
    assert_eq!(e.compact().unwrap(), 0, "nothing left to compact");
    e.close().unwrap();
    let e = open_local(dir.path());
    assert_eq!(read_all(&e), before, "after restart");
    assert!(
        before.values().all(|v| v.unwrap() >= 300.0),
        "last round won"
    );
}

#[test]
fn a_partition_that_has_ended_compacts_to_one_file_per_region() {
    let clock = ManualClock::new(0);
    let (mut io, _) = EngineIo::memory();
    io.clock = clock.clone();
    let (hour, day) = (3600 * SEC, 24 * 3600 * SEC);
    let e = Engine::open(small_opts(), io).unwrap();
    // Six flushes, one row per host in each of six 2-hour windows of day 0.
    for w in 0..6 {
        write(
            &e,
            &[("a", w * 4 * hour, w as f64), ("b", w * 4 * hour + 1, 1.0)],
        );
        e.flush().unwrap();
    }
    let before = read_all(&e);
    let flushed = e.storage_counts().1;
    // Day 0 is current: one file per window and region already, nothing to merge.
    assert_eq!(e.compact().unwrap(), 0, "{}", e.debug_state());
    // Day 0 has ended: each region's files become one.
    clock.set(day);
    assert!(e.compact().unwrap() >= 1);
    let files = e.storage_counts().1;
    assert!(
        files * 6 == flushed,
        "{flushed} files became {files}: {}",
        e.debug_state()
    );
    assert_eq!(read_all(&e), before);
    assert_eq!(e.compact().unwrap(), 0, "nothing left to compact");
}

#[test]
fn retention_drops_expired_partitions_on_time() {
    let clock = ManualClock::new(0);
    let (mut io, _) = EngineIo::memory();
    io.clock = clock.clone();
    let day = 24 * 3600 * SEC;
    let e = Engine::open(small_opts(), io).unwrap();
    write(&e, &[("a", 0, 1.0), ("a", day + 1, 2.0)]);
    e.flush().unwrap();
    e.set_ttl("cpu", Some(day)).unwrap();
    clock.set(day + day / 2);
    assert_eq!(
        e.enforce_retention().unwrap(),
        0,
        "day 0 ends at the cutoff's day"
    );
    clock.set(2 * day);
    assert!(e.enforce_retention().unwrap() >= 1);
    let got = read_all(&e);
    assert_eq!(got.len(), 1);
    // Too old to write now.
    let mut b = RowBatchBuilder::new("cpu").unwrap();
    b.push(
        &[("host", "a")],
        &[("v", FieldValue::F64(1.0))],
        Timestamp(5),
    )
    .unwrap();
    let out = e.write(b.finish()).unwrap();
    assert_eq!(out.rejected.len(), 1);
}

#[test]
fn memory_budget_fails_writes_clearly_when_flushes_cannot_keep_up() {
    let plan = Arc::new(tempora_storage::files::FaultPlan::default());
    let (mut io, _) = EngineIo::memory();
    io.files = io.files.with_faults(plan.clone());
    let opts = tempora_storage::EngineOptions {
        flush_threshold_bytes: 64 << 10,
        write_stall_bytes: 128 << 10,
        write_stall_timeout: std::time::Duration::from_millis(200),
        ..small_opts()
    };
    let e = Engine::open(opts, io).unwrap();
    write(&e, &[("a", 0, 1.0)]); // creates the table while there is space
    plan.set_disk_full(true);
    let mut failed = None;
    for round in 0..200 {
        let rows: Vec<(String, i64, f64)> = (0..100)
            .map(|i| (format!("h{i}"), round * SEC, 1.0))
            .collect();
        let mut b = RowBatchBuilder::new("cpu").unwrap();
        for (h, t, v) in &rows {
            b.push(&[("host", h)], &[("v", FieldValue::F64(*v))], Timestamp(*t))
                .unwrap();
        }
        if let Err(err) = e.write(b.finish()) {
            failed = Some(err);
            break;
        }
    }
    let err = failed.expect("writes must stop once the budget is used");
    assert!(matches!(err, StorageError::MemoryBudget { .. }), "{err}");
    assert_eq!(err.http_status(), 503);
    // Space returns: with no explicit flush, a retried write makes the workers flush again
    // and goes through once memory is released.
    plan.set_disk_full(false);
    let mut attempts = 0;
    loop {
        attempts += 1;
        let mut b = RowBatchBuilder::new("cpu").unwrap();
        b.push(
            &[("host", "z")],
            &[("v", FieldValue::F64(1.0))],
            Timestamp(0),
        )
        .unwrap();
        match e.write(b.finish()) {
            Ok(out) => {
                assert!(out.rejected.is_empty());
                break;
            }
            Err(StorageError::MemoryBudget { .. }) if attempts < 20 => continue,
            Err(err) => panic!("write did not resume after {attempts} attempts: {err}"),
        }
    }
    assert!(e.memtable_bytes() < 128 << 10, "the flush released memory");
}

/// WALs in memory behind a fault injector shared by all workers.
struct FaultyWals {
    inner: tempora_storage::MemWals,
    faults: parking_lot::Mutex<Vec<Arc<tempora_wal::FaultLogStore>>>,
}

impl tempora_storage::WalFactory for FaultyWals {
    fn store(&self, id: usize) -> tempora_storage::Result<Arc<dyn tempora_wal::LogStore>> {
        let f = Arc::new(tempora_wal::FaultLogStore::new(self.inner.store(id)?));
        self.faults.lock().push(f.clone());
        Ok(f)
    }
    fn existing(&self) -> tempora_storage::Result<Vec<usize>> {
        self.inner.existing()
    }
}

#[test]
fn wal_disk_full_fails_writes_keeps_reads_and_recovers() {
    let wals = Arc::new(FaultyWals {
        inner: Default::default(),
        faults: Default::default(),
    });
    let (mut io, _) = EngineIo::memory();
    io.wals = wals.clone();
    let files = io.files.clone();
    let e = Engine::open(small_opts(), io).unwrap();
    write(&e, &[("a", 1, 1.0)]);
    for f in wals.faults.lock().iter() {
        f.set_disk_full(true);
    }
    let mut b = RowBatchBuilder::new("cpu").unwrap();
    b.push(
        &[("host", "b")],
        &[("v", FieldValue::F64(2.0))],
        Timestamp(2),
    )
    .unwrap();
    let err = e.write(b.finish()).unwrap_err();
    assert!(matches!(err, StorageError::DiskFull { .. }), "{err}");
    assert_eq!(err.http_status(), 503, "{err}");
    assert_eq!(
        read_all(&e).len(),
        1,
        "reads keep working and the failed row is not visible"
    );
    for f in wals.faults.lock().iter() {
        f.set_disk_full(false);
    }
    write(&e, &[("c", 3, 3.0)]);
    assert_eq!(read_all(&e).len(), 2);
    // The series of the failed write is written again: its key must be logged in full, since
    // the record that first carried it was never committed.
    write(&e, &[("b", 4, 4.0)]);
    drop(e);
    let (mut io, _) = EngineIo::memory();
    io.wals = wals.clone();
    io.files = files;
    let e = Engine::open(small_opts(), io).unwrap();
    assert_eq!(read_all(&e).len(), 3, "replayed from the WAL alone");
}

#[test]
fn cold_region_indexes_are_evicted_and_reloaded_on_demand() {
    let dir = tempfile::tempdir().unwrap();
    let opts = || tempora_storage::EngineOptions {
        index_cache_bytes: 1,
        ..small_opts()
    };
    let day = 24 * 3600 * SEC;
    let e = Engine::open(opts(), EngineIo::local(dir.path()).unwrap()).unwrap();
    for d in 0..4 {
        let rows: Vec<(String, i64, f64)> = (0..20)
            .map(|i| (format!("h{i}"), d * day + i, d as f64))
            .collect();
        let refs: Vec<(&str, i64, f64)> =
            rows.iter().map(|(h, t, v)| (h.as_str(), *t, *v)).collect();
        write(&e, &refs);
        e.flush().unwrap();
    }
    let by_tag = |e: &Engine| {
        let req = ScanRequest {
            matcher: Matcher::In("host".into(), vec!["h3".into(), "h7".into()]),
            ..ScanRequest::default()
        };
        e.scan("cpu", &req)
            .unwrap()
            .iter()
            .map(|b| b.num_rows())
            .sum::<usize>()
    };
    assert_eq!(by_tag(&e), 8);
    let (_, evictions, _) = e.index_cache_stats();
    assert!(evictions > 0, "a 1-byte budget evicts clean indexes");
    // Latest values fill every region's cache, but their indexes are evicted again: a read
    // would load them from files, so no bound is given (the caller then reads off the
    // async runtime).
    assert_eq!(e.latest("cpu", &Matcher::All, None).unwrap().num_rows(), 20);
    assert_eq!(e.latest_rows_bound("cpu"), None);
    assert_eq!(by_tag(&e), 8, "evicted indexes reload");
    assert!(
        e.index_cache_stats().0 > 0,
        "indexes were loaded from files"
    );
    // Writing to an evicted region reloads its index and keeps series ids stable.
    write(&e, &[("h3", 5, 9.0)]);
    drop(e);
    let e = Engine::open(opts(), EngineIo::local(dir.path()).unwrap()).unwrap();
    // At start only the index of the region the replayed WAL record names is loaded; the
    // other seven stay on disk until used.
    assert_eq!(e.index_cache_stats().0, 1);
    assert_eq!(by_tag(&e), 9);
    assert_eq!(read_all(&e).len(), 81);
}

#[test]
fn unflushed_rows_survive_a_change_of_worker_count() {
    let dir = tempfile::tempdir().unwrap();
    let open = |workers| {
        let opts = tempora_storage::EngineOptions {
            workers,
            ..small_opts()
        };
        Engine::open(opts, EngineIo::local(dir.path()).unwrap()).unwrap()
    };
    let mut want = 0;
    for (round, workers) in [2usize, 1, 3, 2].into_iter().enumerate() {
        let e = open(workers);
        assert_eq!(
            read_all(&e).len(),
            want,
            "round {round}: rows after reopening"
        );
        let rows: Vec<(String, i64, f64)> = (0..30)
            .map(|i| (format!("h{i}"), round as i64 * 100 + i, 1.0))
            .collect();
        let refs: Vec<(&str, i64, f64)> =
            rows.iter().map(|(h, t, v)| (h.as_str(), *t, *v)).collect();
        write(&e, &refs);
        want += 30;
        drop(e); // no flush: the rows live in the WAL of one of `workers` workers
    }
    assert_eq!(read_all(&open(2)).len(), want);
}

#[test]
fn replayed_rows_are_flushed_and_not_replayed_again() {
    let dir = tempfile::tempdir().unwrap();
    let open = || Engine::open(small_opts(), EngineIo::local(dir.path()).unwrap()).unwrap();
    let e = open();
    write(&e, &[("a", 1, 1.0), ("b", 2, 2.0), ("c", 3, 3.0)]);
    drop(e);
    let e = open();
    assert_eq!(e.metrics().rows_replayed.get(), 3);
    e.flush().unwrap(); // covers the replayed rows (a flush already running is followed by another)
    drop(e);
    let e = open();
    assert_eq!(
        e.metrics().rows_replayed.get(),
        0,
        "the WAL was truncated after the flush"
    );
    assert_eq!(read_all(&e).len(), 3);
}

#[test]
fn a_dropped_table_is_gone_with_its_files_and_stays_gone_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let e = open_local(dir.path());
    write(&e, &[("a", 1, 1.0), ("b", 2, 2.0)]);
    e.flush().unwrap();
    write(&e, &[("a", 3, 3.0)]); // also in the memtable and the WAL
    assert!(e.drop_table("cpu").unwrap());
    assert!(!e.drop_table("cpu").unwrap(), "a second drop finds nothing");
    assert!(e.tables().is_empty());
    drop(e);
    let e = open_local(dir.path());
    assert!(
        e.tables().is_empty(),
        "replay must not bring the table back"
    );
    let parquet = walk(dir.path()).filter(|p| p.ends_with(".parquet")).count();
    assert_eq!(parquet, 0, "the table's files were deleted");
    write(&e, &[("c", 5, 5.0)]);
    assert_eq!(
        read_all(&e).len(),
        1,
        "a new table of the same name starts empty"
    );
}

#[test]
fn series_filters_skip_row_groups_without_losing_rows() {
    let (io, _) = EngineIo::memory();
    let opts = tempora_storage::EngineOptions {
        row_group_rows: 4,
        ..small_opts()
    };
    let e = Engine::open(opts, io).unwrap();
    let rows: Vec<(String, i64, f64)> = (0..300)
        .map(|i| (format!("h{:02}", i % 30), i * SEC, i as f64))
        .collect();
    let refs: Vec<(&str, i64, f64)> = rows.iter().map(|(h, t, v)| (h.as_str(), *t, *v)).collect();
    write(&e, &refs);
    e.flush().unwrap();
    let all = read_all(&e);
    for pick in [
        vec!["h00"],
        vec!["h07", "h29"],
        vec!["h15", "h16", "h17"],
        vec!["zz"],
    ] {
        let req = ScanRequest {
            matcher: Matcher::In("host".into(), pick.iter().map(|s| s.to_string()).collect()),
            time: Some((50 * SEC, 250 * SEC)),
            ..ScanRequest::default()
        };
        let mut got = BTreeMap::new();
        for b in e.scan("cpu", &req).unwrap() {
            collect(&b, &mut got);
        }
        let want: BTreeMap<_, _> = all
            .iter()
            .filter(|((h, t), _)| pick.contains(&h.as_str()) && (50 * SEC..250 * SEC).contains(t))
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        assert_eq!(got, want, "{pick:?}");
    }
}

/// A deleted series stays in its region's index, but the series listing (PromQL's
/// `/api/v1/series`, InfluxQL's `SHOW SERIES` and `SHOW TAG VALUES`) does not name it.
#[test]
fn series_listing_leaves_out_deleted_series() {
    use tempora_storage::DeleteRequest;
    let (io, _) = EngineIo::memory();
    let e = Engine::open(small_opts(), io).unwrap();
    let mut b = RowBatchBuilder::new("cpu").unwrap();
    for host in ["a", "b"] {
        b.push(
            &[("host", host)],
            &[("v", FieldValue::F64(1.0))],
            Timestamp(1),
        )
        .unwrap();
    }
    e.write(b.finish()).unwrap();
    let listed = |e: &Engine| {
        let req = ScanRequest {
            time: None,
            matcher: Matcher::All,
            fields: Some(Vec::new()),
            tags: Some(Vec::new()),
            field_bounds: Vec::new(),
        };
        let plan = e.plan_scan("cpu", &req).unwrap();
        let mut keys: Vec<bytes::Bytes> = (0..plan.regions())
            .flat_map(|i| plan.series_keys(i).unwrap())
            .collect();
        keys.sort();
        keys
    };
    assert_eq!(listed(&e).len(), 2);
    e.delete(
        "cpu",
        &DeleteRequest {
            time: None,
            matcher: Matcher::Eq("host".into(), "a".into()),
            series_filter: None,
        },
    )
    .unwrap();
    let left = listed(&e);
    assert_eq!(left.len(), 1, "{left:?}");
    let mut tags = Vec::new();
    tempora_model::for_each_tag(&left[0], |k, v| tags.push((k.to_string(), v.to_string())))
        .unwrap();
    assert_eq!(tags, [("host".to_string(), "b".to_string())]);
}
