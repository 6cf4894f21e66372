//! `GapFillExec`: the physical operator of [`crate::nodes::GapFill`].
//!
//! Rules (those of QuestDB's and Lindorm's `FILL`):
//! - The range is the query's own `WHERE time` bounds, each bucketed; a side the query leaves
//!   open takes the data's first or last bucket (over all groups). An exclusive upper bound
//!   ends with the bucket holding the instant just before it.
//! - Groups are the tag values seen in the sampled rows; without tags there is one group, the
//!   whole table, which gets its rows even when nothing matched (as an ungrouped aggregate).
//! - Every group gets a row for every bucket of the range; a bucket without a sampled row has
//!   NULL aggregates, which the fill then replaces: `NULL` leaves them, a constant replaces
//!   every NULL, `PREV` takes the group's last non-NULL value before, `LINEAR` interpolates
//!   by time between the group's neighbouring non-NULL values (ends stay NULL).
//! - The grid holds at most [`MAX_FILL_ROWS`] rows and is charged to the query's memory.
//!
//! The grid is computed by plain functions ([`buckets`], [`prev_indices`], [`linear`]) over
//! values; the operator collects its input, evaluates the bounds and assembles the columns.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Float64Array, RecordBatch, UInt32Array};
use arrow::compute::{cast, concat_batches, take};
use arrow::datatypes::{DataType, Float64Type, SchemaRef, TimeUnit, TimestampNanosecondType};
use chrono::{DateTime, Datelike, Months, Utc};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::execution::memory_pool::MemoryConsumer;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};
use futures::{StreamExt, TryStreamExt};

use crate::functions::date_trunc::truncate;
use crate::sql::sample_by::{Fill, Width};

/// Most rows a fill may make (groups × buckets).
pub const MAX_FILL_ROWS: usize = 10_000_000;

/// A bound, evaluated: the expression and whether it is exclusive.
#[derive(Debug, Clone)]
pub struct PhysicalBound {
    pub expr: Arc<dyn PhysicalExpr>,
    pub exclusive: bool,
}

#[derive(Debug)]
pub struct GapFillExec {
    input: Arc<dyn ExecutionPlan>,
    /// Column indexes of the bucket, the tags and the aggregates in the input.
    time: usize,
    tags: Vec<usize>,
    aggs: Vec<usize>,
    fill: Fill,
    width: Width,
    offset_ns: i64,
    lower: Option<PhysicalBound>,
    upper: Option<PhysicalBound>,
    props: Arc<PlanProperties>,
}

/// What [`GapFillExec::new`] takes.
pub struct GapFillArgs {
    pub input: Arc<dyn ExecutionPlan>,
    pub schema: SchemaRef,
    pub time: usize,
    pub tags: Vec<usize>,
    pub aggs: Vec<usize>,
    pub fill: Fill,
    pub width: Width,
    pub offset_ns: i64,
    pub lower: Option<PhysicalBound>,
    pub upper: Option<PhysicalBound>,
}

impl GapFillExec {
    pub fn new(a: GapFillArgs) -> Self {
        let props = PlanProperties::new(
            EquivalenceProperties::new(a.schema),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        Self {
            input: a.input,
            time: a.time,
            tags: a.tags,
            aggs: a.aggs,
            fill: a.fill,
            width: a.width,
            offset_ns: a.offset_ns,
            lower: a.lower,
            upper: a.upper,
            props: Arc::new(props),
        }
    }
}

impl DisplayAs for GapFillExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(
            f,
            "GapFillExec: fill={:?}, width={:?}",
            self.fill, self.width
        )
    }
}

