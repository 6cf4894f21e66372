//! Parameters of a prepared plan: which placeholders it has (with the types DataFusion gave
//! them), and the plan with values bound to them.
//!
//! A plan is optimised before its parameters have values (the plan cache keeps it so), so
//! binding also folds the casts DataFusion could not fold then, where it needs literals.
//! Tempora's nodes keep expressions over their table's columns apart from DataFusion's rules
//! ([`TemporaAggregate::inner_exprs`]); their placeholders are found and bound here too.

use std::collections::HashMap;

use arrow::datatypes::DataType;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{ParamValues, ScalarValue};
use datafusion::logical_expr::expr::Placeholder;
use datafusion::logical_expr::{Expr, Extension, LogicalPlan};

use crate::error::{QueryError, Result};
use crate::nodes::TemporaAggregate;
use crate::service::client_params;

/// Every placeholder of `plan` (`$1` …) with its type, where DataFusion inferred one.
pub fn parameter_types(plan: &LogicalPlan) -> Result<HashMap<String, Option<DataType>>> {
    Ok(parameters(plan)?.0)
}

/// [`parameter_types`], and whether any placeholder is outside Tempora's nodes (where
/// DataFusion's own binding must replace it).
fn parameters(plan: &LogicalPlan) -> Result<(HashMap<String, Option<DataType>>, bool)> {
    let mut types = plan.get_parameter_types()?;
    let outside = !types.is_empty();
    plan.apply_with_subqueries(|node| {
        if let Some(a) = aggregate(node) {
            for e in a.inner_exprs() {
                e.apply(|e| {
                    if let Expr::Placeholder(Placeholder { id, field }) = e {
                        let t = field.as_ref().map(|f| f.data_type().clone());
                        let slot = types.entry(id.clone()).or_insert(None);
                        if slot.is_none() {
                            *slot = t;
                        }
                    }
                    Ok(TreeNodeRecursion::Continue)
                })?;
            }
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    Ok((types, outside))
}

fn aggregate(node: &LogicalPlan) -> Option<&TemporaAggregate> {
    match node {
        LogicalPlan::Extension(e) => e.node.as_any().downcast_ref::<TemporaAggregate>(),
        _ => None,
    }
}

/// Binds `values` (`$1` is `values[0]`) in the expressions of Tempora's nodes.
fn bind_inner(plan: LogicalPlan, values: &[ScalarValue]) -> Result<LogicalPlan> {
    let t = plan.transform_up_with_subqueries(|node| {
        let Some(a) = aggregate(&node) else {
            return Ok(Transformed::no(node));
        };
        let exprs = a
            .inner_exprs()
            .into_iter()
            .map(|e| {
                e.transform_up(|e| match &e {
                    Expr::Placeholder(Placeholder { id, .. }) => {
                        let i: usize = id[1..].parse().map_err(|_| {
                            datafusion::error::DataFusionError::Plan(format!("bad parameter {id}"))
                        })?;
                        let v = values.get(i.wrapping_sub(1)).cloned().ok_or_else(|| {
                            datafusion::error::DataFusionError::Plan(format!(
                                "no value for parameter {id}"
                            ))
                        })?;
                        Ok(Transformed::yes(Expr::Literal(v, None)))
                    }
                    _ => Ok(Transformed::no(e)),
                })
                .map(|t| t.data)
            })
            .collect::<datafusion::error::Result<Vec<_>>>()?;
        let node = a.with_inner_exprs(exprs)?;
        Ok(Transformed::yes(LogicalPlan::Extension(Extension {
            node: std::sync::Arc::new(node),
        })))
    })?;
    Ok(t.data)
}

/// `plan` with its placeholders bound: the client's `params`, then the cached `literals`,
/// each cast to the type the plan gave its placeholder.
pub fn bind(
    plan: &LogicalPlan,
    params: Vec<ScalarValue>,
    literals: &[ScalarValue],
) -> Result<LogicalPlan> {
    if params.is_empty() && literals.is_empty() {
        return Ok(plan.clone());
    }
    let (types, outside) = parameters(plan)?;
    let wanted = client_params(&types, literals.len());
    if params.len() < wanted {
        return Err(QueryError::Sql(format!(
            "the statement has {wanted} parameters, {} were bound",
            params.len()
        )));
    }
    let values = params
        .into_iter()
        .take(wanted)
        .chain(literals.iter().cloned())
        .enumerate()
        .map(|(i, v)| match types.get(&format!("${}", i + 1)) {
            Some(Some(t)) if &v.data_type() != t && !v.is_null() => v.cast_to(t).map_err(|e| {
                QueryError::Sql(format!("parameter ${}: {v} is not a {t}: {e}", i + 1))
            }),
            Some(Some(t)) if v.is_null() => Ok(ScalarValue::try_from(t)?),
            _ => Ok(v),
        })
        .collect::<Result<Vec<_>>>()?;
    if !outside {
        // Every placeholder is in Tempora's nodes.
        return bind_inner(plan.clone(), &values);
    }
    let bound = plan
        .clone()
        .replace_params_with_values(&ParamValues::from(values.clone()))?;
    let bound = bind_inner(bound, &values)?;
    Ok(fold_bound_casts(bound)?)
}

/// Folds `CAST(<literal> AS t)` left by binding a parameter whose type the plan did not fix,
/// where DataFusion needs a literal (`LIMIT`, `OFFSET`) or where a scan reads its filters:
/// the plan was optimised before its parameters had values.
fn fold_bound_casts(plan: LogicalPlan) -> datafusion::error::Result<LogicalPlan> {
    use datafusion::logical_expr::Cast;
    fn fold(e: Expr) -> datafusion::error::Result<Transformed<Expr>> {
        e.transform_up(|e| match &e {
            Expr::Cast(Cast { expr, field }) => match expr.as_ref() {
                Expr::Literal(v, m) => Ok(Transformed::yes(Expr::Literal(
                    v.cast_to(field.data_type())?,
                    m.clone(),
                ))),
                _ => Ok(Transformed::no(e)),
            },
            _ => Ok(Transformed::no(e)),
        })
    }
    plan.transform_up_with_subqueries(|node| match node {
        LogicalPlan::Limit(mut l) => {
            if let Some(f) = l.fetch.take() {
                l.fetch = Some(Box::new(fold(*f)?.data));
            }
            if let Some(s) = l.skip.take() {
                l.skip = Some(Box::new(fold(*s)?.data));
            }
            Ok(Transformed::yes(LogicalPlan::Limit(l)))
        }
        LogicalPlan::Filter(mut f) => {
            f.predicate = fold(f.predicate)?.data;
            Ok(Transformed::yes(LogicalPlan::Filter(f)))
        }
        LogicalPlan::TableScan(mut t) => {
            t.filters = t
                .filters
                .into_iter()
                .map(|e| fold(e).map(|t| t.data))
                .collect::<datafusion::error::Result<_>>()?;
            Ok(Transformed::yes(LogicalPlan::TableScan(t)))
        }
        other => Ok(Transformed::no(other)),
    })
    .map(|t| t.data)
}

/// Whether the cached `literals` (after the client's parameters) bind to `plan`'s
/// placeholders without changing value: a text cast to its column's type (as DataFusion casts
/// a literal compared with a column), a number cast to a type it survives the round trip to.
/// A literal that would not (an integer column compared with 2.5, where DataFusion casts the
/// column instead) is an error: the statement is then planned as written.
pub fn check_literals(plan: &LogicalPlan, literals: &[ScalarValue]) -> Result<()> {
    let types = parameter_types(plan)?;
    let first = client_params(&types, literals.len());
    for (i, v) in literals.iter().enumerate() {
        let id = format!("${}", first + i + 1);
        let Some(Some(t)) = types.get(&id) else {
            continue;
        };
        if &v.data_type() == t {
            continue;
        }
        let cast = v.cast_to(t).ok().filter(|c| !c.is_null());
        let same = match (v, cast) {
            (_, None) => false,
            (ScalarValue::Utf8(_), Some(_)) => true,
            (v, Some(c)) => c.cast_to(&v.data_type()).is_ok_and(|back| &back == v),
        };
        if !same {
            return Err(QueryError::Sql(format!(
                "literal {v} does not keep its value as the {t} of {id}"
            )));
        }
    }
    Ok(())
}
