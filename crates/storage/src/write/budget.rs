//! The memtable budget: bytes held in memtables, per worker and in all.
//!
//! Invariants:
//! - A worker adds the bytes it appends (after its WAL commit); a flush, a retention drop or a
//!   table drop subtracts the bytes it releases, from the worker that owns the region.
//! - A write waits while the total is at or above `write_stall_bytes` and fails with
//!   [`StorageError::MemoryBudget`] when that lasts `write_stall_timeout`; every release wakes
//!   the waiters.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::error::{Result, StorageError};

/// Memtable bytes by worker, with the stall limit writes wait under.
pub(crate) struct Budget {
    per_worker: Vec<AtomicUsize>,
    total: AtomicUsize,
    freed: (Mutex<()>, Condvar),
    stall_bytes: usize,
    stall_timeout: Duration,
}

impl Budget {
    pub fn new(workers: usize, stall_bytes: usize, stall_timeout: Duration) -> Self {
        Self {
            per_worker: (0..workers).map(|_| AtomicUsize::new(0)).collect(),
            total: AtomicUsize::new(0),
            freed: (Mutex::new(()), Condvar::new()),
            stall_bytes,
            stall_timeout,
        }
    }

    /// Bytes held by worker `w`'s regions.
    pub fn worker(&self, w: usize) -> usize {
        self.per_worker[w].load(Ordering::SeqCst)
    }

    /// Bytes held by all memtables.
    pub fn total(&self) -> usize {
        self.total.load(Ordering::SeqCst)
    }

    pub fn add(&self, w: usize, n: usize) {
        self.per_worker[w].fetch_add(n, Ordering::SeqCst);
        self.total.fetch_add(n, Ordering::SeqCst);
    }

    /// Releases `n` bytes of worker `w` and wakes writes waiting for memory.
    pub fn sub(&self, w: usize, n: usize) {
        self.per_worker[w].fetch_sub(n, Ordering::SeqCst);
        self.total.fetch_sub(n, Ordering::SeqCst);
        let _g = self.freed.0.lock();
        self.freed.1.notify_all();
    }

    /// Waits while memtables hold more than the stall limit; `on_stall` runs once when the
    /// write has to wait (to count the stall and ask for flushes).
    pub fn wait_for_room(&self, on_stall: impl FnOnce()) -> Result<()> {
        let limit = self.stall_bytes;
        if self.total() < limit {
            return Ok(());
        }
        on_stall();
        let deadline = Instant::now() + self.stall_timeout;
        let mut g = self.freed.0.lock();
        while self.total() >= limit {
            if self.freed.1.wait_until(&mut g, deadline).timed_out() && self.total() >= limit {
                return Err(StorageError::MemoryBudget {
                    used: self.total(),
                    limit,
                });
            }
        }
        Ok(())
    }
}