impl ExecutionPlan for GapFillExec {
    fn name(&self) -> &str {
        "GapFillExec"
    }
    fn properties(&self) -> &Arc<PlanProperties> {
        &self.props
    }
    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }
    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(
            &Arc<dyn PhysicalExpr>,
        ) -> Result<datafusion::common::tree_node::TreeNodeRecursion>,
    ) -> Result<datafusion::common::tree_node::TreeNodeRecursion> {
        for b in self.lower.iter().chain(self.upper.iter()) {
            f(&b.expr)?;
        }
        Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
    }
    fn required_input_distribution(&self) -> Vec<datafusion::physical_expr::Distribution> {
        vec![datafusion::physical_expr::Distribution::SinglePartition]
    }
    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let [input] = <[Arc<dyn ExecutionPlan>; 1]>::try_from(children)
            .map_err(|_| DataFusionError::Internal("GapFillExec takes one input".into()))?;
        Ok(Arc::new(GapFillExec {
            input,
            time: self.time,
            tags: self.tags.clone(),
            aggs: self.aggs.clone(),
            fill: self.fill.clone(),
            width: self.width,
            offset_ns: self.offset_ns,
            lower: self.lower.clone(),
            upper: self.upper.clone(),
            props: self.props.clone(),
        }))
    }
    fn execute(
        &self,
        partition: usize,
        ctx: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return Err(DataFusionError::Internal(format!(
                "GapFillExec has one partition, asked for {partition}"
            )));
        }
        let input = self.input.execute(0, ctx.clone())?;
        let in_schema = self.input.schema();
        let me = Grid {
            time: self.time,
            tags: self.tags.clone(),
            aggs: self.aggs.clone(),
            fill: self.fill.clone(),
            width: self.width,
            offset_ns: self.offset_ns,
            lower: self.lower.clone(),
            upper: self.upper.clone(),
            schema: self.props.eq_properties.schema().clone(),
        };
        let schema = me.schema.clone();
        let reservation = MemoryConsumer::new("GapFillExec").register(ctx.memory_pool());
        let fut = async move {
            let batches: Vec<RecordBatch> = input.try_collect().await?;
            let all = concat_batches(&in_schema, &batches)?;
            reservation.try_grow(all.get_array_memory_size())?;
            let out = me.fill_all(&all)?;
            reservation.try_grow(out.get_array_memory_size())?;
            Ok(out)
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            schema,
            futures::stream::once(fut).boxed(),
        )))
    }
}

/// What the operator computes, apart from its plan properties.
struct Grid {
    time: usize,
    tags: Vec<usize>,
    aggs: Vec<usize>,
    fill: Fill,
    width: Width,
    offset_ns: i64,
    lower: Option<PhysicalBound>,
    upper: Option<PhysicalBound>,
    schema: SchemaRef,
}

impl Grid {
    fn fill_all(&self, all: &RecordBatch) -> Result<RecordBatch> {
        let times = bucket_times(all.column(self.time))?;
        let lo = self.bound(self.lower.as_ref(), false)?;
        let hi = self.bound(self.upper.as_ref(), true)?;
        let lo = lo.or_else(|| times.iter().flatten().min().copied());
        let hi = hi.or_else(|| times.iter().flatten().max().copied());
        let grid = match (lo, hi) {
            (Some(lo), Some(hi)) => buckets(lo, hi, self.width, self.offset_ns, MAX_FILL_ROWS)?,
            _ => Vec::new(),
        };
        // Groups: tag tuples in first-seen order; without tags, the one empty tuple.
        let (group_of_row, first_row) = groups_of(all, &self.tags)?;
        let groups = if self.tags.is_empty() {
            1
        } else {
            first_row.len()
        };
        let total = groups.saturating_mul(grid.len());
        if total > MAX_FILL_ROWS {
            return Err(DataFusionError::ResourcesExhausted(format!(
                "SAMPLE BY FILL would make {total} rows ({groups} groups x {} buckets), more \
                 than the limit of {MAX_FILL_ROWS}; narrow the time range or widen the buckets",
                grid.len()
            )));
        }
        let at: HashMap<(usize, i64), usize> = (0..all.num_rows())
            .filter_map(|r| times[r].map(|t| ((group_of_row[r], t), r)))
            .collect();
        // Per output row: the input row (None: an empty bucket), the group's first row (for
        // its tags), and the bucket.
        let mut source: Vec<Option<u32>> = Vec::with_capacity(total);
        let mut tag_source: Vec<Option<u32>> = Vec::with_capacity(total);
        let mut out_times: Vec<i64> = Vec::with_capacity(total);
        for g in 0..groups {
            for &b in &grid {
                source.push(at.get(&(g, b)).map(|&r| r as u32));
                tag_source.push(first_row.get(g).map(|&r| r as u32));
                out_times.push(b);
            }
        }
        self.assemble(all, groups, grid.len(), &source, &tag_source, &out_times)
    }

