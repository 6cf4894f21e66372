use std::sync::Arc;

use super::*;
use crate::files::store::{FaultPlan, FileStore};

fn file(id: u64) -> FileMeta {
    FileMeta {
        min_seq: 0,
        purged_seq: 0,
        id,
        path: format!("data/t0/p0/b0/{id:016x}.parquet"),
        rows: 1,
        size: 1,
        min_time: 0,
        max_time: 0,
        max_seq: id,
        last_rows: None,
        key_range: None,
        rollups: Vec::new(),
        raw_expired: false,
        crc32c: None,
    }
}

/// The paths the store lists under `dir`, in its order.
fn paths(store: &FileStore, dir: &str) -> Vec<String> {
    store
        .list(dir)
        .unwrap()
        .into_iter()
        .map(|(p, _)| p)
        .collect()
}

fn region() -> RegionKey {
    RegionKey {
        table: TableId(0),
        start: 0,
        end: crate::options::DAY_NS,
        bucket: 0,
        buckets: 1,
    }
}

fn flush(id: u64) -> Vec<Edit> {
    vec![Edit::Flush {
        region: region(),
        files: vec![file(id)],
        flushed_seq: id,
        index_path: None,
    }]
}

#[test]
fn edits_survive_reopen_across_checkpoints() {
    let store = FileStore::memory();
    let mut m = Manifest::open(store.clone(), 3).unwrap();
    m.commit(vec![Edit::CreateTable {
        name: "cpu".into(),
        id: TableId(0),
    }])
    .unwrap();
    for id in 0..7 {
        m.commit(flush(id)).unwrap();
    }
    m.commit(vec![Edit::Compact {
        region: region(),
        added: vec![file(9)],
        removed: vec![0, 1],
    }])
    .unwrap();
    let want = m.state().clone();
    let again = Manifest::open(store.clone(), 3).unwrap();
    assert_eq!(again.state(), &want);
    assert_eq!(want.region(&region()).unwrap().files.len(), 6);
    assert_eq!(want.next_file_id, 10);
    // Old edits were folded into checkpoints.
    let names = paths(&store, "manifest");
    assert!(
        names.iter().filter(|p| p.ends_with(".ckpt")).count() == 1,
        "{names:?}"
    );
    assert!(names.len() <= 4, "{names:?}");
}

#[test]
fn damaged_files_are_named_errors() {
    // (name, mutate the newest edit's bytes)
    type Mutate = fn(&mut Vec<u8>);
    let cases: Vec<(&str, Mutate)> = vec![
        ("truncated header", |b| b.truncate(5)),
        ("bad magic", |b| b[0] ^= 1),
        ("bad version", |b| b[8] = 9),
        ("flipped body bit", |b| {
            let n = b.len() - 1;
            b[n] ^= 0x10
        }),
        ("short body", |b| {
            b.pop();
        }),
        ("empty file", |b| b.clear()),
    ];
    // The newest edit is each kind of commit: a flush, and the database edits.
    let newest: Vec<(&str, Vec<Edit>)> = vec![
        ("flush", flush(1)),
        ("create database", vec![create_db("db")]),
        ("put model", vec![put_model("db.m")]),
        (
            "drop database",
            vec![
                Edit::DropTable { name: "t".into() },
                Edit::DropDatabase { name: "db".into() },
            ],
        ),
    ];
    for (kind, edits) in newest {
        for (name, mutate) in &cases {
            let store = FileStore::memory();
            let mut m = Manifest::open(store.clone(), 100).unwrap();
            m.commit(vec![Edit::CreateTable {
                name: "t".into(),
                id: TableId(0),
            }])
            .unwrap();
            m.commit(edits.clone()).unwrap();
            let path = edit_path(2);
            let mut bytes = store.get(&path).unwrap().to_vec();
            mutate(&mut bytes);
            store.put(&path, Bytes::from(bytes)).unwrap();
            match Manifest::open(store, 100) {
                Err(StorageError::CorruptManifest { path: p, .. }) => {
                    assert_eq!(p, path, "{kind}: {name}")
                }
                Err(e) => panic!("{kind}: {name}: unexpected error {e}"),
                Ok(_) => panic!("{kind}: {name}: damage was not detected"),
            }
        }
    }
}

fn create_db(name: &str) -> Edit {
    Edit::CreateDatabase { name: name.into() }
}

/// Databases are recorded by their edits, kept across checkpoints and reopens; a drop removes
/// the record and, in the same commit, the tables.
#[test]
fn database_edits_survive_reopen_across_checkpoints() {
    let store = FileStore::memory();
    let mut m = Manifest::open(store.clone(), 2).unwrap();
    m.commit(vec![create_db("a"), create_db("b")]).unwrap();
    m.commit(vec![Edit::CreateTable {
        name: "b.t".into(),
        id: TableId(0),
    }])
    .unwrap();
    m.commit(vec![create_db("c")]).unwrap();
    m.commit(vec![
        Edit::DropTable { name: "b.t".into() },
        Edit::DropDatabase { name: "b".into() },
    ])
    .unwrap();
    m.commit(vec![create_db("a")]).unwrap();
    let want: BTreeSet<String> = ["a", "c"].map(String::from).into();
    assert_eq!(m.state().databases, want);
    assert!(m.state().tables.is_empty());
    let again = Manifest::open(store.clone(), 2).unwrap();
    assert_eq!(again.state(), m.state());
    assert!(
        paths(&store, "manifest")
            .iter()
            .any(|p| p.ends_with(".ckpt")),
        "a checkpoint holds the databases"
    );
}

