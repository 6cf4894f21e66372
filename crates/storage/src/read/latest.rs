//! Latest values: the newest point of every selected series, from the last-value cache.
//!
//! Each region's cache gives a snapshot of its selected series (`__series`, `time`, fields).
//! Snapshots are numbered newest partition first, so among the rows of one series key the
//! one from the lowest-numbered snapshot is its newest point (a series lives in one hash
//! bucket per partition, and partitions are time ranges). Rows are sorted by (key, snapshot)
//! and the first of each key kept; tags are decoded once per series, and each output column
//! is gathered from the snapshots in one `interleave`.
//!
//! Output: the scan's shape (`scan::output_schema`), one row per series, by series key.
//!
//! The cache is kept on write; after a restart or a delete a region's cache is filled once
//! from its data ([`ensure_lvc`]) before it answers.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::compute::interleave;
use arrow::datatypes::{Int64Type, UInt32Type};
use bytes::Bytes;
use tempora_index::Matcher;
use tempora_model::{FieldType, SeriesId};

use crate::catalog::{FileHandle, Region, RegionSnapshot, Table};
use crate::error::Result;
use crate::files::manifest::FileMeta;
use crate::files::store::FileStore;
use crate::read::Reader;
use crate::read::region_read::{RegionScan, scan_region};
use crate::read::run::arrow_type;
use crate::read::scan::{output_schema, select, selected_fields};

/// One output row: the series key, and where its point is (snapshot, row).
struct Pick {
    key: Bytes,
    at: (usize, usize),
}

/// At most how many rows [`latest`] reads for `table` (its regions' cache slots), or `None`
/// when the read would touch files: a region's cache must first be filled from them (after a
/// restart or a delete), or its series index was evicted to its file.
pub(crate) fn latest_rows_bound(table: &Table) -> Option<usize> {
    if table.dense().is_some() {
        return None; // read from the block files
    }
    let mut rows = 0;
    for region in table.all_regions() {
        let filled = region.lvc_from_files.load(Ordering::SeqCst);
        if !filled || !region.index_loaded() {
            return None;
        }
        rows += region.lvc.read().slots();
    }
    Some(rows)
}

/// The newest point of every selected series of `table`, answered from the last-value cache.
pub(crate) fn latest(
    reader: &Reader,
    table: &Table,
    matcher: &Matcher,
    fields: Option<&Vec<String>>,
) -> Result<RecordBatch> {
    let fields = selected_fields(table, fields)?;
    let plain: Vec<(String, FieldType)> = fields.iter().map(|(_, n, t)| (n.clone(), *t)).collect();
    let tags = table.tags();
    if let Some(dense) = table.dense() {
        dense.flush_pending()?;
        let run = crate::dense::scan::latest_run(dense, &dense.select(matcher), &plain)?;
        return crate::read::region_read::to_output(
            &run,
            &tags,
            &plain,
            crate::read::TagForm::Strings,
        );
    }
    let mut regions = table.all_regions();
    regions.sort_by_key(|r| std::cmp::Reverse(r.key.start));
    let mut picks: Vec<Pick> = Vec::new();
    let mut snaps: Vec<RecordBatch> = Vec::new();
    for region in regions {
        ensure_lvc(reader, table, &region)?;
        let ids = select(&region, matcher)?;
        let snap = region.lvc.read().snapshot(ids.as_ref(), &fields);
        let index = region.index_read()?;
        let series = snap.column(0).as_primitive::<UInt32Type>().values();
        picks.extend(series.iter().enumerate().map(|(row, &s)| Pick {
            key: Bytes::copy_from_slice(index.key(SeriesId(s)).expect("cached means indexed")),
            at: (snaps.len(), row),
        }));
        snaps.push(snap);
    }
    picks.sort_unstable_by(|a, b| a.key.cmp(&b.key).then(a.at.cmp(&b.at)));
    picks.dedup_by(|later, first| later.key == first.key);
    gather(&picks, &snaps, &tags, &plain)
}

/// The output batch: tags decoded from each pick's key, then time and fields gathered from
/// the snapshots (columns 1, 2, ... of each).
fn gather(
    picks: &[Pick],
    snaps: &[RecordBatch],
    tags: &[String],
    fields: &[(String, FieldType)],
) -> Result<RecordBatch> {
    let keys = picks.iter().map(|p| p.key.as_ref());
    let mut cols: Vec<ArrayRef> = super::run::tag_columns(keys, tags)?
        .into_iter()
        .map(|c| Arc::new(c) as ArrayRef)
        .collect();
    let at: Vec<(usize, usize)> = picks.iter().map(|p| p.at).collect();
    let times: Vec<&dyn Array> = snaps.iter().map(|s| s.column(1).as_ref()).collect();
    let times = if snaps.is_empty() {
        arrow::array::Int64Array::from(Vec::<i64>::new())
    } else {
        interleave(&times, &at)?.as_primitive::<Int64Type>().clone()
    };
    cols.push(Arc::new(
        arrow::array::TimestampNanosecondArray::new(times.values().clone(), None)
            .with_timezone("UTC"),
    ));
    for (i, (_, ty)) in fields.iter().enumerate() {
        if snaps.is_empty() {
            let t = arrow_type(*ty);
            cols.push(arrow::array::new_empty_array(&t));
            continue;
        }
        let col: Vec<&dyn Array> = snaps.iter().map(|s| s.column(2 + i).as_ref()).collect();
        cols.push(interleave(&col, &at)?);
    }
    Ok(RecordBatch::try_new(output_schema(tags, fields), cols)?)
}

/// Fills a region's last-value cache from its data (files and memtable, deletes applied)
/// once after a restart or a delete. Points written meanwhile are newer and win.
///
/// Each file is read through its newest rows (`FileMeta::last_rows`) when it has them and
/// no delete is pending: the newest row of each series of a merge is the newest row of the
/// merge of each source's newest rows. A newest-rows file that cannot be read is logged and
/// the whole files are read instead.
pub(crate) fn ensure_lvc(reader: &Reader, table: &Table, region: &Arc<Region>) -> Result<()> {
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
        scan_region(reader, &rs, &fields, None)
    };
    let newest = newest_rows_snapshot(&reader.store, &snap).map(read);
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
        let values = super::lvc::row_values(&run.batch, i, &field_map);
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
fn newest_rows_snapshot(store: &FileStore, snap: &RegionSnapshot) -> Option<RegionSnapshot> {
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
                    crc32c: None,
                    ..f.meta.clone()
                },
                store.clone(),
            ),
            None => f.clone(),
        })
        .collect();
    Some(RegionSnapshot {
        frozen: snap.frozen.clone(),
        files,
        rollup_only: Vec::new(),
        tombstones: snap.tombstones.clone(),
    })
}
