//! `DELETE`: one tombstone per region the delete touches, committed in one manifest edit.
//!
//! The delete takes a sequence number; rows written before it that match its time range and
//! series are hidden from every read at once (memtable and files), and compaction later
//! rewrites them away (see `tombstone`). Rows written after it stay, even at the same series
//! and time. The series are fixed when the delete runs: the index proposes candidates (a
//! superset, as for scans) and the caller's `series_filter` keeps exactly those its
//! predicate holds for, so `DELETE` follows SQL's rules for NULL tags.
//!
//! The last-value cache of each touched region is rebuilt from the data on its next read.

use std::sync::Arc;

use bytes::Bytes;
use roaring::RoaringBitmap;
use tempora_index::Matcher;
use tempora_model::SeriesId;

use crate::catalog::{Catalog, Region, Table};
use crate::error::Result;
use crate::files::manifest::Edit;
use crate::maintenance::tombstone::Tombstone;
use crate::read::Reader;
use crate::read::region_read::{RegionScan, scan_region};
use crate::read::scan::select;

/// Keeps, of candidate series given by key, those the delete names (one flag per key).
pub type SeriesFilter<'a> = &'a dyn Fn(&[Bytes]) -> Result<Vec<bool>>;

/// What to delete.
pub struct DeleteRequest<'a> {
    /// Inclusive start, exclusive end (ns); `None` = all time.
    pub time: Option<(i64, i64)>,
    /// Candidate series (a superset is fine when `series_filter` is set).
    pub matcher: Matcher,
    /// Exact choice among the candidates; `None` takes every candidate.
    pub series_filter: Option<SeriesFilter<'a>>,
}

/// Deletes the matching rows of `table`; returns how many (series, time) rows it hid
/// (counted when it read them: a write racing the delete may be hidden uncounted).
pub(crate) fn delete(
    catalog: &Catalog,
    reader: &Reader,
    table: &Table,
    req: &DeleteRequest,
) -> Result<u64> {
    let names = table.field_names();
    let (start, end) = req.time.unwrap_or((i64::MIN, i64::MAX));
    let mut targets: Vec<(Arc<Region>, Option<Vec<Bytes>>)> = Vec::new();
    let mut deleted = 0;
    for region in table.all_regions() {
        if !reader.overlaps(&region, req.time) {
            continue;
        }
        let chosen = choose_series(&region, req)?;
        if chosen.as_ref().is_some_and(|(ids, _)| ids.is_empty()) {
            continue;
        }
        let (ids, keys) = chosen.unzip();
        let rs = RegionScan {
            region: region.clone(),
            ids,
            snap: region.snapshot(&names),
        };
        let found = scan_region(reader, &rs, &[], Some((start, end)))?.num_rows();
        if found > 0 {
            deleted += found as u64;
            targets.push((region, keys));
        }
    }
    if targets.is_empty() {
        return Ok(0);
    }
    // The sequence number is taken under the manifest lock, and the tombstones are
    // installed before it is released: tombstones enter every region in sequence order,
    // so a file's purged_seq (the newest tombstone applied to it) covers every tombstone
    // at or below it, and no flush or compaction can have merged a row written after
    // this delete with one it hides without applying it first.
    {
        let mut manifest = catalog.manifest();
        let seq = catalog.next_seq().0;
        let tomb = |keys: &Option<Vec<Bytes>>| Tombstone {
            seq,
            start,
            end,
            keys: keys.clone(),
        };
        let edits = targets
            .iter()
            .map(|(r, keys)| Edit::AddTombstone {
                region: r.key,
                tombstone: tomb(keys),
            })
            .collect();
        manifest.commit(edits)?;
        for (region, keys) in &targets {
            let mut live = region.tombstones.write();
            let mut v = (**live).clone();
            v.push(tomb(keys));
            *live = Arc::new(v);
        }
    }
    for (region, _) in &targets {
        region.refill_lvc_later();
    }
    tracing::info!(table = %table.name, rows = deleted, "delete committed");
    Ok(deleted)
}

/// The series of a region a delete names, as ids and sorted keys; `None` = every series.
fn choose_series(
    region: &Arc<Region>,
    req: &DeleteRequest,
) -> Result<Option<(RoaringBitmap, Vec<Bytes>)>> {
    let candidates = select(region, &req.matcher)?;
    if candidates.is_none() && req.series_filter.is_none() {
        return Ok(None);
    }
    let mut pairs: Vec<(Bytes, u32)> = {
        let index = region.index_read()?;
        let key = |i: u32| {
            index
                .key(SeriesId(i))
                .map(|k| (Bytes::copy_from_slice(k), i))
        };
        match candidates {
            Some(ids) => ids.iter().filter_map(key).collect(),
            None => (0..index.len() as u32).filter_map(key).collect(),
        }
    };
    if let Some(filter) = req.series_filter {
        let keys: Vec<Bytes> = pairs.iter().map(|(k, _)| k.clone()).collect();
        let keep = filter(&keys)?;
        assert_eq!(keep.len(), keys.len(), "one flag per candidate series");
        let mut flags = keep.into_iter();
        pairs.retain(|_| flags.next().expect("one flag per key"));
    }
    pairs.sort_unstable();
    let ids = pairs.iter().map(|(_, i)| *i).collect();
    Ok(Some((ids, pairs.into_iter().map(|(k, _)| k).collect())))
}
