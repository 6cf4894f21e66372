//! Field bounds: numeric comparisons a scan applies to the rows it read before it decodes
//! their tags (`WHERE usage_user > 90` keeps a tenth of the rows; their tag strings are then
//! made for that tenth only).
//!
//! Invariant: a bound keeps a superset of the rows its SQL comparison keeps, so the query
//! engine, which applies the exact comparison afterwards, gives the same answer with or
//! without it. Hence: values are compared as `f64` with `>` read as `>=` and `<` as `<=`
//! (an integer beyond 2^53 may round onto the literal), NaN is always kept (the engine's own
//! ordering of NaN decides), and a NULL value is dropped (a comparison with NULL is never
//! true). A bound on a field the scan does not read is ignored.

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray};
use arrow::compute::{cast, filter_record_batch};
use arrow::datatypes::{DataType, Float64Type, Int64Type, UInt64Type};
use tempora_model::FieldType;

use crate::error::Result;
use crate::read::run::SortedRun;

/// Which side of `value` a kept row's field lies on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoundOp {
    AtLeast,
    AtMost,
    Equal,
}

/// `field <op> value`, see the module header.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldBound {
    pub field: String,
    pub op: BoundOp,
    pub value: f64,
}

impl FieldBound {
    /// Whether a row whose field holds `x` is kept.
    pub fn keeps(&self, x: f64) -> bool {
        x.is_nan()
            || match self.op {
                BoundOp::AtLeast => x >= self.value,
                BoundOp::AtMost => x <= self.value,
                BoundOp::Equal => x == self.value,
            }
    }
}

impl std::fmt::Display for FieldBound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let op = match self.op {
            BoundOp::AtLeast => ">=",
            BoundOp::AtMost => "<=",
            BoundOp::Equal => "=",
        };
        write!(f, "{} {op} {}", self.field, self.value)
    }
}

/// The rows of `run` (over `fields`) every bound keeps.
pub fn filter_run(
    run: SortedRun,
    fields: &[(String, FieldType)],
    bounds: &[FieldBound],
) -> Result<SortedRun> {
    let Some(mask) = mask(&run.batch.columns()[3..], fields, bounds)? else {
        return Ok(run);
    };
    let mask = BooleanArray::from(mask);
    if mask.true_count() == mask.len() {
        return Ok(run);
    }
    Ok(SortedRun {
        keys: run.keys,
        batch: filter_record_batch(&run.batch, &mask)?,
    })
}

/// Which rows every bound keeps, over `columns` (one per entry of `fields`, equally long);
/// `None` when no bound names a numeric field among them.
pub fn mask(
    columns: &[ArrayRef],
    fields: &[(String, FieldType)],
    bounds: &[FieldBound],
) -> Result<Option<Vec<bool>>> {
    assert_eq!(columns.len(), fields.len(), "one column per field");
    let mut mask: Option<Vec<bool>> = None;
    for b in bounds {
        let Some(i) = fields.iter().position(|(n, t)| {
            *n == b.field && matches!(t, FieldType::F64 | FieldType::I64 | FieldType::U64)
        }) else {
            continue;
        };
        let col = &columns[i];
        let m = mask.get_or_insert_with(|| vec![true; col.len()]);
        let valid = |j: usize| col.is_valid(j);
        match col.data_type() {
            DataType::Float64 => keep_where(
                m,
                col.as_primitive::<Float64Type>().values(),
                valid,
                b,
                |x| x,
            ),
            DataType::Int64 => {
                keep_where(m, col.as_primitive::<Int64Type>().values(), valid, b, |x| {
                    x as f64
                })
            }
            DataType::UInt64 => keep_where(
                m,
                col.as_primitive::<UInt64Type>().values(),
                valid,
                b,
                |x| x as f64,
            ),
            _ => {
                let col = cast(col, &DataType::Float64)?;
                let v = col.as_primitive::<Float64Type>();
                keep_where(m, v.values(), |j| v.is_valid(j), b, |x| x);
            }
        }
    }
    Ok(mask)
}

/// A read's selection of a batch (the kept rows' `ranks`, `ranks[j]` that of the j-th kept
/// row, and their mask) narrowed to the rows the bounds also keep, over the batch's
/// `field_columns` (one per entry of `fields`).
pub fn narrow_selection(
    ranks: Vec<u32>,
    selection: BooleanArray,
    field_columns: &[ArrayRef],
    fields: &[(String, FieldType)],
    bounds: &[FieldBound],
) -> Result<(Vec<u32>, BooleanArray)> {
    let Some(keep) = mask(field_columns, fields, bounds)? else {
        return Ok((ranks, selection));
    };
    assert_eq!(selection.null_count(), 0, "a selection mask has no NULLs");
    let mut kept_ranks = Vec::new();
    let mut kept = vec![false; selection.len()];
    for (j, row) in selection.values().set_indices().enumerate() {
        if keep[row] {
            kept_ranks.push(ranks[j]);
            kept[row] = true;
        }
    }
    Ok((kept_ranks, BooleanArray::from(kept)))
}

/// Clears `m[j]` where the bound drops value `values[j]` (a NULL is dropped).
fn keep_where<T: Copy>(
    m: &mut [bool],
    values: &[T],
    valid: impl Fn(usize) -> bool,
    b: &FieldBound,
    to_f64: impl Fn(T) -> f64,
) {
    for (j, (k, &x)) in m.iter_mut().zip(values).enumerate() {
        *k = *k && b.keeps(to_f64(x)) && valid(j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_named_cases() {
        let b = |op, value| FieldBound {
            field: "v".into(),
            op,
            value,
        };
        let big = 9_007_199_254_740_993_i64; // 2^53 + 1, rounds to 2^53 as f64
        let cases: &[(&str, FieldBound, f64, bool)] = &[
            ("at least: above", b(BoundOp::AtLeast, 90.0), 95.0, true),
            (
                "at least: equal (SQL >)",
                b(BoundOp::AtLeast, 90.0),
                90.0,
                true,
            ),
            ("at least: below", b(BoundOp::AtLeast, 90.0), 89.9, false),
            ("at most: below", b(BoundOp::AtMost, 1.5), -3.0, true),
            ("at most: above", b(BoundOp::AtMost, 1.5), 1.6, false),
            ("equal", b(BoundOp::Equal, 4.0), 4.0, true),
            ("not equal", b(BoundOp::Equal, 4.0), 4.5, false),
            ("NaN kept", b(BoundOp::AtMost, 0.0), f64::NAN, true),
            ("infinity", b(BoundOp::AtLeast, 1e308), f64::INFINITY, true),
            (
                "an integer past 2^53 that SQL > keeps",
                b(BoundOp::AtLeast, 9_007_199_254_740_992.0),
                big as f64,
                true,
            ),
        ];
        for (name, bound, x, want) in cases {
            assert_eq!(bound.keeps(*x), *want, "{name}");
        }
    }
}
