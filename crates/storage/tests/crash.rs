//! Crash-point enumeration: for flush, manifest edits, compaction and retention, the file
//! store dies after I/O number k for every k, unsynced WAL bytes are dropped, and the engine is
//! reopened on what remains. Every acknowledged row must be there exactly once, and no
//! manifest entry may point at a missing file.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use common::*;
use tempora_model::{FieldValue, RowBatchBuilder, Timestamp};
use tempora_storage::clock::ManualClock;
use tempora_storage::files::Manifest;
use tempora_storage::files::{FaultPlan, FileStore};
use tempora_storage::{Engine, EngineIo, MemWals};

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
        }
    }
}

/// Writes one round; returns the rows acknowledged.
fn try_write(e: &Engine, round: i64, day: i64) -> Rows {
    let mut b = RowBatchBuilder::new("cpu").unwrap();
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

/// The scenario under test; returns acknowledged rows.
fn scenario(e: &Engine, clock: &ManualClock) -> Rows {
    let day = 24 * 3600 * SEC;
    let mut acked = Rows::new();
    for round in 0..4 {
        acked.extend(try_write(e, round, 0));
        acked.extend(try_write(e, round, day));
        let _ = e.flush();
        if round == 2 {
            let _ = e.compact();
        }
    }
    let _ = e.set_ttl("cpu", Some(day));
    clock.set(2 * day + 1);
    let _ = e.enforce_retention();
    acked
}

fn check_recovered(w: &World, acked: &Rows, k: u64) {
    w.wals.crash();
    let e = Engine::open(small_opts(), w.io(None))
        .unwrap_or_else(|err| panic!("k={k}: reopen failed: {err}"));
    // Retention may or may not have committed before the crash; apply it now, then compare
    // with the acknowledged rows that retention keeps.
    e.enforce_retention().unwrap();
    let got = read_all(&e);
    let day = 24 * 3600 * SEC;
    let want: Rows = acked
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
    drop(e);
    let m = Manifest::open(w.files.clone(), 64).unwrap();
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
    let e = Engine::open(small_opts(), w.io(Some(plan.clone()))).unwrap();
    let acked = scenario(&e, &w.clock);
    drop(e);
    let total = plan.ops();
    assert!(total > 20, "scenario does I/O ({total})");
    check_recovered(&w, &acked, u64::MAX);
    for k in 0..=total {
        let w = World::new();
        let plan = Arc::new(FaultPlan::default());
        plan.crash_after(k);
        let acked = match Engine::open(small_opts(), w.io(Some(plan))) {
            Ok(e) => scenario(&e, &w.clock),
            Err(_) => Rows::new(),
        };
        check_recovered(&w, &acked, k);
    }
}
