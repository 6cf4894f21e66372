//! Maintenance: everything that changes which files hold the data, off the write path.
//!
//! - `flush`: frozen memtable parts of one worker's regions → one data file and one index
//!   file per region, then one manifest edit; the worker then truncates its WAL.
//! - `compaction`: each time window of a region ends up in files that do not overlap by key
//!   (one, unless the region is compacted in key slices to stay within its memory, `slices`),
//!   without duplicates and without rows that tombstones hide.
//! - `retention`: expired partitions, dropped tables and dropped databases leave the manifest,
//!   then memory.
//! - `delete` and `tombstone`: a `DELETE` commits tombstones that hide rows at once;
//!   flush and compaction rewrite the rows away later.
//! - This module's thread runs retention and compaction every `maintenance_interval`.
//!
//! Invariants:
//! - Every job puts its files (atomically, durably) before the manifest edit that names them;
//!   that edit is the commit point. A job that fails before its commit deletes what it put and changes
//!   nothing in memory; a crash before it leaves orphans that the next start removes.
//! - A file a job replaces is deleted only after the commit and after the last reader holding
//!   it lets go (`crate::catalog::FileHandle`).
//! - One compaction runs at a time; a flush and a compaction never touch the same file (a
//!   flush only adds files).
//! - Each job gets narrow handles (`Output`, `flush::Flusher`, `compaction::Compactor`,
//!   `retention::Dropper`), never the engine.

pub(crate) mod compaction;
pub(crate) mod delete;
pub(crate) mod flush;
pub(crate) mod output;
pub(crate) mod retention;
pub(crate) mod slices;
pub(crate) mod tombstone;

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam::channel::{Sender, bounded};

pub(crate) use output::Output;

use compaction::Compactor;
use retention::Dropper;

pub(crate) struct MaintenanceHandle {
    stop: Sender<()>,
    thread: JoinHandle<()>,
}

impl MaintenanceHandle {
    pub fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.thread.join();
    }
}

/// Starts the thread that runs retention, then compaction, every `every`.
pub(crate) fn start(
    dropper: Arc<Dropper>,
    compactor: Arc<Compactor>,
    every: Duration,
) -> MaintenanceHandle {
    let (stop, rx) = bounded::<()>(1);
    let thread = std::thread::Builder::new()
        .name("tempora-maintenance".into())
        .spawn(move || {
            while rx.recv_timeout(every).is_err_and(|e| e.is_timeout()) {
                if let Err(e) = dropper.enforce_retention() {
                    tracing::warn!(error = %e, "retention failed; will retry");
                }
                if let Err(e) = compaction::compact_all(&compactor) {
                    tracing::warn!(error = %e, "compaction failed; will retry");
                }
            }
        })
        .expect("spawn maintenance thread");
    MaintenanceHandle { stop, thread }
}
