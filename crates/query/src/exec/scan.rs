//! The physical scan of a Tempora table: regions read one at a time, streamed in slices.
//!
//! Invariants:
//! - The plan's regions are dealt round-robin to at most `target_partitions` output
//!   partitions; a partition reads its next region only when its consumer has taken every
//!   slice of the previous one, so a running scan holds at most one region per partition.
//! - Each region read is charged to the query's memory pool before it is handed on; a
//!   region that does not fit fails the query with DataFusion's "resources exhausted" error
//!   rather than growing the process.
//! - With a `limit` (pushed only when no filter remains above the scan), one partition reads
//!   regions in order and stops once it has produced `limit` rows.
//! - Reading runs on the blocking pool, never on the async runtime.

use std::collections::VecDeque;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::TaskContext;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryReservation};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning, PlanProperties,
    SendableRecordBatchStream,
};
use futures::StreamExt;
use tempora_storage::ScanPlan;

/// Where the rows come from.
#[derive(Clone)]
pub enum ScanSource {
    /// Regions of a planned scan.
    Regions(Arc<ScanPlan>),
    /// The latest row of every selected series, already read from the last-value cache.
    Latest(RecordBatch),
}

/// A scan of one Tempora table.
#[derive(Clone)]
pub struct TemporaScanExec {
    table: String,
    source: ScanSource,
    /// Schema of what the engine returns (tags, time, requested fields).
    read_schema: SchemaRef,
    /// Columns of `read_schema` the plan wants, in output order.
    projection: Option<Vec<usize>>,
    limit: Option<usize>,
    /// A description of the pushed-down predicates, for `EXPLAIN`.
    pushed: String,
    batch_rows: usize,
    props: Arc<PlanProperties>,
}

impl std::fmt::Debug for TemporaScanExec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemporaScanExec")
            .field("table", &self.table)
            .finish()
    }
}

/// Builder arguments of [`TemporaScanExec::new`].
pub struct ScanArgs {
    pub table: String,
    pub source: ScanSource,
    pub read_schema: SchemaRef,
    pub projection: Option<Vec<usize>>,
    pub limit: Option<usize>,
    pub pushed: String,
    pub target_partitions: usize,
    pub batch_rows: usize,
}

impl TemporaScanExec {
    pub fn new(a: ScanArgs) -> DfResult<Self> {
        let schema = match &a.projection {
            Some(p) => Arc::new(a.read_schema.project(p)?),
            None => a.read_schema.clone(),
        };
        let partitions = match &a.source {
            ScanSource::Regions(plan) if a.limit.is_none() => {
                plan.regions().clamp(1, a.target_partitions.max(1))
            }
            _ => 1,
        };
        let props = PlanProperties::new(
            EquivalenceProperties::new(schema),
            Partitioning::UnknownPartitioning(partitions),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Ok(Self {
            table: a.table,
            source: a.source,
            read_schema: a.read_schema,
            projection: a.projection,
            limit: a.limit,
            pushed: a.pushed,
            batch_rows: a.batch_rows.max(1),
            props: Arc::new(props),
        })
    }

    fn partitions(&self) -> usize {
        self.props.partitioning.partition_count()
    }

    /// Cuts a region's batch into projected slices of at most `batch_rows` rows.
    fn slices(&self, b: &RecordBatch, budget: &mut Option<usize>) -> DfResult<Vec<RecordBatch>> {
        let b = b.clone().with_schema(self.read_schema.clone())?;
        let b = match &self.projection {
            Some(p) => b.project(p)?,
            None => b,
        };
        let mut n = b.num_rows();
        if let Some(left) = budget {
            n = n.min(*left);
            *left -= n;
        }
        Ok((0..n)
            .step_by(self.batch_rows)
            .map(|o| b.slice(o, self.batch_rows.min(n - o)))
            .collect())
    }
}

impl DisplayAs for TemporaScanExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let table = self.table.split_once('.').map_or(&*self.table, |(_, t)| t);
        write!(f, "TemporaScanExec: table={table}")?;
        match &self.source {
            ScanSource::Regions(plan) => write!(f, ", {}", plan.stats)?,
            ScanSource::Latest(b) => write!(f, ", last_value_cache=true, series={}", b.num_rows())?,
        }
        if !self.pushed.is_empty() {
            write!(f, ", pushed=[{}]", self.pushed)?;
        }
        if let Some(l) = self.limit {
            write!(f, ", limit={l}")?;
        }
        Ok(())
    }
}

/// One partition's reading state.
struct Reader {
    exec: Arc<TemporaScanExec>,
    todo: VecDeque<usize>,
    ready: VecDeque<RecordBatch>,
    budget: Option<usize>,
    reservation: MemoryReservation,
}

impl Reader {
    async fn next(mut self) -> Option<(DfResult<RecordBatch>, Reader)> {
        loop {
            if let Some(b) = self.ready.pop_front() {
                return Some((Ok(b), self));
            }
            if self.budget == Some(0) {
                return None;
            }
            let ScanSource::Regions(plan) = &self.exec.source else {
                return None;
            };
            let i = self.todo.pop_front()?;
            // The previous region's slices are all taken: release its charge first.
            self.reservation.free();
            let plan = plan.clone();
            let read = tokio::task::spawn_blocking(move || plan.read(i))
                .await
                .map_err(|e| DataFusionError::External(Box::new(e)))
                .and_then(|r| r.map_err(|e| DataFusionError::External(Box::new(e))));
            let batch = match read {
                Ok(Some(b)) => b,
                Ok(None) => continue,
                Err(e) => return Some((Err(e), self.done())),
            };
            if let Err(e) = self.reservation.try_grow(batch.get_array_memory_size()) {
                return Some((Err(e), self.done()));
            }
            match self.exec.slices(&batch, &mut self.budget) {
                Ok(s) => self.ready.extend(s),
                Err(e) => return Some((Err(e), self.done())),
            }
        }
    }

    /// Ends the stream after an error.
    fn done(mut self) -> Self {
        self.todo.clear();
        self.ready.clear();
        self
    }
}

impl ExecutionPlan for TemporaScanExec {
    fn name(&self) -> &str {
        "TemporaScanExec"
    }
    fn properties(&self) -> &Arc<PlanProperties> {
        &self.props
    }
    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![]
    }
    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> DfResult<TreeNodeRecursion>,
    ) -> DfResult<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }
    fn with_new_children(
        self: Arc<Self>,
        _children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        Ok(self)
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> DfResult<SendableRecordBatchStream> {
        let n = self.partitions();
        if partition >= n {
            return Err(DataFusionError::Internal(format!(
                "TemporaScanExec has {n} partitions, asked for {partition}"
            )));
        }
        let schema = self.props.eq_properties.schema().clone();
        let me = Arc::new(self.clone());
        let reservation = MemoryConsumer::new(format!("TemporaScan[{partition}]"))
            .register(context.memory_pool());
        let mut budget = self.limit;
        let (todo, ready) = match &self.source {
            ScanSource::Regions(plan) => (
                (partition..plan.regions()).step_by(n).collect(),
                VecDeque::new(),
            ),
            ScanSource::Latest(b) => (VecDeque::new(), self.slices(b, &mut budget)?.into()),
        };
        let reader = Reader {
            exec: me,
            todo,
            ready,
            budget,
            reservation,
        };
        let stream = futures::stream::unfold(reader, Reader::next).boxed();
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }
}
