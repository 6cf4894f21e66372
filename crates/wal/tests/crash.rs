//! Crashes, glitches and a full disk, injected at every I/O operation of a workload.
//! The model is the list of records whose `commit` returned `Ok`.

mod common;

use std::sync::Arc;

use common::*;
use tempora_wal::{
    FaultLogStore, LogStore, MemLogStore, SeqNo, SyncPolicy, Wal, WalError, WalOptions,
};

fn opts(sync: SyncPolicy) -> WalOptions {
    WalOptions {
        segment_size: 300,
        max_record_size: 1024,
        sync,
    }
}

/// Batches of 1..=4 records with increasing seqs (random gaps).
fn batches(seed: u64, n: usize) -> Vec<Records> {
    let mut rng = Rng(seed);
    let mut seq = 1 + rng.below(5);
    (0..n)
        .map(|_| {
            (0..1 + rng.below(4))
                .map(|_| {
                    seq += 1 + rng.below(3);
                    (seq, payload(seq, 60))
                })
                .collect()
        })
        .collect()
}

fn append_batch(wal: &mut Wal, batch: &Records) {
    for (seq, p) in batch {
        wal.append(SeqNo(*seq), p).unwrap();
    }
}

/// Every segment parses cleanly per the documented layout: no garbage between frames.
fn assert_clean(store: &dyn LogStore, case: &str) {
    let mut names: Vec<String> = store.list().unwrap();
    names.sort();
    for n in names {
        let data = store.read(&n).unwrap();
        let units = layout(&data);
        assert_eq!(
            units.last().unwrap().1,
            data.len(),
            "{case}: {n} ends in a frame"
        );
        assert!(units.len() > 1, "{case}: {n} holds records");
    }
}

/// Operations the fault-free workload performs, to know how far to sweep.
fn count_ops(work: &[Records]) -> u64 {
    let mem = Arc::new(MemLogStore::new());
    let fault = Arc::new(FaultLogStore::new(mem));
    let mut wal = Wal::open(fault.clone(), opts(SyncPolicy::Sync)).unwrap();
    for b in work {
        append_batch(&mut wal, b);
        wal.commit().unwrap();
    }
    fault.ops()
}

#[test]
fn glitch_at_every_operation_is_rolled_back() {
    let work = batches(1, 40);
    let total = count_ops(&work);
    assert!(total > 100, "{total} ops");
    for k in 1..=total {
        let mem = Arc::new(MemLogStore::new());
        let fault = Arc::new(FaultLogStore::new(mem.clone()));
        fault.fail_once_at(k);
        let mut wal = Wal::open(fault.clone(), opts(SyncPolicy::Sync))
            .or_else(|_| Wal::open(fault.clone(), opts(SyncPolicy::Sync)))
            .unwrap();
        let mut model = Vec::new();
        for b in &work {
            append_batch(&mut wal, b);
            if wal.commit().is_err() {
                assert_eq!(
                    wal.last_seq().map(|s| s.0),
                    model.last().map(|r: &(u64, _)| r.0)
                );
                // The failed batch's seqs can be reused.
                append_batch(&mut wal, b);
                wal.commit()
                    .unwrap_or_else(|e| panic!("op {k}: retry failed: {e}"));
            }
            model.extend(b.iter().cloned());
        }
        fault.clear();
        assert_eq!(replay_all(&wal, 2).unwrap(), model, "op {k}: live replay");
        drop(wal);
        assert_clean(&*mem, &format!("op {k}"));
        assert_eq!(
            open_records(mem.clone(), &opts(SyncPolicy::Sync)).unwrap(),
            model,
            "op {k}"
        );
    }
}

#[test]
fn outage_with_failed_rollback_is_repaired_at_the_next_commit() {
    let work = batches(2, 30);
    let total = count_ops(&work);
    for k in (0..total).step_by(3) {
        let mem = Arc::new(MemLogStore::new());
        let fault = Arc::new(FaultLogStore::new(mem.clone()));
        let mut wal = Wal::open(fault.clone(), opts(SyncPolicy::Sync)).unwrap();
        fault.fail_after(fault.ops() + k);
        let mut model = Vec::new();
        for b in &work {
            append_batch(&mut wal, b);
            if wal.commit().is_ok() {
                model.extend(b.iter().cloned());
                continue;
            }
            // Everything fails, rollback included; then the outage ends.
            append_batch(&mut wal, b);
            assert!(wal.commit().is_err());
            fault.clear();
            append_batch(&mut wal, b);
            wal.commit().unwrap();
            model.extend(b.iter().cloned());
        }
        drop(wal);
        assert_clean(&*mem, &format!("op {k}"));
        assert_eq!(
            open_records(mem.clone(), &opts(SyncPolicy::Sync)).unwrap(),
            model,
            "op {k}"
        );
    }
}

/// Runs the workload until op `k` fails, then cuts power. Returns the committed records and
/// the batch that was in flight.
fn run_until_crash(fault: &Arc<FaultLogStore>, work: &[Records], k: u64) -> (Records, Records) {
    fault.fail_after(k);
    let Ok(mut wal) = Wal::open(fault.clone(), opts(SyncPolicy::Sync)) else {
        return (vec![], vec![]);
    };
    let mut model = Vec::new();
    for b in work {
        append_batch(&mut wal, b);
        if wal.commit().is_err() {
            return (model, b.clone());
        }
        model.extend(b.iter().cloned());
    }
    (model, vec![])
}

