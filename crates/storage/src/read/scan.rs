//! Planned scans: the read API's request, plan and output shape.
//!
//! [`plan`] takes a snapshot of each region that overlaps the time range (freezing its active
//! buffer, as Mito does) and selects series through the inverted index before reading any
//! data; [`ScanPlan`] then reads one region at a time ([`super::region_read`]): it prunes
//! files and row groups by time and key, merges memtable parts and files, and removes
//! duplicates, so a reader sees each (series, time) once with the newest value of each field.
//!
//! Output columns: the requested tags (by default every tag of the table; `Utf8`, null where
//! a series lacks it), `time` (timestamp ns UTC), then the requested fields. Rows come sorted
//! by series key then time within each region's batch. [`ScanPlan::read_as`] with
//! [`TagForm::Dictionary`] gives the tags as dictionaries instead (one value per series, keys
//! shared by every tag column), for callers that sort or copy rows before they expand the
//! tags once.

use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use roaring::RoaringBitmap;
use tempora_index::Matcher;
use tempora_model::{FieldType, TIME_COLUMN};

use crate::catalog::region::FileHandle;
use crate::catalog::{Region, Table};
use crate::error::{Result, StorageError};
use crate::read::Reader;
use crate::read::field_bound::FieldBound;
use crate::read::region_read::{RegionScan, scan_region, scan_region_bounded, to_output};
use crate::read::run::{SortedRun, arrow_type};

/// What to read.
#[derive(Debug, Clone)]
pub struct ScanRequest {
    /// Inclusive start, exclusive end (ns).
    pub time: Option<(i64, i64)>,
    pub matcher: Matcher,
    /// Fields to read; `None` reads all.
    pub fields: Option<Vec<String>>,
    /// Tag columns to output, in this order; `None` outputs all. (Series are selected by
    /// `matcher` whatever this holds.)
    pub tags: Option<Vec<String>>,
    /// Numeric bounds rows are dropped by before their tags are decoded (a superset of what
    /// the query keeps; see `crate::read::field_bound`).
    pub field_bounds: Vec<FieldBound>,
}

impl Default for ScanRequest {
    fn default() -> Self {
        Self {
            time: None,
            matcher: Matcher::All,
            fields: None,
            tags: None,
            field_bounds: Vec::new(),
        }
    }
}

/// What a planned scan keeps of the table: the pruning `EXPLAIN` reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanStats {
    pub regions_total: usize,
    pub regions_kept: usize,
    pub files_total: usize,
    pub files_kept: usize,
    /// Series summed over regions (a series present in two partitions counts twice).
    pub series_total: usize,
    pub series_kept: usize,
    /// About how many rows the scan reads (see [`rows_in_range`]): what callers size their
    /// work by (run it on the calling task, or hand it to a thread).
    pub rows_estimate: u64,
}

/// About how many of `rows` spread evenly over `[min_time, max_time]` fall in `range`
/// (`[start, end)`; `None` = all), scaled by the share of the series kept; rounded up, so
/// any overlap counts.
pub fn rows_in_range(
    rows: u64,
    (min_time, max_time): (i64, i64),
    range: Option<(i64, i64)>,
    (kept_series, total_series): (usize, usize),
) -> u64 {
    let span = (max_time as i128 - min_time as i128 + 1).max(1);
    let overlap = match range {
        None => span,
        Some((s, e)) => {
            let lo = (min_time as i128).max(s as i128);
            let hi = (max_time as i128 + 1).min(e as i128);
            (hi - lo).clamp(0, span)
        }
    };
    let in_time = (rows as i128 * overlap + span - 1) / span;
    let total = total_series.max(1) as i128;
    let kept = (kept_series as i128).min(total);
    ((in_time * kept + total - 1) / total) as u64
}

/// A scan whose regions are chosen and snapshotted but not yet read.
pub struct ScanPlan {
    reader: Reader,
    /// The table's name, for errors.
    table: String,
    tags: Vec<String>,
    fields: Vec<(String, FieldType)>,
    time: Option<(i64, i64)>,
    field_bounds: Vec<FieldBound>,
    regions: Vec<RegionScan>,
    /// A dense table's blocks to read (then `regions` is empty).
    dense: Vec<crate::dense::scan::DensePart>,
    pub stats: ScanStats,
}

