//! A model: a training query's rows cut into series, one fitted detector or forecast per
//! series (`CREATE MODEL name WITH (task = ..., algorithm = ...) AS SELECT ...`).
//!
//! | module | what it holds |
//! |---|---|
//! | [`spec`] | the model's options, read and checked by name |
//! | [`series`] | training one series: `auto`'s choice, the fitted detector or forecast |
//! | [`train`] | training every series on every core, cancellable, within a memory budget |
//! | [`file`] | the model file: a framed, checksummed encoding (`docs/format/models.md`) |
//!
//! Invariants:
//! - A series is keyed by the values of the training query's non-time, non-value columns, in
//!   the query's column order ([`SeriesKey`]); each is trained alone, on its rows in time
//!   order.
//! - A series that cannot be trained (too few points, a fit that fails) does not fail the
//!   model: it is recorded with its reason ([`TrainedModel::failed`]); a model none of whose
//!   series trained fails.

pub mod file;
pub mod series;
pub mod spec;
pub mod train;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use series::{SeriesInput, SeriesModel};
pub use spec::{ModelSpec, Task};
pub use train::{Budget, Input, Progress, train_all};

/// A series' key: its values of the key columns, in order (None for NULL).
pub type SeriesKey = Vec<Option<String>>;

/// Every series' fitted model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainedModel {
    pub spec: ModelSpec,
    /// The key columns' names, in order.
    pub key_columns: Vec<String>,
    /// The value column's name.
    pub value_column: String,
    pub series: BTreeMap<SeriesKey, SeriesModel>,
    /// Series that could not be trained, with the reason.
    pub failed: BTreeMap<SeriesKey, String>,
    /// Training rows read.
    pub rows: u64,
}

impl TrainedModel {
    /// The algorithms chosen, with the number of series each (`mad x 3, stl x 1`).
    pub fn chosen(&self) -> BTreeMap<&'static str, usize> {
        let mut out = BTreeMap::new();
        for m in self.series.values() {
            *out.entry(m.algorithm()).or_insert(0) += 1;
        }
        out
    }
}
