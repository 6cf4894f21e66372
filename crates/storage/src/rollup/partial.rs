//! [`PartialRun`]: per (series, bucket) aggregate states of a table's numeric fields, the form
//! in which rollups are computed, stored and merged. Pure functions over values.
//!
//! Columns (the in-memory form; files swap `__rank` for `__primary_key`,
//! docs/format/rollup-files.md): `__rank` (u32 index into `keys`), `time` (the bucket's first
//! instant, i64 ns), `__first_time` and `__last_time` (the first and last row of the bucket,
//! whatever fields it holds), `__rows` (u64), then for each numeric field `f`, in table
//! order, [`STATS`]: `f_count` (u64, non-NULL values), `f_sum`, `f_min`, `f_max`, `f_first`,
//! `f_first_time`, `f_last`, `f_last_time` (NULL when `f_count` is 0).
//!
//! Invariants:
//! - Rows are sorted by (rank, bucket) and each (rank, bucket) appears once.
//! - Every statistic is what SQL computes over the bucket's raw rows: NULLs skipped, integer
//!   sums wrap, floats ordered totally (NaN above every number), as the query's states do.
//! - Combining partial rows of one (series, bucket) is exact only when their rows are
//!   distinct points: [`merge`] combines rows whose `[__first_time, __last_time]` do not
//!   overlap and reports the buckets where they do (a point may be in both).

use std::cmp::Ordering;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, ArrowPrimitiveType, AsArray, Int64Array, PrimitiveArray, RecordBatch,
    UInt32Array, UInt64Array,
};
use arrow::compute::{concat_batches, take};
use arrow::datatypes::{
    DataType, Field, Float64Type, Int64Type, Schema, SchemaRef, UInt32Type, UInt64Type,
};
use bytes::Bytes;
use tempora_model::{FieldType, TIME_COLUMN};

use crate::error::Result;
use crate::read::run::{RANK_COLUMN, SortedRun, arrow_type};

/// The statistics kept per field, in column order.
pub const STATS: [&str; 8] = [
    "count",
    "sum",
    "min",
    "max",
    "first",
    "first_time",
    "last",
    "last_time",
];
pub const FIRST_TIME_COLUMN: &str = "__first_time";
pub const LAST_TIME_COLUMN: &str = "__last_time";
pub const ROWS_COLUMN: &str = "__rows";
/// Columns before the first field's statistics.
pub const LEAD: usize = 5;

/// Per (series, bucket) states, sorted by (rank, bucket).
#[derive(Debug, Clone)]
pub struct PartialRun {
    pub keys: Arc<Vec<Bytes>>,
    pub batch: RecordBatch,
}

/// The fields a rollup keeps: the numeric ones.
pub fn rollup_fields(fields: &[(String, FieldType)]) -> Vec<(String, FieldType)> {
    fields
        .iter()
        .filter(|(_, t)| matches!(t, FieldType::F64 | FieldType::I64 | FieldType::U64))
        .cloned()
        .collect()
}

/// The column of statistic `stat` (an entry of [`STATS`]) of field `f`.
pub fn stat_column(f: &str, stat: &str) -> String {
    format!("{f}_{stat}")
}

/// The schema of a partial run over `fields` (numeric fields only).
pub fn partial_schema(fields: &[(String, FieldType)]) -> SchemaRef {
    let mut f = vec![
        Field::new(RANK_COLUMN, DataType::UInt32, false),
        Field::new(TIME_COLUMN, DataType::Int64, false),
        Field::new(FIRST_TIME_COLUMN, DataType::Int64, false),
        Field::new(LAST_TIME_COLUMN, DataType::Int64, false),
        Field::new(ROWS_COLUMN, DataType::UInt64, false),
    ];
    for (name, ty) in fields {
        for stat in STATS {
            let dt = match stat {
                "count" => DataType::UInt64,
                "first_time" | "last_time" => DataType::Int64,
                _ => arrow_type(*ty),
            };
            f.push(Field::new(stat_column(name, stat), dt, stat != "count"));
        }
    }
    Arc::new(Schema::new(f))
}

impl PartialRun {
    pub fn num_rows(&self) -> usize {
        self.batch.num_rows()
    }
    pub fn ranks(&self) -> &[u32] {
        self.batch.column(0).as_primitive::<UInt32Type>().values()
    }
    pub fn buckets(&self) -> &[i64] {
        self.batch.column(1).as_primitive::<Int64Type>().values()
    }
    pub fn first_times(&self) -> &[i64] {
        self.batch.column(2).as_primitive::<Int64Type>().values()
    }
    pub fn last_times(&self) -> &[i64] {
        self.batch.column(3).as_primitive::<Int64Type>().values()
    }
    pub fn rows(&self) -> &[u64] {
        self.batch.column(4).as_primitive::<UInt64Type>().values()
    }
    /// Statistic `s` (index into [`STATS`]) of the `f`-th field.
    pub fn stat(&self, f: usize, s: usize) -> &ArrayRef {
        self.batch.column(LEAD + f * STATS.len() + s)
    }

