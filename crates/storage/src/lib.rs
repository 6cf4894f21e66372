//! Tempora's storage engine.
//!
//! Write path: `Engine::write` checks rows against the table schema, routes them to regions
//! (time partition × series-hash bucket) and hands them to the region workers, which group-commit
//! them to their WAL and apply them to the series-once columnar memtables. Flushes turn frozen
//! memtables into Parquet files sorted by (`__primary_key`, `time`) and record them in the
//! manifest; compaction merges each time window into one file; retention drops expired
//! partitions. Reads take immutable snapshots and select series through the inverted index.
//!
//! Layout (each folder's `mod.rs` states its invariants):
//!
//! | module | what it holds |
//! |---|---|
//! | [`engine`] | the [`Engine`] handle: opens, wires the parts below, owns the threads |
//! | [`catalog`] | what exists: databases, tables and their regions (memtable, files, tombstones, index), names (`db.table`), the manifest handle, sequence numbers |
//! | [`write`](mod@write) | the write path: region workers and group commit, memtables, WAL records and replay, placement, the memtable budget |
//! | [`read`] | the read side and the documented read API: scans, sorted runs, latest values, the caches |
//! | [`maintenance`] | flush, compaction, retention and drops, deletes and tombstones |
//! | [`files`] | durable files: the file store, the manifest format, Parquet data files and their row selection |
//! | [`rollup`] | pre-downsampled aggregates per (series, bucket): computed as files are written, merged and read for queries |
//! | [`dense`] | dense tables (issue 25, in progress): fixed-interval series at computed offsets in sparse block files |
//!
//! Nothing below `engine` sees the engine: it builds narrow handles (the catalog's `Catalog`
//! of tables, manifest and sequence numbers; a memtable `Budget`; a region `Placement`; a
//! `Reader` with the file caches; a `Flusher`, a `Compactor`, a `Dropper`) and gives each path
//! only those it needs. Plain data types cross folders freely: a region is made of a memtable
//! (`write`), a last-value cache (`read`) and tombstones (`maintenance`); runs and file
//! metadata are read and written everywhere.
//!
//! Invariants that hold across modules:
//! - Acknowledged means durable: a write returns `Ok` only after its WAL commit (sync policy
//!   `Sync` by default) and is visible to reads from then on.
//! - Files are put (atomically, fsynced) before the manifest edit that names them; the edit is
//!   the commit point; files no version names are orphans and are removed at start.
//! - Only a region's worker appends to it; everything readers touch is immutable or locked briefly.
//! - The same (series, time) keeps the newest write, field by field.
//! - Every queue, buffer and budget has a named limit in [`EngineOptions`].

pub mod catalog;
pub mod check;
pub mod clock;
pub mod dense;
pub mod engine;
pub mod error;
pub mod files;
pub mod maintenance;
pub mod metrics;
pub mod options;
pub mod read;
pub mod rollup;
pub mod write;

pub use engine::{Engine, EngineIo, WriteOutcome};
pub use error::{Result, StorageError};
pub use maintenance::compaction::{FileSpan, pick as pick_compaction};
pub use maintenance::delete::{DeleteRequest, SeriesFilter};
pub use options::EngineOptions;
pub use read::{
    BoundOp, FieldBound, Matcher, ScanPlan, ScanRequest, ScanStats, SortedRun, TagForm,
    output_schema, output_schema_as,
};
pub use write::{DirWals, MemWals, WalFactory};
