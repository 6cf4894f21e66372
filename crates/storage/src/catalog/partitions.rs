//! Partitions sized to the data: where a row's time partition starts and ends, how wide a new
//! partition is, and how many series-hash buckets it has. Pure functions over values; the
//! table ([`super::Table`]) keeps the spans and the rate estimate and calls these.
//!
//! A table's partitions are time spans `[start, end)` that never overlap. A row goes to the
//! span holding its time; when none does, a new span is made: the table's width aligned to a
//! multiple of itself from the epoch (as InfluxDB's shard groups and TimescaleDB's chunks are),
//! then cut back where it would overlap a neighbour (TimescaleDB's chunk collision rule). So a
//! width change applies to new partitions only and old ones are never rewritten for it.
//!
//! The automatic width follows the data rate: about [`TARGET_POINTS_PER_SERIES`] points of each
//! series per partition (a 10-second series gets one day, an hourly one a year, a daily one
//! twenty years, a monthly one the longest width, a century), rounded to the nearest width of [`WIDTHS`] on a log scale, and never
//! more than a tenth of the retention so that expiry still drops data in small steps. The
//! rate is measured from written batches: `span × series / (rows − series)` is the spacing of
//! a series' points when each series has several in the batch.
//!
//! The bucket count of a new partition follows the number of series:
//! one bucket per [`SERIES_PER_BUCKET`] series, at most the configured number.

use std::collections::BTreeMap;

use crate::options::{DAY_NS, HOUR_NS};

/// One partition of a table: a time span and its bucket count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// First time in the partition (inclusive), ns.
    pub start: i64,
    /// End of the partition (exclusive), ns; `start < end`.
    pub end: i64,
    /// Series-hash buckets of the partition, at least 1.
    pub buckets: u32,
}

impl Span {
    pub fn contains(&self, t: i64) -> bool {
        self.start <= t && t < self.end
    }
}

/// Points of one series a partition is sized to hold (a 10-second series: one day).
pub const TARGET_POINTS_PER_SERIES: f64 = 8640.0;

/// Series per bucket when the bucket count follows the series count.
pub const SERIES_PER_BUCKET: u64 = 25;

/// The widths an automatic choice rounds to, narrowest first.
pub const WIDTHS: [i64; 20] = [
    HOUR_NS,
    2 * HOUR_NS,
    4 * HOUR_NS,
    6 * HOUR_NS,
    12 * HOUR_NS,
    DAY_NS,
    2 * DAY_NS,
    4 * DAY_NS,
    7 * DAY_NS,
    14 * DAY_NS,
    30 * DAY_NS,
    91 * DAY_NS,
    182 * DAY_NS,
    365 * DAY_NS,
    730 * DAY_NS,
    1826 * DAY_NS,
    3652 * DAY_NS,
    7305 * DAY_NS,
    18262 * DAY_NS,
    36525 * DAY_NS,
];

/// The span a row at `t` goes to among `spans` (keyed by start): the one holding `t`, or a new
/// one of `width` aligned from the epoch, cut back to its neighbours, with `buckets`.
pub fn place(spans: &BTreeMap<i64, Span>, t: i64, width: i64, buckets: u32) -> Span {
    assert!(
        width > 0 && buckets >= 1,
        "width {width}, buckets {buckets}"
    );
    let before = spans.range(..=t).next_back().map(|(_, s)| *s);
    if let Some(s) = before
        && s.contains(t)
    {
        return s;
    }
    let aligned = t.div_euclid(width).saturating_mul(width);
    let start = before.map_or(aligned, |b| aligned.max(b.end));
    let after = spans.range(t.saturating_add(1)..).next().map(|(k, _)| *k);
    let end = aligned.saturating_add(width);
    let end = after.map_or(end, |a| end.min(a));
    let span = Span {
        start,
        end: end.max(t.saturating_add(1)),
        buckets,
    };
    debug_assert!(span.contains(t), "{span:?} holds {t}");
    span
}

/// The width for series whose points are `interval_ns` apart, for a table whose retention is
/// `cap_ns` (`None`: forever; see [`capped`]).
pub fn auto_width(interval_ns: f64, cap_ns: Option<i64>) -> i64 {
    let want = (interval_ns.max(1.0) * TARGET_POINTS_PER_SERIES).ln();
    let nearest = WIDTHS
        .iter()
        .copied()
        .min_by(|a, b| {
            let da = ((*a as f64).ln() - want).abs();
            let db = ((*b as f64).ln() - want).abs();
            da.total_cmp(&db)
        })
        .expect("widths");
    capped(nearest, cap_ns)
}

/// `width`, at most the widest of [`WIDTHS`] within a tenth of the retention `ttl_ns` (the
/// narrowest when none is).
pub fn capped(width: i64, ttl_ns: Option<i64>) -> i64 {
    match ttl_ns {
        Some(ttl) => {
            let fits = WIDTHS.iter().copied().rfind(|w| *w <= ttl / 10);
            width.min(fits.unwrap_or(WIDTHS[0]))
        }
        None => width,
    }
}

/// The bucket count for a partition expected to hold `series` series, at most `max`.
pub fn auto_buckets(series: u64, max: u32) -> u32 {
    let want = series.div_ceil(SERIES_PER_BUCKET).max(1);
    want.min(max.max(1) as u64) as u32
}

