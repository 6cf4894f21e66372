//! `AnomalyRule` (analyzer): gives the anomaly functions their series and time order.
//!
//! - A call written without `OVER` (the front door made it `tempora_anomaly_*_series(...)
//!   OVER ()`) is scored per series in time order: with an algorithm, the series are the
//!   table's tags present in the query; with a model, the model's key columns.
//! - A call naming a model (its second argument is not an algorithm but a model of the
//!   database) becomes a [`ModelAnomaly`] over `(value, 'model', time, key...)`, with
//!   `OVER (ORDER BY ...)`'s first key as the time when written with `OVER`.
//!
//! Each rewritten call gets a window node of its own (a window node's calls share one
//! partitioning), and keeps its output name, so the plan above it is unchanged.

use std::any::Any;
use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Column, DFSchema, Result, ScalarValue, plan_err};
use datafusion::datasource::source_as_provider;
use datafusion::logical_expr::expr::{WindowFunction, WindowFunctionParams};
use datafusion::logical_expr::{Expr, LogicalPlan, Window, WindowFunctionDefinition, WindowUDF};
use datafusion::optimizer::AnalyzerRule;
use tempora_ml::detect::Algorithm;

use crate::functions::anomaly::Anomaly;
use crate::functions::model_anomaly::{ModelAnomaly, ScoreCounters, external};
use crate::models::Models;
use crate::table::TemporaTable;

/// The model and counters of a rewritten call, when it scores with a model.
type Scoring = Option<(String, Arc<ScoreCounters>)>;

#[derive(Debug)]
pub struct AnomalyRule {
    pub models: Arc<Models>,
    pub db: String,
}

impl AnalyzerRule for AnomalyRule {
    fn analyze(&self, plan: LogicalPlan, _: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up(|p| self.rewrite(p)).map(|t| t.data)
    }

    fn name(&self) -> &str {
        "tempora_anomaly"
    }
}

impl AnomalyRule {
    fn rewrite(&self, p: LogicalPlan) -> Result<Transformed<LogicalPlan>> {
        let LogicalPlan::Window(w) = &p else {
            return Ok(Transformed::no(p));
        };
        let (mut keep, mut changed) = (Vec::new(), Vec::new());
        for e in &w.window_expr {
            match self.rewrite_expr(e, &w.input)? {
                Some(n) => changed.push(n),
                None => keep.push(e.clone()),
            }
        }
        // Each model's window gets a ModelScoring node above it, for EXPLAIN ANALYZE.
        if changed.is_empty() {
            return Ok(Transformed::no(p));
        }
        let mut plan = w.input.clone();
        if !keep.is_empty() {
            plan = Arc::new(LogicalPlan::Window(Window::try_new(keep, plan)?));
        }
        for (c, scoring) in changed {
            plan = Arc::new(LogicalPlan::Window(Window::try_new(vec![c], plan)?));
            if let Some((model, counters)) = scoring {
                let node = crate::nodes::ModelScoring {
                    input: Arc::unwrap_or_clone(plan),
                    model,
                    counters,
                };
                plan = Arc::new(LogicalPlan::Extension(
                    datafusion::logical_expr::Extension {
                        node: Arc::new(node),
                    },
                ));
            }
        }
        Ok(Transformed::yes(Arc::unwrap_or_clone(plan)))
    }