/// `regions=kept/total, files=kept/total, series=kept/total`, as `EXPLAIN` shows it.
impl std::fmt::Display for ScanStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "regions={}/{}, files={}/{}, series={}/{}",
            self.regions_kept,
            self.regions_total,
            self.files_kept,
            self.files_total,
            self.series_kept,
            self.series_total
        )
    }
}

impl std::fmt::Debug for ScanPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScanPlan")
            .field("stats", &self.stats)
            .finish()
    }
}

impl ScanPlan {
    /// Regions left to read, in (partition, bucket) order.
    pub fn regions(&self) -> usize {
        self.regions.len() + self.dense.len()
    }

    /// Reads part `i` over `time` as a run: a region, or a dense table's block.
    fn run(&self, i: usize, time: Option<(i64, i64)>) -> Result<SortedRun> {
        match self.dense.get(i) {
            Some(d) => d.read_run(&self.fields, time),
            None => scan_region(&self.reader, &self.regions[i], &self.fields, time),
        }
    }

    /// Reads region `i`: tags, time, then the requested fields, sorted by series then time,
    /// each (series, time) once. `None` when nothing in it matches.
    pub fn read(&self, i: usize) -> Result<Option<RecordBatch>> {
        self.read_as(i, TagForm::Strings)
    }

    /// [`ScanPlan::read`] with the tag columns in `form` ([`output_schema_as`]).
    pub fn read_as(&self, i: usize, form: TagForm) -> Result<Option<RecordBatch>> {
        self.check_raw(i, self.time)?;
        let (run, bounded) = match self.dense.is_empty() {
            true => scan_region_bounded(
                &self.reader,
                &self.regions[i],
                &self.fields,
                self.time,
                &self.field_bounds,
            )?,
            false => (self.run(i, self.time)?, false),
        };
        let run = if bounded {
            run
        } else {
            super::field_bound::filter_run(run, &self.fields, &self.field_bounds)?
        };
        if run.num_rows() == 0 {
            return Ok(None);
        }
        to_output(&run, &self.tags, &self.fields, form).map(Some)
    }

    /// Whether region `i`'s raw rows expired while rollups of them remain (reads of raw
    /// rows over a range starting before its end fail; [`ScanPlan::read_rollup`] answers).
    pub fn raw_expired(&self, i: usize) -> bool {
        self.regions
            .get(i)
            .is_some_and(|r| !r.snap.rollup_only.is_empty())
    }

    /// The resolutions every rollup-only file of region `i` still has (finest first).
    pub fn rollups_left(&self, i: usize) -> Vec<i64> {
        let Some(r) = self.regions.get(i) else {
            return Vec::new();
        };
        let only = &r.snap.rollup_only;
        let mut out: Vec<i64> = match only.first() {
            Some(f) => f.meta.rollups.iter().map(|r| r.resolution_ns).collect(),
            None => return Vec::new(),
        };
        out.retain(|&r| {
            only.iter()
                .all(|f| f.meta.rollups.iter().any(|x| x.resolution_ns == r))
        });
        out.sort_unstable();
        out
    }

    /// The error for raw rows of region `i` that expired, naming `what` needed them.
    pub fn raw_expired_error(&self, i: usize, what: &str) -> StorageError {
        let end = self.regions[i].region.key.end;
        StorageError::RawExpired {
            table: self.table.clone(),
            horizon: crate::catalog::settings::format_time_ns(end),
            what: what.to_string(),
        }
    }

    /// Fails when a raw read of region `i` over `time` needs rows that expired: the region's
    /// raw rows are gone and the range starts before its end. A range unbounded below reads
    /// what raw rows remain, as retention always meant.
    fn check_raw(&self, i: usize, time: Option<(i64, i64)>) -> Result<()> {
        match time {
            Some((s, _)) if s > i64::MIN && self.raw_expired(i) => {
                Err(self.raw_expired_error(i, "this query"))
            }
            _ => Ok(()),
        }
    }

