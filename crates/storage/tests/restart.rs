//! Restarts: the last-value cache filled from each data file's newest rows (and from the
//! whole files when those are missing), and the prewarm thread that fills the decoded-column
//! cache, on real files.

mod common;

use std::collections::BTreeMap;

use common::*;
use tempora_storage::{Engine, EngineIo, Matcher, ScanRequest};

/// Writes the data of the newest-rows tests and stops without a flush: two files (series
/// a and b in the first, a again later and c in the second, each with several rows per
/// series, so each gets its newest rows beside it), and c's newest point only in the WAL.
/// Returns the latest point of each host.
fn two_files_and_a_wal(dir: &std::path::Path) -> BTreeMap<(String, i64), Option<f64>> {
    let e = open_local(dir);
    let rows1: Vec<(&str, i64, f64)> = (1..=8)
        .flat_map(|i| {
            [
                ("a", i * SEC, i as f64),
                ("b", (9 - i) * SEC, 10.0 + i as f64),
            ]
        })
        .collect();
    write(&e, &rows1);
    e.flush().unwrap();
    let rows2: Vec<(&str, i64, f64)> = (2..=9)
        .flat_map(|i| {
            [
                ("a", i * SEC, 100.0 + i as f64),
                ("c", i * SEC, 200.0 + i as f64),
            ]
        })
        .collect();
    write(&e, &rows2);
    e.flush().unwrap();
    write(&e, &[("c", 20 * SEC, 7.0), ("a", SEC / 2, 0.5)]);
    drop(e);
    [
        (("a".to_string(), 9 * SEC), Some(109.0)),
        (("b".to_string(), 8 * SEC), Some(11.0)),
        (("c".to_string(), 20 * SEC), Some(7.0)),
    ]
    .into()
}

/// The newest-rows files (`.last`) or the data files (`.parquet`) under `dir`, sorted.
fn files_named(dir: &std::path::Path, newest_rows: bool) -> Vec<String> {
    let suffix = if newest_rows { ".last" } else { ".parquet" };
    let mut out: Vec<String> = walk(&dir.join("data"))
        .filter(|p| p.ends_with(suffix))
        .collect();
    out.sort();
    out
}

fn latest_all(e: &Engine) -> BTreeMap<(String, i64), Option<f64>> {
    let mut got = BTreeMap::new();
    collect(&e.latest("cpu", &Matcher::All, None).unwrap(), &mut got);
    got
}

/// After a restart the last-value cache is filled from each file's newest rows: with every
/// whole data file that has them made unreadable, the latest values are still right.
#[test]
fn latest_values_after_restart_are_read_from_each_files_newest_rows() {
    let dir = tempfile::tempdir().unwrap();
    let want = two_files_and_a_wal(dir.path());
    let sidecars = files_named(dir.path(), true);
    let whole = files_named(dir.path(), false);
    assert!(sidecars.len() >= 2, "{sidecars:?}");
    assert_eq!(
        sidecars.len(),
        whole.len(),
        "one per flushed file: {sidecars:?} {whole:?}"
    );
    for p in &whole {
        std::fs::write(p, b"not parquet").unwrap();
    }
    let e = open_local(dir.path());
    assert_eq!(latest_all(&e), want);
    assert!(
        e.scan("cpu", &ScanRequest::default()).is_err(),
        "a full read does see the damage"
    );
}

/// A newest-rows file that is missing is logged and the whole files are read instead; a
/// compaction deletes its inputs' newest rows with them.
#[test]
fn latest_values_fall_back_to_whole_files_and_compaction_removes_newest_rows() {
    let dir = tempfile::tempdir().unwrap();
    let want = two_files_and_a_wal(dir.path());
    for p in files_named(dir.path(), true) {
        std::fs::remove_file(p).unwrap();
    }
    let e = open_local(dir.path());
    assert_eq!(latest_all(&e), want, "from the whole files");
    e.close().unwrap();

    let dir = tempfile::tempdir().unwrap();
    let want = two_files_and_a_wal(dir.path());
    let before = files_named(dir.path(), true);
    let e = open_local(dir.path());
    e.flush().unwrap();
    assert!(e.compact().unwrap() > 0);
    let after = files_named(dir.path(), true);
    assert!(
        before.iter().any(|p| !after.contains(p)),
        "{before:?} all left"
    );
    let stem = |p: &String| {
        let name = std::path::Path::new(p)
            .file_name()
            .unwrap()
            .to_string_lossy();
        name.split('.').next().unwrap().to_string()
    };
    let whole: Vec<String> = files_named(dir.path(), false).iter().map(stem).collect();
    for p in &after {
        assert!(
            whole.contains(&stem(p)),
            "{p:?} outlived its file ({whole:?})"
        );
    }
    e.close().unwrap();
    let e = open_local(dir.path());
    assert_eq!(latest_all(&e), want, "after compaction and restart");
}

