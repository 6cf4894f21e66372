//! The engine handle: opens the database, wires the parts together, and owns the background
//! threads (workers, flushers, maintenance, prewarm).
//!
//! The engine is the only module that sees every part. Each path gets narrow handles built
//! here: workers a `WorkerDeps`, flushers a `Flusher`, maintenance a `Compactor` and a
//! `Dropper`, readers a `Reader`; all of them share the `Catalog` and, where they
//! append or release memtable rows, the `Budget`.
//!
//! Invariants:
//! - `write` returns `Ok` only after every accepted row is durable (WAL commit per the sync
//!   policy) and visible to readers.
//! - On open, the manifest is recovered, orphan files are removed and every WAL is replayed; a
//!   region with unflushed records moves to the worker whose WAL holds them, so that worker's
//!   next flush covers them before it truncates its log. Writes are accepted at once and the
//!   replayed rows are flushed in the background.
//! - Dropping the engine stops its threads without flushing (what is acknowledged is in the
//!   WAL); `close` flushes first.

mod admin;
mod databases;
mod dense;
mod models;
mod rows;
mod write;

use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam::channel::{Sender, bounded, unbounded};
use parking_lot::Mutex;
use tempora_index::IndexLimits;
use tempora_model::SeqNo;
use tempora_wal::Wal;

use crate::catalog::{Catalog, RegionIo};
use crate::clock::{Clock, SystemClock};
use crate::error::{Result, StorageError};
use crate::files::manifest::Manifest;
use crate::files::sst::SstWriteOptions;
use crate::files::store::FileStore;
use crate::maintenance::compaction::{CompactionOptions, Compactor};
use crate::maintenance::flush::{FlushJob, Flusher, run_flush};
use crate::maintenance::retention::Dropper;
use crate::maintenance::{MaintenanceHandle, Output};
use crate::metrics::Metrics;
use crate::options::EngineOptions;
use crate::read::decoded_cache::DecodedCache;
use crate::read::index_cache::IndexCache;
use crate::read::prewarm::PrewarmHandle;
use crate::read::sst_cache::SstCache;
use crate::read::{Caches, Reader};
use crate::write::budget::Budget;
use crate::write::regions::Placement;
use crate::write::replay::{Replay, load_manifest_state, replay_wals};
use crate::write::wal::{DirWals, MemWals, WalFactory, wal_options};
use crate::write::worker::{Control, Worker, WorkerDeps, WriteJob};

pub use write::WriteOutcome;

/// The I/O an engine runs on: files, WALs and a clock, all injectable.
#[derive(Clone)]
pub struct EngineIo {
    pub files: FileStore,
    pub wals: Arc<dyn WalFactory>,
    pub clock: Arc<dyn Clock>,
    /// Where dense tables keep their block files (local disk); `None`: no dense tables.
    pub dense_dir: Option<PathBuf>,
}

impl EngineIo {
    /// Files and WALs in memory (tests), with the system clock; dense tables (which need a
    /// file system) in a fresh directory under the system's temporary directory.
    pub fn memory() -> (Self, Arc<MemWals>) {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dense = std::env::temp_dir().join(format!("tempora-dense-{}-{n}", std::process::id()));
        let wals = Arc::new(MemWals::default());
        let io = Self {
            files: FileStore::memory(),
            wals: wals.clone(),
            clock: Arc::new(SystemClock),
            dense_dir: Some(dense),
        };
        (io, wals)
    }

    /// Everything under one local directory.
    pub fn local(dir: impl Into<PathBuf>) -> Result<Self> {
        let dir = dir.into();
        Ok(Self {
            files: FileStore::local(&dir)?,
            wals: Arc::new(DirWals(dir.join("wal"))),
            clock: Arc::new(SystemClock),
            dense_dir: Some(dir.join("dense")),
        })
    }
}

/// A storage engine.
pub struct Engine {
    opts: EngineOptions,
    catalog: Arc<Catalog>,
    budget: Arc<Budget>,
    placement: Arc<Placement>,
    reader: Reader,
    metrics: Arc<Metrics>,
    clock: Arc<dyn Clock>,
    flusher: Arc<Flusher>,
    compactor: Arc<Compactor>,
    dropper: Arc<Dropper>,
    threads: Threads,
}

