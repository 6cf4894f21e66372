//! What the planner knows of a table's rollups when it plans a query: the declared
//! resolutions, how many raw rows one state of each stands for (measured on the files the
//! table holds now), and the time before which only rollups remain.
//!
//! A state costs more to read than a raw value (it carries five lead columns and eight
//! statistics per field), so a resolution whose buckets hold few raw rows (a 1-minute rollup
//! of 10-second data holds 6) is not worth reading where raw rows exist:
//! [`RollupView::worth_reading`] keeps a resolution only when its states stand for at least
//! `min_rows_per_state` raw rows each (flush and compaction do not even write a sparser one,
//! unless it has a retention of its own) (the engine option `rollup_min_rows_per_state`,
//! [`DEFAULT_MIN_ROWS_PER_STATE`]). Pure over the counts it is given.

/// Fewest raw rows per state at which a resolution is read in place of raw rows, unless
/// configured.
pub const DEFAULT_MIN_ROWS_PER_STATE: u32 = 16;

/// A table's rollups as a query sees them.
#[derive(Debug, Clone, PartialEq)]
pub struct RollupView {
    /// Declared resolutions, finest first.
    pub resolutions: Vec<i64>,
    /// Per resolution (same order): raw rows of the files that have it, and its states in them.
    pub counts: Vec<(u64, u64)>,
    /// End of the newest partition whose raw rows expired while rollups remain (`None`: raw
    /// rows are there for every rollup state).
    pub raw_expired_until: Option<i64>,
    /// Resolutions some file whose raw rows expired still has, finest first.
    pub expired_resolutions: Vec<i64>,
    /// Fewest raw rows per state at which a resolution is read where raw rows exist.
    pub min_rows_per_state: u32,
}

impl RollupView {
    /// Raw rows per state of resolution `i` (`None`: no file has it yet).
    pub fn rows_per_state(&self, i: usize) -> Option<f64> {
        let (rows, states) = *self.counts.get(i)?;
        (states > 0).then(|| rows as f64 / states as f64)
    }

    /// Whether resolution `i` is read where raw rows exist too: its states stand for at least
    /// `min_rows_per_state` rows each. A resolution no file has (not written yet, or too
    /// sparse to be written: `crate::maintenance::output`) is not.
    pub fn worth_reading(&self, i: usize) -> bool {
        self.rows_per_state(i)
            .is_some_and(|r| r >= f64::from(self.min_rows_per_state))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_resolutions_are_not_worth_reading() {
        let v = RollupView {
            resolutions: vec![60, 3600, 86_400],
            // 10-second data: 6 rows per minute, 360 per hour; the daily rollup not written yet.
            counts: vec![(36_000, 6_000), (36_000, 100), (0, 0)],
            raw_expired_until: None,
            expired_resolutions: vec![],
            min_rows_per_state: DEFAULT_MIN_ROWS_PER_STATE,
        };
        let cases = [
            ("1m of 10 s data", 0, Some(6.0), false),
            ("1h of 10 s data", 1, Some(360.0), true),
            ("no file has it", 2, None, false),
            ("not declared", 3, None, false),
        ];
        for (name, i, per, worth) in cases {
            assert_eq!(v.rows_per_state(i), per, "{name}");
            assert_eq!(v.worth_reading(i), worth, "{name}");
        }
    }

    #[test]
    fn zero_reads_every_resolution() {
        let v = RollupView {
            resolutions: vec![60],
            counts: vec![(2, 1)],
            raw_expired_until: None,
            expired_resolutions: vec![],
            min_rows_per_state: 0,
        };
        assert!(v.worth_reading(0));
    }

    #[test]
    fn the_threshold_is_inclusive() {
        let v = RollupView {
            resolutions: vec![60],
            counts: vec![(16, 1)],
            raw_expired_until: None,
            expired_resolutions: vec![],
            min_rows_per_state: DEFAULT_MIN_ROWS_PER_STATE,
        };
        assert!(v.worth_reading(0));
    }
}