/// A state written before databases were recorded (no `databases` field) reads as no
/// explicit databases.
#[test]
fn a_state_from_before_databases_reads_as_none() {
    let store = FileStore::memory();
    let mut m = Manifest::open(store.clone(), 100).unwrap();
    m.commit(vec![create_db("gone")]).unwrap();
    m.commit(flush(1)).unwrap();
    m.checkpoint().unwrap();
    let ckpt = ckpt_path(m.state().version);
    let mut state: serde_json::Value =
        serde_json::from_slice(unframe(&ckpt, &store.get(&ckpt).unwrap()).unwrap()).unwrap();
    assert!(state.as_object_mut().unwrap().remove("databases").is_some());
    let old = serde_json::to_vec(&state).unwrap();
    store.put(&ckpt, frame(&old)).unwrap();
    let m = Manifest::open(store, 100).unwrap();
    assert!(m.state().databases.is_empty());
    assert_eq!(m.state().region(&region()).unwrap().files.len(), 1);
}

#[test]
fn missing_edit_in_the_middle_is_an_error() {
    let store = FileStore::memory();
    let mut m = Manifest::open(store.clone(), 100).unwrap();
    for id in 0..3 {
        m.commit(flush(id)).unwrap();
    }
    store.delete(&edit_path(2)).unwrap();
    let err = Manifest::open(store, 100).err().expect("gap detected");
    assert!(err.to_string().contains("edit missing"), "{err}");
}

#[test]
fn crash_at_every_io_leaves_old_or_new_version() {
    // Commit 5 edits with checkpoints every 2, crashing at I/O k for every k.
    for k in 0..40 {
        let base = FileStore::memory();
        let plan = Arc::new(FaultPlan::default());
        let store = base.with_faults(plan.clone());
        plan.crash_after(k);
        let mut committed = 0u64;
        if let Ok(mut m) = Manifest::open(store, 2) {
            for id in 0..5 {
                if m.commit(flush(id)).is_err() {
                    break;
                }
                committed += 1;
            }
        }
        let m = Manifest::open(base, 2).unwrap_or_else(|e| panic!("k={k}: {e}"));
        let files = m
            .state()
            .region(&region())
            .map_or(0, |r| r.files.len() as u64);
        // The fault plan fails an operation before it happens, so a failed commit left nothing.
        assert_eq!(files, committed, "k={k}");
        assert_eq!(m.state().version, files, "k={k}");
    }
}

#[test]
fn orphans_are_removed_and_live_files_kept() {
    let store = FileStore::memory();
    let mut m = Manifest::open(store.clone(), 100).unwrap();
    m.commit(flush(1)).unwrap();
    store
        .put(&file(1).path, Bytes::from_static(b"live"))
        .unwrap();
    store
        .put(&file(2).path, Bytes::from_static(b"orphan"))
        .unwrap();
    assert_eq!(m.remove_orphans().unwrap(), 1);
    let left = paths(&store, "data");
    assert_eq!(left, vec![file(1).path]);
}

#[test]
fn a_files_newest_rows_live_and_die_with_it() {
    let store = FileStore::memory();
    let mut m = Manifest::open(store.clone(), 100).unwrap();
    let mut f = file(1);
    let last = "data/t0/p0/b0/0000000000000001.last".to_string();
    f.last_rows = Some(last.clone());
    m.commit(vec![Edit::Flush {
        region: region(),
        files: vec![f.clone()],
        flushed_seq: 1,
        index_path: None,
    }])
    .unwrap();
    let orphan = "data/t0/p0/b0/0000000000000002.last";
    for p in [&f.path, &last, &orphan.to_string()] {
        store.put(p, Bytes::from_static(b"x")).unwrap();
    }
    assert_eq!(m.remove_orphans().unwrap(), 1, "only the unnamed one");
    let left = paths(&store, "data");
    assert_eq!(
        left,
        vec![last.clone(), f.path.clone()],
        "listed in name order"
    );
    drop(m);
    let m = Manifest::open(store.clone(), 100).unwrap();
    let got = &m.state().region(&region()).unwrap().files[&1];
    assert_eq!(
        got.last_rows.as_deref(),
        Some(last.as_str()),
        "kept across reopen"
    );
}