/// The engine's threads and the queues into them.
#[derive(Default)]
struct Threads {
    write_txs: Vec<Sender<WriteJob>>,
    ctl_txs: Vec<Sender<Control>>,
    joins: Mutex<Vec<JoinHandle<()>>>,
    maintenance: Mutex<Option<MaintenanceHandle>>,
    prewarm: Mutex<Option<PrewarmHandle>>,
}

impl Engine {
    /// Opens (recovering) an engine.
    pub fn open(opts: EngineOptions, io: EngineIo) -> Result<Engine> {
        opts.validate()
            .map_err(|m| StorageError::Injected(format!("bad option: {m}")))?;
        let manifest = Manifest::open_with(
            io.files.clone(),
            opts.manifest_checkpoint_every,
            opts.legacy_layout(),
        )?;
        let orphans = manifest.remove_orphans()?;
        if orphans > 0 {
            tracing::info!(
                orphans,
                "removed files left by an interrupted flush or compaction"
            );
        }
        let mut engine = Self::assemble(opts, &io, manifest);
        let replay = engine.replay();
        load_manifest_state(&replay)?;
        let (wals, replayed) = replay_wals(&replay, io.wals.as_ref(), &engine.flusher)?;
        // Replay fed the last-value cache rows that deletes hide: such regions fill it again
        // from their data on the first read.
        for t in engine.catalog.tables() {
            for r in t.all_regions() {
                if !r.tombstones.read().is_empty() {
                    r.refill_lvc_later();
                }
            }
        }
        engine.start(wals);
        if replayed {
            // Replayed rows are flushed in the background while writes are accepted.
            for c in &engine.threads.ctl_txs {
                let _ = c.send(Control::Flush(None));
            }
        }
        Ok(engine)
    }

    /// Builds the parts and the handles each path gets; starts nothing.
    fn assemble(opts: EngineOptions, io: &EngineIo, manifest: Manifest) -> Engine {
        let store = io.files.clone();
        let clock = io.clock.clone();
        let metrics = Arc::new(Metrics::default());
        let catalog = Arc::new(
            Catalog::new(
                manifest,
                opts.max_tables,
                opts.max_databases,
                opts.defaults(),
            )
            .with_dense(io.dense_dir.clone().map(|root| {
                let log = crate::dense::LogConfig {
                    wal: wal_options(&opts),
                    pending_max: opts.dense_pending_slots,
                    checkpoint_bytes: opts.dense_checkpoint_bytes,
                };
                crate::dense::DenseShared::new(root, opts.max_open_dense_files, log)
            })),
        );
        let budget = Arc::new(Budget::new(
            opts.workers,
            opts.write_stall_bytes,
            opts.write_stall_timeout,
        ));
        let region_io = RegionIo {
            store: store.clone(),
            index_cache: IndexCache::new(opts.index_cache_bytes),
            limits: IndexLimits {
                max_series: opts.max_series_per_region,
            },
        };
        let placement = Arc::new(Placement::new(opts.workers, region_io));
        let caches = Arc::new(Caches {
            files: SstCache::new(opts.sst_cache_bytes),
            decoded: DecodedCache::new(opts.decoded_cache_bytes),
        });
        let reader = Reader {
            store: store.clone(),
            caches,
        };
        let out = Output {
            catalog: catalog.clone(),
            store,
            sst: SstWriteOptions {
                row_group_rows: opts.row_group_rows,
                zstd_level: opts.zstd_level,
            },
            metrics: metrics.clone(),
            rollup_min_rows: opts.rollup_min_rows_per_state,
        };
        let flusher = Arc::new(Flusher {
            out: out.clone(),
            budget: budget.clone(),
            metrics: metrics.clone(),
        });
        let compaction = CompactionOptions {
            window_ns: opts.compaction_window_ns,
            memory_bytes: opts.compaction_memory_bytes,
            target_file_bytes: opts.compaction_target_file_bytes,
            trigger_files: opts.compaction_trigger_files,
        };
        let compactor = Arc::new(Compactor::new(
            out,
            compaction,
            clock.clone(),
            metrics.clone(),
        ));
        let dropper = Arc::new(Dropper {
            catalog: catalog.clone(),
            budget: budget.clone(),
            placement: placement.clone(),
            metrics: metrics.clone(),
            clock: clock.clone(),
        });
        Engine {
            opts,
            catalog,
            budget,
            placement,
            reader,
            metrics,
            clock,
            flusher,
            compactor,
            dropper,
            threads: Threads::default(),
        }
    }