#[test]
fn crash_at_every_operation_keeps_exactly_the_committed_records() {
    let work = batches(3, 30);
    let total = count_ops(&work);
    for k in 0..=total {
        for partial in [false, true] {
            let case = format!("crash after op {k}, partial {partial}");
            let mem = Arc::new(MemLogStore::new());
            let fault = Arc::new(FaultLogStore::new(mem.clone()));
            let (model, in_flight) = run_until_crash(&fault, &work, k);
            if partial {
                mem.crash_partial(k);
            } else {
                mem.crash();
            }
            let o = opts(SyncPolicy::Sync);
            let got = open_records(mem.clone(), &o).unwrap_or_else(|e| panic!("{case}: {e}"));
            // A commit that failed may or may not have landed, but only as a prefix of its batch.
            assert!(got.starts_with(&model), "{case}: lost committed records");
            let extra = &got[model.len()..];
            assert!(in_flight.starts_with(extra), "{case}: unexpected records");
            if !partial {
                assert!(extra.is_empty(), "{case}: unsynced records survived");
            }
            let mut wal = Wal::open(mem.clone(), o.clone()).unwrap();
            let next = make_records(10_000, 3, 1, 50);
            write(&mut wal, &next, 3);
            drop(wal);
            let all: Records = got.iter().chain(&next).cloned().collect();
            assert_eq!(
                open_records(mem.clone(), &o).unwrap(),
                all,
                "{case}: appends after"
            );
        }
    }
}

#[test]
fn random_crashes_per_sync_policy() {
    let policies = [
        ("sync", SyncPolicy::Sync),
        (
            "interval",
            SyncPolicy::Interval(std::time::Duration::from_millis(1)),
        ),
        ("none", SyncPolicy::None),
    ];
    for (policy_name, sync) in policies {
        for seed in 0..40 {
            let case = format!("{policy_name} seed {seed}");
            let mut rng = Rng(seed);
            let mem = Arc::new(MemLogStore::new());
            let mut model: Records = Vec::new();
            let mut synced = 0;
            for (round, b) in batches(seed, 60).iter().enumerate() {
                if round > 0 && rng.below(10) == 0 {
                    // Power cut, then recover. Between append and commit counts too.
                    if rng.below(2) == 0 {
                        mem.crash();
                    } else {
                        mem.crash_partial(rng.next());
                    }
                    let got = open_records(mem.clone(), &opts(sync)).unwrap();
                    assert!(model.starts_with(&got), "{case}: not a prefix");
                    assert!(got.len() >= synced, "{case}: lost synced records");
                    if sync == SyncPolicy::Sync {
                        assert_eq!(got.len(), model.len(), "{case}: lost committed records");
                    }
                    model = got;
                    synced = model.len();
                }
                let mut wal = Wal::open(mem.clone(), opts(sync)).unwrap();
                let b: Records = b
                    .iter()
                    .filter(|r| Some(r.0) > wal.last_seq().map(|s| s.0))
                    .cloned()
                    .collect();
                append_batch(&mut wal, &b);
                if rng.below(4) != 0 {
                    wal.commit().unwrap();
                    model.extend(b);
                    if rng.below(3) == 0 {
                        wal.sync().unwrap();
                        synced = model.len();
                    }
                }
            }
        }
    }
}

#[test]
fn disk_full_then_space_returns() {
    let work = batches(4, 25);
    for (backend_name, backend) in Backend::both() {
        for full_at in 0..work.len() {
            let case = format!("{backend_name}: disk full at commit {full_at}");
            for n in backend.store().list().unwrap() {
                backend.remove(&n);
            }
            let inner = backend.store();
            let fault = Arc::new(FaultLogStore::new(inner.clone()));
            let mut wal = Wal::open(fault.clone(), opts(SyncPolicy::Sync)).unwrap();
            let mut model = Vec::new();
            for (i, b) in work.iter().enumerate() {
                if i == full_at {
                    fault.set_disk_full(true);
                    append_batch(&mut wal, b);
                    let e = wal.commit().unwrap_err();
                    check_disk_full(&e, &case);
                    assert_eq!(replay_all(&wal, 2).unwrap(), model, "{case}: live");
                    assert_clean(&*inner, &case);
                    // A second log opened on the same files sees exactly the committed records.
                    assert_eq!(
                        open_records(inner.clone(), &opts(SyncPolicy::Sync)).unwrap(),
                        model,
                        "{case}"
                    );
                    append_batch(&mut wal, b);
                    check_disk_full(&wal.commit().unwrap_err(), &case);
                    fault.set_disk_full(false);
                }
                append_batch(&mut wal, b);
                wal.commit().unwrap_or_else(|e| panic!("{case}: {e}"));
                model.extend(b.iter().cloned());
            }
            assert!(wal.stats().failed_commits == 2, "{case}");
            drop(wal);
            assert_clean(&*inner, &case);
            assert_eq!(
                open_records(inner, &opts(SyncPolicy::Sync)).unwrap(),
                model,
                "{case}"
            );
        }
    }
}

fn check_disk_full(e: &WalError, case: &str) {
    assert!(e.is_disk_full(), "{case}: {e}");
    let WalError::DiskFull { source, .. } = e else {
        unreachable!()
    };
    assert_eq!(source.kind(), std::io::ErrorKind::StorageFull, "{case}");
    assert_eq!(source.raw_os_error(), Some(28), "{case}");
}
