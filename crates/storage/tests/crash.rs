//! Crash-point enumeration: for flush, manifest edits, compaction (of current and of ended
//! partitions), retention and the catalog (databases created and dropped, a table declared,
//! a table's partition width changed), the file store dies after I/O number k
//! for every k, unsynced WAL bytes are dropped, and the engine is reopened on what remains.
//! Every acknowledged row must be there exactly once, every acknowledged catalog change must
//! hold, a database drop must be all or nothing, and no manifest entry may point at a missing
//! file. Tables roll up at 1 minute and 1 hour: at every crash point the rollups a read takes
//! from files equal the aggregates of the raw rows it reads.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use common::*;
use tempora_model::{ColumnKind, FieldType, FieldValue, RowBatchBuilder, TableSchema, Timestamp};
use tempora_storage::catalog::rollups::RollupList;
use tempora_storage::catalog::settings::{Setting, StorageSettings};
use tempora_storage::clock::ManualClock;
use tempora_storage::files::Manifest;
use tempora_storage::files::{FaultPlan, FileStore};
use tempora_storage::rollup::partial::from_run;
use tempora_storage::{Engine, EngineIo, EngineOptions, MemWals, ScanRequest};

/// The tests' options with rollups at 1 minute and 1 hour for every table.
fn opts() -> EngineOptions {
    EngineOptions {
        default_rollups: RollupList::parse("1m,1h").unwrap(),
        ..small_opts()
    }
}

/// The states `cpu`'s rollup reads give equal those computed from its raw rows, for every
/// bucket they answer (count, sum, min, max of `v`); returns how many states it compared.
fn check_rollups(e: &Engine, k: u64) -> usize {
    let Ok(plan) = e.plan_scan("cpu", &ScanRequest::default()) else {
        return 0;
    };
    let mut compared = 0;
    let fields = vec![("v".to_string(), FieldType::F64)];
    for res in [60 * SEC, 3600 * SEC] {
        for i in 0..plan.regions() {
            let read = plan.read_rollup(i, res, (0, 8 * 24 * 3600 * SEC)).unwrap();
            let Some(run) = read.run else { continue };
            let raw = plan.read_run(i).unwrap().expect("rows behind the states");
            let want = from_run(&raw, &fields, res).unwrap();
            let at = |p: &tempora_storage::rollup::partial::PartialRun, r: usize| {
                let key = p.keys[p.ranks()[r] as usize].clone();
                let stats: Vec<String> = (0..4)
                    .map(|s| arrow::util::display::array_value_to_string(p.stat(0, s), r).unwrap())
                    .collect();
                ((key, p.buckets()[r]), stats)
            };
            let want: BTreeMap<_, _> = (0..want.num_rows()).map(|r| at(&want, r)).collect();
            for r in 0..run.num_rows() {
                let (key, got) = at(&run, r);
                assert_eq!(want.get(&key), Some(&got), "k={k}: rollup state of {key:?}");
                compared += 1;
            }
        }
    }
    compared
}

type Rows = BTreeMap<(String, i64), Option<f64>>;

struct World {
    files: FileStore,
    wals: Arc<MemWals>,
    clock: Arc<ManualClock>,
}

impl World {
    fn new() -> Self {
        Self {
            files: FileStore::memory(),
            wals: Arc::new(MemWals::default()),
            clock: ManualClock::new(0),
        }
    }
    fn io(&self, plan: Option<Arc<FaultPlan>>) -> EngineIo {
        let files = match plan {
            Some(p) => self.files.with_faults(p),
            None => self.files.clone(),
        };
        EngineIo {
            files,
            wals: self.wals.clone(),
            clock: self.clock.clone(),
            dense_dir: None,
        }
    }
}

/// What the scenario saw acknowledged.
#[derive(Default)]
struct Acked {
    /// Rows of `cpu`.
    rows: Rows,
    /// Rows of the declared table `keep.decl`.
    declared_rows: Rows,
    /// `create_database("keep")`.
    keep: bool,
    /// `create_table("keep.decl")`.
    declared: bool,
    /// `create_database("gone")` and rows in `gone.a` and `gone.b`.
    gone_filled: bool,
    /// `drop_database("gone")`.
    gone_dropped: bool,
    /// `cpu`'s partition width set to 6 h.
    narrowed: bool,
}

