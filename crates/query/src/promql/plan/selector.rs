//! Selectors: which tables a selector's `__name__` matchers name, the index matcher its other
//! matchers become, and one [`PromScan`] per table.
//!
//! PromQL reads an absent label as the empty string, so a matcher is turned into an index
//! matcher that keeps exactly the series whose value (or `""` when absent) it accepts:
//! `l="v"` → `Eq`; `l=""` → lacks `l` (or has it empty); `l!="v"` → `Not(Eq)`; `l=~re` →
//! `Regex(^(?:re)$)`, or lacking `l` too when `re` matches `""`; `l!~re` likewise negated.
//! A matcher on a label the table does not have is decided when the query is planned.

use std::time::UNIX_EPOCH;

use promql_parser::label::{MatchOp, Matcher as PMatcher};
use promql_parser::parser::{AtModifier, MatrixSelector, Offset, VectorSelector};
use tempora_index::Matcher;

use super::{Context, Need, Vector, bad, union};
use crate::error::{QueryError, Result};
use crate::promql::functions::RangeFn;
use crate::promql::names::{self, Metric};
use crate::promql::scan::{Mode, NAME, PromScan, Timing, rows_schema};

/// An instant selector; `timestamp`: the value is each sample's time (`timestamp(v)`).
pub fn instant(cx: &Context, vs: &VectorSelector, need: &Need, timestamp: bool) -> Result<Vector> {
    let mode = Mode::Instant {
        lookback: cx.lookback,
        timestamp,
    };
    scans(cx, vs, need, mode, !timestamp)
}

/// A range selector's own samples (an instant query's matrix, remote read).
pub fn raw(cx: &Context, ms: &MatrixSelector, need: &Need, keep_stale: bool) -> Result<Vector> {
    let mode = Mode::Raw {
        range: millis(ms.range),
        keep_stale,
    };
    scans(cx, &ms.vs, need, mode, true)
}

/// `func(selector[range], args…)`.
pub fn range(
    cx: &Context,
    ms: &MatrixSelector,
    need: &Need,
    func: RangeFn,
    args: Vec<f64>,
) -> Result<Vector> {
    let mode = Mode::Range {
        func,
        range: millis(ms.range),
        args,
    };
    scans(cx, &ms.vs, need, mode, func.keeps_name())
}

