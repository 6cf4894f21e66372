//! Backpressure: with the disk stalled, the gate accepts at most its queue plus what its
//! submitters took (at most `MAX_BATCHES_PER_SUBMIT` batches each), refuses the rest with
//! `QueueFull` (never buffers without bound), and every accepted write completes once the disk
//! moves again.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use tempora_gate::{Gate, GateError, GateOptions};
use tempora_lineproto::{ParseOptions, Precision};
use tempora_storage::{Engine, EngineIo, EngineOptions, ScanRequest, WalFactory};
use tempora_wal::{FaultLogStore, LogStore};

/// In-memory WALs whose appends can be held.
#[derive(Default)]
struct HeldWals {
    inner: tempora_storage::MemWals,
    faults: parking_lot::Mutex<Vec<Arc<FaultLogStore>>>,
}

impl HeldWals {
    fn hold(&self, on: bool) {
        for f in self.faults.lock().iter() {
            f.set_held(on);
        }
    }
}

impl WalFactory for HeldWals {
    fn store(&self, id: usize) -> tempora_storage::Result<Arc<dyn LogStore>> {
        let f = Arc::new(FaultLogStore::new(self.inner.store(id)?));
        self.faults.lock().push(f.clone());
        Ok(f)
    }
    fn existing(&self) -> tempora_storage::Result<Vec<usize>> {
        self.inner.existing()
    }
}

type WriteFuture = Pin<Box<dyn Future<Output = Result<tempora_gate::Ingested, GateError>> + Send>>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_engine_fills_the_queue_and_later_writes_are_refused() {
    let wals = Arc::new(HeldWals::default());
    let (mut io, _) = EngineIo::memory();
    io.wals = wals.clone();
    let engine = Arc::new(Engine::open(EngineOptions::default(), io).unwrap());
    let opts = GateOptions {
        queue_capacity: 2,
        submitters: 1,
        ..GateOptions::default()
    };
    let bound = opts.queue_capacity + opts.submitters * tempora_gate::MAX_BATCHES_PER_SUBMIT;
    let gate = Arc::new(Gate::start(engine.clone(), opts));
    wals.hold(true);

    let mut accepted: Vec<WriteFuture> = Vec::new();
    let mut refused = None;
    let waker = Waker::noop();
    for i in 0..(bound + 5) as i64 {
        let parsed = gate.parse(
            format!("m v={i} {i}\n").as_bytes(),
            &ParseOptions::new(Precision::Ns, 0),
        );
        let g = gate.clone();
        let mut fut: WriteFuture = Box::pin(async move { g.write(parsed).await });
        // One poll queues the batch (or refuses it) before the first await point.
        match fut.as_mut().poll(&mut Context::from_waker(waker)) {
            Poll::Pending => accepted.push(fut),
            Poll::Ready(Err(e @ GateError::QueueFull { .. })) => {
                refused = Some((i, e));
                break;
            }
            Poll::Ready(other) => panic!("write {i} finished while the disk is held: {other:?}"),
        }
    }
    let (at, err) = refused.expect("a write is refused once the queue is full");
    assert!(
        accepted.len() <= bound,
        "{} writes accepted with room for {bound}",
        accepted.len()
    );
    assert!(accepted.len() >= 2, "the queue itself holds 2 requests");
    assert!(
        err.to_string().contains("queue is full (2 requests)"),
        "{err}"
    );
    assert_eq!(
        gate.metrics
            .queue_full
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );

    wals.hold(false);
    let n = accepted.len();
    for fut in accepted {
        let out = fut.await.expect("accepted writes complete");
        assert_eq!(out.rows, 1);
    }
    let rows: usize = tokio::task::spawn_blocking(move || {
        engine
            .scan("m", &ScanRequest::default())
            .unwrap()
            .iter()
            .map(|b| b.num_rows())
            .sum()
    })
    .await
    .unwrap();
    assert_eq!(
        rows, n,
        "exactly the accepted writes ({n}, refused from write {at}) are stored"
    );
}
