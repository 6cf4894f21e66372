//! Plan nodes built without DataFusion's name normalisation.
//!
//! `LogicalPlanBuilder::project`, `filter`, `aggregate` and a join on unqualified keys
//! normalise every column they are given, and each column's normalisation walks the whole
//! input plan looking for `USING` joins (`LogicalPlan::using_columns`). A PromQL expression
//! nests, so a chain of n binary operators (`a > b > c > …`) cost n² node visits: 114
//! comparisons took 1.3 s to plan under the fuzzer (docs/fuzzing.md). These helpers build
//! the same nodes directly.
//!
//! Invariant: the planner never makes a `USING` join and names every column so that it
//! resolves without help — unqualified names are unique in their input's schema, and where
//! two inputs meet (the vector–vector join) columns are qualified by the sides' aliases
//! `l`/`r`. So normalisation would change nothing; DataFusion resolves an unqualified
//! column against a qualified field by name when it computes the node's schema, and
//! `try_new` rejects an ambiguous or missing one as the builder would.

use std::sync::Arc;

use datafusion::logical_expr::{
    Aggregate, Expr, Filter, JoinType, LogicalPlan, LogicalPlanBuilder, Projection, Window,
};

use super::column;
use crate::error::Result;

/// `SELECT exprs FROM plan`.
pub fn project(plan: LogicalPlan, exprs: Vec<Expr>) -> Result<LogicalPlan> {
    Ok(LogicalPlan::Projection(Projection::try_new(
        exprs,
        Arc::new(plan),
    )?))
}

/// `plan WHERE cond`.
pub fn filter(plan: LogicalPlan, cond: Expr) -> Result<LogicalPlan> {
    Ok(LogicalPlan::Filter(Filter::try_new(cond, Arc::new(plan))?))
}

/// `plan GROUP BY groups` computing `aggregates`.
pub fn aggregate(
    plan: LogicalPlan,
    groups: Vec<Expr>,
    aggregates: Vec<Expr>,
) -> Result<LogicalPlan> {
    Ok(LogicalPlan::Aggregate(Aggregate::try_new(
        Arc::new(plan),
        groups,
        aggregates,
    )?))
}

/// `SELECT *, window_exprs FROM plan` (the builder's `window` normalised each expression's
/// columns the same way: a `topk` over a large plan took seconds under the fuzzer).
pub fn window(plan: LogicalPlan, window_exprs: Vec<Expr>) -> Result<LogicalPlan> {
    Ok(LogicalPlan::Window(Window::try_new(
        window_exprs,
        Arc::new(plan),
    )?))
}

/// `left JOIN right ON left.left_key = right.right_key` on single unqualified keys (a
/// step column): by expressions, which the builder resolves against the two schemas
/// without walking the inputs.
pub fn join_on(
    left: LogicalPlan,
    right: LogicalPlan,
    join_type: JoinType,
    left_key: &str,
    right_key: &str,
) -> Result<LogicalPlan> {
    Ok(LogicalPlanBuilder::from(left)
        .join_with_expr_keys(
            right,
            join_type,
            (vec![column(left_key)], vec![column(right_key)]),
            None,
        )?
        .build()?)
}
