//! Cold blocks: a dense table declared with `cold_after = '30d'` converts each series' blocks
//! that ended that long ago into a compressed Parquet file (`{block}.parquet`: `time` as
//! i64 ns, then the fields, zstd), the columnar layout of ordinary tables.
//!
//! The trade-off, documented in `docs/format/dense-files.md`: a cold block takes a fraction
//! of the disk and scans faster, but its points are read-only — O(1) updates end there.
//! Writes and updates of points before the table's cold watermark (the newest converted
//! block's end) are refused naming it; a delete must cover whole cold blocks (or retention
//! drops them); a point read of a cold block reads the file.
//!
//! Conversion runs under the table's log lock after a checkpoint, so no log record names a
//! block being converted. A block's rows are written to `{block}.parquet.tmp`, synced,
//! renamed, the directory synced, then the block file removed: a crash leaves the hot block,
//! or both (the cold file wins when the table is opened, and the hot one is removed).

use std::path::Path;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray,
    UInt64Array,
};
use arrow::datatypes::{DataType, Field, Float64Type, Int64Type, Schema, SchemaRef, UInt64Type};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use tempora_model::{FieldType, FieldValue};

use super::slot;
use super::table::{DenseSeries, DenseTable};
use crate::error::{Result, StorageError, io_err};
use crate::read::run::arrow_type;

fn perr(path: &Path, e: impl std::fmt::Display) -> StorageError {
    StorageError::Corrupt {
        path: path.display().to_string(),
        reason: format!("cold dense block: {e}"),
    }
}

/// The schema of a cold block file: `time`, then the fields.
fn schema(t: &DenseTable) -> SchemaRef {
    let mut f = vec![Field::new("time", DataType::Int64, false)];
    f.extend(
        t.spec
            .fields
            .iter()
            .map(|x| Field::new(&x.name, arrow_type(x.ty), true)),
    );
    Arc::new(Schema::new(f))
}

/// A cold block's rows: times and, per field, its values.
pub(crate) struct ColdRows {
    pub times: Vec<i64>,
    pub cols: Vec<ArrayRef>,
}

impl ColdRows {
    /// Row `i`'s values, one per field.
    pub fn values(&self, i: usize) -> Vec<Option<FieldValue>> {
        self.cols
            .iter()
            .map(|c| {
                if c.is_null(i) {
                    return None;
                }
                Some(match c.data_type() {
                    DataType::Float64 => FieldValue::F64(c.as_primitive::<Float64Type>().value(i)),
                    DataType::Int64 => FieldValue::I64(c.as_primitive::<Int64Type>().value(i)),
                    DataType::UInt64 => FieldValue::U64(c.as_primitive::<UInt64Type>().value(i)),
                    DataType::Boolean => FieldValue::Bool(c.as_boolean().value(i)),
                    _ => FieldValue::Str(c.as_string::<i32>().value(i).to_string()),
                })
            })
            .collect()
    }

    /// Row `i` as a slot image.
    pub fn image(&self, t: &DenseTable, i: usize) -> Result<Vec<u8>> {
        let v = self.values(i);
        slot::encode(&t.spec.fields, &v).map_err(|e| StorageError::Shared(e.to_string()))
    }
}

impl DenseTable {
    /// Converts the blocks that ended at or before `cutoff` (every series) into cold files;
    /// returns how many.
    pub fn convert_cold(&self, cutoff: i64) -> Result<usize> {
        let mut n = 0;
        let _writers = self.checkpoint_and_hold()?;
        for s in self.select(&tempora_index::Matcher::All) {
            for b in s.blocks() {
                if !s.is_cold(b) && b.saturating_add(self.spec.block_ns) <= cutoff {
                    self.convert_block(&s, b)?;
                    n += 1;
                }
            }
        }
        Ok(n)
    }

