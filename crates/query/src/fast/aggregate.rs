//! The fold of the fast path: rows (sorted by series, then time, as a region scan returns
//! them) into one aggregate state per group, and the groups into the result batch.
//!
//! A group is (bucket start, tag tuple). Rows of one series in one bucket are contiguous, so
//! the fold finds each such segment, looks its group up once, and folds every aggregate over
//! the segment's slice of the column: a hash lookup per (series, bucket), not per row.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, Float64Array, Int64Array, RecordBatch, StringArray,
    TimestampNanosecondArray, UInt64Array,
};
use arrow::compute::{SortColumn, SortOptions, lexsort_to_indices, take_record_batch};
use arrow::datatypes::{Float64Type, Int64Type, UInt64Type};
use tempora_model::FieldType;

use crate::functions::date_trunc::truncate;

use super::recognize::{AggFunc, BucketQuery, Output};

/// Why the fold gives up, so that DataFusion answers instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bail {
    /// A NaN under `min`/`max` (DataFusion's ordering of NaN is its own).
    NanInMinMax,
    /// An integer sum past its type's range.
    SumOverflow,
    /// -0.0 and 0.0 meeting under `min`/`max` (which one DataFusion keeps is its own).
    SignedZeros,
}

/// One aggregate's running state.
#[derive(Debug, Clone, Copy)]
enum Acc {
    I(Option<i64>),
    U(Option<u64>),
    F(Option<f64>),
    Avg { sum: f64, n: i64 },
    Count(i64),
}

/// One aggregate of the query: what it computes over which field (index into the fields
/// the fold is given).
#[derive(Debug, Clone, Copy)]
struct Agg {
    func: AggFunc,
    field: Option<(usize, FieldType)>,
}

impl Agg {
    fn start(&self) -> Acc {
        match (self.func, self.field) {
            (AggFunc::Count, _) | (_, None) => Acc::Count(0),
            (AggFunc::Avg, _) => Acc::Avg { sum: 0.0, n: 0 },
            (_, Some((_, FieldType::U64))) => Acc::U(None),
            (_, Some((_, FieldType::F64))) => Acc::F(None),
            (_, Some(_)) => Acc::I(None),
        }
    }
}

/// The groups of a query and their aggregate states.
pub struct Fold {
    bucket: Option<(i64, i64)>,
    aggs: Vec<Agg>,
    /// Tag tuples seen, by id.
    tuples: Vec<Vec<Option<String>>>,
    tuple_ids: HashMap<Vec<Option<String>>, u32>,
    /// (bucket start, tuple id) → group index.
    groups: HashMap<(i64, u32), usize>,
    keys: Vec<(i64, u32)>,
    /// `aggs.len()` states per group.
    states: Vec<Acc>,
}

impl Fold {
    /// An empty fold for `q`, whose aggregates read the fields `q.fields()` in that order.
    pub fn new(q: &BucketQuery) -> Self {
        let fields = q.fields();
        let aggs = q
            .outputs
            .iter()
            .filter_map(|o| match o {
                Output::Agg { func, field, .. } => Some(Agg {
                    func: *func,
                    field: field.as_ref().map(|(name, ty)| {
                        let i = fields.iter().position(|f| f == name).expect("listed");
                        (i, *ty)
                    }),
                }),
                _ => None,
            })
            .collect();
        let mut fold = Self {
            bucket: q.bucket,
            aggs,
            tuples: Vec::new(),
            tuple_ids: HashMap::new(),
            groups: HashMap::new(),
            keys: Vec::new(),
            states: Vec::new(),
        };
        if !q.grouped {
            // Without GROUP BY the result has its one row even when no row matches.
            let t = fold.tuple_id(Vec::new());
            fold.group((0, t));
        }
        fold
    }

    /// The id of a tag tuple (the grouped tags' values of a series, in `group_tags` order).
    pub fn tuple_id(&mut self, values: Vec<Option<String>>) -> u32 {
        if let Some(&id) = self.tuple_ids.get(&values) {
            return id;
        }
        let id = self.tuples.len() as u32;
        self.tuples.push(values.clone());
        self.tuple_ids.insert(values, id);
        id
    }

