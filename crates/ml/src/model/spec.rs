//! A model's options (`WITH (task = 'anomaly_detection', algorithm = 'auto', season = '1d')`),
//! read once and checked by name.
//!
//! | option | task | meaning (default) |
//! |---|---|---|
//! | `task` | both | `anomaly_detection` or `forecasting` (required) |
//! | `algorithm` | both | detection: `auto`, `nsigma`, `mad`, `iqr`, `esd`, `stl`, `discord`; forecasting: `auto`, `seasonal_naive`, `ets`, `mstl` (`auto`) |
//! | `season` | both | seasons as durations (`1d`, `30m,1w`) or points (`48`); none: detected per series |
//! | `value` | both | the value column, when the query gives more than one numeric column |
//! | `horizon` | forecasting | points forecast and kept per series (2 × the longest season, at least 48) |
//! | `level` | forecasting | prediction interval coverage (0.95) |
//! | `k`, `window`, `min_points`, `alpha`, `gamma`, `m` | detection | the detector's options (`crate::detect::Options`); with `auto`, `window` only |
//! | `keep` | detection | scored points kept per series for polling dashboards (256; about 8 KiB per series polled) |

use serde::{Deserialize, Serialize};

use crate::detect::{Algorithm, MAX_WINDOW, Options};
use crate::error::MlError;
use crate::forecast::{MAX_HORIZON, Method};

/// What a model does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Task {
    AnomalyDetection,
    Forecasting,
}

impl Task {
    pub fn name(self) -> &'static str {
        match self {
            Task::AnomalyDetection => "anomaly_detection",
            Task::Forecasting => "forecasting",
        }
    }
}

/// A season as written: a duration (turned into points by each series' step) or points.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Season {
    Nanos(i64),
    Points(usize),
}

/// A model's options, checked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelSpec {
    pub task: Task,
    /// Detection: None for `auto`.
    pub detector: Option<Algorithm>,
    /// Detection: the detector options as written (`k=3,window=60`), checked against the
    /// algorithm (with `auto`: `window` only).
    pub detector_options: String,
    /// Forecasting: the method (`Auto` for `auto`).
    pub method: Method,
    pub seasons: Vec<Season>,
    pub value: Option<String>,
    /// Forecasting: points kept ahead; None for the default.
    pub horizon: Option<usize>,
    pub level: f64,
    pub keep: usize,
}

/// Longest kept history of scored points per series.
pub const MAX_KEEP: usize = 1_000_000;
const DETECTOR_OPTIONS: [&str; 6] = ["k", "window", "min_points", "alpha", "gamma", "m"];
const KNOWN: &str =
    "task, algorithm, season, value, horizon, level, keep, k, window, min_points, alpha, gamma, m";

fn bad(option: &str, reason: impl Into<String>) -> MlError {
    MlError::ModelOption {
        option: option.to_string(),
        reason: reason.into(),
    }
}

impl ModelSpec {
    /// Reads `WITH (...)` options (keys lower-case).
    pub fn from_options(options: &[(String, String)]) -> Result<ModelSpec, MlError> {
        let get = |k: &str| {
            options
                .iter()
                .rev()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.trim())
        };
        for (k, _) in options {
            if !KNOWN.split(", ").any(|n| n == k) {
                return Err(bad(k, format!("unknown option (known: {KNOWN})")));
            }
        }
        let task = match get("task").map(str::to_ascii_lowercase).as_deref() {
            Some("anomaly_detection" | "anomaly") => Task::AnomalyDetection,
            Some("forecasting" | "forecast") => Task::Forecasting,
            Some(other) => {
                return Err(bad(
                    "task",
                    format!("{other:?} is not anomaly_detection or forecasting"),
                ));
            }
            None => {
                return Err(bad(
                    "task",
                    "required: 'anomaly_detection' or 'forecasting'",
                ));
            }
        };
        let algorithm = get("algorithm").unwrap_or("auto").to_ascii_lowercase();
        let mut spec = ModelSpec {
            task,
            detector: None,
            detector_options: String::new(),
            method: Method::Auto,
            seasons: match get("season") {
                Some(s) => parse_seasons(s)?,
                None => Vec::new(),
            },
            value: get("value").map(str::to_string),
            horizon: None,
            level: 0.95,
            keep: 256,
        };
        let detector_opts: Vec<String> = options
            .iter()
            .filter(|(k, _)| DETECTOR_OPTIONS.contains(&k.as_str()))
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        match task {
            Task::AnomalyDetection => {
                for k in ["horizon", "level"] {
                    if get(k).is_some() {
                        return Err(bad(k, "applies to forecasting models"));
                    }
                }
                spec.detector_options = detector_opts.join(",");
                if algorithm != "auto" {
                    let a = Algorithm::parse(&algorithm)?;
                    Options::parse(a, &spec.detector_options)?;
                    spec.detector = Some(a);
                } else if let Some(o) = detector_opts.iter().find(|o| !o.starts_with("window=")) {
                    return Err(bad(
                        o.split('=').next().unwrap_or(o),
                        "algorithm 'auto' chooses its own; only window applies",
                    ));
                } else {
                    Options::parse(Algorithm::Mad, &spec.detector_options)?;
                }
                if let Some(k) = get("keep") {
                    spec.keep = k
                        .parse()
                        .ok()
                        .filter(|n| (1..=MAX_KEEP).contains(n))
                        .ok_or_else(|| bad("keep", format!("expected 1 to {MAX_KEEP}")))?;
                }
            }
            Task::Forecasting => {
                if let Some(o) = detector_opts.first() {
                    return Err(bad(
                        o.split('=').next().unwrap_or(o),
                        "applies to anomaly detection models",
                    ));
                }
                if get("keep").is_some() {
                    return Err(bad("keep", "applies to anomaly detection models"));
                }
                spec.method = Method::parse(&algorithm)?;
                if let Some(h) = get("horizon") {
                    spec.horizon = Some(
                        h.parse()
                            .ok()
                            .filter(|n| (1..=MAX_HORIZON).contains(n))
                            .ok_or_else(|| {
                                bad("horizon", format!("expected 1 to {MAX_HORIZON} points"))
                            })?,
                    );
                }
                if let Some(l) = get("level") {
                    spec.level = l
                        .parse()
                        .ok()
                        .filter(|l: &f64| *l > 0.0 && *l < 1.0)
                        .ok_or_else(|| bad("level", "expected a number between 0 and 1"))?;
                }
            }
        }
        Ok(spec)
    }

    /// The algorithm as written, for SHOW MODELS.
    pub fn algorithm_name(&self) -> &'static str {
        match self.task {
            Task::AnomalyDetection => self.detector.map_or("auto", Algorithm::name),
            Task::Forecasting => self.method.name(),
        }
    }
}

