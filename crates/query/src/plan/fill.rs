//! The plan of `SAMPLE BY … FILL(…)`: the sampled query under a [`GapFill`] node, then the
//! user's `ORDER BY` (by default the time column, then the tags) and `LIMIT` over the filled
//! rows.
//!
//! The fill's range bounds are the `WHERE`'s own expressions on `time`, planned by DataFusion
//! as the select list of a query without a table (so literals, parameters and `now() - …`
//! all work), and evaluated when the fill runs.

use std::sync::Arc;

use datafusion::execution::SessionState;
use datafusion::logical_expr::{Expr, Extension, LogicalPlan, LogicalPlanBuilder, SortExpr};
use datafusion::sql::sqlparser::ast::{
    self, GroupByExpr, LimitClause, OrderByKind, Query, SelectItem, SetExpr, Value,
};

use super::sample_by::FillSpec;
use crate::error::{QueryError, Result};
use crate::nodes::gap_fill::{Bound, GapFill};

fn bad(msg: impl std::fmt::Display) -> QueryError {
    QueryError::Sql(format!("SAMPLE BY: {msg}"))
}

/// `plan` (the sampled query of `query`) under a fill, ordered and limited.
pub async fn wrap(
    state: &SessionState,
    plan: LogicalPlan,
    query: &Query,
    f: FillSpec,
) -> Result<LogicalPlan> {
    let (lower, upper) = bounds(state, query, &f).await?;
    let node = GapFill::try_new(
        Arc::new(plan),
        f.time.clone(),
        f.tags.clone(),
        f.aggs.clone(),
        f.fill.clone(),
        f.width,
        f.offset_ns,
        lower,
        upper,
    )?;
    let mut b = LogicalPlanBuilder::from(LogicalPlan::Extension(Extension {
        node: Arc::new(node),
    }));
    let names: Vec<String> = b
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    if let Some(o) = &f.order_by {
        b = b.sort(sort_exprs(o, &names)?)?;
    }
    if let Some(l) = &f.limit {
        let (skip, fetch) = limit(l)?;
        b = b.limit(skip, fetch)?;
    }
    Ok(b.build()?)
}

/// The fill's bounds as DataFusion expressions.
async fn bounds(
    state: &SessionState,
    query: &Query,
    f: &FillSpec,
) -> Result<(Option<Bound>, Option<Bound>)> {
    let wanted: Vec<&(ast::Expr, bool)> = f.lower.iter().chain(f.upper.iter()).collect();
    if wanted.is_empty() {
        return Ok((None, None));
    }
    let SetExpr::Select(template) = query.body.as_ref() else {
        return Err(bad("it applies to a plain SELECT"));
    };
    // `SELECT <lower>, <upper>`: a copy of the query's SELECT without its table and clauses.
    let mut select = template.clone();
    select.projection = wanted
        .iter()
        .map(|(e, _)| SelectItem::UnnamedExpr(e.clone()))
        .collect();
    select.from = vec![];
    select.selection = None;
    select.group_by = GroupByExpr::Expressions(vec![], vec![]);
    select.having = None;
    select.distinct = None;
    let mut q = query.clone();
    q.with = None;
    q.order_by = None;
    q.limit_clause = None;
    q.body = Box::new(SetExpr::Select(select));
    let plan = super::statement_plan(state, Box::new(q)).await?;
    let LogicalPlan::Projection(p) = plan else {
        return Err(bad("the WHERE's time bounds must be constants"));
    };
    let mut exprs = p.expr.into_iter().map(|e| match e {
        Expr::Alias(a) => *a.expr,
        e => e,
    });
    let mut next = |b: &Option<(ast::Expr, bool)>| {
        b.as_ref().and_then(|(_, exclusive)| {
            exprs.next().map(|expr| Bound {
                expr,
                exclusive: *exclusive,
            })
        })
    };
    let lower = next(&f.lower);
    let upper = next(&f.upper);
    Ok((lower, upper))
}

/// ORDER BY over the filled rows: output names or positions.
fn sort_exprs(o: &ast::OrderBy, names: &[String]) -> Result<Vec<SortExpr>> {
    let OrderByKind::Expressions(list) = &o.kind else {
        return Err(bad("with FILL, ORDER BY lists output columns"));
    };
    list.iter()
        .map(|e| {
            let name = match &e.expr {
                ast::Expr::Identifier(i) => crate::sql::ddl::ident_name(i),
                ast::Expr::Value(v) => match &v.value {
                    Value::Number(n, _) => n
                        .parse::<usize>()
                        .ok()
                        .and_then(|p| names.get(p.wrapping_sub(1)).cloned())
                        .ok_or_else(|| bad(format!("ORDER BY {n}: no such output column")))?,
                    _ => return Err(bad("with FILL, ORDER BY lists output columns")),
                },
                other => {
                    return Err(bad(format!(
                        "with FILL, ORDER BY lists output columns, not {other}"
                    )));
                }
            };
            if !names.contains(&name) {
                return Err(bad(format!("ORDER BY {name}: no such output column")));
            }
            let asc = e.options.asc.unwrap_or(true);
            Ok(SortExpr::new(
                Expr::Column(datafusion::common::Column::from_name(name)),
                asc,
                e.options.nulls_first.unwrap_or(!asc),
            ))
        })
        .collect()
}

/// `LIMIT n [OFFSET m]` as (skip, fetch).
fn limit(l: &LimitClause) -> Result<(usize, Option<usize>)> {
    let number = |e: &ast::Expr| match e {
        ast::Expr::Value(v) => match &v.value {
            Value::Number(n, _) => n.parse::<usize>().ok(),
            _ => None,
        },
        _ => None,
    };
    let not_a_number = || bad("with FILL, LIMIT and OFFSET take whole numbers");
    match l {
        LimitClause::LimitOffset {
            limit,
            offset,
            limit_by,
        } if limit_by.is_empty() => {
            let fetch = match limit {
                Some(e) => Some(number(e).ok_or_else(not_a_number)?),
                None => None,
            };
            let skip = match offset {
                Some(o) => number(&o.value).ok_or_else(not_a_number)?,
                None => 0,
            };
            Ok((skip, fetch))
        }
        _ => Err(not_a_number()),
    }
}
