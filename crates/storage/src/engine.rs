//! The engine: opens the database, routes writes to region workers, and owns the background
//! threads (workers, flusher, maintenance).
//!
//! Invariants:
//! - `write` returns `Ok` only after every accepted row is durable (WAL commit per the sync
//!   policy) and visible to readers.
//! - On open, the manifest is recovered, orphan files are removed and every WAL is replayed; a
//!   region with unflushed records moves to the worker whose WAL holds them, so that worker's
//!   next flush covers them before it truncates its log. Writes are accepted at once and the
//!   replayed rows are flushed in the background.
//! - Memtable memory is bounded: past `write_stall_bytes` writes wait for flushes, and fail
//!   with `MemoryBudget` after `write_stall_timeout`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Instant;

use crossbeam::channel::{Sender, bounded, unbounded};
use parking_lot::{Condvar, Mutex, RwLock};
use tempora_index::{IndexLimits, SeriesIndex};
use tempora_model::{RowBatch, RowRejection, SeqNo, TableId, series_hash};
use tempora_wal::{FsLogStore, LogStore, Wal, WalOptions};

use crate::clock::{Clock, SystemClock};
use crate::error::{Result, StorageError};
use crate::flush::{FlushJob, run_flush};
use crate::manifest::{Edit, Manifest, RegionKey};
use crate::metrics::Metrics;
use crate::options::EngineOptions;
use crate::placement::FrequencyBalancer;
use crate::region::Region;
use crate::store::FileStore;
use crate::table::Table;
use crate::worker::{Control, Worker, WriteJob};

/// Where each worker's WAL lives.
pub trait WalFactory: Send + Sync {
    /// The log store of worker `id`.
    fn store(&self, id: usize) -> Result<Arc<dyn LogStore>>;
    /// Ids of the logs that exist (possibly more than the current worker count).
    fn existing(&self) -> Result<Vec<usize>>;
}

/// WALs in `dir/{id}` on local disk.
pub struct DirWals(pub PathBuf);

impl WalFactory for DirWals {
    fn store(&self, id: usize) -> Result<Arc<dyn LogStore>> {
        let dir = self.0.join(id.to_string());
        let s = FsLogStore::new(&dir)
            .map_err(|e| crate::error::io_err("open wal", dir.display().to_string(), e))?;
        Ok(Arc::new(s))
    }
    fn existing(&self) -> Result<Vec<usize>> {
        let Ok(rd) = std::fs::read_dir(&self.0) else {
            return Ok(Vec::new());
        };
        Ok(rd
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect())
    }
}

/// WALs in memory, for tests: `crash` drops every byte of every log that was not synced.
#[derive(Default)]
pub struct MemWals {
    logs: Mutex<std::collections::BTreeMap<usize, Arc<tempora_wal::MemLogStore>>>,
}

impl MemWals {
    pub fn crash(&self) {
        for l in self.logs.lock().values() {
            l.crash();
        }
    }
}

impl WalFactory for MemWals {
    fn store(&self, id: usize) -> Result<Arc<dyn LogStore>> {
        Ok(self
            .logs
            .lock()
            .entry(id)
            .or_insert_with(|| Arc::new(tempora_wal::MemLogStore::new()))
            .clone())
    }
    fn existing(&self) -> Result<Vec<usize>> {
        Ok(self.logs.lock().keys().copied().collect())
    }
}

/// The I/O an engine runs on: files, WALs and a clock, all injectable.
pub struct EngineIo {
    pub files: FileStore,
    pub wals: Arc<dyn WalFactory>,
    pub clock: Arc<dyn Clock>,
}

impl EngineIo {
    /// Files and WALs in memory (tests), with the system clock.
    pub fn memory() -> (Self, Arc<MemWals>) {
        let wals = Arc::new(MemWals::default());
        let io = Self {
            files: FileStore::memory(),
            wals: wals.clone(),
            clock: Arc::new(SystemClock),
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
        })
    }
}