    fn group(&mut self, key: (i64, u32)) -> usize {
        if let Some(&g) = self.groups.get(&key) {
            return g;
        }
        let g = self.keys.len();
        self.keys.push(key);
        self.groups.insert(key, g);
        self.states.extend(self.aggs.iter().map(Agg::start));
        g
    }

    /// Groups so far.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Bytes the fold holds, roughly (for the query's memory limit).
    pub fn bytes(&self) -> usize {
        let per_group = 48 + self.aggs.len() * std::mem::size_of::<Acc>();
        self.keys.len() * per_group
            + self
                .tuples
                .iter()
                .flatten()
                .flatten()
                .map(String::len)
                .sum::<usize>()
    }

    /// Folds rows sorted by series rank, then time. `tuple_of_rank[r]` is the tag tuple id
    /// of rank `r`; `fields` are the columns of `BucketQuery::fields()`.
    pub fn add(
        &mut self,
        ranks: &[u32],
        times: &[i64],
        tuple_of_rank: &[u32],
        fields: &[ArrayRef],
    ) -> Result<(), Bail> {
        assert_eq!(ranks.len(), times.len(), "one time per row");
        assert!(
            fields.iter().all(|f| f.len() == ranks.len()),
            "one value per row"
        );
        let n = ranks.len();
        let mut a = 0;
        let mut last: Option<((i64, u32), usize)> = None;
        while a < n {
            let rank = ranks[a];
            let (start, end_time) = match self.bucket {
                Some(b) => {
                    let s = truncate(times[a], b);
                    (s, s.saturating_add(b.0))
                }
                None => (0, i64::MAX),
            };
            let mut b = a + 1;
            while b < n && ranks[b] == rank && times[b] < end_time {
                b += 1;
            }
            let key = (start, tuple_of_rank[rank as usize]);
            let g = match last {
                Some((k, g)) if k == key => g,
                _ => self.group(key),
            };
            last = Some((key, g));
            let width = self.aggs.len();
            for (k, agg) in self.aggs.iter().enumerate() {
                let acc = &mut self.states[g * width + k];
                let col = agg.field.map(|(i, _)| &fields[i]);
                fold_segment(acc, agg.func, col, a, b)?;
            }
            a = b;
        }
        Ok(())
    }

    /// The result: one row per group, in `q`'s order, at most `q.limit` rows.
    pub fn finish(self, q: &BucketQuery) -> arrow::error::Result<RecordBatch> {
        let schema = q.schema();
        let width = self.aggs.len();
        let mut cols: Vec<ArrayRef> = Vec::with_capacity(q.outputs.len());
        let mut agg_i = 0;
        for o in &q.outputs {
            cols.push(match o {
                Output::Bucket { .. } => Arc::new(
                    TimestampNanosecondArray::from_iter_values(self.keys.iter().map(|k| k.0))
                        .with_timezone("UTC"),
                ),
                Output::Tag { tag, .. } => Arc::new(StringArray::from_iter(
                    self.keys
                        .iter()
                        .map(|k| self.tuples[k.1 as usize][*tag].as_deref()),
                )),
                Output::Agg { .. } => {
                    let k = agg_i;
                    agg_i += 1;
                    let states = (0..self.keys.len()).map(|g| self.states[g * width + k]);
                    result_column(states, schema.field(cols.len()).data_type())
                }
            });
        }
        let batch = RecordBatch::try_new(schema, cols)?;
        let sorted = if q.order.is_empty() || batch.num_rows() < 2 {
            batch
        } else {
            let keys: Vec<SortColumn> = q
                .order
                .iter()
                .map(|k| SortColumn {
                    values: batch.column(k.column).clone(),
                    options: Some(SortOptions {
                        descending: !k.asc,
                        nulls_first: k.nulls_first,
                    }),
                })
                .collect();
            let idx = lexsort_to_indices(&keys, q.limit)?;
            take_record_batch(&batch, &idx)?
        };
        Ok(match q.limit {
            Some(l) if l < sorted.num_rows() => sorted.slice(0, l),
            _ => sorted,
        })
    }
}

