//! Dense tables end to end in the engine: a model test against a `BTreeMap` with restarts,
//! crashes and torn slots between steps; disk use of a sparse history; the table of bad
//! rows; damaged block files.

mod common;

use std::collections::BTreeMap;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use arrow::array::{Array, AsArray};
use arrow::datatypes::{Float64Type, Int64Type, TimestampNanosecondType};
use common::*;
use tempora_model::{
    ColumnKind, FieldType, FieldValue, RowBatchBuilder, TableSchema, Timestamp, encode_series_key,
};
use tempora_storage::catalog::settings::StorageSettings;
use tempora_storage::dense::DenseSpec;
use tempora_storage::dense::layout::{DenseField, data_start, slot_len};
use tempora_storage::{DeleteRequest, Engine, Matcher, ScanRequest};

const T: &str = "m.meter";

fn fields() -> Vec<DenseField> {
    vec![
        DenseField {
            name: "kwh".into(),
            ty: FieldType::F64,
            max_len: 0,
        },
        DenseField {
            name: "n".into(),
            ty: FieldType::I64,
            max_len: 0,
        },
        DenseField {
            name: "note".into(),
            ty: FieldType::Str,
            max_len: 4,
        },
    ]
}

/// Creates `m.meter` (tag device; kwh, n, note VARCHAR(4)) every `SEC` in `block` seconds.
fn create(e: &Engine, block_s: i64) {
    e.create_database("m").unwrap();
    let mut cols = vec![("device".to_string(), ColumnKind::Tag)];
    cols.extend(
        fields()
            .into_iter()
            .map(|f| (f.name, ColumnKind::Field(f.ty))),
    );
    let schema = TableSchema::with_columns(T, cols);
    let spec = DenseSpec::new(SEC, Some(block_s * SEC), fields()).unwrap();
    assert!(
        e.create_dense_table(T, schema, false, StorageSettings::default(), spec)
            .unwrap()
    );
}

type Row = (Option<f64>, Option<i64>);
type Model = BTreeMap<(String, i64), Row>;

fn put(e: &Engine, rows: &[(&str, i64, Row)]) {
    let mut b = RowBatchBuilder::new(T).unwrap();
    for (d, t, (kwh, n)) in rows {
        let mut f = Vec::new();
        if let Some(k) = kwh {
            f.push(("kwh", FieldValue::F64(*k)));
        }
        if let Some(n) = n {
            f.push(("n", FieldValue::I64(*n)));
        }
        if f.is_empty() {
            f.push(("note", FieldValue::Str("x".into())));
        }
        b.push(&[("device", d)], &f, Timestamp(*t)).unwrap();
    }
    let out = e.write(b.finish()).unwrap();
    assert!(out.rejected.is_empty(), "{:?}", out.rejected);
}

fn key(d: &str) -> Vec<u8> {
    let mut k = Vec::new();
    encode_series_key(&[("device", d)], &mut k).unwrap();
    k
}

fn get(e: &Engine, d: &str, t: i64) -> Option<Row> {
    let r = e.dense_get(T, &key(d), t).unwrap()?;
    let f = |v: &Option<FieldValue>| match v {
        Some(FieldValue::F64(x)) => Some(*x),
        _ => None,
    };
    let i = |v: &Option<FieldValue>| match v {
        Some(FieldValue::I64(x)) => Some(*x),
        _ => None,
    };
    Some((f(&r[0]), i(&r[1])))
}

/// Rows of `[from, to)` (of device `d`, or all) through the read API.
fn scan(e: &Engine, d: Option<&str>, from: i64, to: i64) -> Model {
    let req = ScanRequest {
        time: Some((from, to)),
        matcher: d.map_or(Matcher::All, |d| Matcher::eq("device", d)),
        ..Default::default()
    };
    let mut out = Model::new();
    for b in e.scan(T, &req).unwrap() {
        let dev = b.column_by_name("device").unwrap();
        let dev = arrow::compute::cast(dev, &arrow::datatypes::DataType::Utf8).unwrap();
        let dev = dev.as_string::<i32>();
        let time = b
            .column_by_name("time")
            .unwrap()
            .as_primitive::<TimestampNanosecondType>();
        let kwh = b
            .column_by_name("kwh")
            .unwrap()
            .as_primitive::<Float64Type>();
        let n = b.column_by_name("n").unwrap().as_primitive::<Int64Type>();
        for r in 0..b.num_rows() {
            let row = (
                kwh.is_valid(r).then(|| kwh.value(r)),
                n.is_valid(r).then(|| n.value(r)),
            );
            out.insert((dev.value(r).to_string(), time.value(r)), row);
        }
    }
    out
}

