//! Prewarming: after the engine opens, one background thread reads the newest data into the
//! caches (data files and their decoded column chunks), so the first queries after a restart
//! find warm what queries before it had warmed. The decoded-column cache is the engine's
//! buffer pool; this is its autoprewarm.
//!
//! Invariants:
//! - Newest partition first, each region's files newest first, a row group at a time. It
//!   stops when the decoded cache holds `prewarm_percent` of its budget (below 100, so
//!   prewarming never evicts what it read), when every file is read, or when the engine
//!   stops (checked between row groups).
//! - It decodes what a query decodes (key, time, seq and every field, with each row group's
//!   key runs; not the tag columns) through the same cache calls, so queries find
//!   exactly these entries. It changes no data and no result, only how soon one comes.
//! - The thread runs at the lowest CPU priority (nice 19): queries and writes that arrive
//!   meanwhile take the CPU first.
//! - A file that cannot be read is logged and ends the prewarm; queries then read as they
//!   would without it.

use std::cmp::Reverse;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Instant;

use tempora_model::FieldType;

use crate::catalog::{FileHandle, Table};
use crate::error::Result;
use crate::read::Reader;

pub(crate) struct PrewarmHandle {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

impl PrewarmHandle {
    /// Asks the thread to stop after its current row group and waits for it.
    pub fn stop(self) {
        self.stop.store(true, Ordering::SeqCst);
        self.join();
    }

    /// Waits until the thread has finished.
    pub fn join(self) {
        let _ = self.thread.join();
    }
}

/// The decoded-cache bytes at which prewarming stops: `percent` of `budget`.
pub(crate) fn limit(budget: usize, percent: u8) -> usize {
    assert!(percent <= 100, "prewarm_percent is a percentage");
    (budget as u128 * percent as u128 / 100) as usize
}

/// Starts the prewarm thread over the files of `tables`, or none when `limit` (decoded-cache
/// bytes, [`limit`]) is 0 or there is no data file.
pub(crate) fn start(reader: Reader, tables: &[Arc<Table>], limit: usize) -> Option<PrewarmHandle> {
    if limit == 0 {
        return None;
    }
    let files = newest_first(tables);
    if files.is_empty() {
        return None;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = stop.clone();
    let thread = std::thread::Builder::new()
        .name("tempora-prewarm".into())
        .spawn(move || {
            lowest_priority();
            let t0 = Instant::now();
            let done = || stopping.load(Ordering::SeqCst);
            match warm(&reader, files, limit, &done) {
                Ok(row_groups) => tracing::info!(
                    row_groups,
                    bytes = reader.caches.decoded.weight(),
                    ms = t0.elapsed().as_millis() as u64,
                    "prewarmed the decoded-column cache"
                ),
                Err(e) => tracing::warn!(error = %e, "prewarm stopped early"),
            }
        })
        .expect("spawn prewarm thread");
    Some(PrewarmHandle { stop, thread })
}

type Planned = (Arc<FileHandle>, Vec<(String, FieldType)>);

/// Every data file with its table's fields, newest partition first, then newest data first.
fn newest_first(tables: &[Arc<Table>]) -> Vec<Planned> {
    let mut files: Vec<(i64, i64, Planned)> = Vec::new();
    for table in tables {
        let fields = table.fields();
        for region in table.all_regions() {
            for f in region.files.read().iter() {
                let order = (region.key.start, f.meta.max_time);
                files.push((order.0, order.1, (f.clone(), fields.clone())));
            }
        }
    }
    files.sort_by_key(|(p, t, _)| Reverse((*p, *t)));
    files.into_iter().map(|(_, _, f)| f).collect()
}

/// Reads `files` through the caches until the decoded cache holds `limit` bytes or `stop()`;
/// returns how many row groups it decoded.
fn warm(
    reader: &Reader,
    files: Vec<Planned>,
    limit: usize,
    stop: &dyn Fn() -> bool,
) -> Result<usize> {
    let caches = &reader.caches;
    let enough = || stop() || caches.decoded.weight() >= limit;
    let mut row_groups = 0;
    for (f, fields) in files {
        if enough() {
            break;
        }
        let file = caches.files.get(&reader.store, &f.meta.path)?;
        row_groups += crate::files::sst::warm_sst_cached(
            &f.meta.path,
            &file,
            &fields,
            &caches.decoded,
            &enough,
        )?;
    }
    Ok(row_groups)
}

/// Lowers the calling thread's CPU priority to nice 19 (Linux: the nice value is per thread).
fn lowest_priority() {
    // SAFETY: setpriority has no memory effects; who = 0 is the calling thread on Linux.
    let r = unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, 19) };
    if r != 0 {
        tracing::debug!("could not lower the prewarm thread's priority");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_is_a_share_of_the_budget() {
        for (name, budget, percent, want) in [
            ("off", 1 << 30, 0, 0),
            ("no cache", 0, 75, 0),
            ("three quarters", 1000, 75, 750),
            ("all", 1000, 100, 1000),
            ("no overflow near the top", usize::MAX, 100, usize::MAX),
        ] {
            assert_eq!(limit(budget, percent), want, "{name}");
        }
    }
}