/// The declared table's schema.
fn declared_schema() -> TableSchema {
    TableSchema::with_columns(
        "decl",
        vec![
            ("host".into(), ColumnKind::Tag),
            ("v".into(), ColumnKind::Field(FieldType::F64)),
        ],
    )
}

/// Writes one round into `table`; returns the rows acknowledged.
fn try_write(e: &Engine, table: &str, round: i64, day: i64) -> Rows {
    let mut b = RowBatchBuilder::new(table).unwrap();
    let mut rows = Rows::new();
    for i in 0..20 {
        let (h, t, v) = (
            format!("h{}", i % 4),
            day + (round * 20 + i) * SEC,
            (round * 1000 + i) as f64,
        );
        b.push(&[("host", &h)], &[("v", FieldValue::F64(v))], Timestamp(t))
            .unwrap();
        rows.insert((h, t), Some(v));
    }
    match e.write(b.finish()) {
        Ok(out) if out.rejected.is_empty() => rows,
        _ => Rows::new(),
    }
}

/// The scenario under test; returns what was acknowledged.
fn scenario(e: &Engine, clock: &ManualClock) -> Acked {
    let day = 24 * 3600 * SEC;
    let mut acked = Acked {
        keep: e.create_database("keep").is_ok(),
        ..Acked::default()
    };
    acked.declared = e
        .create_table("keep.decl", declared_schema(), false)
        .is_ok();
    let gone = e.create_database("gone").is_ok();
    for round in 0..4 {
        acked.rows.extend(try_write(e, "cpu", round, 0));
        acked.rows.extend(try_write(e, "cpu", round, day));
        if acked.declared {
            acked
                .declared_rows
                .extend(try_write(e, "keep.decl", round, day));
        }
        if round == 0 {
            let a = try_write(e, "gone.a", round, day);
            let b = try_write(e, "gone.b", round, day);
            acked.gone_filled = gone && !a.is_empty() && !b.is_empty();
        }
        if round >= 2 {
            // After the width change: a partition of the new width beside the old ones.
            acked.rows.extend(try_write(e, "cpu", round, 3 * day));
        }
        let _ = e.flush();
        if round == 1 {
            acked.gone_dropped = matches!(e.drop_database("gone"), Ok(true));
            let six_hours = StorageSettings {
                partition: Some(Setting::Ns(6 * 3600 * SEC)),
                ttl: None,
                rollups: None,
            };
            acked.narrowed = e.set_table_settings("cpu", six_hours).is_ok();
        }
        if round == 2 {
            let _ = e.compact();
        }
    }
    let _ = e.set_ttl("cpu", Some(day));
    clock.set(2 * day + 1);
    let _ = e.enforce_retention();
    // The partitions of day 1 have ended: each compacts into one file.
    let _ = e.compact();
    acked
}

