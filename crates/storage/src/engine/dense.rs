//! Dense tables through the engine: writes and deletes checked here, logged and applied by
//! the worker each series hashes to (so one series' records are in one log, in order), and
//! point reads straight from the block files.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use crossbeam::channel::bounded;
use tempora_model::{FieldValue, RowBatch, RowRejection, series_hash};

use super::Engine;
use super::write::WriteOutcome;
use crate::catalog::Table;
use crate::dense::DenseTable;
use crate::dense::layout::{block_start, slot_index};
use crate::dense::record::{DenseOp, SeriesPut};
use crate::dense::slot::{self, Slot};
use crate::error::{Result, StorageError};
use crate::files::manifest::Edit;
use crate::maintenance::delete::DeleteRequest;
use crate::write::worker::{DenseJob, WriteJob};

impl Engine {
    /// Writes a batch into dense table `table`: each row is checked (grid, fields, types,
    /// string lengths) and refused alone; a point is written whole (fields a row omits are
    /// NULL).
    pub(super) fn write_dense(
        &self,
        table: &Arc<Table>,
        dense: &Arc<DenseTable>,
        batch: &RowBatch,
    ) -> Result<WriteOutcome> {
        let mut rejected = Vec::new();
        match table.grow_tags(batch.tag_names(), self.opts.max_columns) {
            Ok(false) => {}
            Ok(true) => self.catalog.commit(vec![Edit::SetSchema {
                name: table.name.clone(),
                schema: (*table.schema()).clone(),
            }])?,
            Err(reason) => {
                let all = (0..batch.len()).map(|row| RowRejection {
                    row,
                    reason: reason.clone(),
                });
                return Ok(WriteOutcome {
                    written: 0,
                    rejected: all.collect(),
                });
            }
        }
        let spec = &dense.spec;
        let map: Vec<Option<usize>> = batch
            .field_names()
            .iter()
            .map(|n| spec.field_index(n))
            .collect();
        let cutoff = table.retention_cutoff(self.clock.now_ns());
        let mut by_series: HashMap<&[u8], SeriesPut> = HashMap::new();
        let mut cells: Vec<Option<&FieldValue>> = vec![None; spec.fields.len()];
        for (i, row) in batch.rows().enumerate() {
            let t = row.time.0;
            let problem = (|| -> std::result::Result<(), String> {
                if let Some(c) = cutoff.filter(|&c| t < c) {
                    return Err(format!(
                        "timestamp {t} is older than the table's retention allows (the oldest \
                         accepted now is {c})"
                    ));
                }
                slot_index(
                    t,
                    block_start(t, spec.block_ns),
                    spec.block_ns,
                    spec.interval_ns,
                )
                .map_err(|e| format!("dense table {:?}: {e}", table.name))?;
                cells.iter_mut().for_each(|c| *c = None);
                for (idx, v) in row.fields {
                    let Some(at) = map[*idx as usize] else {
                        return Err(format!(
                            "{:?} is not a field of dense table {:?} (its fields are fixed: {})",
                            batch.field_names()[*idx as usize],
                            table.name,
                            spec.field_list()
                        ));
                    };
                    cells[at] = Some(v);
                }
                let put = by_series.entry(row.key).or_default();
                slot::encode_with(&spec.fields, |k| cells[k], &mut put.slots)
                    .map_err(|e| format!("dense table {:?}: {e}", table.name))?;
                put.times.push(t);
                Ok(())
            })();
            if let Err(reason) = problem {
                rejected.push(RowRejection { row: i, reason });
            }
        }
        let puts: Vec<SeriesPut> = by_series
            .into_iter()
            .filter(|(_, p)| !p.times.is_empty())
            .map(|(k, mut p)| {
                p.key = Bytes::copy_from_slice(k);
                p
            })
            .collect();
        let written: usize = puts.iter().map(|p| p.times.len()).sum();
        let by_worker = self.by_worker(puts, |p| &p.key);
        let ops = by_worker.into_iter().map(DenseOp::Put).collect();
        self.send_dense(table, dense, ops)?;
        self.metrics.rows_written.add(written as u64);
        self.metrics.rows_rejected.add(rejected.len() as u64);
        Ok(WriteOutcome { written, rejected })
    }

