//! Where flush and compaction write: data files put in the file store, ids from the
//! manifest, the commit through the catalog.
//!
//! Invariant: a file is put (atomically, durably) before the manifest edit that names it;
//! every path put is added to the caller's `written` list so that a failed commit can delete
//! what it left.

use std::sync::Arc;

use tempora_model::FieldType;

use crate::catalog::Catalog;
use crate::catalog::rollups::RollupList;
use crate::error::Result;
use crate::files::manifest::{FileMeta, RegionKey, RollupFile};
use crate::files::sst::SstWriteOptions;
use crate::files::sst_writer::SstWriter;
use crate::files::store::FileStore;
use crate::read::run::SortedRun;
use crate::rollup::file as rollup_file;
use crate::rollup::partial::{self, PartialRun};

/// The catalog that allocates file ids and takes commits, the store files go to, and how data
/// files are encoded.
#[derive(Clone)]
pub(crate) struct Output {
    pub catalog: Arc<Catalog>,
    pub store: FileStore,
    pub sst: SstWriteOptions,
    /// Where the time spent on rollups is counted.
    pub metrics: Arc<crate::metrics::Metrics>,
    /// A rollup whose states would stand for fewer raw rows than this is not written, unless
    /// it is kept longer than the raw rows may be (a retention of its own): queries would not
    /// read it while the raw rows exist (`crate::rollup::view`), and it would cost more to
    /// write than the data file (a 1-minute rollup of 10-second data: 6 rows per state).
    pub rollup_min_rows: u32,
}

impl Output {
    /// Puts a file written run by run, and its newest rows beside it when worth it
    /// ([`worth_last_rows`]); `None` when no row was appended.
    pub fn put_pending(
        &self,
        key: RegionKey,
        file: PendingFile,
        purged_seq: u64,
        written: &mut Vec<String>,
    ) -> Result<Option<FileMeta>> {
        let keys = file.data.key_range();
        let (series, rows) = (file.series, file.data.rows() as usize);
        // The newest rows are encoded only for a file worth them, in the data file's
        // representations (a subset of its rows always fits them).
        let last = match worth_last_rows(series, rows) {
            true => {
                let mut w = SstWriter::new(&file.tags, &file.fields, &self.sst);
                w.follow(&file.data);
                for run in &file.last {
                    w.append(run)?;
                }
                w.finish()?
            }
            false => None,
        };
        let Some((data, stats)) = file.data.finish()? else {
            return Ok(None);
        };
        let id = self.catalog.next_file_id();
        let path = format!("{}/{id:016x}.parquet", key.dir());
        let crc = crc32c::crc32c(&data);
        self.store.put(&path, data)?;
        written.push(path.clone());
        let started = std::time::Instant::now();
        let mut rollups = Vec::with_capacity(file.rollups.len());
        for ((res, parts), always) in file.rollups.into_iter().zip(file.always) {
            let Some(run) = partial::concat(parts)? else {
                continue;
            };
            let sparse = (rows as u64) < u64::from(self.rollup_min_rows) * run.num_rows() as u64;
            if sparse && !always {
                continue;
            }
            let data = rollup_file::encode(&run, res, self.sst.zstd_level)?;
            let rpath = format!("{}/{id:016x}.r{res}", key.dir());
            let size = data.len() as u64;
            self.store.put(&rpath, data)?;
            written.push(rpath.clone());
            rollups.push(RollupFile {
                resolution_ns: res,
                path: rpath,
                rows: run.num_rows() as u64,
                size,
            });
        }
        let spent = started.elapsed() + file.rollup_time;
        self.metrics.rollup_micros.add(spent.as_micros() as u64);
        let last_rows = match last {
            Some((data, _)) => {
                let path = format!("{}/{id:016x}.last", key.dir());
                self.store.put(&path, data)?;
                written.push(path.clone());
                Some(path)
            }
            None => None,
        };
        Ok(Some(FileMeta {
            crc32c: Some(crc),
            last_rows,
            id,
            path,
            rows: stats.rows,
            size: stats.size,
            min_time: stats.min_time,
            max_time: stats.max_time,
            max_seq: stats.max_seq,
            min_seq: stats.min_seq,
            purged_seq,
            key_range: keys.and_then(|(min, max)| FileMeta::key_range_of(&min, &max)),
            rollups,
            raw_expired: false,
        }))
    }
}

/// A data file being written run by run, with its newest rows per series (one row per
/// series, kept decoded until the file is put).
pub(crate) struct PendingFile {
    pub data: SstWriter,
    last: Vec<SortedRun>,
    series: usize,
    tags: Vec<String>,
    fields: Vec<(String, FieldType)>,
    /// Per declared resolution (ascending), the rollup of each run appended.
    rollups: Vec<(i64, Vec<PartialRun>)>,
    /// Per resolution: written however few rows its states hold (it has a retention of its
    /// own, so it may outlive the raw rows).
    always: Vec<bool>,
    /// Per resolution, decided on the first run: too sparse to be worth computing.
    skip: Vec<bool>,
    /// `Output::rollup_min_rows`.
    min_rows: u32,
    /// Time spent computing them so far.
    rollup_time: std::time::Duration,
}

