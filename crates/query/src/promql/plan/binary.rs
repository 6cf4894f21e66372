//! Binary operators: arithmetic (`+ - * / % ^ atan2`), comparisons (filters, or 0/1 with
//! `bool`) and the set operators `and`, `or`, `unless`.
//!
//! - scalar ∘ scalar: folded when both are constants, else a join on `__ts`.
//! - vector ∘ scalar: a projection (arithmetic) or a filter (comparison); the vector's value is
//!   kept by a comparison whichever side it is on.
//! - vector ∘ vector: a join of the two on their signature (the `on(…)` labels, or every label
//!   but `ignoring(…)` ones and `__name__`) and `__ts`, absent labels equal to absent ones.
//!   The result has the "many" side's labels (`on` keeps only those, `ignoring` drops those,
//!   `group_left/right(…)` copies the listed ones from the "one" side); arithmetic and `bool`
//!   drop `__name__`. `and`/`unless` are semi/anti joins; `or` adds the right side's rows
//!   whose signature the left lacks at that step: a union of both sides tagged 0 and 1, kept
//!   where the tag is the least of its (signature, step) — each side is read once, so a
//!   chain `a or b or c …` is a plan of linear size (an anti-join reads the left side twice,
//!   which doubled the plan at each `or`: 2^n nodes for n of them).
//!
//! Comparisons follow IEEE as Go does (a NaN compares unequal to everything); SQL's ordering
//! puts NaN above every number, so each comparison is guarded.

use std::collections::BTreeSet;

use datafusion::common::{Column, JoinType, NullEquality, ScalarValue};
use datafusion::functions::expr_fn::isnan;
use datafusion::functions::math::expr_fn::{atan2, power};
use datafusion::functions_aggregate::min_max::min_udaf;
use datafusion::logical_expr::expr::WindowFunction;
use datafusion::logical_expr::{
    Expr, ExprFunctionExt, LogicalPlan, LogicalPlanBuilder, WindowFunctionDefinition, lit, when,
};
use promql_parser::parser::{BinaryExpr, LabelModifier, VectorMatchCardinality};

use super::{ALL, Context, Scalar, Value, Vector, align, bad, build, column, expr, without_name};
use crate::error::Result;
use crate::promql::scan::{NAME, TS, VALUE};
use crate::promql::unique::PromUnique;

/// `a op b` for an arithmetic operator.
fn arith(op: &str, a: Expr, b: Expr) -> Result<Expr> {
    Ok(match op {
        "+" => a + b,
        "-" => a - b,
        "*" => a * b,
        "/" => a / b,
        "%" => a % b,
        "^" => power(a, b),
        "atan2" => atan2(a, b),
        other => return Err(bad(format!("operator {other:?} is not arithmetic"))),
    })
}

/// `a op b` for a comparison, false when either is NaN (true for `!=`).
fn compare(op: &str, a: Expr, b: Expr) -> Result<Expr> {
    let nan = isnan(a.clone()).or(isnan(b.clone()));
    Ok(match op {
        "!=" => a.not_eq(b).or(nan.clone()),
        "==" => a.eq(b).and(!nan.clone()),
        ">" => a.gt(b).and(!nan.clone()),
        "<" => a.lt(b).and(!nan.clone()),
        ">=" => a.gt_eq(b).and(!nan.clone()),
        "<=" => a.lt_eq(b).and(!nan.clone()),
        other => return Err(bad(format!("operator {other:?} is not a comparison"))),
    })
}

fn is_comparison(op: &str) -> bool {
    matches!(op, "==" | "!=" | ">" | "<" | ">=" | "<=")
}

fn fold(op: &str, a: f64, b: f64) -> f64 {
    match op {
        "+" => a + b,
        "-" => a - b,
        "*" => a * b,
        "/" => a / b,
        "%" => a % b,
        "^" => a.powf(b),
        "atan2" => a.atan2(b),
        "==" => f64::from(a == b),
        "!=" => f64::from(a != b),
        ">" => f64::from(a > b),
        "<" => f64::from(a < b),
        ">=" => f64::from(a >= b),
        "<=" => f64::from(a <= b),
        _ => f64::NAN,
    }
}

