//! One series evaluated over the step grid: what a [`super::PromScan`] computes per series,
//! as a pure function of its samples.
//!
//! - **Instant** (an instant vector selector): at each step `t`, the newest sample with time
//!   in `[t − offset − lookback, t − offset]`; none when that sample is a staleness marker.
//! - **Range** (a function of a range vector): at each step, the function of the samples in
//!   `[t − offset − range, t − offset]`, staleness markers left out (Prometheus 2.x: both
//!   ends included).
//! - **Raw** (a range vector itself, for an instant query or remote read): the samples in
//!   the window at their own times.
//!
//! With `@ T` every step reads the window at `T` instead of at `t`. Steps advance, so every
//! mode walks the samples with pointers that only move forward: O(samples + steps), plus
//! the function's work per window.

use crate::promql::functions::{self, RangeFn, Window};
use crate::promql::time::Steps;

/// The bits of Prometheus's staleness marker (a NaN no arithmetic produces).
pub const STALE_NAN_BITS: u64 = 0x7ff0_0000_0000_0002;

pub fn is_stale(v: f64) -> bool {
    v.to_bits() == STALE_NAN_BITS
}

/// How a scan turns a series into points.
#[derive(Debug, Clone, PartialEq, PartialOrd)]
pub enum Mode {
    /// An instant vector selector; with `timestamp`, the value is the sample's time in
    /// seconds (`timestamp(selector)`).
    Instant { lookback: i64, timestamp: bool },
    /// `func(selector[range])` with the function's numeric arguments.
    Range {
        func: RangeFn,
        range: i64,
        args: Vec<f64>,
    },
    /// The samples of `selector[range]` themselves; `keep_stale` keeps staleness markers
    /// (remote read answers them).
    Raw { range: i64, keep_stale: bool },
}

impl Mode {
    /// How far before a step's time (before the offset) the mode reads.
    pub fn reach(&self) -> i64 {
        match self {
            Mode::Instant { lookback, .. } => *lookback,
            Mode::Range { range, .. } | Mode::Raw { range, .. } => *range,
        }
    }
}

/// Where and when a scan evaluates.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Timing {
    pub steps: Steps,
    /// `offset d` (ms, may be negative).
    pub offset: i64,
    /// `@ T` (ms).
    pub at: Option<i64>,
}

impl Timing {
    /// The time a step reads at: `(T or t) − offset`.
    fn read_at(&self, t: i64) -> i64 {
        self.at.unwrap_or(t) - self.offset
    }

    /// The closed range of sample times (ms) the steps of `self` can read with `mode`.
    pub fn span(&self, mode: &Mode) -> (i64, i64) {
        let (first, last) = match self.at {
            Some(a) => (a, a),
            None => (self.steps.start, self.steps.end),
        };
        (
            first
                .saturating_sub(self.offset)
                .saturating_sub(mode.reach()),
            last.saturating_sub(self.offset),
        )
    }
}

/// Evaluates one series (`times` ascending, ms) at every step, calling `out(time, value)`
/// for each point in time order.
pub fn series(
    mode: &Mode,
    timing: &Timing,
    times: &[i64],
    values: &[f64],
    out: &mut dyn FnMut(i64, f64),
) {
    debug_assert_eq!(times.len(), values.len());
    debug_assert!(times.windows(2).all(|w| w[0] <= w[1]), "times ascend");
    match mode {
        Mode::Instant {
            lookback,
            timestamp,
        } => instant(timing, *lookback, *timestamp, times, values, out),
        Mode::Range { func, range, args } => {
            // Range functions never see staleness markers.
            if values.iter().any(|v| is_stale(*v)) {
                let (t, v): (Vec<i64>, Vec<f64>) = times
                    .iter()
                    .zip(values)
                    .filter(|(_, v)| !is_stale(**v))
                    .unzip();
                ranged(timing, *func, *range, args, &t, &v, out)
            } else {
                ranged(timing, *func, *range, args, times, values, out)
            }
        }
        Mode::Raw { range, keep_stale } => {
            let end = timing.read_at(timing.steps.start);
            let lo = times.partition_point(|&t| t < end - range);
            let hi = times.partition_point(|&t| t <= end);
            for i in lo..hi {
                if *keep_stale || !is_stale(values[i]) {
                    out(times[i], values[i]);
                }
            }
        }
    }
}

fn instant(
    timing: &Timing,
    lookback: i64,
    timestamp: bool,
    times: &[i64],
    values: &[f64],
    out: &mut dyn FnMut(i64, f64),
) {
    // `next`: the first sample after the current read time.
    let mut next = 0;
    for i in 0..timing.steps.len() {
        let t = timing.steps.at(i);
        let at = timing.read_at(t);
        while next < times.len() && times[next] <= at {
            next += 1;
        }
        if next == 0 {
            continue;
        }
        let (st, sv) = (times[next - 1], values[next - 1]);
        if st < at - lookback || is_stale(sv) {
            continue;
        }
        out(t, if timestamp { st as f64 / 1000.0 } else { sv });
    }
}

