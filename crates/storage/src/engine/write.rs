//! [`Engine::write`] and [`Engine::write_many`]: the schema check, routing rows to regions and
//! regions to workers (one job per worker for every batch of a call), and waiting for every
//! worker's reply.

use std::collections::HashMap;
use std::sync::Arc;

use crossbeam::channel::bounded;
use tempora_model::{RowBatch, RowRejection, series_hash};

use super::Engine;
use crate::catalog::partitions::Span;
use crate::catalog::{Region, Table};
use crate::error::{Result, StorageError};
use crate::write::worker::{Control, WriteItem, WriteJob};

/// The result of a write: rows stored and rows refused (with 0-based row numbers).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct WriteOutcome {
    pub written: usize,
    pub rejected: Vec<RowRejection>,
}

impl Engine {
    /// Writes a batch. Rows refused by the schema, limits or retention are listed in the
    /// outcome; the rest are durable when this returns `Ok`.
    pub fn write(&self, batch: RowBatch) -> Result<WriteOutcome> {
        self.write_many(vec![batch])
            .pop()
            .expect("one outcome per batch")
    }

    /// Writes several batches (of any tables) together: their rows go to each worker as one
    /// job, which the worker commits with one WAL commit (with other jobs waiting), and is
    /// answered once. One outcome per batch, in order, each as [`Engine::write`] gives it.
    pub fn write_many(&self, batches: Vec<RowBatch>) -> Vec<Result<WriteOutcome>> {
        if let Err(e) = self.wait_for_room() {
            return batches.iter().map(|_| Err(e.replicate())).collect();
        }
        let n = batches.len();
        let mut outcomes: Vec<Option<Result<WriteOutcome>>> = (0..n).map(|_| None).collect();
        // Per batch still open: its rows and the rows refused before the workers.
        let mut open: Vec<(usize, Vec<RowRejection>)> = (0..n).map(|_| (0, Vec::new())).collect();
        // Per worker: its items, each with the batch it is of.
        let mut jobs: Vec<Vec<(usize, WriteItem)>> =
            (0..self.opts.workers).map(|_| Vec::new()).collect();
        for (i, batch) in batches.into_iter().enumerate() {
            match self.route_batch(batch) {
                Ok(Routed::Done(o)) => outcomes[i] = Some(Ok(o)),
                Ok(Routed::Items {
                    rows,
                    rejected,
                    items,
                }) => {
                    open[i] = (rows, rejected);
                    for (worker, item) in items {
                        jobs[worker].push((i, item));
                    }
                }
                Err(e) => outcomes[i] = Some(Err(e)),
            }
        }
        let mut replies = Vec::new();
        for (worker, items) in jobs.into_iter().enumerate().filter(|(_, j)| !j.is_empty()) {
            let (of, items): (Vec<usize>, Vec<WriteItem>) = items.into_iter().unzip();
            let (tx, rx) = bounded(1);
            let sent = self.threads.write_txs[worker]
                .send_timeout(WriteJob { items, reply: tx }, self.opts.write_stall_timeout)
                .map_err(|_| StorageError::QueueFull {
                    worker,
                    capacity: self.opts.worker_queue_capacity,
                });
            match sent {
                Ok(()) => replies.push((of, rx)),
                Err(e) => {
                    for i in of {
                        outcomes[i].get_or_insert_with(|| Err(e.replicate()));
                    }
                }
            }
        }
        for (of, rx) in replies {
            match rx.recv() {
                Ok(Ok(per_item)) => {
                    for (i, r) in of.into_iter().zip(per_item) {
                        open[i].1.extend(r);
                    }
                }
                Ok(Err(e)) => {
                    for i in of {
                        outcomes[i].get_or_insert_with(|| Err(e.replicate()));
                    }
                }
                Err(_) => {
                    for i in of {
                        outcomes[i].get_or_insert_with(|| Err(StorageError::ShutDown));
                    }
                }
            }
        }
        outcomes
            .into_iter()
            .zip(open)
            .map(|(done, (rows, mut rejected))| {
                done.unwrap_or_else(|| {
                    rejected.sort_by_key(|r| r.row);
                    self.metrics.rows_rejected.add(rejected.len() as u64);
                    Ok(WriteOutcome {
                        written: rows - rejected.len(),
                        rejected,
                    })
                })
            })
            .collect()
    }

    /// Waits (bounded) until the memtables have room, asking the workers to flush.
    fn wait_for_room(&self) -> Result<()> {
        self.budget.wait_for_room(|| {
            self.metrics.write_stalls.inc();
            for c in &self.threads.ctl_txs {
                let _ = c.send(Control::Flush(None));
            }
        })
    }

