//! Region workers: the only threads that mutate regions.
//!
//! A worker owns one WAL. Its loop drains up to `max_requests_per_commit` write requests,
//! resolves their series, appends one WAL record per (request, region), commits once (group
//! commit: one fsync for all of them), applies the rows to the memtables, then answers every
//! request. Writes always go before control messages (flush results, flush requests): the
//! control queue is read only when no write is waiting.
//!
//! Invariants:
//! - A request is answered `Ok` only after its WAL records are committed per the sync policy.
//! - If the commit fails, no row of the group reaches a memtable and every request gets the
//!   error; the WAL has cut its partial tail, so later commits work once the fault clears.
//! - At most one flush per worker is in flight; after it is durable in the manifest the worker
//!   truncates its WAL below the flush sequence.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam::channel::{Receiver, Sender, select_biased};
use tempora_model::{FieldType, RowBatch, RowRejection, SeqNo, SeriesId};
use tempora_wal::Wal;

use crate::catalog::{Catalog, Region};
use crate::clock::Clock;
use crate::error::{Result, StorageError};
use crate::maintenance::flush::{FlushJob, collect_flush_job};
use crate::metrics::Metrics;
use crate::write::budget::Budget;
use crate::write::wal::encode_record;

/// One batch's rows for one worker: the batch, its field map and its rows by region.
pub(crate) struct WriteItem {
    pub batch: Arc<RowBatch>,
    pub field_map: Arc<Vec<(usize, FieldType)>>,
    pub parts: Vec<(Arc<Region>, Vec<u32>)>,
}

/// One write request for one worker: one or more batches (of any tables), answered together
/// with each item's refused rows, in order.
pub(crate) struct WriteJob {
    pub items: Vec<WriteItem>,
    pub reply: Sender<Result<Vec<Vec<RowRejection>>>>,
}

pub(crate) enum Control {
    /// Flush every region of this worker; answer when durable.
    Flush(Option<Sender<Result<()>>>),
    /// The flusher finished a job of this worker.
    FlushDone {
        flush_seq: SeqNo,
        result: Result<()>,
        waiters: Vec<Sender<Result<()>>>,
    },
    Shutdown(Sender<()>),
}

/// A region's rows of one request: row numbers, their series, the WAL sequence.
type PreparedPart = (Arc<Region>, Vec<u32>, Vec<SeriesId>, SeqNo);

struct Prepared {
    job: WriteJob,
    /// Per item: its refused rows and its prepared parts.
    items: Vec<(Vec<RowRejection>, Vec<PreparedPart>)>,
}

/// What every worker shares with the engine: the catalog (sequence numbers, the tables a
/// flush covers), the memtable budget, counters and the clock, and its limits.
#[derive(Clone)]
pub(crate) struct WorkerDeps {
    pub catalog: Arc<Catalog>,
    pub budget: Arc<Budget>,
    pub metrics: Arc<Metrics>,
    pub clock: Arc<dyn Clock>,
    /// Most write requests drained into one WAL commit.
    pub max_requests_per_commit: usize,
    /// Memtable bytes of this worker's regions at which it flushes them.
    pub flush_bytes: usize,
}

pub(crate) struct Worker {
    pub id: usize,
    deps: WorkerDeps,
    pub wal: Wal,
    pub writes: Receiver<WriteJob>,
    pub control: Receiver<Control>,
    pub flusher: Sender<FlushJob>,
    pub last_applied: SeqNo,
    /// The seq the last successful flush covered (every record up to it is in files).
    flushed: Option<SeqNo>,
    flush_in_flight: bool,
    flush_waiters: Vec<Sender<Result<()>>>,
    next_flush_attempt: Instant,
    scratch: Vec<u8>,
}

