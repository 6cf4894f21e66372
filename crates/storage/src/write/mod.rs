//! The write path: rows from [`Engine::write`](crate::Engine::write) to durable, visible
//! memtable rows.
//!
//! ```text
//! Engine::write ─► schema check ─► route by (partition, bucket) ─► region's worker queue
//!   worker: resolve series ─► one WAL record per (request, region) ─► one commit (fsync)
//!          ─► memtable + last-value cache ─► reply
//! ```
//!
//! - `worker`: the region workers, the only threads that mutate regions; group commit.
//! - `memtable`: the series-once columnar buffer of a region, active → frozen.
//! - `wal`: where each worker's log lives and what a record holds.
//! - `replay`: start-up: regions from the manifest, then every log replayed.
//! - `regions` and [`placement`]: regions created on first write and placed on the worker
//!   queue set with the highest load rate (TS-PMEM).
//! - `budget`: memtable bytes, the flush trigger and the write stall.
//!
//! Invariants:
//! - Acknowledged means durable: a request is answered `Ok` only after its WAL records are
//!   committed per the sync policy, and its rows are visible to reads from then on.
//! - If a commit fails, no row of the group reaches a memtable and every request gets the
//!   error.
//! - Only a region's worker appends to it; a region keeps its worker while the engine runs.
//! - Memtable memory is bounded: past `write_stall_bytes` writes wait for flushes, and fail
//!   with `MemoryBudget` after `write_stall_timeout`.
//! - Replay applies a record only to a region whose flushed sequence is below the record's.

pub(crate) mod budget;
pub(crate) mod memtable;
pub mod placement;
pub(crate) mod regions;
pub(crate) mod replay;
pub(crate) mod wal;
pub(crate) mod worker;

pub use wal::{DirWals, MemWals, WalFactory};
