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
//! | `esd` | seasonal hybrid ESD: the residual from the seasonal median (`season` points; 0: the window's median), as a robust z-score against the residual window; an anomaly when above the generalized ESD critical value at `alpha` (default 0.05) for the window's size | — |
//! | `stl` | online robust seasonal-trend decomposition: trend = the window's median, seasonal = per phase an exponential average (`gamma`, default 0.1) of value minus trend, learnt only from normal points; the residual as a robust z-score against the residual window | 3.5 |

mod discord;
pub(crate) mod stats;
mod window;

use crate::error::MlError;
use window::Window;

/// An ad hoc detection algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Algorithm {
    NSigma,
    Mad,
    Iqr,
    Esd,
    Stl,
    Discord,
}

impl Algorithm {
    /// The algorithm named `name` (case-insensitive).
    pub fn parse(name: &str) -> Result<Algorithm, MlError> {
        match name.trim().to_ascii_lowercase().as_str() {
            "nsigma" => Ok(Algorithm::NSigma),
            "mad" => Ok(Algorithm::Mad),
            "iqr" => Ok(Algorithm::Iqr),
            "esd" => Ok(Algorithm::Esd),
            "stl" => Ok(Algorithm::Stl),
            "discord" => Ok(Algorithm::Discord),
            _ => Err(MlError::UnknownAlgorithm(name.to_string())),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Algorithm::NSigma => "nsigma",
            Algorithm::Mad => "mad",
            Algorithm::Iqr => "iqr",
            Algorithm::Esd => "esd",
            Algorithm::Stl => "stl",
            Algorithm::Discord => "discord",
        }
    }

    fn default_k(self) -> f64 {
        match self {
            Algorithm::NSigma => 3.0,
            Algorithm::Mad | Algorithm::Stl => 3.5,
            Algorithm::Discord => 4.0,
            Algorithm::Iqr => 1.5,
            // Unused: the ESD test's critical value is the threshold.
            Algorithm::Esd => f64::INFINITY,
        }
    }

    /// The options it takes.
    fn known(self) -> &'static str {
        match self {
            Algorithm::NSigma | Algorithm::Mad | Algorithm::Iqr => "k, window, min_points",
            Algorithm::Esd => "alpha, window, min_points, season",
            Algorithm::Stl => "k, window, min_points, season, gamma",
            Algorithm::Discord => "k, window, min_points, m",
        }
    }
}

/// Most points a window holds (a bound on every detector's state).
pub const MAX_WINDOW: usize = 100_000;
/// Points a window holds unless `window` says otherwise.
pub const DEFAULT_WINDOW: usize = 60;

/// A detector's options, parsed from `'k=3,window=60'`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Options {
    /// Threshold: a point whose score exceeds it is an anomaly.
    pub k: f64,
    /// Points before the current one that it is compared with.
    pub window: usize,
    /// Points the window must hold before anything is scored.
    pub min_points: usize,
    /// `esd`: significance of the test.
    pub alpha: f64,
    /// `esd`, `stl`: points per season (0: no season).
    pub season: usize,
    /// `stl`: weight of a new point in its phase's seasonal average.
    pub gamma: f64,
    /// `discord`: the subsequence length.
    pub m: usize,
}

impl Options {
    /// The defaults of `algo`.
    pub fn defaults(algo: Algorithm) -> Options {
        let window = default_window(algo);
        Options {
            k: algo.default_k(),
            window,
            min_points: default_min_points(algo, window),
            alpha: 0.05,
            season: 0,
            gamma: 0.1,
            m: DEFAULT_M,
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
            let known = algo.known();
            if !known.split(", ").any(|n| n == name) {
                return Err(MlError::UnknownOption {
                    algorithm: algo.name(),
                    option: name,
                    known,
                });
            }
            match name.as_str() {
                "alpha" => {
                    o.alpha = value.parse().map_err(|_| bad("expected a number"))?;
                    if !(o.alpha > 0.0 && o.alpha < 0.5) {
                        return Err(bad("must be between 0 and 0.5"));
                    }
                }
                "gamma" => {
                    o.gamma = value.parse().map_err(|_| bad("expected a number"))?;
                    if !(o.gamma > 0.0 && o.gamma <= 1.0) {
                        return Err(bad("must be in (0, 1]"));
                    }
                }
                "season" => {
                    o.season = value.parse().map_err(|_| bad("expected a whole number"))?;
                    if o.season == 1 || o.season > MAX_WINDOW {
                        return Err(bad(&format!(
                            "must be 0 (none) or between 2 and {MAX_WINDOW}"
                        )));
                    }
                }
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
                "m" => {
                    o.m = value.parse().map_err(|_| bad("expected a whole number"))?;
                    if !(2..=MAX_M).contains(&o.m) {
                        return Err(bad(&format!("must be between 2 and {MAX_M}")));
                    }
                }
                "min_points" => {
                    let n: usize = value.parse().map_err(|_| bad("expected a whole number"))?;
                    min_points = Some((n, bad("must be between 2 and the window")));
                }
                _ => unreachable!("{name} is known"),
            }
        }
        o.min_points = match min_points {
            Some((n, _)) if (2..=o.window).contains(&n) => n,
            Some((_, err)) => return Err(err),
            None => default_min_points(algo, o.window),
        };
        if algo == Algorithm::Discord && o.window <= o.m {
            return Err(MlError::BadOption {
                algorithm: algo.name(),
                option: "window".into(),
                value: o.window.to_string(),
                reason: format!("must be longer than m ({})", o.m),
            });
        }
        Ok(o)
    }
}

