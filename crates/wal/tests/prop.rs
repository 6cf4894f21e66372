//! Random sequences of append / commit / crash / reopen / disk full / truncate against a model:
//! the list of committed records.

mod common;

use std::sync::Arc;

use common::*;
use proptest::prelude::*;
use tempora_wal::{FaultLogStore, LogStore, MemLogStore, SeqNo, SyncPolicy, Wal, WalOptions};

#[derive(Debug, Clone)]
enum Op {
    Append { n: usize, len: usize, gap: u64 },
    Commit,
    Crash { partial: bool, seed: u64 },
    Reopen,
    DiskFull(bool),
    TruncateBefore(usize),
    Sync,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (1..4usize, 0..120usize, 1..3u64).prop_map(|(n, len, gap)| Op::Append { n, len, gap }),
        5 => Just(Op::Commit),
        1 => (any::<bool>(), any::<u64>()).prop_map(|(partial, seed)| Op::Crash { partial, seed }),
        1 => Just(Op::Reopen),
        1 => any::<bool>().prop_map(Op::DiskFull),
        1 => (0..64usize).prop_map(Op::TruncateBefore),
        1 => Just(Op::Sync),
    ]
}

struct Harness {
    mem: Arc<MemLogStore>,
    fault: Arc<FaultLogStore>,
    opts: WalOptions,
    wal: Option<Wal>,
    /// Committed records: what the log must hold.
    committed: Records,
    /// Records committed and known durable (for policies that do not sync each commit).
    durable: usize,
    next_seq: u64,
}

impl Harness {
    fn new(sync: SyncPolicy, segment_size: u64) -> Harness {
        let mem = Arc::new(MemLogStore::new());
        let fault = Arc::new(FaultLogStore::new(mem.clone()));
        let opts = WalOptions {
            segment_size,
            max_record_size: 512,
            sync,
        };
        Harness {
            mem,
            fault,
            opts,
            wal: None,
            committed: vec![],
            durable: 0,
            next_seq: 1,
        }
    }

    fn wal(&mut self) -> &mut Wal {
        if self.wal.is_none() {
            let wal = Wal::open(self.fault.clone(), self.opts.clone()).unwrap();
            let got = replay_all(&wal, 2).unwrap();
            let exact = self.opts.sync == SyncPolicy::Sync;
            assert!(
                self.committed.starts_with(&got),
                "recovered records are not a prefix"
            );
            assert!(got.len() >= self.durable, "lost durable records");
            assert!(
                !exact || got.len() == self.committed.len(),
                "lost committed records"
            );
            self.durable = self.durable.min(got.len());
            self.committed = got;
            self.next_seq = wal.last_seq().map_or(1, |s| s.0 + 1);
            self.wal = Some(wal);
        }
        self.wal.as_mut().unwrap()
    }

    fn apply(&mut self, op: &Op, pending: &mut Records) {
        match *op {
            Op::Append { n, len, gap } => {
                for _ in 0..n {
                    let seq = self.next_seq + gap - 1;
                    let p = payload(seq, len);
                    self.wal().append(SeqNo(seq), &p).unwrap();
                    pending.push((seq, p));
                    self.next_seq = seq + 1;
                }
            }
            Op::Commit => match self.wal().commit() {
                Ok(()) => self.committed.append(pending),
                Err(e) => {
                    assert!(e.is_disk_full(), "{e}");
                    pending.clear();
                    self.next_seq = self.committed.last().map_or(1, |r| r.0 + 1);
                }
            },
            Op::Crash { partial, seed } => {
                if partial {
                    self.mem.crash_partial(seed);
                } else {
                    self.mem.crash();
                }
                self.wal = None;
                pending.clear();
                self.wal();
                // Every byte that survived a power cut is on disk.
                self.durable = self.committed.len();
            }
            Op::Reopen => {
                self.wal = None;
                pending.clear();
            }
            Op::DiskFull(on) => self.fault.set_disk_full(on),
            Op::TruncateBefore(i) => {
                let Some(&(seq, _)) = self.committed.get(i) else {
                    return;
                };
                self.wal().truncate_before(SeqNo(seq)).unwrap();
                let got = replay_all(self.wal(), 2).unwrap();
                assert!(
                    self.committed.ends_with(&got),
                    "truncation left a non-suffix"
                );
                assert!(
                    got.first().is_some_and(|r| r.0 <= seq),
                    "removed records at or above {seq}"
                );
                self.durable = self
                    .durable
                    .saturating_sub(self.committed.len() - got.len());
                self.committed = got;
            }
            Op::Sync => {
                if self.wal().sync().is_ok() {
                    self.durable = self.committed.len();
                }
            }
        }
    }

    fn finish(mut self) {
        self.fault.clear();
        self.wal = None;
        let _ = self.wal();
        let live = replay_all(self.wal.as_ref().unwrap(), 1).unwrap();
        assert_eq!(live, self.committed);
        for name in self.mem.list().unwrap() {
            let data = self.mem.get(&name).unwrap();
            assert_eq!(
                layout(&data).last().unwrap().1,
                data.len(),
                "{name} is clean"
            );
        }
    }
}

fn run(ops: &[Op], sync: SyncPolicy, segment_size: u64) {
    let mut h = Harness::new(sync, segment_size);
    let mut pending = Vec::new();
    for op in ops {
        h.apply(op, &mut pending);
    }
    h.finish();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn model_sync(ops in prop::collection::vec(op(), 1..120), seg in 200..2000u64) {
        run(&ops, SyncPolicy::Sync, seg);
    }

    #[test]
    fn model_no_sync(ops in prop::collection::vec(op(), 1..120), seg in 200..2000u64) {
        run(&ops, SyncPolicy::None, seg);
    }
}