fn expected(m: &Model, d: Option<&str>, from: i64, to: i64) -> Model {
    m.iter()
        .filter(|((dev, t), _)| d.is_none_or(|d| d == dev) && *t >= from && *t < to)
        .map(|(k, v)| (k.clone(), *v))
        .collect()
}

/// A small deterministic generator (xorshift).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The block file holding device `d` at `t` (blocks of `block_s` seconds) and the slot's
/// byte offset in it; `None` while the point waits in the write-behind buffer.
fn slot_place(dir: &Path, d: &str, t: i64, block_s: i64) -> Option<(PathBuf, u64)> {
    let k = key(d);
    let block = t.div_euclid(block_s * SEC) * block_s * SEC;
    for table in std::fs::read_dir(dir.join("dense")).unwrap() {
        for s in std::fs::read_dir(table.unwrap().path()).unwrap() {
            let s = s.unwrap().path();
            if std::fs::read(s.join("key")).ok().as_deref() == Some(&k[..]) {
                let name = format!("{:016x}.tdns", (block as u64) ^ (1 << 63));
                let i = ((t - block) / SEC) as u64;
                let f = fields();
                let path = s.join(name);
                return path
                    .exists()
                    .then(|| (path, data_start(&f) as u64 + i * slot_len(&f) as u64));
            }
        }
    }
    None
}

/// A small write-behind buffer, so buffered slots are written between steps and crashes land
/// between writes to the files; checkpoints (the log truncated) only at `flush` and `close`,
/// so the test knows which slots a crash may tear (those written since).
fn open_small(dir: &Path) -> Engine {
    let opts = tempora_storage::EngineOptions {
        dense_pending_slots: 8,
        dense_checkpoint_bytes: 1 << 30,
        ..small_opts()
    };
    Engine::open(opts, tempora_storage::EngineIo::local(dir).unwrap()).unwrap()
}