    /// Checks a batch and routes its rows: the items for each worker, or an outcome already
    /// known (an empty batch, a dense table's write).
    fn route_batch(&self, batch: RowBatch) -> Result<Routed> {
        let limit = self.opts.max_rows_per_request;
        if batch.len() > limit {
            return Err(StorageError::TooLarge {
                what: "rows in a request",
                size: batch.len(),
                limit,
            });
        }
        if batch.is_empty() {
            return Ok(Routed::Done(WriteOutcome::default()));
        }
        let table = self.catalog.table_or_create(batch.table())?;
        if let Some(dense) = table.dense() {
            return self.write_dense(&table, dense, &batch).map(Routed::Done);
        }
        let (mut rejected, field_map) = table.check(&batch, self.opts.max_columns);
        let routed = self.route(&table, &batch, &mut rejected);
        let rows = batch.len();
        let batch = Arc::new(batch);
        let field_map = Arc::new(field_map);
        let items = routed
            .into_iter()
            .enumerate()
            .filter(|(_, p)| !p.is_empty())
            .map(|(worker, parts)| {
                let item = WriteItem {
                    batch: batch.clone(),
                    field_map: field_map.clone(),
                    parts,
                };
                (worker, item)
            })
            .collect();
        Ok(Routed::Items {
            rows,
            rejected,
            items,
        })
    }

    /// Groups accepted rows by region and regions by worker. Each row goes to the partition
    /// holding its time (made on first use, sized by the table's settings or measured rate)
    /// and to the bucket its series hashes to among that partition's buckets.
    fn route(
        &self,
        table: &Table,
        batch: &RowBatch,
        rejected: &mut Vec<RowRejection>,
    ) -> Vec<Vec<(Arc<Region>, Vec<u32>)>> {
        let opts = &self.opts;
        let layout = opts.layout();
        let cutoff = table.retention_cutoff(self.clock.now_ns());
        let sample = RateSample::of(batch);
        table.observe_rate(sample.rows, sample.series, sample.span_ns);
        let refused: Vec<usize> = rejected.iter().map(|r| r.row).collect();
        let mut skip = refused.into_iter().peekable();
        let mut by_region: HashMap<(i64, u32), (Span, Vec<u32>)> = HashMap::new();
        let mut last: Option<Span> = None;
        for (i, row) in batch.rows().enumerate() {
            if skip.peek() == Some(&i) {
                skip.next();
                continue;
            }
            if cutoff.is_some_and(|c| row.time.0 < c) {
                rejected.push(RowRejection {
                    row: i,
                    reason: format!(
                        "timestamp {} is older than the table's retention allows (the oldest \
                         accepted now is {})",
                        row.time.0,
                        cutoff.unwrap_or_default()
                    ),
                });
                continue;
            }
            let span = match last {
                Some(s) if s.contains(row.time.0) => s,
                _ => table.span_for(row.time.0, &layout, || sample.series as u64),
            };
            last = Some(span);
            let bucket = (series_hash(row.key) % span.buckets as u64) as u32;
            by_region
                .entry((span.start, bucket))
                .or_insert_with(|| (span, Vec::new()))
                .1
                .push(i as u32);
        }
        let mut per_worker: Vec<Vec<(Arc<Region>, Vec<u32>)>> =
            (0..opts.workers).map(|_| Vec::new()).collect();
        let mut regions: Vec<_> = by_region.into_iter().collect();
        regions.sort_by_key(|(k, _)| *k);
        for ((_, b), (span, rows)) in regions {
            let region = self.placement.region_or_create(table, span, b);
            per_worker[region.worker()].push((region, rows));
        }
        per_worker
    }
}

/// A batch checked and routed.
enum Routed {
    /// Its outcome is known without the workers.
    Done(WriteOutcome),
    /// Its rows, the rows refused before the workers, and its items by worker.
    Items {
        rows: usize,
        rejected: Vec<RowRejection>,
        items: Vec<(usize, WriteItem)>,
    },
}

/// What a batch says about its table's data rate: rows, distinct series and time span of
/// its first [`RateSample::ROWS`] rows.
struct RateSample {
    rows: usize,
    series: usize,
    span_ns: i64,
}

impl RateSample {
    const ROWS: usize = 1024;

    fn of(batch: &RowBatch) -> RateSample {
        let mut seen = std::collections::HashSet::new();
        let (mut lo, mut hi, mut rows) = (i64::MAX, i64::MIN, 0);
        for row in batch.rows().take(Self::ROWS) {
            seen.insert(series_hash(row.key));
            lo = lo.min(row.time.0);
            hi = hi.max(row.time.0);
            rows += 1;
        }
        RateSample {
            rows,
            series: seen.len(),
            span_ns: hi.saturating_sub(lo).max(0),
        }
    }
}
