//! Function calls: functions of a range vector become the [`PromScan`]'s window
//! ([`crate::promql::functions`]); the others become projections, aggregates or joins.
//!
//! | function | plan |
//! |---|---|
//! | `rate(x[r])`, `*_over_time`, `deriv` … | `PromScan` in range mode (`__name__` dropped but by `last_over_time`) |
//! | `abs`, `ceil`, `exp`, `ln`, `sqrt`, trigonometry, `round`, `clamp*`, `sgn` | projection, `__name__` dropped |
//! | `timestamp(selector)` | `PromScan` giving each sample's time; of other vectors, the step's |
//! | `label_replace`, `label_join` | projection of the label columns |
//! | `histogram_quantile(φ, v)` | `Aggregate` by every label but `le` with `prom_bucket_quantile` |
//! | `vector(s)`, `time()`, `scalar(v)`, `pi()` | rows per step |
//! | `absent(v)`, `absent_over_time(x[r])` | the steps without a row, anti-joined |
//! | `sort`, `sort_desc` | unchanged here; the answer is ordered by value (see [`super::super::result_order`]) |
//! | `day_of_month` … `year` | projection with `prom_time_part` |

use datafusion::common::{JoinType, ScalarValue};
use datafusion::functions::expr_fn as f;
use datafusion::logical_expr::{Expr, LogicalPlanBuilder, lit, when};
use promql_parser::parser::{Call, Expr as PExpr};

use super::selector;
use super::{
    ALL, Context, Need, Scalar, Value, Vector, bad, build, column, constant, expr, map_value,
    string, unsupported, vector, without_name,
};
use crate::error::Result;
use crate::promql::functions::RangeFn;
use crate::promql::scan::{NAME, TS, VALUE};

fn args(c: &Call) -> Vec<&PExpr> {
    c.args.args.iter().map(|a| a.as_ref()).collect()
}

/// The matrix selector argument of a range function.
fn matrix(e: &PExpr) -> Result<&promql_parser::parser::MatrixSelector> {
    match e {
        PExpr::MatrixSelector(m) => {
            selector::check_range(m)?;
            Ok(m)
        }
        PExpr::Paren(p) => matrix(&p.expr),
        PExpr::Subquery(_) => Err(unsupported("a subquery")),
        _ => Err(bad("expected a range vector")),
    }
}

fn udf(name: &str) -> datafusion::logical_expr::ScalarUDF {
    crate::promql::udf::all()
        .into_iter()
        .find(|u| u.name() == name)
        .expect("a PromQL function")
}