    fn assemble(
        &self,
        all: &RecordBatch,
        groups: usize,
        per_group: usize,
        source: &[Option<u32>],
        tag_source: &[Option<u32>],
        out_times: &[i64],
    ) -> Result<RecordBatch> {
        let src = UInt32Array::from(source.to_vec());
        let tag_src = UInt32Array::from(tag_source.to_vec());
        let mut cols: Vec<ArrayRef> = Vec::with_capacity(self.schema.fields().len());
        for (i, field) in self.schema.fields().iter().enumerate() {
            let col = all.column(i);
            let out = if i == self.time {
                let t = arrow::array::TimestampNanosecondArray::from(out_times.to_vec());
                cast(
                    &t.with_timezone_opt(time_zone(col.data_type())),
                    field.data_type(),
                )?
            } else if self.tags.contains(&i) {
                take(col, &tag_src, None)?
            } else if self.aggs.contains(&i) {
                let taken = take(col, &src, None)?;
                self.fill_column(taken, field.data_type(), groups, per_group, out_times)?
            } else {
                take(col, &src, None)?
            };
            cols.push(out);
        }
        Ok(RecordBatch::try_new(self.schema.clone(), cols)?)
    }

    fn fill_column(
        &self,
        col: ArrayRef,
        ty: &DataType,
        groups: usize,
        per_group: usize,
        times: &[i64],
    ) -> Result<ArrayRef> {
        let col = cast(&col, ty)?;
        Ok(match &self.fill {
            Fill::None | Fill::Null => col,
            Fill::Value(v) => {
                let v = v.cast_to(ty)?.to_array_of_size(col.len())?;
                arrow::compute::kernels::zip::zip(&arrow::compute::is_not_null(&col)?, &col, &v)?
            }
            Fill::Prev => {
                let valid: Vec<bool> = (0..col.len()).map(|i| col.is_valid(i)).collect();
                take(
                    &col,
                    &UInt32Array::from(prev_indices(&valid, per_group)),
                    None,
                )?
            }
            Fill::Linear => {
                let f = col.as_primitive::<Float64Type>();
                let values: Vec<Option<f64>> = f.iter().collect();
                let mut out = Vec::with_capacity(values.len());
                for g in 0..groups {
                    let r = g * per_group..(g + 1) * per_group;
                    out.extend(linear(&values[r.clone()], &times[r]));
                }
                Arc::new(Float64Array::from(out))
            }
        })
    }

    /// A bound's bucket; `upper` with an exclusive bound takes the instant before it.
    fn bound(&self, b: Option<&PhysicalBound>, upper: bool) -> Result<Option<i64>> {
        let Some(b) = b else { return Ok(None) };
        let one = RecordBatch::try_new_with_options(
            Arc::new(arrow::datatypes::Schema::empty()),
            vec![],
            &arrow::array::RecordBatchOptions::new().with_row_count(Some(1)),
        )?;
        let v = b.expr.evaluate(&one)?.to_array(1)?;
        let ts = cast(
            &v,
            &DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
        )?;
        let ts = ts.as_primitive::<TimestampNanosecondType>();
        if ts.is_null(0) {
            return Ok(None);
        }
        let mut t = ts.value(0);
        if upper && b.exclusive {
            t = t.saturating_sub(1);
        }
        Ok(Some(bucket_of(t, self.width, self.offset_ns)?))
    }
}

fn time_zone(ty: &DataType) -> Option<Arc<str>> {
    match ty {
        DataType::Timestamp(_, tz) => tz.clone(),
        _ => None,
    }
}