fn ranged(
    timing: &Timing,
    func: RangeFn,
    range: i64,
    args: &[f64],
    times: &[i64],
    values: &[f64],
    out: &mut dyn FnMut(i64, f64),
) {
    let (mut lo, mut hi) = (0, 0);
    for i in 0..timing.steps.len() {
        let t = timing.steps.at(i);
        let end = timing.read_at(t);
        let start = end - range;
        while lo < times.len() && times[lo] < start {
            lo += 1;
        }
        hi = hi.max(lo);
        while hi < times.len() && times[hi] <= end {
            hi += 1;
        }
        if lo == hi {
            continue;
        }
        let w = Window {
            times: &times[lo..hi],
            values: &values[lo..hi],
            start,
            end,
            at: t,
            range,
        };
        if let Some(v) = functions::eval(func, &w, args) {
            out(t, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(mode: Mode, timing: Timing, times: &[i64], values: &[f64]) -> Vec<(i64, f64)> {
        let mut got = Vec::new();
        series(&mode, &timing, times, values, &mut |t, v| got.push((t, v)));
        got
    }

    fn grid(start: i64, end: i64, step: i64) -> Timing {
        Timing {
            steps: Steps::range(start, end, step).unwrap(),
            offset: 0,
            at: None,
        }
    }

    const STALE: f64 = f64::from_bits(STALE_NAN_BITS);

    #[test]
    fn instant_selection() {
        let times = [10, 20, 30, 100];
        let values = [1.0, 2.0, STALE, 4.0];
        let instant = Mode::Instant {
            lookback: 15,
            timestamp: false,
        };
        struct Case {
            name: &'static str,
            timing: Timing,
            want: Vec<(i64, f64)>,
        }
        let cases = [
            Case {
                // 0: nothing yet; 10, 20: the sample at the step; 30, 40: the newest is
                // stale; 50..90: the newest is more than 15 back; 100: 4.
                name: "every 10 from 0 to 100",
                timing: grid(0, 100, 10),
                want: vec![(10, 1.0), (20, 2.0), (100, 4.0)],
            },
            Case {
                name: "a stale newest sample hides older ones",
                timing: grid(35, 35, 1),
                want: vec![],
            },
            Case {
                name: "offset reads earlier and stamps the step",
                timing: Timing {
                    steps: Steps::range(110, 130, 10).unwrap(),
                    offset: 100,
                    at: None,
                },
                want: vec![(110, 1.0), (120, 2.0)],
            },
            Case {
                name: "@ pins every step to one time",
                timing: Timing {
                    steps: Steps::range(0, 20, 10).unwrap(),
                    offset: 0,
                    at: Some(20),
                },
                want: vec![(0, 2.0), (10, 2.0), (20, 2.0)],
            },
        ];
        for c in cases {
            assert_eq!(
                run(instant.clone(), c.timing, &times, &values),
                c.want,
                "{}",
                c.name
            );
        }
        // The window is closed: a sample exactly `lookback` before the step is found.
        assert_eq!(
            run(instant.clone(), grid(35, 35, 1), &[20], &[2.0]),
            vec![(35, 2.0)]
        );
        let ts = Mode::Instant {
            lookback: 15,
            timestamp: true,
        };
        assert_eq!(run(ts, grid(25, 25, 1), &times, &values), vec![(25, 0.02)]);
    }

    #[test]
    fn range_windows_are_closed_and_skip_stale_markers() {
        let times = [0, 10, 20, 30, 40];
        let values = [1.0, 2.0, STALE, 4.0, 5.0];
        let count = |range| Mode::Range {
            func: RangeFn::CountOverTime,
            range,
            args: vec![],
        };
        // At 20 with range 20: samples 0, 10 (20 is stale) → 2; at 40: 20..40 → 30, 40.
        assert_eq!(
            run(count(20), grid(20, 40, 20), &times, &values),
            vec![(20, 2.0), (40, 2.0)]
        );
        // A window with no sample gives no point.
        assert_eq!(run(count(5), grid(25, 25, 1), &times, &values), vec![]);
        let last = Mode::Range {
            func: RangeFn::LastOverTime,
            range: 100,
            args: vec![],
        };
        assert_eq!(
            run(last, grid(25, 45, 10), &times, &values),
            vec![(25, 2.0), (35, 4.0), (45, 5.0)]
        );
    }

    #[test]
    fn raw_windows() {
        let times = [0, 10, 20, 30];
        let values = [1.0, 2.0, STALE, 4.0];
        let got = run(
            Mode::Raw {
                range: 20,
                keep_stale: false,
            },
            grid(30, 30, 1),
            &times,
            &values,
        );
        assert_eq!(got, vec![(10, 2.0), (30, 4.0)]);
        let got = run(
            Mode::Raw {
                range: 20,
                keep_stale: true,
            },
            grid(30, 30, 1),
            &times,
            &values,
        );
        assert_eq!(got.len(), 3);
        assert!(is_stale(got[1].1));
    }
}