/// The catalog after recovery holds every acknowledged change.
fn check_catalog(e: &Engine, acked: &Acked, k: u64) {
    if acked.keep {
        assert!(
            e.databases().contains(&"keep".to_string()),
            "k={k}: keep lost"
        );
    }
    // Declared in one commit: if the table exists at all, it has its declared columns.
    match e.schema("keep.decl") {
        Some(s) => {
            assert_eq!(
                s.kind("host"),
                Some(ColumnKind::Tag),
                "k={k}: half a declaration"
            );
            assert_eq!(
                s.kind("v"),
                Some(ColumnKind::Field(FieldType::F64)),
                "k={k}"
            );
        }
        None => assert!(!acked.declared, "k={k}: keep.decl lost"),
    }
    let got = read_table(e, "keep.decl");
    for (key, v) in &acked.declared_rows {
        assert_eq!(got.get(key), Some(v), "k={k}: declared row {key:?} lost");
    }
    if acked.narrowed {
        let (own, _, _) = e.table_settings("cpu").expect("cpu exists");
        assert_eq!(
            own.partition,
            Some(Setting::Ns(6 * 3600 * SEC)),
            "k={k}: width setting lost"
        );
        let spans = e.partitions("cpu");
        let widths: BTreeSet<i64> = spans.iter().map(|s| s.end - s.start).collect();
        for pair in spans.windows(2) {
            assert!(pair[0].end <= pair[1].start, "k={k}: overlapping {pair:?}");
        }
        if acked.rows.keys().any(|(_, t)| *t >= 3 * 24 * 3600 * SEC) {
            assert!(widths.contains(&(6 * 3600 * SEC)), "k={k}: {spans:?}");
        }
    }
    if acked.gone_dropped {
        assert!(
            !e.database_exists("gone"),
            "k={k}: dropped database came back"
        );
        assert!(
            read_table(e, "gone.a").is_empty(),
            "k={k}: rows of a dropped table"
        );
    }
}

/// The drop of `gone` took all of it (its tables and its record) or none of it.
fn check_drop(m: &Manifest, acked: &Acked, k: u64) {
    let recorded = m.state().databases.contains("gone");
    let left: Vec<&String> = m
        .state()
        .tables
        .keys()
        .filter(|t| t.starts_with("gone."))
        .collect();
    if acked.gone_dropped {
        assert!(
            !recorded && left.is_empty(),
            "k={k}: dropped database came back: {left:?}"
        );
    } else if acked.gone_filled {
        let all = recorded && left == ["gone.a", "gone.b"];
        let none = !recorded && left.is_empty();
        assert!(
            all || none,
            "k={k}: part of a drop: recorded={recorded} tables={left:?}"
        );
    }
}

fn check_recovered(w: &World, acked: &Acked, k: u64) {
    w.wals.crash();
    let e = Engine::open(opts(), w.io(None))
        .unwrap_or_else(|err| panic!("k={k}: reopen failed: {err}"));
    // Retention may or may not have committed before the crash; apply it now, then compare
    // with the acknowledged rows that retention keeps.
    e.enforce_retention().unwrap();
    let got = read_all(&e);
    let day = 24 * 3600 * SEC;
    let want: Rows = acked
        .rows
        .iter()
        .filter(|((_, t), _)| *t >= day)
        .map(|(k, v)| (k.clone(), *v))
        .collect();
    for (key, v) in &want {
        assert_eq!(
            got.get(key),
            Some(v),
            "k={k}: acknowledged row {key:?} lost or changed"
        );
    }
    check_catalog(&e, acked, k);
    let compared = check_rollups(&e, k);
    assert!(
        k != u64::MAX || compared > 0,
        "the run without faults reads rollups"
    );
    drop(e);
    let m = Manifest::open(w.files.clone(), 64).unwrap();
    check_drop(&m, acked, k);
    let present: BTreeSet<String> = w
        .files
        .list("data")
        .unwrap()
        .into_iter()
        .map(|(p, _)| p)
        .collect();
    for p in m.state().live_paths() {
        assert!(
            present.contains(&p),
            "k={k}: manifest names missing file {p}"
        );
    }
}

#[test]
fn every_crash_point_keeps_acknowledged_rows() {
    // Count the I/O operations of a run without faults.
    let w = World::new();
    let plan = Arc::new(FaultPlan::default());
    let e = Engine::open(opts(), w.io(Some(plan.clone()))).unwrap();
    let acked = scenario(&e, &w.clock);
    drop(e);
    let total = plan.ops();
    assert!(total > 20, "scenario does I/O ({total})");
    check_recovered(&w, &acked, u64::MAX);
    for k in 0..=total {
        let w = World::new();
        let plan = Arc::new(FaultPlan::default());
        plan.crash_after(k);
        let acked = match Engine::open(opts(), w.io(Some(plan))) {
            Ok(e) => scenario(&e, &w.clock),
            Err(_) => Acked::default(),
        };
        check_recovered(&w, &acked, k);
    }
}
