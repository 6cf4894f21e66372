//! The crate's one error type: each variant names what was wrong and where.

/// What can go wrong in this crate.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MlError {
    #[error("unknown anomaly detection algorithm {0:?} (known: nsigma, mad, iqr, esd, stl)")]
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
}
