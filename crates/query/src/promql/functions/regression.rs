//! `deriv` and `predict_linear` (least squares over the window, with compensated sums and x
//! measured from a nearby time so that large timestamps lose no precision), `holt_winters`
//! (double exponential smoothing).

use super::{Window, kahan_inc};

/// Slope (per second) and intercept at `origin` (ms) of the least-squares line.
fn linear_regression(times: &[i64], values: &[f64], origin: i64) -> (f64, f64) {
    let (mut n, mut sx, mut cx, mut sy, mut cy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    let (mut sxy, mut cxy, mut sx2, mut cx2) = (0.0, 0.0, 0.0, 0.0);
    let first = values[0];
    let mut constant = true;
    for (i, (&t, &v)) in times.iter().zip(values).enumerate() {
        if constant && i > 0 && v != first {
            constant = false;
        }
        n += 1.0;
        let x = (t - origin) as f64 / 1e3;
        (sx, cx) = kahan_inc(x, sx, cx);
        (sy, cy) = kahan_inc(v, sy, cy);
        (sxy, cxy) = kahan_inc(x * v, sxy, cxy);
        (sx2, cx2) = kahan_inc(x * x, sx2, cx2);
    }
    if constant {
        if first.is_infinite() {
            return (f64::NAN, f64::NAN);
        }
        return (0.0, first);
    }
    let (sx, sy, sxy, sx2) = (sx + cx, sy + cy, sxy + cxy, sx2 + cx2);
    let cov = sxy - sx * sy / n;
    let var = sx2 - sx * sx / n;
    let slope = cov / var;
    (slope, sy / n - slope * sx / n)
}

/// The per-second slope of the window's samples.
pub fn deriv(w: &Window) -> Option<f64> {
    (w.values.len() >= 2).then(|| linear_regression(w.times, w.values, w.times[0]).0)
}

/// The value the window's line reaches `horizon` seconds after the step.
pub fn predict_linear(w: &Window, horizon: f64) -> Option<f64> {
    if w.values.len() < 2 {
        return None;
    }
    let (slope, intercept) = linear_regression(w.times, w.values, w.at);
    Some(slope * horizon + intercept)
}

/// Double exponential smoothing with smoothing factor `sf` and trend factor `tf` (both in
/// (0, 1); the planner checks them).
pub fn holt_winters(values: &[f64], sf: f64, tf: f64) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let (mut s0, mut s1) = (0.0, values[0]);
    let mut b = values[1] - values[0];
    for (i, &v) in values.iter().enumerate().skip(1) {
        let x = sf * v;
        // The trend at step i - 1: the first one is the raw difference.
        if i > 1 {
            b = tf * (s1 - s0) + (1.0 - tf) * b;
        }
        let y = (1.0 - sf) * (s1 + b);
        (s0, s1) = (s1, x + y);
    }
    Some(s1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window<'a>(times: &'a [i64], values: &'a [f64], at: i64) -> Window<'a> {
        Window {
            times,
            values,
            start: 0,
            end: at,
            at,
            range: at,
        }
    }

    #[test]
    fn slopes_and_predictions() {
        let t = [1_700_000_000_000, 1_700_000_010_000, 1_700_000_020_000];
        // +2 per 10 s: 0.2 per second, even at large timestamps.
        let w = window(&t, &[1.0, 3.0, 5.0], 1_700_000_020_000);
        assert!((deriv(&w).unwrap() - 0.2).abs() < 1e-12);
        // At the step (the last sample) the line is 5; an hour on, 5 + 720.
        assert!((predict_linear(&w, 3600.0).unwrap() - 725.0).abs() < 1e-9);
        // A constant window: slope 0.
        let w = window(&t, &[4.0, 4.0, 4.0], 1_700_000_020_000);
        assert_eq!(deriv(&w), Some(0.0));
        let w = window(&t, &[f64::INFINITY; 3], 1_700_000_020_000);
        assert!(deriv(&w).unwrap().is_nan());
        let w = window(&t[..1], &[1.0], 1_700_000_020_000);
        assert_eq!(deriv(&w), None);
    }

    #[test]
    fn holt_winters_smooths_a_line_to_its_end() {
        // A straight line is followed exactly.
        let v: Vec<f64> = (0..10).map(|i| 2.0 * i as f64).collect();
        assert!((holt_winters(&v, 0.5, 0.5).unwrap() - 18.0).abs() < 1e-9);
        assert_eq!(holt_winters(&[1.0], 0.5, 0.5), None);
    }
}
