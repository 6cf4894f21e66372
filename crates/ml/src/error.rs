//! The crate's one error type: each variant names what was wrong and where.

/// What can go wrong in this crate.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MlError {
    #[error(
        "unknown anomaly detection algorithm {0:?} (known: nsigma, mad, iqr, esd, stl, discord)"
    )]
    UnknownAlgorithm(String),
    #[error("unknown option {option:?} for {algorithm} (known: {known})")]
    UnknownOption {
        algorithm: &'static str,
        option: String,
        known: &'static str,
    },
    #[error("option {option} = {value:?} of {algorithm}: {reason}")]
    BadOption {
        algorithm: &'static str,
        option: String,
        value: String,
        reason: String,
    },
    #[error("options {0:?}: expected name=value pairs separated by commas")]
    BadOptions(String),
    #[error("unknown forecasting algorithm {0:?} (known: auto, seasonal_naive, ets, mstl)")]
    UnknownForecastMethod(String),
    #[error("{what} needs at least {need} points, the series has {have}")]
    TooFewPoints {
        what: String,
        need: usize,
        have: usize,
    },
    #[error("{method} could not fit the series: {reason}")]
    Fit {
        method: &'static str,
        reason: String,
    },
    #[error("model option {option}: {reason}")]
    ModelOption { option: String, reason: String },
    #[error("model file {path}: {reason}")]
    CorruptModel { path: String, reason: String },
    #[error(
        "the model needs {need} bytes of memory, over its budget of {budget} bytes (server setting model_memory_bytes)"
    )]
    OverBudget { need: usize, budget: usize },
    #[error("no series could be trained ({series} tried): {reason}")]
    NothingTrained { series: usize, reason: String },
    #[error("training was cancelled")]
    Cancelled,
}
