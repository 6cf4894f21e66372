//! The engine's administrative surface: tables and their schemas, retention, flush and
//! compaction on demand, and the figures the server and tests read.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crossbeam::channel::bounded;

use super::Engine;
use crate::error::{Result, StorageError};
use crate::metrics::Metrics;
use crate::write::worker::Control;

impl Engine {
    /// Flushes every memtable and waits until the files are in the manifest; checkpoints
    /// every dense table (its buffered slots written and synced, its log truncated).
    pub fn flush(&self) -> Result<()> {
        for t in self.catalog.tables() {
            if let Some(d) = t.dense() {
                d.checkpoint()?;
            }
        }
        let mut waits = Vec::new();
        for c in &self.threads.ctl_txs {
            let (tx, rx) = bounded(1);
            c.send(Control::Flush(Some(tx)))
                .map_err(|_| StorageError::ShutDown)?;
            waits.push(rx);
        }
        for rx in waits {
            rx.recv().map_err(|_| StorageError::ShutDown)??;
        }
        Ok(())
    }

    /// Names of all tables.
    pub fn tables(&self) -> Vec<String> {
        self.catalog
            .tables()
            .iter()
            .map(|t| t.name.clone())
            .collect()
    }

    /// The schema of a table.
    pub fn schema(&self, table: &str) -> Option<Arc<tempora_model::TableSchema>> {
        self.catalog.find(table).map(|t| t.schema())
    }

    /// Sets (or clears) a table's retention; expired partitions are dropped by maintenance.
    pub fn set_ttl(&self, table: &str, ttl_ns: Option<i64>) -> Result<()> {
        use crate::catalog::settings::{Setting, StorageSettings};
        let change = StorageSettings {
            ttl: Some(ttl_ns.map_or(Setting::Unbounded, Setting::Ns)),
            partition: None,
            rollups: None,
        };
        self.catalog.set_table_settings(table, change).map(drop)
    }

    /// Drops a table and all its data; returns whether it existed.
    pub fn drop_table(&self, name: &str) -> Result<bool> {
        self.dropper.drop_table(name)
    }

    /// Runs compaction now on every region (maintenance also runs it in the background).
    pub fn compact(&self) -> Result<usize> {
        crate::maintenance::compaction::compact_all(&self.compactor)
    }

    /// Drops expired partitions now (maintenance also does it in the background).
    pub fn enforce_retention(&self) -> Result<usize> {
        self.dropper.enforce_retention()
    }

    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Memtable bytes held now.
    pub fn memtable_bytes(&self) -> usize {
        self.budget.total()
    }

    /// Series cache: (index loads from files, evictions, bytes of loaded indexes tracked).
    pub fn index_cache_stats(&self) -> (u64, u64, usize) {
        let c = &self.placement.io().index_cache;
        (c.loads.get(), c.evictions.get(), c.weight())
    }

    /// The decoded-column cache now: (bytes held, hits, misses).
    pub fn decoded_cache_stats(&self) -> (usize, u64, u64) {
        let c = &self.reader.caches.decoded;
        (c.weight(), c.hits.get(), c.misses.get())
    }

    /// A one-line-per-region description of the engine's state, for diagnosing tests.
    #[doc(hidden)]
    pub fn debug_state(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        for t in self.catalog.tables() {
            for r in t.all_regions() {
                let files: Vec<String> = r
                    .files
                    .read()
                    .iter()
                    .map(|f| {
                        let m = &f.meta;
                        let (id, rows, seq) = (m.id, m.rows, m.max_seq);
                        format!("{id}:{rows}r[{},{}]s{seq}", m.min_time, m.max_time)
                    })
                    .collect();
                let frozen: Vec<String> = r
                    .frozen
                    .read()
                    .iter()
                    .map(|p| format!("{}r s{}", p.batch.num_rows(), p.max_seq.0))
                    .collect();
                let _ = writeln!(
                    out,
                    "{} {:?} w{} flushed{} active{} frozen{:?} files{:?}",
                    t.name,
                    r.key,
                    r.worker(),
                    r.flushed_seq.load(Ordering::SeqCst),
                    r.active.lock().len(),
                    frozen,
                    files
                );
            }
        }
        out
    }

    /// Tombstones not yet compacted away, data files, and rows held in them, over all
    /// regions.
    #[doc(hidden)]
    pub fn storage_counts(&self) -> (usize, usize, u64) {
        let (mut tombs, mut files, mut rows) = (0, 0, 0);
        for t in self.catalog.tables() {
            for r in t.all_regions() {
                tombs += r.tombstones.read().len();
                let f = r.files.read();
                files += f.len();
                rows += f.iter().map(|f| f.meta.rows).sum::<u64>();
            }
        }
        (tombs, files, rows)
    }
}
