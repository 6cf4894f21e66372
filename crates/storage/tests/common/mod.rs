//! Helpers shared by the engine's integration tests.
#![allow(dead_code)]

use std::collections::BTreeMap;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{Float64Type, TimestampNanosecondType};
use tempora_model::{FieldValue, RowBatchBuilder, Timestamp};
use tempora_storage::{Engine, EngineOptions, ScanRequest};

pub const SEC: i64 = 1_000_000_000;

/// Small options so flushes and compactions happen in tests.
pub fn small_opts() -> EngineOptions {
    EngineOptions {
        workers: 2,
        // Fixed one-day partitions of two buckets: the layout these tests reason about
        // (partitions sized to the data have tests of their own).
        buckets: 2,
        buckets_auto: false,
        partition_auto: false,
        flush_threshold_bytes: 1 << 20,
        write_stall_bytes: 4 << 20,
        compaction_trigger_files: 2,
        // Small enough that clean region indexes are evicted and reloaded during tests.
        index_cache_bytes: 16 << 10,
        maintenance_interval: std::time::Duration::from_secs(3600),
        ..EngineOptions::default()
    }
}

/// Writes rows `(host, time, value)` of table `cpu` with field `v`; panics on any rejection.
pub fn write(engine: &Engine, rows: &[(&str, i64, f64)]) {
    let mut b = RowBatchBuilder::new("cpu").unwrap();
    for (host, t, v) in rows {
        b.push(
            &[("host", host)],
            &[("v", FieldValue::F64(*v))],
            Timestamp(*t),
        )
        .unwrap();
    }
    let out = engine.write(b.finish()).unwrap();
    assert!(out.rejected.is_empty(), "{:?}", out.rejected);
}

/// All rows of `cpu` as host → time → v.
pub fn read_all(engine: &Engine) -> BTreeMap<(String, i64), Option<f64>> {
    read_table(engine, "cpu")
}

/// All rows of `table` (tag `host`, field `v`) as host → time → v; none when it does not exist.
pub fn read_table(engine: &Engine, table: &str) -> BTreeMap<(String, i64), Option<f64>> {
    let batches = match engine.scan(table, &ScanRequest::default()) {
        Ok(b) => b,
        Err(tempora_storage::StorageError::TableNotFound(_)) => Vec::new(),
        Err(e) => panic!("scan failed: {e}"),
    };
    let mut out = BTreeMap::new();
    let mut n = 0;
    for b in &batches {
        n += b.num_rows();
        collect(b, &mut out);
    }
    assert_eq!(n, out.len(), "a (series, time) appeared twice");
    out
}

pub fn collect(b: &RecordBatch, out: &mut BTreeMap<(String, i64), Option<f64>>) {
    let host = b.column_by_name("host").unwrap().as_string::<i32>();
    let time = b
        .column_by_name("time")
        .unwrap()
        .as_primitive::<TimestampNanosecondType>();
    let v = b.column_by_name("v").unwrap().as_primitive::<Float64Type>();
    for i in 0..b.num_rows() {
        let val = v.is_valid(i).then(|| v.value(i));
        out.insert((host.value(i).to_string(), time.value(i)), val);
    }
}

/// Opens an engine with [`small_opts`] on files under `dir`.
pub fn open_local(dir: &std::path::Path) -> Engine {
    Engine::open(small_opts(), tempora_storage::EngineIo::local(dir).unwrap()).unwrap()
}

/// Every file under `p`, recursively, as a path string.
pub fn walk(p: &std::path::Path) -> impl Iterator<Item = String> {
    let mut out = Vec::new();
    let mut stack = vec![p.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path().display().to_string());
            }
        }
    }
    out.into_iter()
}