impl Worker {
    pub fn new(
        id: usize,
        deps: WorkerDeps,
        wal: Wal,
        writes: Receiver<WriteJob>,
        control: Receiver<Control>,
        flusher: Sender<FlushJob>,
    ) -> Self {
        Self {
            id,
            deps,
            wal,
            writes,
            control,
            flusher,
            last_applied: SeqNo(0),
            flushed: None,
            flush_in_flight: false,
            flush_waiters: Vec::new(),
            next_flush_attempt: Instant::now(),
            scratch: Vec::new(),
        }
    }

    pub fn run(mut self) {
        loop {
            let msg = select_biased! {
                recv(self.writes) -> m => m.map(Ok),
                recv(self.control) -> m => m.map(Err),
            };
            match msg {
                Ok(Ok(first)) => self.handle_writes(first),
                Ok(Err(Control::Shutdown(done))) => {
                    self.release_wal();
                    let _ = done.send(());
                    return;
                }
                Ok(Err(c)) => self.handle_control(c),
                Err(_) => return,
            }
        }
    }

    fn handle_control(&mut self, c: Control) {
        match c {
            Control::Flush(waiter) => {
                self.flush_waiters.extend(waiter);
                if !self.flush_in_flight {
                    self.start_flush();
                }
            }
            Control::FlushDone {
                flush_seq,
                result,
                waiters,
            } => {
                self.flush_in_flight = false;
                match &result {
                    Ok(()) => {
                        self.flushed = Some(flush_seq);
                        if let Err(e) = self.wal.truncate_before(flush_seq.next()) {
                            tracing::warn!(worker = self.id, error = %e, "WAL truncation failed");
                        }
                    }
                    Err(e) => {
                        tracing::warn!(worker = self.id, error = %e, "flush failed; retrying later");
                        self.next_flush_attempt = Instant::now() + Duration::from_secs(1);
                    }
                }
                for w in waiters {
                    let _ = w.send(result.as_ref().map(|_| ()).map_err(|e| e.replicate()));
                }
                // Waiters that arrived during the flush need a flush of their own.
                if !self.flush_waiters.is_empty() {
                    self.start_flush();
                }
            }
            Control::Shutdown(_) => unreachable!("handled in run"),
        }
    }

    /// At shutdown, when the last flush covered every record applied, deletes the whole log:
    /// a clean stop leaves no WAL bytes older than the last flush.
    fn release_wal(&mut self) {
        let Some(flushed) = self.flushed else {
            return;
        };
        if self.flush_in_flight || self.last_applied > flushed {
            return;
        }
        if let Err(e) = self.wal.remove_all_before(flushed.next()) {
            tracing::warn!(worker = self.id, error = %e, "removing the flushed WAL failed");
        }
    }

    fn start_flush(&mut self) {
        let waiters = std::mem::take(&mut self.flush_waiters);
        let job = collect_flush_job(&self.deps.catalog, self.id, self.last_applied, waiters);
        self.flush_in_flight = true;
        if let Err(e) = self.flusher.send(job) {
            tracing::error!(worker = self.id, "flusher is gone: {e}");
            self.flush_in_flight = false;
        }
    }

    fn maybe_flush(&mut self) {
        if !self.flush_in_flight
            && self.deps.budget.worker(self.id) >= self.deps.flush_bytes
            && Instant::now() >= self.next_flush_attempt
        {
            self.start_flush();
        }
    }

    fn handle_writes(&mut self, first: WriteJob) {
        let mut jobs = vec![first];
        while jobs.len() < self.deps.max_requests_per_commit {
            match self.writes.try_recv() {
                Ok(j) => jobs.push(j),
                Err(_) => break,
            }
        }
        let prepared: Vec<Prepared> = jobs.into_iter().map(|j| self.prepare(j)).collect();
        let committed = self.wal.commit();
        self.deps.metrics.wal_commits.inc();
        match committed {
            Err(e) => {
                let err = StorageError::from(e);
                tracing::warn!(worker = self.id, error = %err, "WAL commit failed");
                for p in prepared {
                    let _ = p.job.reply.send(Err(err.replicate()));
                }
            }
            Ok(()) => {
                for p in prepared {
                    self.apply(p);
                }
            }
        }
        self.maybe_flush();
    }

