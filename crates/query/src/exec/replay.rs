//! Which physical plans may run again. The plan cache keeps the physical plan of a text it has
//! seen ([`crate::cache`]) and runs it again after DataFusion's `reset_plan_states`, which
//! gives every operator fresh state. That is sound only when
//!
//! - no operator holds data read while the plan was made: a Tempora scan holds the regions
//!   (or the last-value cache's rows) of the moment it was planned, a memory table its
//!   batches, an `information_schema` listing its rows. So the leaves must read when they run:
//!   [`AggregateExec`] (it plans its scan in `execute`), or produce no data (`EmptyExec`,
//!   `PlaceholderRowExec`);
//! - no state escapes the reset: a TopK `SortExec` makes a dynamic filter and DataFusion may
//!   push it into a `FilterExec` below, where the reset would not renew it. A TopK is kept only
//!   with no `FilterExec` under it;
//! - every operator between is one known to compute from its input alone: projection,
//!   filter, sort, limits, merges of partitions (sorted or not) and [`GapFillExec`].
//!
//! Anything else (joins, DataFusion's own aggregates, repartitioning, unions, windows,
//! DataFusion's `DataSourceExec`) makes the plan be made again for each run.

use std::sync::Arc;

use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::coalesce_partitions::CoalescePartitionsExec;
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::filter::FilterExec;
use datafusion::physical_plan::limit::{GlobalLimitExec, LocalLimitExec};
use datafusion::physical_plan::placeholder_row::PlaceholderRowExec;
use datafusion::physical_plan::projection::ProjectionExec;
use datafusion::physical_plan::sorts::sort::SortExec;
use datafusion::physical_plan::sorts::sort_preserving_merge::SortPreservingMergeExec;

use super::aggregate::AggregateExec;
use super::gap_fill::GapFillExec;
use crate::nodes::TemporaAggregate;

/// Whether `plan` may be run again after its states are reset (the rules above).
pub fn replayable(plan: &Arc<dyn ExecutionPlan>) -> bool {
    let any: &dyn ExecutionPlan = plan.as_ref();
    let leaf = any.is::<AggregateExec>() || any.is::<EmptyExec>() || any.is::<PlaceholderRowExec>();
    if leaf {
        return true;
    }
    if let Some(sort) = any.downcast_ref::<SortExec>()
        && sort.fetch().is_some()
        && has_filter(sort.input())
    {
        return false;
    }
    let between = any.is::<ProjectionExec>()
        || any.is::<FilterExec>()
        || any.is::<SortExec>()
        || any.is::<GlobalLimitExec>()
        || any.is::<LocalLimitExec>()
        || any.is::<CoalescePartitionsExec>()
        || any.is::<SortPreservingMergeExec>()
        || any.is::<GapFillExec>();
    let children = plan.children();
    between && !children.is_empty() && children.into_iter().all(replayable)
}

fn has_filter(plan: &Arc<dyn ExecutionPlan>) -> bool {
    plan.is::<FilterExec>() || plan.children().into_iter().any(has_filter)
}

/// Whether a logical plan can give a replayable physical plan at all: every leaf, subqueries
/// included, is a [`TemporaAggregate`] or an empty relation. Checked before the physical plan
/// is made, so a plan whose scans read while planning is not planned twice.
pub fn may_replay(plan: &LogicalPlan) -> bool {
    let mut ok = true;
    let _ = plan.apply_with_subqueries(|node| {
        let leaf_ok = match node {
            LogicalPlan::Extension(e) => e.node.as_any().is::<TemporaAggregate>(),
            LogicalPlan::EmptyRelation(_) => true,
            other => !other.inputs().is_empty(),
        };
        ok &= leaf_ok;
        Ok(if ok {
            TreeNodeRecursion::Continue
        } else {
            TreeNodeRecursion::Stop
        })
    });
    ok
}

#[cfg(test)]
mod tests {
    use arrow::datatypes::{DataType, Field, Schema};
    use datafusion::physical_expr::expressions::{col, lit};
    use datafusion::physical_expr::{LexOrdering, PhysicalSortExpr};
    use datafusion::physical_plan::repartition::RepartitionExec;
    use datafusion::physical_plan::{Partitioning, test::TestMemoryExec};

    use super::*;

    fn schema() -> Arc<Schema> {
        Arc::new(Schema::new(vec![Field::new("v", DataType::Int64, true)]))
    }

    fn empty() -> Arc<dyn ExecutionPlan> {
        Arc::new(EmptyExec::new(schema()))
    }

    fn sort(input: Arc<dyn ExecutionPlan>, fetch: Option<usize>) -> Arc<dyn ExecutionPlan> {
        let key = PhysicalSortExpr::new_default(col("v", &schema()).unwrap());
        let order = LexOrdering::new(vec![key]).unwrap();
        Arc::new(SortExec::new(order, input).with_fetch(fetch))
    }

    fn filter(input: Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
        Arc::new(FilterExec::try_new(lit(true), input).unwrap())
    }

    fn project(input: Arc<dyn ExecutionPlan>) -> Arc<dyn ExecutionPlan> {
        let e = vec![(col("v", &schema()).unwrap(), "v".to_string())];
        Arc::new(ProjectionExec::try_new(e, input).unwrap())
    }

    #[test]
    fn plans_that_read_when_run_and_keep_no_state_may_run_again() {
        let memory = TestMemoryExec::try_new_exec(&[vec![]], schema(), None).unwrap();
        let repartition: Arc<dyn ExecutionPlan> =
            Arc::new(RepartitionExec::try_new(empty(), Partitioning::RoundRobinBatch(2)).unwrap());
        let cases: Vec<(&str, Arc<dyn ExecutionPlan>, bool)> = vec![
            ("an empty leaf", empty(), true),
            ("sort over projection", sort(project(empty()), None), true),
            (
                "filter under a full sort",
                sort(filter(empty()), None),
                true,
            ),
            (
                "TopK over projection",
                sort(project(empty()), Some(5)),
                true,
            ),
            ("TopK over a filter", sort(filter(empty()), Some(5)), false),
            (
                "TopK over a deeper filter",
                sort(project(filter(empty())), Some(5)),
                false,
            ),
            ("batches read while planning", memory, false),
            (
                "projection over data read while planning",
                project(TestMemoryExec::try_new_exec(&[vec![]], schema(), None).unwrap()),
                false,
            ),
            ("repartitioning", repartition, false),
        ];
        for (name, plan, want) in cases {
            assert_eq!(replayable(&plan), want, "{name}");
        }
    }
}
