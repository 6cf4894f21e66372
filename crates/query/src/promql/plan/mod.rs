//! A PromQL expression as a DataFusion logical plan.
//!
//! Every instant vector is a plan of rows `(label columns…, __ts, __value)` with the label
//! columns sorted by name ([`Vector`]); a series is a distinct combination of label values
//! (null: the label is absent). The leaves are [`PromScan`](crate::promql::scan::PromScan)
//! nodes; everything above them is DataFusion's own operators:
//!
//! | PromQL | plan |
//! |---|---|
//! | selector, `f(selector[r])` | `PromScan` (one per matching table, in a `Union`) |
//! | `sum|avg|min|max|count|group|stddev|stdvar|quantile by/without` | `Aggregate` by (labels, `__ts`) ([`aggregate`]) |
//! | `topk`, `bottomk` | a `row_number()` `Window` and a `Filter` |
//! | vector ∘ scalar, math functions, `label_replace` | `Projection`, `Filter` ([`binary`], [`call`]) |
//! | vector ∘ vector | `Join` on the signature labels and `__ts` (nulls equal), or semi/anti joins for `and`/`unless` |
//! | `histogram_quantile` | `Aggregate` with the `prom_histogram_quantile` UDAF |
//! | scalars that vary by step (`time()`, `scalar(v)`) | a plan of `(__ts, __value)` per step |
//!
//! Labels a plan above does not need are never read: the planner passes down which labels
//! each node needs ([`Need`]), so `sum by (host)(rate(x[5m]))` scans only `host`.

pub mod aggregate;
pub mod binary;
pub mod build;
pub mod call;
pub mod selector;

use std::collections::BTreeSet;
use std::sync::Arc;

use datafusion::common::{Column, ScalarValue};
use datafusion::logical_expr::{Expr, LogicalPlan, LogicalPlanBuilder, col, lit};
use promql_parser::parser::{self as pp, Expr as PExpr};
use tempora_storage::Engine;

use crate::error::{QueryError, Result};
use crate::promql::names::TableInfo;
use crate::promql::scan::{NAME, TS, VALUE};
use crate::promql::time::Steps;

/// What the planner reads: the database's catalog and the query's time.
pub struct Context<'a> {
    pub engine: &'a Arc<Engine>,
    pub db: &'a str,
    pub steps: Steps,
    /// How far back an instant selector looks for a sample (ms).
    pub lookback: i64,
    /// Whether this is an instant query (one step): range vectors may be its result.
    pub instant: bool,
    /// Raw samples keep staleness markers (remote read).
    pub keep_stale: bool,
}

impl Context<'_> {
    /// The tables of the database with their tags and numeric fields.
    pub fn tables(&self) -> Vec<(TableInfo, Vec<String>)> {
        let prefix = format!("{}.", self.db);
        let mut out = Vec::new();
        for name in self.engine.tables() {
            let Some(short) = name.strip_prefix(&prefix) else {
                continue;
            };
            if let Some(t) = self.table(short) {
                out.push(t);
            }
        }
        out.sort_by(|a, b| a.0.name.cmp(&b.0.name));
        out
    }

    /// One table's numeric fields and its tags.
    pub fn table(&self, short: &str) -> Option<(TableInfo, Vec<String>)> {
        use tempora_model::FieldType::*;
        let schema = self
            .engine
            .schema(&tempora_storage::catalog::qualified(self.db, short))?;
        let fields = schema
            .fields()
            .filter(|(_, t)| matches!(t, F64 | I64 | U64 | Bool))
            .map(|(n, _)| n.to_string())
            .collect();
        let tags = schema.tags().map(str::to_string).collect();
        Some((
            TableInfo {
                name: short.to_string(),
                fields,
            },
            tags,
        ))
    }
}

/// An instant vector: rows `(labels…, __ts, __value)`, `labels` sorted by name.
#[derive(Debug, Clone)]
pub struct Vector {
    pub plan: LogicalPlan,
    pub labels: Vec<String>,
}

