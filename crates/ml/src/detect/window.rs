//! A sliding window of the last `cap` values of a series: in arrival order (to drop the
//! oldest) and sorted (for order statistics), with running sums for the mean and variance.
//! Each push is O(cap) at worst (a sorted insert and remove), O(log cap) to find.

use std::collections::VecDeque;

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct Window {
    cap: usize,
    order: VecDeque<f64>,
    sorted: Vec<f64>,
    sum: f64,
    sum_sq: f64,
    /// Pushes since the running sums were last recomputed.
    since_resum: usize,
}

/// Pushes after which the running sums are recomputed from the values (they drift).
const RESUM_EVERY: usize = 4096;

impl Window {
    pub fn new(cap: usize) -> Window {
        assert!(cap >= 1, "a window holds at least one value");
        Window {
            cap,
            order: VecDeque::with_capacity(cap),
            sorted: Vec::with_capacity(cap),
            sum: 0.0,
            sum_sq: 0.0,
            since_resum: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// Takes `x` (not NaN), dropping the oldest value when full.
    pub fn push(&mut self, x: f64) {
        debug_assert!(!x.is_nan());
        if self.order.len() == self.cap {
            let old = self.order.pop_front().expect("a full window");
            let at = self.sorted.partition_point(|v| v.total_cmp(&old).is_lt());
            debug_assert!(self.sorted[at].total_cmp(&old).is_eq());
            self.sorted.remove(at);
            self.sum -= old;
            self.sum_sq -= old * old;
        }
        let at = self.sorted.partition_point(|v| v.total_cmp(&x).is_lt());
        self.sorted.insert(at, x);
        self.order.push_back(x);
        self.sum += x;
        self.sum_sq += x * x;
        self.since_resum += 1;
        if self.since_resum >= RESUM_EVERY {
            self.resum();
        }
    }

    fn resum(&mut self) {
        self.since_resum = 0;
        self.sum = self.order.iter().sum();
        self.sum_sq = self.order.iter().map(|v| v * v).sum();
    }

    pub fn mean(&self) -> f64 {
        self.sum / self.len() as f64
    }

    /// The sample standard deviation (0 for fewer than two values).
    pub fn std(&self) -> f64 {
        let n = self.len() as f64;
        if n < 2.0 {
            return 0.0;
        }
        let mean = self.mean();
        // Computed from the values when the running sums cannot be trusted to cancel well.
        let var = (self.sum_sq - n * mean * mean) / (n - 1.0);
        if var > 1e-9 * mean.abs().max(1.0) {
            var.sqrt()
        } else {
            let v: f64 = self
                .order
                .iter()
                .map(|x| (x - mean) * (x - mean))
                .sum::<f64>()
                / (n - 1.0);
            v.sqrt()
        }
    }

    /// The `q` quantile (0..=1), linearly interpolated between order statistics (R's type 7,
    /// numpy's default).
    pub fn quantile(&self, q: f64) -> f64 {
        quantile_sorted(&self.sorted, q)
    }

    /// The median absolute deviation from `m`.
    pub fn mad(&self, m: f64) -> f64 {
        let mut d: Vec<f64> = self.sorted.iter().map(|v| (v - m).abs()).collect();
        d.sort_unstable_by(f64::total_cmp);
        quantile_sorted(&d, 0.5)
    }
}

/// The `q` quantile of sorted `v` (type 7); NaN when empty.
pub(super) fn quantile_sorted(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let h = (v.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    v[lo] + (h - lo as f64) * (v[hi] - v[lo])
}
