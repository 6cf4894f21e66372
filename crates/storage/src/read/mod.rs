//! The read side, and the API other crates read through.
//!
//! # How a reader uses it
//!
//! 1. [`Engine::plan_scan`](crate::Engine::plan_scan)`(table, &`[`ScanRequest`]`)` chooses the
//!    regions whose time partition overlaps `time`, takes an immutable snapshot of each
//!    (memtable parts, files, tombstones) and selects series through each region's inverted
//!    index with the [`Matcher`]. Nothing is read yet; [`ScanPlan::stats`] says what was pruned
//!    (regions, files, series), as `EXPLAIN` shows it.
//! 2. For `i in 0..plan.regions()`, read one region at a time (a caller can stream):
//!    - [`ScanPlan::read`] / [`ScanPlan::read_as`]: a `RecordBatch` in the scan's output
//!      shape, [`output_schema`] / [`output_schema_as`]: the tags (`Utf8`, or dictionaries
//!      with [`TagForm::Dictionary`], one value per series and the keys shared by every tag
//!      column), `time` (timestamp ns UTC), then the fields.
//!    - [`ScanPlan::read_run`]: the region's rows as a [`SortedRun`], without the tag
//!      columns, for callers that work series by series.
//!
//!    Either way the rows are sorted by series key then time, each (series, time) once with
//!    the newest value of each field; `None` when nothing in the region matches.
//! 3. Latest values come from the last-value cache: [`Engine::latest`](crate::Engine::latest)
//!    gives the newest point of every selected series in the scan's output shape, one row per
//!    series; [`Engine::latest_rows_bound`](crate::Engine::latest_rows_bound) says how many
//!    rows that reads and whether it would touch files.
//!
//! # What a [`SortedRun`] holds
//!
//! `keys`: the distinct series keys of its rows once, sorted (memcomparable keys: decode tags
//! with [`SortedRun::tag_values`]). `batch`: `__rank` (u32 index into `keys`), `time` (i64
//! ns), `__seq` (u64 write sequence), then the requested fields (nullable, Arrow types by
//! [`arrow_type`]); rows sorted by (rank, time), one per (series, time).
//!
//! # Filters
//!
//! A [`Matcher`] selects series before any data is read. [`FieldBound`]s drop rows by a
//! numeric field's value before their tags are decoded; they keep a superset of what the SQL
//! comparison keeps, so the caller applies the exact predicate afterwards.
//!
//! # Invariants
//!
//! - A plan reads its snapshots: writes, flushes, compactions and deletes committed after
//!   `plan_scan` do not change what it returns, and the files it holds are not deleted until
//!   it is dropped.
//! - The caches here (data files with their footers, decoded column chunks, region indexes)
//!   change how soon an answer comes, never the answer; each has a byte budget in
//!   [`EngineOptions`](crate::EngineOptions).

pub(crate) mod decoded_cache;
pub(crate) mod field_bound;
pub(crate) mod index_cache;
pub(crate) mod latest;
pub(crate) mod lvc;
pub(crate) mod prewarm;
pub(crate) mod region_read;
pub(crate) mod run;
pub(crate) mod scan;
pub mod sst_cache;

use std::sync::Arc;

pub use field_bound::{BoundOp, FieldBound};
pub use run::{RANK_COLUMN, SortedRun, arrow_type, tag_columns};
pub use scan::{
    ScanPlan, ScanRequest, ScanStats, TagForm, output_schema, output_schema_as, rows_in_range,
};
pub use tempora_index::Matcher;

use crate::catalog::Region;
use crate::files::store::FileStore;

/// The caches in front of the data files.
pub(crate) struct Caches {
    /// Data files and their decoded footers.
    pub files: sst_cache::SstCache,
    /// Decoded column chunks.
    pub decoded: decoded_cache::DecodedCache,
}

/// What a read needs besides a region's snapshot: the store the files are in and the caches
/// in front of it.
#[derive(Clone)]
pub(crate) struct Reader {
    pub store: FileStore,
    pub caches: Arc<Caches>,
}

impl Reader {
    /// Whether `region`'s time partition overlaps `time` (inclusive start, exclusive end).
    pub fn overlaps(&self, region: &Region, time: Option<(i64, i64)>) -> bool {
        let (start, end) = (region.key.start, region.key.end);
        time.is_none_or(|(s, e)| s < end && e > start)
    }
}
