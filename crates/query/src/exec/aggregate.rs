//! `AggregateExec`: the physical operator of [`TemporaAggregate`].
//!
//! It plans the engine's scan (time range, index matcher, the fields the aggregates and the
//! row predicate read, the tags grouped by and those the series predicate reads), reads the
//! regions one at a time as sorted runs and folds each into the groups ([`Fold`]), under the
//! query's memory pool. A read the engine estimates at [`PARALLEL_MIN_VALUES`] or more is
//! split over the cores: thread t reads and folds regions t, t + n, ... into a fold of its
//! own, and the folds are merged in thread order (a fixed split and a fixed merge order, so
//! the same data gives the same float sums every time).
//!
//! Reading window: `ORDER BY <bucket> DESC LIMIT n` over a range with an end needs only the
//! newest buckets. The first read covers the last `n` whole buckets before the end; if they
//! hold at least `n` groups the answer is among them (every bucket outside the window sorts
//! after every bucket inside it, and the window's buckets are whole). Otherwise a window of
//! `16 n` buckets, then the whole range, is read.
//!
//! Where it runs: a scan the engine estimates at no more than [`INLINE_VALUES_MAX`] values
//! (rows × aggregates) is folded on the calling task, as a small last-value read is; handing
//! it to a blocking thread and back costs two thread wake-ups, more than the fold. Larger
//! scans run on a blocking thread.
//!
//! The output is one batch in the `Aggregate`'s schema; the time column is the node's own
//! expression evaluated on one time of each group, so its values and type are DataFusion's.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use arrow::array::{ArrayRef, RecordBatch, TimestampNanosecondArray};
use arrow::compute::{cast, filter_record_batch};
use arrow::datatypes::{DataType, SchemaRef};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion::logical_expr::UserDefinedLogicalNodeCore;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};
use futures::StreamExt;
use tempora_storage::read::{ScanPlan, ScanRequest, SortedRun};

use super::filter::PhysicalFilter;
use super::fold::Fold;
use super::rollup::RollupPlan;
use crate::nodes::aggregate::{AggSpec, Group};
use crate::rules::time_key::TimeKey;
use crate::table::TemporaTable;

/// Most values (estimated rows × aggregates) an aggregate folds on the calling task; above
/// it the fold runs on a blocking thread. About a tenth of a millisecond of folding.
pub const INLINE_VALUES_MAX: u64 = 200_000;

/// What the operator computes (everything but its plan properties).
#[derive(Debug, Clone)]
pub struct AggregateSpec {
    pub table: Arc<TemporaTable>,
    pub filter: PhysicalFilter,
    pub groups: Vec<Group>,
    /// The time group's expression over `time`, made physical.
    pub time_expr: Option<Arc<dyn PhysicalExpr>>,
    pub aggs: Vec<AggSpec>,
    pub newest: Option<usize>,
    pub schema: SchemaRef,
    /// The logical node, whose `EXPLAIN` line the operator's is (formatted only when shown).
    pub node: Arc<crate::nodes::aggregate::TemporaAggregate>,
    /// The rollups it reads, or why none ([`super::rollup`]).
    pub rollup: RollupPlan,
}

#[derive(Debug)]
pub struct AggregateExec {
    spec: Arc<AggregateSpec>,
    props: Arc<PlanProperties>,
}

impl AggregateExec {
    pub fn new(spec: AggregateSpec) -> Self {
        let props = PlanProperties::new(
            EquivalenceProperties::new(spec.schema.clone()),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        Self {
            spec: Arc::new(spec),
            props: Arc::new(props),
        }
    }
}

impl DisplayAs for AggregateExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "TemporaAggregateExec: ")?;
        UserDefinedLogicalNodeCore::fmt_for_explain(&*self.spec.node, f)?;
        write!(f, ", {}", self.spec.rollup)
    }
}