pub fn plan(cx: &Context, c: &Call, need: &Need) -> Result<Value> {
    let name = c.func.name;
    let a = args(c);
    if let Some(func) = RangeFn::of(name) {
        return range_fn(cx, func, &a, need).map(Value::Vector);
    }
    let math = |e: Expr| -> Option<Expr> {
        Some(match name {
            "abs" => f::abs(e),
            "ceil" => f::ceil(e),
            "floor" => f::floor(e),
            "exp" => f::exp(e),
            "sqrt" => f::sqrt(e),
            "ln" => f::ln(e),
            "log2" => f::log2(e),
            "log10" => f::log10(e),
            "sin" => f::sin(e),
            "cos" => f::cos(e),
            "tan" => f::tan(e),
            "asin" => f::asin(e),
            "acos" => f::acos(e),
            "atan" => f::atan(e),
            "sinh" => f::sinh(e),
            "cosh" => f::cosh(e),
            "tanh" => f::tanh(e),
            "asinh" => f::asinh(e),
            "acosh" => f::acosh(e),
            "atanh" => f::atanh(e),
            "deg" => e * lit(180.0 / std::f64::consts::PI),
            "rad" => e * lit(std::f64::consts::PI / 180.0),
            "sgn" => when(e.clone().gt(lit(0.0)), lit(1.0))
                .when(e.clone().lt(lit(0.0)), lit(-1.0))
                .otherwise(e)
                .ok()?,
            _ => return None,
        })
    };
    if let Some(e) = math(column(VALUE)) {
        let v = vector(cx, a[0], need)?;
        let labels = without_name(&v.labels);
        return Ok(Value::Vector(Vector {
            plan: map_value(v.plan, &labels, e)?,
            labels,
        }));
    }
    match name {
        "pi" => Ok(Value::Scalar(Scalar::Const(std::f64::consts::PI))),
        "time" => Ok(Value::Scalar(time(cx)?)),
        "vector" => {
            let s = super::scalar(cx, a[0])?;
            Ok(Value::Vector(Vector {
                plan: super::scalar_rows(cx, s)?,
                labels: Vec::new(),
            }))
        }
        "scalar" => scalar_of(cx, a[0]).map(Value::Scalar),
        "round" => {
            let to = match a.get(1) {
                Some(e) => constant(cx, e, "round's to_nearest")?,
                None => 1.0,
            };
            let inv = 1.0 / to;
            let e = f::floor(column(VALUE) * lit(inv) + lit(0.5)) / lit(inv);
            value_map(cx, a[0], need, e)
        }
        "clamp" | "clamp_min" | "clamp_max" => clamp(cx, name, &a, need),
        "timestamp" => timestamp(cx, a[0], need),
        "label_replace" => label_replace(cx, &a, need),
        "label_join" => label_join(cx, &a, need),
        "histogram_quantile" => histogram_quantile(cx, &a),
        "absent" => absent(cx, a[0]),
        "absent_over_time" => absent_over_time(cx, a[0]),
        "sort" | "sort_desc" => expr(cx, a[0], need),
        "day_of_month" | "day_of_week" | "day_of_year" | "days_in_month" | "hour" | "minute"
        | "month" | "year" => {
            let e = udf("prom_time_part").call(vec![column(VALUE), lit(name)]);
            match a.first() {
                Some(arg) => value_map(cx, arg, need, e),
                None => {
                    // Of vector(time()).
                    let plan = super::scalar_rows(cx, time(cx)?)?;
                    Ok(Value::Vector(Vector {
                        plan: map_value(plan, &[], e)?,
                        labels: Vec::new(),
                    }))
                }
            }
        }
        other => Err(unsupported(&format!("the function {other}()"))),
    }
}

/// `e` over the values of the vector `arg`, `__name__` dropped.
fn value_map(cx: &Context, arg: &PExpr, need: &Need, e: Expr) -> Result<Value> {
    let v = vector(cx, arg, need)?;
    let labels = without_name(&v.labels);
    Ok(Value::Vector(Vector {
        plan: map_value(v.plan, &labels, e)?,
        labels,
    }))
}

fn range_fn(cx: &Context, func: RangeFn, a: &[&PExpr], need: &Need) -> Result<Vector> {
    let (m, numbers) = match func {
        RangeFn::QuantileOverTime => (a[1], vec![constant(cx, a[0], "the quantile")?]),
        RangeFn::PredictLinear => (a[0], vec![constant(cx, a[1], "predict_linear's horizon")?]),
        RangeFn::HoltWinters => {
            let sf = constant(cx, a[1], "the smoothing factor")?;
            let tf = constant(cx, a[2], "the trend factor")?;
            if sf <= 0.0 || sf >= 1.0 {
                return Err(bad(format!(
                    "invalid smoothing factor. Expected: 0 < sf < 1, got: {sf}"
                )));
            }
            if tf <= 0.0 || tf >= 1.0 {
                return Err(bad(format!(
                    "invalid trend factor. Expected: 0 < tf < 1, got: {tf}"
                )));
            }
            (a[0], vec![sf, tf])
        }
        _ => (a[0], Vec::new()),
    };
    selector::range(cx, matrix(m)?, need, func, numbers)
}

/// `time()`: the step's time in seconds.
fn time(cx: &Context) -> Result<Scalar> {
    if cx.steps.len() == 1 {
        return Ok(Scalar::Const(cx.steps.start as f64 / 1000.0));
    }
    let plan = build::project(
        super::steps(cx)?,
        vec![
            column(TS),
            (datafusion::logical_expr::cast(column(TS), arrow::datatypes::DataType::Float64)
                / lit(1000.0))
            .alias(VALUE),
        ],
    )?;
    Ok(Scalar::Steps(plan))
}

