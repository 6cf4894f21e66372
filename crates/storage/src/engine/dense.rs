//! Dense tables through the engine: writes and deletes checked here, then logged and applied
//! by the table on the caller's thread ([`crate::dense::log`]), and point reads straight from
//! the block files.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use tempora_model::{FieldValue, RowBatch, RowRejection};

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
                if t < dense.cold_before() {
                    return Err(format!(
                        "dense table {:?}: timestamp {t} is in a block converted to the \
                         columnar layout (cold_after); points before {} are read-only",
                        table.name,
                        crate::catalog::settings::format_time_ns(dense.cold_before())
                    ));
                }
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
        if written > 0 {
            dense.log_op(|| self.catalog.next_seq(), DenseOp::Put(puts))?;
        }
        self.metrics.rows_written.add(written as u64);
        self.metrics.rows_rejected.add(rejected.len() as u64);
        Ok(WriteOutcome { written, rejected })
    }

    /// Deletes the matching points of a dense table in place (holes punched, whole blocks
    /// removed); returns how many there were.
    pub(super) fn delete_dense(&self, dense: &Arc<DenseTable>, req: &DeleteRequest) -> Result<u64> {
        // Buffered writes first: a series written since may have no directory yet.
        dense.flush_pending()?;
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
        if ranges.is_empty() {
            return Ok(0);
        }
        dense.log_op(|| self.catalog.next_seq(), DenseOp::Delete(ranges))
    }

    /// Sets fields of the point of series `key` at `t` of dense table `table` in place (the
    /// point read, changed and logged whole, atomically for the table); false when there is
    /// no such point. Fields are named; a value must fit its field.
    pub fn dense_update(
        &self,
        table: &str,
        key: &[u8],
        t: i64,
        set: &[(&str, FieldValue)],
    ) -> Result<bool> {
        let dense = self.dense_table(table)?;
        let spec = &dense.spec;
        let mut at = Vec::with_capacity(set.len());
        for (name, v) in set {
            let i = spec.field_index(name).ok_or_else(|| {
                StorageError::Shared(format!(
                    "{name:?} is not a field of dense table {table:?} (its fields are: {})",
                    spec.field_list()
                ))
            })?;
            at.push((i, v.clone()));
        }
        dense.log_update(|| self.catalog.next_seq(), key, t, &at)
    }

    /// Deletes the points of series `key` in `[from, to)` of dense table `table` in place;
    /// returns how many there were.
    pub fn dense_delete(&self, table: &str, key: &[u8], from: i64, to: i64) -> Result<u64> {
        let dense = self.dense_table(table)?;
        if from >= to {
            return Ok(0);
        }
        let range = (Bytes::copy_from_slice(key), from, to);
        dense.log_op(|| self.catalog.next_seq(), DenseOp::Delete(vec![range]))
    }

    fn dense_table(&self, table: &str) -> Result<Arc<DenseTable>> {
        let t = self.catalog.table(table)?;
        match t.dense() {
            Some(d) => Ok(d.clone()),
            None => Err(StorageError::Shared(format!(
                "table {:?} is not dense",
                t.name
            ))),
        }
    }

    /// The point of series `key` (its memcomparable tags) at `t` in dense table `table`:
    /// one positioned read. `None` when the slot was never written (or was deleted).
    pub fn dense_get(
        &self,
        table: &str,
        key: &[u8],
        t: i64,
    ) -> Result<Option<Vec<Option<FieldValue>>>> {
        let dense = self.dense_table(table)?;
        Ok(match dense.get(key, t)? {
            Slot::Hole => None,
            Slot::Row(r) => Some(r),
        })
    }
}