/// State shared by the engine handle, workers and background threads.
pub(crate) struct Shared {
    pub opts: EngineOptions,
    pub store: FileStore,
    pub clock: Arc<dyn Clock>,
    pub manifest: Mutex<Manifest>,
    pub tables: RwLock<HashMap<String, Arc<Table>>>,
    seq: AtomicU64,
    worker_bytes: Vec<AtomicUsize>,
    total_bytes: AtomicUsize,
    memory_freed: (Mutex<()>, Condvar),
    pub balancer: Mutex<FrequencyBalancer>,
    pub metrics: Metrics,
    /// Held while a compaction runs, so two never touch the same files.
    pub compaction_lock: Mutex<()>,
    pub index_cache: Arc<crate::index_cache::IndexCache>,
    /// Data files recently read by queries (compaction reads around it).
    pub sst_cache: crate::sst_cache::SstCache,
    /// Decoded column chunks recently read by queries.
    pub decoded_cache: crate::decoded_cache::DecodedCache,
}

/// Interval assumed for a source never measured (1 s).
const DEFAULT_INTERVAL_NS: f64 = 1e9;

impl Shared {
    pub fn next_seq(&self) -> SeqNo {
        SeqNo(self.seq.fetch_add(1, Ordering::SeqCst) + 1)
    }
    pub fn seq_now(&self) -> u64 {
        self.seq.load(Ordering::SeqCst)
    }
    pub fn observe_seq(&self, s: SeqNo) {
        self.seq.fetch_max(s.0, Ordering::SeqCst);
    }
    pub fn worker_bytes(&self, w: usize) -> usize {
        self.worker_bytes[w].load(Ordering::SeqCst)
    }
    pub fn total_bytes(&self) -> usize {
        self.total_bytes.load(Ordering::SeqCst)
    }
    pub fn add_bytes(&self, w: usize, n: usize) {
        self.worker_bytes[w].fetch_add(n, Ordering::SeqCst);
        self.total_bytes.fetch_add(n, Ordering::SeqCst);
    }
    pub fn sub_bytes(&self, w: usize, n: usize) {
        self.worker_bytes[w].fetch_sub(n, Ordering::SeqCst);
        self.total_bytes.fetch_sub(n, Ordering::SeqCst);
        let _g = self.memory_freed.0.lock();
        self.memory_freed.1.notify_all();
    }

