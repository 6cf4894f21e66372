//! Answers "latest value" queries from the last-value cache.
//!
//! The cache holds each series' newest row (fields at the same time merged, as a scan
//! merges them). Two plan shapes only ever return such rows, so they read the cache instead
//! of the data and give the same result:
//!
//! - `DISTINCT ON (e1, …) … ORDER BY e1, …, time DESC [, …]` (and so `LATEST ON`, which is
//!   rewritten to it): the row kept for a group is the one with the greatest time, which is
//!   the newest row of one of the group's series.
//! - `… ORDER BY time DESC [, …] LIMIT 1`: the newest row of all is the newest row of some
//!   series. (Not `LIMIT 2`: the second newest row may be a series' older row.)
//!
//! Between that node and the table there may be projections, aliases and filters, where
//! every filter conjunct is a predicate over tag columns only (true or false for a whole
//! series) or a lower bound on `time` (a series has a point after the bound exactly when its
//! newest point is after it). Anything else (a filter on a field, an upper time bound, an
//! aggregate, a join) keeps the plan on the data.
//!
//! A `DISTINCT ON` whose keys are tag columns passed through unchanged, under filters that
//! read only those keys or bound time from below, needs no aggregation at all: the scan keeps
//! the newest cached row of each key (a filter like that keeps or drops a whole key, so it
//! commutes with keeping the newest row), and the `DISTINCT ON` becomes a sort and a
//! projection over one row per key.
//!
//! `last(v)` grouped by every tag is not rewritten: it takes each field's newest non-NULL
//! value, which the cache's newest row does not hold when that row lacks the field.

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::datasource::{provider_as_source, source_as_provider};
use datafusion::error::Result;
use datafusion::logical_expr::utils::split_conjunction;
use datafusion::logical_expr::{
    BinaryExpr, Distinct, DistinctOn, Expr, LogicalPlan, Operator, Projection, Sort, SortExpr,
};
use datafusion::optimizer::AnalyzerRule;
use tempora_model::TIME_COLUMN;

use crate::table::TemporaTable;

#[derive(Debug, Default)]
pub struct LatestValueRule;

impl AnalyzerRule for LatestValueRule {
    fn name(&self) -> &str {
        "tempora_latest_value"
    }

    fn analyze(&self, plan: LogicalPlan, config: &ConfigOptions) -> Result<LogicalPlan> {
        if !crate::options::of(config).last_value_cache {
            return Ok(plan);
        }
        plan.transform_down(|node| {
            let input = match latest_shape(&node) {
                Some(input) => input,
                None => return Ok(Transformed::no(node)),
            };
            if !eligible(input) {
                return Ok(Transformed::no(node));
            }
            if let LogicalPlan::Distinct(Distinct::On(d)) = &node
                && let Some(keys) = newest_per(d)
            {
                let input = Arc::unwrap_or_clone(d.input.clone())
                    .transform_up(|n| to_cache(n, Some(&keys)))?
                    .data;
                let sort = LogicalPlan::Sort(Sort {
                    expr: d.sort_expr.clone().unwrap_or_default(),
                    input: Arc::new(input),
                    fetch: None,
                });
                let projected = Projection::try_new(d.select_expr.clone(), Arc::new(sort))?;
                return Ok(Transformed::new(
                    LogicalPlan::Projection(projected),
                    true,
                    TreeNodeRecursion::Jump,
                ));
            }
            let node = node.transform_up(|n| to_cache(n, None))?.data;
            Ok(Transformed::new(node, true, TreeNodeRecursion::Jump))
        })
        .map(|t| t.data)
    }
}

/// The input of a node whose rows are all newest rows of series, if `node` is one.
fn latest_shape(node: &LogicalPlan) -> Option<&LogicalPlan> {
    match node {
        LogicalPlan::Distinct(Distinct::On(d)) => {
            let sort = d.sort_expr.as_ref()?;
            let next = sort.get(d.on_expr.len())?;
            time_desc(next).then_some(d.input.as_ref())
        }
        LogicalPlan::Limit(l) => {
            let fetch_one = matches!(
                l.fetch.as_deref(),
                Some(Expr::Literal(v, _)) if v.to_string() == "1"
            );
            let no_skip = l
                .skip
                .as_deref()
                .is_none_or(|s| matches!(s, Expr::Literal(v, _) if v.to_string() == "0"));
            let LogicalPlan::Sort(s) = l.input.as_ref() else {
                return None;
            };
            (fetch_one && no_skip && s.expr.first().is_some_and(time_desc))
                .then_some(s.input.as_ref())
        }
        LogicalPlan::Sort(s) if s.fetch == Some(1) => s
            .expr
            .first()
            .is_some_and(time_desc)
            .then_some(s.input.as_ref()),
        _ => None,
    }
}

fn time_desc(s: &SortExpr) -> bool {
    !s.asc && matches!(&s.expr, Expr::Column(c) if c.name == TIME_COLUMN)
}