/// A scalar: one value, or one per step.
#[derive(Debug, Clone)]
pub enum Scalar {
    Const(f64),
    /// Rows `(__ts, __value)`, exactly one per step.
    Steps(LogicalPlan),
}

/// What an expression evaluates to.
#[derive(Debug, Clone)]
pub enum Value {
    Vector(Vector),
    /// A range vector's raw samples (only as an instant query's result).
    Matrix(Vector),
    Scalar(Scalar),
    String(String),
}

/// The labels a plan above needs of a vector: `None` is all of them.
pub type Need = Option<BTreeSet<String>>;

/// Every label.
pub const ALL: Need = None;

pub(crate) fn unsupported(what: &str) -> QueryError {
    QueryError::Unsupported(format!("{what} is not supported yet"))
}

pub(crate) fn bad(msg: impl Into<String>) -> QueryError {
    QueryError::Sql(msg.into())
}

/// Plans `e` for `need`. Recursive, once per level of `e` (up to `MAX_OPERATORS` levels):
/// the stack grows on the heap when little is left, so a deep expression cannot overflow the
/// thread that plans it (a tokio worker's 2 MiB; a debug build's frames are large).
#[recursive::recursive]
pub fn expr(cx: &Context, e: &PExpr, need: &Need) -> Result<Value> {
    match e {
        PExpr::NumberLiteral(n) => Ok(Value::Scalar(Scalar::Const(n.val))),
        PExpr::StringLiteral(s) => Ok(Value::String(s.val.clone())),
        PExpr::Paren(p) => expr(cx, &p.expr, need),
        PExpr::Unary(u) => match expr(cx, &u.expr, need)? {
            Value::Scalar(Scalar::Const(v)) => Ok(Value::Scalar(Scalar::Const(-v))),
            Value::Scalar(Scalar::Steps(p)) => Ok(Value::Scalar(Scalar::Steps(map_value(
                p,
                &[],
                -col(VALUE),
            )?))),
            Value::Vector(v) => {
                let labels = without_name(&v.labels);
                Ok(Value::Vector(Vector {
                    plan: map_value(v.plan, &labels, -col(VALUE))?,
                    labels,
                }))
            }
            _ => Err(bad("unary minus takes a scalar or an instant vector")),
        },
        PExpr::VectorSelector(vs) => selector::instant(cx, vs, need, false).map(Value::Vector),
        PExpr::MatrixSelector(ms) => {
            if !cx.instant {
                return Err(bad(
                    "invalid expression type \"range vector\" for range query, must be Scalar or instant Vector",
                ));
            }
            selector::raw(cx, ms, need, cx.keep_stale).map(Value::Matrix)
        }
        PExpr::Aggregate(a) => aggregate::plan(cx, a, need).map(Value::Vector),
        PExpr::Binary(b) => binary::plan(cx, b, need),
        PExpr::Call(c) => call::plan(cx, c, need),
        PExpr::Subquery(_) => Err(unsupported("a subquery")),
        PExpr::Extension(_) => Err(unsupported("this expression")),
    }
}

/// Plans `e`, which must be an instant vector.
pub fn vector(cx: &Context, e: &PExpr, need: &Need) -> Result<Vector> {
    match expr(cx, e, need)? {
        Value::Vector(v) => Ok(v),
        _ => Err(bad(format!("expected an instant vector, got {}", kind(e)))),
    }
}

/// Plans `e`, which must be a scalar.
pub fn scalar(cx: &Context, e: &PExpr) -> Result<Scalar> {
    match expr(cx, e, &ALL)? {
        Value::Scalar(s) => Ok(s),
        _ => Err(bad(format!("expected a scalar, got {}", kind(e)))),
    }
}

/// The value of a scalar argument that must be known when the query is planned.
pub fn constant(cx: &Context, e: &PExpr, what: &str) -> Result<f64> {
    match scalar(cx, e)? {
        Scalar::Const(v) => Ok(v),
        Scalar::Steps(_) => Err(unsupported(&format!(
            "{what} that changes from step to step"
        ))),
    }
}

