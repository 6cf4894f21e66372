//! Reading one region of a planned scan: its memtable parts and files, each filtered by
//! series and time and cleared of what tombstones hide, then merged into one run.
//!
//! Invariants:
//! - Tombstones apply to each memtable part and each file before they are merged (see
//!   `maintenance::tombstone`).
//! - Field bounds are applied while a file is read only when that file is the region's only
//!   source: a row a bound drops may be the newest version of a (series, time) that another
//!   source also holds, and dropping it first would bring the older one back.

use std::sync::Arc;

use arrow::array::{ArrayRef, DictionaryArray, RecordBatch, UInt32Array};
use arrow::compute::take;
use arrow::datatypes::UInt32Type;
use bytes::Bytes;
use roaring::RoaringBitmap;
use tempora_model::{FieldType, SeriesId};

use crate::catalog::{Region, RegionSnapshot};
use crate::error::Result;
use crate::files::sst::{SstFilter, read_sst_cached};
use crate::maintenance::tombstone;
use crate::read::Reader;
use crate::read::field_bound::FieldBound;
use crate::read::run::{SortedRun, merge_runs};
use crate::read::scan::{TagForm, output_schema_as};

/// One region's share of a planned scan: its snapshot and the series the matcher chose
/// (`None` = every series).
pub(crate) struct RegionScan {
    pub region: Arc<Region>,
    pub ids: Option<RoaringBitmap>,
    pub snap: RegionSnapshot,
}

/// Reads one region's share of a scan as a run (series keys, ranks, time, seq, then
/// `fields`), each (series, time) once.
pub(crate) fn scan_region(
    reader: &Reader,
    rs: &RegionScan,
    fields: &[(String, FieldType)],
    time: Option<(i64, i64)>,
) -> Result<SortedRun> {
    scan_region_bounded(reader, rs, fields, time, &[]).map(|(run, _)| run)
}

/// [`scan_region`], also applying field `bounds` while the data file is read when the region
/// has one source (one file and nothing in the memtable); the flag says whether they were.
pub(crate) fn scan_region_bounded(
    reader: &Reader,
    rs: &RegionScan,
    fields: &[(String, FieldType)],
    time: Option<(i64, i64)>,
    bounds: &[FieldBound],
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
        let names: Vec<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
        for part in &rs.snap.frozen {
            // Sorted by series (once per part), so the run needs no sort of its own.
            let b = part.sorted_rows(ids, time, &names);
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
        let caches = &reader.caches;
        let file = caches.files.get(&reader.store, &f.meta.path)?;
        let run = read_sst_cached(&f.meta.path, &file, fields, &filter, &caches.decoded)?;
        let tombs = tombstone::for_file(&rs.snap.tombstones, &f.meta);
        runs.push(tombstone::apply_to_run(run, &tombs)?);
    }
    Ok((merge_runs(&runs, fields)?, bounded))
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
