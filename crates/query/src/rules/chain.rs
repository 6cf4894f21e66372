//! The chain below a node that Tempora's operators can take over: projections, aliases and
//! filters down to the scan of a Tempora table, read as one table with its filters.
//!
//! [`chain`] follows the plan down and returns the table, every filter conjunct (those of
//! `Filter` nodes and those pushed into the scan) and a map from each column visible at the
//! top to its expression over the table's columns, so an expression written against the top
//! can be rewritten against the table ([`Chain::inline`]). Any other node (a join, an
//! aggregate, a limit, a scan of another kind of table or of the last-value cache) ends the
//! chain with `None`.
//!
//! [`split_filters`] sorts the conjuncts into time bounds, tag predicates and field
//! predicates, or refuses them.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::common::Column;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::datasource::source_as_provider;
use datafusion::logical_expr::utils::split_conjunction;
use datafusion::logical_expr::{Between, BinaryExpr, Expr, LogicalPlan, Operator};
use tempora_model::TIME_COLUMN;

use crate::nodes::aggregate::{ScanFilter, TimeBound};
use crate::table::TemporaTable;

/// A Tempora table under projections and filters.
pub struct Chain {
    pub table: Arc<TemporaTable>,
    /// Every filter conjunct, over the table's columns (duplicates removed).
    pub filters: Vec<Expr>,
    /// Column name at the top → its expression over the table's columns.
    map: HashMap<String, Expr>,
}

impl Chain {
    /// `e` (over the chain's top) as an expression over the table's columns; `None` when it
    /// names a column the chain does not know.
    pub fn inline(&self, e: &Expr) -> Option<Expr> {
        let mut known = true;
        let out = e
            .clone()
            .transform_up(|e| match &e {
                Expr::Column(c) => match self.map.get(&c.name) {
                    Some(x) => Ok(Transformed::yes(x.clone())),
                    None => {
                        known = false;
                        Ok(Transformed::no(e))
                    }
                },
                _ => Ok(Transformed::no(e)),
            })
            .ok()?
            .data;
        known.then_some(out)
    }
}

/// The chain below `plan` (inclusive), if it is one.
pub fn chain(plan: &LogicalPlan) -> Option<Chain> {
    match plan {
        LogicalPlan::TableScan(s) => {
            if s.fetch.is_some() {
                return None;
            }
            let provider = source_as_provider(&s.source).ok()?;
            let t = provider.downcast_ref::<TemporaTable>()?;
            if t.is_latest() {
                return None;
            }
            let map = s
                .projected_schema
                .fields()
                .iter()
                .map(|f| {
                    let col = Column::new(Some(s.table_name.clone()), f.name());
                    (f.name().clone(), Expr::Column(col))
                })
                .collect();
            Some(Chain {
                table: Arc::new(t.clone()),
                filters: s.filters.iter().flat_map(conjuncts).collect(),
                map,
            })
        }
        LogicalPlan::Filter(f) => {
            let mut c = chain(&f.input)?;
            for e in conjuncts(&f.predicate) {
                let e = c.inline(&e)?;
                if !c.filters.contains(&e) {
                    c.filters.push(e);
                }
            }
            Some(c)
        }
        LogicalPlan::Projection(p) => {
            let c = chain(&p.input)?;
            let mut map = HashMap::with_capacity(p.expr.len());
            for (e, f) in p.expr.iter().zip(p.schema.fields()) {
                let inner = match e {
                    Expr::Alias(a) => a.expr.as_ref(),
                    e => e,
                };
                map.insert(f.name().clone(), c.inline(inner)?);
            }
            Some(Chain { map, ..c })
        }
        LogicalPlan::SubqueryAlias(a) => chain(&a.input),
        _ => None,
    }
}

fn conjuncts(e: &Expr) -> Vec<Expr> {
    split_conjunction(e).into_iter().cloned().collect()
}

fn is_time(e: &Expr) -> bool {
    matches!(e, Expr::Column(c) if c.name == TIME_COLUMN)
}

fn constant(e: &Expr) -> bool {
    e.column_refs().is_empty() && !e.is_volatile()
}

/// Sorts filter conjuncts over `table` into time bounds, one predicate over tags and one over
/// fields; `None` when a conjunct is none of these (it reads time otherwise, mixes tags with
/// fields or time, or is volatile).
pub fn split_filters(table: &TemporaTable, filters: &[Expr]) -> Option<ScanFilter> {
    let mut out = ScanFilter::default();
    let mut tags: Vec<Expr> = Vec::new();
    let mut fields: Vec<Expr> = Vec::new();
    for f in filters {
        if let Some(b) = time_bounds(f) {
            out.time.extend(b);
            continue;
        }
        if f.is_volatile() {
            return None;
        }
        let cols = f.column_refs();
        if cols.is_empty() {
            // A constant condition: a field predicate evaluates it on every row.
            fields.push(f.clone());
        } else if cols.iter().all(|c| table.is_tag(&c.name)) {
            tags.push(f.clone());
        } else if cols.iter().all(|c| table.is_field(&c.name)) {
            fields.push(f.clone());
        } else {
            return None;
        }
    }
    out.tags = datafusion::logical_expr::utils::conjunction(tags);
    out.fields = datafusion::logical_expr::utils::conjunction(fields);
    Some(out)
}

/// `time <op> constant` (either way round) or `time BETWEEN a AND b` as bounds.
fn time_bounds(e: &Expr) -> Option<Vec<TimeBound>> {
    match e {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let op_ok = matches!(
                op,
                Operator::Gt | Operator::GtEq | Operator::Lt | Operator::LtEq | Operator::Eq
            );
            if !op_ok {
                return None;
            }
            if is_time(left) && constant(right) {
                Some(vec![TimeBound {
                    op: *op,
                    value: (**right).clone(),
                }])
            } else if is_time(right) && constant(left) {
                Some(vec![TimeBound {
                    op: op.swap()?,
                    value: (**left).clone(),
                }])
            } else {
                None
            }
        }
        Expr::Between(Between {
            expr,
            negated: false,
            low,
            high,
        }) if is_time(expr) && constant(low) && constant(high) => Some(vec![
            TimeBound {
                op: Operator::GtEq,
                value: (**low).clone(),
            },
            TimeBound {
                op: Operator::LtEq,
                value: (**high).clone(),
            },
        ]),
        _ => None,
    }
}