impl ExecutionPlan for AggregateExec {
    fn name(&self) -> &str {
        "TemporaAggregateExec"
    }
    fn properties(&self) -> &Arc<PlanProperties> {
        &self.props
    }
    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }
    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }
    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }
    fn execute(
        &self,
        partition: usize,
        ctx: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return Err(DataFusionError::Internal(format!(
                "TemporaAggregateExec has one partition, asked for {partition}"
            )));
        }
        let spec = self.spec.clone();
        let parallel_min = crate::options::of(ctx.session_config().options()).parallel_min_values;
        let reservation = MemoryConsumer::new("TemporaAggregateExec").register(ctx.memory_pool());
        let cancel = Arc::new(AtomicBool::new(false));
        let stop = StopOnDrop(cancel.clone());
        let fut = async move {
            let _stop = stop;
            if small(&spec) {
                return run(&spec, parallel_min, reservation, &cancel);
            }
            tokio::task::spawn_blocking(move || run(&spec, parallel_min, reservation, &cancel))
                .await
                .map_err(|e| DataFusionError::External(Box::new(e)))?
        };
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.spec.schema.clone(),
            futures::stream::once(fut).boxed(),
        )))
    }
}

/// Whether the engine estimates the scan at no more than [`INLINE_VALUES_MAX`] values. The
/// scan is planned (index lookup and snapshot, no data read) and planned again by [`run`].
fn small(s: &AggregateSpec) -> bool {
    let Ok(Some((start, end))) = s.filter.time_range() else {
        return false;
    };
    let req = ScanRequest {
        time: (start != i64::MIN || end != i64::MAX).then_some((start, end)),
        matcher: s.filter.matcher.clone(),
        fields: Some(Vec::new()),
        tags: Some(Vec::new()),
        field_bounds: Vec::new(),
    };
    let Ok(plan) = s.table.engine().plan_scan(s.table.name(), &req) else {
        return false;
    };
    let values = (s.aggs.len().max(1) as u64).saturating_mul(plan.stats.rows_estimate);
    values <= INLINE_VALUES_MAX
}

/// Sets the flag that stops the blocking read when the stream is dropped.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

fn stopped() -> DataFusionError {
    DataFusionError::Execution("the query was stopped".into())
}

/// Reads and folds on the calling thread: a blocking thread, or the async task for a small
/// read ([`small`]); a large window is split over threads of its own ([`read_window`]).
fn run(
    s: &AggregateSpec,
    parallel_min: u64,
    mut reservation: MemoryReservation,
    cancel: &AtomicBool,
) -> Result<RecordBatch> {
    let key = s.groups.iter().find_map(|g| match g {
        Group::Time { key, .. } => Some(key.clone()),
        Group::Tag(_) => None,
    });
    let inputs = Inputs::new(s)?;
    let grouped = !s.groups.is_empty();
    let new_fold = || {
        Fold::new(
            key.clone(),
            &s.aggs,
            &inputs.agg_inputs,
            &inputs.agg_types,
            grouped,
        )
    };
    let Some(range) = s.filter.time_range()? else {
        return finish(s, &new_fold());
    };
    let mut all = window_iter(range, s.newest, key.as_ref()).peekable();
    while let Some(w) = all.next() {
        let mut fold = new_fold();
        read_window(
            s,
            &inputs,
            w,
            (&new_fold, parallel_min),
            &mut fold,
            &mut reservation,
            cancel,
        )?;
        // Enough groups: the next window is not even searched for.
        if s.newest.is_some_and(|n| fold.len() >= n) || all.peek().is_none() {
            return finish(s, &fold);
        }
    }
    unreachable!("the last window is always answered")
}

/// The columns the scan reads and where each aggregate finds its input.
pub(super) struct Inputs {
    /// Fields read, in request order (the fold's input columns).
    fields: Vec<String>,
    agg_inputs: Vec<Option<usize>>,
    pub(super) agg_types: Vec<Option<DataType>>,
    /// Tags grouped by, in group order, then those only the series predicate reads.
    tags: Vec<String>,
    group_tags: usize,
    /// Positions of the row predicate's fields among `fields`.
    row_fields: Vec<usize>,
}

