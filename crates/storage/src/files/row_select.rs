//! Which rows of a decoded row group a read keeps, as pure functions over its key ids and
//! times: series by series ([`segments`], for row groups sorted as data files are) or row by
//! row ([`per_row`], the fallback).
//!
//! Invariants: rows are sorted by key then time; a key's rank in `keys` only ever continues
//! the last key or starts the next one, across the batches of one read; a segment or a kept
//! row always satisfies the filter's keys and time range, and none that does is dropped.

use bytes::Bytes;

use crate::files::guided::{count_below_within, run_end};
use crate::files::sst::SstFilter;

/// Ranks (into `keys`) and key-filter flags of rows whose keys are `value(ids[i])`. Rows are
/// sorted by key, so a key either continues the last one or starts a new rank; key bytes are
/// compared only where the id changes (a dictionary id names one key within a batch).
pub(crate) fn walk_keys<'a>(
    ids: &[u32],
    value: impl Fn(u32) -> &'a [u8],
    filter: &SstFilter,
    keys: &mut Vec<Bytes>,
) -> (Vec<u32>, Vec<bool>) {
    let mut ranks = Vec::with_capacity(ids.len());
    let mut keep = Vec::with_capacity(ids.len());
    let mut last_id = None;
    let mut last_keep = true;
    for &id in ids {
        if last_id != Some(id) {
            last_id = Some(id);
            let k = value(id);
            if keys.last().map(|l| l.as_ref()) != Some(k) {
                keys.push(Bytes::copy_from_slice(k));
            }
            // Decided for every run of one id, also one that continues the previous batch's
            // key (a batch boundary inside a series must not reset the decision).
            last_keep = filter
                .keys
                .as_ref()
                .is_none_or(|want| want.binary_search_by(|w| w.as_ref().cmp(k)).is_ok());
        }
        ranks.push(keys.len() as u32 - 1);
        keep.push(last_keep);
    }
    (ranks, keep)
}

/// The ranks of the kept rows and the mask that keeps them, deciding row by row.
pub(crate) fn per_row<'a>(
    ids: &[u32],
    value: impl Fn(u32) -> &'a [u8],
    times: &[i64],
    filter: &SstFilter,
    keys: &mut Vec<Bytes>,
) -> (Vec<u32>, arrow::array::BooleanArray) {
    let (ranks, mut keep) = walk_keys(ids, value, filter, keys);
    if let Some((start, end)) = filter.time {
        for (k, &t) in keep.iter_mut().zip(times) {
            *k = *k && t >= start && t < end;
        }
    }
    let kept: Vec<u32> = ranks
        .iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|(r, _)| *r)
        .collect();
    (kept, arrow::array::BooleanArray::from(keep))
}

/// Rows `lo..hi` of a batch, all of series rank `rank`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Segment {
    pub(crate) rank: u32,
    pub(crate) lo: usize,
    pub(crate) hi: usize,
}

/// The rows of a batch sorted by key then time that the filter keeps, as one segment per
/// kept series. A key's rows are contiguous (one dictionary id per key in a row group):
/// `runs` describes each id's run ([`key_runs`]; a cached read keeps it with the row group);
/// within a run the time range is found by interpolation (`guided::count_below_within`) from
/// the run's first and last time kept in `runs`, so a run is read only near the answer.
/// Cost: a few reads per series when series are regular, a logarithm when not; never the
/// number of rows. `None` when an id turns up in two places (the rows are not sorted as a data
/// file's are).
pub(crate) fn segments<'a>(
    runs: &[i64],
    times: &[i64],
    value: impl Fn(u32) -> &'a [u8],
    filter: &SstFilter,
    keys: &mut Vec<Bytes>,
) -> Option<Vec<Segment>> {
    let runs = KeyRunsView::new(runs);
    debug_assert_eq!(runs.rows(), times.len());
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for r in runs.iter() {
        if !seen.insert(r.id) {
            return None;
        }
        let k = value(r.id);
        if keys.last().map(|l| l.as_ref()) != Some(k) {
            keys.push(Bytes::copy_from_slice(k));
        }
        let wanted = filter
            .keys
            .as_ref()
            .is_none_or(|want| want.binary_search_by(|w| w.as_ref().cmp(k)).is_ok());
        if wanted {
            let (a, b) = (r.start, r.end);
            let run = &times[a..b];
            let below = |x| a + count_below_within(run, r.first, r.last, x);
            let (lo, hi) = match filter.time {
                Some((start, end)) => (below(start), below(end)),
                None => (a, b),
            };
            if lo < hi {
                out.push(Segment {
                    rank: keys.len() as u32 - 1,
                    lo,
                    hi,
                });
            }
        }
    }
    Some(out)
}

/// Where each run of equal ids begins, then `ids.len()`: the runs' boundaries, each found
/// from the one before with the previous run's length as the guess. `None` past `u32` rows.
pub fn run_starts(ids: &[u32]) -> Option<Vec<u32>> {
    u32::try_from(ids.len()).ok()?;
    let mut out = Vec::new();
    let (mut a, mut hint) = (0, 0);
    while a < ids.len() {
        out.push(a as u32);
        let b = run_end(ids, a, hint);
        hint = b - a;
        a = b;
    }
    out.push(ids.len() as u32);
    Some(out)
}

