//! `PromScanExec`: runs a [`PromScan`]. Each partition, on the blocking pool: plans a scan of
//! the table over the time its step slice reads, gathers every selected series' samples
//! (charged to the query's memory pool), evaluates each series ([`super::eval`]) and emits
//! the points in batches.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, Float64Builder, Int64Builder, RecordBatch, StringBuilder,
};
use arrow::datatypes::{DataType, Float64Type, SchemaRef};
use bytes::Bytes;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
};
use futures::StreamExt;
use tempora_storage::ScanRequest;

use super::eval::{self, Timing};
use super::{NAME, PromScan};
use crate::promql::time::Steps;

/// Bytes a gathered sample costs (time and value).
const SAMPLE_BYTES: usize = 16;

#[derive(Debug)]
pub struct PromScanExec {
    node: Arc<PromScan>,
    /// The step slice of each partition.
    chunks: Vec<Steps>,
    schema: SchemaRef,
    batch_rows: usize,
    props: Arc<PlanProperties>,
}

impl PromScanExec {
    pub fn new(node: &PromScan, partitions: usize, batch_rows: usize) -> Self {
        // A slice shorter than ~64 steps re-reads more than it saves.
        let n = partitions.clamp(1, node.timing.steps.len().div_ceil(64).max(1));
        let chunks = if node.timing.at.is_some() || matches!(node.mode, eval::Mode::Raw { .. }) {
            vec![node.timing.steps]
        } else {
            node.timing.steps.chunks(n)
        };
        let schema: SchemaRef = Arc::new(node.schema.as_arrow().clone());
        let props = PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            Partitioning::UnknownPartitioning(chunks.len()),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        Self {
            node: Arc::new(node.clone()),
            chunks,
            schema,
            batch_rows: batch_rows.max(1),
            props: Arc::new(props),
        }
    }
}

impl DisplayAs for PromScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "PromScanExec: ")?;
        datafusion::logical_expr::UserDefinedLogicalNodeCore::fmt_for_explain(&*self.node, f)
    }
}

impl ExecutionPlan for PromScanExec {
    fn name(&self) -> &str {
        "PromScanExec"
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
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let Some(&steps) = self.chunks.get(partition) else {
            return Err(DataFusionError::Internal(format!(
                "PromScanExec has {} partitions, asked for {partition}",
                self.chunks.len()
            )));
        };
        let reservation =
            MemoryConsumer::new(format!("PromScan[{partition}]")).register(context.memory_pool());
        let (node, schema, rows) = (self.node.clone(), self.schema.clone(), self.batch_rows);
        let task = tokio::task::spawn_blocking(move || {
            let mut reservation = reservation;
            let timing = Timing {
                steps,
                ..node.timing
            };
            run(&node, &timing, &schema, rows, &mut reservation)
                .map(|batches| (batches, reservation))
        });
        let stream = futures::stream::once(async move {
            let batches = match task.await {
                Ok(Ok((batches, _reservation))) => batches.into_iter().map(Ok).collect(),
                Ok(Err(e)) => vec![Err(e)],
                Err(e) => vec![Err(DataFusionError::External(Box::new(e)))],
            };
            futures::stream::iter(batches)
        })
        .flatten();
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            stream,
        )))
    }
}

/// The samples of one series.
#[derive(Default)]
struct Samples {
    times: Vec<i64>,
    values: Vec<f64>,
}

/// Reads the series `node` selects over what `timing` needs and evaluates them.
fn run(
    node: &PromScan,
    timing: &Timing,
    schema: &SchemaRef,
    batch_rows: usize,
    reservation: &mut MemoryReservation,
) -> Result<Vec<RecordBatch>> {
    let (series, keys) = gather(node, timing, reservation)?;
    let tags: Vec<String> = node.labels.iter().filter(|l| *l != NAME).cloned().collect();
    let tag_values = tempora_storage::read::tag_columns(keys.iter().map(|k| k.as_ref()), &tags)
        .map_err(|e| DataFusionError::External(Box::new(e)))?;
    let mut out = Output::new(schema.clone(), node.labels.len(), batch_rows);
    let mut labels: Vec<Option<&str>> = vec![None; node.labels.len()];
    for (i, s) in series.iter().enumerate() {
        let mut tag = 0;
        for (j, l) in node.labels.iter().enumerate() {
            labels[j] = if l == NAME {
                Some(node.metric.as_str())
            } else {
                let col = &tag_values[tag];
                tag += 1;
                // Prometheus has no empty label: an empty value is an absent label.
                (!col.is_null(i))
                    .then(|| col.value(i))
                    .filter(|v| !v.is_empty())
            };
        }
        let mut points = Vec::new();
        eval::series(&node.mode, timing, &s.times, &s.values, &mut |t, v| {
            points.push((t, v))
        });
        for (t, v) in points {
            out.push(&labels, t, v)?;
        }
    }
    let batches = out.finish()?;
    let bytes: usize = batches.iter().map(RecordBatch::get_array_memory_size).sum();
    reservation.try_grow(bytes)?;
    Ok(batches)
}

