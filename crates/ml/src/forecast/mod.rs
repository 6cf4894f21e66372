//! Forecasting one series: seasonal naive, AutoETS, MSTL with an AutoETS trend, and `auto`
//! choosing among them by holdout error ([`fit`]). The fitted result is the forecast itself,
//! `horizon` points with prediction intervals at `level` ([`Fitted`]): a model is a stored
//! forecast from the end of its training rows until it is refreshed.
//!
//! | method | what | needs |
//! |---|---|---|
//! | `seasonal_naive` | the value one season back (the last value without a season); intervals from the seasonal differences' spread, widening with each season ahead | season + 1 points |
//! | `ets` | augurs' AutoETS (non-seasonal: level, trend, damping chosen by AICc) | 10 points |
//! | `mstl` | augurs' MSTL: one seasonal component per season, the rest forecast by AutoETS | 2 × longest season + 1 points |
//! | `auto` | each candidate fitted on all but the last `holdout` points (the horizon, at most a fifth of the series); the least mean absolute error on them wins and is refitted on all | — |
//!
//! Invariants:
//! - A fit never panics: a panic inside a fitting library is caught and becomes an error
//!   naming the method, and `auto` then tries the other candidates.
//! - Missing values are filled in ([`crate::season::impute`]) before fitting.
//! - `point`, `lower` and `upper` hold `horizon` finite values each, `lower <= point <= upper`.

mod naive;

use std::panic::{AssertUnwindSafe, catch_unwind};

use augurs_core::{Fit, Predict};
use augurs_ets::AutoETS;
use augurs_ets::trend::AutoETSTrendModel;
use augurs_mstl::MSTLModel;
use serde::{Deserialize, Serialize};

use crate::detect::stats::normal_quantile;
use crate::error::MlError;

/// Points an ETS fit needs.
pub const MIN_ETS_POINTS: usize = 10;
/// The longest horizon a model keeps.
pub const MAX_HORIZON: usize = 100_000;

/// A forecasting method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Method {
    SeasonalNaive,
    Ets,
    Mstl,
    Auto,
}

impl Method {
    pub fn parse(name: &str) -> Result<Method, MlError> {
        match name.trim().to_ascii_lowercase().as_str() {
            "seasonal_naive" | "snaive" => Ok(Method::SeasonalNaive),
            "ets" | "autoets" => Ok(Method::Ets),
            "mstl" => Ok(Method::Mstl),
            "auto" => Ok(Method::Auto),
            _ => Err(MlError::UnknownForecastMethod(name.to_string())),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Method::SeasonalNaive => "seasonal_naive",
            Method::Ets => "ets",
            Method::Mstl => "mstl",
            Method::Auto => "auto",
        }
    }
}

/// Points ahead with their interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Forecast {
    pub point: Vec<f64>,
    pub lower: Vec<f64>,
    pub upper: Vec<f64>,
}

/// A fitted series: the method used and its forecast.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fitted {
    pub method: Method,
    /// Seasons, in points, the method used (empty: none).
    pub seasons: Vec<usize>,
    /// Mean absolute one-step error over the training points.
    pub in_sample_mae: f64,
    /// Each candidate's mean absolute error on the holdout (`auto` only).
    pub holdout: Vec<(Method, f64)>,
    pub forecast: Forecast,
}

/// What to fit.
#[derive(Debug, Clone, PartialEq)]
pub struct Spec {
    pub method: Method,
    /// Seasons in points, shortest first (empty: none).
    pub seasons: Vec<usize>,
    pub horizon: usize,
    /// Prediction interval coverage, in (0, 1).
    pub level: f64,
}

/// Fits `y` (NaN for missing) by `spec`.
pub fn fit(y: &[f64], spec: &Spec) -> Result<Fitted, MlError> {
    assert!(spec.horizon >= 1 && spec.horizon <= MAX_HORIZON);
    assert!(spec.level > 0.0 && spec.level < 1.0);
    let y = crate::season::impute(y);
    if y.iter().any(|v| !v.is_finite()) {
        return Err(MlError::TooFewPoints {
            what: "a forecast".into(),
            need: 1,
            have: 0,
        });
    }
    match spec.method {
        Method::Auto => auto(&y, spec),
        m => {
            let (forecast, in_sample_mae) = run(m, &y, spec, spec.horizon, true)?;
            Ok(Fitted {
                method: m,
                seasons: seasons_of(m, spec),
                in_sample_mae,
                holdout: Vec::new(),
                forecast,
            })
        }
    }
}

fn seasons_of(m: Method, spec: &Spec) -> Vec<usize> {
    match m {
        Method::Ets => Vec::new(),
        Method::SeasonalNaive => spec.seasons.last().copied().into_iter().collect(),
        _ => spec.seasons.clone(),
    }
}

/// Points the holdout of `auto` takes from a series of `n`.
pub fn holdout_len(n: usize, spec: &Spec) -> usize {
    spec.horizon.min(n / 5).max(1)
}