    /// The rows `keep` selects, with every key kept.
    pub fn filter(&self, keep: &arrow::array::BooleanArray) -> Result<PartialRun> {
        Ok(PartialRun {
            keys: self.keys.clone(),
            batch: arrow::compute::filter_record_batch(&self.batch, keep)?,
        })
    }
}

/// The first instant of the bucket of width `res` (from the epoch) holding `t`.
pub fn bucket_of(t: i64, res: i64) -> i64 {
    t.div_euclid(res) * res
}

/// Computes the partial run of `run` (sorted by series then time, one row per point) at
/// resolution `res`; `fields` are the run's fields, of which the numeric ones are kept.
pub fn from_run(run: &SortedRun, fields: &[(String, FieldType)], res: i64) -> Result<PartialRun> {
    assert!(res > 0, "a resolution is positive");
    let (ranks, times) = (run.ranks(), run.times());
    let segs = segments(ranks, |i| bucket_of(times[i], res));
    let lead = lead_columns(
        &segs,
        ranks,
        |i| bucket_of(times[i], res),
        |a, b| (times[a], times[b - 1], (b - a) as u64),
    );
    let mut cols = lead;
    for (i, (_, ty)) in fields.iter().enumerate() {
        if !matches!(ty, FieldType::F64 | FieldType::I64 | FieldType::U64) {
            continue;
        }
        let col = run.batch.column(3 + i);
        let rows = RowSource { col, times };
        cols.extend(match ty {
            FieldType::F64 => stats_of::<Float64Type>(&segs, &rows, |a, b| a + b, f64::total_cmp),
            FieldType::I64 => stats_of::<Int64Type>(&segs, &rows, i64::wrapping_add, Ord::cmp),
            _ => stats_of::<UInt64Type>(&segs, &rows, u64::wrapping_add, Ord::cmp),
        });
    }
    let schema = partial_schema(&rollup_fields(fields));
    Ok(PartialRun {
        keys: run.keys.clone(),
        batch: RecordBatch::try_new(schema, cols)?,
    })
}

/// Rows `a..b` of equal rank and bucket, in order.
fn segments(ranks: &[u32], bucket: impl Fn(usize) -> i64) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let n = ranks.len();
    let mut a = 0;
    while a < n {
        let (r, k) = (ranks[a], bucket(a));
        let mut b = a + 1;
        while b < n && ranks[b] == r && bucket(b) == k {
            b += 1;
        }
        out.push((a, b));
        a = b;
    }
    out
}

/// `__rank`, `time`, `__first_time`, `__last_time`, `__rows` of each segment.
fn lead_columns(
    segs: &[(usize, usize)],
    ranks: &[u32],
    bucket: impl Fn(usize) -> i64,
    span: impl Fn(usize, usize) -> (i64, i64, u64),
) -> Vec<ArrayRef> {
    let mut r = Vec::with_capacity(segs.len());
    let mut k = Vec::with_capacity(segs.len());
    let (mut first, mut last, mut rows) = (Vec::new(), Vec::new(), Vec::new());
    for &(a, b) in segs {
        r.push(ranks[a]);
        k.push(bucket(a));
        let (f, l, n) = span(a, b);
        first.push(f);
        last.push(l);
        rows.push(n);
    }
    vec![
        Arc::new(UInt32Array::from(r)),
        Arc::new(Int64Array::from(k)),
        Arc::new(Int64Array::from(first)),
        Arc::new(Int64Array::from(last)),
        Arc::new(UInt64Array::from(rows)),
    ]
}

/// Raw rows of one field: the column and every row's time.
struct RowSource<'a> {
    col: &'a ArrayRef,
    times: &'a [i64],
}

/// The eight statistics of one field over raw rows, per segment.
fn stats_of<T: ArrowPrimitiveType>(
    segs: &[(usize, usize)],
    rows: &RowSource,
    add: fn(T::Native, T::Native) -> T::Native,
    cmp: fn(&T::Native, &T::Native) -> Ordering,
) -> Vec<ArrayRef> {
    let col = rows.col.as_primitive::<T>();
    let values = col.values();
    let mut out = StatVecs::<T>::with_capacity(segs.len());
    let dense = col.null_count() == 0;
    for &(a, b) in segs {
        if dense {
            out.push(dense_state::<T>(
                &values[a..b],
                (rows.times[a], rows.times[b - 1]),
                add,
                cmp,
            ));
            continue;
        }
        let mut s = State::<T>::default();
        for i in a..b {
            if col.is_valid(i) {
                s.add_value(values[i], rows.times[i], add, cmp);
            }
        }
        out.push(s);
    }
    out.finish()
}

