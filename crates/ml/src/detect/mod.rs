//! Online anomaly detectors over one series in time order (`anomaly_detect(value, 'nsigma',
//! 'k=3,window=60')`): [`Algorithm`] names one, [`Options`] parses its options, and
//! [`Detector`] scores a series point by point, keeping only its window as state.
//!
//! Every detector compares a point with the points *before* it (its window), so a point is
//! never its own evidence and a burst is flagged from its first point. A point's score is a
//! robust distance from what the window expects (0: expected; larger: stranger) and it is an
//! anomaly when the score exceeds the threshold `k`. Until the window holds `min_points`
//! points (default: a quarter of the window, at least 8) there is no evidence: the score is
//! NaN and nothing is flagged. A window without spread (a constant series) flags any change.
//!
//! | algorithm | score | default `k` |
//! |---|---|---|
//! | `nsigma` | `|x - mean| / std` over the window | 3 |
//! | `mad` | `|x - median| / (1.4826 MAD)` over the window | 3.5 |
//! | `iqr` | distance outside `[Q1, Q3]` in IQRs (0 inside) | 1.5 |

mod window;

use crate::error::MlError;
use window::Window;

/// An ad hoc detection algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    NSigma,
    Mad,
    Iqr,
}

impl Algorithm {
    /// The algorithm named `name` (case-insensitive).
    pub fn parse(name: &str) -> Result<Algorithm, MlError> {
        match name.trim().to_ascii_lowercase().as_str() {
            "nsigma" => Ok(Algorithm::NSigma),
            "mad" => Ok(Algorithm::Mad),
            "iqr" => Ok(Algorithm::Iqr),
            _ => Err(MlError::UnknownAlgorithm(name.to_string())),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Algorithm::NSigma => "nsigma",
            Algorithm::Mad => "mad",
            Algorithm::Iqr => "iqr",
        }
    }

    fn default_k(self) -> f64 {
        match self {
            Algorithm::NSigma => 3.0,
            Algorithm::Mad => 3.5,
            Algorithm::Iqr => 1.5,
        }
    }
}

/// Most points a window holds (a bound on every detector's state).
pub const MAX_WINDOW: usize = 100_000;
/// Points a window holds unless `window` says otherwise.
pub const DEFAULT_WINDOW: usize = 60;

/// A detector's options, parsed from `'k=3,window=60'`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Threshold: a point whose score exceeds it is an anomaly.
    pub k: f64,
    /// Points before the current one that it is compared with.
    pub window: usize,
    /// Points the window must hold before anything is scored.
    pub min_points: usize,
}

const KNOWN: &str = "k, window, min_points";

impl Options {
    /// The defaults of `algo`.
    pub fn defaults(algo: Algorithm) -> Options {
        Options {
            k: algo.default_k(),
            window: DEFAULT_WINDOW,
            min_points: default_min_points(DEFAULT_WINDOW),
        }
    }

    /// Parses `text` (`name=value` pairs separated by commas; empty: the defaults).
    pub fn parse(algo: Algorithm, text: &str) -> Result<Options, MlError> {
        let mut o = Options::defaults(algo);
        let mut min_points = None;
        for pair in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((name, value)) = pair.split_once('=') else {
                return Err(MlError::BadOptions(text.to_string()));
            };
            let (name, value) = (name.trim().to_ascii_lowercase(), value.trim());
            let bad = |reason: &str| MlError::BadOption {
                algorithm: algo.name(),
                option: name.clone(),
                value: value.to_string(),
                reason: reason.to_string(),
            };
            match name.as_str() {
                "k" => {
                    o.k = value.parse().map_err(|_| bad("expected a number"))?;
                    if !(o.k.is_finite() && o.k > 0.0) {
                        return Err(bad("must be a positive number"));
                    }
                }
                "window" => {
                    o.window = value.parse().map_err(|_| bad("expected a whole number"))?;
                    if !(2..=MAX_WINDOW).contains(&o.window) {
                        return Err(bad(&format!("must be between 2 and {MAX_WINDOW}")));
                    }
                }
                "min_points" => {
                    let n: usize = value.parse().map_err(|_| bad("expected a whole number"))?;
                    min_points = Some((n, bad("must be between 2 and the window")));
                }
                _ => {
                    return Err(MlError::UnknownOption {
                        algorithm: algo.name(),
                        option: name,
                        known: KNOWN,
                    });
                }
            }
        }
        o.min_points = match min_points {
            Some((n, _)) if (2..=o.window).contains(&n) => n,
            Some((_, err)) => return Err(err),
            None => default_min_points(o.window),
        };
        Ok(o)
    }
}

fn default_min_points(window: usize) -> usize {
    (window / 4).max(8).min(window)
}

/// A point's verdict.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Verdict {
    /// Distance from what the window expects (NaN: no evidence yet, or a missing value).
    pub score: f64,
    pub anomaly: bool,
}

/// One series' detector: feed its values in time order.
#[derive(Debug, Clone)]
pub struct Detector {
    algo: Algorithm,
    opts: Options,
    window: Window,
}

impl Detector {
    pub fn new(algo: Algorithm, opts: Options) -> Detector {
        Detector {
            algo,
            opts,
            window: Window::new(opts.window),
        }
    }

    /// Scores `x` against the points before it, then takes it into the window. A missing
    /// value (`None`, NaN) scores NaN and leaves the state as it was.
    pub fn step(&mut self, x: Option<f64>) -> Verdict {
        let none = Verdict {
            score: f64::NAN,
            anomaly: false,
        };
        let Some(x) = x.filter(|v| !v.is_nan()) else {
            return none;
        };
        let v = if self.window.len() < self.opts.min_points {
            none
        } else {
            let score = match self.algo {
                Algorithm::NSigma => distance(x - self.window.mean(), self.window.std()),
                Algorithm::Mad => {
                    let m = self.window.quantile(0.5);
                    distance(x - m, 1.4826 * self.window.mad(m))
                }
                Algorithm::Iqr => {
                    let (q1, q3) = (self.window.quantile(0.25), self.window.quantile(0.75));
                    let outside = if x < q1 { q1 - x } else { (x - q3).max(0.0) };
                    distance(outside, q3 - q1)
                }
            };
            Verdict {
                score,
                anomaly: score > self.opts.k,
            }
        };
        self.window.push(x);
        v
    }
}

/// `d` in units of `spread`; a window without spread makes any difference infinite.
fn distance(d: f64, spread: f64) -> f64 {
    let d = d.abs();
    if spread > 0.0 && spread.is_finite() {
        d / spread
    } else if d == 0.0 {
        0.0
    } else {
        f64::INFINITY
    }
}

#[cfg(test)]
mod tests;