fn auto(y: &[f64], spec: &Spec) -> Result<Fitted, MlError> {
    need(Method::Auto, MIN_ETS_POINTS, y.len())?;
    let hold = holdout_len(y.len(), spec);
    let (train, test) = y.split_at(y.len().saturating_sub(hold));
    let mut scored = Vec::new();
    let mut last_err = None;
    for m in [Method::SeasonalNaive, Method::Ets, Method::Mstl] {
        if m == Method::Mstl && spec.seasons.is_empty() {
            continue;
        }
        match run(m, train, spec, test.len(), false) {
            Ok((f, _)) => {
                let mae = mean_abs(test.iter().zip(&f.point).map(|(a, b)| a - b));
                if mae.is_finite() {
                    scored.push((m, mae));
                }
            }
            Err(e) => last_err = Some(e),
        }
    }
    let best = scored
        .iter()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|b| b.0);
    let Some(best) = best else {
        return Err(last_err.unwrap_or(MlError::TooFewPoints {
            what: "a forecast".into(),
            need: MIN_ETS_POINTS,
            have: y.len(),
        }));
    };
    let mut fitted = fit(
        y,
        &Spec {
            method: best,
            ..spec.clone()
        },
    )?;
    fitted.holdout = scored;
    Ok(fitted)
}

/// The forecast of `m` fitted on `y`, `h` points ahead, and with `in_sample` the mean absolute
/// one-step error of the same fit over `y` (NaN without).
fn run(
    m: Method,
    y: &[f64],
    spec: &Spec,
    h: usize,
    in_sample: bool,
) -> Result<(Forecast, f64), MlError> {
    let z = normal_quantile(0.5 + spec.level / 2.0);
    let (ahead, inside) = match m {
        Method::SeasonalNaive => {
            let season = spec.seasons.last().copied();
            let f = naive::forecast(y, season, h, z)?;
            let mae = if in_sample {
                naive::in_sample_mae(y, season)
            } else {
                f64::NAN
            };
            return Ok((f, mae));
        }
        Method::Ets => {
            need(m, MIN_ETS_POINTS, y.len())?;
            library(m, AutoETS::non_seasonal(), y, h, spec.level, in_sample)?
        }
        Method::Mstl => {
            let longest = spec.seasons.last().copied().unwrap_or(0);
            if longest < 2 {
                return Err(MlError::Fit {
                    method: m.name(),
                    reason: "needs a season (option season)".into(),
                });
            }
            need(m, 2 * longest + 1, y.len())?;
            let trend = AutoETSTrendModel::from(AutoETS::non_seasonal());
            let model = MSTLModel::new(spec.seasons.clone(), trend);
            library(m, model, y, h, spec.level, in_sample)?
        }
        Method::Auto => unreachable!("auto fits its candidates"),
    };
    let mae = inside.map_or(f64::NAN, |p| {
        mean_abs(
            y.iter()
                .zip(&p.point)
                .filter(|(_, p)| p.is_finite())
                .map(|(a, b)| a - b),
        )
    });
    Ok((finish(ahead, y, z), mae))
}

/// One fit of a library model: its forecast `h` ahead and, with `in_sample`, its one-step
/// predictions over `y`.
fn library<F: Fit>(
    m: Method,
    model: F,
    y: &[f64],
    h: usize,
    level: f64,
    in_sample: bool,
) -> Result<(augurs_core::Forecast, Option<augurs_core::Forecast>), MlError> {
    guarded(m, || {
        let fitted = model.fit(y).map_err(|e| e.to_string())?;
        let ahead = fitted.predict(h, level).map_err(|e| e.to_string())?;
        let inside = in_sample
            .then(|| fitted.predict_in_sample(None))
            .transpose()
            .map_err(|e| e.to_string())?;
        Ok((ahead, inside))
    })
}

fn need(m: Method, need: usize, have: usize) -> Result<(), MlError> {
    if have < need {
        return Err(MlError::TooFewPoints {
            what: format!("{} forecasting", m.name()),
            need,
            have,
        });
    }
    Ok(())
}

/// Runs a library fit, turning an error or a panic into an error naming `m`.
fn guarded<T>(m: Method, f: impl FnOnce() -> Result<T, String>) -> Result<T, MlError> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(f)) => Ok(f),
        Ok(Err(reason)) => Err(MlError::Fit {
            method: m.name(),
            reason,
        }),
        Err(_) => Err(MlError::Fit {
            method: m.name(),
            reason: "the fitting library panicked".into(),
        }),
    }
}

/// A library forecast as ours: intervals from it, or from the series' one-step spread when it
/// gave none or gave non-finite ones.
fn finish(f: augurs_core::Forecast, y: &[f64], z: f64) -> Forecast {
    let point: Vec<f64> = f.point.iter().map(|&p| finite_or(p, y)).collect();
    let sd = naive::diff_sd(y, 1);
    let (mut lower, mut upper) = match f.intervals {
        Some(i) => (i.lower, i.upper),
        None => (Vec::new(), Vec::new()),
    };
    for (i, p) in point.iter().enumerate() {
        let w = z * sd * ((i + 1) as f64).sqrt();
        let l = lower
            .get(i)
            .copied()
            .filter(|v| v.is_finite())
            .unwrap_or(p - w);
        let u = upper
            .get(i)
            .copied()
            .filter(|v| v.is_finite())
            .unwrap_or(p + w);
        if i < lower.len() {
            (lower[i], upper[i]) = (l.min(*p), u.max(*p));
        } else {
            lower.push(l.min(*p));
            upper.push(u.max(*p));
        }
    }
    Forecast {
        point,
        lower,
        upper,
    }
}

fn finite_or(p: f64, y: &[f64]) -> f64 {
    if p.is_finite() {
        p
    } else {
        y.last().copied().unwrap_or(0.0)
    }
}

pub(crate) fn mean_abs(e: impl Iterator<Item = f64>) -> f64 {
    let (mut s, mut n) = (0.0, 0usize);
    for v in e {
        s += v.abs();
        n += 1;
    }
    if n == 0 { f64::NAN } else { s / n as f64 }
}

#[cfg(test)]
mod tests;