/// `discord`'s default subsequence length, and its longest.
pub const DEFAULT_M: usize = 8;
pub const MAX_M: usize = 1_000;

fn default_window(algo: Algorithm) -> usize {
    match algo {
        Algorithm::Discord => 1_000,
        _ => DEFAULT_WINDOW,
    }
}

fn default_min_points(algo: Algorithm, window: usize) -> usize {
    match algo {
        // Distances, not points: enough to know what a usual neighbour distance is.
        Algorithm::Discord => 50.min(window),
        _ => (window / 4).max(8).min(window),
    }
}

/// A point's verdict.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Verdict {
    /// Distance from what the window expects (NaN: no evidence yet, or a missing value).
    pub score: f64,
    pub anomaly: bool,
}

/// One series' detector: feed its values in time order.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Detector {
    algo: Algorithm,
    opts: Options,
    window: Window,
    /// `esd`, `stl`: the residuals of the points before, as scored.
    resid: Window,
    /// `esd`: per phase, its last values (up to [`SEASONS_KEPT`] seasons); `stl`: per phase,
    /// its seasonal average (one value, NaN until the phase is seen).
    phases: Vec<Window>,
    seasonal: Vec<f64>,
    /// Points seen (present ones), for the phase.
    seen: u64,
    discord: Option<discord::Discord>,
}

/// Seasons of values per phase `esd` keeps for its seasonal median.
pub const SEASONS_KEPT: usize = 8;

impl Detector {
    pub fn new(algo: Algorithm, opts: Options) -> Detector {
        let season = opts.season;
        Detector {
            algo,
            opts,
            window: Window::new(opts.window),
            resid: Window::new(opts.window),
            phases: match algo {
                Algorithm::Esd => (0..season).map(|_| Window::new(SEASONS_KEPT)).collect(),
                _ => Vec::new(),
            },
            seasonal: match algo {
                Algorithm::Stl => vec![f64::NAN; season],
                _ => Vec::new(),
            },
            seen: 0,
            discord: (algo == Algorithm::Discord)
                .then(|| discord::Discord::new(opts.m, opts.window)),
        }
    }

    /// Scores `x` against the points before it, then takes it into the window. A missing
    /// value (`None`, NaN) scores NaN and leaves the state as it was.
    /// The algorithm this detector runs.
    pub fn algorithm(&self) -> Algorithm {
        self.algo
    }

    /// The options it runs with.
    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// Bytes of memory its state holds (an estimate for memory budgets).
    pub fn state_bytes(&self) -> usize {
        let windows = 2 + self.phases.len();
        let discord = self.discord.as_ref().map_or(0, |_| {
            8 * (self.opts.window + self.opts.m) + 16 * discord::DISTANCES_KEPT
        });
        discord
            + std::mem::size_of::<Self>()
            + 16 * (self.opts.window * 2 + self.phases.len() * SEASONS_KEPT)
            + 48 * windows
            + 8 * self.seasonal.len()
    }

    pub fn step(&mut self, x: Option<f64>) -> Verdict {
        let none = Verdict {
            score: f64::NAN,
            anomaly: false,
        };
        let Some(x) = x.filter(|v| !v.is_nan()) else {
            return none;
        };
        if matches!(self.algo, Algorithm::Esd | Algorithm::Stl) {
            return self.step_seasonal(x);
        }
        if let Some(d) = &mut self.discord {
            let score = d.step(x, self.opts.min_points);
            return Verdict {
                score,
                anomaly: score > self.opts.k,
            };
        }
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
                Algorithm::Esd | Algorithm::Stl => unreachable!("scored by step_seasonal"),
                Algorithm::Discord => unreachable!("scored by its discord state"),
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

impl Detector {
    /// `esd` and `stl`: the point's residual from the seasonal expectation, scored against
    /// the residuals before it.
    fn step_seasonal(&mut self, x: f64) -> Verdict {
        let phase = match self.opts.season {
            0 => None,
            m => Some((self.seen % m as u64) as usize),
        };
        self.seen += 1;
        let level = self.window.quantile(0.5);
        let expected = match (self.algo, phase) {
            (Algorithm::Esd, Some(p)) if self.phases[p].len() > 0 => self.phases[p].quantile(0.5),
            (Algorithm::Stl, Some(p)) if !self.seasonal[p].is_nan() => level + self.seasonal[p],
            _ => level,
        };
        let r = if expected.is_nan() { 0.0 } else { x - expected };
        let v = if self.resid.len() < self.opts.min_points {
            Verdict {
                score: f64::NAN,
                anomaly: false,
            }
        } else {
            let m = self.resid.quantile(0.5);
            let score = distance(r - m, 1.4826 * self.resid.mad(m));
            let threshold = match self.algo {
                Algorithm::Esd => stats::esd_critical(self.resid.len() + 1, self.opts.alpha),
                _ => self.opts.k,
            };
            Verdict {
                score,
                anomaly: score > threshold,
            }
        };
        // Learn: the level and residuals always (bounded windows); the seasonal shape only
        // from normal points, so that an anomaly does not become the expectation.
        self.window.push(x);
        self.resid.push(r);
        if let Some(p) = phase {
            match self.algo {
                Algorithm::Esd => self.phases[p].push(x),
                // The level is a season's median only once the window spans two seasons.
                _ if v.anomaly
                    || self.window.len() < (2 * self.opts.season).min(self.opts.window) => {}
                _ => {
                    let d = x - level;
                    let s = &mut self.seasonal[p];
                    *s = if s.is_nan() {
                        d
                    } else {
                        *s + self.opts.gamma * (d - *s)
                    };
                }
            }
        }
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