/// Each row's group (its tag values' first-seen order) and each group's first row; without
/// tags every row is in group 0.
fn groups_of(all: &RecordBatch, tags: &[usize]) -> Result<(Vec<usize>, Vec<usize>)> {
    if tags.is_empty() {
        let first = if all.num_rows() > 0 { vec![0] } else { vec![] };
        return Ok((vec![0; all.num_rows()], first));
    }
    let cols: Vec<ArrayRef> = tags.iter().map(|&i| all.column(i).clone()).collect();
    let converter = arrow::row::RowConverter::new(
        cols.iter()
            .map(|c| arrow::row::SortField::new(c.data_type().clone()))
            .collect(),
    )?;
    let rows = converter.convert_columns(&cols)?;
    let mut group_of_row = Vec::with_capacity(all.num_rows());
    let mut first_row: Vec<usize> = Vec::new();
    let mut ids: HashMap<&[u8], usize> = HashMap::new();
    for r in 0..all.num_rows() {
        let n = ids.len();
        let g = *ids.entry(rows.row(r).data()).or_insert(n);
        if g == first_row.len() {
            first_row.push(r);
        }
        group_of_row.push(g);
    }
    Ok((group_of_row, first_row))
}

/// The bucket column as nanoseconds.
fn bucket_times(col: &ArrayRef) -> Result<Vec<Option<i64>>> {
    let ns = cast(
        col,
        &DataType::Timestamp(TimeUnit::Nanosecond, time_zone(col.data_type())),
    )?;
    Ok(ns
        .as_primitive::<TimestampNanosecondType>()
        .iter()
        .collect())
}

/// The bucket holding `t`, as `SAMPLE BY` buckets it.
pub fn bucket_of(t: i64, width: Width, offset_ns: i64) -> Result<i64> {
    match width {
        Width::Nanos(w) => Ok(truncate(t, (w, offset_ns))),
        Width::Months(m) => month_bucket(t, i64::from(m), offset_ns),
    }
}

fn utc(ns: i64) -> Result<DateTime<Utc>> {
    Ok(DateTime::from_timestamp_nanos(ns))
}

fn nanos(d: DateTime<Utc>) -> Result<i64> {
    d.timestamp_nanos_opt()
        .ok_or_else(|| DataFusionError::Execution("SAMPLE BY: a bucket is out of range".into()))
}

/// `origin + k months`, `k` of either sign.
fn shift_months(origin: DateTime<Utc>, k: i64) -> Result<DateTime<Utc>> {
    let m = Months::new(u32::try_from(k.unsigned_abs()).unwrap_or(u32::MAX));
    let d = if k >= 0 {
        origin.checked_add_months(m)
    } else {
        origin.checked_sub_months(m)
    };
    d.ok_or_else(|| DataFusionError::Execution("SAMPLE BY: a bucket is out of range".into()))
}

/// The month bucket holding `t`, as `date_bin` with a month interval computes it.
fn month_bucket(t: i64, stride: i64, origin_ns: i64) -> Result<i64> {
    let (src, origin) = (utc(t)?, utc(origin_ns)?);
    let diff = i64::from((src.year() - origin.year()) * 12) + i64::from(src.month())
        - i64::from(origin.month());
    let mut k = diff.div_euclid(stride) * stride;
    let mut b = shift_months(origin, k)?;
    if b > src {
        k -= stride;
        b = shift_months(origin, k)?;
    }
    nanos(b)
}