/// A row group's key runs packed in one `i64` buffer: for each run `[start, id, first time,
/// last time]`, then the row count. One small buffer per row group, so that finding a
/// series' rows reads it and the time column near the answer, not the run's ends nor the
/// id column (each a separate memory page when cold). `None` past `u32` rows or when `ids`
/// and `times` differ in length.
pub fn key_runs(ids: &[u32], times: &[i64]) -> Option<Vec<i64>> {
    if ids.len() != times.len() {
        return None;
    }
    let starts = run_starts(ids)?;
    let mut out = Vec::with_capacity(starts.len() * 4);
    for w in starts.windows(2) {
        let (a, b) = (w[0] as usize, w[1] as usize);
        out.extend([a as i64, i64::from(ids[a]), times[a], times[b - 1]]);
    }
    out.push(ids.len() as i64);
    Some(out)
}

/// One run of [`key_runs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeyRun {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pub(crate) id: u32,
    pub(crate) first: i64,
    pub(crate) last: i64,
}

/// A view of [`key_runs`]' buffer (its layout is asserted: 4 values per run, then the count).
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyRunsView<'a>(&'a [i64]);

impl<'a> KeyRunsView<'a> {
    pub(crate) fn new(raw: &'a [i64]) -> Self {
        assert_eq!(
            raw.len() % 4,
            1,
            "key runs: 4 values per run, then the row count"
        );
        Self(raw)
    }

    /// The row count.
    pub(crate) fn rows(&self) -> usize {
        self.0[self.0.len() - 1] as usize
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = KeyRun> + 'a {
        let raw = self.0;
        (0..raw.len() / 4).map(move |i| {
            let r = &raw[4 * i..4 * i + 5];
            KeyRun {
                start: r[0] as usize,
                end: r[4] as usize,
                id: r[1] as u32,
                first: r[2],
                last: r[3],
            }
        })
    }
}