/// The state of `v` (a segment without NULLs, at least one value) whose first and last
/// rows are at `times`: one pass, no per-value branches but the comparisons.
fn dense_state<T: ArrowPrimitiveType>(
    v: &[T::Native],
    (t0, t1): (i64, i64),
    add: fn(T::Native, T::Native) -> T::Native,
    cmp: fn(&T::Native, &T::Native) -> Ordering,
) -> State<T> {
    let (mut sum, mut min, mut max) = (v[0], v[0], v[0]);
    for &x in &v[1..] {
        sum = add(sum, x);
        if cmp(&x, &min) == Ordering::Less {
            min = x;
        }
        if cmp(&x, &max) == Ordering::Greater {
            max = x;
        }
    }
    State {
        count: v.len() as u64,
        sum: Some(sum),
        min: Some(min),
        max: Some(max),
        first: Some((v[0], t0)),
        last: Some((v[v.len() - 1], t1)),
    }
}

/// One field's running statistics of one (series, bucket).
#[derive(Clone, Copy)]
struct State<T: ArrowPrimitiveType> {
    count: u64,
    sum: Option<T::Native>,
    min: Option<T::Native>,
    max: Option<T::Native>,
    first: Option<(T::Native, i64)>,
    last: Option<(T::Native, i64)>,
}

impl<T: ArrowPrimitiveType> Default for State<T> {
    fn default() -> Self {
        Self {
            count: 0,
            sum: None,
            min: None,
            max: None,
            first: None,
            last: None,
        }
    }
}

impl<T: ArrowPrimitiveType> State<T> {
    fn add_value(
        &mut self,
        v: T::Native,
        t: i64,
        add: fn(T::Native, T::Native) -> T::Native,
        cmp: fn(&T::Native, &T::Native) -> Ordering,
    ) {
        self.merge(
            State {
                count: 1,
                sum: Some(v),
                min: Some(v),
                max: Some(v),
                first: Some((v, t)),
                last: Some((v, t)),
            },
            add,
            cmp,
        );
    }

    /// Combines the state of distinct points `o` into this one.
    fn merge(
        &mut self,
        o: State<T>,
        add: fn(T::Native, T::Native) -> T::Native,
        cmp: fn(&T::Native, &T::Native) -> Ordering,
    ) {
        if o.count == 0 {
            return;
        }
        self.count += o.count;
        self.sum = Some(match self.sum {
            Some(s) => add(s, o.sum.expect("counted")),
            None => o.sum.expect("counted"),
        });
        let pick = |x: Option<T::Native>, y: T::Native, want: Ordering| match x {
            Some(x) if cmp(&y, &x) != want => x,
            _ => y,
        };
        self.min = Some(pick(self.min, o.min.expect("counted"), Ordering::Less));
        self.max = Some(pick(self.max, o.max.expect("counted"), Ordering::Greater));
        let of = o.first.expect("counted");
        if self.first.is_none_or(|(_, t)| of.1 < t) {
            self.first = Some(of);
        }
        let ol = o.last.expect("counted");
        if self.last.is_none_or(|(_, t)| ol.1 > t) {
            self.last = Some(ol);
        }
    }
}

/// The eight output columns, built state by state.
struct StatVecs<T: ArrowPrimitiveType> {
    count: Vec<u64>,
    sum: Vec<Option<T::Native>>,
    min: Vec<Option<T::Native>>,
    max: Vec<Option<T::Native>>,
    first: Vec<Option<T::Native>>,
    first_time: Vec<Option<i64>>,
    last: Vec<Option<T::Native>>,
    last_time: Vec<Option<i64>>,
}

impl<T: ArrowPrimitiveType> StatVecs<T> {
    fn with_capacity(n: usize) -> Self {
        Self {
            count: Vec::with_capacity(n),
            sum: Vec::with_capacity(n),
            min: Vec::with_capacity(n),
            max: Vec::with_capacity(n),
            first: Vec::with_capacity(n),
            first_time: Vec::with_capacity(n),
            last: Vec::with_capacity(n),
            last_time: Vec::with_capacity(n),
        }
    }

