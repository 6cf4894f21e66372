//! The catalog's record of a model (`CREATE MODEL`): what the query crate needs to show,
//! run and retrain it. The engine stores it in the manifest (`PutModel` / `DropModel` edits)
//! and the trained model in a file of its own (`docs/format/models.md`), through the same
//! file store as the data.
//!
//! Invariants:
//! - A model is named `db.model`, as tables are; dropping a database drops its models.
//! - The file a record names was put, durably, before the edit that names it, and is deleted
//!   only after the edit that stops naming it; model files no record names are orphans,
//!   removed at start.
//! - `definition` and `summary` are the query crate's text; storage never reads them.

use serde::{Deserialize, Serialize};

/// Where a model's training stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ModelStatus {
    /// Training is running (or was, when the server stopped: it restarts at start).
    Training,
    Ready,
    Failed(String),
}

impl ModelStatus {
    pub fn name(&self) -> &'static str {
        match self {
            ModelStatus::Training => "training",
            ModelStatus::Ready => "ready",
            ModelStatus::Failed(_) => "failed",
        }
    }
}

/// One model's catalog entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRecord {
    /// The definition: options and training query (the query crate's encoding).
    pub definition: String,
    pub status: ModelStatus,
    /// The trained model's file, when one was trained (kept while a refresh trains).
    pub file: Option<String>,
    /// When the file's training finished, ns since the epoch.
    pub trained_at_ns: Option<i64>,
    /// How long that training took, ms.
    pub training_ms: u64,
    /// What the training found (the query crate's encoding).
    pub summary: String,
}

/// The directory of model files.
pub const MODEL_DIR: &str = "models";

/// The path of version `version` of model `name` (`db.model`).
pub fn model_path(name: &str, version: u64) -> String {
    format!("{MODEL_DIR}/{name}.{version:020}.tmdl")
}
