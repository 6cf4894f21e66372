//! Engine counters, read by the server's `/metrics`.

use std::sync::atomic::{AtomicU64, Ordering};

/// A monotonically increasing counter.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    pub fn inc(&self) {
        self.add(1);
    }
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Counters of one engine.
#[derive(Debug, Default)]
pub struct Metrics {
    pub rows_written: Counter,
    pub rows_rejected: Counter,
    pub wal_commits: Counter,
    pub flushes: Counter,
    pub compactions: Counter,
    /// Key slices compactions read one after another (`maintenance::slices`).
    pub compaction_slices: Counter,
    pub files_expired: Counter,
    /// Microseconds compactions took (wall time of the maintenance thread's jobs, one core).
    pub compaction_micros: Counter,
    /// Microseconds flushes and compactions spent computing and encoding rollups.
    pub rollup_micros: Counter,
    pub write_stalls: Counter,
    pub rows_replayed: Counter,
}

impl Metrics {
    /// (name, help, value) of every counter, for Prometheus text output.
    pub fn counters(&self) -> Vec<(&'static str, &'static str, u64)> {
        vec![
            (
                "tempora_rows_written_total",
                "Rows written to memtables.",
                self.rows_written.get(),
            ),
            (
                "tempora_rows_rejected_total",
                "Rows rejected by schema or limits.",
                self.rows_rejected.get(),
            ),
            (
                "tempora_wal_commits_total",
                "WAL group commits.",
                self.wal_commits.get(),
            ),
            (
                "tempora_flushes_total",
                "Memtable flushes.",
                self.flushes.get(),
            ),
            (
                "tempora_compactions_total",
                "Compactions.",
                self.compactions.get(),
            ),
            (
                "tempora_compaction_slices_total",
                "Key slices compactions read one after another to stay within their memory.",
                self.compaction_slices.get(),
            ),
            (
                "tempora_compaction_microseconds_total",
                "Time compactions took (one maintenance thread).",
                self.compaction_micros.get(),
            ),
            (
                "tempora_rollup_microseconds_total",
                "Time flushes and compactions spent computing and encoding rollups.",
                self.rollup_micros.get(),
            ),
            (
                "tempora_files_expired_total",
                "Data files dropped by retention.",
                self.files_expired.get(),
            ),
            (
                "tempora_write_stalls_total",
                "Writes that waited for memtable memory.",
                self.write_stalls.get(),
            ),
            (
                "tempora_rows_replayed_total",
                "Rows replayed from the WAL at start.",
                self.rows_replayed.get(),
            ),
        ]
    }
}
