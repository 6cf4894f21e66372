//! Training one series: its step, its seasons in points, and either a detector warmed on its
//! rows (`auto`: chosen among candidates by how few training points each flags) or a
//! forecast from its last row.
//!
//! Invariants:
//! - A series' rows are in time order; its step is the median gap between rows.
//! - `auto` detection considers, for a series with a season (given or detected), `stl` at
//!   that season and `discord` (subsequence shapes), and for one without, `mad` and
//!   `discord`; the candidate flagging the fewest training points wins (ties: the earlier). The winner's state after the last training point is
//!   kept, so scoring continues from there.

use serde::{Deserialize, Serialize};

use super::spec::{ModelSpec, Season, Task};
use crate::detect::{Algorithm, DEFAULT_WINDOW, Detector, MAX_WINDOW, Options};
use crate::error::MlError;
use crate::forecast::{self, Fitted, Spec};
use crate::season;

/// One series' training rows, in time order (NaN for a NULL value).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SeriesInput {
    pub times: Vec<i64>,
    pub values: Vec<f64>,
}

/// One series' fitted model.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum SeriesModel {
    Detect(Box<DetectModel>),
    Forecast(ForecastModel),
}

impl PartialEq for SeriesModel {
    fn eq(&self, other: &Self) -> bool {
        // Detector state has no equality of its own; the encoded form stands for it.
        super::file::body(self).ok() == super::file::body(other).ok()
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DetectModel {
    /// The detector after the last training point.
    pub detector: Detector,
    pub season: usize,
    pub last_time: i64,
    pub points: usize,
    /// Training points the detector flagged.
    pub flagged: usize,
    /// `auto`: each candidate's share of training points flagged.
    pub candidates: Vec<(Algorithm, f64)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForecastModel {
    pub fitted: Fitted,
    pub step_ns: i64,
    pub last_time: i64,
    pub points: usize,
}

impl SeriesModel {
    pub fn algorithm(&self) -> &'static str {
        match self {
            SeriesModel::Detect(d) => d.detector.algorithm().name(),
            SeriesModel::Forecast(f) => f.fitted.method.name(),
        }
    }

    /// The parameters used, as text (`k=3.5, window=60, season=24`).
    pub fn parameters(&self) -> String {
        match self {
            SeriesModel::Detect(d) => {
                let o = d.detector.options();
                let mut s = format!("window={}, min_points={}", o.window, o.min_points);
                match d.detector.algorithm() {
                    Algorithm::Esd => s += &format!(", alpha={}", o.alpha),
                    _ => s = format!("k={}, {s}", o.k),
                }
                if o.season > 0 {
                    s += &format!(", season={}", o.season);
                }
                if d.detector.algorithm() == Algorithm::Discord {
                    s += &format!(", m={}", o.m);
                }
                s
            }
            SeriesModel::Forecast(f) => {
                let seasons: Vec<String> = f.fitted.seasons.iter().map(|s| s.to_string()).collect();
                format!(
                    "step={}s, seasons=[{}], horizon={}",
                    f.step_ns as f64 / 1e9,
                    seasons.join(","),
                    f.fitted.forecast.point.len()
                )
            }
        }
    }

    /// Detection: the share of training points flagged; forecasting: the mean absolute
    /// one-step error in sample.
    pub fn in_sample_error(&self) -> f64 {
        match self {
            SeriesModel::Detect(d) => d.flagged as f64 / d.points.max(1) as f64,
            SeriesModel::Forecast(f) => f.fitted.in_sample_mae,
        }
    }

    pub fn points(&self) -> usize {
        match self {
            SeriesModel::Detect(d) => d.points,
            SeriesModel::Forecast(f) => f.points,
        }
    }

    /// Bytes of memory it holds (an estimate).
    pub fn bytes(&self) -> usize {
        match self {
            SeriesModel::Detect(d) => d.detector.state_bytes() + 64,
            SeriesModel::Forecast(f) => 24 * f.fitted.forecast.point.len() + 128,
        }
    }
}

/// The median gap between rows (1 ns when there is one row or none).
pub fn step(times: &[i64]) -> i64 {
    let mut gaps: Vec<i64> = times
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|g| *g > 0)
        .collect();
    if gaps.is_empty() {
        return 1;
    }
    let mid = gaps.len() / 2;
    *gaps.select_nth_unstable(mid).1
}

/// A series' seasons in points, shortest first, or the one detected when none is given.
pub fn seasons(given: &[Season], step_ns: i64, y: &[f64]) -> Result<Vec<usize>, MlError> {
    if given.is_empty() {
        return Ok(season::detect(&season::impute(y)).into_iter().collect());
    }
    let mut out = Vec::new();
    for s in given {
        let p = match *s {
            Season::Points(p) => p,
            Season::Nanos(ns) => ((ns as f64) / (step_ns as f64)).round() as usize,
        };
        if !(2..=MAX_WINDOW).contains(&p) {
            return Err(MlError::ModelOption {
                option: "season".into(),
                reason: format!(
                    "{p} points at this series' step of {}s: expected 2 to {MAX_WINDOW}",
                    step_ns as f64 / 1e9
                ),
            });
        }
        out.push(p);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Trains one series by `spec`.
pub fn train(spec: &ModelSpec, s: &SeriesInput) -> Result<SeriesModel, MlError> {
    assert_eq!(s.times.len(), s.values.len());
    debug_assert!(
        s.times.windows(2).all(|w| w[0] <= w[1]),
        "rows in time order"
    );
    let present = s.values.iter().filter(|v| !v.is_nan()).count();
    let step_ns = step(&s.times);
    let seasons = seasons(&spec.seasons, step_ns, &s.values)?;
    let last_time = s.times.last().copied().unwrap_or(0);
    match spec.task {
        Task::AnomalyDetection => {
            let d = detect(
                spec,
                &s.values,
                present,
                seasons.last().copied().unwrap_or(0),
            )?;
            Ok(SeriesModel::Detect(Box::new(DetectModel {
                last_time,
                ..d
            })))
        }
        Task::Forecasting => {
            let longest = seasons.last().copied().unwrap_or(0);
            let horizon = spec
                .horizon
                .unwrap_or((2 * longest).max(48))
                .min(forecast::MAX_HORIZON);
            let fitted = forecast::fit(
                &s.values,
                &Spec {
                    method: spec.method,
                    seasons,
                    horizon,
                    level: spec.level,
                },
            )?;
            Ok(SeriesModel::Forecast(ForecastModel {
                fitted,
                step_ns,
                last_time,
                points: s.values.len(),
            }))
        }
    }
}

/// The detector a series no model trained is scored with: `mad` with the model's window.
pub fn default_detector(spec: &ModelSpec) -> Detector {
    let window = Options::parse(Algorithm::Mad, &spec.detector_options)
        .map(|o| o.window)
        .unwrap_or(DEFAULT_WINDOW);
    Detector::new(
        Algorithm::Mad,
        Options {
            window,
            ..Options::parse(Algorithm::Mad, &format!("window={window}")).expect("a valid window")
        },
    )
}

fn detect(
    spec: &ModelSpec,
    y: &[f64],
    present: usize,
    season: usize,
) -> Result<DetectModel, MlError> {
    let candidates: Vec<Detector> = match spec.detector {
        Some(a) => {
            let mut text = spec.detector_options.clone();
            if matches!(a, Algorithm::Esd | Algorithm::Stl) && season >= 2 {
                text = join(&text, &format!("season={season}"));
            }
            vec![Detector::new(a, Options::parse(a, &text)?)]
        }
        None => auto_candidates(&spec.detector_options, season)?,
    };
    let need = candidates[0].options().min_points + 1;
    if present < need {
        return Err(MlError::TooFewPoints {
            what: "anomaly detection training".into(),
            need,
            have: present,
        });
    }
    let mut best: Option<(Detector, usize)> = None;
    let mut shares = Vec::new();
    for mut d in candidates {
        let flagged = y.iter().filter(|v| d.step(Some(**v)).anomaly).count();
        shares.push((d.algorithm(), flagged as f64 / y.len() as f64));
        if best.as_ref().is_none_or(|b| flagged < b.1) {
            best = Some((d, flagged));
        }
    }
    let (detector, flagged) = best.expect("at least one candidate");
    Ok(DetectModel {
        detector,
        season,
        last_time: 0,
        points: y.len(),
        flagged,
        candidates: if spec.detector.is_none() {
            shares
        } else {
            Vec::new()
        },
    })
}

/// `auto`'s candidates: with a season `s`, `stl` at that season (`k=5`) and `discord` with
/// subsequences of `s / 12` points (8 to 64); without, `mad` and `discord` with 8-point
/// subsequences. The model's `window` applies to `mad` and `stl`.
fn auto_candidates(window: &str, season: usize) -> Result<Vec<Detector>, MlError> {
    let value = if season >= 2 {
        vec![(
            Algorithm::Stl,
            join(window, &format!("season={season},k=5")),
        )]
    } else {
        vec![(Algorithm::Mad, window.to_string())]
    };
    let m = if season >= 2 {
        (season / 12).clamp(8, 64)
    } else {
        8
    };
    value
        .into_iter()
        .chain([(Algorithm::Discord, format!("m={m}"))])
        .map(|(a, text)| Options::parse(a, &text).map(|o| Detector::new(a, o)))
        .collect()
}

fn join(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_string()
    } else {
        format!("{a},{b}")
    }
}
