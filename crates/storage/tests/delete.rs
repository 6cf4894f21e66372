//! DELETE through the engine's API: rows vanish from scans and latest values at once, in the
//! memtable and in files, stay deleted through restart and crash, and compaction rewrites
//! them away and then drops the tombstones. Points written after a delete stay.

mod common;

use std::collections::BTreeMap;

use bytes::Bytes;
use common::*;
use tempora_model::decode_series_key;
use tempora_storage::{DeleteRequest, Engine, EngineIo, Matcher, StorageError};

type Rows = BTreeMap<(String, i64), Option<f64>>;

fn hosts(h: &[&str]) -> Matcher {
    Matcher::Or(
        h.iter()
            .map(|v| Matcher::Eq("host".into(), (*v).into()))
            .collect(),
    )
}

fn delete(e: &Engine, time: Option<(i64, i64)>, m: Matcher) -> u64 {
    e.delete(
        "cpu",
        &DeleteRequest {
            time,
            matcher: m,
            series_filter: None,
        },
    )
    .unwrap()
}

/// The newest (time, v) of every host, from the last-value cache.
fn latest(e: &Engine) -> BTreeMap<String, (i64, Option<f64>)> {
    let b = e.latest("cpu", &Matcher::All, None).unwrap();
    let mut rows = Rows::new();
    collect(&b, &mut rows);
    let mut out = BTreeMap::new();
    for ((h, t), v) in rows {
        out.insert(h, (t, v));
    }
    out
}

/// Hosts a, b, c at 1..=20 s (value = seconds + 100 × host number); 1..=10 in files.
fn seeded(e: &Engine) -> Rows {
    let mut want = Rows::new();
    let mut rows = Vec::new();
    for (n, h) in ["a", "b", "c"].iter().enumerate() {
        for s in 1..=20 {
            let v = (s + 100 * n as i64) as f64;
            rows.push((*h, s * SEC, v));
            want.insert((h.to_string(), s * SEC), Some(v));
        }
    }
    let (old, new): (Vec<_>, Vec<_>) = rows.into_iter().partition(|r| r.1 <= 10 * SEC);
    write(e, &old);
    e.flush().unwrap();
    write(e, &new);
    want
}

#[test]
fn deleted_rows_vanish_everywhere_and_stay_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let e = open_local(dir.path());
    let mut want = seeded(&e);
    // Host a, 5..15 s: six rows in files, five in the memtable.
    assert_eq!(delete(&e, Some((5 * SEC, 16 * SEC)), hosts(&["a"])), 11);
    want.retain(|(h, t), _| !(h == "a" && (5 * SEC..16 * SEC).contains(t)));
    assert_eq!(read_all(&e), want, "after the delete");
    // Host b's last three points: its latest value steps back to 17 s.
    assert_eq!(delete(&e, Some((18 * SEC, 100 * SEC)), hosts(&["b"])), 3);
    want.retain(|(h, t), _| !(h == "b" && *t >= 18 * SEC));
    assert_eq!(latest(&e)["b"], (17 * SEC, Some(117.0)));
    assert_eq!(latest(&e)["a"], (20 * SEC, Some(20.0)));
    // Nothing matches: nothing deleted, no tombstone.
    assert_eq!(delete(&e, Some((50 * SEC, 60 * SEC)), Matcher::All), 0);
    assert_eq!(delete(&e, None, hosts(&["zz"])), 0);
    // A point written again after the delete, at a deleted time, is visible.
    write(&e, &[("a", 7 * SEC, 7.5)]);
    want.insert(("a".into(), 7 * SEC), Some(7.5));
    assert_eq!(read_all(&e), want, "rewritten point");
    // A crash (no flush, no close) keeps the deletes: they are in the manifest.
    drop(e);
    let e = open_local(dir.path());
    assert_eq!(read_all(&e), want, "after a crash");
    assert_eq!(
        latest(&e)["b"],
        (17 * SEC, Some(117.0)),
        "cache after restart"
    );
    assert_eq!(e.storage_counts().0, 2, "one tombstone per delete");
    // Flush applies the tombstones; compaction rewrites the older files and drops them.
    e.flush().unwrap();
    e.compact().unwrap();
    let (tombs, _, file_rows) = e.storage_counts();
    assert_eq!(tombs, 0, "{}", e.debug_state());
    assert_eq!(
        file_rows,
        want.len() as u64,
        "deleted rows are gone from the files"
    );
    assert_eq!(read_all(&e), want, "after compaction");
    e.close().unwrap();
    let e = open_local(dir.path());
    assert_eq!(read_all(&e), want, "after a clean restart");
    // New writes sort after the deletes replayed from the manifest.
    write(&e, &[("b", 19 * SEC, 1.0)]);
    want.insert(("b".into(), 19 * SEC), Some(1.0));
    assert_eq!(read_all(&e), want, "written after restart");
}

