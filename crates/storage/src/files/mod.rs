//! Durable files and their formats: the file store every file goes through, the manifest
//! that says which files make up the database, and the Parquet data files with what reads
//! them selectively.
//!
//! - [`store`]: the synchronous shell around `object_store` (local disk, memory, and
//!   fault-injecting versions for tests).
//! - [`manifest`]: a log of edits plus checkpoints (`docs/format/manifest.md`).
//! - `sst`: a run written as Parquet and read back with pruning (`docs/format/data-files.md`);
//!   `rg_index` picks row groups by time and key bounds copied from the footer once,
//!   `row_select` the rows of a decoded row group, `guided` the searches both use;
//!   [`footer_guard`] bounds a footer's Thrift before the Parquet crate decodes it.
//!
//! Invariants:
//! - A `put` is atomic and durable when it returns (temporary name, fsync, rename, directory
//!   fsync on local disk).
//! - A data or index file never changes once written: flushes and compactions write new paths
//!   (file ids only grow), so caches of file contents are never stale.
//! - Files are put before the manifest edit that names them, and deleted only after the edit
//!   that drops them; files no version names are orphans, removed at start.

pub mod float_codec;
pub mod footer_guard;
pub mod footer_schema;
pub(crate) mod guided;
pub mod manifest;
pub(crate) mod rg_index;
pub(crate) mod row_select;
pub(crate) mod sst;
pub(crate) mod sst_writer;
pub mod store;

pub use manifest::Manifest;
pub use store::{FaultPlan, FileStore};