    pub fn all_tables(&self) -> Vec<Arc<Table>> {
        let mut v: Vec<Arc<Table>> = self.tables.read().values().cloned().collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    pub fn table_by_id(&self, id: TableId) -> Option<Arc<Table>> {
        self.tables.read().values().find(|t| t.id == id).cloned()
    }

    /// The table, created (durably) on first use.
    pub fn table_or_create(&self, name: &str) -> Result<Arc<Table>> {
        if let Some(t) = self.tables.read().get(name) {
            return Ok(t.clone());
        }
        let mut tables = self.tables.write();
        if let Some(t) = tables.get(name) {
            return Ok(t.clone());
        }
        if tables.len() >= self.opts.max_tables {
            return Err(StorageError::TooManyTables(self.opts.max_tables));
        }
        let mut manifest = self.manifest.lock();
        let id = TableId(manifest.state().next_table_id);
        manifest.commit(vec![Edit::CreateTable {
            name: name.to_string(),
            id,
        }])?;
        let t = Arc::new(Table::new(
            name,
            id,
            tempora_model::TableSchema::new(name),
            None,
        ));
        tables.insert(name.to_string(), t.clone());
        Ok(t)
    }

    /// The region of (partition, bucket), created on first use and placed on the worker the
    /// frequency balancer picks, using the write interval measured for the same bucket in the
    /// previous partition.
    pub fn region_or_create(&self, table: &Table, partition: i64, bucket: u32) -> Arc<Region> {
        if let Some(r) = table.region(partition, bucket) {
            return r;
        }
        let mut regions = table.regions.write();
        if let Some(r) = regions.get(&(partition, bucket)) {
            return r.clone();
        }
        let interval = regions
            .get(&(partition - 1, bucket))
            .and_then(|prev| prev.meter.lock().interval_ns())
            .unwrap_or(DEFAULT_INTERVAL_NS);
        let worker = self.balancer.lock().assign(interval);
        let key = RegionKey {
            table: table.id,
            partition,
            bucket,
        };
        let index = SeriesIndex::new(self.index_limits());
        let r = Arc::new(Region::new(
            key,
            worker,
            interval,
            Some(index),
            None,
            self.region_io(),
        ));
        regions.insert((partition, bucket), r.clone());
        r
    }

    pub fn index_limits(&self) -> IndexLimits {
        IndexLimits {
            max_series: self.opts.max_series_per_region,
        }
    }

    /// What a region needs to load and evict its index.
    pub fn region_io(&self) -> (FileStore, Arc<crate::index_cache::IndexCache>, IndexLimits) {
        (
            self.store.clone(),
            self.index_cache.clone(),
            self.index_limits(),
        )
    }

    /// Moves a region to worker `w` with its memtable bytes (start-up only).
    pub fn move_region(&self, region: &Region, w: usize) {
        let old = region.worker();
        let bytes = region.active.lock().bytes()
            + region.frozen.read().iter().map(|p| p.bytes).sum::<usize>();
        self.sub_bytes(old, bytes);
        self.add_bytes(w, bytes);
        let mut b = self.balancer.lock();
        b.unbind(old, region.placed_interval_ns);
        b.bind(w, region.placed_interval_ns);
        region.set_worker(w);
    }

    /// Oldest timestamp a table still accepts, by its retention.
    pub fn retention_cutoff(&self, table: &Table) -> Option<i64> {
        table
            .ttl_ns()
            .map(|ttl| self.clock.now_ns().saturating_sub(ttl))
    }

    /// Waits while memtables hold more than the stall limit.
    fn wait_for_memory(&self, ctl: &[Sender<Control>]) -> Result<()> {
        let limit = self.opts.write_stall_bytes;
        if self.total_bytes() < limit {
            return Ok(());
        }
        self.metrics.write_stalls.inc();
        for c in ctl {
            let _ = c.send(Control::Flush(None));
        }
        let deadline = Instant::now() + self.opts.write_stall_timeout;
        let mut g = self.memory_freed.0.lock();
        while self.total_bytes() >= limit {
            if self.memory_freed.1.wait_until(&mut g, deadline).timed_out()
                && self.total_bytes() >= limit
            {
                return Err(StorageError::MemoryBudget {
                    used: self.total_bytes(),
                    limit,
                });
            }
        }
        Ok(())
    }
}

/// The result of a write: rows stored and rows refused (with 0-based row numbers).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct WriteOutcome {
    pub written: usize,
    pub rejected: Vec<RowRejection>,
}

/// A storage engine.
pub struct Engine {
    pub(crate) shared: Arc<Shared>,
    write_txs: Vec<Sender<WriteJob>>,
    pub(crate) ctl_txs: Vec<Sender<Control>>,
    threads: Mutex<Vec<JoinHandle<()>>>,
    maintenance: Mutex<Option<crate::maintenance::MaintenanceHandle>>,
    prewarm: Mutex<Option<crate::prewarm::PrewarmHandle>>,
}

