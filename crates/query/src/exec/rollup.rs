//! Aggregates answered from rollups: which resolutions an [`AggregateExec`] may read
//! ([`choose`], a pure function of the query and the table's declaration) and how a region is
//! read with them ([`fold_region`]).
//!
//! A bucketed aggregate can read a rollup when every rollup bucket lies inside one of its
//! groups and its aggregates decompose: `count`, `sum`, `min`, `max` and `avg` (from sum and
//! count) of numeric fields, `count(*)`, with no predicate on fields (a predicate on tags
//! selects whole series, so it stays). Buckets of the query that are multiples of a
//! resolution from the same origin always hold whole rollup buckets; other monotone
//! expressions of time (Grafana's `floor(extract(epoch ...)/60)*60`) are checked bucket by
//! bucket on the rows' first and last times, which every state carries.
//!
//! Reading a region over `[lo, hi)` with resolutions `r1 > r2 > ...` ([`fold_region`]):
//! whole `r1` buckets in the middle come from the `r1` rollup, the ends and every bucket the
//! storage or the check leaves to raw rows are read the same way at `r2`, and so on; what no
//! resolution covers is read as raw rows. Every bucket is answered by exactly one source, so
//! the result is the raw rows' aggregate (float sums to the last bits).
//!
//! [`AggregateExec`]: super::aggregate::AggregateExec

use datafusion::error::{DataFusionError, Result};
use datafusion::execution::memory_pool::MemoryReservation;
use tempora_storage::ScanPlan;
use tempora_storage::catalog::settings::{format_duration_ns, format_time_ns};
use tempora_storage::rollup::partial::{PartialRun, bucket_of};
use tempora_storage::rollup::read::{normalize, outside};
use tempora_storage::rollup::view::RollupView;

use super::aggregate::{AggregateSpec, Inputs, fold_run, tuples};
use super::fold::Fold;
use crate::nodes::aggregate::Group;
use crate::rules::time_key::TimeKey;

/// Which rollups an aggregate reads.
#[derive(Debug, Clone, PartialEq)]
pub enum RollupPlan {
    /// `levels`: resolutions read where raw rows exist, coarsest first (each a multiple of
    /// the next); `sparse`: resolutions that fit but hold too few raw rows per state to beat
    /// them, read only where raw rows expired; `checked`: each bucket's key is checked on its
    /// rows' times (expressions other than fixed bins); `notes` for EXPLAIN.
    Use {
        levels: Vec<i64>,
        sparse: Vec<i64>,
        checked: bool,
        notes: Vec<String>,
    },
    /// Raw rows, and why.
    Raw(String),
}

fn names(levels: &[i64], sep: &str) -> String {
    let n: Vec<String> = levels.iter().map(|&r| format_duration_ns(r)).collect();
    n.join(sep)
}

impl std::fmt::Display for RollupPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RollupPlan::Use {
                levels,
                checked,
                notes,
                ..
            } => {
                if levels.is_empty() {
                    write!(f, "rollup=none")?;
                } else {
                    write!(f, "rollup={}", names(levels, ">"))?;
                }
                if *checked {
                    write!(f, " (each bucket checked)")?;
                }
                for n in notes {
                    write!(f, "; {n}")?;
                }
                Ok(())
            }
            RollupPlan::Raw(why) => write!(f, "rollup=none ({why})"),
        }
    }
}

/// What [`choose`] looks at.
pub struct Query<'a> {
    /// The session's `tempora.rollups`.
    pub enabled: bool,
    /// The table's rollups: resolutions, raw rows per state, where raw rows expired.
    pub view: &'a RollupView,
    pub key: Option<&'a TimeKey>,
    /// Fields a row predicate reads.
    pub row_fields: &'a [String],
    /// Start of the query's time range (`i64::MIN`: unbounded).
    pub start: i64,
}

/// A time around which a monotone expression is tested (2023-11-14).
const PROBE_NS: i64 = 1_700_000_000_000_000_000;
/// Buckets tested per resolution.
const PROBES: i64 = 16;