/// A string argument.
pub fn string(e: &PExpr) -> Result<String> {
    match e {
        PExpr::StringLiteral(s) => Ok(s.val.clone()),
        PExpr::Paren(p) => string(&p.expr),
        _ => Err(bad(format!("expected a string, got {}", kind(e)))),
    }
}

fn kind(e: &PExpr) -> &'static str {
    match e.value_type() {
        pp::value::ValueType::Vector => "instant vector",
        pp::value::ValueType::Matrix => "range vector",
        pp::value::ValueType::Scalar => "scalar",
        pp::value::ValueType::String => "string",
    }
}

/// `labels` without `__name__`.
pub fn without_name(labels: &[String]) -> Vec<String> {
    labels.iter().filter(|l| *l != NAME).cloned().collect()
}

/// An unqualified column.
pub fn column(name: &str) -> Expr {
    Expr::Column(Column::from_name(name))
}

/// A projection to `(labels…, __ts, value AS __value)`.
pub fn map_value(plan: LogicalPlan, labels: &[String], value: Expr) -> Result<LogicalPlan> {
    let mut exprs: Vec<Expr> = labels.iter().map(|l| column(l)).collect();
    exprs.push(column(TS));
    exprs.push(value.alias(VALUE));
    build::project(plan, exprs)
}

/// A projection of `plan` to exactly `labels` (sorted; missing ones as null), `__ts`,
/// `__value`: how vectors with different labels are lined up for a union.
pub fn align(plan: LogicalPlan, have: &[String], labels: &[String]) -> Result<LogicalPlan> {
    let mut exprs: Vec<Expr> = labels
        .iter()
        .map(|l| {
            if have.contains(l) {
                column(l)
            } else {
                lit(ScalarValue::Utf8(None)).alias(l)
            }
        })
        .collect();
    exprs.push(column(TS));
    exprs.push(column(VALUE));
    build::project(plan, exprs)
}

/// The union of vectors (their labels lined up); `None` for no vectors.
pub fn union(parts: Vec<Vector>) -> Result<Option<Vector>> {
    if parts.len() <= 1 {
        return Ok(parts.into_iter().next());
    }
    let labels: Vec<String> = parts
        .iter()
        .flat_map(|p| p.labels.iter().cloned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut builder: Option<LogicalPlanBuilder> = None;
    for p in parts {
        let plan = align(p.plan, &p.labels, &labels)?;
        builder = Some(match builder {
            None => LogicalPlanBuilder::from(plan),
            Some(b) => b.union(plan)?,
        });
    }
    Ok(Some(Vector {
        plan: builder.expect("two or more parts").build()?,
        labels,
    }))
}

/// An empty vector (no series).
pub fn empty() -> Result<Vector> {
    let schema = crate::promql::scan::rows_schema(&[]);
    Ok(Vector {
        plan: LogicalPlan::EmptyRelation(datafusion::logical_expr::EmptyRelation {
            produce_one_row: false,
            schema,
        }),
        labels: Vec::new(),
    })
}

/// One row `(__ts)` per step.
pub fn steps(cx: &Context) -> Result<LogicalPlan> {
    let rows: Vec<Vec<Expr>> = (0..cx.steps.len())
        .map(|i| vec![lit(cx.steps.at(i))])
        .collect();
    Ok(LogicalPlanBuilder::values(rows)?
        .project(vec![column("column1").alias(TS)])?
        .build()?)
}

/// A scalar as rows `(__ts, __value)`, one per step.
pub fn scalar_rows(cx: &Context, s: Scalar) -> Result<LogicalPlan> {
    match s {
        Scalar::Steps(p) => Ok(p),
        Scalar::Const(v) => build::project(steps(cx)?, vec![column(TS), lit(v).alias(VALUE)]),
    }
}