    /// Reads region `i`'s rollups at resolution `res` over `[start, end)` (whole buckets,
    /// within the scan's range): the states of the buckets the files answer exactly, and the
    /// ranges to read raw rows for ([`ScanPlan::read_run_in`]). States cover the requested
    /// numeric fields.
    pub fn read_rollup(
        &self,
        i: usize,
        res: i64,
        range: (i64, i64),
    ) -> Result<crate::rollup::read::RollupRead> {
        if !self.dense.is_empty() {
            // A dense table keeps no rollups: every bucket is read from its slots.
            return Ok(crate::rollup::read::RollupRead {
                run: None,
                raw: vec![range],
                files: 0,
            });
        }
        let want = crate::rollup::partial::rollup_fields(&self.fields);
        crate::rollup::read::read_region(&self.reader, &self.regions[i], &want, res, range)
    }

    /// The keys of the series part `i` selects, from the region's index alone (a dense
    /// table's block is read, and so is a region with deletes, whose index still names the
    /// deleted series): series with rows anywhere in the region's time partition, so
    /// possibly outside the scan's range. Prometheus's series and label listings use it.
    pub fn series_keys(&self, i: usize) -> Result<Vec<bytes::Bytes>> {
        if !self.dense.is_empty() {
            return Ok(self.run(i, self.time)?.keys.to_vec());
        }
        let r = &self.regions[i];
        if !r.snap.tombstones.is_empty() && !self.raw_expired(i) {
            // A deleted series stays in the index: list the keys of the rows that remain.
            // (Not where raw rows expired and rollups remain: the raw rows left there do not
            // name every series the rollups still hold, so the index answers.)
            let run = self.run(i, self.time)?;
            let mut present = vec![false; run.keys.len()];
            for &k in run.ranks() {
                present[k as usize] = true;
            }
            return Ok(run
                .keys
                .iter()
                .zip(present)
                .filter(|(_, p)| *p)
                .map(|(k, _)| k.clone())
                .collect());
        }
        let index = r.region.index_read()?;
        let copy = |k: &[u8]| bytes::Bytes::copy_from_slice(k);
        Ok(match &r.ids {
            Some(ids) => ids
                .iter()
                .filter_map(|id| index.key(tempora_model::SeriesId(id)).map(copy))
                .collect(),
            None => index.keys().map(copy).collect(),
        })
    }

    /// [`ScanPlan::read_run`] over `[start, end)` (within the scan's range) only.
    pub fn read_run_in(&self, i: usize, (start, end): (i64, i64)) -> Result<Option<SortedRun>> {
        let (s, e) = self.time.unwrap_or((i64::MIN, i64::MAX));
        let time = (start.max(s), end.min(e));
        if time.0 >= time.1 {
            return Ok(None);
        }
        self.check_raw(i, Some(time))?;
        let run = self.run(i, Some(time))?;
        Ok((run.num_rows() > 0).then_some(run))
    }

    /// Reads region `i` as a run (series keys, ranks, time, seq, then the requested fields),
    /// without the tag columns: for callers that work per series. `None` when nothing in it
    /// matches.
    pub fn read_run(&self, i: usize) -> Result<Option<SortedRun>> {
        self.check_raw(i, self.time)?;
        let run = self.run(i, self.time)?;
        Ok((run.num_rows() > 0).then_some(run))
    }
}

/// How a scan gives its tag columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TagForm {
    /// `Utf8`, the value written out on every row.
    Strings,
    /// `Dictionary(UInt32, Utf8)`: one value per series of the region, the keys (the rows'
    /// series ranks) shared by every tag column.
    Dictionary,
}

impl TagForm {
    /// The Arrow type of a tag column in this form.
    pub fn data_type(self) -> DataType {
        match self {
            TagForm::Strings => DataType::Utf8,
            TagForm::Dictionary => {
                DataType::Dictionary(Box::new(DataType::UInt32), Box::new(DataType::Utf8))
            }
        }
    }
}

/// Output schema of a scan.
pub fn output_schema(tags: &[String], fields: &[(String, FieldType)]) -> SchemaRef {
    output_schema_as(tags, fields, TagForm::Strings)
}

/// Output schema of a scan whose tags are in `form`.
pub fn output_schema_as(
    tags: &[String],
    fields: &[(String, FieldType)],
    form: TagForm,
) -> SchemaRef {
    let mut f: Vec<Field> = tags
        .iter()
        .map(|t| Field::new(t, form.data_type(), true))
        .collect();
    f.push(Field::new(
        TIME_COLUMN,
        DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
        false,
    ));
    f.extend(
        fields
            .iter()
            .map(|(n, t)| Field::new(n, arrow_type(*t), true)),
    );
    Arc::new(Schema::new(f))
}

