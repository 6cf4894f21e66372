//! Dense tables through the read API: a block of the selected series read as a
//! [`SortedRun`] (keys, ranks, time, seq, then the requested fields), the shape region scans
//! give, so everything above the storage engine reads both layouts alike.
//!
//! Slot images are decoded straight into Arrow builders: fixed offsets, presence bits for
//! NULLs, no per-row allocation but strings'.

use std::sync::Arc;

use arrow::array::Int64Array;
use arrow::array::{
    ArrayRef, BooleanBuilder, Float64Builder, Int64Builder, RecordBatch, StringBuilder,
    UInt32Array, UInt64Array, UInt64Builder,
};
use bytes::Bytes;
use tempora_model::FieldType;

use super::slot::{field_offsets, present};
use super::table::{DenseSeries, DenseTable};
use crate::error::{Result, StorageError};
use crate::read::run::{SortedRun, run_schema};

/// One block of a dense scan: the selected series' slots in `[block, block + block_ns)`.
#[derive(Clone)]
pub(crate) struct DensePart {
    pub table: Arc<DenseTable>,
    pub series: Arc<Vec<Arc<DenseSeries>>>,
    pub block: i64,
}

enum Col {
    F64(Float64Builder),
    I64(Int64Builder),
    U64(UInt64Builder),
    Bool(BooleanBuilder),
    Str(StringBuilder),
}

impl Col {
    fn new(ty: FieldType) -> Col {
        match ty {
            FieldType::F64 => Col::F64(Float64Builder::new()),
            FieldType::I64 => Col::I64(Int64Builder::new()),
            FieldType::U64 => Col::U64(UInt64Builder::new()),
            FieldType::Bool => Col::Bool(BooleanBuilder::new()),
            FieldType::Str => Col::Str(StringBuilder::new()),
        }
    }

    /// Appends the cell at `off` of `img` (NULL when absent).
    fn push(&mut self, img: &[u8], off: usize, set: bool, field: &str) -> Result<()> {
        let eight = || <[u8; 8]>::try_from(&img[off..off + 8]).expect("8 bytes");
        match (self, set) {
            (Col::F64(b), true) => b.append_value(f64::from_le_bytes(eight())),
            (Col::I64(b), true) => b.append_value(i64::from_le_bytes(eight())),
            (Col::U64(b), true) => b.append_value(u64::from_le_bytes(eight())),
            (Col::Bool(b), true) => b.append_value(img[off] != 0),
            (Col::Str(b), true) => {
                let len = u16::from_le_bytes([img[off], img[off + 1]]) as usize;
                let s = img
                    .get(off + 2..off + 2 + len)
                    .and_then(|s| std::str::from_utf8(s).ok())
                    .ok_or_else(|| {
                        StorageError::Shared(format!(
                            "dense field {field:?}: a stored string is not valid"
                        ))
                    })?;
                b.append_value(s);
            }
            (Col::F64(b), false) => b.append_null(),
            (Col::I64(b), false) => b.append_null(),
            (Col::U64(b), false) => b.append_null(),
            (Col::Bool(b), false) => b.append_null(),
            (Col::Str(b), false) => b.append_null(),
        }
        Ok(())
    }

    fn finish(self) -> ArrayRef {
        match self {
            Col::F64(mut b) => Arc::new(b.finish()),
            Col::I64(mut b) => Arc::new(b.finish()),
            Col::U64(mut b) => Arc::new(b.finish()),
            Col::Bool(mut b) => Arc::new(b.finish()),
            Col::Str(mut b) => Arc::new(b.finish()),
        }
    }
}

/// Decodes slot images of the requested fields into a run.
pub(crate) struct RunBuilder {
    /// (spec position, byte offset, name) of each requested field.
    cells: Vec<(usize, usize, String)>,
    cols: Vec<Col>,
    fields: Vec<(String, FieldType)>,
    keys: Vec<Bytes>,
    ranks: Vec<u32>,
    times: Vec<i64>,
}

impl RunBuilder {
    pub fn new(table: &DenseTable, fields: &[(String, FieldType)]) -> Result<RunBuilder> {
        let offsets = field_offsets(&table.spec.fields);
        let mut cells = Vec::new();
        for (name, _) in fields {
            let i = table.spec.field_index(name).ok_or_else(|| {
                StorageError::Shared(format!("dense table has no field {name:?}"))
            })?;
            cells.push((i, offsets[i], name.clone()));
        }
        Ok(RunBuilder {
            cells,
            cols: fields.iter().map(|(_, t)| Col::new(*t)).collect(),
            fields: fields.to_vec(),
            keys: Vec::new(),
            ranks: Vec::new(),
            times: Vec::new(),
        })
    }

    /// Starts the rows of a series (keys must come in ascending order).
    pub fn series(&mut self, key: &Bytes) {
        debug_assert!(self.keys.last().is_none_or(|k| k < key));
        self.keys.push(key.clone());
    }

    /// Appends a row of the current series.
    pub fn push(&mut self, t: i64, img: &[u8]) -> Result<()> {
        self.ranks.push(self.keys.len() as u32 - 1);
        self.times.push(t);
        for ((i, off, name), col) in self.cells.iter().zip(&mut self.cols) {
            col.push(img, *off, present(img, *i), name)?;
        }
        Ok(())
    }

    /// Drops the current series when it got no rows.
    pub fn end_series(&mut self) {
        let rank = self.keys.len() as u32 - 1;
        if self.ranks.last() != Some(&rank) {
            self.keys.pop();
        }
    }

    pub fn finish(self) -> Result<SortedRun> {
        let n = self.times.len();
        let mut cols: Vec<ArrayRef> = vec![
            Arc::new(UInt32Array::from(self.ranks)),
            Arc::new(Int64Array::from(self.times)),
            Arc::new(UInt64Array::from(vec![0u64; n])),
        ];
        cols.extend(self.cols.into_iter().map(Col::finish));
        let batch = RecordBatch::try_new(run_schema(&self.fields), cols)?;
        Ok(SortedRun {
            keys: Arc::new(self.keys),
            batch,
        })
    }
}

impl DensePart {
    /// The part's rows within `time` as a run.
    pub fn read_run(
        &self,
        fields: &[(String, FieldType)],
        time: Option<(i64, i64)>,
    ) -> Result<SortedRun> {
        let end = self.block.saturating_add(self.table.spec.block_ns);
        let (s, e) = time.unwrap_or((i64::MIN, i64::MAX));
        let range = (s.max(self.block), e.min(end));
        let mut b = RunBuilder::new(&self.table, fields)?;
        if range.0 < range.1 {
            for series in self.series.iter() {
                b.series(&series.key);
                self.table
                    .read_range(series, range, &mut |t, img| b.push(t, img))?;
                b.end_series();
            }
        }
        b.finish()
    }
}

/// The newest row of each series as a run (one row per series that has any).
pub(crate) fn latest_run(
    table: &DenseTable,
    series: &[Arc<DenseSeries>],
    fields: &[(String, FieldType)],
) -> Result<SortedRun> {
    let mut b = RunBuilder::new(table, fields)?;
    for s in series {
        if let Some((t, img)) = table.latest(s)? {
            b.series(&s.key);
            b.push(t, &img)?;
        }
    }
    b.finish()
}
