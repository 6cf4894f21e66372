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

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::compute::interleave;
use arrow::datatypes::{Int64Type, UInt32Type};
use bytes::Bytes;
use tempora_index::Matcher;
use tempora_model::{FieldType, SeriesId};

use crate::engine::Engine;
use crate::error::Result;
use crate::scan::{ensure_lvc, output_schema, select, selected_fields};

/// One output row: the series key, and where its point is (snapshot, row).
struct Pick {
    key: Bytes,
    at: (usize, usize),
}

impl Engine {
    /// At most how many rows [`Engine::latest`] reads for `table` (its regions' cache slots),
    /// or `None` when the read would touch files: a region's cache must first be filled from
    /// them (after a restart or a delete), or its series index was evicted to its file. Also
    /// `None` when the table does not exist. (A caller that runs small reads inline uses this;
    /// an eviction or a delete between the check and the read still makes that read load.)
    pub fn latest_rows_bound(&self, table: &str) -> Option<usize> {
        let table = self.table(table).ok()?;
        let mut rows = 0;
        for region in table.all_regions() {
            let filled = region
                .lvc_from_files
                .load(std::sync::atomic::Ordering::SeqCst);
            if !filled || !region.index_loaded() {
                return None;
            }
            rows += region.lvc.read().slots();
        }
        Some(rows)
    }

    /// The newest point of every selected series, answered from the last-value cache.
    pub fn latest(
        &self,
        table: &str,
        matcher: &Matcher,
        fields: Option<&Vec<String>>,
    ) -> Result<RecordBatch> {
        let table = self.table(table)?;
        let fields = selected_fields(&table, fields)?;
        let plain: Vec<(String, FieldType)> =
            fields.iter().map(|(_, n, t)| (n.clone(), *t)).collect();
        let tags = table.tags();
        let mut regions = table.all_regions();
        regions.sort_by_key(|r| std::cmp::Reverse(r.key.partition));
        let mut picks: Vec<Pick> = Vec::new();
        let mut snaps: Vec<RecordBatch> = Vec::new();
        for region in regions {
            ensure_lvc(&self.shared, &table, &region)?;
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
    let mut cols: Vec<ArrayRef> = crate::run::tag_columns(keys, tags)?
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
            let t = crate::memtable::arrow_type(*ty);
            cols.push(arrow::array::new_empty_array(&t));
            continue;
        }
        let col: Vec<&dyn Array> = snaps.iter().map(|s| s.column(2 + i).as_ref()).collect();
        cols.push(interleave(&col, &at)?);
    }
    Ok(RecordBatch::try_new(output_schema(tags, fields), cols)?)
}