/// Every selected series' samples over `timing`'s span, in key order, each in time order.
fn gather(
    node: &PromScan,
    timing: &Timing,
    reservation: &mut MemoryReservation,
) -> Result<(Vec<Samples>, Vec<Bytes>)> {
    let (lo, hi) = timing.span(&node.mode);
    let ns = |ms: i64| ms.saturating_mul(1_000_000);
    let req = ScanRequest {
        time: Some((ns(lo), ns(hi).saturating_add(1_000_000))),
        matcher: node.matcher.clone(),
        fields: Some(vec![node.field.clone()]),
        tags: Some(Vec::new()),
        field_bounds: Vec::new(),
    };
    let external = |e: tempora_storage::StorageError| DataFusionError::External(Box::new(e));
    let plan = node.engine.plan_scan(&node.table, &req).map_err(external)?;
    let mut index: HashMap<Bytes, usize> = HashMap::new();
    let mut series: Vec<Samples> = Vec::new();
    let mut keys: Vec<Bytes> = Vec::new();
    for r in 0..plan.regions() {
        let Some(run) = plan.read_run(r).map_err(external)? else {
            continue;
        };
        let values = as_f64(run.batch.column(3))?;
        let ids: Vec<usize> = run
            .keys
            .iter()
            .map(|k| {
                *index.entry(k.clone()).or_insert_with(|| {
                    keys.push(k.clone());
                    series.push(Samples::default());
                    series.len() - 1
                })
            })
            .collect();
        let before: usize = values.len() - values.null_count();
        reservation.try_grow(before * SAMPLE_BYTES)?;
        let floats = values.as_primitive::<Float64Type>();
        let (ranks, times) = (run.ranks(), run.times());
        // A run is sorted by series then time: each series' rows are one span, copied whole.
        let mut a = 0;
        while a < ranks.len() {
            let rank = ranks[a];
            let b = a + ranks[a..].iter().take_while(|&&r| r == rank).count();
            let s = &mut series[ids[rank as usize]];
            if floats.null_count() == 0 {
                s.times
                    .extend(times[a..b].iter().map(|t| t.div_euclid(1_000_000)));
                s.values.extend_from_slice(&floats.values()[a..b]);
            } else {
                for i in (a..b).filter(|&i| !floats.is_null(i)) {
                    s.times.push(times[i].div_euclid(1_000_000));
                    s.values.push(floats.value(i));
                }
            }
            a = b;
        }
    }
    for s in &mut series {
        if !s.times.windows(2).all(|w| w[0] <= w[1]) {
            let mut pairs: Vec<(i64, f64)> = s
                .times
                .iter()
                .copied()
                .zip(s.values.iter().copied())
                .collect();
            pairs.sort_by_key(|p| p.0);
            (s.times, s.values) = pairs.into_iter().unzip();
        }
    }
    // Key order, so that output is deterministic.
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by(|&a, &b| keys[a].cmp(&keys[b]));
    let mut taken: Vec<Option<Samples>> = series.into_iter().map(Some).collect();
    let series = order
        .iter()
        .map(|&i| taken[i].take().expect("each once"))
        .collect();
    let keys = order.iter().map(|&i| keys[i].clone()).collect();
    Ok((series, keys))
}

/// A field column as floats: integers and booleans are converted, strings refused.
fn as_f64(col: &ArrayRef) -> Result<ArrayRef> {
    match col.data_type() {
        DataType::Float64 => Ok(col.clone()),
        DataType::Int64 | DataType::UInt64 | DataType::Boolean => {
            Ok(arrow::compute::cast(col, &DataType::Float64)?)
        }
        other => Err(DataFusionError::Plan(format!(
            "a PromQL metric must be numeric; this field is {other}"
        ))),
    }
}

/// Builds the output batches.
struct Output {
    schema: SchemaRef,
    labels: Vec<StringBuilder>,
    ts: Int64Builder,
    values: Float64Builder,
    rows: usize,
    batch_rows: usize,
    done: Vec<RecordBatch>,
}

impl Output {
    fn new(schema: SchemaRef, labels: usize, batch_rows: usize) -> Self {
        Self {
            schema,
            labels: (0..labels).map(|_| StringBuilder::new()).collect(),
            ts: Int64Builder::new(),
            values: Float64Builder::new(),
            rows: 0,
            batch_rows,
            done: Vec::new(),
        }
    }

    fn push(&mut self, labels: &[Option<&str>], t: i64, v: f64) -> Result<()> {
        for (b, l) in self.labels.iter_mut().zip(labels) {
            b.append_option(*l);
        }
        self.ts.append_value(t);
        self.values.append_value(v);
        self.rows += 1;
        if self.rows == self.batch_rows {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        let mut cols: Vec<ArrayRef> = self
            .labels
            .iter_mut()
            .map(|b| Arc::new(b.finish()) as ArrayRef)
            .collect();
        cols.push(Arc::new(self.ts.finish()));
        cols.push(Arc::new(self.values.finish()));
        self.done
            .push(RecordBatch::try_new(self.schema.clone(), cols)?);
        self.rows = 0;
        Ok(())
    }

    fn finish(mut self) -> Result<Vec<RecordBatch>> {
        self.flush()?;
        Ok(self.done)
    }
}