    /// What start-up replay works on.
    fn replay(&self) -> Replay<'_> {
        Replay {
            catalog: &self.catalog,
            placement: &self.placement,
            budget: &self.budget,
            metrics: &self.metrics,
            clock: self.clock.as_ref(),
            legacy: self.opts.legacy_layout(),
            workers: self.opts.workers,
            threads: self.opts.replay_threads,
            wal: wal_options(&self.opts),
        }
    }

    /// Starts one worker and one flusher per WAL, the maintenance thread and prewarming.
    fn start(&mut self, mut wals: Vec<Wal>) {
        let n = self.opts.workers;
        let deps = WorkerDeps {
            catalog: self.catalog.clone(),
            budget: self.budget.clone(),
            metrics: self.metrics.clone(),
            clock: self.clock.clone(),
            max_requests_per_commit: self.opts.max_requests_per_commit,
            flush_bytes: self.opts.flush_threshold_bytes / n,
        };
        let mut joins = Vec::new();
        for id in 0..n {
            let (wtx, wrx) = bounded(self.opts.worker_queue_capacity);
            let (ctx, crx) = unbounded();
            // One flusher per worker, so flushes of different workers run in parallel.
            let (flush_tx, flush_rx) = unbounded::<FlushJob>();
            let mut w = Worker::new(id, deps.clone(), wals.remove(0), wrx, crx, flush_tx);
            // Replayed records count as applied: the first flush covers them.
            w.last_applied = w.wal.last_seq().unwrap_or(SeqNo(0));
            joins.push(spawn(&format!("tempora-worker-{id}"), move || w.run()));
            let (flusher, ctl) = (self.flusher.clone(), ctx.clone());
            joins.push(spawn(&format!("tempora-flusher-{id}"), move || {
                for job in flush_rx {
                    let result = run_flush(&flusher, &job);
                    let _ = ctl.send(Control::FlushDone {
                        flush_seq: job.flush_seq,
                        result,
                        waiters: job.waiters,
                    });
                }
            }));
            self.threads.write_txs.push(wtx);
            self.threads.ctl_txs.push(ctx);
        }
        *self.threads.joins.lock() = joins;
        let maintenance = crate::maintenance::start(
            self.dropper.clone(),
            self.compactor.clone(),
            self.opts.maintenance_interval,
        );
        *self.threads.maintenance.lock() = Some(maintenance);
        let limit =
            crate::read::prewarm::limit(self.opts.decoded_cache_bytes, self.opts.prewarm_percent);
        *self.threads.prewarm.lock() =
            crate::read::prewarm::start(self.reader.clone(), &self.catalog.tables(), limit);
    }

    /// Flushes and stops all threads.
    pub fn close(self) -> Result<()> {
        self.shutdown()
    }

    /// Flushes every memtable and stops the threads, for a process that ends; once the final
    /// flush covers every record, each worker deletes its whole WAL (nothing is left to
    /// replay). Writes after this fail. Dropping the engine afterwards is harmless.
    pub fn shutdown(&self) -> Result<()> {
        let r = self.flush();
        self.stop();
        r
    }

    /// Waits until the prewarm thread started at open has finished (at once when there is
    /// none, or it has already been waited for).
    pub fn wait_prewarm(&self) {
        if let Some(p) = self.threads.prewarm.lock().take() {
            p.join();
        }
    }

    fn stop(&self) {
        if let Some(p) = self.threads.prewarm.lock().take() {
            p.stop();
        }
        if let Some(m) = self.threads.maintenance.lock().take() {
            m.stop();
        }
        for c in &self.threads.ctl_txs {
            let (tx, rx) = bounded(1);
            if c.send(Control::Shutdown(tx)).is_ok() {
                let _ = rx.recv();
            }
        }
        // Workers hold the flusher's senders; once they exit the flusher ends too.
        for t in self.threads.joins.lock().drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Engine {
    /// Stops threads without flushing: what is acknowledged is in the WAL already.
    fn drop(&mut self) {
        self.stop();
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> JoinHandle<()> {
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(f)
        .expect("spawn engine thread")
}