#[test]
fn a_file_entry_without_newest_rows_reads_as_none() {
    let old = r#"{"id":7,"path":"p","rows":1,"size":1,"min_time":0,"max_time":0,"max_seq":7}"#;
    let f: FileMeta = serde_json::from_str(old).unwrap();
    assert_eq!(f.last_rows, None);
    let back = serde_json::to_string(&f).unwrap();
    assert!(
        !back.contains("last_rows"),
        "not written when absent: {back}"
    );
}

#[test]
fn key_ranges_round_trip_and_an_absent_or_damaged_one_holds_every_key() {
    let old = r#"{"id":7,"path":"p","rows":1,"size":1,"min_time":0,"max_time":0,"max_seq":7}"#;
    let f: FileMeta = serde_json::from_str(old).unwrap();
    assert_eq!(f.keys(), None, "older entries hold every key");
    assert!(!serde_json::to_string(&f).unwrap().contains("key_range"));
    let mut g = f.clone();
    g.key_range = FileMeta::key_range_of(b"a\x00b", b"z");
    let back: FileMeta = serde_json::from_str(&serde_json::to_string(&g).unwrap()).unwrap();
    assert_eq!(back.keys(), Some((b"a\x00b".to_vec(), b"z".to_vec())));
    g.key_range = Some(["zz".into(), "61".into()]);
    assert_eq!(g.keys(), None, "not hex: every key");
}

/// An edit and a checkpoint as format version 1 wrote them before partitions were sized to
/// the data (a partition index, no span; a table's `ttl_ns`) read as spans and settings.
#[test]
fn older_keys_and_ttls_are_read_in_the_legacy_layout() {
    let store = FileStore::memory();
    let ckpt = br#"{"version":2,"next_file_id":1,"next_table_id":1,
        "tables":{"cpu":{"id":0,"schema":{"name":"cpu","columns":[]},"ttl_ns":3600000000000}},
        "regions":{"0/3/1":{"key":{"table":0,"partition":3,"bucket":1},"flushed_seq":5,
        "files":{},"index_path":null}}}"#;
    store
        .put(
            &ckpt_path(2),
            frame(
                &ckpt
                    .iter()
                    .copied()
                    .filter(|b| *b != b'\n')
                    .collect::<Vec<_>>(),
            ),
        )
        .unwrap();
    let edit = br#"[{"AddTombstone":{"region":{"table":0,"partition":3,"bucket":1},
        "tombstone":{"seq":9,"start":0,"end":1,"keys":null}}}]"#;
    let edit: Vec<u8> = edit.iter().copied().filter(|b| *b != b'\n').collect();
    let tomb: Result<Vec<Edit>> = decode("x", &frame(&edit));
    if let Err(e) = tomb {
        panic!("the legacy edit must decode: {e}");
    }
    store.put(&edit_path(3), frame(&edit)).unwrap();
    let l = LegacyLayout {
        partition_ns: 10,
        buckets: 4,
    };
    let m = Manifest::open_with(store, 100, l).unwrap();
    let want = RegionKey {
        table: TableId(0),
        start: 30,
        end: 40,
        bucket: 1,
        buckets: 4,
    };
    let regions: Vec<_> = m.state().regions.values().collect();
    assert_eq!(regions.len(), 1, "the edit found the checkpoint's region");
    assert_eq!(regions[0].key, want);
    assert_eq!(regions[0].flushed_seq, 5);
    assert_eq!(regions[0].tombstones.len(), 1);
    let t = &m.state().tables["cpu"];
    assert_eq!(t.settings.ttl, Some(Setting::Ns(3_600_000_000_000)));
}

fn put_model(name: &str) -> Edit {
    use crate::catalog::models::{ModelRecord, ModelStatus, model_path};
    Edit::PutModel {
        name: name.into(),
        record: ModelRecord {
            definition: "{}".into(),
            status: ModelStatus::Ready,
            file: Some(model_path(name, 1)),
            trained_at_ns: Some(5),
            training_ms: 7,
            summary: "{}".into(),
        },
    }
}

#[test]
fn models_survive_reopening_and_go_with_their_database() {
    let store = FileStore::memory();
    let mut m = Manifest::open(store.clone(), 3).unwrap();
    m.commit(vec![create_db("db"), create_db("other")]).unwrap();
    m.commit(vec![
        put_model("db.m"),
        put_model("db.n"),
        put_model("other.m"),
    ])
    .unwrap();
    m.commit(vec![Edit::DropModel {
        name: "db.n".into(),
    }])
    .unwrap();
    // A checkpoint (every 3 versions) and the edits after it both carry models.
    m.commit(vec![put_model("db.k")]).unwrap();
    let m = Manifest::open(store.clone(), 3).unwrap();
    let names: Vec<&str> = m.state().models.keys().map(String::as_str).collect();
    assert_eq!(names, ["db.k", "db.m", "other.m"]);
    let mut m = m;
    m.commit(vec![Edit::DropDatabase { name: "db".into() }])
        .unwrap();
    let m = Manifest::open(store, 3).unwrap();
    let names: Vec<&str> = m.state().models.keys().map(String::as_str).collect();
    assert_eq!(names, ["other.m"]);
}