pub fn plan(cx: &Context, b: &BinaryExpr, _need: &super::Need) -> Result<Value> {
    let op = b.op.to_string();
    let return_bool = b.modifier.as_ref().is_some_and(|m| m.return_bool);
    let lhs = expr(cx, &b.lhs, &ALL)?;
    let rhs = expr(cx, &b.rhs, &ALL)?;
    match (lhs, rhs) {
        (Value::Scalar(l), Value::Scalar(r)) => scalars(cx, &op, l, r).map(Value::Scalar),
        (Value::Vector(v), Value::Scalar(s)) => {
            vector_scalar(&op, v, s, false, return_bool).map(Value::Vector)
        }
        (Value::Scalar(s), Value::Vector(v)) => {
            vector_scalar(&op, v, s, true, return_bool).map(Value::Vector)
        }
        (Value::Vector(l), Value::Vector(r)) => {
            vectors(&op, l, r, b, return_bool).map(Value::Vector)
        }
        _ => Err(bad(format!(
            "binary expression must contain only scalar and instant vector types (operator {op})"
        ))),
    }
}

fn scalars(cx: &Context, op: &str, l: Scalar, r: Scalar) -> Result<Scalar> {
    if let (Scalar::Const(a), Scalar::Const(b)) = (&l, &r) {
        return Ok(Scalar::Const(fold(op, *a, *b)));
    }
    let (joined, a, b) = scalar_join(cx, l, r)?;
    let value = if is_comparison(op) {
        when(compare(op, a, b)?, lit(1.0)).otherwise(lit(0.0))?
    } else {
        arith(op, a, b)?
    };
    Ok(Scalar::Steps(build::project(
        joined,
        vec![column(TS), value.alias(VALUE)],
    )?))
}

/// Two scalars side by side per step: the plan and the expressions of their values.
fn scalar_join(cx: &Context, l: Scalar, r: Scalar) -> Result<(LogicalPlan, Expr, Expr)> {
    let left = super::scalar_rows(cx, l)?;
    let right = renamed_scalar(super::scalar_rows(cx, r)?)?;
    let plan = build::join_on(left, right, JoinType::Inner, TS, "__sts")?;
    Ok((plan, column(VALUE), column("__svalue")))
}

/// A scalar's rows as `(__sts, __svalue)`, to sit beside a vector's.
fn renamed_scalar(plan: LogicalPlan) -> Result<LogicalPlan> {
    build::project(
        plan,
        vec![column(TS).alias("__sts"), column(VALUE).alias("__svalue")],
    )
}

/// `v op s` (or `s op v` when `swapped`).
fn vector_scalar(
    op: &str,
    v: Vector,
    s: Scalar,
    swapped: bool,
    return_bool: bool,
) -> Result<Vector> {
    if matches!(op, "and" | "or" | "unless") {
        return Err(bad(format!(
            "set operator {op:?} not allowed in binary scalar expression"
        )));
    }
    let (plan, scalar) = match s {
        Scalar::Const(c) => (v.plan, lit(c)),
        Scalar::Steps(p) => {
            let plan = build::join_on(v.plan, renamed_scalar(p)?, JoinType::Inner, TS, "__sts")?;
            (plan, column("__svalue"))
        }
    };
    let (a, b) = if swapped {
        (scalar, column(VALUE))
    } else {
        (column(VALUE), scalar)
    };
    if is_comparison(op) {
        let cond = compare(op, a, b)?;
        if return_bool {
            let labels = without_name(&v.labels);
            let value = when(cond, lit(1.0)).otherwise(lit(0.0))?;
            return Ok(Vector {
                plan: super::map_value(plan, &labels, value)?,
                labels,
            });
        }
        let plan = build::filter(plan, cond)?;
        return Ok(Vector {
            plan: super::map_value(plan, &v.labels, column(VALUE))?,
            labels: v.labels,
        });
    }
    let labels = without_name(&v.labels);
    Ok(Vector {
        plan: super::map_value(plan, &labels, arith(op, a, b)?)?,
        labels,
    })
}

fn qualified(side: &str, name: &str) -> Expr {
    Expr::Column(Column::new(Some(side), name))
}