pub(crate) fn selected_fields(
    table: &Table,
    want: Option<&Vec<String>>,
) -> Result<Vec<(usize, String, FieldType)>> {
    let all: Vec<(usize, String, FieldType)> = table
        .fields()
        .into_iter()
        .enumerate()
        .map(|(i, (n, t))| (i, n, t))
        .collect();
    let Some(want) = want else { return Ok(all) };
    want.iter()
        .map(|w| {
            all.iter().find(|(_, n, _)| n == w).cloned().ok_or_else(|| {
                StorageError::Model(tempora_model::ModelError::InvalidName {
                    name: w.clone(),
                    reason: "no such field",
                })
            })
        })
        .collect()
}

/// Series of a region the matcher selects (`None` = all).
pub(crate) fn select(region: &Arc<Region>, m: &Matcher) -> Result<Option<RoaringBitmap>> {
    Ok(match m {
        Matcher::All => None,
        m => Some(region.index_read()?.select(m)),
    })
}

/// Reads every region of a plan; one batch per region that has matching rows.
pub(crate) fn read_all(plan: &ScanPlan) -> Result<Vec<RecordBatch>> {
    let mut out = Vec::new();
    for i in 0..plan.regions() {
        if let Some(b) = plan.read(i)? {
            out.push(b);
        }
    }
    Ok(out)
}

/// Chooses what a scan of `table` reads: the regions overlapping the time range, each one's
/// snapshot, and the series its index selects. Nothing is read yet.
pub(crate) fn plan(reader: &Reader, table: &Table, req: &ScanRequest) -> Result<ScanPlan> {
    let fields = selected_fields(table, req.fields.as_ref())?;
    let fields: Vec<(String, FieldType)> = fields.into_iter().map(|(_, n, t)| (n, t)).collect();
    if let Some(d) = table.dense() {
        return plan_dense(reader, table, d, req, fields);
    }
    let names = table.field_names();
    let mut stats = ScanStats::default();
    let mut regions = Vec::new();
    for region in table.all_regions() {
        stats.regions_total += 1;
        let total_series = region.index_read()?.len();
        stats.series_total += total_series;
        if !reader.overlaps(&region, req.time) {
            stats.files_total += region.files.read().len();
            continue;
        }
        let ids = select(&region, &req.matcher)?;
        let kept_series = ids.as_ref().map_or(total_series, |b| b.len() as usize);
        if kept_series == 0 {
            stats.files_total += region.files.read().len();
            continue;
        }
        let mut snap = region.snapshot(&names);
        stats.files_total += snap.files.len();
        let overlaps = |f: &Arc<FileHandle>| {
            req.time
                .is_none_or(|(s, e)| f.meta.max_time >= s && f.meta.min_time < e)
        };
        snap.files.retain(overlaps);
        snap.rollup_only.retain(overlaps);
        stats.files_kept += snap.files.len();
        stats.series_kept += kept_series;
        let share = (kept_series, total_series);
        stats.rows_estimate += snap
            .files
            .iter()
            .map(|f| {
                let m = &f.meta;
                rows_in_range(m.rows, (m.min_time, m.max_time), req.time, share)
            })
            .sum::<u64>();
        // Memtable rows have no time bounds at hand: all of them count.
        stats.rows_estimate += snap
            .frozen
            .iter()
            .map(|p| rows_in_range(p.batch.num_rows() as u64, (0, 0), None, share))
            .sum::<u64>();
        stats.regions_kept += 1;
        regions.push(RegionScan { region, ids, snap });
    }
    ScanPlan::new(reader, table, req, fields, (regions, Vec::new()), stats)
}

impl ScanPlan {
    /// A plan of `parts`: the regions to read, or a dense table's blocks.
    fn new(
        reader: &Reader,
        table: &Table,
        req: &ScanRequest,
        fields: Vec<(String, FieldType)>,
        (regions, dense): (Vec<RegionScan>, Vec<crate::dense::scan::DensePart>),
        stats: ScanStats,
    ) -> Result<ScanPlan> {
        debug_assert!(
            regions.is_empty() || dense.is_empty(),
            "one layout per table"
        );
        Ok(ScanPlan {
            reader: reader.clone(),
            table: table.name.clone(),
            tags: output_tags(table, req.tags.as_ref())?,
            fields,
            time: req.time,
            field_bounds: req.field_bounds.clone(),
            regions,
            dense,
            stats,
        })
    }
}

