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

/// The longest file-name stem a model's name maps to (file names stay under 255 bytes).
pub const MAX_STEM: usize = 160;

/// The path of version `version` of model `name` (`db.model`). The name is mapped so that
/// it cannot leave `models/`: bytes other than ASCII letters, digits, `_`, `-` and `.` are
/// written `%XX`, and a stem longer than [`MAX_STEM`] is cut and ends with `~` and a hash of
/// the whole name (so two long names still differ).
pub fn model_path(name: &str, version: u64) -> String {
    format!("{MODEL_DIR}/{}.{version:020}.tmdl", file_stem(name))
}

/// A name as one safe file-name component (see [`model_path`]).
pub fn file_stem(name: &str) -> String {
    let mut stem = String::with_capacity(name.len());
    for b in name.bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'-' | b'.' => stem.push(b as char),
            _ => stem.push_str(&format!("%{b:02X}")),
        }
    }
    if stem.len() > MAX_STEM {
        let hash = crc32c::crc32c(name.as_bytes()) as u64
            | (crc32c::crc32c_append(0x5bd1_e995, name.as_bytes()) as u64) << 32;
        stem.truncate(MAX_STEM - 17);
        stem.push_str(&format!("~{hash:016x}"));
    }
    stem
}

#[cfg(test)]
mod path_tests {
    use super::*;

    #[test]
    fn model_names_cannot_leave_the_model_directory() {
        let long = format!("db.{}", "m".repeat(5000));
        let longer = format!("{long}x");
        for (case, name) in [
            ("plain", "db.cpu_model"),
            ("parent directories", "db.../../../../etc/passwd"),
            ("a slash", "db.a/b"),
            ("NUL", "db.a\0b"),
            ("fullwidth dots and solidus", "db.．．／．．／x"),
            ("right-to-left override", "db.\u{202e}gpj.exe"),
            ("very long", long.as_str()),
        ] {
            let p = model_path(name, 7);
            let file = p
                .strip_prefix("models/")
                .unwrap_or_else(|| panic!("{case}: {p}"));
            assert!(!file.contains('/'), "{case}: {p}");
            assert!(file.len() < 255, "{case}: {} bytes", file.len());
            assert!(
                file.bytes().all(|b| b.is_ascii_graphic()),
                "{case}: only printable ASCII: {p}"
            );
            assert!(file.ends_with(".00000000000000000007.tmdl"), "{case}: {p}");
        }
        assert_eq!(
            model_path("db.cpu_model", 1),
            "models/db.cpu_model.00000000000000000001.tmdl"
        );
        assert_ne!(
            file_stem(&long),
            file_stem(&longer),
            "long names stay distinct"
        );
        assert_ne!(
            file_stem("db.a/b"),
            file_stem("db.a%2Fb"),
            "escapes do not collide"
        );
    }
}
