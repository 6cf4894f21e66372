//! `ModelScoringExec`: passes its input through and reports the model scoring's counters as
//! metrics (`points_scored`, `points_from_kept_state`, `points_replayed`,
//! `untrained_series`), read when `EXPLAIN ANALYZE` asks, after the rows were produced.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use datafusion::error::Result;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan, PlanProperties};

use crate::functions::model_anomaly::ScoreCounters;

#[derive(Debug)]
pub struct ModelScoringExec {
    input: Arc<dyn ExecutionPlan>,
    model: String,
    counters: Arc<ScoreCounters>,
    properties: Arc<PlanProperties>,
}

impl ModelScoringExec {
    pub fn new(input: Arc<dyn ExecutionPlan>, model: String, counters: Arc<ScoreCounters>) -> Self {
        let properties = input.properties().clone();
        Self {
            input,
            model,
            counters,
            properties,
        }
    }
}

impl DisplayAs for ModelScoringExec {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "ModelScoringExec: model={}", self.model)
    }
}

impl ExecutionPlan for ModelScoringExec {
    fn name(&self) -> &str {
        "ModelScoringExec"
    }
    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }
    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(
            &Arc<dyn datafusion::physical_expr::PhysicalExpr>,
        ) -> Result<datafusion::common::tree_node::TreeNodeRecursion>,
    ) -> Result<datafusion::common::tree_node::TreeNodeRecursion> {
        Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
    }
    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }
    fn maintains_input_order(&self) -> Vec<bool> {
        vec![true]
    }
    fn with_new_children(
        self: Arc<Self>,
        mut children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        assert_eq!(children.len(), 1, "ModelScoringExec has one child");
        Ok(Arc::new(Self::new(
            children.remove(0),
            self.model.clone(),
            self.counters.clone(),
        )))
    }
    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        self.input.execute(partition, context)
    }
    fn metrics(&self) -> Option<MetricsSet> {
        let set = ExecutionPlanMetricsSet::new();
        let c = &self.counters;
        for (name, v) in [
            ("points_scored", &c.scored),
            ("points_from_kept_state", &c.from_kept),
            ("points_replayed", &c.replayed),
            ("untrained_series", &c.untrained_series),
        ] {
            MetricBuilder::new(&set)
                .global_counter(name)
                .add(v.load(Ordering::Relaxed) as usize);
        }
        Some(set.clone_inner())
    }
}