    fn push(&mut self, s: State<T>) {
        self.count.push(s.count);
        self.sum.push(s.sum);
        self.min.push(s.min);
        self.max.push(s.max);
        self.first.push(s.first.map(|f| f.0));
        self.first_time.push(s.first.map(|f| f.1));
        self.last.push(s.last.map(|f| f.0));
        self.last_time.push(s.last.map(|f| f.1));
    }

    fn finish(self) -> Vec<ArrayRef> {
        let p =
            |v: Vec<Option<T::Native>>| -> ArrayRef { Arc::new(PrimitiveArray::<T>::from_iter(v)) };
        vec![
            Arc::new(UInt64Array::from(self.count)),
            p(self.sum),
            p(self.min),
            p(self.max),
            p(self.first),
            Arc::new(Int64Array::from(self.first_time)),
            p(self.last),
            Arc::new(Int64Array::from(self.last_time)),
        ]
    }
}

/// The state of row `i` of a partial run's field columns `cols` (the eight of [`STATS`]).
fn state_at<T: ArrowPrimitiveType>(cols: &[ArrayRef], i: usize) -> State<T> {
    let count = cols[0].as_primitive::<UInt64Type>().value(i);
    if count == 0 {
        return State::default();
    }
    let v = |c: usize| cols[c].as_primitive::<T>().value(i);
    let t = |c: usize| cols[c].as_primitive::<Int64Type>().value(i);
    State {
        count,
        sum: Some(v(1)),
        min: Some(v(2)),
        max: Some(v(3)),
        first: Some((v(4), t(5))),
        last: Some((v(6), t(7))),
    }
}

/// Combines the rows of each segment of `p` (rows of one rank, distinct points) into one row
/// whose bucket is `bucket(first row)`.
fn combine(
    p: &PartialRun,
    segs: &[(usize, usize)],
    bucket: impl Fn(usize) -> i64,
    fields: &[(String, FieldType)],
) -> Result<PartialRun> {
    let (first, last, rows) = (p.first_times(), p.last_times(), p.rows());
    let mut cols = lead_columns(segs, p.ranks(), bucket, |a, b| {
        let f = first[a..b].iter().min().copied().unwrap_or(0);
        let l = last[a..b].iter().max().copied().unwrap_or(0);
        (f, l, rows[a..b].iter().sum())
    });
    for (j, (_, ty)) in fields.iter().enumerate() {
        let src: Vec<ArrayRef> = (0..STATS.len()).map(|s| p.stat(j, s).clone()).collect();
        cols.extend(match ty {
            FieldType::F64 => {
                combine_field::<Float64Type>(&src, segs, |a, b| a + b, f64::total_cmp)
            }
            FieldType::I64 => combine_field::<Int64Type>(&src, segs, i64::wrapping_add, Ord::cmp),
            _ => combine_field::<UInt64Type>(&src, segs, u64::wrapping_add, Ord::cmp),
        });
    }
    Ok(PartialRun {
        keys: p.keys.clone(),
        batch: RecordBatch::try_new(p.batch.schema(), cols)?,
    })
}

fn combine_field<T: ArrowPrimitiveType>(
    src: &[ArrayRef],
    segs: &[(usize, usize)],
    add: fn(T::Native, T::Native) -> T::Native,
    cmp: fn(&T::Native, &T::Native) -> Ordering,
) -> Vec<ArrayRef> {
    let mut out = StatVecs::<T>::with_capacity(segs.len());
    for &(a, b) in segs {
        let mut s = State::<T>::default();
        for i in a..b {
            s.merge(state_at::<T>(src, i), add, cmp);
        }
        out.push(s);
    }
    out.finish()
}

/// `p` (at a finer resolution that `res` is a multiple of) at resolution `res`.
pub fn coarsen(p: &PartialRun, fields: &[(String, FieldType)], res: i64) -> Result<PartialRun> {
    let buckets = p.buckets();
    let segs = segments(p.ranks(), |i| bucket_of(buckets[i], res));
    combine(
        p,
        &segs,
        |i| bucket_of(buckets[i], res),
        &rollup_fields(fields),
    )
}

/// What [`merge`] makes of several partial runs of one region at one resolution.
#[derive(Debug)]
pub struct Merged {
    /// One row per (series, bucket) whose parts hold distinct points.
    pub run: Option<PartialRun>,
    /// Buckets (first instants) where two parts' spans overlap: their rows may hold the same
    /// point, so only the raw rows give the exact answer. Sorted, distinct.
    pub overlapping: Vec<i64>,
}

