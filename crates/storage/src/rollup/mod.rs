//! Rollups (issue 23): per (series, bucket) aggregates of a table's numeric fields at the
//! resolutions the table declares (`rollups = '1m,1h'`), written beside each data file by
//! flush and compaction from the rows they write anyway, and read by queries that group by
//! buckets the rollups can answer.
//!
//! | module | what it holds |
//! |---|---|
//! | [`partial`] | the pure core: partial states per (series, bucket), computed from a run, coarsened, merged across files with overlap detection |
//! | [`file`] | rollup files: Parquet encoding and decoding (docs/format/rollup-files.md) |
//! | [`read`] | a region's rollup read for a scan: merged states of the files, and the time ranges only raw rows answer exactly |
//! | [`view`] | what the planner knows of a table's rollups: resolutions, raw rows per state, where raw rows expired |
//!
//! Invariants:
//! - A rollup file describes exactly its data file's rows: it is put with it, named by the
//!   same manifest entry ([`crate::files::manifest::FileMeta::rollups`]), and deleted with it,
//!   so a crash leaves both or neither.
//! - A reader combines states of several files only for points it can prove distinct (their
//!   time spans per series and bucket do not touch); any bucket a tombstone, the memtable, a
//!   file without the rollup or an overlap touches is answered from raw rows instead.

pub mod file;
pub mod partial;
pub mod read;
pub mod view;