    /// Groups `items` by the worker their series hashes to (one entry per worker).
    fn by_worker<T>(&self, items: Vec<T>, key: impl Fn(&T) -> &Bytes) -> Vec<Vec<T>> {
        let n = self.opts.workers;
        let mut out: Vec<Vec<T>> = (0..n).map(|_| Vec::new()).collect();
        for it in items {
            out[(series_hash(key(&it)) % n as u64) as usize].push(it);
        }
        out
    }

    /// Sends worker `w` the op `ops[w]` (empty ones skipped) and waits for every reply;
    /// returns the points deletes removed.
    fn send_dense(&self, table: &Table, dense: &Arc<DenseTable>, ops: Vec<DenseOp>) -> Result<u64> {
        let removed = Arc::new(AtomicU64::new(0));
        let mut replies = Vec::new();
        for (worker, op) in ops.into_iter().enumerate() {
            let empty = match &op {
                DenseOp::Put(p) => p.is_empty(),
                DenseOp::Delete(d) => d.is_empty(),
            };
            if empty {
                continue;
            }
            let (tx, rx) = bounded(1);
            let job = WriteJob {
                batch: Arc::new(RowBatch::default()),
                field_map: Arc::new(Vec::new()),
                parts: Vec::new(),
                dense: Some(DenseJob {
                    table: dense.clone(),
                    table_id: table.id,
                    op,
                    removed: removed.clone(),
                }),
                reply: tx,
            };
            self.threads.write_txs[worker]
                .send_timeout(job, self.opts.write_stall_timeout)
                .map_err(|_| StorageError::QueueFull {
                    worker,
                    capacity: self.opts.worker_queue_capacity,
                })?;
            replies.push(rx);
        }
        let mut first_err = None;
        for rx in replies {
            match rx.recv() {
                Ok(Ok(_)) => {}
                Ok(Err(e)) => first_err = first_err.or(Some(e)),
                Err(_) => first_err = first_err.or(Some(StorageError::ShutDown)),
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok(removed.load(Ordering::Relaxed)),
        }
    }

    /// Deletes the matching points of a dense table in place (holes punched, whole blocks
    /// removed); returns how many there were.
    pub(super) fn delete_dense(
        &self,
        table: &Table,
        dense: &Arc<DenseTable>,
        req: &DeleteRequest,
    ) -> Result<u64> {
        let mut series = dense.select(&req.matcher);
        if let Some(choose) = &req.series_filter {
            let keys: Vec<Bytes> = series.iter().map(|s| s.key.clone()).collect();
            let keep = choose(&keys)?;
            let mut it = keep.into_iter();
            series.retain(|_| it.next().unwrap_or(false));
        }
        let (from, to) = req.time.unwrap_or((i64::MIN, i64::MAX));
        if from >= to {
            return Ok(0);
        }
        let ranges: Vec<(Bytes, i64, i64)> =
            series.iter().map(|s| (s.key.clone(), from, to)).collect();
        let by_worker = self.by_worker(ranges, |r| &r.0);
        let ops = by_worker.into_iter().map(DenseOp::Delete).collect();
        self.send_dense(table, dense, ops)
    }

    /// The point of series `key` (its memcomparable tags) at `t` in dense table `table`:
    /// one positioned read. `None` when the slot was never written (or was deleted).
    pub fn dense_get(
        &self,
        table: &str,
        key: &[u8],
        t: i64,
    ) -> Result<Option<Vec<Option<FieldValue>>>> {
        let table = self.catalog.table(table)?;
        let Some(dense) = table.dense() else {
            return Err(StorageError::Shared(format!(
                "table {:?} is not dense",
                table.name
            )));
        };
        Ok(match dense.get(key, t)? {
            Slot::Hole => None,
            Slot::Row(r) => Some(r),
        })
    }
}
