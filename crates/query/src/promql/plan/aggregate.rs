//! Aggregation operators: `sum`, `avg`, `min`, `max`, `count`, `group`, `stddev`, `stdvar`,
//! `quantile` as an `Aggregate` grouped by the kept labels and `__ts`; `topk`/`bottomk` as a
//! `row_number()` window and a filter.
//!
//! Prometheus semantics kept: `min`/`max` skip NaN unless every value is NaN (SQL's rank NaN
//! highest), `count` counts series, `stddev`/`stdvar` are the population's, `by` keeps only
//! the listed labels a series has, `without` drops the listed ones and `__name__`.

use std::collections::BTreeSet;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::functions_aggregate::expr_fn as agg;
use datafusion::logical_expr::expr::Sort;
use datafusion::logical_expr::{ExprFunctionExt, cast, lit};
use promql_parser::parser::{AggregateExpr, LabelModifier};

use super::{Context, Need, Vector, bad, build, column, constant, unsupported, vector};
use crate::error::Result;
use crate::promql::scan::{NAME, TS, VALUE};

/// The labels a `by`/`without` clause keeps of `labels`.
fn kept(labels: &[String], modifier: &Option<LabelModifier>) -> Vec<String> {
    match modifier {
        None => Vec::new(),
        Some(LabelModifier::Include(by)) => labels
            .iter()
            .filter(|l| by.labels.contains(l))
            .cloned()
            .collect(),
        Some(LabelModifier::Exclude(without)) => labels
            .iter()
            .filter(|l| *l != NAME && !without.labels.contains(l))
            .cloned()
            .collect(),
    }
}

pub fn plan(cx: &Context, a: &AggregateExpr, _need: &Need) -> Result<Vector> {
    let op = a.op.to_string();
    // What the input must carry: the grouping labels; topk/bottomk keep whole series.
    let child_need: Need = match (&a.modifier, op.as_str()) {
        (_, "topk" | "bottomk") => None,
        (Some(LabelModifier::Include(by)), _) => Some(by.labels.iter().cloned().collect()),
        (None, _) => Some(BTreeSet::new()),
        (Some(LabelModifier::Exclude(_)), _) => None,
    };
    let input = vector(cx, &a.expr, &child_need)?;
    let keep = kept(&input.labels, &a.modifier);
    match op.as_str() {
        "topk" | "bottomk" => {
            let k = constant(
                cx,
                a.param.as_deref().ok_or_else(|| bad("topk needs k"))?,
                "k",
            )?;
            rank(input, keep, k, op == "topk")
        }
        "count_values" => Err(unsupported("count_values")),
        "limitk" | "limit_ratio" => Err(unsupported(&op)),
        _ => {
            let value = column(VALUE);
            let not_nan = !datafusion::functions::expr_fn::isnan(value.clone());
            let (aggregate, finish) = match op.as_str() {
                "sum" => (agg::sum(value), None),
                "avg" => (agg::avg(value), None),
                "count" => (
                    agg::count(value),
                    Some(cast(column(VALUE), DataType::Float64)),
                ),
                "group" => (agg::count(value), Some(lit(1.0f64))),
                "stddev" => (agg::stddev_pop(value), None),
                "stdvar" => (agg::var_pop(value), None),
                // NaN only when every value is NaN.
                "max" | "min" => {
                    let f = if op == "max" {
                        agg::max(value)
                    } else {
                        agg::min(value)
                    };
                    let f = f.filter(not_nan).build()?;
                    (f, Some(coalesce_nan(column(VALUE))))
                }
                "quantile" => {
                    let q = constant(
                        cx,
                        a.param.as_deref().ok_or_else(|| bad("quantile needs φ"))?,
                        "the quantile",
                    )?;
                    let list = agg::array_agg(value);
                    let f = crate::promql::udf::all()
                        .into_iter()
                        .find(|u| u.name() == "prom_quantile")
                        .expect("registered");
                    (list, Some(f.call(vec![lit(q), column(VALUE)])))
                }
                other => return Err(unsupported(&format!("the aggregation {other}"))),
            };
            grouped(input, keep, aggregate, finish)
        }
    }
}

/// `coalesce(e, NaN)`.
fn coalesce_nan(e: datafusion::logical_expr::Expr) -> datafusion::logical_expr::Expr {
    datafusion::functions::expr_fn::coalesce(vec![e, lit(f64::NAN)])
}

/// `Aggregate(keep…, __ts; aggregate AS __value)`, then `finish` (over `__value`) if given.
pub fn grouped(
    input: Vector,
    keep: Vec<String>,
    aggregate: datafusion::logical_expr::Expr,
    finish: Option<datafusion::logical_expr::Expr>,
) -> Result<Vector> {
    let mut groups: Vec<_> = keep.iter().map(|l| column(l)).collect();
    groups.push(column(TS));
    let mut plan = build::aggregate(input.plan, groups, vec![aggregate.alias(VALUE)])?;
    if let Some(f) = finish {
        plan = super::map_value(plan, &keep, f)?;
    }
    Ok(Vector { plan, labels: keep })
}

/// `topk`/`bottomk`: the `k` largest (smallest) values of each group at each step, NaN last;
/// the series keep all their labels.
fn rank(input: Vector, keep: Vec<String>, k: f64, top: bool) -> Result<Vector> {
    if k.is_nan() || k.abs() >= 9.2e18 {
        return Err(bad(format!("Scalar value {k} overflows int64")));
    }
    let k = k as i64;
    if k < 1 {
        return super::empty();
    }
    let mut partition: Vec<_> = keep.iter().map(|l| column(l)).collect();
    partition.push(column(TS));
    let order = vec![
        Sort::new(
            datafusion::functions::expr_fn::isnan(column(VALUE)),
            true,
            false,
        ),
        Sort::new(column(VALUE), !top, false),
    ];
    let rn = datafusion::functions_window::expr_fn::row_number()
        .partition_by(partition)
        .order_by(order)
        .build()?
        .alias("__rank");
    let mut out: Vec<_> = input.labels.iter().map(|l| column(l)).collect();
    out.push(column(TS));
    out.push(column(VALUE));
    let ranked = build::window(input.plan, vec![rn])?;
    let kept = build::filter(
        ranked,
        column("__rank").lt_eq(lit(ScalarValue::UInt64(Some(k as u64)))),
    )?;
    let plan = build::project(kept, out)?;
    Ok(Vector {
        plan,
        labels: input.labels,
    })
}