impl Engine {
    /// Opens (recovering) an engine.
    pub fn open(opts: EngineOptions, io: EngineIo) -> Result<Engine> {
        opts.validate()
            .map_err(|m| StorageError::Injected(format!("bad option: {m}")))?;
        let manifest = Manifest::open(io.files.clone(), opts.manifest_checkpoint_every)?;
        let orphans = manifest.remove_orphans()?;
        if orphans > 0 {
            tracing::info!(
                orphans,
                "removed files left by an interrupted flush or compaction"
            );
        }
        let opts_cache_bytes = opts.index_cache_bytes;
        let sst_cache = crate::sst_cache::SstCache::new(opts.sst_cache_bytes);
        let decoded_cache = crate::decoded_cache::DecodedCache::new(opts.decoded_cache_bytes);
        let shared = Arc::new(Shared {
            worker_bytes: (0..opts.workers).map(|_| AtomicUsize::new(0)).collect(),
            balancer: Mutex::new(FrequencyBalancer::new(opts.workers)),
            opts,
            store: io.files.clone(),
            clock: io.clock.clone(),
            manifest: Mutex::new(manifest),
            tables: RwLock::new(HashMap::new()),
            seq: AtomicU64::new(0),
            total_bytes: AtomicUsize::new(0),
            memory_freed: (Mutex::new(()), Condvar::new()),
            metrics: Metrics::default(),
            compaction_lock: Mutex::new(()),
            index_cache: crate::index_cache::IndexCache::new(opts_cache_bytes),
            sst_cache,
            decoded_cache,
        });
        crate::replay::load_manifest_state(&shared)?;
        let (wals, replayed) = crate::replay::replay_wals(&shared, io.wals.as_ref())?;
        // Replay fed the last-value cache rows that deletes hide: such regions fill it again
        // from their data on the first read.
        for t in shared.all_tables() {
            for r in t.all_regions() {
                if !r.tombstones.read().is_empty() {
                    r.refill_lvc_later();
                }
            }
        }
        let engine = Self::start(shared, wals);
        if replayed {
            // Replayed rows are flushed in the background while writes are accepted.
            for c in &engine.ctl_txs {
                let _ = c.send(Control::Flush(None));
            }
        }
        Ok(engine)
    }

    fn start(shared: Arc<Shared>, mut wals: Vec<Wal>) -> Engine {
        let n = shared.opts.workers;
        let mut write_txs = Vec::new();
        let mut ctl_txs = Vec::new();
        let mut threads = Vec::new();
        let mut receivers = Vec::new();
        for _ in 0..n {
            let (wtx, wrx) = bounded(shared.opts.worker_queue_capacity);
            let (ctx, crx) = unbounded();
            write_txs.push(wtx);
            ctl_txs.push(ctx);
            receivers.push((wrx, crx));
        }
        for (id, (wrx, crx)) in receivers.into_iter().enumerate() {
            // One flusher per worker, so flushes of different workers run in parallel.
            let (flush_tx, flush_rx) = unbounded::<FlushJob>();
            let mut w = Worker::new(id, shared.clone(), wals.remove(0), wrx, crx, flush_tx);
            // Replayed records count as applied: the first flush covers them.
            w.last_applied = w.wal.last_seq().unwrap_or(SeqNo(0));
            threads.push(spawn(&format!("tempora-worker-{id}"), move || w.run()));
            let (s, ctl) = (shared.clone(), ctl_txs[id].clone());
            threads.push(spawn(&format!("tempora-flusher-{id}"), move || {
                for job in flush_rx {
                    let result = run_flush(&s, &job);
                    let _ = ctl.send(Control::FlushDone {
                        flush_seq: job.flush_seq,
                        result,
                        waiters: job.waiters,
                    });
                }
            }));
        }
        let maintenance = crate::maintenance::start(shared.clone());
        let prewarm = crate::prewarm::start(shared.clone());
        Engine {
            shared,
            write_txs,
            ctl_txs,
            threads: Mutex::new(threads),
            maintenance: Mutex::new(Some(maintenance)),
            prewarm: Mutex::new(prewarm),
        }
    }