impl Inputs {
    fn new(s: &AggregateSpec) -> Result<Self> {
        let mut fields: Vec<String> = Vec::new();
        let at = |f: &str, fields: &mut Vec<String>| match fields.iter().position(|x| x == f) {
            Some(i) => i,
            None => {
                fields.push(f.to_string());
                fields.len() - 1
            }
        };
        let agg_inputs: Vec<Option<usize>> = s
            .aggs
            .iter()
            .map(|a| a.field.as_deref().map(|f| at(f, &mut fields)))
            .collect();
        let row_fields = s
            .filter
            .row_fields()
            .iter()
            .map(|f| at(f, &mut fields))
            .collect();
        let agg_types = s
            .aggs
            .iter()
            .map(|a| a.field.as_deref().and_then(|f| s.table.field_type(f)))
            .collect();
        let mut tags: Vec<String> = s
            .groups
            .iter()
            .filter_map(|g| match g {
                Group::Tag(t) => Some(t.clone()),
                Group::Time { .. } => None,
            })
            .collect();
        let group_tags = tags.len();
        for t in s.filter.series_tags() {
            if !tags.contains(t) {
                tags.push(t.clone());
            }
        }
        Ok(Self {
            fields,
            agg_inputs,
            agg_types,
            tags,
            group_tags,
            row_fields,
        })
    }
}

/// Windows to read, narrowest first; the last is always the whole range. A window starts at
/// a bucket's first time, so it holds whole buckets: the newest `n`, then `16 n`.
pub fn windows(range: (i64, i64), newest: Option<usize>, key: Option<&TimeKey>) -> Vec<(i64, i64)> {
    window_iter(range, newest, key).collect()
}

/// [`windows`], each found only when asked for: the search for a window's first bucket
/// evaluates the key a few dozen times per bucket, and the wider window is seldom needed.
pub fn window_iter(
    range: (i64, i64),
    newest: Option<usize>,
    key: Option<&TimeKey>,
) -> impl Iterator<Item = (i64, i64)> + '_ {
    let (start, end) = range;
    let search = match (newest, key) {
        (Some(limit), Some(key))
            if key.monotone() && end != i64::MAX && end > start && limit > 0 =>
        {
            Some((limit, key))
        }
        _ => None,
    };
    let mut targets = search
        .map(|(limit, _)| vec![limit, limit.saturating_mul(16)])
        .unwrap_or_default()
        .into_iter();
    let (mut from, mut buckets, mut whole_given) = (end.saturating_sub(1), 0usize, false);
    std::iter::from_fn(move || {
        if let (Some((_, key)), Some(target)) = (search, targets.next()) {
            let mut found = true;
            while buckets < target {
                match key.bucket_start(from, start) {
                    Ok(b) if b > start => {
                        buckets += 1;
                        from = if buckets < target { b - 1 } else { b };
                    }
                    _ => {
                        found = false;
                        break;
                    }
                }
            }
            if found {
                let w = (from, end);
                from -= 1;
                return Some(w);
            }
            targets = Vec::new().into_iter();
        }
        if whole_given {
            return None;
        }
        whole_given = true;
        Some(range)
    })
}

