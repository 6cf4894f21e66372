//! PromQL's functions of a range vector, as pure functions of one series' samples in one
//! window, and the aggregation helpers that are not plain SQL aggregates.
//!
//! Every function here takes the samples of a window `[start, end]` (ms, both ends included,
//! as in Prometheus 2.x), in time order, stale markers already removed, and gives `None` when
//! Prometheus gives no point (too few samples). Semantics follow Prometheus 2.42
//! (`promql/functions.go`), including its Kahan-compensated sums.
//!
//! | file | functions |
//! |---|---|
//! | [`rate`] | `rate`, `increase`, `delta` (extrapolated), `irate`, `idelta` |
//! | [`over_time`] | `avg|min|max|sum|count|last|present|stddev|stdvar|quantile_over_time`, `changes`, `resets` |
//! | [`regression`] | `deriv`, `predict_linear`, `holt_winters` |
//! | [`quantile`] | `quantile` (of values) and the bucket quantile of `histogram_quantile` |

pub mod over_time;
pub mod quantile;
pub mod rate;
pub mod regression;

/// A function of a range vector.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Hash, Eq)]
pub enum RangeFn {
    Rate,
    Increase,
    Delta,
    Irate,
    Idelta,
    AvgOverTime,
    MinOverTime,
    MaxOverTime,
    SumOverTime,
    CountOverTime,
    LastOverTime,
    PresentOverTime,
    StddevOverTime,
    StdvarOverTime,
    /// Its φ is the window's first argument.
    QuantileOverTime,
    Changes,
    Resets,
    Deriv,
    /// Its horizon (seconds) is the window's first argument.
    PredictLinear,
    /// Smoothing and trend factors are the window's arguments.
    HoltWinters,
}

impl RangeFn {
    /// The function of a PromQL name.
    pub fn of(name: &str) -> Option<RangeFn> {
        use RangeFn::*;
        Some(match name {
            "rate" => Rate,
            "increase" => Increase,
            "delta" => Delta,
            "irate" => Irate,
            "idelta" => Idelta,
            "avg_over_time" => AvgOverTime,
            "min_over_time" => MinOverTime,
            "max_over_time" => MaxOverTime,
            "sum_over_time" => SumOverTime,
            "count_over_time" => CountOverTime,
            "last_over_time" => LastOverTime,
            "present_over_time" => PresentOverTime,
            "stddev_over_time" => StddevOverTime,
            "stdvar_over_time" => StdvarOverTime,
            "quantile_over_time" => QuantileOverTime,
            "changes" => Changes,
            "resets" => Resets,
            "deriv" => Deriv,
            "predict_linear" => PredictLinear,
            "holt_winters" => HoltWinters,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        use RangeFn::*;
        match self {
            Rate => "rate",
            Increase => "increase",
            Delta => "delta",
            Irate => "irate",
            Idelta => "idelta",
            AvgOverTime => "avg_over_time",
            MinOverTime => "min_over_time",
            MaxOverTime => "max_over_time",
            SumOverTime => "sum_over_time",
            CountOverTime => "count_over_time",
            LastOverTime => "last_over_time",
            PresentOverTime => "present_over_time",
            StddevOverTime => "stddev_over_time",
            StdvarOverTime => "stdvar_over_time",
            QuantileOverTime => "quantile_over_time",
            Changes => "changes",
            Resets => "resets",
            Deriv => "deriv",
            PredictLinear => "predict_linear",
            HoltWinters => "holt_winters",
        }
    }

    /// Whether the result keeps the series' metric name (only `last_over_time` does).
    pub fn keeps_name(self) -> bool {
        self == RangeFn::LastOverTime
    }
}

/// One window of one series: its samples and its bounds (ms), and the evaluation time.
#[derive(Debug, Clone, Copy)]
pub struct Window<'a> {
    pub times: &'a [i64],
    pub values: &'a [f64],
    /// `t − offset − range`.
    pub start: i64,
    /// `t − offset`.
    pub end: i64,
    /// The step's time `t` (`predict_linear` regresses against it).
    pub at: i64,
    /// The range in ms (`rate` divides by it).
    pub range: i64,
}

/// `f` over one window; `args` are the function's numeric arguments in order (φ for
/// `quantile_over_time`, the horizon of `predict_linear`, the factors of `holt_winters`).
pub fn eval(f: RangeFn, w: &Window, args: &[f64]) -> Option<f64> {
    use RangeFn::*;
    if w.values.is_empty() {
        return None;
    }
    let arg = |i: usize| args.get(i).copied().unwrap_or(f64::NAN);
    match f {
        Rate => rate::extrapolated(w, true, true),
        Increase => rate::extrapolated(w, true, false),
        Delta => rate::extrapolated(w, false, false),
        Irate => rate::instant(w, true),
        Idelta => rate::instant(w, false),
        AvgOverTime => Some(over_time::avg(w.values)),
        MinOverTime => Some(over_time::min(w.values)),
        MaxOverTime => Some(over_time::max(w.values)),
        SumOverTime => Some(over_time::sum(w.values)),
        CountOverTime => Some(w.values.len() as f64),
        LastOverTime => w.values.last().copied(),
        PresentOverTime => Some(1.0),
        StddevOverTime => Some(over_time::stdvar(w.values).sqrt()),
        StdvarOverTime => Some(over_time::stdvar(w.values)),
        QuantileOverTime => Some(quantile::quantile(arg(0), &mut w.values.to_vec())),
        Changes => Some(over_time::changes(w.values)),
        Resets => Some(over_time::resets(w.values)),
        Deriv => regression::deriv(w),
        PredictLinear => regression::predict_linear(w, arg(0)),
        HoltWinters => regression::holt_winters(w.values, arg(0), arg(1)),
    }
}

/// Kahan–Neumaier summation step: adds `inc` to `(sum, c)`.
pub fn kahan_inc(inc: f64, sum: f64, c: f64) -> (f64, f64) {
    let t = sum + inc;
    let c = if sum.abs() >= inc.abs() {
        c + ((sum - t) + inc)
    } else {
        c + ((inc - t) + sum)
    };
    (t, c)
}
