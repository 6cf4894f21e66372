//! The series and labels behind Prometheus's `/api/v1/series`, `/api/v1/labels` and
//! `/api/v1/label/<name>/values`: read from the tables' series indexes, no samples.
//!
//! A series is listed when its time partition overlaps `[start, end]` (Prometheus answers at
//! block granularity, so both list series that may have no sample in the exact range). With
//! no selector every metric of the database is listed.

use std::collections::{BTreeMap, BTreeSet};

use promql_parser::parser::Expr as PExpr;
use tempora_index::Matcher;

use super::names::{self, Metric};
use super::plan::{Context, selector};
use super::scan::NAME;
use crate::error::{QueryError, Result};

/// A series' labels, `__name__` among them.
pub type LabelSet = BTreeMap<String, String>;

/// Most series one listing returns.
pub const MAX_SERIES: usize = 1_000_000;

/// The selectors `match[]` names, parsed: each must be an instant vector selector.
pub fn selectors(texts: &[String]) -> Result<Vec<promql_parser::parser::VectorSelector>> {
    texts
        .iter()
        .map(|t| {
            super::check_text(t)?;
            match promql_parser::parser::parse(t) {
                Ok(PExpr::VectorSelector(vs)) => Ok(vs),
                Ok(_) => Err(QueryError::Sql(format!(
                    "invalid parameter \"match[]\": {t:?} is not a series selector"
                ))),
                Err(e) => Err(QueryError::Sql(format!(
                    "invalid parameter \"match[]\": {t:?}: {e}"
                ))),
            }
        })
        .collect()
}

/// Each metric to list with the index matcher that selects its series.
fn targets(
    cx: &Context,
    selectors: &[promql_parser::parser::VectorSelector],
) -> Result<Vec<(Metric, Vec<String>, Matcher)>> {
    if selectors.is_empty() {
        return Ok(cx
            .tables()
            .into_iter()
            .flat_map(|(info, tags)| {
                names::metrics_of(&info)
                    .into_iter()
                    .map(move |m| (m, tags.clone(), Matcher::All))
            })
            .collect());
    }
    let mut out = Vec::new();
    for vs in selectors {
        for alt in selector::alternatives(vs) {
            for (metric, tags) in selector::metrics(cx, &alt) {
                if let Some(m) = selector::table_matcher(&alt, &tags)? {
                    out.push((metric, tags, m));
                }
            }
        }
    }
    Ok(out)
}

/// The time range of a listing in the engine's nanoseconds.
fn time(start: i64, end: i64) -> Option<(i64, i64)> {
    Some((
        start.saturating_mul(1_000_000),
        end.saturating_mul(1_000_000).saturating_add(1_000_000),
    ))
}

/// [`crate::series_tags::each_series`] over `table` of the context's database in `range` (ms).
fn each_series(
    cx: &Context,
    table: &str,
    tags: &[String],
    matcher: Matcher,
    range: (i64, i64),
    each: &mut dyn FnMut(&[Option<&str>]) -> Result<()>,
) -> Result<()> {
    let qualified = tempora_storage::catalog::qualified(cx.db, table);
    crate::series_tags::each_series(
        cx.engine,
        &qualified,
        tags,
        matcher,
        time(range.0, range.1),
        each,
    )
}

fn too_many() -> QueryError {
    QueryError::Sql(format!(
        "more than {MAX_SERIES} series match; narrow the selector or the time range"
    ))
}

/// The label sets of the series the selectors select in `[start, end]` (ms), sorted.
pub fn series(
    cx: &Context,
    selectors: &[promql_parser::parser::VectorSelector],
    range: (i64, i64),
) -> Result<Vec<LabelSet>> {
    // One read of each (table, matcher): every metric of it shares its series.
    // (table, matcher text) → (tags, matcher, metric names).
    type Group = (Vec<String>, Matcher, Vec<String>);
    let mut groups: BTreeMap<(String, String), Group> = BTreeMap::new();
    for (metric, tags, matcher) in targets(cx, selectors)? {
        let key = (metric.table.clone(), format!("{matcher:?}"));
        groups
            .entry(key)
            .or_insert_with(|| (tags, matcher, Vec::new()))
            .2
            .push(metric.name);
    }
    let mut out: BTreeSet<LabelSet> = BTreeSet::new();
    for ((table, _), (tags, matcher, metrics)) in groups {
        each_series(cx, &table, &tags, matcher, range, &mut |values| {
            let mut set = LabelSet::new();
            for (t, v) in tags.iter().zip(values) {
                if let Some(v) = v {
                    set.insert(t.clone(), v.to_string());
                }
            }
            for m in &metrics {
                let mut s = set.clone();
                s.insert(NAME.to_string(), m.clone());
                out.insert(s);
            }
            if out.len() > MAX_SERIES {
                return Err(too_many());
            }
            Ok(())
        })?;
    }
    Ok(out.into_iter().collect())
}

/// Label names, sorted: of the selected series, or of every table (with `__name__`).
pub fn label_names(
    cx: &Context,
    selectors: &[promql_parser::parser::VectorSelector],
    range: (i64, i64),
) -> Result<Vec<String>> {
    if selectors.is_empty() {
        let mut names: BTreeSet<String> =
            cx.tables().into_iter().flat_map(|(_, tags)| tags).collect();
        names.insert(NAME.to_string());
        return Ok(names.into_iter().collect());
    }
    let names: BTreeSet<String> = series(cx, selectors, range)?
        .into_iter()
        .flat_map(|s| s.into_keys())
        .collect();
    Ok(names.into_iter().collect())
}

/// The values of label `name`, sorted.
pub fn label_values(
    cx: &Context,
    name: &str,
    selectors: &[promql_parser::parser::VectorSelector],
    range: (i64, i64),
) -> Result<Vec<String>> {
    if name == NAME && selectors.is_empty() {
        let metrics: BTreeSet<String> = cx
            .tables()
            .iter()
            .flat_map(|(info, _)| names::metrics_of(info))
            .map(|m| m.name)
            .collect();
        return Ok(metrics.into_iter().collect());
    }
    if !selectors.is_empty() {
        let values: BTreeSet<String> = series(cx, selectors, range)?
            .into_iter()
            .filter_map(|mut s| s.remove(name))
            .collect();
        return Ok(values.into_iter().collect());
    }
    // Every table with the tag, each read once.
    let mut values = BTreeSet::new();
    let tag = [name.to_string()];
    for (info, tags) in cx.tables() {
        if !tags.iter().any(|t| t == name) {
            continue;
        }
        let exists = Matcher::Exists(name.to_string());
        each_series(cx, &info.name, &tag, exists, range, &mut |v| {
            if let Some(v) = v[0] {
                values.insert(v.to_string());
            }
            if values.len() > MAX_SERIES {
                return Err(too_many());
            }
            Ok(())
        })?;
    }
    Ok(values.into_iter().collect())
}