/// The rollups `q` can read, or why none.
pub fn choose(q: &Query) -> RollupPlan {
    let v = q.view;
    if !q.enabled {
        return RollupPlan::Raw("tempora.rollups is off".into());
    }
    if v.resolutions.is_empty() {
        return RollupPlan::Raw("the table declares no rollups".into());
    }
    if let Some(f) = q.row_fields.first() {
        return RollupPlan::Raw(format!("a predicate on field {f} needs raw rows"));
    }
    let fits = |r: i64| match q.key {
        None => true,
        Some(TimeKey::Bin { width, origin }) => width % r == 0 && origin.rem_euclid(r) == 0,
        Some(k) => (0..PROBES).all(|i| {
            let b = bucket_of(PROBE_NS, r) + i * r;
            matches!((k.key(b), k.key(b + r - 1_000)), (Ok(x), Ok(y)) if x == y)
        }),
    };
    if q.key.is_some_and(|k| !k.monotone()) {
        return RollupPlan::Raw("the time group is not monotone in time".into());
    }
    let fitting: Vec<usize> = (0..v.resolutions.len())
        .rev()
        .filter(|&i| fits(v.resolutions[i]))
        .collect();
    if fitting.is_empty() {
        return RollupPlan::Raw(format!(
            "its buckets do not hold whole rollup buckets of {} (a multiple from the same origin does)",
            names(&v.resolutions, ", ")
        ));
    }
    let (dense, thin): (Vec<usize>, Vec<usize>) =
        fitting.into_iter().partition(|&i| v.worth_reading(i));
    let levels: Vec<i64> = dense.iter().map(|&i| v.resolutions[i]).collect();
    let sparse: Vec<i64> = thin.iter().map(|&i| v.resolutions[i]).collect();
    let mut notes: Vec<String> = thin.iter().map(|&i| thin_note(v, i)).collect();
    let expired = v.raw_expired_until.filter(|&u| q.start < u);
    if levels.is_empty() && expired.is_none() {
        return RollupPlan::Raw(notes.join("; "));
    }
    if let Some(u) = expired {
        let mut left: Vec<i64> = levels.iter().chain(&sparse).copied().collect();
        left.retain(|r| v.expired_resolutions.contains(r));
        left.sort_unstable_by(|a, b| b.cmp(a));
        notes.push(expired_note(u, &left));
    }
    let checked = matches!(q.key, Some(TimeKey::Scalar(_)));
    RollupPlan::Use {
        levels,
        sparse,
        checked,
        notes,
    }
}

/// Why resolution `i` is not read where raw rows exist.
fn thin_note(v: &RollupView, i: usize) -> String {
    let (r, min) = (format_duration_ns(v.resolutions[i]), v.min_rows_per_state);
    match v.rows_per_state(i) {
        Some(per) => format!(
            "{r} not read where raw rows exist ({per:.1} raw rows per state, fewer than {min})"
        ),
        None => format!("{r} not written (no files yet, or fewer than {min} raw rows per state)"),
    }
}

/// What a query over raw rows that expired before `until` reads: the rollups `left` there
/// (coarsest first) that fit its buckets.
fn expired_note(until: i64, left: &[i64]) -> String {
    let horizon = format_time_ns(until);
    if left.is_empty() {
        return format!(
            "raw rows before {horizon} expired and no rollup left there holds these buckets: a query over that range fails"
        );
    }
    format!(
        "raw rows before {horizon} expired: buckets there from rollups {} only, a bucket counted when it starts in the range",
        names(left, ", ")
    )
}

/// What [`fold_region`] hands its caller: a rollup read's states, or a range to read raw.
pub enum Part<'a> {
    States(&'a PartialRun),
    Raw((i64, i64)),
}

/// Widest range whose ends rollups are computed for; ranges past it are read raw (their
/// bucket arithmetic would overflow).
const LIMIT_NS: i64 = 1 << 62;

/// Reads region `i` of `plan` over `[lo, hi)` at `levels` (coarsest first), as described in
/// the module header, handing each rollup read's states and each raw range to `sink`;
/// `check` (when given) checks each bucket's key on its rows' first and last times.
pub fn fold_region(
    plan: &ScanPlan,
    i: usize,
    levels: &[i64],
    check: Option<&TimeKey>,
    (lo, hi): (i64, i64),
    sink: &mut dyn FnMut(Part) -> Result<()>,
) -> Result<()> {
    if lo >= hi {
        return Ok(());
    }
    let Some((&r, finer)) = levels.split_first() else {
        return sink(Part::Raw((lo, hi)));
    };
    let a = ceil_to(lo.max(-LIMIT_NS), r);
    let b = bucket_of(hi.min(LIMIT_NS), r);
    if a >= b {
        return fold_region(plan, i, finer, check, (lo, hi), sink);
    }
    fold_region(plan, i, finer, check, (lo, a), sink)?;
    let read = plan
        .read_rollup(i, r, (a, b))
        .map_err(|e| DataFusionError::External(Box::new(e)))?;
    let mut raw = read.raw;
    if let Some(run) = read.run {
        let bad = match check {
            Some(k) => straddling(&run, k),
            None => Vec::new(),
        };
        if !bad.is_empty() {
            raw = normalize(
                raw.into_iter()
                    .chain(bad.into_iter().map(|b| (b, b + r)))
                    .collect(),
            );
        }
        let run = outside(run, &raw).map_err(|e| DataFusionError::External(Box::new(e)))?;
        if let Some(run) = run {
            sink(Part::States(&run))?;
        }
    }
    for range in raw {
        fold_region(plan, i, finer, check, range, sink)?;
    }
    fold_region(plan, i, finer, check, (b, hi), sink)
}