    fn convert_block(&self, s: &DenseSeries, block: i64) -> Result<()> {
        let mut times = Vec::new();
        let mut images: Vec<Vec<u8>> = Vec::new();
        let end = block.saturating_add(self.spec.block_ns);
        self.read_blocks(s, (block, end), &mut |t, img| {
            times.push(t);
            images.push(img.to_vec());
            Ok(())
        })?;
        let mut cols: Vec<ArrayRef> = vec![Arc::new(Int64Array::from(times))];
        for (i, f) in self.spec.fields.iter().enumerate() {
            let vals = images.iter().map(|img| {
                slot::decode(&self.spec.fields, img)
                    .ok()
                    .and_then(|r| match r {
                        slot::Slot::Row(mut v) => v[i].take(),
                        slot::Slot::Hole => None,
                    })
            });
            cols.push(match f.ty {
                FieldType::F64 => Arc::new(
                    vals.map(|v| match v {
                        Some(FieldValue::F64(x)) => Some(x),
                        _ => None,
                    })
                    .collect::<Float64Array>(),
                ),
                FieldType::I64 => Arc::new(
                    vals.map(|v| match v {
                        Some(FieldValue::I64(x)) => Some(x),
                        _ => None,
                    })
                    .collect::<Int64Array>(),
                ),
                FieldType::U64 => Arc::new(
                    vals.map(|v| match v {
                        Some(FieldValue::U64(x)) => Some(x),
                        _ => None,
                    })
                    .collect::<UInt64Array>(),
                ),
                FieldType::Bool => Arc::new(
                    vals.map(|v| match v {
                        Some(FieldValue::Bool(x)) => Some(x),
                        _ => None,
                    })
                    .collect::<BooleanArray>(),
                ),
                FieldType::Str => Arc::new(
                    vals.map(|v| match v {
                        Some(FieldValue::Str(x)) => Some(x),
                        _ => None,
                    })
                    .collect::<StringArray>(),
                ),
            });
        }
        let path = s.cold_path(block);
        let tmp = path.with_extension("parquet.tmp");
        let batch = RecordBatch::try_new(schema(self), cols)?;
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::try_new(3).expect("level 3")))
            .build();
        let file = std::fs::File::create(&tmp)
            .map_err(|e| io_err("create cold dense block", tmp.display().to_string(), e))?;
        let mut w =
            ArrowWriter::try_new(file, batch.schema(), Some(props)).map_err(|e| perr(&tmp, e))?;
        w.write(&batch).map_err(|e| perr(&tmp, e))?;
        let file = w.into_inner().map_err(|e| perr(&tmp, e))?;
        file.sync_all()
            .map_err(|e| io_err("sync cold dense block", tmp.display().to_string(), e))?;
        std::fs::rename(&tmp, &path)
            .map_err(|e| io_err("rename cold dense block", path.display().to_string(), e))?;
        s.set_cold(block);
        self.remove_block(s, block)?;
        self.sync_dirs()?;
        self.raise_cold_watermark(end);
        Ok(())
    }

    /// Reads the cold file of `series` at `block`.
    pub(crate) fn read_cold(&self, s: &DenseSeries, block: i64) -> Result<ColdRows> {
        let path = s.cold_path(block);
        let file = std::fs::File::open(&path)
            .map_err(|e| io_err("open cold dense block", path.display().to_string(), e))?;
        let reader = ParquetRecordBatchReaderBuilder::try_new(file)
            .map_err(|e| perr(&path, e))?
            .build()
            .map_err(|e| perr(&path, e))?;
        let mut times = Vec::new();
        let mut parts: Vec<Vec<ArrayRef>> = vec![Vec::new(); self.spec.fields.len()];
        for b in reader {
            let b = b.map_err(|e| perr(&path, e))?;
            if b.num_columns() != self.spec.fields.len() + 1 {
                return Err(perr(&path, "its columns are not the table's fields"));
            }
            times.extend(
                b.column(0)
                    .as_primitive::<Int64Type>()
                    .values()
                    .iter()
                    .copied(),
            );
            for (i, p) in parts.iter_mut().enumerate() {
                p.push(b.column(i + 1).clone());
            }
        }
        let cols = parts
            .into_iter()
            .zip(&self.spec.fields)
            .map(|(p, f)| {
                let refs: Vec<&dyn Array> = p.iter().map(|a| a.as_ref()).collect();
                if refs.is_empty() {
                    return Ok(arrow::array::new_empty_array(&arrow_type(f.ty)));
                }
                Ok(arrow::compute::concat(&refs)?)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(ColdRows { times, cols })
    }
}