/// `scalar(v)`: the value of `v`'s only series at each step, NaN when it has none or more.
fn scalar_of(cx: &Context, arg: &PExpr) -> Result<Scalar> {
    use datafusion::functions_aggregate::expr_fn as agg;
    let v = vector(cx, arg, &Some(Default::default()))?;
    let per_step = build::aggregate(
        v.plan,
        vec![column(TS)],
        vec![
            agg::count(lit(1)).alias("__n"),
            agg::max(column(VALUE)).alias("__v"),
        ],
    )?;
    let per_step = build::project(
        per_step,
        vec![column(TS).alias("__sts"), column("__n"), column("__v")],
    )?;
    let joined = build::join_on(super::steps(cx)?, per_step, JoinType::Left, TS, "__sts")?;
    let plan = build::project(
        joined,
        vec![
            column(TS),
            when(column("__n").eq(lit(1i64)), column("__v"))
                .otherwise(lit(f64::NAN))?
                .alias(VALUE),
        ],
    )?;
    Ok(Scalar::Steps(plan))
}

fn clamp(cx: &Context, name: &str, a: &[&PExpr], need: &Need) -> Result<Value> {
    let (lo, hi) = match name {
        "clamp" => (
            constant(cx, a[1], "clamp's min")?,
            constant(cx, a[2], "clamp's max")?,
        ),
        "clamp_min" => (constant(cx, a[1], "clamp_min's min")?, f64::INFINITY),
        _ => (f64::NEG_INFINITY, constant(cx, a[1], "clamp_max's max")?),
    };
    let v = vector(cx, a[0], need)?;
    let labels = without_name(&v.labels);
    if name == "clamp" && hi < lo {
        return super::empty().map(Value::Vector);
    }
    // Go's math.Max(lo, math.Min(hi, v)): NaN anywhere gives NaN.
    let x = column(VALUE);
    let e = if lo.is_nan() || hi.is_nan() {
        lit(f64::NAN)
    } else {
        when(f::isnan(x.clone()), x.clone())
            .when(x.clone().lt(lit(lo)), lit(lo))
            .when(x.clone().gt(lit(hi)), lit(hi))
            .otherwise(x)?
    };
    Ok(Value::Vector(Vector {
        plan: map_value(v.plan, &labels, e)?,
        labels,
    }))
}

fn timestamp(cx: &Context, arg: &PExpr, need: &Need) -> Result<Value> {
    let mut inner = arg;
    while let PExpr::Paren(p) = inner {
        inner = &p.expr;
    }
    if let PExpr::VectorSelector(vs) = inner {
        return selector::instant(cx, vs, need, true).map(Value::Vector);
    }
    let e = datafusion::logical_expr::cast(column(TS), arrow::datatypes::DataType::Float64)
        / lit(1000.0);
    value_map(cx, arg, need, e)
}

/// A projection replacing (or adding) label `dst`.
fn set_label(v: Vector, dst: &str, value: Expr) -> Result<Vector> {
    let mut labels: Vec<String> = v.labels.iter().filter(|l| *l != dst).cloned().collect();
    labels.push(dst.to_string());
    labels.sort();
    let mut exprs: Vec<Expr> = labels
        .iter()
        .map(|l| {
            if l == dst {
                f::nullif(value.clone(), lit("")).alias(dst)
            } else {
                column(l)
            }
        })
        .collect();
    exprs.push(column(TS));
    exprs.push(column(VALUE));
    Ok(Vector {
        plan: build::project(v.plan, exprs)?,
        labels,
    })
}

