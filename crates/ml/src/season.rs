//! Seasonality of one series: the autocorrelation at a lag, the period a series repeats at
//! (the highest peak of the autocorrelation of its first differences, computed for every lag
//! at once by FFT), and missing values filled in so that the estimators, which need whole
//! series, can run.
//!
//! Invariants:
//! - [`detect`] returns a period `p` only when `2 <= p <= n / 2` and the autocorrelation at
//!   `p` is at least [`MIN_ACF`]; a series shorter than [`MIN_POINTS`] has none.
//! - [`impute`] leaves no NaN when the series has at least one value, and changes no value
//!   that was there.

use rustfft::FftPlanner;
use rustfft::num_complex::Complex;

/// Autocorrelation a period must reach to count as a season.
pub const MIN_ACF: f64 = 0.3;
/// Points below which no season is looked for (the periodogram needs 16).
pub const MIN_POINTS: usize = 16;

/// The sample autocorrelation of `y` at `lag` (0 when undefined).
pub fn acf(y: &[f64], lag: usize) -> f64 {
    let n = y.len();
    if lag == 0 || lag >= n {
        return 0.0;
    }
    let mean = y.iter().sum::<f64>() / n as f64;
    let var: f64 = y.iter().map(|v| (v - mean) * (v - mean)).sum();
    if var <= 0.0 || !var.is_finite() {
        return 0.0;
    }
    let cov: f64 = (lag..n).map(|i| (y[i] - mean) * (y[i - lag] - mean)).sum();
    cov / var
}

/// The period `y` repeats at, if any (see the module's invariants). `y` has no NaN.
///
/// The autocorrelation is of the first differences, so that a trend does not make every lag
/// look alike; the period is the lag of its highest local maximum past its first
/// non-positive value.
pub fn detect(y: &[f64]) -> Option<usize> {
    let n = y.len();
    if n < MIN_POINTS {
        return None;
    }
    let d: Vec<f64> = y.windows(2).map(|w| w[1] - w[0]).collect();
    let r = acf_all(&d);
    let max_lag = (n / 2).min(r.len().saturating_sub(2));
    // Smoothness makes the first lags correlate: a season starts past the first lag at which
    // the autocorrelation stops being positive.
    let first = (1..r.len()).find(|&i| r[i] <= 0.0)?;
    (first.max(2)..=max_lag)
        .filter(|&p| r[p] >= MIN_ACF && r[p] >= r[p - 1] && r[p] >= r[p + 1])
        .max_by(|&a, &b| r[a].total_cmp(&r[b]).then(b.cmp(&a)))
}

/// The autocorrelation of `y` at every lag `0..y.len()` (all 0 for a constant series).
pub fn acf_all(y: &[f64]) -> Vec<f64> {
    let n = y.len();
    if n == 0 {
        return Vec::new();
    }
    let mean = y.iter().sum::<f64>() / n as f64;
    let size = (2 * n).next_power_of_two();
    let mut buf: Vec<Complex<f64>> = y.iter().map(|v| Complex::new(v - mean, 0.0)).collect();
    buf.resize(size, Complex::new(0.0, 0.0));
    let mut planner = FftPlanner::new();
    planner.plan_fft_forward(size).process(&mut buf);
    for c in buf.iter_mut() {
        *c = Complex::new(c.norm_sqr(), 0.0);
    }
    planner.plan_fft_inverse(size).process(&mut buf);
    let c0 = buf[0].re;
    if c0 <= 0.0 || !c0.is_finite() {
        return vec![0.0; n];
    }
    buf[..n].iter().map(|c| c.re / c0).collect()
}

/// `y` with each NaN replaced by a straight line between the values around it (the first or
/// last value at the ends); an all-NaN series stays as it is.
pub fn impute(y: &[f64]) -> Vec<f64> {
    let mut out = y.to_vec();
    let known: Vec<usize> = (0..y.len()).filter(|&i| !y[i].is_nan()).collect();
    let (Some(&first), Some(&last)) = (known.first(), known.last()) else {
        return out;
    };
    out[..first].fill(y[first]);
    out[last..].fill(y[last]);
    for w in known.windows(2) {
        let (a, b) = (w[0], w[1]);
        for (i, v) in out.iter_mut().enumerate().take(b).skip(a + 1) {
            let f = (i - a) as f64 / (b - a) as f64;
            *v = y[a] + f * (y[b] - y[a]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wave(n: usize, period: usize) -> Vec<f64> {
        (0..n)
            .map(|i| (i as f64 * std::f64::consts::TAU / period as f64).sin() * 10.0 + 50.0)
            .collect()
    }

    #[test]
    fn a_sine_has_its_period_and_noise_has_none() {
        assert_eq!(detect(&wave(480, 24)), Some(24));
        let mut x = 12345u64;
        let noise: Vec<f64> = (0..480)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                (x >> 33) as f64 / (1u64 << 31) as f64
            })
            .collect();
        assert_eq!(detect(&noise), None);
        assert_eq!(detect(&wave(10, 4)), None, "too short");
    }

    #[test]
    fn acf_by_fft_matches_the_direct_sum() {
        let y: Vec<f64> = (0..100)
            .map(|i| ((i * 37) % 11) as f64 + (i as f64).sqrt())
            .collect();
        let all = acf_all(&y);
        for lag in [1, 2, 7, 50, 99] {
            assert!((all[lag] - acf(&y, lag)).abs() < 1e-9, "lag {lag}");
        }
    }

    #[test]
    fn a_trend_with_a_season_has_the_season() {
        let y: Vec<f64> = (0..240)
            .map(|i| i as f64 * 0.5 + (i as f64 * std::f64::consts::TAU / 12.0).sin())
            .collect();
        assert_eq!(detect(&y), Some(12));
    }

    #[test]
    fn acf_of_a_sine_at_its_period_is_high_and_at_half_is_negative() {
        let y = wave(240, 24);
        assert!(acf(&y, 24) > 0.8);
        assert!(acf(&y, 12) < -0.8);
        assert_eq!(acf(&[1.0, 1.0, 1.0], 1), 0.0, "constant");
    }

    #[test]
    fn impute_draws_lines_and_keeps_values() {
        let n = f64::NAN;
        assert_eq!(impute(&[n, 1.0, n, 3.0, n]), vec![1.0, 1.0, 2.0, 3.0, 3.0]);
        assert!(impute(&[n, n]).iter().all(|v| v.is_nan()));
        assert_eq!(impute(&[]), Vec::<f64>::new());
    }
}
