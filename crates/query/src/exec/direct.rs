//! Physical plans made directly for the plans Tempora's operators end in: `Limit`, `Sort`,
//! `Projection`, `Filter` and aliases over a [`TemporaAggregate`], a scan of the last-value
//! cache, or a scan of the table that reads one partition (its regions all in one).
//!
//! Each of these leaves has one partition and sorts nothing by itself, so DataFusion's physical
//! optimiser passes (distribution, sort enforcement, projection and limit push-down, batch
//! coalescing, about twenty of them) have nothing to change there; for a small query they
//! cost more than its execution. [`plan`] builds the operators of such a plan one by one, as
//! DataFusion's planner would, and returns `None` for any other plan, which then goes
//! through DataFusion's planner and passes as usual. `EXPLAIN` shows DataFusion's planning of
//! the same logical plan.

use std::sync::Arc;

use datafusion::catalog::Session;
use datafusion::datasource::source_as_provider;
use datafusion::error::Result;
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::{Expr, LogicalPlan};
use datafusion::physical_expr::{LexOrdering, create_physical_expr, create_physical_sort_exprs};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::limit::GlobalLimitExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::sorts::sort::SortExec;
use futures::future::BoxFuture;

use crate::nodes::TemporaAggregate;
use crate::table::TemporaTable;

/// The physical plan of `plan`, when it is one of the shapes above.
pub fn plan<'a>(
    plan: &'a LogicalPlan,
    session: &'a dyn Session,
) -> BoxFuture<'a, Result<Option<Arc<dyn ExecutionPlan>>>> {
    Box::pin(async move {
        let props = session.execution_props();
        let ctx = PhysicalPlanningContext::default();
        match plan {
            LogicalPlan::Projection(p) => {
                let Some(input) = self::plan(&p.input, session).await? else {
                    return Ok(None);
                };
                let exprs = p
                    .expr
                    .iter()
                    .zip(p.schema.fields())
                    .map(|(e, f)| {
                        let e = match e {
                            Expr::Alias(a) => a.expr.as_ref(),
                            e => e,
                        };
                        Ok((
                            create_physical_expr(e, p.input.schema(), props, &ctx)?,
                            f.name().clone(),
                        ))
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok(Some(
                    Arc::new(ProjectionExec::try_new(exprs, input)?) as Arc<dyn ExecutionPlan>
                ))
            }
            LogicalPlan::Sort(s) => {
                let Some(input) = self::plan(&s.input, session).await? else {
                    return Ok(None);
                };
                let exprs = create_physical_sort_exprs(&s.expr, s.input.schema(), props, &ctx)?;
                let Some(ordering) = LexOrdering::new(exprs) else {
                    return Ok(Some(input));
                };
                let sort: Arc<dyn ExecutionPlan> =
                    Arc::new(SortExec::new(ordering, input).with_fetch(s.fetch));
                Ok(Some(sort))
            }
            LogicalPlan::Limit(l) => {
                use datafusion::logical_expr::{FetchType, SkipType};
                let (Ok(SkipType::Literal(skip)), Ok(FetchType::Literal(fetch))) =
                    (l.get_skip_type(), l.get_fetch_type())
                else {
                    return Ok(None);
                };
                let Some(input) = self::plan(&l.input, session).await? else {
                    return Ok(None);
                };
                let limit: Arc<dyn ExecutionPlan> =
                    Arc::new(GlobalLimitExec::new(input, skip, fetch));
                Ok(Some(limit))
            }
            // An alias changes names only; the operators below produce the same columns.
            LogicalPlan::SubqueryAlias(a) => self::plan(&a.input, session).await,
            LogicalPlan::Extension(e) => {
                let Some(a) = e.node.as_any().downcast_ref::<TemporaAggregate>() else {
                    return Ok(None);
                };
                let plan = |e: &Expr, schema: &datafusion::common::DFSchema| {
                    create_physical_expr(e, schema, props, &ctx)
                };
                let rollups = crate::options::of(session.config_options()).rollups;
                super::planner::aggregate(a, &plan, rollups).map(Some)
            }
            LogicalPlan::TableScan(s) => {
                let provider = source_as_provider(&s.source)?;
                let Some(t) = provider.downcast_ref::<TemporaTable>() else {
                    return Ok(None);
                };
                let p = datafusion::catalog::TableProvider::scan(
                    t,
                    session,
                    s.projection.as_ref(),
                    &s.filters,
                    s.fetch,
                )
                .await?;
                // A scan of regions spread over several partitions needs DataFusion's
                // distribution passes above it (a sort merges them); one partition does not.
                let one = p.properties().output_partitioning().partition_count() == 1;
                Ok((t.is_latest() || one).then_some(p))
            }
            LogicalPlan::Filter(f) => {
                let Some(input) = self::plan(&f.input, session).await? else {
                    return Ok(None);
                };
                // A predicate DataFusion plans specially (a subquery) goes its usual way.
                let Ok(predicate) =
                    create_physical_expr(&f.predicate, f.input.schema(), props, &ctx)
                else {
                    return Ok(None);
                };
                let filter: Arc<dyn ExecutionPlan> =
                    Arc::new(FilterExec::try_new(predicate, input)?);
                Ok(Some(filter))
            }
            _ => Ok(None),
        }
    })
}