/// Merges partial runs (each sorted, over the same fields) into one: rows of the same (key,
/// bucket) are combined when their spans are disjoint; buckets where some series' spans
/// overlap are reported and left out (for every series).
pub fn merge(parts: Vec<PartialRun>, fields: &[(String, FieldType)]) -> Result<Merged> {
    let parts: Vec<PartialRun> = parts.into_iter().filter(|p| p.num_rows() > 0).collect();
    if parts.len() <= 1 {
        return Ok(Merged {
            run: parts.into_iter().next(),
            overlapping: Vec::new(),
        });
    }
    let one = unify(&parts)?;
    let (ranks, buckets, first) = (one.ranks(), one.buckets(), one.first_times());
    let mut order: Vec<u32> = (0..one.num_rows() as u32).collect();
    order.sort_unstable_by_key(|&i| {
        let i = i as usize;
        (ranks[i], buckets[i], first[i])
    });
    let idx = UInt32Array::from(order);
    let cols = one
        .batch
        .columns()
        .iter()
        .map(|c| take(c, &idx, None))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let sorted = PartialRun {
        keys: one.keys.clone(),
        batch: RecordBatch::try_new(one.batch.schema(), cols)?,
    };
    let (ranks, buckets, first, last) = (
        sorted.ranks(),
        sorted.buckets(),
        sorted.first_times(),
        sorted.last_times(),
    );
    let segs = segments(ranks, |i| buckets[i]);
    let overlaps = |&&(a, b): &&(usize, usize)| {
        let mut reach = last[a];
        (a + 1..b).any(|i| {
            let hit = first[i] <= reach;
            reach = reach.max(last[i]);
            hit
        })
    };
    let mut overlapping: Vec<i64> = segs
        .iter()
        .filter(overlaps)
        .map(|&(a, _)| buckets[a])
        .collect();
    overlapping.sort_unstable();
    overlapping.dedup();
    let merged = combine(&sorted, &segs, |i| buckets[i], &rollup_fields(fields))?;
    let run = match overlapping.is_empty() {
        true => merged,
        false => {
            let keep: arrow::array::BooleanArray = merged
                .buckets()
                .iter()
                .map(|b| Some(overlapping.binary_search(b).is_err()))
                .collect();
            merged.filter(&keep)?
        }
    };
    Ok(Merged {
        run: (run.num_rows() > 0).then_some(run),
        overlapping,
    })
}

/// Parts whose keys ascend strictly from one part to the next (a data file's runs, which its
/// writer also checks) as one run: their rows one after the other, nothing to sort or
/// combine. `None` when they hold no row.
pub fn concat(parts: Vec<PartialRun>) -> Result<Option<PartialRun>> {
    let mut parts: Vec<PartialRun> = parts.into_iter().filter(|p| p.num_rows() > 0).collect();
    if parts.len() <= 1 {
        return Ok(parts.pop());
    }
    let mut keys: Vec<Bytes> = Vec::new();
    let mut batches = Vec::with_capacity(parts.len());
    for p in &parts {
        assert!(
            keys.last()
                .is_none_or(|l| p.keys.first().is_some_and(|f| l < f)),
            "parts are concatenated in key order"
        );
        let offset = keys.len() as u32;
        keys.extend(p.keys.iter().cloned());
        let ranks: UInt32Array = p.ranks().iter().map(|&r| r + offset).collect();
        let mut cols = p.batch.columns().to_vec();
        cols[0] = Arc::new(ranks);
        batches.push(RecordBatch::try_new(p.batch.schema(), cols)?);
    }
    Ok(Some(PartialRun {
        keys: Arc::new(keys),
        batch: concat_batches(&batches[0].schema(), &batches)?,
    }))
}

/// The parts as one unsorted run over the union of their keys.
fn unify(parts: &[PartialRun]) -> Result<PartialRun> {
    let mut keys: Vec<Bytes> = parts.iter().flat_map(|p| p.keys.iter().cloned()).collect();
    keys.sort_unstable();
    keys.dedup();
    let mut batches = Vec::with_capacity(parts.len());
    for p in parts {
        let map: Vec<u32> = p
            .keys
            .iter()
            .map(|k| keys.binary_search(k).expect("key of a part") as u32)
            .collect();
        let ranks: UInt32Array = p.ranks().iter().map(|&r| map[r as usize]).collect();
        let mut cols = p.batch.columns().to_vec();
        cols[0] = Arc::new(ranks);
        batches.push(RecordBatch::try_new(p.batch.schema(), cols)?);
    }
    let schema = batches[0].schema();
    Ok(PartialRun {
        keys: Arc::new(keys),
        batch: concat_batches(&schema, &batches)?,
    })
}

#[cfg(test)]
#[path = "partial_tests.rs"]
mod tests;