#[test]
fn random_operations_match_a_btreemap_through_restarts_crashes_and_torn_slots() {
    const BLOCK_S: i64 = 64;
    for seed in [7u64, 1234, 99991] {
        let dir = tempfile::tempdir().unwrap();
        let mut e = open_small(dir.path());
        create(&e, BLOCK_S);
        let mut model = Model::new();
        // Slots whose newest change is a put since the last flush (still in the WAL).
        let mut in_wal: BTreeMap<(String, i64), bool> = BTreeMap::new();
        let mut rng = Rng(seed);
        let devs = ["a", "b", "c"];
        let mut torn_slots = 0;
        for step in 0..400 {
            let d = devs[rng.below(3) as usize];
            let t = rng.below(400) as i64 * SEC;
            match rng.below(100) {
                0..=39 => {
                    let n = 1 + rng.below(5) as i64;
                    let mut rows = Vec::new();
                    for k in 0..n {
                        let kwh = (rng.below(4) > 0).then(|| step as f64 + k as f64 / 8.0);
                        let cnt = (rng.below(4) > 0).then_some(step * 10 + k);
                        rows.push((d, t + k * SEC, (kwh, cnt)));
                    }
                    put(&e, &rows);
                    for (d, t, r) in rows {
                        model.insert((d.to_string(), t), r);
                        in_wal.insert((d.to_string(), t), true);
                    }
                }
                40..=49 => {
                    let req = DeleteRequest {
                        time: Some((t, t + 1)),
                        matcher: Matcher::eq("device", d),
                        series_filter: None,
                    };
                    let n = e.delete(T, &req).unwrap();
                    let had = model.remove(&(d.to_string(), t)).is_some();
                    assert_eq!(
                        n,
                        u64::from(had),
                        "seed {seed} step {step}: point delete count"
                    );
                    in_wal.insert((d.to_string(), t), false);
                }
                50..=54 => {
                    let len = rng.below(150) as i64 * SEC;
                    let all = rng.below(2) == 0;
                    let req = DeleteRequest {
                        time: Some((t, t + len)),
                        matcher: if all {
                            Matcher::All
                        } else {
                            Matcher::eq("device", d)
                        },
                        series_filter: None,
                    };
                    let n = e.delete(T, &req).unwrap();
                    let gone: Vec<_> = model
                        .keys()
                        .filter(|(dev, x)| (all || dev == d) && *x >= t && *x < t + len)
                        .cloned()
                        .collect();
                    assert_eq!(
                        n,
                        gone.len() as u64,
                        "seed {seed} step {step}: range delete"
                    );
                    for k in gone {
                        model.remove(&k);
                        in_wal.insert(k, false);
                    }
                }
                55..=74 => {
                    let got = get(&e, d, t);
                    let want = model.get(&(d.to_string(), t)).copied();
                    assert_eq!(got, want, "seed {seed} step {step}: point read {d}@{t}");
                }
                75..=89 => {
                    let len = rng.below(200) as i64 * SEC;
                    let dev = (rng.below(2) == 0).then_some(d);
                    assert_eq!(
                        scan(&e, dev, t, t + len),
                        expected(&model, dev, t, t + len),
                        "seed {seed} step {step}: range read"
                    );
                }
                90..=93 => {
                    e.flush().unwrap();
                    in_wal.clear();
                }
                94..=96 => {
                    e.close().unwrap();
                    e = open_small(dir.path());
                    in_wal.clear();
                }
                _ => {
                    // A crash: the engine stops without flushing; a slot written since the
                    // last flush may be torn on disk. Replay makes it whole again.
                    drop(e);
                    let torn: Vec<_> = in_wal
                        .iter()
                        .filter(|(_, p)| **p)
                        .map(|(k, _)| k.clone())
                        .collect();
                    if !torn.is_empty() {
                        let (d, t) = &torn[rng.below(torn.len() as u64) as usize];
                        if let Some((path, off)) = slot_place(dir.path(), d, *t, BLOCK_S) {
                            let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
                            f.write_all_at(&[0xAB; 9], off).unwrap();
                            torn_slots += 1;
                        }
                    }
                    // Opening replays the log and syncs the slots: none is in flight after.
                    e = open_small(dir.path());
                    in_wal.clear();
                }
            }
        }
        assert_eq!(
            scan(&e, None, 0, 1000 * SEC),
            model,
            "seed {seed}: final state"
        );
        assert!(
            torn_slots > 0,
            "seed {seed}: some crash tore a slot on disk"
        );
    }
}

#[test]
fn twenty_years_of_one_hour_each_occupy_only_the_written_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let e = open_local(dir.path());
    create(&e, 86_400);
    const DAY: i64 = 86_400 * SEC;
    for year in 0..20i64 {
        let noon = (year * 365 + 100) * DAY + 12 * 3600 * SEC;
        for chunk in 0..4 {
            let rows: Vec<_> = (0..900)
                .map(|i| {
                    (
                        "a",
                        noon + (chunk * 900 + i) * SEC,
                        (Some(i as f64), Some(i)),
                    )
                })
                .collect();
            put(&e, &rows);
        }
    }
    e.close().unwrap();
    let (mut used, mut apparent, mut files) = (0u64, 0u64, 0);
    for p in walk(&dir.path().join("dense")) {
        if p.ends_with(".tdns") {
            let m = std::fs::metadata(&p).unwrap();
            used += m.blocks() * 512;
            apparent += m.len();
            files += 1;
        }
    }
    let hour = 3600 * slot_len(&fields()) as u64;
    println!(
        "20 years, one hour a year at 1 s: {files} block files, du {used} bytes, apparent {apparent} bytes"
    );
    assert_eq!(files, 20, "one block file per written day");
    assert!(
        used < 20 * (hour + 64 * 1024),
        "du {used} for 20 hours of {hour} bytes"
    );
    assert!(
        apparent > 10 * used,
        "the files are sparse: apparent {apparent}, used {used}"
    );
    let e = open_local(dir.path());
    let y7 = (7 * 365 + 100) * DAY + 12 * 3600 * SEC;
    assert_eq!(get(&e, "a", y7 + 17 * SEC), Some((Some(17.0), Some(17))));
    assert_eq!(scan(&e, Some("a"), y7 - DAY, y7 + DAY).len(), 3600);
}