/// Every bucket start from `lo`'s to `hi`'s (both already bucket starts), at most `max`.
pub fn buckets(lo: i64, hi: i64, width: Width, offset_ns: i64, max: usize) -> Result<Vec<i64>> {
    let mut out = Vec::new();
    if lo > hi {
        return Ok(out);
    }
    let too_many = || {
        DataFusionError::ResourcesExhausted(format!(
            "SAMPLE BY FILL would make more than {max} buckets; narrow the time range or widen \
             the buckets"
        ))
    };
    match width {
        Width::Nanos(w) => {
            let n = (hi - lo) / w + 1;
            if n as u128 > max as u128 {
                return Err(too_many());
            }
            out.extend((0..n).map(|k| lo + k * w));
        }
        Width::Months(m) => {
            let origin = utc(offset_ns)?;
            let mut b = lo;
            let mut k = month_index(lo, offset_ns)?;
            while b <= hi {
                if out.len() >= max {
                    return Err(too_many());
                }
                out.push(b);
                k += i64::from(m);
                b = nanos(shift_months(origin, k)?)?;
            }
        }
    }
    Ok(out)
}

/// How many months after the origin a month bucket start is.
fn month_index(b: i64, origin_ns: i64) -> Result<i64> {
    let (d, o) = (utc(b)?, utc(origin_ns)?);
    Ok(i64::from((d.year() - o.year()) * 12) + i64::from(d.month()) - i64::from(o.month()))
}

/// For rows in groups of `per_group`, the index of each row's last valid row at or before it
/// within its group (itself when valid); the row itself when there is none (it is NULL).
pub fn prev_indices(valid: &[bool], per_group: usize) -> Vec<u32> {
    let mut out: Vec<u32> = Vec::with_capacity(valid.len());
    for (i, &v) in valid.iter().enumerate() {
        let first = per_group == 0 || i % per_group == 0;
        let idx = if v || first {
            i
        } else {
            let prev = out[i - 1] as usize;
            if valid[prev] { prev } else { i }
        };
        out.push(idx as u32);
    }
    out
}

/// Values interpolated by time between the neighbouring values; the ends stay NULL.
pub fn linear(values: &[Option<f64>], times: &[i64]) -> Vec<Option<f64>> {
    let known: Vec<usize> = (0..values.len()).filter(|&i| values[i].is_some()).collect();
    let mut out = values.to_vec();
    for pair in known.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let (va, vb) = (values[a].expect("known"), values[b].expect("known"));
        let (ta, tb) = (times[a], times[b]);
        for (i, slot) in out.iter_mut().enumerate().take(b).skip(a + 1) {
            let span = (tb - ta) as f64;
            *slot = (span != 0.0).then(|| va + (vb - va) * (times[i] - ta) as f64 / span);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: i64 = 3_600_000_000_000;

    #[test]
    fn buckets_named_cases() {
        let jan = 1_704_067_200_000_000_000; // 2024-01-01T00:00:00Z
        let feb = 1_706_745_600_000_000_000; // 2024-02-01
        let mar = 1_709_251_200_000_000_000; // 2024-03-01
        for (name, lo, hi, width, want) in [
            ("hours", 0, 3 * H, Width::Nanos(H), vec![0, H, 2 * H, 3 * H]),
            ("one bucket", H, H, Width::Nanos(H), vec![H]),
            ("empty", 2 * H, H, Width::Nanos(H), vec![]),
            ("months", jan, mar, Width::Months(1), vec![jan, feb, mar]),
        ] {
            assert_eq!(buckets(lo, hi, width, 0, 100).unwrap(), want, "{name}");
        }
        assert!(buckets(0, 1000 * H, Width::Nanos(H), 0, 10).is_err());
        assert_eq!(month_bucket(feb + 5 * H, 1, 0).unwrap(), feb);
        assert_eq!(month_bucket(feb + 5 * H, 2, 0).unwrap(), jan);
    }

    #[test]
    fn prev_carries_within_groups_only() {
        let valid = [true, false, false, false, true, false];
        // Two groups of three: the second group's first row has no previous value.
        assert_eq!(prev_indices(&valid, 3), [0, 0, 0, 3, 4, 4]);
    }

    #[test]
    fn linear_interpolates_between_neighbours() {
        let v = [None, Some(1.0), None, None, Some(4.0), None];
        let t = [0, 1, 2, 3, 4, 5];
        assert_eq!(
            linear(&v, &t),
            [None, Some(1.0), Some(2.0), Some(3.0), Some(4.0), None]
        );
    }
}