/// `l or r`: every row of `l`, and the rows of `r` whose signature `l` lacks at that step.
/// `union` is the labels of either side. Both sides, with every label of either and of the
/// signature, are unioned with a tag (0 left, 1 right); a row is kept when its tag is the
/// least in its (signature, step) partition. Absent labels are nulls, and nulls partition
/// together, as the joins' keys match null to null.
fn or(l: Vector, r: Vector, union: &BTreeSet<String>, signature: &[String]) -> Result<Vector> {
    const SIDE: &str = "__side";
    const FIRST: &str = "__first_side";
    let labels: Vec<String> = union.iter().cloned().collect();
    let all: Vec<String> = union
        .iter()
        .chain(signature)
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let tagged = |v: Vector, tag: i64| -> Result<LogicalPlan> {
        let aligned = align(v.plan, &v.labels, &all)?;
        let mut exprs: Vec<Expr> = all.iter().map(|x| column(x)).collect();
        exprs.push(column(TS));
        exprs.push(column(VALUE));
        exprs.push(lit(tag).alias(SIDE));
        build::project(aligned, exprs)
    };
    let both = LogicalPlanBuilder::from(tagged(l, 0)?)
        .union(tagged(r, 1)?)?
        .build()?;
    let mut partition: Vec<Expr> = signature.iter().map(|x| column(x)).collect();
    partition.push(column(TS));
    let first = Expr::from(WindowFunction::new(
        WindowFunctionDefinition::AggregateUDF(min_udaf()),
        vec![column(SIDE)],
    ))
    .partition_by(partition)
    .build()?
    .alias(FIRST);
    let windowed = build::window(both, vec![first])?;
    let kept = build::filter(windowed, column(SIDE).eq(column(FIRST)))?;
    let mut out: Vec<Expr> = labels.iter().map(|x| column(x)).collect();
    out.push(column(TS));
    out.push(column(VALUE));
    Ok(Vector {
        plan: build::project(kept, out)?,
        labels,
    })
}

/// A vector's plan with `extra` label columns added as nulls, under the alias `side`.
fn side(v: &Vector, labels: &[String], alias: &str) -> Result<LogicalPlan> {
    Ok(
        LogicalPlanBuilder::from(align(v.plan.clone(), &v.labels, labels)?)
            .alias(alias)?
            .build()?,
    )
}

