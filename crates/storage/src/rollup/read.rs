//! A region's rollup read for a scan: the merged states of its files' rollups at one
//! resolution over whole buckets, and the buckets only raw rows answer exactly.
//!
//! A bucket is left to raw rows when anything could make the files' states differ from an
//! aggregate of the rows a scan sees: a memtable row in it (written after the files), a
//! tombstone that may hide rows of a file in it, a file without this rollup (written before
//! the table declared it) over it, or two files whose spans for one series in it overlap (a
//! point may be in both, the newer one winning field by field). The caller reads those
//! buckets' raw rows ([`crate::ScanPlan::read_run_in`]) and takes no state of them. Files
//! whose raw rows expired (`rollup_only`) are read like the others; a bucket of theirs left to
//! raw rows fails there, since those rows are gone.

use std::sync::Arc;

use arrow::array::{AsArray, BooleanArray};
use arrow::datatypes::Int64Type;
use bytes::Bytes;
use tempora_model::{FieldType, SeriesId};

use super::file::{RollupFilter, decode_cached};
use super::partial::{PartialRun, bucket_of, merge};
use crate::error::Result;
use crate::maintenance::tombstone;
use crate::read::Reader;
use crate::read::region_read::RegionScan;

/// What a region's rollup read gives.
#[derive(Debug)]
pub struct RollupRead {
    /// States per (series, bucket) of the buckets not in `raw`.
    pub run: Option<PartialRun>,
    /// Sorted, disjoint, bucket-aligned ranges `[start, end)` to read raw rows for.
    pub raw: Vec<(i64, i64)>,
    /// Rollup files read.
    pub files: usize,
}

/// Reads region `rs`'s rollups at `res` over `[start, end)` (both multiples of `res`) for the
/// numeric fields `want`.
pub(crate) fn read_region(
    reader: &Reader,
    rs: &RegionScan,
    want: &[(String, FieldType)],
    res: i64,
    (start, end): (i64, i64),
) -> Result<RollupRead> {
    assert!(
        start % res == 0 && end % res == 0 && start < end,
        "whole buckets"
    );
    let mut raw: Vec<(i64, i64)> = Vec::new();
    // Clipped to the read and widened to whole buckets.
    let mut dirty = |lo: i64, hi_incl: i64| {
        let (lo, hi) = (lo.max(start), hi_incl.min(end - 1));
        if lo <= hi {
            raw.push((bucket_of(lo, res), bucket_of(hi, res) + res));
        }
    };
    for part in &rs.snap.frozen {
        let times = part.batch.column(1).as_primitive::<Int64Type>().values();
        let mut last = i64::MIN;
        for &t in times.iter() {
            if t >= start && t < end {
                let b = bucket_of(t, res);
                if b != last {
                    dirty(b, b);
                    last = b;
                }
            }
        }
    }
    let keys = selected_keys(rs)?;
    let filter = RollupFilter {
        buckets: Some((start, end)),
        keys,
    };
    let mut parts = Vec::new();
    for f in rs.snap.files.iter().chain(&rs.snap.rollup_only) {
        let m = &f.meta;
        if m.max_time < start || m.min_time >= end {
            continue;
        }
        for t in tombstone::for_file(&rs.snap.tombstones, m) {
            dirty(t.start.max(m.min_time), (t.end - 1).min(m.max_time));
        }
        match m.rollups.iter().find(|r| r.resolution_ns == res) {
            None => dirty(m.min_time, m.max_time),
            Some(r) => {
                let file = reader.caches.files.get(&reader.store, &r.path)?;
                let cache = Some(&reader.caches.decoded);
                parts.push(decode_cached(&file, &r.path, res, want, &filter, cache)?);
            }
        }
    }
    let files = parts.len();
    let merged = merge(parts, want)?;
    for b in merged.overlapping {
        dirty(b, b);
    }
    let raw = normalize(raw);
    let run = merged.run.map(|r| outside(r, &raw)).transpose()?.flatten();
    Ok(RollupRead { run, raw, files })
}

/// The rows of `run` whose bucket none of `ranges` (sorted, disjoint) holds; `None` when no
/// row is left.
pub fn outside(run: PartialRun, ranges: &[(i64, i64)]) -> Result<Option<PartialRun>> {
    let run = if ranges.is_empty() {
        run
    } else {
        let keep: BooleanArray = run
            .buckets()
            .iter()
            .map(|&b| Some(!covers(ranges, b)))
            .collect();
        run.filter(&keep)?
    };
    Ok((run.num_rows() > 0).then_some(run))
}

/// The sorted keys of the series the scan selected (`None`: all).
fn selected_keys(rs: &RegionScan) -> Result<Option<Arc<Vec<Bytes>>>> {
    let Some(ids) = rs.ids.as_ref() else {
        return Ok(None);
    };
    let index = rs.region.index_read()?;
    let mut k: Vec<Bytes> = ids
        .iter()
        .filter_map(|i| index.key(SeriesId(i)))
        .map(Bytes::copy_from_slice)
        .collect();
    k.sort_unstable();
    Ok(Some(Arc::new(k)))
}

/// Ranges sorted and merged where they touch.
pub fn normalize(mut r: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    r.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::with_capacity(r.len());
    for (s, e) in r {
        match out.last_mut() {
            Some(l) if s <= l.1 => l.1 = l.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// Whether sorted disjoint `ranges` hold `t`.
pub fn covers(ranges: &[(i64, i64)], t: i64) -> bool {
    let i = ranges.partition_point(|r| r.1 <= t);
    ranges.get(i).is_some_and(|r| r.0 <= t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_normalize_and_cover() {
        let r = normalize(vec![(20, 30), (0, 10), (10, 15), (40, 50), (45, 60)]);
        assert_eq!(r, vec![(0, 15), (20, 30), (40, 60)]);
        for (t, want) in [
            (-1, false),
            (0, true),
            (14, true),
            (15, false),
            (29, true),
            (30, false),
            (59, true),
            (60, false),
        ] {
            assert_eq!(covers(&r, t), want, "{t}");
        }
    }
}