/// A bad-row case: name, tags, fields, time, and the words its refusal holds (None: kept).
type Case<'a> = (
    &'a str,
    &'a [(&'a str, &'a str)],
    Vec<(&'a str, FieldValue)>,
    i64,
    Option<&'a str>,
);

#[test]
fn bad_rows_are_refused_one_by_one_naming_the_problem() {
    let dir = tempfile::tempdir().unwrap();
    let e = open_local(dir.path());
    create(&e, 3600);
    let mut b = RowBatchBuilder::new(T).unwrap();
    let cases: Vec<Case> = vec![
        (
            "fine",
            &[("device", "a")],
            vec![("kwh", FieldValue::F64(1.0))],
            10 * SEC,
            None,
        ),
        (
            "off the grid",
            &[("device", "a")],
            vec![("kwh", FieldValue::F64(1.0))],
            10 * SEC + 500_000_000,
            Some("not on the table's grid: every 1000000000 ns"),
        ),
        (
            "unknown field",
            &[("device", "a")],
            vec![("volts", FieldValue::F64(1.0))],
            11 * SEC,
            Some("\"volts\" is not a field of dense table"),
        ),
        (
            "wrong type",
            &[("device", "a")],
            vec![("kwh", FieldValue::Bool(true))],
            12 * SEC,
            Some("field kwh: a Bool value does not fit a F64 field"),
        ),
        (
            "string too long",
            &[("device", "a")],
            vec![("note", FieldValue::Str("hello".into()))],
            13 * SEC,
            Some("longer than its declared 4"),
        ),
        (
            "integer into a float",
            &[("device", "a")],
            vec![("kwh", FieldValue::I64(3))],
            14 * SEC,
            None,
        ),
    ];
    for (_, tags, f, t, _) in &cases {
        b.push(tags, f, Timestamp(*t)).unwrap();
    }
    let out = e.write(b.finish()).unwrap();
    assert_eq!(out.written, 2);
    let reasons: BTreeMap<usize, String> = out
        .rejected
        .into_iter()
        .map(|r| (r.row, r.reason))
        .collect();
    for (i, (name, _, _, _, want)) in cases.iter().enumerate() {
        match want {
            None => assert!(!reasons.contains_key(&i), "{name}: {:?}", reasons.get(&i)),
            Some(w) => assert!(reasons[&i].contains(w), "{name}: {}", reasons[&i]),
        }
    }
    assert_eq!(get(&e, "a", 10 * SEC), Some((Some(1.0), None)));
    assert_eq!(get(&e, "a", 14 * SEC), Some((Some(3.0), None)));
    // A tag named like a field refuses every row of its batch.
    let mut b = RowBatchBuilder::new(T).unwrap();
    b.push(
        &[("kwh", "x")],
        &[("n", FieldValue::I64(1))],
        Timestamp(20 * SEC),
    )
    .unwrap();
    let out = e.write(b.finish()).unwrap();
    assert!(
        out.rejected[0].reason.contains("already a field"),
        "{:?}",
        out.rejected
    );
    // The point API names an off-grid time too.
    let err = e.dense_get(T, &key("a"), SEC / 2).unwrap_err().to_string();
    assert!(err.contains("grid"), "{err}");
}