/// `1d`, `30m,1w`, `48`: seasons, each a duration or a count of points.
pub fn parse_seasons(text: &str) -> Result<Vec<Season>, MlError> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim) {
        let s = if let Ok(n) = part.parse::<usize>() {
            if !(2..=MAX_WINDOW).contains(&n) {
                return Err(bad(
                    "season",
                    format!("{n} points: expected 2 to {MAX_WINDOW}"),
                ));
            }
            Season::Points(n)
        } else {
            Season::Nanos(parse_duration(part).ok_or_else(|| {
                bad(
                    "season",
                    format!("{part:?} is neither a duration (30m, 1d, 1w) nor a count of points"),
                )
            })?)
        };
        out.push(s);
    }
    if out.len() > 4 {
        return Err(bad("season", "at most 4 seasons"));
    }
    Ok(out)
}

/// `90s`, `30m`, `1h`, `1d`, `1w` in nanoseconds.
pub fn parse_duration(text: &str) -> Option<i64> {
    let t = text.trim().to_ascii_lowercase();
    let at = t.find(|c: char| !c.is_ascii_digit())?;
    let (n, unit) = t.split_at(at);
    let n: i64 = n.parse().ok().filter(|&n| n > 0)?;
    let unit_ns: i64 = match unit.trim() {
        "s" | "sec" | "second" | "seconds" => 1_000_000_000,
        "m" | "min" | "minute" | "minutes" => 60_000_000_000,
        "h" | "hour" | "hours" => 3_600_000_000_000,
        "d" | "day" | "days" => 86_400_000_000_000,
        "w" | "week" | "weeks" => 604_800_000_000_000,
        _ => return None,
    };
    n.checked_mul(unit_ns)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn the_issue_spellings_read() {
        let a = ModelSpec::from_options(&opts(&[
            ("task", "anomaly_detection"),
            ("algorithm", "auto"),
        ]))
        .unwrap();
        assert_eq!(
            (a.task, a.detector, a.keep),
            (Task::AnomalyDetection, None, 256)
        );
        let f = ModelSpec::from_options(&opts(&[
            ("task", "forecasting"),
            ("algorithm", "auto"),
            ("season", "1d"),
        ]))
        .unwrap();
        assert_eq!(f.seasons, vec![Season::Nanos(86_400_000_000_000)]);
        assert_eq!(f.method, Method::Auto);
        let m = ModelSpec::from_options(&opts(&[
            ("task", "anomaly"),
            ("algorithm", "NSIGMA"),
            ("k", "4"),
        ]))
        .unwrap();
        assert_eq!(
            (m.detector, m.detector_options.as_str()),
            (Some(Algorithm::NSigma), "k=4")
        );
    }

    #[test]
    fn refusals_name_the_option() {
        let cases: &[(&[(&str, &str)], &str)] = &[
            (&[], "task"),
            (&[("task", "clustering")], "clustering"),
            (
                &[("task", "forecasting"), ("algorithm", "prophet")],
                "prophet",
            ),
            (
                &[("task", "anomaly_detection"), ("algorithm", "lstm")],
                "lstm",
            ),
            (
                &[("task", "anomaly_detection"), ("colour", "red")],
                "colour",
            ),
            (&[("task", "anomaly_detection"), ("k", "3")], "auto"),
            (
                &[
                    ("task", "anomaly_detection"),
                    ("algorithm", "mad"),
                    ("alpha", "0.1"),
                ],
                "alpha",
            ),
            (
                &[("task", "anomaly_detection"), ("horizon", "3")],
                "horizon",
            ),
            (&[("task", "forecasting"), ("k", "3")], "k"),
            (&[("task", "forecasting"), ("horizon", "0")], "horizon"),
            (&[("task", "forecasting"), ("level", "95")], "level"),
            (&[("task", "forecasting"), ("season", "1x")], "1x"),
            (&[("task", "forecasting"), ("season", "1")], "season"),
        ];
        for (o, word) in cases {
            let e = ModelSpec::from_options(&opts(o)).unwrap_err().to_string();
            assert!(e.contains(word), "{o:?}: {e}");
        }
    }

    #[test]
    fn durations_and_points() {
        assert_eq!(parse_duration("30m"), Some(1_800_000_000_000));
        assert_eq!(parse_duration("0s"), None);
        assert_eq!(
            parse_seasons("48, 1w").unwrap(),
            vec![Season::Points(48), Season::Nanos(604_800_000_000_000)]
        );
    }
}
