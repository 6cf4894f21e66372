//! Tempora's storage engine.
//!
//! Write path: `Engine::write` checks rows against the table schema, routes them to regions
//! (time partition × series-hash bucket) and hands them to the region workers, which group-commit
//! them to their WAL and apply them to the series-once columnar memtables. Flushes turn frozen
//! memtables into Parquet files sorted by (`__primary_key`, `time`) and record them in the
//! manifest; compaction merges each time window into one file; retention drops expired
//! partitions. Reads take immutable snapshots and select series through the inverted index.
//!
//! Invariants that hold across modules:
//! - Acknowledged means durable: a write returns `Ok` only after its WAL commit (sync policy
//!   `Sync` by default) and is visible to reads from then on.
//! - Files are put (atomically, fsynced) before the manifest edit that names them; the edit is
//!   the commit point; files no version names are orphans and are removed at start.
//! - Only a region's worker appends to it; everything readers touch is immutable or locked briefly.
//! - The same (series, time) keeps the newest write, field by field.
//! - Every queue, buffer and budget has a named limit in [`EngineOptions`].

pub mod clock;
mod compaction;
pub mod decoded_cache;
mod delete;
mod engine;
pub mod error;
pub mod field_bound;
mod flush;
mod guided;
pub mod index_cache;
mod latest;
pub mod lvc;
mod maintenance;
pub mod manifest;
pub mod memtable;
pub mod metrics;
pub mod options;
pub mod placement;
mod prewarm;
mod region;
mod replay;
mod retention;
pub mod rg_index;
mod row_select;
pub mod run;
mod scan;
pub mod sst;
pub mod sst_cache;
pub mod store;
mod table;
pub mod tombstone;
mod worker;

pub use compaction::{FileSpan, pick as pick_compaction};
pub use delete::{DeleteRequest, SeriesFilter};
pub use engine::{DirWals, Engine, EngineIo, MemWals, WalFactory, WriteOutcome};
pub use error::{Result, StorageError};
pub use field_bound::{BoundOp, FieldBound};
pub use options::EngineOptions;
pub use scan::{
    RegionScan, ScanPlan, ScanRequest, ScanStats, TagForm, output_schema, output_schema_as,
};
pub use tempora_index::Matcher;
