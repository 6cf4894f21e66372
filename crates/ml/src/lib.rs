//! Tempora's machine learning over time series (issue 24): the pure core, with no I/O and no
//! SQL. The query crate plans `anomaly_detect`, `anomaly_score`, `forecast` and `CREATE MODEL`
//! onto these functions; storage keeps their state.
//!
//! | module | what it holds |
//! |---|---|
//! | [`detect`] | online anomaly detectors over one series in time order: `nsigma`, `mad`, `iqr`, `esd`, `stl`, their options, and their kept state (the distribution functions they need in `detect::stats`) |
//! | [`forecast`] | forecasting one series: seasonal naive, AutoETS, MSTL, `auto` by holdout error |
//! | [`season`] | autocorrelation, season detection, filling missing values |
//! | [`model`] | a model: its options, one fitted detector or forecast per series, training on every core, and its file format |
//! | [`error`] | the crate's error type |
//!
//! Invariants:
//! - A detector sees one series' values in time order, one at a time ([`detect::Detector::step`]),
//!   and keeps only bounded state (its window); scoring the next point never rereads old ones,
//!   so a dashboard polling the last minutes scores only its new points.
//! - A missing value (NaN or NULL) is scored as NaN, is not an anomaly and does not change the
//!   state.
//! - Options are parsed once, by name, and every unknown or out-of-range option is an error
//!   naming it.

pub mod detect;
pub mod error;
pub mod forecast;
pub mod model;
pub mod season;

pub use error::MlError;
