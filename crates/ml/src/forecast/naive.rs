//! The seasonal naive forecast: the value one season back (the last value when there is no
//! season), with intervals from the spread of the seasonal differences that widen by the
//! square root of the seasons ahead.

use super::{Forecast, mean_abs};
use crate::error::MlError;

/// The forecast `h` points past `y` with season `m` (None or < 2: the last value), intervals
/// at `z` standard deviations.
pub fn forecast(y: &[f64], m: Option<usize>, h: usize, z: f64) -> Result<Forecast, MlError> {
    let m = m.filter(|&m| m >= 2).unwrap_or(1);
    if y.len() < m + 1 {
        return Err(MlError::TooFewPoints {
            what: "seasonal_naive forecasting".into(),
            need: m + 1,
            have: y.len(),
        });
    }
    let sd = diff_sd(y, m);
    let n = y.len();
    let mut f = Forecast::default();
    for i in 0..h {
        let p = y[n - m + (i % m)];
        let w = z * sd * ((i / m + 1) as f64).sqrt();
        f.point.push(p);
        f.lower.push(p - w);
        f.upper.push(p + w);
    }
    Ok(f)
}

/// The standard deviation of `y[t] - y[t - m]` (0 for fewer than two differences).
pub fn diff_sd(y: &[f64], m: usize) -> f64 {
    let d: Vec<f64> = (m..y.len()).map(|i| y[i] - y[i - m]).collect();
    if d.len() < 2 {
        return 0.0;
    }
    let mean = d.iter().sum::<f64>() / d.len() as f64;
    (d.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (d.len() - 1) as f64).sqrt()
}

/// Mean absolute error of predicting each point by the one a season back.
pub fn in_sample_mae(y: &[f64], m: Option<usize>) -> f64 {
    let m = m.filter(|&m| m >= 2).unwrap_or(1);
    mean_abs((m..y.len()).map(|i| y[i] - y[i - m]))
}