#[test]
fn a_damaged_block_file_is_named_and_other_blocks_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let e = open_local(dir.path());
    create(&e, 60);
    put(
        &e,
        &[
            ("a", 5 * SEC, (Some(1.0), None)),
            ("a", 65 * SEC, (Some(2.0), None)),
        ],
    );
    e.close().unwrap();
    let (path, _) = slot_place(dir.path(), "a", 5 * SEC, 60).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    let cases: [(&str, u64, &[u8], &str); 2] = [
        ("wrong version", 8, &[9, 0], "version"),
        ("wrong magic", 0, b"NOTDENSE", "magic"),
    ];
    for (name, at, bytes, want) in cases {
        f.write_all_at(bytes, at).unwrap();
        let e = open_local(dir.path());
        let err = e.dense_get(T, &key("a"), 5 * SEC).unwrap_err().to_string();
        assert!(err.contains(want) && err.contains(".tdns"), "{name}: {err}");
        assert_eq!(get(&e, "a", 65 * SEC), Some((Some(2.0), None)), "{name}");
        let req = ScanRequest::default();
        assert!(
            e.scan(T, &req).is_err(),
            "{name}: a scan over the damaged block fails"
        );
    }
}

#[test]
fn retention_drops_whole_expired_blocks_and_drop_table_removes_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let e = open_local(dir.path());
    create(&e, 3600);
    const HOUR: i64 = 3600 * SEC;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    let base = now.div_euclid(HOUR) * HOUR;
    // Points 50, 30 and 0 hours old: three blocks.
    for hours in [50, 30, 0] {
        put(
            &e,
            &[("a", base - hours * HOUR, (Some(hours as f64), None))],
        );
    }
    e.flush().unwrap();
    let blocks = || {
        walk(&dir.path().join("dense"))
            .filter(|p| p.ends_with(".tdns"))
            .count()
    };
    assert_eq!(blocks(), 3);
    let ttl = StorageSettings::from_options(&[("ttl".into(), "2d".into())]).unwrap();
    e.set_table_settings(T, ttl).unwrap();
    assert_eq!(
        e.enforce_retention().unwrap(),
        1,
        "the 50-hour-old block went"
    );
    assert_eq!(blocks(), 2);
    assert_eq!(get(&e, "a", base - 50 * HOUR), None);
    assert_eq!(get(&e, "a", base - 30 * HOUR), Some((Some(30.0), None)));
    e.drop_table(T).unwrap();
    assert_eq!(blocks(), 0, "a dropped table's block files are removed");
    // Files of a table dropped by a process that crashed before removing them go at open.
    let orphan = dir.path().join("dense/99");
    std::fs::create_dir_all(orphan.join("00000000000000ab")).unwrap();
    std::fs::create_dir_all(dir.path().join("dense/99.wal")).unwrap();
    drop(e);
    let _e = open_local(dir.path());
    assert!(!orphan.exists() && !dir.path().join("dense/99.wal").exists());
}