    fn rewrite_expr(&self, e: &Expr, input: &LogicalPlan) -> Result<Option<(Expr, Scoring)>> {
        let inner = match e {
            Expr::Alias(a) => a.expr.as_ref(),
            other => other,
        };
        let Expr::WindowFunction(wf) = inner else {
            return Ok(None);
        };
        let WindowFunctionDefinition::WindowUDF(udf) = &wf.fun else {
            return Ok(None);
        };
        let any: &dyn Any = udf.inner().as_ref();
        let Some(a) = any.downcast_ref::<Anomaly>() else {
            return Ok(None);
        };
        let name_arg = match wf.params.args.get(1) {
            Some(Expr::Literal(ScalarValue::Utf8(Some(s)), _)) => Some(s.clone()),
            _ => None,
        };
        let model =
            name_arg.filter(|n| Algorithm::parse(n).is_err() && self.models.exists(&self.db, n));
        if !a.per_series && model.is_none() {
            return Ok(None);
        }
        let f = a.public_name();
        let schema = input.schema();
        let time = match (a.per_series, wf.params.order_by.first()) {
            (false, Some(s)) => s.expr.clone(),
            (false, None) => {
                return plan_err!(
                    "{f}: a model scores each series in time order: add ORDER BY time to OVER (...), or leave OVER out"
                );
            }
            (true, _) => time_column(schema, f)?,
        };
        let mut params: WindowFunctionParams = wf.params.clone();
        let mut scoring = None;
        let fun = match &model {
            Some(m) => {
                let loaded = self.models.ready(&self.db, m).map_err(external)?;
                if loaded.model.spec.task != tempora_ml::model::Task::AnomalyDetection {
                    return plan_err!(
                        "{f}: model {m:?} is a forecasting model; forecast('{m}', horizon) uses it"
                    );
                }
                if params.args.len() > 2 {
                    return plan_err!(
                        "{f}: model {m:?} takes no options (they were fixed when it was trained)"
                    );
                }
                let mut keys = Vec::new();
                for k in &loaded.model.key_columns {
                    let Ok((q, field)) = schema.qualified_field_with_unqualified_name(k) else {
                        return plan_err!(
                            "{f}: model {m:?} keys its series by {}; the query has no column {k:?}",
                            loaded.model.key_columns.join(", ")
                        );
                    };
                    keys.push(Expr::Column(Column::new(q.cloned(), field.name())));
                }
                if a.per_series {
                    params.partition_by = keys.clone();
                }
                params.args.push(time.clone());
                params.args.extend(keys);
                let counters = Arc::new(ScoreCounters::default());
                scoring = Some((m.clone(), counters.clone()));
                let udf = ModelAnomaly::new(a.output, self.models.clone(), &self.db, m, counters);
                WindowFunctionDefinition::WindowUDF(Arc::new(WindowUDF::new_from_impl(udf)))
            }
            None => {
                params.partition_by = tags(input, schema);
                wf.fun.clone()
            }
        };
        if a.per_series {
            params.order_by = vec![time.sort(true, false)];
        }
        let new = Expr::WindowFunction(Box::new(WindowFunction { fun, params }));
        // Keep the output name the plan above refers to.
        let (qualifier, name) = e.qualified_name();
        let new = match qualifier {
            Some(q) => new.alias_qualified(Some(q), name),
            None => new.alias(name),
        };
        Ok(Some((new, scoring)))
    }
}

/// The time column: `time` if it is a timestamp, else the only timestamp column.
fn time_column(schema: &DFSchema, f: &str) -> Result<Expr> {
    use datafusion::arrow::datatypes::DataType;
    let ts: Vec<(
        Option<&datafusion::common::TableReference>,
        &Arc<datafusion::arrow::datatypes::Field>,
    )> = schema
        .iter()
        .filter(|(_, field)| matches!(field.data_type(), DataType::Timestamp(_, _)))
        .collect();
    let pick = ts
        .iter()
        .find(|(_, field)| field.name() == "time")
        .or(if ts.len() == 1 { ts.first() } else { None });
    match pick {
        Some((q, field)) => Ok(Expr::Column(Column::new(q.cloned(), field.name()))),
        None => plan_err!(
            "{f}: scoring each series in time order needs a timestamp column named time in the query (or write OVER (PARTITION BY ... ORDER BY ...))"
        ),
    }
}

/// The tags of the Tempora table under `plan` that are columns of `schema`.
fn tags(plan: &LogicalPlan, schema: &DFSchema) -> Vec<Expr> {
    let mut names = Vec::new();
    scan_tags(plan, &mut names);
    names
        .iter()
        .filter_map(|n| schema.qualified_field_with_unqualified_name(n).ok())
        .map(|(q, field)| Expr::Column(Column::new(q.cloned(), field.name())))
        .collect()
}

fn scan_tags(plan: &LogicalPlan, out: &mut Vec<String>) {
    if let LogicalPlan::TableScan(s) = plan {
        if let Ok(p) = source_as_provider(&s.source)
            && let Some(t) = p.downcast_ref::<TemporaTable>()
        {
            for tag in t.tags() {
                if !out.contains(tag) {
                    out.push(tag.clone());
                }
            }
        }
        return;
    }
    for i in plan.inputs() {
        scan_tags(i, out);
    }
}
