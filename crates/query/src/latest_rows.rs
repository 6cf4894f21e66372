//! Keeping the newest row per key of a batch of cached latest rows (see `rules::latest`): the
//! step that lets `DISTINCT ON (tags) … ORDER BY tags, time DESC` skip aggregation.
//!
//! Keys compare as `DISTINCT ON` compares them: NULLs are equal to each other. Of rows with
//! the same key and the same newest time, the first in the batch is kept (`DISTINCT ON`
//! leaves the choice among such ties open).

use std::collections::HashMap;
use std::collections::hash_map::Entry;

use arrow::array::{AsArray, RecordBatch, UInt32Array};
use arrow::compute::take_record_batch;
use arrow::datatypes::TimestampNanosecondType;
use arrow::row::{RowConverter, SortField};
use datafusion::error::Result;
use tempora_model::TIME_COLUMN;

/// The rows of `batch` that are the newest (greatest `time`) of their value of `keys`, in
/// the order their keys first appear.
pub fn newest_per_key(batch: &RecordBatch, keys: &[String]) -> Result<RecordBatch> {
    let cols = keys
        .iter()
        .map(|k| Ok(batch.column(batch.schema().index_of(k)?).clone()))
        .collect::<Result<Vec<_>>>()?;
    let converter = RowConverter::new(
        cols.iter()
            .map(|c| SortField::new(c.data_type().clone()))
            .collect(),
    )?;
    let rows = converter.convert_columns(&cols)?;
    let time = batch
        .column(batch.schema().index_of(TIME_COLUMN)?)
        .as_primitive::<TimestampNanosecondType>()
        .values();
    let mut newest: HashMap<_, usize> = HashMap::with_capacity(batch.num_rows());
    let mut order = Vec::new();
    for i in 0..batch.num_rows() {
        match newest.entry(rows.row(i)) {
            Entry::Vacant(v) => {
                v.insert(order.len());
                order.push(i as u32);
            }
            Entry::Occupied(o) => {
                let slot = &mut order[*o.get()];
                if time[i] > time[*slot as usize] {
                    *slot = i as u32;
                }
            }
        }
    }
    if order.len() == batch.num_rows() {
        // Every row had a key of its own (the last-value cache's usual answer): all rows, in
        // their order, with no copy.
        return Ok(batch.clone());
    }
    Ok(take_record_batch(batch, &UInt32Array::from(order))?)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{ArrayRef, Float64Array, StringArray, TimestampNanosecondArray};
    use arrow::util::pretty::pretty_format_batches;

    use super::*;

    fn batch(rows: &[(Option<&str>, &str, i64, f64)]) -> RecordBatch {
        let host: ArrayRef = Arc::new(rows.iter().map(|r| r.0).collect::<StringArray>());
        let dc: ArrayRef = Arc::new(rows.iter().map(|r| Some(r.1)).collect::<StringArray>());
        let time: ArrayRef = Arc::new(
            TimestampNanosecondArray::from(rows.iter().map(|r| r.2).collect::<Vec<_>>())
                .with_timezone("UTC"),
        );
        let v: ArrayRef = Arc::new(Float64Array::from(
            rows.iter().map(|r| r.3).collect::<Vec<_>>(),
        ));
        RecordBatch::try_from_iter([("host", host), ("dc", dc), ("time", time), ("v", v)]).unwrap()
    }

    /// The kept rows as (host, dc, v) text.
    fn kept(b: &RecordBatch, keys: &[&str]) -> Vec<String> {
        let keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
        let out = newest_per_key(b, &keys).unwrap();
        let text = pretty_format_batches(&[out]).unwrap().to_string();
        text.lines()
            .skip(3)
            .filter(|l| l.starts_with('|'))
            .map(|l| {
                let c: Vec<&str> = l.split('|').map(str::trim).collect();
                format!("{}/{}/{}", c[1], c[2], c[4])
            })
            .collect()
    }

    #[test]
    fn named_cases() {
        let two_series_one_host = batch(&[
            (Some("a"), "x", 10, 1.0),
            (Some("a"), "y", 20, 2.0),
            (Some("b"), "x", 5, 3.0),
        ]);
        let cases: Vec<(&str, RecordBatch, Vec<&str>, Vec<&str>)> = vec![
            (
                "the newer of two series sharing a host wins",
                two_series_one_host.clone(),
                vec!["host"],
                vec!["a/y/2.0", "b/x/3.0"],
            ),
            (
                "keyed by every tag, every row stays",
                two_series_one_host.clone(),
                vec!["host", "dc"],
                vec!["a/x/1.0", "a/y/2.0", "b/x/3.0"],
            ),
            (
                "an older row after a newer one does not replace it",
                batch(&[(Some("a"), "y", 20, 2.0), (Some("a"), "x", 10, 1.0)]),
                vec!["host"],
                vec!["a/y/2.0"],
            ),
            (
                "a tie on time keeps the first row",
                batch(&[(Some("a"), "x", 10, 1.0), (Some("a"), "y", 10, 2.0)]),
                vec!["host"],
                vec!["a/x/1.0"],
            ),
            (
                "NULL keys are one key",
                batch(&[
                    (None, "x", 10, 1.0),
                    (None, "y", 30, 2.0),
                    (Some("a"), "z", 1, 3.0),
                ]),
                vec!["host"],
                vec!["/y/2.0", "a/z/3.0"],
            ),
            (
                "an empty batch stays empty",
                batch(&[]),
                vec!["host"],
                vec![],
            ),
        ];
        for (name, b, keys, want) in cases {
            assert_eq!(kept(&b, &keys), want, "{name}");
        }
    }

    #[test]
    fn an_unknown_key_column_is_an_error() {
        let b = batch(&[(Some("a"), "x", 1, 1.0)]);
        assert!(newest_per_key(&b, &["nope".to_string()]).is_err());
    }
}