/// Reads the regions of window `[start, end)` into `fold`: on one thread, or split over the
/// cores when the read is large ([`fold_threads`]).
fn read_window(
    s: &AggregateSpec,
    inputs: &Inputs,
    (start, end): (i64, i64),
    (new_fold, parallel_min): (&(dyn Fn() -> Fold + Sync), u64),
    fold: &mut Fold,
    reservation: &mut MemoryReservation,
    cancel: &AtomicBool,
) -> Result<()> {
    let req = ScanRequest {
        time: (start != i64::MIN || end != i64::MAX).then_some((start, end)),
        matcher: s.filter.matcher.clone(),
        fields: Some(inputs.fields.clone()),
        tags: Some(inputs.tags.clone()),
        field_bounds: Vec::new(),
    };
    let plan = s
        .table
        .engine()
        .plan_scan(s.table.name(), &req)
        .map_err(|e| DataFusionError::External(Box::new(e)))?;
    let threads = fold_threads(&plan, inputs, parallel_min);
    if threads < 2 {
        return fold_regions(s, inputs, &plan, (0, 1), fold, reservation, cancel);
    }
    // Thread t folds regions t, t + n, t + 2n, ... into a fold of its own; the folds are
    // then merged in thread order, so the same data gives the same sums every time.
    let failed = AtomicBool::new(false);
    let stop = Stop {
        cancel,
        failed: &failed,
    };
    std::thread::scope(|scope| {
        let plan = &plan;
        let stop = &stop;
        let workers: Vec<_> = (1..threads)
            .map(|t| {
                let mut own = new_fold();
                let mut res = reservation.new_empty();
                scope.spawn(move || {
                    let r = fold_regions(s, inputs, plan, (t, threads), &mut own, &mut res, stop);
                    if r.is_err() {
                        stop.failed.store(true, Ordering::Relaxed);
                    }
                    r.map(|()| (own, res))
                })
            })
            .collect();
        let mut errors = Vec::new();
        if let Err(e) = fold_regions(s, inputs, plan, (0, threads), fold, reservation, stop) {
            failed.store(true, Ordering::Relaxed);
            errors.push(e);
        }
        for w in workers {
            let joined = w.join().unwrap_or_else(|_| {
                Err(DataFusionError::Internal("a fold thread panicked".into()))
            });
            match joined {
                Ok((other, _res)) if errors.is_empty() => {
                    fold.merge(other, &inputs.agg_types);
                    if let Err(e) = reservation.try_resize(fold.bytes()) {
                        errors.push(e);
                    }
                }
                Ok(_) => {}
                Err(e) => errors.push(e),
            }
        }
        // The cause, not the "stopped" of the threads that saw another one fail.
        let stop_text = stopped().to_string();
        match errors.iter().position(|e| e.to_string() != stop_text) {
            Some(i) => Err(errors.swap_remove(i)),
            None => errors.pop().map_or(Ok(()), Err),
        }
    })
}

/// Fewest values (estimated rows × (aggregates + 1)) a window reads for its regions to be
/// folded on several threads by default: below it, starting threads costs more than they
/// save. Set per server by `QueryLimits::parallel_min_values` (`tempora.parallel_min_values`).
pub const PARALLEL_MIN_VALUES: u64 = 400_000;

/// Most threads one aggregate folds on.
pub const FOLD_THREADS_MAX: usize = 4;

/// Threads to fold `plan`'s regions on: one for a small read, else one per core (at most
/// [`FOLD_THREADS_MAX`]), at most one per region.
fn fold_threads(plan: &ScanPlan, inputs: &Inputs, min: u64) -> usize {
    let values = plan
        .stats
        .rows_estimate
        .saturating_mul(inputs.agg_inputs.len() as u64 + 1);
    // Asking the OS (cgroup files, affinity) costs tens of microseconds: once per process.
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    let cores = *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    fold_threads_for(values, min, cores, plan.regions())
}

/// [`fold_threads`] over numbers: `values` estimated (`min` needed for more than one thread),
/// `cores` available, `regions` to read.
fn fold_threads_for(values: u64, min: u64, cores: usize, regions: usize) -> usize {
    if values < min {
        return 1;
    }
    cores.min(FOLD_THREADS_MAX).min(regions).max(1)
}

/// What stops a fold: the query's cancel flag, or another thread's failure.
struct Stop<'a> {
    cancel: &'a AtomicBool,
    failed: &'a AtomicBool,
}

trait Stopped: Sync {
    fn stopped(&self) -> bool;
}

impl Stopped for AtomicBool {
    fn stopped(&self) -> bool {
        self.load(Ordering::Relaxed)
    }
}

impl Stopped for Stop<'_> {
    fn stopped(&self) -> bool {
        self.cancel.load(Ordering::Relaxed) || self.failed.load(Ordering::Relaxed)
    }
}