/// A dense table's scan: one part per block of the selected series that overlaps the time
/// range. Stats count blocks as regions and block files as files.
fn plan_dense(
    reader: &Reader,
    table: &Table,
    d: &Arc<crate::dense::DenseTable>,
    req: &ScanRequest,
    fields: Vec<(String, FieldType)>,
) -> Result<ScanPlan> {
    // Buffered writes first: their series and blocks may not have files yet.
    d.flush_pending()?;
    let series = d.select(&req.matcher);
    let (s, e) = req.time.unwrap_or((i64::MIN, i64::MAX));
    let block_ns = d.spec.block_ns;
    // Only the blocks in range are listed: a point query over a long history stays cheap.
    let mut kept = std::collections::BTreeSet::new();
    let mut files_kept = 0;
    for x in &series {
        let b = x.blocks_in(s, e, block_ns);
        files_kept += b.len();
        kept.extend(b);
    }
    let kept: Vec<i64> = kept.into_iter().collect();
    let counts: Vec<usize> = series.iter().map(|x| x.block_count()).collect();
    let stats = ScanStats {
        // Blocks of the series with the most (blocks of different series mostly coincide).
        regions_total: counts.iter().copied().max().unwrap_or(0),
        regions_kept: kept.len(),
        files_total: counts.iter().sum(),
        files_kept,
        series_total: d.series_count(),
        series_kept: series.len(),
        rows_estimate: files_kept as u64
            * d.slots_per_block().min(
                ((e as i128 - s as i128) / d.spec.interval_ns as i128).clamp(1, u64::MAX as i128)
                    as u64,
            ),
    };
    let series = Arc::new(series);
    let dense = kept
        .into_iter()
        .map(|block| crate::dense::scan::DensePart {
            table: d.clone(),
            series: series.clone(),
            block,
        })
        .collect();
    ScanPlan::new(reader, table, req, fields, (Vec::new(), dense), stats)
}

/// The tag columns a scan outputs: `want` (each checked), or every tag of the table.
fn output_tags(table: &Table, want: Option<&Vec<String>>) -> Result<Vec<String>> {
    let all_tags = table.tags();
    let Some(want) = want else {
        return Ok(all_tags);
    };
    if let Some(bad) = want.iter().find(|t| !all_tags.contains(t)) {
        return Err(StorageError::Model(
            tempora_model::ModelError::InvalidName {
                name: bad.clone(),
                reason: "no such tag",
            },
        ));
    }
    Ok(want.clone())
}

#[cfg(test)]
mod tests {
    use super::rows_in_range;

    /// (name, rows, file span, range, (kept, total series), expected)
    type Case = (
        &'static str,
        u64,
        (i64, i64),
        Option<(i64, i64)>,
        (usize, usize),
        u64,
    );

    #[test]
    fn rows_in_range_cases() {
        // (name, rows, file span, range, (kept, total series), expected)
        let cases: &[Case] = &[
            ("all of it", 1000, (0, 999), None, (10, 10), 1000),
            (
                "half the time",
                1000,
                (0, 999),
                Some((500, 2000)),
                (10, 10),
                500,
            ),
            ("a tenth of the series", 1000, (0, 999), None, (1, 10), 100),
            (
                "time and series",
                1000,
                (0, 999),
                Some((0, 100)),
                (1, 10),
                10,
            ),
            (
                "range before the file",
                1000,
                (100, 199),
                Some((0, 50)),
                (1, 1),
                0,
            ),
            (
                "range after the file",
                1000,
                (100, 199),
                Some((200, 300)),
                (1, 1),
                0,
            ),
            ("one instant file", 5, (7, 7), Some((7, 8)), (1, 1), 5),
            (
                "whole i64 span",
                8,
                (i64::MIN, i64::MAX),
                Some((i64::MIN, i64::MAX)),
                (1, 1),
                8,
            ),
            ("rounds up a share", 3, (0, 9), None, (1, 10), 1),
            ("kept over total is capped", 10, (0, 9), None, (20, 10), 10),
            ("no series recorded", 10, (0, 9), None, (0, 0), 0),
        ];
        for &(name, rows, span, range, share, want) in cases {
            assert_eq!(rows_in_range(rows, span, range, share), want, "{name}");
        }
    }
}
