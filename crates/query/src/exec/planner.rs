//! The query planner of every Tempora session: DataFusion's physical planner with one
//! extension planner that turns Tempora's logical nodes into their operators.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::Session;
use datafusion::common::DFSchema;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::context::QueryPlanner;
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::{LogicalPlan, UserDefinedLogicalNode, UserDefinedLogicalNodeCore};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_planner::{DefaultPhysicalPlanner, ExtensionPlanner, PhysicalPlanner};

use super::aggregate::{AggregateExec, AggregateSpec};
use super::filter::{PhysicalFilter, unqualified};
use super::gap_fill::{GapFillArgs, GapFillExec, PhysicalBound};
use crate::nodes::gap_fill::Bound;
use crate::nodes::{GapFill, TemporaAggregate};

#[derive(Debug, Default)]
pub struct TemporaQueryPlanner;

#[async_trait]
impl QueryPlanner for TemporaQueryPlanner {
    async fn create_physical_plan(
        &self,
        logical_plan: &LogicalPlan,
        session: &dyn Session,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if let Some(p) = super::direct::plan(logical_plan, session).await? {
            return Ok(p);
        }
        DefaultPhysicalPlanner::with_extension_planners(vec![Arc::new(TemporaPlanner)])
            .create_physical_plan(logical_plan, session)
            .await
    }
}

/// Makes the operators of Tempora's nodes.
#[derive(Debug, Default)]
pub struct TemporaPlanner;

#[async_trait]
impl ExtensionPlanner for TemporaPlanner {
    async fn plan_extension(
        &self,
        planner: &dyn PhysicalPlanner,
        node: &dyn UserDefinedLogicalNode,
        _logical_inputs: &[&LogicalPlan],
        physical_inputs: &[Arc<dyn ExecutionPlan>],
        session: &dyn Session,
        ctx: &PhysicalPlanningContext,
    ) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        if let Some(a) = node.as_any().downcast_ref::<TemporaAggregate>() {
            let plan = |e: &datafusion::logical_expr::Expr, schema: &DFSchema| {
                planner.create_physical_expr(e, schema, session, ctx)
            };
            let rollups = crate::options::of(session.config_options()).rollups;
            return aggregate(a, &plan, rollups).map(Some);
        }
        if let Some(p) = node
            .as_any()
            .downcast_ref::<crate::promql::scan::PromScan>()
        {
            let config = session.config();
            return Ok(Some(Arc::new(
                crate::promql::scan::exec::PromScanExec::new(
                    p,
                    config.target_partitions(),
                    config.batch_size(),
                ),
            )));
        }
        if let Some(u) = node
            .as_any()
            .downcast_ref::<crate::promql::unique::PromUnique>()
        {
            let [input] = physical_inputs else {
                return Err(DataFusionError::Internal(
                    "PromUnique takes one input".into(),
                ));
            };
            return Ok(Some(Arc::new(crate::promql::unique::PromUniqueExec::new(
                u,
                input.clone(),
            )?)));
        }
        if let Some(m) = node.as_any().downcast_ref::<crate::nodes::ModelScoring>() {
            let [input] = physical_inputs else {
                return Err(DataFusionError::Internal(
                    "ModelScoring takes one input".into(),
                ));
            };
            return Ok(Some(Arc::new(super::model_scoring::ModelScoringExec::new(
                input.clone(),
                m.model.clone(),
                m.counters.clone(),
            ))));
        }
        let Some(g) = node.as_any().downcast_ref::<GapFill>() else {
            return Ok(None);
        };
        let [input] = physical_inputs else {
            return Err(DataFusionError::Internal("GapFill takes one input".into()));
        };
        let schema = UserDefinedLogicalNodeCore::schema(g).as_arrow();
        let index = |name: &str| {
            schema.index_of(name).map_err(|_| {
                DataFusionError::Plan(format!("GapFill: no column {name:?} in its input"))
            })
        };
        let empty = DFSchema::empty();
        let bound = |b: &Option<Bound>| -> Result<Option<PhysicalBound>> {
            b.as_ref()
                .map(|b| {
                    Ok(PhysicalBound {
                        expr: planner.create_physical_expr(&b.expr, &empty, session, ctx)?,
                        exclusive: b.exclusive,
                    })
                })
                .transpose()
        };
        Ok(Some(Arc::new(GapFillExec::new(GapFillArgs {
            input: input.clone(),
            schema: Arc::new(schema.clone()),
            time: index(&g.time)?,
            tags: g.tags.iter().map(|t| index(t)).collect::<Result<_>>()?,
            aggs: g.aggs.iter().map(|a| index(a)).collect::<Result<_>>()?,
            fill: g.fill.clone(),
            width: g.width,
            offset_ns: g.offset_ns,
            lower: bound(&g.lower)?,
            upper: bound(&g.upper)?,
        }))))
    }
}

/// The operator of a [`TemporaAggregate`]; `plan` makes physical expressions.
pub fn aggregate(
    a: &TemporaAggregate,
    plan: &super::filter::Planner,
    rollups: bool,
) -> Result<Arc<dyn ExecutionPlan>> {
    let filter = PhysicalFilter::new(&a.table, &a.filter, plan)?;
    let view = a
        .table
        .engine()
        .rollup_view(a.table.name())
        .ok_or_else(|| DataFusionError::Plan(format!("no table {}", a.table.name())))?;
    let start = filter.time_range()?.map_or(i64::MIN, |r| r.0);
    let rollup = super::rollup::choose(&super::rollup::Query {
        enabled: rollups,
        view: &view,
        key: a.time_group().map(|(_, k)| k),
        row_fields: filter.row_fields(),
        start,
    });
    let time_expr = match a.time_group() {
        Some((e, _)) => {
            let time = a
                .table
                .arrow_schema()
                .field_with_name(tempora_model::TIME_COLUMN)?
                .clone();
            let schema = DFSchema::try_from(arrow::datatypes::Schema::new(vec![time]))?;
            Some(plan(&unqualified(e), &schema)?)
        }
        None => None,
    };
    Ok(Arc::new(AggregateExec::new(AggregateSpec {
        table: a.table.clone(),
        filter,
        groups: a.groups.clone(),
        time_expr,
        aggs: a.aggs.clone(),
        newest: a.newest,
        schema: Arc::new(UserDefinedLogicalNodeCore::schema(a).as_arrow().clone()),
        node: Arc::new(a.clone()),
        rollup,
    })))
}