/// Reads and folds regions `t, t + n, ...` of `plan` (`(t, n)`), in order.
fn fold_regions(
    s: &AggregateSpec,
    inputs: &Inputs,
    plan: &ScanPlan,
    (t, n): (usize, usize),
    fold: &mut Fold,
    reservation: &mut MemoryReservation,
    stop: &dyn Stopped,
) -> Result<()> {
    for region in (t..plan.regions()).step_by(n) {
        if stop.stopped() {
            return Err(stopped());
        }
        if super::rollup::fold_with_rollups(s, inputs, plan, region, fold, reservation)? {
            continue;
        }
        let run = plan
            .read_run(region)
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        if let Some(run) = run {
            fold_run(s, inputs, fold, &run, reservation)?;
        }
    }
    Ok(())
}

/// The tag tuple id of each series of `keys` (a run's series keys, by rank); `None` for
/// series the tag predicate leaves out.
pub(super) fn tuples(
    s: &AggregateSpec,
    inputs: &Inputs,
    fold: &mut Fold,
    keys: &[bytes::Bytes],
) -> Result<Vec<Option<u32>>> {
    let keep = s.filter.series_mask(keys)?;
    let tags = tempora_storage::read::tag_columns(
        keys.iter().map(|k| k.as_ref()),
        &inputs.tags[..inputs.group_tags],
    )
    .map_err(|e| DataFusionError::External(Box::new(e)))?;
    Ok((0..keys.len())
        .map(|r| {
            if keep.as_ref().is_some_and(|k| !k[r]) {
                return None;
            }
            let values = tags
                .iter()
                .map(|t| arrow::array::Array::is_valid(t, r).then(|| t.value(r).to_string()))
                .collect();
            Some(fold.tuple_id(values))
        })
        .collect())
}

/// Folds one region's run.
pub(super) fn fold_run(
    s: &AggregateSpec,
    inputs: &Inputs,
    fold: &mut Fold,
    run: &SortedRun,
    reservation: &mut MemoryReservation,
) -> Result<()> {
    reservation.try_resize(run.batch.get_array_memory_size() + fold.bytes())?;
    let tuple_of_rank = tuples(s, inputs, fold, &run.keys)?;
    let fields = run
        .batch
        .project(&(3..run.batch.num_columns()).collect::<Vec<_>>())?;
    let batch = if inputs.row_fields.is_empty() {
        run.batch.clone()
    } else {
        let only = fields.project(&inputs.row_fields)?;
        match s.filter.row_mask(&only)? {
            Some(mask) => filter_record_batch(&run.batch, &mask)?,
            None => run.batch.clone(),
        }
    };
    let ranks = batch
        .column(0)
        .as_any()
        .downcast_ref::<arrow::array::UInt32Array>();
    let times = batch
        .column(1)
        .as_any()
        .downcast_ref::<arrow::array::Int64Array>();
    let (Some(ranks), Some(times)) = (ranks, times) else {
        return Err(DataFusionError::Internal(
            "a run's first columns are rank and time".into(),
        ));
    };
    let columns: Vec<ArrayRef> = batch.columns()[3..].to_vec();
    fold.add(
        ranks.values(),
        times.values(),
        &tuple_of_rank,
        &columns,
        &inputs.agg_types,
    )
    .map_err(|o| DataFusionError::Execution(o.0.to_string()))?;
    reservation.try_resize(fold.bytes())?;
    Ok(())
}