    /// Writes a batch. Rows refused by the schema, limits or retention are listed in the
    /// outcome; the rest are durable when this returns `Ok`.
    pub fn write(&self, batch: RowBatch) -> Result<WriteOutcome> {
        let limit = self.shared.opts.max_rows_per_request;
        if batch.len() > limit {
            return Err(StorageError::TooLarge {
                what: "rows in a request",
                size: batch.len(),
                limit,
            });
        }
        if batch.is_empty() {
            return Ok(WriteOutcome::default());
        }
        self.shared.wait_for_memory(&self.ctl_txs)?;
        let table = self.shared.table_or_create(batch.table())?;
        let (mut rejected, field_map) = table.check(&batch, self.shared.opts.max_columns);
        let routed = self.route(&table, &batch, &mut rejected);
        let batch = Arc::new(batch);
        let field_map = Arc::new(field_map);
        let mut replies = Vec::new();
        for (worker, parts) in routed
            .into_iter()
            .enumerate()
            .filter(|(_, p)| !p.is_empty())
        {
            let (tx, rx) = bounded(1);
            let job = WriteJob {
                batch: batch.clone(),
                field_map: field_map.clone(),
                parts,
                reply: tx,
            };
            self.write_txs[worker]
                .send_timeout(job, self.shared.opts.write_stall_timeout)
                .map_err(|_| StorageError::QueueFull {
                    worker,
                    capacity: self.shared.opts.worker_queue_capacity,
                })?;
            replies.push(rx);
        }
        let mut first_err = None;
        for rx in replies {
            match rx.recv() {
                Ok(Ok(r)) => rejected.extend(r),
                Ok(Err(e)) => first_err = first_err.or(Some(e)),
                Err(_) => first_err = first_err.or(Some(StorageError::ShutDown)),
            }
        }
        if let Some(e) = first_err {
            return Err(e);
        }
        rejected.sort_by_key(|r| r.row);
        self.shared.metrics.rows_rejected.add(rejected.len() as u64);
        Ok(WriteOutcome {
            written: batch.len() - rejected.len(),
            rejected,
        })
    }

    /// Groups accepted rows by region and regions by worker.
    fn route(
        &self,
        table: &Table,
        batch: &RowBatch,
        rejected: &mut Vec<RowRejection>,
    ) -> Vec<Vec<(Arc<Region>, Vec<u32>)>> {
        let opts = &self.shared.opts;
        let cutoff = self.shared.retention_cutoff(table);
        let refused: Vec<usize> = rejected.iter().map(|r| r.row).collect();
        let mut skip = refused.into_iter().peekable();
        let mut by_region: HashMap<(i64, u32), Vec<u32>> = HashMap::new();
        for (i, row) in batch.rows().enumerate() {
            if skip.peek() == Some(&i) {
                skip.next();
                continue;
            }
            if cutoff.is_some_and(|c| row.time.0 < c) {
                rejected.push(RowRejection {
                    row: i,
                    reason: "timestamp is older than the table's retention".into(),
                });
                continue;
            }
            let partition = row.time.0.div_euclid(opts.partition_ns);
            let bucket = (series_hash(row.key) % opts.buckets as u64) as u32;
            by_region
                .entry((partition, bucket))
                .or_default()
                .push(i as u32);
        }
        let mut per_worker: Vec<Vec<(Arc<Region>, Vec<u32>)>> =
            (0..opts.workers).map(|_| Vec::new()).collect();
        let mut regions: Vec<_> = by_region.into_iter().collect();
        regions.sort_by_key(|(k, _)| *k);
        for ((p, b), rows) in regions {
            let region = self.shared.region_or_create(table, p, b);
            per_worker[region.worker()].push((region, rows));
        }
        per_worker
    }

