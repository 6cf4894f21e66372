//! Models (`CREATE MODEL`, issue 24): the registry of every database's models, their
//! training, and the state scoring keeps per series.
//!
//! | module | what it holds |
//! |---|---|
//! | [`input`] | a training query's rows as series (time, value and key columns chosen by name and type) |
//! | [`registry`] | the models by name: records in the engine's catalog, trained models loaded from their files, training in the background |
//! | [`kept`] | each series' detector state after the newest point a query scored, and the recent verdicts, so a polling dashboard scores only new points |
//! | [`run`] | the statements: `CREATE`, `DROP`, `ALTER … REFRESH`, and training resumed at start |
//!
//! Invariants:
//! - A model's record is in the engine's catalog (manifest) before its training starts; its
//!   file is put before the record that names it (storage's `catalog::models`).
//! - Training runs on its own threads, never on the async runtime; `DROP MODEL` cancels it,
//!   and a training that finishes after its model was dropped or retrained records nothing
//!   (each training has a generation; only the current one may finish).
//! - While a model retrains (`REFRESH`), queries use the model trained before.

pub mod input;
pub mod kept;
pub mod registry;
pub mod run;

pub use registry::{Loaded, Models};