/// The result batch: group columns, then aggregates, in the schema's types.
fn finish(s: &AggregateSpec, fold: &Fold) -> Result<RecordBatch> {
    let mut cols: Vec<ArrayRef> = Vec::with_capacity(s.schema.fields().len());
    let mut tag = 0;
    for (i, g) in s.groups.iter().enumerate() {
        let ty = s.schema.field(i).data_type();
        let col = match g {
            Group::Tag(_) => {
                tag += 1;
                fold.tag_column(tag - 1)
            }
            Group::Time { .. } => {
                let expr = s
                    .time_expr
                    .as_ref()
                    .ok_or_else(|| DataFusionError::Internal("no time expression".into()))?;
                let times = TimestampNanosecondArray::from(fold.group_times().to_vec())
                    .with_timezone("UTC");
                let batch = RecordBatch::try_new(
                    Arc::new(arrow::datatypes::Schema::new(vec![
                        arrow::datatypes::Field::new(
                            tempora_model::TIME_COLUMN,
                            arrow::array::Array::data_type(&times).clone(),
                            false,
                        ),
                    ])),
                    vec![Arc::new(times)],
                )?;
                expr.evaluate(&batch)?.into_array(batch.num_rows())?
            }
        };
        cols.push(if col.data_type() == ty {
            col
        } else {
            cast(&col, ty)?
        });
    }
    let n = s.groups.len();
    for i in 0..s.aggs.len() {
        cols.push(fold.agg_column(i, s.schema.field(n + i).data_type()));
    }
    Ok(RecordBatch::try_new(s.schema.clone(), cols)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: i64 = 60_000_000_000;

    #[test]
    fn folds_on_several_threads_only_when_it_pays() {
        let big = PARALLEL_MIN_VALUES;
        for (name, values, cores, regions, want) in [
            ("a small read", big - 1, 2, 8, 1),
            ("at the threshold", big, 2, 8, 2),
            ("one region", 100 * big, 2, 1, 1),
            ("one core", 100 * big, 1, 8, 1),
            ("more cores than regions", 100 * big, 16, 3, 3),
            (
                "more cores than the cap",
                100 * big,
                64,
                64,
                FOLD_THREADS_MAX,
            ),
            ("nothing to read", 0, 2, 0, 1),
        ] {
            assert_eq!(
                fold_threads_for(values, big, cores, regions),
                want,
                "{name}"
            );
        }
    }

    #[test]
    fn windows_named_cases() {
        let end = 100 * MIN + 30_000_000_000;
        let bin = TimeKey::Bin {
            width: MIN,
            origin: 0,
        };
        use crate::rules::time_key::{Num, Scalar, Value};
        // time * -1: rows of one key are not newest-first, so no window.
        let decreasing = TimeKey::Scalar(Arc::new(Scalar::Arith(
            Box::new(Scalar::Time),
            datafusion::logical_expr::Operator::Multiply,
            Value::I(-1, Num::I64),
        )));
        type Case = (
            &'static str,
            (i64, i64),
            Option<usize>,
            Option<TimeKey>,
            Vec<(i64, i64)>,
        );
        let cases: Vec<Case> = vec![
            (
                "newest first: n buckets, 16 n buckets, then all",
                (i64::MIN, end),
                Some(5),
                Some(bin.clone()),
                vec![(96 * MIN, end), (21 * MIN, end), (i64::MIN, end)],
            ),
            (
                "a start inside the first window: one read",
                (98 * MIN, end),
                Some(5),
                Some(bin.clone()),
                vec![(98 * MIN, end)],
            ),
            (
                "a start inside the second window: two reads",
                (90 * MIN, end),
                Some(5),
                Some(bin.clone()),
                vec![(96 * MIN, end), (90 * MIN, end)],
            ),
            (
                "no hint",
                (i64::MIN, end),
                None,
                Some(bin.clone()),
                vec![(i64::MIN, end)],
            ),
            (
                "no end",
                (i64::MIN, i64::MAX),
                Some(5),
                Some(bin),
                vec![(i64::MIN, i64::MAX)],
            ),
            (
                "not monotone",
                (0, end),
                Some(5),
                Some(decreasing),
                vec![(0, end)],
            ),
            (
                "Grafana's epoch minutes: the same windows as bins",
                (i64::MIN, end),
                Some(5),
                Some(TimeKey::Scalar(Arc::new(Scalar::Arith(
                    Box::new(Scalar::Floor(Box::new(Scalar::Arith(
                        Box::new(Scalar::Epoch(Box::new(Scalar::Time))),
                        datafusion::logical_expr::Operator::Divide,
                        Value::F(60.0),
                    )))),
                    datafusion::logical_expr::Operator::Multiply,
                    Value::F(60.0),
                )))),
                vec![(96 * MIN, end), (21 * MIN, end), (i64::MIN, end)],
            ),
        ];
        for (name, range, newest, key, want) in cases {
            assert_eq!(windows(range, newest, key.as_ref()), want, "{name}");
        }
    }
}
