//! Reads: time-range and tag-filtered scans, and latest values from the last-value cache.
//!
//! A scan takes a snapshot of each region that overlaps the time range (freezing its active
//! buffer, as Mito does), selects series through the inverted index before reading any data,
//! prunes files and row groups by time, merges memtable parts and files, and removes
//! duplicates, so a reader sees each (series, time) once with the newest value of each field.
//!
//! Output columns: the requested tags (by default every tag of the table; `Utf8`, null where
//! a series lacks it), `time` (timestamp ns UTC), then the requested fields. Rows come sorted by series key then time
//! within each region's batch. [`ScanPlan::read_as`] with [`TagForm::Dictionary`] gives the tags
//! as dictionaries instead (one value per series, keys shared by every tag column), for callers
//! that sort or copy rows before they expand the tags once.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use arrow::array::{ArrayRef, AsArray, BooleanArray, DictionaryArray, RecordBatch, UInt32Array};
use arrow::compute::{filter_record_batch, take};
use arrow::datatypes::{DataType, Field, Int64Type, Schema, SchemaRef, TimeUnit, UInt32Type};
use bytes::Bytes;
use roaring::RoaringBitmap;
use tempora_index::Matcher;
use tempora_model::{FieldType, SeriesId, TIME_COLUMN};

use crate::engine::{Engine, Shared};
use crate::error::{Result, StorageError};
use crate::field_bound::FieldBound;
use crate::manifest::FileMeta;
use crate::region::{FileHandle, Region, RegionSnapshot};
use crate::run::{SortedRun, merge_runs};
use crate::sst::{SstFilter, read_sst_cached};
use crate::table::Table;
use crate::tombstone;

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
    /// the query keeps; see [`crate::field_bound`]).
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
}

/// One region's share of a planned scan: its snapshot and the series the matcher chose
/// (`None` = every series).
pub struct RegionScan {
    pub(crate) region: Arc<Region>,
    pub(crate) ids: Option<RoaringBitmap>,
    pub(crate) snap: RegionSnapshot,
}

