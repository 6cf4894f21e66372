//! The `*_over_time` aggregations of one window's values, `changes` and `resets`
//! (Prometheus 2.42: Kahan-compensated sums and means; `min`/`max` skip NaN unless every value
//! is NaN).

use super::kahan_inc;

pub fn sum(values: &[f64]) -> f64 {
    let (mut s, mut c) = (0.0, 0.0);
    for &v in values {
        (s, c) = kahan_inc(v, s, c);
    }
    if s.is_infinite() { s } else { s + c }
}

/// The incremental mean Prometheus uses (it neither overflows nor turns ±Inf into NaN).
pub fn avg(values: &[f64]) -> f64 {
    let (mut mean, mut c, mut count) = (0.0f64, 0.0, 0.0);
    for &v in values {
        count += 1.0;
        if mean.is_infinite() {
            if v.is_infinite() && (mean > 0.0) == (v > 0.0) {
                continue;
            }
            if !v.is_infinite() && !v.is_nan() {
                continue;
            }
        }
        (mean, c) = kahan_inc(v / count - mean / count, mean, c);
    }
    if mean.is_infinite() { mean } else { mean + c }
}

pub fn max(values: &[f64]) -> f64 {
    let mut m = values[0];
    for &v in values {
        if v > m || m.is_nan() {
            m = v;
        }
    }
    m
}

pub fn min(values: &[f64]) -> f64 {
    let mut m = values[0];
    for &v in values {
        if v < m || m.is_nan() {
            m = v;
        }
    }
    m
}

/// The population variance (Welford with compensated sums).
pub fn stdvar(values: &[f64]) -> f64 {
    let (mut count, mut mean, mut c_mean, mut aux, mut c_aux) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &v in values {
        count += 1.0;
        let delta = v - (mean + c_mean);
        (mean, c_mean) = kahan_inc(delta / count, mean, c_mean);
        (aux, c_aux) = kahan_inc(delta * (v - (mean + c_mean)), aux, c_aux);
    }
    (aux + c_aux) / count
}

/// How often the value changed (NaN to NaN is no change).
pub fn changes(values: &[f64]) -> f64 {
    values
        .windows(2)
        .filter(|w| w[1] != w[0] && !(w[1].is_nan() && w[0].is_nan()))
        .count() as f64
}

/// How often the value dropped.
pub fn resets(values: &[f64]) -> f64 {
    values.windows(2).filter(|w| w[1] < w[0]).count() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregations_over_a_window() {
        const NAN: f64 = f64::NAN;
        const INF: f64 = f64::INFINITY;
        struct Case {
            values: &'static [f64],
            sum: f64,
            avg: f64,
            min: f64,
            max: f64,
        }
        let cases = [
            Case {
                values: &[1.0, 2.0, 3.0, 4.0],
                sum: 10.0,
                avg: 2.5,
                min: 1.0,
                max: 4.0,
            },
            Case {
                values: &[NAN, 2.0, 1.0],
                sum: NAN,
                avg: NAN,
                min: 1.0,
                max: 2.0,
            },
            Case {
                values: &[NAN, NAN],
                sum: NAN,
                avg: NAN,
                min: NAN,
                max: NAN,
            },
            Case {
                values: &[INF, 1.0, INF],
                sum: INF,
                avg: INF,
                min: 1.0,
                max: INF,
            },
            Case {
                // The sum is compensated: the 1.0s are not lost next to 1e100. The mean is
                // Prometheus's incremental one, whose increments (v - mean) / n lose them
                // before compensation can keep them.
                values: &[1e100, 1.0, -1e100, 1.0],
                sum: 2.0,
                avg: 0.25,
                min: -1e100,
                max: 1e100,
            },
            Case {
                // No overflow in the mean of two huge values.
                values: &[f64::MAX, f64::MAX],
                sum: INF,
                avg: f64::MAX,
                min: f64::MAX,
                max: f64::MAX,
            },
        ];
        let same = |a: f64, b: f64| (a.is_nan() && b.is_nan()) || a == b;
        for c in cases {
            assert!(same(sum(c.values), c.sum), "sum {:?}", c.values);
            assert!(
                same(avg(c.values), c.avg),
                "avg {:?} = {}",
                c.values,
                avg(c.values)
            );
            assert!(same(min(c.values), c.min), "min {:?}", c.values);
            assert!(same(max(c.values), c.max), "max {:?}", c.values);
        }
    }

    #[test]
    fn variance_changes_and_resets() {
        assert_eq!(stdvar(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]), 4.0);
        assert_eq!(stdvar(&[3.0]), 0.0);
        assert_eq!(changes(&[1.0, 1.0, 2.0, 2.0, 1.0]), 2.0);
        assert_eq!(changes(&[f64::NAN, f64::NAN, 1.0]), 1.0);
        assert_eq!(resets(&[1.0, 5.0, 2.0, 3.0, 0.0]), 2.0);
        assert_eq!(resets(&[1.0]), 0.0);
    }
}
