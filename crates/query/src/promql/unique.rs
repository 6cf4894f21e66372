//! `PromUnique`: passes its input through and fails the query when two rows have the same
//! key — how vector matching refuses what Prometheus refuses ("many-to-many matching not
//! allowed", "multiple matches for labels"). The key is some label columns and `__ts`; the
//! message names the first repeated label set.
//!
//! Invariant: it sees every row of its input in one partition (it asks DataFusion for a
//! single input partition), so a repeat across partitions is found too.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{Int64Type, SchemaRef};
use datafusion::common::DFSchemaRef;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{Expr, LogicalPlan, UserDefinedLogicalNodeCore};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, Distribution, ExecutionPlan, PlanProperties,
};
use futures::StreamExt;

use super::scan::TS;

/// The logical node.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd)]
pub struct PromUnique {
    pub input: LogicalPlan,
    /// Label columns of the key (`__ts` is always part of it).
    pub labels: Vec<String>,
    /// The refusal, before the repeated labels.
    pub message: String,
}

impl PromUnique {
    pub fn plan(
        input: LogicalPlan,
        labels: Vec<String>,
        message: impl Into<String>,
    ) -> LogicalPlan {
        LogicalPlan::Extension(datafusion::logical_expr::Extension {
            node: Arc::new(PromUnique {
                input,
                labels,
                message: message.into(),
            }),
        })
    }
}

impl UserDefinedLogicalNodeCore for PromUnique {
    fn name(&self) -> &str {
        "PromUnique"
    }
    fn inputs(&self) -> Vec<&LogicalPlan> {
        vec![&self.input]
    }
    fn schema(&self) -> &DFSchemaRef {
        self.input.schema()
    }
    fn expressions(&self) -> Vec<Expr> {
        Vec::new()
    }
    fn fmt_for_explain(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "PromUnique: labels={:?}", self.labels)
    }
    fn with_exprs_and_inputs(
        &self,
        _exprs: Vec<Expr>,
        mut inputs: Vec<LogicalPlan>,
    ) -> Result<Self> {
        assert_eq!(inputs.len(), 1, "PromUnique has one input");
        Ok(Self {
            input: inputs.remove(0),
            labels: self.labels.clone(),
            message: self.message.clone(),
        })
    }
}

/// The operator.
#[derive(Debug)]
pub struct PromUniqueExec {
    input: Arc<dyn ExecutionPlan>,
    /// Column indexes of the key labels, and of `__ts`.
    labels: Vec<(String, usize)>,
    ts: usize,
    message: String,
    props: Arc<PlanProperties>,
}

impl PromUniqueExec {
    pub fn new(node: &PromUnique, input: Arc<dyn ExecutionPlan>) -> Result<Self> {
        let schema = input.schema();
        let index = |n: &str| {
            schema
                .index_of(n)
                .map_err(|_| DataFusionError::Plan(format!("PromUnique: no column {n:?}")))
        };
        let labels = node
            .labels
            .iter()
            .map(|l| Ok((l.clone(), index(l)?)))
            .collect::<Result<_>>()?;
        let p = input.properties();
        let props = Arc::new(PlanProperties::new(
            p.eq_properties.clone(),
            datafusion::physical_plan::Partitioning::UnknownPartitioning(1),
            p.emission_type,
            p.boundedness,
        ));
        Ok(Self {
            ts: index(TS)?,
            labels,
            message: node.message.clone(),
            input,
            props,
        })
    }
}

impl DisplayAs for PromUniqueExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        let names: Vec<&str> = self.labels.iter().map(|l| l.0.as_str()).collect();
        write!(f, "PromUniqueExec: labels={names:?}")
    }
}

/// The key of row `i`, or an error naming its labels when it was seen before.
fn check(
    seen: &mut HashSet<(Vec<Option<String>>, i64)>,
    b: &RecordBatch,
    labels: &[(String, usize)],
    ts: usize,
    message: &str,
) -> Result<()> {
    let t = b.column(ts).as_primitive::<Int64Type>();
    let cols: Vec<_> = labels
        .iter()
        .map(|(_, i)| b.column(*i).as_string::<i32>())
        .collect();
    for i in 0..b.num_rows() {
        let key: Vec<Option<String>> = cols
            .iter()
            .map(|c| (!c.is_null(i)).then(|| c.value(i).to_string()))
            .collect();
        if let Some(key) = seen.replace((key, t.value(i))) {
            let shown: Vec<String> = labels
                .iter()
                .zip(&key.0)
                .filter_map(|((n, _), v)| v.as_ref().map(|v| format!("{n}=\"{v}\"")))
                .collect();
            return Err(DataFusionError::External(Box::new(
                crate::error::QueryError::Execution(format!("{message} {{{}}}", shown.join(", "))),
            )));
        }
    }
    Ok(())
}

impl ExecutionPlan for PromUniqueExec {
    fn name(&self) -> &str {
        "PromUniqueExec"
    }
    fn properties(&self) -> &Arc<PlanProperties> {
        &self.props
    }
    fn required_input_distribution(&self) -> Vec<Distribution> {
        vec![Distribution::SinglePartition]
    }
    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }
    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }
    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        assert_eq!(children.len(), 1, "PromUniqueExec has one child");
        Ok(Arc::new(Self {
            input: children.remove(0),
            labels: self.labels.clone(),
            ts: self.ts,
            message: self.message.clone(),
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
                "PromUniqueExec has one partition, asked for {partition}"
            )));
        }
        let schema: SchemaRef = self.input.schema();
        let (labels, ts, message) = (self.labels.clone(), self.ts, self.message.clone());
        let mut seen = HashSet::new();
        let stream = self.input.execute(0, ctx)?.map(move |b| {
            let b = b?;
            check(&mut seen, &b, &labels, ts, &message)?;
            Ok(b)
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }
}
