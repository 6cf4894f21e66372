//! A training query's rows as series: the time column, the value column and the key columns
//! chosen by name and type, rows grouped by key and sorted by time.
//!
//! - time: the column named `time`, else the only timestamp column;
//! - value: the `value` option, else the only numeric column that is not the time;
//! - key: every other column, in the query's order, as text (NULL stays NULL).
//!
//! Every refusal names the columns and their types.

use std::collections::HashMap;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Float64Type, SchemaRef, TimeUnit, TimestampNanosecondType};
use tempora_ml::model::train::Input;
use tempora_ml::model::{SeriesInput, SeriesKey};

use crate::error::{QueryError, Result};

fn bad(msg: String) -> QueryError {
    QueryError::InvalidParameter(format!("CREATE MODEL: {msg}"))
}

fn describe(schema: &SchemaRef) -> String {
    schema
        .fields()
        .iter()
        .map(|f| format!("{} {}", f.name(), f.data_type()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Which columns are the time, the value and the key.
pub fn columns(schema: &SchemaRef, value: Option<&str>) -> Result<(usize, usize, Vec<usize>)> {
    let fields = schema.fields();
    let is_time = |t: &DataType| matches!(t, DataType::Timestamp(_, _));
    let time = fields
        .iter()
        .position(|f| f.name() == "time" && is_time(f.data_type()))
        .or_else(|| {
            let ts: Vec<usize> = (0..fields.len())
                .filter(|&i| is_time(fields[i].data_type()))
                .collect();
            (ts.len() == 1).then(|| ts[0])
        })
        .ok_or_else(|| {
            bad(format!(
                "the query needs one timestamp column named time (it gives {})",
                describe(schema)
            ))
        })?;
    let value = match value {
        Some(name) => {
            let i = fields
                .iter()
                .position(|f| f.name() == name)
                .ok_or_else(|| {
                    bad(format!(
                        "value column {name:?} is not in the query's columns ({})",
                        describe(schema)
                    ))
                })?;
            if !fields[i].data_type().is_numeric() {
                return Err(bad(format!(
                    "value column {name:?} is {}, not numeric",
                    fields[i].data_type()
                )));
            }
            i
        }
        None => {
            let numeric: Vec<usize> = (0..fields.len())
                .filter(|&i| i != time && fields[i].data_type().is_numeric())
                .collect();
            match numeric.as_slice() {
                [i] => *i,
                [] => {
                    return Err(bad(format!(
                        "the query gives no numeric value column ({}); a model learns a numeric field",
                        describe(schema)
                    )));
                }
                _ => {
                    return Err(bad(format!(
                        "the query gives several numeric columns ({}); name the one to learn with WITH (value = '...')",
                        describe(schema)
                    )));
                }
            }
        }
    };
    let keys = (0..fields.len())
        .filter(|&i| i != time && i != value)
        .collect();
    Ok((time, value, keys))
}

/// The series of `batches` (all of `schema`).
pub fn series(schema: &SchemaRef, batches: &[RecordBatch], value: Option<&str>) -> Result<Input> {
    let (t, v, keys) = columns(schema, value)?;
    let mut by_key: HashMap<SeriesKey, SeriesInput> = HashMap::new();
    let mut rows = 0u64;
    for b in batches {
        let times = cast(
            b.column(t),
            &DataType::Timestamp(TimeUnit::Nanosecond, None),
        )?;
        let times = times.as_primitive::<TimestampNanosecondType>();
        let values = cast(b.column(v), &DataType::Float64)?;
        let values = values.as_primitive::<Float64Type>();
        let key_cols = keys
            .iter()
            .map(|&k| cast(b.column(k), &DataType::Utf8))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        for r in 0..b.num_rows() {
            if times.is_null(r) {
                continue;
            }
            let key: SeriesKey = key_cols
                .iter()
                .map(|c| c.as_string::<i32>())
                .map(|c| c.is_valid(r).then(|| c.value(r).to_string()))
                .collect();
            let s = by_key.entry(key).or_default();
            s.times.push(times.value(r));
            s.values.push(if values.is_valid(r) {
                values.value(r)
            } else {
                f64::NAN
            });
            rows += 1;
        }
    }
    let mut series: Vec<(SeriesKey, SeriesInput)> = by_key.into_iter().collect();
    series.sort_by(|a, b| a.0.cmp(&b.0));
    for (_, s) in &mut series {
        if s.times.windows(2).any(|w| w[0] > w[1]) {
            let mut idx: Vec<usize> = (0..s.times.len()).collect();
            idx.sort_by_key(|&i| s.times[i]);
            s.times = idx.iter().map(|&i| s.times[i]).collect();
            s.values = idx.iter().map(|&i| s.values[i]).collect();
        }
    }
    Ok(Input {
        key_columns: keys
            .iter()
            .map(|&k| schema.field(k).name().clone())
            .collect(),
        value_column: schema.field(v).name().clone(),
        series,
        rows,
    })
}

/// Bytes the input holds (an estimate, for the memory budget).
pub fn bytes(input: &Input) -> usize {
    input
        .series
        .iter()
        .map(|(k, s)| {
            16 * s.times.len()
                + k.iter()
                    .map(|v| 24 + v.as_ref().map_or(0, String::len))
                    .sum::<usize>()
                + 64
        })
        .sum()
}