    /// Flushes every memtable and waits until the files are in the manifest.
    pub fn flush(&self) -> Result<()> {
        let mut waits = Vec::new();
        for c in &self.ctl_txs {
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
        self.shared
            .all_tables()
            .iter()
            .map(|t| t.name.clone())
            .collect()
    }

    /// The schema of a table.
    pub fn schema(&self, table: &str) -> Option<Arc<tempora_model::TableSchema>> {
        self.shared.tables.read().get(table).map(|t| t.schema())
    }

    /// Sets (or clears) a table's retention; expired partitions are dropped by maintenance.
    pub fn set_ttl(&self, table: &str, ttl_ns: Option<i64>) -> Result<()> {
        let t = self
            .shared
            .tables
            .read()
            .get(table)
            .cloned()
            .ok_or_else(|| StorageError::TableNotFound(table.into()))?;
        self.shared.manifest.lock().commit(vec![Edit::SetTtl {
            name: table.into(),
            ttl_ns,
        }])?;
        t.set_ttl_ns(ttl_ns);
        Ok(())
    }

    pub fn metrics(&self) -> &Metrics {
        &self.shared.metrics
    }

    /// Series cache: (index loads from files, evictions, bytes of loaded indexes tracked).
    pub fn index_cache_stats(&self) -> (u64, u64, usize) {
        let c = &self.shared.index_cache;
        (c.loads.get(), c.evictions.get(), c.weight())
    }

    /// A one-line-per-region description of the engine's state, for diagnosing tests.
    #[doc(hidden)]
    pub fn debug_state(&self) -> String {
        use std::fmt::Write;
        let mut out = String::new();
        for t in self.shared.all_tables() {
            for r in t.all_regions() {
                let files: Vec<String> = r
                    .files
                    .read()
                    .iter()
                    .map(|f| {
                        format!(
                            "{}:{}r[{},{}]s{}",
                            f.meta.id,
                            f.meta.rows,
                            f.meta.min_time,
                            f.meta.max_time,
                            f.meta.max_seq
                        )
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
        for t in self.shared.all_tables() {
            for r in t.all_regions() {
                tombs += r.tombstones.read().len();
                let f = r.files.read();
                files += f.len();
                rows += f.iter().map(|f| f.meta.rows).sum::<u64>();
            }
        }
        (tombs, files, rows)
    }

    /// Memtable bytes held now.
    pub fn memtable_bytes(&self) -> usize {
        self.shared.total_bytes()
    }

    /// Runs compaction now on every region (maintenance also runs it in the background).
    pub fn compact(&self) -> Result<usize> {
        crate::compaction::compact_all(&self.shared)
    }

    /// Drops a table and all its data; returns whether it existed.
    pub fn drop_table(&self, name: &str) -> Result<bool> {
        crate::retention::drop_table(&self.shared, name)
    }

    /// Drops expired partitions now (maintenance also does it in the background).
    pub fn enforce_retention(&self) -> Result<usize> {
        crate::retention::enforce(&self.shared)
    }

    /// Flushes and stops all threads.
    pub fn close(self) -> Result<()> {
        let r = self.flush();
        self.stop();
        r
    }

    /// Waits until the prewarm thread started at open has finished (at once when there is
    /// none, or it has already been waited for).
    pub fn wait_prewarm(&self) {
        if let Some(p) = self.prewarm.lock().take() {
            p.join();
        }
    }

    /// The decoded-column cache now: (bytes held, hits, misses).
    pub fn decoded_cache_stats(&self) -> (usize, u64, u64) {
        let c = &self.shared.decoded_cache;
        (c.weight(), c.hits.get(), c.misses.get())
    }

    fn stop(&self) {
        if let Some(p) = self.prewarm.lock().take() {
            p.stop();
        }
        if let Some(m) = self.maintenance.lock().take() {
            m.stop();
        }
        for c in &self.ctl_txs {
            let (tx, rx) = bounded(1);
            if c.send(Control::Shutdown(tx)).is_ok() {
                let _ = rx.recv();
            }
        }
        // Workers hold the flusher's senders; once they exit the flusher ends too.
        for t in self.threads.lock().drain(..) {
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

pub(crate) fn wal_options(opts: &EngineOptions) -> WalOptions {
    WalOptions {
        segment_size: opts.wal_segment_bytes,
        sync: opts.wal_sync,
        ..WalOptions::default()
    }
}
