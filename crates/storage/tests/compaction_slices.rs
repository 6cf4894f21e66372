//! Compaction within `compaction_memory_bytes`: a region too large to merge at once is
//! compacted in key slices appended to one file per window (a new file past
//! `compaction_target_file_bytes`, the files' key ranges not overlapping); every row,
//! overwrite and delete comes out as a merge of everything would give, the picker leaves the
//! files be, a late write merges with them again, and a restart reads the same rows.

mod common;

use common::*;
use tempora_storage::clock::ManualClock;
use tempora_storage::{DeleteRequest, Engine, EngineIo, EngineOptions, Matcher};

const DAY: i64 = 24 * 3600 * SEC;
const HOSTS: usize = 200;

fn opts(memory: usize, target: usize) -> EngineOptions {
    EngineOptions {
        buckets: 1,
        compaction_memory_bytes: memory,
        compaction_target_file_bytes: target,
        ..small_opts()
    }
}

/// Four flushes over day 0, each writing every host at its own times; the last one overwrites
/// the first one's points with new values.
fn load(e: &Engine) {
    for round in 0..4i64 {
        let rows: Vec<(String, i64, f64)> = (0..HOSTS)
            .flat_map(|h| {
                (0..10i64).map(move |i| {
                    let t = match round {
                        3 => i * 60 * SEC,
                        r => (r * 10 + i) * 60 * SEC,
                    };
                    (format!("host{h:03}"), t, (round * 1000 + i) as f64)
                })
            })
            .collect();
        let refs: Vec<(&str, i64, f64)> =
            rows.iter().map(|(h, t, v)| (h.as_str(), *t, *v)).collect();
        write(e, &refs);
        e.flush().unwrap();
    }
}

fn open(
    dir: &std::path::Path,
    clock: &std::sync::Arc<ManualClock>,
    memory: usize,
    target: usize,
) -> Engine {
    let mut io = EngineIo::local(dir).unwrap();
    io.clock = clock.clone();
    Engine::open(opts(memory, target), io).unwrap()
}

/// The engine's counter `name`.
fn counter(e: &Engine, name: &str) -> u64 {
    e.metrics()
        .counters()
        .into_iter()
        .find(|(n, ..)| *n == name)
        .map(|(.., v)| v)
        .unwrap()
}

#[test]
fn an_ended_partition_compacts_in_slices_with_the_same_rows_as_at_once() {
    let clock = ManualClock::new(0);
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    // 8,000 rows of one field: 8,000 x 29 bytes x 3 copies is about 700 kB. Sliced into one
    // file; sliced into files of about 8 kB; all at once.
    let one_file = open(dirs[0].path(), &clock, 64 << 10, 256 << 20);
    let sliced = open(dirs[1].path(), &clock, 64 << 10, 8 << 10);
    let whole = open(dirs[2].path(), &clock, 64 << 20, 256 << 20);
    for e in [&one_file, &sliced, &whole] {
        load(e);
        e.delete(
            "cpu",
            &DeleteRequest {
                time: Some((0, 5 * 60 * SEC)),
                matcher: Matcher::Eq("host".into(), "host007".into()),
                series_filter: None,
            },
        )
        .unwrap();
    }
    let before = read_all(&whole);
    assert_eq!(read_all(&sliced), before);
    assert_eq!(before.len(), HOSTS * 30 - 5, "overwrites and the delete");
    clock.set(DAY);
    for e in [&one_file, &sliced, &whole] {
        assert!(e.compact().unwrap() >= 1);
        assert_eq!(read_all(e), before, "compaction keeps every row");
    }
    let slices = "tempora_compaction_slices_total";
    assert!(counter(&one_file, slices) >= 10, "read in slices");
    assert!(counter(&sliced, slices) >= 10, "read in slices");
    assert_eq!(counter(&whole, slices), 0, "read at once");
    assert_eq!(one_file.storage_counts().1, 1, "{}", one_file.debug_state());
    assert_eq!(whole.storage_counts().1, 1, "{}", whole.debug_state());
    let files_sliced = sliced.storage_counts().1;
    assert!(
        files_sliced >= 3,
        "{files_sliced} files: {}",
        sliced.debug_state()
    );
    assert_eq!(
        sliced.compact().unwrap(),
        0,
        "files side by side are left be"
    );

    // A late write to day 0 overlaps two slices by key: they merge with it. It overwrites a
    // point the compaction wrote (whose rows now share one sequence), and a later delete
    // hides another: both are newer than every compacted row.
    write(
        &sliced,
        &[
            ("host000", 7, -1.0),
            ("host199", 7, -2.0),
            ("host100", 0, -3.0),
        ],
    );
    sliced.flush().unwrap();
    sliced
        .delete(
            "cpu",
            &DeleteRequest {
                time: Some((60 * SEC, 61 * SEC)),
                matcher: Matcher::Eq("host".into(), "host050".into()),
                series_filter: None,
            },
        )
        .unwrap();
    assert!(sliced.compact().unwrap() >= 1);
    assert_eq!(sliced.compact().unwrap(), 0, "{}", sliced.debug_state());
    let mut want = before.clone();
    want.insert(("host000".into(), 7), Some(-1.0));
    want.insert(("host199".into(), 7), Some(-2.0));
    want.insert(("host100".into(), 0), Some(-3.0));
    assert!(want.remove(&("host050".into(), 60 * SEC)).is_some());
    assert_eq!(read_all(&sliced), want);
    let files = sliced.storage_counts().1;

    sliced.close().unwrap();
    let again = open(dirs[1].path(), &clock, 64 << 10, 8 << 10);
    assert_eq!(read_all(&again), want, "after restart");
    assert_eq!(again.storage_counts().1, files);
    assert_eq!(
        again.compact().unwrap(),
        0,
        "key ranges survive the restart"
    );
}