pub(crate) fn millis(d: std::time::Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

fn timing(cx: &Context, vs: &VectorSelector) -> Timing {
    let offset = match &vs.offset {
        None => 0,
        Some(Offset::Pos(d)) => millis(*d),
        Some(Offset::Neg(d)) => -millis(*d),
    };
    let at = vs.at.as_ref().map(|a| match a {
        AtModifier::Start => cx.steps.start,
        AtModifier::End => cx.steps.end,
        AtModifier::At(t) => match t.duration_since(UNIX_EPOCH) {
            Ok(d) => millis(d),
            Err(e) => -millis(e.duration()),
        },
    });
    Timing {
        steps: cx.steps,
        offset,
        at,
    }
}

/// The selector's alternatives (`{a="1" or b="2"}`), each a full list of matchers with the
/// selector's name as an `__name__` matcher.
pub(crate) fn alternatives(vs: &VectorSelector) -> Vec<Vec<PMatcher>> {
    let mut base = vs.matchers.matchers.clone();
    if let Some(name) = &vs.name {
        base.push(PMatcher::new(MatchOp::Equal, NAME, name));
    }
    if vs.matchers.or_matchers.is_empty() {
        return vec![base];
    }
    vs.matchers
        .or_matchers
        .iter()
        .map(|alt| base.iter().chain(alt).cloned().collect())
        .collect()
}

/// The metrics (tables and fields) the `__name__` matchers of one alternative accept.
pub(crate) fn metrics(cx: &Context, matchers: &[PMatcher]) -> Vec<(Metric, Vec<String>)> {
    let names: Vec<&PMatcher> = matchers.iter().filter(|m| m.name == NAME).collect();
    let table = |t: &str| cx.table(t).map(|(info, _)| info);
    if let Some(eq) = names.iter().find(|m| m.op == MatchOp::Equal) {
        let Some(m) = names::resolve(&eq.value, &table) else {
            return Vec::new();
        };
        let ok = names.iter().all(|n| n.is_match(&m.name));
        let tags = cx.table(&m.table).map(|(_, tags)| tags).unwrap_or_default();
        return if ok { vec![(m, tags)] } else { Vec::new() };
    }
    cx.tables()
        .into_iter()
        .flat_map(|(info, tags)| {
            names::metrics_of(&info)
                .into_iter()
                .map(move |m| (m, tags.clone()))
        })
        .filter(|(m, _)| names.iter().all(|n| n.is_match(&m.name)))
        .collect()
}

/// A matcher decided for one table.
enum Decided {
    All,
    Nothing,
    Index(Matcher),
}

fn decide(m: &PMatcher, tags: &[String]) -> Result<Decided> {
    let empty_ok = m.is_match("");
    if !tags.contains(&m.name) {
        // The label is absent from every series of the table: its value is "".
        return Ok(if empty_ok {
            Decided::All
        } else {
            Decided::Nothing
        });
    }
    let name = m.name.clone();
    let absent = || Matcher::NotExists(name.clone());
    let regex = |re: &regex::Regex| {
        Matcher::regex(name.clone(), re.as_str()).map_err(|e| QueryError::Sql(e.to_string()))
    };
    let positive = match &m.op {
        MatchOp::Equal => Matcher::Eq(name.clone(), m.value.clone()),
        MatchOp::NotEqual => Matcher::Not(Box::new(Matcher::Eq(name.clone(), m.value.clone()))),
        MatchOp::Re(re) => regex(re)?,
        MatchOp::NotRe(re) => Matcher::Not(Box::new(regex(re)?)),
    };
    // `positive` decides the series that have the label; add or remove the ones that lack it
    // (their value is "") by whether "" is accepted. Series with the label empty follow
    // `positive`, which sees "" too.
    Ok(Decided::Index(match (&m.op, empty_ok) {
        (MatchOp::NotEqual | MatchOp::NotRe(_), true) => positive,
        (MatchOp::NotEqual | MatchOp::NotRe(_), false) => {
            Matcher::And(vec![Matcher::Exists(name.clone()), positive])
        }
        (_, true) => Matcher::Or(vec![absent(), positive]),
        (_, false) => positive,
    }))
}

/// The index matcher of one alternative's label matchers for a table (`None`: no series).
pub(crate) fn table_matcher(matchers: &[PMatcher], tags: &[String]) -> Result<Option<Matcher>> {
    let mut all = Vec::new();
    for m in matchers.iter().filter(|m| m.name != NAME) {
        match decide(m, tags)? {
            Decided::All => {}
            Decided::Nothing => return Ok(None),
            Decided::Index(i) => all.push(i),
        }
    }
    Ok(Some(match all.len() {
        0 => Matcher::All,
        1 => all.pop().expect("one"),
        _ => Matcher::And(all),
    }))
}

/// One scan per metric the selector names, in a union; `keep_name`: the rows carry
/// `__name__` (when needed).
fn scans(
    cx: &Context,
    vs: &VectorSelector,
    need: &Need,
    mode: Mode,
    keep_name: bool,
) -> Result<Vector> {
    let timing = timing(cx, vs);
    // Metric → its tags and the matchers of every alternative that selects it.
    let mut selected: std::collections::BTreeMap<Metric, (Vec<String>, Vec<Matcher>)> =
        Default::default();
    for alt in alternatives(vs) {
        for (metric, tags) in metrics(cx, &alt) {
            if let Some(m) = table_matcher(&alt, &tags)? {
                let entry = selected.entry(metric).or_insert_with(|| (tags, Vec::new()));
                entry.1.push(m);
            }
        }
    }
    let mut parts = Vec::new();
    for (metric, (tags, mut matchers)) in selected {
        let matcher = if matchers.len() == 1 {
            matchers.pop().expect("one")
        } else {
            Matcher::Or(matchers)
        };
        let mut labels: Vec<String> = tags
            .iter()
            .filter(|t| need.as_ref().is_none_or(|n| n.contains(*t)))
            .cloned()
            .collect();
        if keep_name && need.as_ref().is_none_or(|n| n.contains(NAME)) {
            labels.push(NAME.to_string());
        }
        labels.sort();
        let scan = PromScan {
            engine: cx.engine.clone(),
            table: tempora_storage::catalog::qualified(cx.db, &metric.table),
            metric: metric.name,
            field: metric.field,
            matcher,
            schema: rows_schema(&labels),
            labels: labels.clone(),
            mode: mode.clone(),
            timing,
        };
        parts.push(Vector {
            plan: scan.into_plan(),
            labels,
        });
    }
    match union(parts)? {
        Some(v) => Ok(v),
        None => super::empty(),
    }
}

/// The labels `absent(selector)` gives its point: those of the selector's equality matchers
/// (a label matched more than once, or otherwise, is left out).
pub fn absent_labels(vs: &VectorSelector) -> Vec<(String, String)> {
    let mut seen: std::collections::BTreeMap<String, Option<String>> = Default::default();
    for m in &vs.matchers.matchers {
        if m.name == NAME {
            continue;
        }
        let v = (m.op == MatchOp::Equal && !seen.contains_key(&m.name)).then(|| m.value.clone());
        seen.insert(m.name.clone(), v);
    }
    seen.into_iter()
        .filter_map(|(k, v)| v.filter(|v| !v.is_empty()).map(|v| (k, v)))
        .collect()
}

/// Refuses selectors PromQL refuses (a range too small to hold a sample).
pub fn check_range(ms: &MatrixSelector) -> Result<()> {
    if millis(ms.range) <= 0 {
        return Err(bad("range vector selector must have a positive range"));
    }
    Ok(())
}