/// The output column of one aggregate over all groups.
fn result_column(states: impl Iterator<Item = Acc>, ty: &arrow::datatypes::DataType) -> ArrayRef {
    use arrow::datatypes::DataType as D;
    match ty {
        D::Int64 => Arc::new(Int64Array::from_iter(states.map(|s| match s {
            Acc::I(v) => v,
            Acc::Count(c) => Some(c),
            other => unreachable!("an Int64 result from {other:?}"),
        }))),
        D::UInt64 => Arc::new(UInt64Array::from_iter(states.map(|s| match s {
            Acc::U(v) => v,
            other => unreachable!("a UInt64 result from {other:?}"),
        }))),
        D::Float64 => Arc::new(Float64Array::from_iter(states.map(|s| match s {
            Acc::F(v) => v,
            Acc::Avg { sum, n } => (n > 0).then(|| sum / n as f64),
            other => unreachable!("a Float64 result from {other:?}"),
        }))),
        other => unreachable!("aggregate result type {other}"),
    }
}

/// Folds rows `a..b` of `col` (`None`: `count(*)`) into `acc`.
fn fold_segment(
    acc: &mut Acc,
    func: AggFunc,
    col: Option<&ArrayRef>,
    a: usize,
    b: usize,
) -> Result<(), Bail> {
    let Some(col) = col else {
        if let Acc::Count(c) = acc {
            *c += (b - a) as i64;
        }
        return Ok(());
    };
    let slice = col.slice(a, b - a);
    if let Acc::Count(c) = acc {
        *c += (slice.len() - slice.null_count()) as i64;
        return Ok(());
    }
    if let Acc::Avg { sum, n } = acc {
        let (s, k) = match slice.data_type() {
            arrow::datatypes::DataType::Int64 => sum_f64(
                slice
                    .as_primitive::<Int64Type>()
                    .iter()
                    .map(|v| v.map(|x| x as f64)),
            ),
            arrow::datatypes::DataType::UInt64 => sum_f64(
                slice
                    .as_primitive::<UInt64Type>()
                    .iter()
                    .map(|v| v.map(|x| x as f64)),
            ),
            _ => sum_f64(slice.as_primitive::<Float64Type>().iter()),
        };
        *sum += s;
        *n += k;
        return Ok(());
    }
    match acc {
        Acc::I(v) => {
            let it = slice.as_primitive::<Int64Type>().iter().flatten();
            *v = combine_int(*v, it, func, |x, y| x.checked_add(y))?;
        }
        Acc::U(v) => {
            let it = slice.as_primitive::<UInt64Type>().iter().flatten();
            *v = combine_int(*v, it, func, |x, y| x.checked_add(y))?;
        }
        Acc::F(v) => {
            for x in slice.as_primitive::<Float64Type>().iter().flatten() {
                *v = Some(match (func, *v) {
                    (AggFunc::Max | AggFunc::Min, _) if x.is_nan() => {
                        return Err(Bail::NanInMinMax);
                    }
                    (AggFunc::Max | AggFunc::Min, Some(y))
                        if x == 0.0 && y == 0.0 && x.is_sign_negative() != y.is_sign_negative() =>
                    {
                        return Err(Bail::SignedZeros);
                    }
                    (_, None) => x,
                    (AggFunc::Max, Some(y)) => y.max(x),
                    (AggFunc::Min, Some(y)) => y.min(x),
                    (_, Some(y)) => y + x,
                });
            }
        }
        Acc::Avg { .. } | Acc::Count(_) => unreachable!("handled above"),
    }
    Ok(())
}

fn sum_f64(values: impl Iterator<Item = Option<f64>>) -> (f64, i64) {
    values.flatten().fold((0.0, 0), |(s, n), x| (s + x, n + 1))
}

/// `max`, `min` or `sum` of integers into a running value; a sum past the type's range bails.
fn combine_int<T: Ord + Copy>(
    mut v: Option<T>,
    values: impl Iterator<Item = T>,
    func: AggFunc,
    add: impl Fn(T, T) -> Option<T>,
) -> Result<Option<T>, Bail> {
    for x in values {
        v = Some(match (func, v) {
            (_, None) => x,
            (AggFunc::Max, Some(y)) => y.max(x),
            (AggFunc::Min, Some(y)) => y.min(x),
            (_, Some(y)) => add(y, x).ok_or(Bail::SumOverflow)?,
        });
    }
    Ok(v)
}