/// Buckets of `run` whose rows' first and last times fall in different groups of `key`.
fn straddling(run: &PartialRun, key: &TimeKey) -> Vec<i64> {
    let (first, last, buckets) = (run.first_times(), run.last_times(), run.buckets());
    let mut out: Vec<i64> = (0..run.num_rows())
        .filter(|&i| match (key.key(first[i]), key.key(last[i])) {
            (Ok(x), Ok(y)) => x != y,
            _ => true,
        })
        .map(|i| buckets[i])
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

fn ceil_to(t: i64, r: i64) -> i64 {
    let b = bucket_of(t, r);
    if b == t { b } else { b + r }
}

/// Folds region `region` of `plan` through the rollups `s` reads; `false` when it reads none
/// (or has no time range), and the caller reads the region raw.
pub(super) fn fold_with_rollups(
    s: &AggregateSpec,
    inputs: &Inputs,
    plan: &ScanPlan,
    region: usize,
    fold: &mut Fold,
    reservation: &mut MemoryReservation,
) -> Result<bool> {
    let (
        RollupPlan::Use {
            levels,
            sparse,
            checked,
            ..
        },
        Some(range),
    ) = (&s.rollup, s.filter.time_range()?)
    else {
        return Ok(false);
    };
    let expired = plan.raw_expired(region);
    if levels.is_empty() && !expired {
        return Ok(false);
    }
    let (levels, range) = if expired {
        expired_levels(plan, region, levels, sparse, range)?
    } else {
        (levels.clone(), range)
    };
    let key = s.groups.iter().find_map(|g| match g {
        Group::Time { key, .. } => Some(key),
        Group::Tag(_) => None,
    });
    let check = key.filter(|_| *checked);
    let mut sink = |part: Part| match part {
        Part::States(p) => {
            reservation.try_resize(p.batch.get_array_memory_size() + fold.bytes())?;
            let tuple_of_rank = tuples(s, inputs, fold, &p.keys)?;
            fold.add_partials(p, &tuple_of_rank, &inputs.agg_types)
                .map_err(|o| DataFusionError::Execution(o.0.to_string()))?;
            reservation.try_resize(fold.bytes())?;
            Ok(())
        }
        Part::Raw(range) => {
            let run = plan
                .read_run_in(region, range)
                .map_err(|e| DataFusionError::External(Box::new(e)))?;
            match run {
                Some(run) => fold_run(s, inputs, fold, &run, reservation),
                None => Ok(()),
            }
        }
    };
    fold_region(plan, region, &levels, check, range, &mut sink)?;
    Ok(true)
}

/// The levels and range a region whose raw rows expired is read with: every fitting
/// resolution it still has (coarsest first), and the range's ends rounded up to whole
/// buckets of the finest (a bucket counts when it starts in the range), since no raw rows
/// are left to answer a partial one.
fn expired_levels(
    plan: &ScanPlan,
    region: usize,
    levels: &[i64],
    sparse: &[i64],
    (lo, hi): (i64, i64),
) -> Result<(Vec<i64>, (i64, i64))> {
    let left = plan.rollups_left(region);
    let mut lv: Vec<i64> = levels
        .iter()
        .chain(sparse)
        .copied()
        .filter(|r| left.contains(r))
        .collect();
    lv.sort_unstable_by(|a, b| b.cmp(a));
    let Some(&finest) = lv.last() else {
        let what = "an aggregate whose buckets no remaining rollup holds";
        return Err(DataFusionError::External(Box::new(
            plan.raw_expired_error(region, what),
        )));
    };
    let snap = |t: i64| ceil_to(t.clamp(-LIMIT_NS, LIMIT_NS), finest);
    Ok((lv, (snap(lo), snap(hi))))
}

#[cfg(test)]
#[path = "rollup_tests.rs"]
mod tests;