    /// Resolves series ids and appends WAL records; nothing is visible yet.
    fn prepare(&mut self, job: WriteJob) -> Prepared {
        let items = job
            .items
            .iter()
            .map(|item| self.prepare_item(item))
            .collect();
        Prepared { job, items }
    }

    fn prepare_item(&mut self, item: &WriteItem) -> (Vec<RowRejection>, Vec<PreparedPart>) {
        let mut rejected = Vec::new();
        let mut parts = Vec::with_capacity(item.parts.len());
        for (region, rows) in &item.parts {
            let (kept, ids) = resolve_series(region, &item.batch, rows, &mut rejected);
            if kept.is_empty() {
                continue;
            }
            let seq = self.deps.catalog.next_seq();
            self.scratch.clear();
            encode_record(region, &item.batch, &kept, &ids, &mut self.scratch);
            if let Err(e) = self.wal.append(seq, &self.scratch) {
                let reason = format!("write-ahead log: {e}");
                rejected.extend(kept.iter().map(|&r| RowRejection {
                    row: r as usize,
                    reason: reason.clone(),
                }));
                continue;
            }
            parts.push((region.clone(), kept, ids, seq));
        }
        (rejected, parts)
    }

    fn apply(&mut self, p: Prepared) {
        let now = self.deps.clock.now_ns();
        let mut replies = Vec::with_capacity(p.items.len());
        for (item, (mut rejected, parts)) in p.job.items.iter().zip(p.items) {
            for (region, rows, ids, seq) in &parts {
                let batch = &item.batch;
                let it = rows.iter().zip(ids).map(|(&r, &sid)| {
                    let row = batch.row(r as usize);
                    (sid, row.time.0, row.fields)
                });
                let added = region.apply(it, *seq, &item.field_map);
                // Committed: these keys are durable, later records may name them by id.
                region.logged.lock().extend(ids.iter().map(|s| s.0));
                region.meter.lock().record(now);
                self.deps.budget.add(self.id, added);
                self.last_applied = self.last_applied.max(*seq);
                self.deps.metrics.rows_written.add(rows.len() as u64);
            }
            rejected.sort_by_key(|r| r.row);
            replies.push(rejected);
        }
        let _ = p.job.reply.send(Ok(replies));
    }
}

/// Looks up or creates each row's series; rows the index refuses are rejected.
pub(crate) fn resolve_series(
    region: &Arc<Region>,
    batch: &RowBatch,
    rows: &[u32],
    rejected: &mut Vec<RowRejection>,
) -> (Vec<u32>, Vec<SeriesId>) {
    let mut kept = Vec::with_capacity(rows.len());
    let mut ids = Vec::with_capacity(rows.len());
    let mut index = match region.index_write() {
        Ok(i) => i,
        Err(e) => {
            let reason = format!("series index of the region could not be loaded: {e}");
            rejected.extend(rows.iter().map(|&r| RowRejection {
                row: r as usize,
                reason: reason.clone(),
            }));
            return (Vec::new(), Vec::new());
        }
    };
    // Rows that share their key bytes (a series' samples, `push_same_series`) share the
    // lookup: the same slice (address and length) is the same series.
    let mut last: Option<(&[u8], SeriesId)> = None;
    for &r in rows {
        let key = batch.row(r as usize).key;
        if let Some((k, id)) = last
            && std::ptr::eq(k, key)
        {
            kept.push(r);
            ids.push(id);
            continue;
        }
        match index.get_or_insert(key) {
            Ok((id, _)) => {
                last = Some((key, id));
                kept.push(r);
                ids.push(id);
            }
            Err(e) => rejected.push(RowRejection {
                row: r as usize,
                reason: e.to_string(),
            }),
        }
    }
    (kept, ids)
}
