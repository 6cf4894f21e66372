//! `tempora_aggregate`: an optimizer rule that runs an `Aggregate` over a Tempora table as a
//! [`TemporaAggregate`], when that computes the same rows.
//!
//! It matches what the plan means after DataFusion's own rules (type coercion, constant
//! folding, filter and projection push-down, common subexpressions), not how the query was
//! written: a CTE, a subquery, `GROUP BY 1` or an alias all reach the same plan, and every
//! bucket spelling [`time_key::classify`] knows is folded the same way.
//!
//! Taken: an `Aggregate` whose input is a [`chain`] to a Tempora table; whose groups are tag
//! columns and at most one expression of `time`; whose aggregates are `max`, `min`, `sum`,
//! `avg`, `count` (no `DISTINCT`, `FILTER` or `ORDER BY`) over a numeric field (`avg` of an
//! integer as the cast DataFusion puts there) or `count(*)`; and whose filters
//! [`split_filters`] sorts. Anything else keeps DataFusion's plan.
//!
//! A second pass marks `ORDER BY <time group> DESC LIMIT n` above such a node, so the operator
//! reads the newest buckets first.

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::Column;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::error::Result;
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::{Aggregate, Cast, Expr, Extension, LogicalPlan, Projection, Sort};
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};

use super::chain::{Chain, chain, split_filters};
use super::time_key;
use crate::nodes::aggregate::{AggFunc, AggSpec, Group, TemporaAggregate};
use crate::table::TemporaTable;

#[derive(Debug, Default)]
pub struct AggregateRule;

impl OptimizerRule for AggregateRule {
    fn name(&self) -> &str {
        "tempora_aggregate"
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        config: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        if !crate::options::of(&config.options()).operators {
            return Ok(Transformed::no(plan));
        }
        let t = plan.transform_up(|node| match node {
            LogicalPlan::Aggregate(a) => Ok(match aggregate(&a) {
                Some(n) => Transformed::yes(extension(n)),
                None => Transformed::no(LogicalPlan::Aggregate(a)),
            }),
            other => Ok(Transformed::no(other)),
        })?;
        if !t.transformed {
            return Ok(t);
        }
        t.data.transform_down(newest_hint)
    }
}

fn extension(n: TemporaAggregate) -> LogicalPlan {
    LogicalPlan::Extension(Extension { node: Arc::new(n) })
}

/// The node for `a`, when it computes the same rows.
fn aggregate(a: &Aggregate) -> Option<TemporaAggregate> {
    if a.group_expr
        .iter()
        .any(|e| matches!(e, Expr::GroupingSet(_)))
    {
        return None;
    }
    let c = chain(&a.input)?;
    let filter = split_filters(&c.table, &c.filters)?;
    let mut groups = Vec::with_capacity(a.group_expr.len());
    for g in &a.group_expr {
        groups.push(group(&c, g)?);
    }
    if groups
        .iter()
        .filter(|g| matches!(g, Group::Time { .. }))
        .count()
        > 1
    {
        return None;
    }
    let aggs = a
        .aggr_expr
        .iter()
        .map(|e| agg(&c, e))
        .collect::<Option<Vec<_>>>()?;
    Some(TemporaAggregate {
        table: c.table.clone(),
        filter,
        groups,
        aggs,
        newest: None,
        schema: a.schema.clone(),
    })
}

fn group(c: &Chain, g: &Expr) -> Option<Group> {
    let e = c.inline(strip_alias(g))?;
    if let Expr::Column(col) = &e
        && c.table.is_tag(&col.name)
    {
        return Some(Group::Tag(col.name.clone()));
    }
    let cols = e.column_refs();
    let only_time = cols.len() == 1 && cols.iter().all(|c| c.name == tempora_model::TIME_COLUMN);
    if !only_time || e.is_volatile() {
        return None;
    }
    let key = time_key::classify(&e)?;
    Some(Group::Time { expr: e, key })
}

fn strip_alias(e: &Expr) -> &Expr {
    match e {
        Expr::Alias(a) => strip_alias(&a.expr),
        e => e,
    }
}