#[test]
fn a_delete_without_conditions_empties_the_table() {
    let (io, _) = EngineIo::memory();
    let e = Engine::open(small_opts(), io).unwrap();
    seeded(&e);
    assert_eq!(delete(&e, None, Matcher::All), 60);
    assert!(read_all(&e).is_empty());
    assert!(latest(&e).is_empty());
    write(&e, &[("c", 3 * SEC, 1.0)]);
    assert_eq!(read_all(&e).len(), 1);
    assert_eq!(
        e.delete(
            "nope",
            &DeleteRequest {
                time: None,
                matcher: Matcher::All,
                series_filter: None
            }
        )
        .unwrap_err()
        .to_string(),
        StorageError::TableNotFound("nope".into()).to_string()
    );
}

#[test]
fn the_series_filter_chooses_exactly_among_the_candidates() {
    let (io, _) = EngineIo::memory();
    let e = Engine::open(small_opts(), io).unwrap();
    let mut want = seeded(&e);
    // Candidates: every series; the filter keeps hosts after "a".
    let filter = |keys: &[Bytes]| -> tempora_storage::Result<Vec<bool>> {
        Ok(keys
            .iter()
            .map(|k| {
                let tags = decode_series_key(k).unwrap();
                tags.iter().any(|(t, v)| t == "host" && v.as_str() > "a")
            })
            .collect())
    };
    let n = e
        .delete(
            "cpu",
            &DeleteRequest {
                time: Some((0, 3 * SEC)),
                matcher: Matcher::All,
                series_filter: Some(&filter),
            },
        )
        .unwrap();
    assert_eq!(n, 4);
    want.retain(|(h, t), _| !(h != "a" && *t < 3 * SEC));
    assert_eq!(read_all(&e), want);
}

#[test]
fn a_delete_after_restart_is_not_mistaken_for_one_already_applied() {
    let dir = tempfile::tempdir().unwrap();
    let e = open_local(dir.path());
    let mut want = seeded(&e);
    // The delete is the newest thing that takes a sequence number; compaction applies it and
    // drops its tombstone, so after the restart only the files remember it (purged_seq).
    assert_eq!(delete(&e, Some((0, 3 * SEC)), Matcher::All), 6);
    want.retain(|(_, t), _| *t >= 3 * SEC);
    e.flush().unwrap();
    e.compact().unwrap();
    assert_eq!(e.storage_counts().0, 0);
    e.close().unwrap();
    let e = open_local(dir.path());
    // A new delete must take a newer sequence number than the one the files were purged of.
    assert_eq!(delete(&e, Some((3 * SEC, 5 * SEC)), Matcher::All), 6);
    want.retain(|(_, t), _| *t >= 5 * SEC);
    assert_eq!(read_all(&e), want, "the second delete");
    e.compact().unwrap();
    assert_eq!(read_all(&e), want, "after its compaction");
    e.close().unwrap();
    let e = open_local(dir.path());
    assert_eq!(read_all(&e), want, "after another restart");
}
