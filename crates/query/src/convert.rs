//! Arrow record batches to engine row batches (for `INSERT … SELECT` and imports).

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{DataType, Float64Type, Int64Type, TimeUnit, UInt64Type};
use tempora_model::{FieldValue, RowBatch, RowBatchBuilder, Timestamp};

use crate::error::{QueryError, Result};

/// Converts `batch` into rows of `table`: columns named in `tags` are tags, `time` is the
/// timestamp (a timestamp of any unit, or an integer of nanoseconds), the rest are fields.
/// A NULL field is left out of its row; a row with no field or a NULL time is an error that
/// names its row.
pub fn record_batch_to_rows(table: &str, tags: &[String], batch: &RecordBatch) -> Result<RowBatch> {
    let schema = batch.schema();
    let time_idx = schema
        .index_of(tempora_model::TIME_COLUMN)
        .map_err(|_| QueryError::Insert("the column `time` is required".into()))?;
    let times = time_nanos(batch.column(time_idx))?;
    let mut b = RowBatchBuilder::new(table)?;
    let mut tag_buf: Vec<(&str, String)> = Vec::new();
    for (row, time) in times.iter().enumerate() {
        tag_buf.clear();
        let mut fields: Vec<(&str, FieldValue)> = Vec::new();
        for (i, f) in schema.fields().iter().enumerate() {
            let col = batch.column(i);
            if i == time_idx || col.is_null(row) {
                continue;
            }
            if tags.iter().any(|t| t == f.name()) {
                tag_buf.push((f.name(), string_value(col, row)?));
            } else {
                fields.push((f.name(), field_value(col, row, f.name())?));
            }
        }
        let t = time.ok_or_else(|| QueryError::Insert(format!("row {}: time is NULL", row + 1)))?;
        let tag_refs: Vec<(&str, &str)> = tag_buf.iter().map(|(k, v)| (*k, v.as_str())).collect();
        b.push(&tag_refs, &fields, Timestamp(t))
            .map_err(|e| QueryError::Insert(format!("row {}: {e}", row + 1)))?;
    }
    Ok(b.finish())
}

fn time_nanos(col: &dyn Array) -> Result<Vec<Option<i64>>> {
    let scale = |mul: i64, v: Option<i64>| v.and_then(|x| x.checked_mul(mul));
    Ok(match col.data_type() {
        DataType::Timestamp(unit, _) => {
            let mul = match unit {
                TimeUnit::Second => 1_000_000_000,
                TimeUnit::Millisecond => 1_000_000,
                TimeUnit::Microsecond => 1_000,
                TimeUnit::Nanosecond => 1,
            };
            let c = arrow::compute::cast(col, &DataType::Int64)?;
            c.as_primitive::<Int64Type>()
                .iter()
                .map(|v| scale(mul, v))
                .collect()
        }
        DataType::Int64 => col.as_primitive::<Int64Type>().iter().collect(),
        other => {
            return Err(QueryError::Insert(format!(
                "the column `time` must be a timestamp or nanoseconds as an integer, not {other}"
            )));
        }
    })
}

fn string_value(col: &dyn Array, row: usize) -> Result<String> {
    let c = arrow::compute::cast(&col.slice(row, 1), &DataType::Utf8)?;
    Ok(c.as_string::<i32>().value(0).to_string())
}

fn field_value(col: &dyn Array, row: usize, name: &str) -> Result<FieldValue> {
    Ok(match col.data_type() {
        DataType::Float64 | DataType::Float32 | DataType::Float16 | DataType::Decimal128(..) => {
            let c = arrow::compute::cast(&col.slice(row, 1), &DataType::Float64)?;
            FieldValue::F64(c.as_primitive::<Float64Type>().value(0))
        }
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => {
            let c = arrow::compute::cast(&col.slice(row, 1), &DataType::Int64)?;
            FieldValue::I64(c.as_primitive::<Int64Type>().value(0))
        }
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => {
            let c = arrow::compute::cast(&col.slice(row, 1), &DataType::UInt64)?;
            FieldValue::U64(c.as_primitive::<UInt64Type>().value(0))
        }
        DataType::Boolean => FieldValue::Bool(col.as_boolean().value(row)),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            FieldValue::Str(string_value(col, row)?)
        }
        other => {
            return Err(QueryError::Insert(format!(
                "column {name:?}: values of type {other} cannot be stored"
            )));
        }
    })
}