/// After a restart the prewarm thread decodes the newest data into the decoded-column cache,
/// so a full read decodes nothing more and returns the same rows; a small share stops early;
/// 0 leaves the cache empty.
#[test]
fn prewarm_fills_the_decoded_cache_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let opts = |percent: u8, budget: usize| tempora_storage::options::EngineOptions {
        row_group_rows: 100,
        prewarm_percent: percent,
        decoded_cache_bytes: budget,
        ..small_opts()
    };
    let e = Engine::open(opts(0, 64 << 20), EngineIo::local(dir.path()).unwrap()).unwrap();
    let rows: Vec<(String, i64, f64)> = (0..2000)
        .map(|i| (format!("h{}", i % 5), i * SEC, i as f64))
        .collect();
    let refs: Vec<(&str, i64, f64)> = rows.iter().map(|(h, t, v)| (h.as_str(), *t, *v)).collect();
    write(&e, &refs);
    e.close().unwrap();
    let reopen = |percent, budget| {
        let e = Engine::open(opts(percent, budget), EngineIo::local(dir.path()).unwrap()).unwrap();
        e.wait_prewarm();
        e
    };

    let e = reopen(0, 64 << 20);
    assert_eq!(e.decoded_cache_stats(), (0, 0, 0), "off: nothing read");
    let want = read_all(&e);
    assert_eq!(want.len(), 2000);
    e.close().unwrap();

    let e = reopen(100, 64 << 20);
    let (bytes, hits, misses) = e.decoded_cache_stats();
    assert!(bytes > 0 && misses > 0, "{bytes} {misses}");
    assert_eq!(read_all(&e), want);
    let after = e.decoded_cache_stats();
    assert_eq!(after.2, misses, "the read decoded nothing more");
    assert!(after.1 > hits, "it was answered from the cache");
    e.close().unwrap();

    let e = reopen(10, 100_000);
    let (bytes, _, misses) = e.decoded_cache_stats();
    assert!(bytes >= 10_000, "stopped at the limit, not before: {bytes}");
    assert_eq!(read_all(&e), want);
    assert!(
        e.decoded_cache_stats().2 > misses,
        "the rest was decoded by the read"
    );
}

/// Bytes of every WAL segment under `dir`.
fn wal_bytes(dir: &std::path::Path) -> u64 {
    walk(&dir.join("wal"))
        .map(|p| std::fs::metadata(&p).map_or(0, |m| m.len()))
        .sum()
}

#[test]
fn a_clean_close_leaves_no_wal_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let rows: Vec<(&str, i64, f64)> = (1..=50).map(|i| ("a", i * SEC, i as f64)).collect();
    let e = open_local(dir.path());
    write(&e, &rows);
    assert!(
        wal_bytes(dir.path()) > 0,
        "the rows are in the WAL before the close"
    );
    e.close().unwrap();
    assert_eq!(
        wal_bytes(dir.path()),
        0,
        "a clean close flushes and removes the log"
    );
    let e = open_local(dir.path());
    assert_eq!(read_all(&e).len(), 50);
    // The log starts again after the removal: a write then a stop without a flush (as a
    // kill) is replayed at the next open, above the sequences the files hold.
    write(&e, &[("b", 60 * SEC, 1.0)]);
    assert!(wal_bytes(dir.path()) > 0);
    drop(e);
    let e = open_local(dir.path());
    let all = read_all(&e);
    assert_eq!(all.len(), 51);
    assert_eq!(all.get(&("b".to_string(), 60 * SEC)), Some(&Some(1.0)));
    e.close().unwrap();
    assert_eq!(wal_bytes(dir.path()), 0);
}