fn label_name_ok(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A label's value, "" when absent.
fn label_or_empty(v: &Vector, name: &str) -> Expr {
    if v.labels.iter().any(|l| l == name) {
        f::coalesce(vec![column(name), lit("")])
    } else {
        lit("")
    }
}

fn label_replace(cx: &Context, a: &[&PExpr], _need: &Need) -> Result<Value> {
    let v = vector(cx, a[0], &ALL)?;
    let (dst, repl, src, re) = (string(a[1])?, string(a[2])?, string(a[3])?, string(a[4])?);
    let anchored = format!("^(?:{re})$");
    regex::Regex::new(&anchored).map_err(|e| {
        bad(format!(
            "invalid regular expression in label_replace(): {re}: {e}"
        ))
    })?;
    if !label_name_ok(&dst) {
        return Err(bad(format!(
            "invalid destination label name in label_replace(): {dst}"
        )));
    }
    let value = label_or_empty(&v, &src);
    let current = label_or_empty(&v, &dst);
    let matched = f::regexp_like(value.clone(), lit(anchored.clone()), None);
    let replaced = f::regexp_replace(value, lit(anchored), lit(repl), None);
    let e = when(matched, replaced).otherwise(current)?;
    set_label(v, &dst, e).map(Value::Vector)
}

fn label_join(cx: &Context, a: &[&PExpr], _need: &Need) -> Result<Value> {
    let v = vector(cx, a[0], &ALL)?;
    let dst = string(a[1])?;
    let sep = string(a[2])?;
    if !label_name_ok(&dst) {
        return Err(bad(format!(
            "invalid destination label name in label_join(): {dst}"
        )));
    }
    let mut parts = Vec::new();
    for (i, e) in a[3..].iter().enumerate() {
        if i > 0 {
            parts.push(lit(sep.clone()));
        }
        parts.push(label_or_empty(&v, &string(e)?));
    }
    let e = if parts.is_empty() {
        lit("")
    } else {
        f::concat(parts)
    };
    set_label(v, &dst, e).map(Value::Vector)
}

fn histogram_quantile(cx: &Context, a: &[&PExpr]) -> Result<Value> {
    use datafusion::functions_aggregate::expr_fn as agg;
    let q = constant(cx, a[0], "the quantile")?;
    let v = vector(cx, a[1], &ALL)?;
    if !v.labels.iter().any(|l| l == "le") {
        return super::empty().map(Value::Vector);
    }
    let keep: Vec<String> = v
        .labels
        .iter()
        .filter(|l| *l != "le" && *l != NAME)
        .cloned()
        .collect();
    let bucket = f::named_struct(vec![lit("le"), column("le"), lit("v"), column(VALUE)]);
    let list = agg::array_agg(bucket);
    let finish = udf("prom_bucket_quantile").call(vec![lit(q), column(VALUE)]);
    let grouped = super::aggregate::grouped(v, keep.clone(), list, Some(finish))?;
    let plan = build::filter(grouped.plan, column(VALUE).is_not_null())?;
    Ok(Value::Vector(Vector { plan, labels: keep }))
}

/// Rows `(labels of `vs`'s equality matchers, __ts, 1)` at the steps where `present` has none.
fn absent_rows(cx: &Context, present: Vector, labels: Vec<(String, String)>) -> Result<Value> {
    let seen = LogicalPlanBuilder::from(build::project(
        present.plan,
        vec![column(TS).alias("__sts")],
    )?)
    .distinct()?
    .build()?;
    let mut exprs: Vec<Expr> = labels
        .iter()
        .map(|(k, v)| lit(ScalarValue::Utf8(Some(v.clone()))).alias(k))
        .collect();
    exprs.push(column(TS));
    exprs.push(lit(1.0).alias(VALUE));
    let missing = build::join_on(super::steps(cx)?, seen, JoinType::LeftAnti, TS, "__sts")?;
    let plan = build::project(missing, exprs)?;
    Ok(Value::Vector(Vector {
        plan,
        labels: labels.into_iter().map(|(k, _)| k).collect(),
    }))
}

fn absent(cx: &Context, arg: &PExpr) -> Result<Value> {
    let v = vector(cx, arg, &Some(Default::default()))?;
    let mut inner = arg;
    while let PExpr::Paren(p) = inner {
        inner = &p.expr;
    }
    let labels = match inner {
        PExpr::VectorSelector(vs) => selector::absent_labels(vs),
        _ => Vec::new(),
    };
    absent_rows(cx, v, labels)
}

fn absent_over_time(cx: &Context, arg: &PExpr) -> Result<Value> {
    let m = matrix(arg)?;
    let v = selector::range(
        cx,
        m,
        &Some(Default::default()),
        RangeFn::CountOverTime,
        Vec::new(),
    )?;
    absent_rows(cx, v, selector::absent_labels(&m.vs))
}