/// Whether the rows between the node and a Tempora table are the table's rows, filtered
/// per series or by a time lower bound, with `time` passed through unchanged.
fn eligible(plan: &LogicalPlan) -> bool {
    match plan {
        LogicalPlan::Projection(p) => {
            let time_kept = p.expr.iter().any(|e| match e {
                Expr::Column(c) => c.name == TIME_COLUMN,
                Expr::Alias(a) => {
                    a.name == TIME_COLUMN
                        && matches!(&*a.expr, Expr::Column(c) if c.name == TIME_COLUMN)
                }
                _ => false,
            });
            let time_replaced = p.expr.iter().any(|e| {
                matches!(e, Expr::Alias(a) if a.name == TIME_COLUMN
                    && !matches!(&*a.expr, Expr::Column(c) if c.name == TIME_COLUMN))
            });
            time_kept && !time_replaced && eligible(&p.input)
        }
        LogicalPlan::SubqueryAlias(a) => eligible(&a.input),
        LogicalPlan::Filter(f) => {
            let Some(tags) = scan_tags(&f.input) else {
                return false;
            };
            split_conjunction(&f.predicate)
                .iter()
                .all(|c| per_series(c, &tags) || time_lower_bound(c))
                && eligible(&f.input)
        }
        LogicalPlan::TableScan(s) => {
            let Some(tags) = scan_tags(plan) else {
                return false;
            };
            s.filters
                .iter()
                .all(|c| per_series(c, &tags) || time_lower_bound(c))
        }
        _ => false,
    }
}

/// The tag columns of the Tempora table under aliases and filters, if that is what `plan`
/// reads.
fn scan_tags(plan: &LogicalPlan) -> Option<Vec<String>> {
    match plan {
        LogicalPlan::TableScan(s) => {
            let provider = source_as_provider(&s.source).ok()?;
            Some(provider.downcast_ref::<TemporaTable>()?.tags().to_vec())
        }
        LogicalPlan::SubqueryAlias(a) => scan_tags(&a.input),
        LogicalPlan::Filter(f) => scan_tags(&f.input),
        _ => None,
    }
}

/// True when `e` reads only tag columns (so it is constant over a series) and is not
/// volatile.
fn per_series(e: &Expr, tags: &[String]) -> bool {
    let cols = e.column_refs();
    !e.is_volatile() && !cols.is_empty() && cols.iter().all(|c| tags.contains(&c.name))
}

/// `time > x`, `time >= x` (or `x < time`, `x <= time`) with `x` free of columns.
fn time_lower_bound(e: &Expr) -> bool {
    let Expr::BinaryExpr(BinaryExpr { left, op, right }) = e else {
        return false;
    };
    let is_time = |e: &Expr| matches!(e, Expr::Column(c) if c.name == TIME_COLUMN);
    let constant = |e: &Expr| e.column_refs().is_empty() && !e.is_volatile();
    match op {
        Operator::Gt | Operator::GtEq => is_time(left) && constant(right),
        Operator::Lt | Operator::LtEq => is_time(right) && constant(left),
        _ => false,
    }
}

/// The tag columns a `DISTINCT ON` keeps one row per, when its scan may keep only the newest
/// row of each: every ON expression is a tag column that reaches the node unchanged, and
/// every filter on the way reads only those columns or bounds time from below, and the ORDER
/// BY ends at `time DESC`. (The shape was already checked by [`eligible`].)
fn newest_per(d: &DistinctOn) -> Option<Vec<String>> {
    // Sorted by the keys, then time descending, and nothing after: a later sort key would
    // decide between rows of one key that have the same time, which the scan does not.
    if d.sort_expr.as_ref()?.len() != d.on_expr.len() + 1 {
        return None;
    }
    let keys: Vec<String> = d
        .on_expr
        .iter()
        .map(|e| match e {
            Expr::Column(c) => Some(c.name.clone()),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let by_keys =
        |e: &Expr| time_lower_bound(e) || e.column_refs().iter().all(|c| keys.contains(&c.name));
    let mut plan = d.input.as_ref();
    loop {
        plan = match plan {
            LogicalPlan::Projection(p) => {
                let passed = |k: &String| {
                    p.expr
                        .iter()
                        .any(|e| matches!(e, Expr::Column(c) if &c.name == k))
                };
                if !keys.iter().all(passed) {
                    return None;
                }
                p.input.as_ref()
            }
            LogicalPlan::SubqueryAlias(a) => a.input.as_ref(),
            LogicalPlan::Filter(f) => {
                if !split_conjunction(&f.predicate).into_iter().all(by_keys) {
                    return None;
                }
                f.input.as_ref()
            }
            LogicalPlan::TableScan(s) => {
                let tags = scan_tags(plan)?;
                let ok = s.filters.iter().all(by_keys) && keys.iter().all(|k| tags.contains(k));
                return ok.then_some(keys);
            }
            _ => return None,
        }
    }
}

/// Points a Tempora table scan at the last-value cache; with `newest_per`, the scan keeps
/// only the newest row of each value of those tag columns.
fn to_cache(n: LogicalPlan, newest_per: Option<&[String]>) -> Result<Transformed<LogicalPlan>> {
    let LogicalPlan::TableScan(mut s) = n else {
        return Ok(Transformed::no(n));
    };
    let provider = source_as_provider(&s.source)?;
    let Some(t) = provider.downcast_ref::<TemporaTable>() else {
        return Ok(Transformed::no(LogicalPlan::TableScan(s)));
    };
    if t.is_latest() {
        return Ok(Transformed::no(LogicalPlan::TableScan(s)));
    }
    s.source = provider_as_source(Arc::new(t.latest_variant(newest_per)));
    Ok(Transformed::yes(LogicalPlan::TableScan(s)))
}