impl PendingFile {
    /// A file over `fields` whose rollups (`rollups`' resolutions, ascending, each a
    /// multiple of the one before) are computed as runs are appended.
    pub fn new(
        tags: &[String],
        fields: &[(String, FieldType)],
        o: &SstWriteOptions,
        rollups: &RollupList,
        min_rows: u32,
    ) -> Self {
        Self {
            data: SstWriter::new(tags, fields, o),
            last: Vec::new(),
            series: 0,
            tags: tags.to_vec(),
            fields: fields.to_vec(),
            rollups: rollups
                .specs()
                .iter()
                .map(|s| (s.resolution_ns, Vec::new()))
                .collect(),
            always: rollups
                .specs()
                .iter()
                .map(|s| s.ttl.ns().is_some())
                .collect(),
            skip: Vec::new(),
            min_rows,
            rollup_time: std::time::Duration::ZERO,
        }
    }

    /// Whether `run` can be appended (its floats fit the representations the file chose from
    /// its first run; its newest rows, a subset, then fit too: the newest-rows file follows
    /// the data file's choice).
    pub fn fits(&self, run: &SortedRun) -> bool {
        self.data.fits(run)
    }

    /// Appends a run whose keys follow the file's.
    pub fn append(&mut self, run: &SortedRun) -> Result<()> {
        if run.num_rows() == 0 {
            return Ok(());
        }
        self.data.append(run)?;
        // The finest rollup from the rows, each coarser one from the one before it; a
        // resolution too sparse to be written is decided on the first run and not computed.
        let started = std::time::Instant::now();
        if self.skip.is_empty() {
            let (lo, hi) = run
                .times()
                .iter()
                .fold((i64::MAX, i64::MIN), |(a, b), &t| (a.min(t), b.max(t)));
            let span = hi.saturating_sub(lo);
            self.skip = self
                .rollups
                .iter()
                .zip(&self.always)
                .map(|((res, _), &always)| {
                    let per = rows_per_state_estimate(run.num_rows(), run.keys.len(), span, *res);
                    !always && per < f64::from(self.min_rows)
                })
                .collect();
        }
        let mut finer: Option<PartialRun> = None;
        for ((res, parts), &skip) in self.rollups.iter_mut().zip(&self.skip) {
            if skip {
                continue;
            }
            let p = match &finer {
                None => partial::from_run(run, &self.fields, *res)?,
                Some(f) => partial::coarsen(f, &self.fields, *res)?,
            };
            parts.push(p.clone());
            finer = Some(p);
        }
        self.rollup_time += started.elapsed();
        self.last.push(run.last_per_key());
        self.series += run.keys.len();
        Ok(())
    }
}

/// Raw rows per (series, bucket) of a run of `rows` rows over `series` series spanning
/// `span_ns`, at resolution `res`: each series taken to cover the whole span, which touches
/// at most `span / res + 1` buckets (an underestimate of the density, never above it for
/// evenly spread rows).
pub(crate) fn rows_per_state_estimate(rows: usize, series: usize, span_ns: i64, res: i64) -> f64 {
    let buckets = (span_ns / res) as f64 + 1.0;
    rows as f64 / (series.max(1) as f64 * buckets)
}

/// A data file's newest rows are written beside it when the file holds at least this many
/// rows per series on average; below that the file itself is nearly as small to read.
pub(crate) const LAST_ROWS_MIN_ROWS_PER_SERIES: usize = 4;

/// Whether a file of `rows` rows over `series` series gets its newest rows written beside it.
fn worth_last_rows(series: usize, rows: usize) -> bool {
    series > 0 && rows >= series * LAST_ROWS_MIN_ROWS_PER_SERIES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_per_state_estimates() {
        const MIN: i64 = 60_000_000_000;
        // (name, rows, series, span, res, estimate)
        for (name, rows, series, span, res, want) in [
            (
                "10 s data, 10 minutes, 1m",
                4000 * 60,
                4000,
                590 * MIN / 60,
                MIN,
                6.0,
            ),
            (
                "10 s data, 10 minutes, 1h",
                4000 * 60,
                4000,
                590 * MIN / 60,
                60 * MIN,
                60.0,
            ),
            ("one row", 1, 1, 0, MIN, 1.0),
            ("no series", 0, 0, 0, MIN, 0.0),
            (
                "1 s data over a day, 1h",
                86_400,
                1,
                86_399 * MIN / 60,
                60 * MIN,
                3600.0,
            ),
        ] {
            let got = rows_per_state_estimate(rows, series, span, res);
            assert!((got - want).abs() < 1e-9, "{name}: {got}");
        }
    }

    #[test]
    fn newest_rows_are_written_for_files_with_several_rows_per_series() {
        for (name, series, rows, want) in [
            ("no series", 0, 0, false),
            ("one row each", 1000, 1000, false),
            ("three rows each", 10, 30, false),
            ("four rows each", 10, 40, true),
            ("a day at 10 s", 1000, 8_640_000, true),
        ] {
            assert_eq!(worth_last_rows(series, rows), want, "{name}");
        }
    }
}
