//! The `discord` detector: subsequence anomalies (a shape never seen before, such as an
//! arrhythmic heartbeat) by a left matrix profile. Each point closes the subsequence of the
//! last `m` points; its score is the z-normalised Euclidean distance to its nearest neighbour
//! among the earlier, non-overlapping subsequences of the last `window` points, as a robust
//! z-score (median and MAD, the MAD at least 1% of the largest possible distance) against the
//! distances before it (0 when below their median). A point is an anomaly when that
//! score exceeds `k`.
//!
//! Invariants:
//! - State is bounded: the last `window + m` values and the last [`DISTANCES_KEPT`]
//!   distances.
//! - Until the history holds one non-overlapping subsequence there is no distance, and until
//!   `min_points` distances there is no score (NaN).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::window::Window;

/// Nearest-neighbour distances kept for the robust z-score.
pub const DISTANCES_KEPT: usize = 200;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Discord {
    m: usize,
    window: usize,
    values: VecDeque<f64>,
    /// Mean and standard deviation of the subsequence starting at each value (those with m
    /// values from there).
    stats: VecDeque<(f64, f64)>,
    dists: Window,
}

impl Discord {
    pub fn new(m: usize, window: usize) -> Self {
        assert!(
            m >= 2 && window > m,
            "a subsequence of at least 2 inside the window"
        );
        Self {
            m,
            window,
            values: VecDeque::with_capacity(window + m + 1),
            stats: VecDeque::with_capacity(window + 1),
            dists: Window::new(DISTANCES_KEPT),
        }
    }

    /// Takes `x`; returns its nearest-neighbour distance's robust z-score (NaN while there is
    /// no evidence) given `min_points` earlier distances.
    pub fn step(&mut self, x: f64, min_points: usize) -> f64 {
        self.values.push_back(x);
        if self.values.len() > self.window + self.m {
            self.values.pop_front();
            self.stats.pop_front();
        }
        let n = self.values.len();
        if n >= self.m {
            let v = self.values.make_contiguous();
            self.stats.push_back(mean_std(&v[n - self.m..]));
        }
        debug_assert_eq!(self.stats.len(), n.saturating_sub(self.m - 1));
        let Some(d) = self.nearest() else {
            return f64::NAN;
        };
        let score = if self.dists.len() < min_points {
            f64::NAN
        } else {
            let med = self.dists.quantile(0.5);
            // A spread of at least 1% of the largest z-normalised distance (2 sqrt(m)): an
            // exactly repeating signal has no spread, and rounding must not look anomalous.
            let spread = (1.4826 * self.dists.mad(med)).max(0.02 * (self.m as f64).sqrt());
            ((d - med) / spread).max(0.0)
        };
        self.dists.push(d);
        score
    }

    /// The distance from the newest subsequence to its nearest earlier one (`values` is
    /// contiguous: `step` made it so).
    fn nearest(&self) -> Option<f64> {
        let (n, m) = (self.values.len(), self.m);
        if n < 2 * m {
            return None;
        }
        let (v, _) = self.values.as_slices();
        debug_assert_eq!(v.len(), n);
        let q = &v[n - m..];
        let (qm, qs) = *self.stats.back().expect("the newest subsequence's stats");
        let mf = m as f64;
        let mut best = f64::INFINITY;
        // Earlier subsequences end at least m points before the newest one's end.
        for start in 0..=n - 2 * m {
            let s = &v[start..start + m];
            let (sm, ss) = self.stats[start];
            let d2 = if qs < 1e-12 || ss < 1e-12 {
                // A flat subsequence: distance by shape is undefined; compare raw deviations.
                q.iter()
                    .zip(s)
                    .map(|(x, y)| ((x - qm) - (y - sm)).powi(2))
                    .sum::<f64>()
            } else {
                let dot: f64 = q.iter().zip(s).map(|(x, y)| x * y).sum();
                let corr = (dot - mf * qm * sm) / (mf * qs * ss);
                (2.0 * mf * (1.0 - corr)).max(0.0)
            };
            best = best.min(d2);
        }
        Some(best.sqrt())
    }
}

fn mean_std(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    (mean, var.sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_shape_in_a_repeating_signal_scores_high_and_repeats_score_low() {
        let mut d = Discord::new(8, 400);
        let beat = |i: usize| {
            if i % 25 < 3 {
                10.0
            } else {
                (i % 25) as f64 * 0.1
            }
        };
        let mut scores = Vec::new();
        for i in 0..600 {
            let x = if (500..503).contains(&i) {
                -5.0
            } else {
                beat(i)
            };
            scores.push(d.step(x, 50));
        }
        assert!(scores[..16].iter().all(|s| s.is_nan()), "no neighbour yet");
        let normal = scores[300..500].iter().cloned().fold(0.0, f64::max);
        let odd = scores[500..510].iter().cloned().fold(0.0, f64::max);
        assert!(
            odd > 4.0 && odd > 3.0 * normal.max(0.1),
            "odd {odd}, normal {normal}"
        );
    }
}