#[test]
fn cold_blocks_become_compressed_files_that_read_the_same_and_refuse_changes() {
    let dir = tempfile::tempdir().unwrap();
    let e = open_local(dir.path());
    e.create_database("m").unwrap();
    let mut cols = vec![("device".to_string(), ColumnKind::Tag)];
    cols.extend(
        fields()
            .into_iter()
            .map(|f| (f.name, ColumnKind::Field(f.ty))),
    );
    const HOUR: i64 = 3600 * SEC;
    let spec = DenseSpec::new(SEC, Some(HOUR), fields())
        .unwrap()
        .with_cold_after(Some(24 * HOUR))
        .unwrap();
    e.create_dense_table(
        T,
        TableSchema::with_columns(T, cols),
        false,
        StorageSettings::default(),
        spec,
    )
    .unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    let base = now.div_euclid(HOUR) * HOUR;
    // A whole hour 50 hours ago, one point 30 hours ago and one an hour ago.
    let old: Vec<_> = (0..3600)
        .map(|i| ("a", base - 50 * HOUR + i * SEC, (Some(i as f64), Some(i))))
        .collect();
    put(&e, &old);
    put(&e, &[("a", base - 30 * HOUR, (Some(30.0), None))]);
    put(&e, &[("a", base - HOUR, (Some(1.0), None))]);
    e.flush().unwrap();
    let files = |ext: &str| {
        walk(&dir.path().join("dense"))
            .filter(|p| p.ends_with(ext))
            .collect::<Vec<_>>()
    };
    let hot_hour = files(".tdns")
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().blocks() * 512)
        .max()
        .unwrap();
    e.enforce_retention().unwrap();
    assert_eq!(
        (files(".parquet").len(), files(".tdns").len()),
        (2, 1),
        "two blocks went cold"
    );
    let cold_hour = files(".parquet")
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .max()
        .unwrap();
    println!(
        "an hour of 1 s points: hot block {hot_hour} bytes on disk, cold file {cold_hour} bytes"
    );
    assert!(
        cold_hour * 2 < hot_hour,
        "cold {cold_hour} vs hot {hot_hour}"
    );
    // Reads are the same.
    let check = |e: &Engine| {
        assert_eq!(
            get(e, "a", base - 50 * HOUR + 17 * SEC),
            Some((Some(17.0), Some(17)))
        );
        assert_eq!(get(e, "a", base - 30 * HOUR), Some((Some(30.0), None)));
        assert_eq!(get(e, "a", base - 30 * HOUR + SEC), None);
        assert_eq!(scan(e, Some("a"), base - 60 * HOUR, base).len(), 3602);
        let part = scan(
            e,
            None,
            base - 50 * HOUR + 10 * SEC,
            base - 50 * HOUR + 20 * SEC,
        );
        assert_eq!(part.len(), 10);
    };
    check(&e);
    // Cold points are read-only: writes, updates and partial deletes are refused by name.
    let mut b = RowBatchBuilder::new(T).unwrap();
    b.push(
        &[("device", "a")],
        &[("kwh", FieldValue::F64(9.0))],
        Timestamp(base - 40 * HOUR),
    )
    .unwrap();
    let out = e.write(b.finish()).unwrap();
    assert!(
        out.rejected[0].reason.contains("read-only"),
        "{:?}",
        out.rejected
    );
    let err = e
        .dense_update(
            T,
            &key("a"),
            base - 30 * HOUR,
            &[("kwh", FieldValue::F64(2.0))],
        )
        .unwrap_err()
        .to_string();
    assert!(err.contains("read-only"), "{err}");
    let err = e
        .dense_delete(T, &key("a"), base - 30 * HOUR, base - 30 * HOUR + SEC)
        .unwrap_err()
        .to_string();
    assert!(err.contains("whole cold blocks"), "{err}");
    // Hot points still change in place.
    assert!(
        e.dense_update(T, &key("a"), base - HOUR, &[("kwh", FieldValue::F64(5.0))])
            .unwrap()
    );
    e.close().unwrap();
    let e = open_local(dir.path());
    check(&e);
    assert_eq!(get(&e, "a", base - HOUR), Some((Some(5.0), None)));
    let mut b = RowBatchBuilder::new(T).unwrap();
    b.push(
        &[("device", "a")],
        &[("kwh", FieldValue::F64(9.0))],
        Timestamp(base - 40 * HOUR),
    )
    .unwrap();
    assert_eq!(
        e.write(b.finish()).unwrap().rejected.len(),
        1,
        "still read-only after a restart"
    );
    // A delete of whole cold blocks removes them.
    let n = e
        .dense_delete(T, &key("a"), base - 51 * HOUR, base - 29 * HOUR)
        .unwrap();
    assert_eq!(n, 3601);
    assert_eq!(files(".parquet").len(), 0);
    assert_eq!(scan(&e, Some("a"), base - 60 * HOUR, base).len(), 1);
}

#[test]
fn a_delete_finds_points_still_in_the_write_behind_buffer() {
    let dir = tempfile::tempdir().unwrap();
    let e = open_local(dir.path());
    create(&e, 3600);
    // A new series, a few points: buffered, no directory of its own yet.
    put(
        &e,
        &[
            ("z", 10 * SEC, (Some(1.0), None)),
            ("z", 11 * SEC, (Some(2.0), None)),
        ],
    );
    let req = DeleteRequest {
        time: None,
        matcher: Matcher::eq("device", "z"),
        series_filter: None,
    };
    assert_eq!(e.delete(T, &req).unwrap(), 2);
    e.flush().unwrap();
    assert_eq!(
        scan(&e, None, 0, 100 * SEC),
        Model::new(),
        "nothing comes back"
    );
}
