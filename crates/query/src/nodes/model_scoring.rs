//! `ModelScoring`: the node above a window that scores with a model; it passes its input's
//! rows through unchanged and carries the scoring's counters, so `EXPLAIN ANALYZE` can show
//! how many points were scored, came from the kept state, or were replayed
//! ([`crate::exec::model_scoring::ModelScoringExec`]).

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use datafusion::common::DFSchemaRef;
use datafusion::error::Result;
use datafusion::logical_expr::{Expr, LogicalPlan, UserDefinedLogicalNodeCore};

use crate::functions::model_anomaly::ScoreCounters;

#[derive(Debug, Clone)]
pub struct ModelScoring {
    pub input: LogicalPlan,
    pub model: String,
    pub counters: Arc<ScoreCounters>,
}

impl PartialEq for ModelScoring {
    fn eq(&self, o: &Self) -> bool {
        self.input == o.input && self.model == o.model && Arc::ptr_eq(&self.counters, &o.counters)
    }
}
impl Eq for ModelScoring {}
impl std::hash::Hash for ModelScoring {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.input.hash(h);
        self.model.hash(h);
    }
}
impl PartialOrd for ModelScoring {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        self.input.partial_cmp(&other.input)
    }
}

impl UserDefinedLogicalNodeCore for ModelScoring {
    fn name(&self) -> &str {
        "ModelScoring"
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
        write!(f, "ModelScoring: model={}", self.model)
    }
    fn with_exprs_and_inputs(
        &self,
        _exprs: Vec<Expr>,
        mut inputs: Vec<LogicalPlan>,
    ) -> Result<Self> {
        assert_eq!(inputs.len(), 1, "ModelScoring has one input");
        Ok(Self {
            input: inputs.remove(0),
            model: self.model.clone(),
            counters: self.counters.clone(),
        })
    }
}