fn agg(c: &Chain, e: &Expr) -> Option<AggSpec> {
    let Expr::AggregateFunction(AggregateFunction { func, params }) = strip_alias(e) else {
        return None;
    };
    let plain = !params.distinct
        && params.filter.is_none()
        && params.order_by.is_empty()
        && params.null_treatment.is_none();
    if !plain {
        return None;
    }
    let f = match func.name() {
        "max" => AggFunc::Max,
        "min" => AggFunc::Min,
        "sum" => AggFunc::Sum,
        "avg" => AggFunc::Avg,
        "count" => AggFunc::Count,
        _ => return None,
    };
    let [arg] = params.args.as_slice() else {
        return None;
    };
    let arg = c.inline(arg)?;
    if f == AggFunc::Count && matches!(&arg, Expr::Literal(v, _) if !v.is_null()) {
        return Some(AggSpec {
            func: f,
            field: None,
        });
    }
    let field = numeric_field(&c.table, &arg, f)?;
    Some(AggSpec {
        func: f,
        field: Some(field),
    })
}

/// The numeric field an aggregate reads: the column itself, or for `avg` the cast to Float64
/// that DataFusion's coercion puts around an integer.
fn numeric_field(t: &TemporaTable, arg: &Expr, f: AggFunc) -> Option<String> {
    let (col, cast) = match arg {
        Expr::Column(col) => (col, None),
        Expr::Cast(Cast { expr, field }) => match expr.as_ref() {
            Expr::Column(col) => (col, Some(field.data_type().clone())),
            _ => return None,
        },
        _ => return None,
    };
    let ty = t.field_type(&col.name)?;
    let ok = match (cast, &ty) {
        (None, DataType::Float64 | DataType::Int64 | DataType::UInt64) => true,
        (Some(DataType::Float64), DataType::Int64 | DataType::UInt64) => f == AggFunc::Avg,
        _ => false,
    };
    ok.then(|| col.name.clone())
}

/// Marks `Sort(time group DESC, fetch n)` above a [`TemporaAggregate`] (DataFusion pushes a
/// `LIMIT` into the sort below it), through projections that pass the column on.
fn newest_hint(node: LogicalPlan) -> Result<Transformed<LogicalPlan>> {
    let LogicalPlan::Sort(sort) = &node else {
        return Ok(Transformed::no(node));
    };
    let (Some(n), Some(first)) = (sort.fetch, sort.expr.first()) else {
        return Ok(Transformed::no(node));
    };
    let Expr::Column(key) = &first.expr else {
        return Ok(Transformed::no(node));
    };
    if first.asc {
        return Ok(Transformed::no(node));
    }
    match mark(&sort.input, key, n) {
        Some(marked) => Ok(Transformed::yes(LogicalPlan::Sort(Sort {
            input: Arc::new(marked),
            ..sort.clone()
        }))),
        None => Ok(Transformed::no(node)),
    }
}

/// `plan` with the node below it marked, when `key` is its time group column.
fn mark(plan: &LogicalPlan, key: &Column, n: usize) -> Option<LogicalPlan> {
    match plan {
        LogicalPlan::Projection(p) => {
            let i = p.schema.index_of_column(key).ok()?;
            let inner_key = match strip_alias(&p.expr[i]) {
                Expr::Column(c) => c.clone(),
                _ => return None,
            };
            let input = mark(&p.input, &inner_key, n)?;
            Some(LogicalPlan::Projection(
                Projection::try_new(p.expr.clone(), Arc::new(input)).ok()?,
            ))
        }
        LogicalPlan::SubqueryAlias(a) => {
            let i = a.schema.index_of_column(key).ok()?;
            let (q, f) = a.input.schema().qualified_field(i);
            let inner_key = Column::new(q.cloned(), f.name());
            let input = mark(&a.input, &inner_key, n)?;
            Some(LogicalPlan::SubqueryAlias(
                datafusion::logical_expr::SubqueryAlias::try_new(Arc::new(input), a.alias.clone())
                    .ok()?,
            ))
        }
        LogicalPlan::Extension(e) => {
            let a = e.node.as_any().downcast_ref::<TemporaAggregate>()?;
            let i = a.schema.index_of_column(key).ok()?;
            let monotone_time = matches!(
                a.groups.get(i),
                Some(Group::Time { key, .. }) if key.monotone()
            );
            monotone_time.then(|| {
                extension(TemporaAggregate {
                    newest: Some(n),
                    ..a.clone()
                })
            })
        }
        _ => None,
    }
}