/// A scan whose regions are chosen and snapshotted but not yet read.
pub struct ScanPlan {
    shared: Arc<Shared>,
    tags: Vec<String>,
    fields: Vec<(String, FieldType)>,
    time: Option<(i64, i64)>,
    field_bounds: Vec<FieldBound>,
    regions: Vec<RegionScan>,
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
        self.regions.len()
    }

    /// Reads region `i`: tags, time, then the requested fields, sorted by series then time,
    /// each (series, time) once. `None` when nothing in it matches.
    pub fn read(&self, i: usize) -> Result<Option<RecordBatch>> {
        self.read_as(i, TagForm::Strings)
    }

    /// [`ScanPlan::read`] with the tag columns in `form` ([`output_schema_as`]).
    pub fn read_as(&self, i: usize, form: TagForm) -> Result<Option<RecordBatch>> {
        let (run, bounded) = scan_region_bounded(
            &self.shared,
            &self.regions[i],
            &self.fields,
            self.time,
            &self.field_bounds,
        )?;
        let run = if bounded {
            run
        } else {
            crate::field_bound::filter_run(run, &self.fields, &self.field_bounds)?
        };
        if run.num_rows() == 0 {
            return Ok(None);
        }
        to_output(&run, &self.tags, &self.fields, form).map(Some)
    }

    /// Reads region `i` as a run (series keys, ranks, time, seq, then the requested fields),
    /// without the tag columns: for callers that work per series. `None` when nothing in it
    /// matches.
    pub fn read_run(&self, i: usize) -> Result<Option<SortedRun>> {
        let run = scan_region(&self.shared, &self.regions[i], &self.fields, self.time)?;
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
            .map(|(n, t)| Field::new(n, crate::memtable::arrow_type(*t), true)),
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

pub(crate) fn overlaps(shared: &Shared, region: &Region, time: Option<(i64, i64)>) -> bool {
    let p = shared.opts.partition_ns;
    let (start, end) = (
        region.key.partition.saturating_mul(p),
        (region.key.partition + 1).saturating_mul(p),
    );
    time.is_none_or(|(s, e)| s < end && e > start)
}

impl Engine {
    pub(crate) fn table(&self, name: &str) -> Result<Arc<Table>> {
        self.shared
            .tables
            .read()
            .get(name)
            .cloned()
            .ok_or_else(|| StorageError::TableNotFound(name.into()))
    }

    /// Reads rows; one batch per region that has matching rows.
    pub fn scan(&self, table: &str, req: &ScanRequest) -> Result<Vec<RecordBatch>> {
        let plan = self.plan_scan(table, req)?;
        let mut out = Vec::new();
        for i in 0..plan.regions.len() {
            if let Some(b) = plan.read(i)? {
                out.push(b);
            }
        }
        Ok(out)
    }

    /// Chooses what a scan reads: the regions overlapping the time range, each one's
    /// snapshot, and the series its index selects. Nothing is read yet; [`ScanPlan::read`]
    /// reads one region, so a caller can stream region by region.
    pub fn plan_scan(&self, table: &str, req: &ScanRequest) -> Result<ScanPlan> {
        let table = self.table(table)?;
        let fields = selected_fields(&table, req.fields.as_ref())?;
        let fields: Vec<(String, FieldType)> = fields.into_iter().map(|(_, n, t)| (n, t)).collect();
        let names = table.field_names();
        let mut stats = ScanStats::default();
        let mut regions = Vec::new();
        for region in table.all_regions() {
            stats.regions_total += 1;
            let total_series = region.index_read()?.len();
            stats.series_total += total_series;
            if !overlaps(&self.shared, &region, req.time) {
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
            snap.files.retain(|f| {
                req.time
                    .is_none_or(|(s, e)| f.meta.max_time >= s && f.meta.min_time < e)
            });
            stats.files_kept += snap.files.len();
            stats.series_kept += kept_series;
            stats.regions_kept += 1;
            regions.push(RegionScan { region, ids, snap });
        }
        let all_tags = table.tags();
        let tags = match &req.tags {
            None => all_tags,
            Some(want) => {
                if let Some(bad) = want.iter().find(|t| !all_tags.contains(t)) {
                    return Err(StorageError::Model(
                        tempora_model::ModelError::InvalidName {
                            name: bad.clone(),
                            reason: "no such tag",
                        },
                    ));
                }
                want.clone()
            }
        };
        Ok(ScanPlan {
            shared: self.shared.clone(),
            tags,
            fields,
            time: req.time,
            field_bounds: req.field_bounds.clone(),
            regions,
            stats,
        })
    }
}

/// Fills a region's last-value cache from its data (files and memtable, deletes applied)
/// once after a restart or a delete. Points written meanwhile are newer and win.
///
/// Each file is read through its newest rows (`FileMeta::last_rows`) when it has them and
/// no delete is pending: the newest row of each series of a merge is the newest row of the
/// merge of each source's newest rows. A newest-rows file that cannot be read is logged and
/// the whole files are read instead.
pub(crate) fn ensure_lvc(shared: &Shared, table: &Table, region: &Arc<Region>) -> Result<()> {
    if region.lvc_from_files.load(Ordering::SeqCst) {
        return Ok(());
    }
    let _g = region.lvc_loading.lock();
    if region.lvc_from_files.load(Ordering::SeqCst) {
        return Ok(());
    }
    let fields = table.fields();
    let snap = region.snapshot(&table.field_names());
    let read = |snap: RegionSnapshot| {
        let rs = RegionScan {
            region: region.clone(),
            ids: None,
            snap,
        };
        scan_region(shared, &rs, &fields, None)
    };
    let newest = newest_rows_snapshot(shared, &snap).map(read);
    let run = match newest {
        Some(Ok(run)) => run,
        Some(Err(e)) => {
            tracing::warn!(region = ?region.key, error = %e,
                "could not read the files' newest rows; reading the whole files");
            read(snap)?
        }
        None => read(snap)?,
    };
    let field_map: Vec<(usize, FieldType)> = fields
        .iter()
        .enumerate()
        .map(|(i, (_, t))| (i, *t))
        .collect();
    let mut index = region.index_write()?;
    let mut lvc = region.lvc.write();
    let ranks = run.ranks();
    for i in 0..run.num_rows() {
        // Rows are sorted by key then time: the last row of each key is its newest.
        if i + 1 < run.num_rows() && ranks[i + 1] == ranks[i] {
            continue;
        }
        let (sid, _) = index.get_or_insert(&run.keys[ranks[i] as usize])?;
        let values = crate::lvc::row_values(&run.batch, i, &field_map);
        lvc.update(
            sid,
            run.times()[i],
            values.iter().map(|(o, t, v)| (*o, *t, v)),
        );
    }
    region.lvc_from_files.store(true, Ordering::SeqCst);
    Ok(())
}

/// `snap` with each file that has newest rows replaced by them; None when no file has them
/// or a delete is pending (its tombstone could remove a newest row and uncover an older one).
fn newest_rows_snapshot(shared: &Shared, snap: &RegionSnapshot) -> Option<RegionSnapshot> {
    if !snap.tombstones.is_empty() || snap.files.iter().all(|f| f.meta.last_rows.is_none()) {
        return None;
    }
    let files = snap
        .files
        .iter()
        .map(|f| match &f.meta.last_rows {
            Some(path) => FileHandle::new(
                FileMeta {
                    path: path.clone(),
                    last_rows: None,
                    ..f.meta.clone()
                },
                shared.store.clone(),
            ),
            None => f.clone(),
        })
        .collect();
    Some(RegionSnapshot {
        frozen: snap.frozen.clone(),
        files,
        tombstones: snap.tombstones.clone(),
    })
}

pub(crate) fn scan_region(
    shared: &Shared,
    rs: &RegionScan,
    fields: &[(String, FieldType)],
    time: Option<(i64, i64)>,
) -> Result<SortedRun> {
    scan_region_bounded(shared, rs, fields, time, &[]).map(|(run, _)| run)
}

/// [`scan_region`], also applying field `bounds` while the data file is read when the region
/// has one source (one file and nothing in the memtable); the flag says whether they were.
pub(crate) fn scan_region_bounded(
    shared: &Shared,
    rs: &RegionScan,
    fields: &[(String, FieldType)],
    time: Option<(i64, i64)>,
    bounds: &[crate::field_bound::FieldBound],
) -> Result<(SortedRun, bool)> {
    let (region, ids) = (&rs.region, rs.ids.as_ref());
    let (keys, mut runs) = {
        let index = region.index_read()?;
        let keys: Option<Arc<Vec<Bytes>>> = ids.map(|b| {
            let mut k: Vec<Bytes> = b
                .iter()
                .filter_map(|i| index.key(SeriesId(i)))
                .map(Bytes::copy_from_slice)
                .collect();
            k.sort_unstable();
            Arc::new(k)
        });
        let key_of = |id: u32| Bytes::copy_from_slice(index.key(SeriesId(id)).expect("indexed"));
        let mut runs = Vec::new();
        for part in &rs.snap.frozen {
            let b = filter_part(&part.batch, ids, time)?;
            let b = tombstone::apply_to_part(&b, &rs.snap.tombstones, key_of)?;
            if b.num_rows() > 0 {
                runs.push(SortedRun::from_series_batch(&b, fields, key_of)?);
            }
        }
        (keys, runs)
    };
    let bounded = !bounds.is_empty() && runs.is_empty() && rs.snap.files.len() == 1;
    let filter = SstFilter {
        time,
        keys,
        bounds: if bounded { bounds.to_vec() } else { Vec::new() },
    };
    for f in &rs.snap.files {
        let file = shared.sst_cache.get(&shared.store, &f.meta.path)?;
        let run = read_sst_cached(&f.meta.path, &file, fields, &filter, &shared.decoded_cache)?;
        let tombs = tombstone::for_file(&rs.snap.tombstones, &f.meta);
        runs.push(tombstone::apply_to_run(run, &tombs)?);
    }
    Ok((merge_runs(&runs, fields)?, bounded))
}

fn filter_part(
    b: &RecordBatch,
    ids: Option<&RoaringBitmap>,
    time: Option<(i64, i64)>,
) -> Result<RecordBatch> {
    if ids.is_none() && time.is_none() {
        return Ok(b.clone());
    }
    let s = b.column(0).as_primitive::<UInt32Type>().values();
    let t = b.column(1).as_primitive::<Int64Type>().values();
    let mask: BooleanArray = (0..b.num_rows())
        .map(|i| {
            Some(
                ids.is_none_or(|m| m.contains(s[i]))
                    && time.is_none_or(|(st, e)| t[i] >= st && t[i] < e),
            )
        })
        .collect();
    Ok(filter_record_batch(b, &mask)?)
}

/// Converts a run to the scan output shape, decoding each key once.
pub(crate) fn to_output(
    run: &SortedRun,
    tags: &[String],
    fields: &[(String, FieldType)],
    form: TagForm,
) -> Result<RecordBatch> {
    let ranks = UInt32Array::from(run.ranks().to_vec());
    let mut cols: Vec<ArrayRef> = Vec::new();
    for values in run.tag_values(tags)? {
        cols.push(match form {
            TagForm::Strings => take(&values, &ranks, None)?,
            TagForm::Dictionary => Arc::new(DictionaryArray::<UInt32Type>::try_new(
                ranks.clone(),
                Arc::new(values),
            )?),
        });
    }
    cols.push(Arc::new(run.time_column()));
    cols.extend(run.batch.columns().iter().skip(3).cloned());
    Ok(RecordBatch::try_new(
        output_schema_as(tags, fields, form),
        cols,
    )?)
}