/// The ranks of the kept rows and the mask that keeps them.
pub(crate) fn segments_to_selection(
    segs: &[Segment],
    rows: usize,
) -> (Vec<u32>, arrow::array::BooleanArray) {
    let kept: usize = segs.iter().map(|s| s.hi - s.lo).sum();
    let mut ranks = Vec::with_capacity(kept);
    let mut mask = arrow::array::BooleanBufferBuilder::new(rows);
    let mut at = 0;
    for s in segs {
        mask.append_n(s.lo - at, false);
        mask.append_n(s.hi - s.lo, true);
        ranks.resize(ranks.len() + (s.hi - s.lo), s.rank);
        at = s.hi;
    }
    mask.append_n(rows - at, false);
    (ranks, arrow::array::BooleanArray::new(mask.finish(), None))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn segment_cases() {
        // ids 0,0,0,1,1,2 name keys a, b, c; times 10,20,30 | 10,20 | 5.
        let ids = [0u32, 0, 0, 1, 1, 2];
        let times = [10i64, 20, 30, 10, 20, 5];
        let names: [&[u8]; 3] = [b"a", b"b", b"c"];
        let want = |ks: &[&str]| {
            Some(Arc::new(
                ks.iter()
                    .map(|k| Bytes::from(k.to_string()))
                    .collect::<Vec<_>>(),
            ))
        };
        let seg = |rank, lo, hi| Segment { rank, lo, hi };
        let cases: Vec<(&str, SstFilter, Vec<Segment>)> = vec![
            (
                "no filter: one segment per key",
                SstFilter::default(),
                vec![seg(0, 0, 3), seg(1, 3, 5), seg(2, 5, 6)],
            ),
            (
                "keys b only",
                SstFilter {
                    time: None,
                    keys: want(&["b"]),
                    bounds: Vec::new(),
                },
                vec![seg(1, 3, 5)],
            ),
            (
                "time [15, 30)",
                SstFilter {
                    time: Some((15, 30)),
                    keys: None,
                    bounds: Vec::new(),
                },
                vec![seg(0, 1, 2), seg(1, 4, 5)],
            ),
            (
                "time and keys",
                SstFilter {
                    time: Some((0, 11)),
                    keys: want(&["a", "c"]),
                    bounds: Vec::new(),
                },
                vec![seg(0, 0, 1), seg(2, 5, 6)],
            ),
            (
                "nothing in range",
                SstFilter {
                    time: Some((40, 50)),
                    keys: None,
                    bounds: Vec::new(),
                },
                vec![],
            ),
        ];
        for (name, filter, expect) in cases {
            let mut keys = Vec::new();
            let got = segments(
                &key_runs(&ids, &times).unwrap(),
                &times,
                |i| names[i as usize],
                &filter,
                &mut keys,
            );
            assert_eq!(got, Some(expect), "{name}");
            assert_eq!(keys.len(), 3, "{name}: every key ranked");
        }
        // A key continuing from the previous batch keeps its rank.
        let mut keys = vec![Bytes::from_static(b"a")];
        let got = segments(
            &key_runs(&ids, &times).unwrap(),
            &times,
            |i| names[i as usize],
            &SstFilter::default(),
            &mut keys,
        );
        assert_eq!(got.unwrap()[0], seg(0, 0, 3));
        // An id in two places is not a data file's order.
        let mut keys = Vec::new();
        let bad = segments(
            &key_runs(&[0, 1, 0], &[1, 1, 2]).unwrap(),
            &[1, 1, 2],
            |i| names[i as usize],
            &SstFilter::default(),
            &mut keys,
        );
        assert_eq!(bad, None);
        // The selection of segments: ranks of kept rows and a mask over all rows.
        let (ranks, mask) = segments_to_selection(&[seg(0, 1, 2), seg(1, 4, 6)], 7);
        assert_eq!(ranks, vec![0, 1, 1]);
        let bits: Vec<bool> = mask.iter().map(|b| b.unwrap()).collect();
        assert_eq!(bits, vec![false, true, false, false, true, true, false]);
    }

    #[test]
    fn run_starts_are_the_id_changes() {
        for (name, ids, want) in [
            ("empty", vec![], vec![0]),
            ("one run", vec![4u32; 5], vec![0, 5]),
            ("three runs", vec![0, 0, 1, 1, 1, 1, 2], vec![0, 2, 6, 7]),
            ("an id again later", vec![0, 1, 0], vec![0, 1, 2, 3]),
        ] {
            assert_eq!(run_starts(&ids), Some(want), "{name}");
        }
    }

    #[test]
    fn key_runs_pack_each_run_and_the_row_count() {
        type Case = (&'static str, Vec<u32>, Vec<i64>, Option<Vec<i64>>);
        let cases: Vec<Case> = vec![
            ("empty", vec![], vec![], Some(vec![0])),
            ("one row", vec![7], vec![5], Some(vec![0, 7, 5, 5, 1])),
            (
                "two runs",
                vec![3, 3, 3, 1, 1],
                vec![10, 20, 30, 5, 6],
                Some(vec![0, 3, 10, 30, 3, 1, 5, 6, 5]),
            ),
            ("lengths differ", vec![1, 1], vec![1], None),
        ];
        for (name, ids, times, want) in cases {
            let got = key_runs(&ids, &times);
            assert_eq!(got, want, "{name}");
            if let Some(raw) = got {
                let runs: Vec<KeyRun> = KeyRunsView::new(&raw).iter().collect();
                let starts: Vec<usize> = runs.iter().map(|r| r.start).collect();
                let want_starts: Vec<usize> = run_starts(&ids)
                    .unwrap()
                    .iter()
                    .map(|&s| s as usize)
                    .collect();
                assert_eq!(starts, want_starts[..want_starts.len() - 1], "{name}");
                for r in runs {
                    assert_eq!(
                        (r.first, r.last),
                        (times[r.start], times[r.end - 1]),
                        "{name}"
                    );
                    assert!(ids[r.start..r.end].iter().all(|&i| i == r.id), "{name}");
                }
            }
        }
    }

    #[test]
    fn key_walk_cases() {
        type Case = (
            &'static str,
            Vec<&'static str>,
            Vec<u32>,
            Vec<&'static str>,
            Option<Vec<&'static str>>,
            Vec<u32>,
            Vec<bool>,
        );
        // (name, keys before, row ids, id → key, wanted keys, ranks, keep)
        let cases: Vec<Case> = vec![
            (
                "no filter",
                vec![],
                vec![0, 0, 1],
                vec!["a", "b"],
                None,
                vec![0, 0, 1],
                vec![true; 3],
            ),
            (
                "filtered",
                vec![],
                vec![0, 0, 1, 1],
                vec!["a", "b"],
                Some(vec!["b"]),
                vec![0, 0, 1, 1],
                vec![false, false, true, true],
            ),
            (
                "a filtered-out key continues from the last batch",
                vec!["a"],
                vec![0, 0, 1],
                vec!["a", "b"],
                Some(vec!["b"]),
                vec![0, 0, 1],
                vec![false, false, true],
            ),
            (
                "plain values, one id per row",
                vec![],
                vec![0, 1, 2],
                vec!["a", "a", "b"],
                Some(vec!["a"]),
                vec![0, 0, 1],
                vec![true, true, false],
            ),
        ];
        for (name, before, ids, values, want, ranks, keep) in cases {
            let mut keys: Vec<Bytes> = before.iter().map(|k| Bytes::from(*k)).collect();
            let filter = SstFilter {
                time: None,
                keys: want.map(|w| Arc::new(w.iter().map(|k| Bytes::from(*k)).collect())),
                bounds: Vec::new(),
            };
            let got = walk_keys(&ids, |i| values[i as usize].as_bytes(), &filter, &mut keys);
            assert_eq!(got, (ranks, keep), "{name}");
        }
    }
}
