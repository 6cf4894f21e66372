//! Frequency-aware placement of series groups onto worker queue sets (TS-PMEM §5).
//!
//! Each set keeps a load row (`sources`, `sum_interval`, `rate`). A new source with a measured
//! write interval goes to the set with the highest load rate `K`, and stays there for its
//! lifetime (a region keeps its worker), which avoids periodic rebalancing. An empty set has
//! `K = ∞`, so sets fill before they are shared.
//!
//! TS-PMEM defines `K = Σ intervals / count`. Two readings, both implemented:
//! - [`Policy::ArrivalInterval`] (default): Σ intervals / count measured over the *writes
//!   arriving at the set*, i.e. its mean time between writes, `1 / Σ (1 / interval_i)`.
//! - [`Policy::PerSourceMean`]: the literal per-source average `Σ interval_i / n`. With
//!   heavy-tailed intervals one very slow source keeps its set's average high, so every later
//!   source piles onto that set; `benches/placement.rs` measures this (imbalance ≈ number of
//!   sets) and it is kept only for comparison.
//!
//! Pure: no clocks or threads here; callers pass intervals in nanoseconds.

/// How `K` is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Policy {
    #[default]
    ArrivalInterval,
    PerSourceMean,
}

/// Load row of one queue set.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SetLoad {
    pub sources: u64,
    /// Sum of the write intervals (ns) of the sources bound to this set.
    pub sum_interval: f64,
    /// Sum of the write rates (1/s) of those sources: the load they bring.
    pub rate: f64,
}

impl SetLoad {
    /// The load rate K under `policy` (higher means less loaded).
    pub fn k(&self, policy: Policy) -> f64 {
        if self.sources == 0 {
            return f64::INFINITY;
        }
        match policy {
            Policy::ArrivalInterval => 1e9 / self.rate,
            Policy::PerSourceMean => self.sum_interval / self.sources as f64,
        }
    }
}

/// Assigns sources to `n` sets by TS-PMEM's rule.
#[derive(Debug, Clone)]
pub struct FrequencyBalancer {
    sets: Vec<SetLoad>,
    policy: Policy,
}

impl FrequencyBalancer {
    pub fn new(n: usize) -> Self {
        Self::with_policy(n, Policy::default())
    }

    pub fn with_policy(n: usize, policy: Policy) -> Self {
        assert!(n >= 1, "at least one queue set");
        Self {
            sets: vec![SetLoad::default(); n],
            policy,
        }
    }

    pub fn sets(&self) -> &[SetLoad] {
        &self.sets
    }

    /// Picks the set for a new source writing every `interval_ns` and records it there.
    pub fn assign(&mut self, interval_ns: f64) -> usize {
        assert!(interval_ns > 0.0, "interval must be positive");
        let best = (0..self.sets.len())
            .max_by(|&a, &b| {
                self.sets[a]
                    .k(self.policy)
                    .partial_cmp(&self.sets[b].k(self.policy))
                    .expect("K is never NaN")
                    // Ties go to the lower index.
                    .then(b.cmp(&a))
            })
            .expect("at least one set");
        self.bind(best, interval_ns);
        best
    }

    /// Records a source bound to `set` (on restart, or by another rule).
    pub fn bind(&mut self, set: usize, interval_ns: f64) {
        let s = &mut self.sets[set];
        s.sources += 1;
        s.sum_interval += interval_ns;
        s.rate += 1e9 / interval_ns;
    }

    /// Removes a source (its region was dropped).
    pub fn unbind(&mut self, set: usize, interval_ns: f64) {
        let s = &mut self.sets[set];
        assert!(s.sources > 0, "unbind from an empty set");
        s.sources -= 1;
        s.sum_interval -= interval_ns;
        s.rate -= 1e9 / interval_ns;
    }

    /// Highest set load (writes/s) divided by the mean: 1.0 is perfect balance.
    pub fn imbalance(&self) -> f64 {
        imbalance(self.sets.iter().map(|s| s.rate))
    }
}

/// Max over mean of per-set loads.
pub fn imbalance(loads: impl Iterator<Item = f64>) -> f64 {
    let v: Vec<f64> = loads.collect();
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    if mean == 0.0 {
        return 1.0;
    }
    v.iter().cloned().fold(0.0, f64::max) / mean
}

/// Mean interval between writes, measured from write times (ns).
#[derive(Debug, Clone, Copy, Default)]
pub struct IntervalMeter {
    first: Option<i64>,
    last: i64,
    count: u64,
}

impl IntervalMeter {
    pub fn record(&mut self, now_ns: i64) {
        if self.first.is_none() {
            self.first = Some(now_ns);
        }
        self.last = now_ns;
        self.count += 1;
    }

    /// `Σ intervals / count` over the writes seen; `None` before two writes.
    pub fn interval_ns(&self) -> Option<f64> {
        let first = self.first?;
        (self.count >= 2).then(|| ((self.last - first).max(1)) as f64 / (self.count - 1) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_cases() {
        use Policy::*;
        // (name, policy, sets, intervals in order, expected set of each)
        type Case = (
            &'static str,
            Policy,
            usize,
            &'static [f64],
            &'static [usize],
        );
        let cases: &[Case] = &[
            (
                "empty sets fill first",
                ArrivalInterval,
                3,
                &[1.0, 1.0, 1.0],
                &[0, 1, 2],
            ),
            (
                "slow set takes next",
                ArrivalInterval,
                2,
                &[10.0, 1.0, 5.0],
                &[0, 1, 0],
            ),
            ("one set", ArrivalInterval, 1, &[3.0, 4.0], &[0, 0]),
            (
                "equal sources alternate",
                ArrivalInterval,
                2,
                &[2.0, 2.0, 2.0, 2.0],
                &[0, 1, 0, 1],
            ),
            (
                "slow outlier does not attract all",
                ArrivalInterval,
                2,
                &[100.0, 1.0, 1.0, 1.0],
                &[0, 1, 0, 1],
            ),
            (
                "literal rule: outlier attracts all",
                PerSourceMean,
                2,
                &[100.0, 1.0, 1.0, 1.0],
                &[0, 1, 0, 0],
            ),
            (
                "literal rule: ties to lowest index",
                PerSourceMean,
                2,
                &[2.0, 2.0, 2.0, 2.0],
                &[0, 1, 0, 0],
            ),
        ];
        for (name, policy, n, intervals, want) in cases {
            let mut b = FrequencyBalancer::with_policy(*n, *policy);
            let got: Vec<usize> = intervals.iter().map(|&i| b.assign(i)).collect();
            assert_eq!(&got, want, "{name}");
        }
    }

    #[test]
    fn unbind_restores_load() {
        let mut b = FrequencyBalancer::new(2);
        let s = b.assign(4.0);
        b.unbind(s, 4.0);
        assert_eq!(b.sets()[s], SetLoad::default());
    }

    #[test]
    fn meter_averages_intervals() {
        let mut m = IntervalMeter::default();
        assert_eq!(m.interval_ns(), None);
        for t in [0, 10, 20, 40] {
            m.record(t);
        }
        assert_eq!(m.interval_ns(), Some(40.0 / 3.0));
    }

    #[test]
    fn imbalance_of_loads() {
        assert_eq!(imbalance([1.0, 1.0].into_iter()), 1.0);
        assert_eq!(imbalance([3.0, 1.0].into_iter()), 1.5);
        assert_eq!(imbalance([0.0, 0.0].into_iter()), 1.0);
    }
}
