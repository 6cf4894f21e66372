//! `rate`, `increase` and `delta` (extrapolated to the window's ends), `irate` and `idelta`
//! (the last two samples).
//!
//! Extrapolation (Prometheus 2.42's `extrapolatedRate`): the change between the first and last
//! sample, plus, for counters, the value before every drop (a reset). Each side is extended to
//! the window's edge when the gap to it is under 1.1 × the average sample spacing, else by
//! half a spacing; for a rising counter whose first value is ≥ 0 the start side stops where the
//! counter would reach zero. `rate` then divides by the range in seconds.

use super::Window;

/// `rate` (`counter` and `per_second`), `increase` (`counter`), `delta` (neither).
pub fn extrapolated(w: &Window, counter: bool, per_second: bool) -> Option<f64> {
    let (t, v) = (w.times, w.values);
    let n = v.len();
    if n < 2 {
        return None;
    }
    let mut result = v[n - 1] - v[0];
    if counter {
        for i in 1..n {
            if v[i] < v[i - 1] {
                result += v[i - 1];
            }
        }
    }
    let mut to_start = (t[0] - w.start) as f64 / 1000.0;
    let to_end = (w.end - t[n - 1]) as f64 / 1000.0;
    let sampled = (t[n - 1] - t[0]) as f64 / 1000.0;
    let average = sampled / (n - 1) as f64;
    if counter && result > 0.0 && v[0] >= 0.0 {
        let to_zero = sampled * (v[0] / result);
        if to_zero < to_start {
            to_start = to_zero;
        }
    }
    let threshold = average * 1.1;
    let mut interval = sampled;
    interval += if to_start < threshold {
        to_start
    } else {
        average / 2.0
    };
    interval += if to_end < threshold {
        to_end
    } else {
        average / 2.0
    };
    let mut factor = interval / sampled;
    if per_second {
        factor /= w.range as f64 / 1000.0;
    }
    Some(result * factor)
}

/// `irate` (`per_second`, a drop counts as a reset) and `idelta`.
pub fn instant(w: &Window, per_second: bool) -> Option<f64> {
    let n = w.values.len();
    if n < 2 {
        return None;
    }
    let (last, prev) = (w.values[n - 1], w.values[n - 2]);
    let result = if per_second && last < prev {
        last
    } else {
        last - prev
    };
    let interval = w.times[n - 1] - w.times[n - 2];
    if interval == 0 {
        return None;
    }
    Some(if per_second {
        result / (interval as f64 / 1000.0)
    } else {
        result
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window<'a>(times: &'a [i64], values: &'a [f64], start: i64, end: i64) -> Window<'a> {
        Window {
            times,
            values,
            start,
            end,
            at: end,
            range: end - start,
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1.0)
    }

    /// Worked by hand from Prometheus 2.42's `extrapolatedRate`.
    #[test]
    fn extrapolation_cases() {
        struct Case {
            name: &'static str,
            times: &'static [i64],
            values: &'static [f64],
            window: (i64, i64),
            counter: bool,
            per_second: bool,
            want: Option<f64>,
        }
        let cases = [
            Case {
                name: "one sample gives nothing",
                times: &[10_000],
                values: &[5.0],
                window: (0, 60_000),
                counter: true,
                per_second: true,
                want: None,
            },
            Case {
                // 0..60 s window, samples every 10 s from 10 s to 50 s, +10 each: both ends
                // within 1.1 × 10 s, so extrapolated to 60 s: 40 × 60/40 = 60; rate / 60.
                name: "regular counter, both ends extrapolated",
                times: &[10_000, 20_000, 30_000, 40_000, 50_000],
                values: &[100.0, 110.0, 120.0, 130.0, 140.0],
                window: (0, 60_000),
                counter: true,
                per_second: true,
                want: Some(1.0),
            },
            Case {
                name: "increase of the same",
                times: &[10_000, 20_000, 30_000, 40_000, 50_000],
                values: &[100.0, 110.0, 120.0, 130.0, 140.0],
                window: (0, 60_000),
                counter: true,
                per_second: false,
                want: Some(60.0),
            },
            Case {
                // A reset from 130 to 5: the change is 140 - 100 + 130 = 170... values
                // 100, 110, 120, 130, 5: result = 5 - 100 + 130 = 35, extrapolated × 60/40.
                name: "a counter reset adds the value before the drop",
                times: &[10_000, 20_000, 30_000, 40_000, 50_000],
                values: &[100.0, 110.0, 120.0, 130.0, 5.0],
                window: (0, 60_000),
                counter: true,
                per_second: false,
                want: Some(35.0 * 60.0 / 40.0),
            },
            Case {
                // Start gap 30 s > 1.1 × 10 s: the start side extends by 5 s only. End gap 0.
                name: "a far start extends by half a spacing",
                times: &[30_000, 40_000, 50_000, 60_000],
                values: &[100.0, 110.0, 120.0, 130.0],
                window: (0, 60_000),
                counter: true,
                per_second: false,
                want: Some(30.0 * 35.0 / 30.0),
            },
            Case {
                // First value 5 rising by 10 per 10 s: zero is 5 s before the first sample,
                // closer than the 10 s to the window start, so the start side is 5 s.
                name: "a counter is not extrapolated below zero",
                times: &[10_000, 20_000, 30_000, 40_000, 50_000, 60_000],
                values: &[5.0, 15.0, 25.0, 35.0, 45.0, 55.0],
                window: (0, 60_000),
                counter: true,
                per_second: false,
                want: Some(50.0 * 55.0 / 50.0),
            },
            Case {
                // delta is not a counter: no zero point, a drop is a drop.
                name: "delta of a gauge",
                times: &[10_000, 20_000, 30_000, 40_000, 50_000],
                values: &[10.0, 8.0, 6.0, 4.0, 2.0],
                window: (0, 60_000),
                counter: false,
                per_second: false,
                want: Some(-8.0 * 60.0 / 40.0),
            },
        ];
        for c in cases {
            let w = window(c.times, c.values, c.window.0, c.window.1);
            let got = extrapolated(&w, c.counter, c.per_second);
            match (got, c.want) {
                (Some(g), Some(want)) => assert!(close(g, want), "{}: {g} != {want}", c.name),
                (g, want) => assert_eq!(g, want, "{}", c.name),
            }
        }
    }

    #[test]
    fn instant_rates() {
        let t = [0, 10_000, 20_000];
        let w = window(&t, &[1.0, 5.0, 25.0], 0, 20_000);
        assert_eq!(instant(&w, true), Some(2.0));
        assert_eq!(instant(&w, false), Some(20.0));
        let w = window(&t, &[1.0, 50.0, 10.0], 0, 20_000);
        assert_eq!(instant(&w, true), Some(1.0), "a drop is a reset for irate");
        assert_eq!(instant(&w, false), Some(-40.0));
        let w = window(&t[..1], &[1.0], 0, 20_000);
        assert_eq!(instant(&w, true), None);
        let same = [5, 5];
        let w = window(&same, &[1.0, 2.0], 0, 20_000);
        assert_eq!(instant(&w, true), None, "no interval");
    }
}