fn vectors(op: &str, l: Vector, r: Vector, b: &BinaryExpr, return_bool: bool) -> Result<Vector> {
    let modifier = b.modifier.as_ref();
    let card = modifier.map_or(VectorMatchCardinality::OneToOne, |m| m.card.clone());
    let matching = modifier.and_then(|m| m.matching.clone());
    let union: BTreeSet<String> = l.labels.iter().chain(&r.labels).cloned().collect();
    let signature: Vec<String> = match &matching {
        Some(LabelModifier::Include(on)) => on
            .labels
            .iter()
            .cloned()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect(),
        Some(LabelModifier::Exclude(ignoring)) => union
            .iter()
            .filter(|x| *x != NAME && !ignoring.labels.contains(x))
            .cloned()
            .collect(),
        None => union.iter().filter(|x| *x != NAME).cloned().collect(),
    };
    if op == "or" {
        return or(l, r, &union, &signature);
    }
    // Each side with every signature label (absent ones as null).
    let with_sig = |v: &Vector| -> Vec<String> {
        v.labels
            .iter()
            .chain(&signature)
            .cloned()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    };
    let (l_labels, r_labels) = (with_sig(&l), with_sig(&r));
    let set_op = matches!(op, "and" | "unless");
    let one_side = |v: &Vector,
                    labels: &[String],
                    alias: &str,
                    name: &str|
     -> Result<LogicalPlan> {
        if set_op {
            return side(v, labels, alias);
        }
        // The "one" side of a match must have one series per signature at each step.
        let aligned = align(v.plan.clone(), &v.labels, labels)?;
        let checked = PromUnique::plan(
            aligned,
            signature.clone(),
            format!(
                "found duplicate series for the match group on the {name} hand-side of the operation \
                 (many-to-many matching not allowed: matching labels must be unique on one side):"
            ),
        );
        Ok(LogicalPlanBuilder::from(checked).alias(alias)?.build()?)
    };
    let one_to_many = matches!(card, VectorMatchCardinality::OneToMany(_));
    let left = if one_to_many {
        one_side(&l, &l_labels, "l", "left")?
    } else {
        side(&l, &l_labels, "l")?
    };
    let right = if one_to_many {
        side(&r, &r_labels, "r")?
    } else {
        one_side(&r, &r_labels, "r", "right")?
    };
    let mut keys: Vec<Column> = signature
        .iter()
        .map(|s| Column::new(Some("l"), s))
        .collect();
    keys.push(Column::new(Some("l"), TS));
    let mut rkeys: Vec<Column> = signature
        .iter()
        .map(|s| Column::new(Some("r"), s))
        .collect();
    rkeys.push(Column::new(Some("r"), TS));
    let join = |left: LogicalPlan, right: LogicalPlan, t: JoinType| -> Result<LogicalPlan> {
        Ok(LogicalPlanBuilder::from(left)
            .join_detailed(
                right,
                t,
                (keys.clone(), rkeys.clone()),
                None,
                NullEquality::NullEqualsNull,
            )?
            .build()?)
    };
    let unqualify = |plan: LogicalPlan, labels: &[String], from: &str| -> Result<LogicalPlan> {
        let mut exprs: Vec<Expr> = labels.iter().map(|x| qualified(from, x).alias(x)).collect();
        exprs.push(qualified(from, TS).alias(TS));
        exprs.push(qualified(from, VALUE).alias(VALUE));
        build::project(plan, exprs)
    };
    match op {
        "and" | "unless" => {
            let t = if op == "and" {
                JoinType::LeftSemi
            } else {
                JoinType::LeftAnti
            };
            let plan = unqualify(join(left, right, t)?, &l.labels, "l")?;
            return Ok(Vector {
                plan,
                labels: l.labels,
            });
        }
        _ => {}
    }
    let comparison = is_comparison(op);
    let joined = join(left, right, JoinType::Inner)?;
    let (many, one) = match card {
        VectorMatchCardinality::OneToMany(_) => ("r", "l"),
        _ => ("l", "r"),
    };
    let many_labels = if many == "l" { &l.labels } else { &r.labels };
    let one_labels = if one == "l" { &l.labels } else { &r.labels };
    // The result's labels, as Prometheus's resultMetric builds them.
    let mut labels: BTreeSet<String> = many_labels.iter().cloned().collect();
    if !comparison || return_bool {
        labels.remove(NAME);
    }
    if matches!(card, VectorMatchCardinality::OneToOne) {
        match &matching {
            Some(LabelModifier::Include(on)) => labels.retain(|x| on.labels.contains(x)),
            Some(LabelModifier::Exclude(ignoring)) => {
                labels.retain(|x| !ignoring.labels.contains(x))
            }
            None => {}
        }
    }
    let include: Vec<String> = card
        .labels()
        .map(|ls| ls.labels.clone())
        .unwrap_or_default();
    labels.extend(include.iter().cloned());
    let labels: Vec<String> = labels.into_iter().collect();
    let mut exprs: Vec<Expr> = labels
        .iter()
        .map(|x| {
            if include.contains(x) {
                if one_labels.contains(x) {
                    qualified(one, x).alias(x)
                } else {
                    lit(ScalarValue::Utf8(None)).alias(x)
                }
            } else {
                qualified(many, x).alias(x)
            }
        })
        .collect();
    exprs.push(qualified("l", TS).alias(TS));
    let (a, bv) = (qualified("l", VALUE), qualified("r", VALUE));
    let mut plan = joined;
    let value = if comparison {
        let cond = compare(op, a.clone(), bv)?;
        if return_bool {
            when(cond, lit(1.0)).otherwise(lit(0.0))?
        } else {
            plan = build::filter(plan, cond)?;
            a
        }
    } else {
        arith(op, a, bv)?
    };
    exprs.push(value.alias(VALUE));
    let plan = build::project(plan, exprs)?;
    // Each result series once per step: two matches giving the same labels are refused.
    let message = if matches!(card, VectorMatchCardinality::OneToOne) {
        "multiple matches for labels: many-to-one matching must be explicit (group_left/group_right):"
    } else {
        "multiple matches for labels: grouping labels must ensure unique matches:"
    };
    let plan = PromUnique::plan(plan, labels.clone(), message);
    Ok(Vector { plan, labels })
}