/// The spacing of one series' points in a batch that holds `rows` rows of `series` distinct
/// series over `span_ns`; `None` when the batch says nothing about it (too few rows per series,
/// or all at one time).
pub fn batch_interval(rows: usize, series: usize, span_ns: i64) -> Option<f64> {
    if series == 0 || rows < 2 * series || span_ns <= 0 {
        return None;
    }
    Some(span_ns as f64 * series as f64 / (rows - series) as f64)
}

/// A running estimate of a table's point spacing: a moving average of its logarithm, so a
/// change of rate moves it within a few batches and one odd batch does not.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RateEstimate {
    log_interval: Option<f64>,
}

impl RateEstimate {
    /// Weight of a new observation.
    const ALPHA: f64 = 0.25;

    pub fn observe(&mut self, interval_ns: f64) {
        let x = interval_ns.max(1.0).ln();
        self.log_interval = Some(match self.log_interval {
            None => x,
            Some(old) => old + Self::ALPHA * (x - old),
        });
    }

    /// The estimated spacing in ns, once anything was observed.
    pub fn interval_ns(&self) -> Option<f64> {
        self.log_interval.map(f64::exp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(list: &[(i64, i64)]) -> BTreeMap<i64, Span> {
        list.iter()
            .map(|&(start, end)| {
                (
                    start,
                    Span {
                        start,
                        end,
                        buckets: 1,
                    },
                )
            })
            .collect()
    }

    #[test]
    fn place_cases() {
        let d = DAY_NS;
        // (name, existing spans, t, width, expected start, expected end)
        type Case<'a> = (&'a str, &'a [(i64, i64)], i64, i64, i64, i64);
        let cases: [Case; 7] = [
            ("empty: aligned", &[], d + 5, d, d, 2 * d),
            (
                "inside an existing span",
                &[(0, 10 * d)],
                3 * d,
                d,
                0,
                10 * d,
            ),
            (
                "cut at the previous end",
                &[(0, 3 * d / 2)],
                3 * d / 2,
                d,
                3 * d / 2,
                2 * d,
            ),
            (
                "cut at the next start",
                &[(d + d / 2, 5 * d)],
                d,
                d,
                d,
                d + d / 2,
            ),
            ("before time zero", &[], -1, d, -d, 0),
            (
                "wider than the gap on both sides",
                &[(0, d), (3 * d, 4 * d)],
                2 * d,
                30 * d,
                d,
                3 * d,
            ),
            (
                "narrower width after a wide span",
                &[(0, 30 * d)],
                30 * d,
                d,
                30 * d,
                31 * d,
            ),
        ];
        for (name, existing, t, width, start, end) in cases {
            let s = place(&spans(existing), t, width, 2);
            assert_eq!((s.start, s.end), (start, end), "{name}");
            assert!(s.contains(t), "{name}");
        }
    }

    #[test]
    fn place_never_overlaps_what_exists() {
        let mut map = BTreeMap::new();
        let widths = [DAY_NS, 7 * DAY_NS, HOUR_NS, 30 * DAY_NS];
        let mut t: i64 = 12345;
        for i in 0..2000 {
            t = (t
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407))
                >> 20;
            let t = t.rem_euclid(400 * DAY_NS);
            let s = place(&map, t, widths[i % widths.len()], 1);
            assert!(s.contains(t));
            if !map.contains_key(&s.start) {
                for o in map.values() {
                    let o: &Span = o;
                    assert!(s.end <= o.start || o.end <= s.start, "{s:?} overlaps {o:?}");
                }
                map.insert(s.start, s);
            } else {
                assert_eq!(map[&s.start], s);
            }
        }
    }

    #[test]
    fn width_follows_the_rate() {
        let sec = 1e9;
        // (name, interval ns, retention cap, width)
        let cases: [(&str, f64, Option<i64>, i64); 7] = [
            ("10-second series: a day", 10.0 * sec, None, DAY_NS),
            ("hourly: a year", 3600.0 * sec, None, 365 * DAY_NS),
            ("daily: twenty years", 86400.0 * sec, None, 7305 * DAY_NS),
            (
                "monthly: a century",
                30.0 * 86400.0 * sec,
                None,
                36525 * DAY_NS,
            ),
            ("millisecond: an hour", 1e6, None, HOUR_NS),
            (
                "hourly with 30 d retention: 2 d",
                3600.0 * sec,
                Some(30 * DAY_NS),
                2 * DAY_NS,
            ),
            (
                "tiny retention: an hour",
                3600.0 * sec,
                Some(HOUR_NS),
                HOUR_NS,
            ),
        ];
        for (name, interval, cap, want) in cases {
            assert_eq!(auto_width(interval, cap), want, "{name}");
        }
    }

    #[test]
    fn buckets_follow_series() {
        for (series, max, want) in [(0, 4, 1), (5, 4, 1), (26, 4, 2), (100, 4, 4), (4000, 4, 4)] {
            assert_eq!(auto_buckets(series, max), want, "{series} series");
        }
    }

    #[test]
    fn batch_interval_cases() {
        // 100 series, 10 points each, 90 s apart in total: 10 s spacing.
        assert_eq!(batch_interval(1000, 100, 90_000_000_000), Some(1e10));
        assert_eq!(batch_interval(100, 100, 1), None, "one point per series");
        assert_eq!(batch_interval(10, 1, 0), None, "all at one time");
        let mut e = RateEstimate::default();
        assert_eq!(e.interval_ns(), None);
        e.observe(1e10);
        assert!((e.interval_ns().unwrap() - 1e10).abs() < 1.0);
        for _ in 0..40 {
            e.observe(3.6e12);
        }
        assert!((e.interval_ns().unwrap() / 3.6e12 - 1.0).abs() < 0.01);
    }
}
