//! Flush: frozen memtable parts → one Parquet file per region, then one manifest edit.
//!
//! Order (each step durable before the next): put data files → put index snapshots → commit
//! the manifest edit (the commit point) → install the files in the regions and release the
//! frozen parts → the worker truncates its WAL. A crash before the commit leaves orphan files
//! (removed at the next start) and the rows still in the WAL; a crash after it leaves the rows
//! in files, and replay skips them by the regions' flushed sequence.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use crossbeam::channel::Sender;
use tempora_model::{FieldType, SeqNo};

use crate::engine::Shared;
use crate::error::Result;
use crate::manifest::{Edit, FileMeta, RegionKey};
use crate::memtable::FrozenPart;
use crate::region::{FileHandle, Region};
use crate::run::{SortedRun, merge_runs};
use crate::sst::{SstWriteOptions, write_sst};
use crate::table::Table;
use crate::tombstone;

/// A region, its table, and the frozen parts to flush.
pub(crate) type RegionParts = (Arc<Table>, Arc<Region>, Vec<Arc<FrozenPart>>);

/// Work handed from a worker to the flusher thread.
pub(crate) struct FlushJob {
    /// Every write of this worker at or below this sequence is in `regions`' parts.
    pub flush_seq: SeqNo,
    pub regions: Vec<RegionParts>,
    pub waiters: Vec<Sender<Result<()>>>,
}

/// Freezes every region of `worker` and gathers what to flush (runs on the worker thread).
pub(crate) fn collect_flush_job(
    shared: &Shared,
    worker: usize,
    flush_seq: SeqNo,
    waiters: Vec<Sender<Result<()>>>,
) -> FlushJob {
    let mut regions = Vec::new();
    for table in shared.all_tables() {
        let names = table.field_names();
        for region in table.all_regions() {
            if region.worker() != worker {
                continue;
            }
            region.freeze(&names);
            let parts = region.frozen.read().clone();
            if !parts.is_empty() {
                regions.push((table.clone(), region, parts));
            }
        }
    }
    FlushJob {
        flush_seq,
        regions,
        waiters,
    }
}

/// Makes a job durable (runs on the flusher thread).
pub(crate) fn run_flush(shared: &Shared, job: &FlushJob) -> Result<()> {
    let mut edits = Vec::new();
    let mut installs = Vec::new();
    let mut tables = BTreeMap::new();
    let mut written = Vec::new();
    let mut superseded = Vec::new();
    let result = (|| -> Result<()> {
        for (table, region, parts) in &job.regions {
            let (meta, index_path, series) =
                flush_region(shared, table, region, parts, &mut written)?;
            edits.push(Edit::Flush {
                region: region.key,
                files: meta.iter().cloned().collect(),
                flushed_seq: job.flush_seq.0,
                index_path: Some(index_path.clone()),
            });
            installs.push((region.clone(), parts.clone(), meta, (index_path, series)));
            tables.insert(table.name.clone(), table.clone());
        }
        for (name, t) in &tables {
            edits.push(Edit::SetSchema {
                name: name.clone(),
                schema: (*t.schema()).clone(),
            });
        }
        if edits.is_empty() {
            return Ok(());
        }
        let mut manifest = shared.manifest.lock();
        for (_, region, _) in &job.regions {
            if let Some(old) = manifest
                .state()
                .region(&region.key)
                .and_then(|r| r.index_path.clone())
            {
                superseded.push(old);
            }
        }
        manifest.commit(edits)?;
        Ok(())
    })();
    if let Err(e) = result {
        for path in written {
            let _ = shared.store.delete(&path);
        }
        return Err(e);
    }
    for (region, parts, meta, (index_path, series)) in installs {
        region.set_persisted(index_path, series);
        if let Some(meta) = meta {
            region
                .files
                .write()
                .push(FileHandle::new(meta, shared.store.clone()));
        }
        region
            .flushed_seq
            .fetch_max(job.flush_seq.0, std::sync::atomic::Ordering::SeqCst);
        let bytes = region.release_parts(&parts);
        shared.sub_bytes(region.worker(), bytes);
    }
    for path in superseded {
        if let Err(e) = shared.store.delete(&path) {
            tracing::warn!(path = %path, error = %e, "could not delete a superseded index");
        }
    }
    shared.metrics.flushes.inc();
    Ok(())
}

/// Writes one region's parts as a data file and the region's index beside it; returns the
/// file (none when deletes left no row), the index path and how many series the index holds.
/// The region's tombstones are applied to each part before the parts are merged.
fn flush_region(
    shared: &Shared,
    table: &Table,
    region: &Arc<Region>,
    parts: &[Arc<FrozenPart>],
    written: &mut Vec<String>,
) -> Result<(Option<FileMeta>, String, usize)> {
    let fields = table.fields();
    let tombs = region.tombstones.read().clone();
    let (runs, index_bytes, series) = {
        let index = region.index_read()?;
        let key_of = |id: u32| {
            Bytes::copy_from_slice(
                index
                    .key(tempora_model::SeriesId(id))
                    .expect("series in index"),
            )
        };
        let runs: Vec<SortedRun> = parts
            .iter()
            .map(|p| {
                let b = tombstone::apply_to_part(&p.batch, &tombs, key_of)?;
                SortedRun::from_series_batch(&b, &fields, key_of)
            })
            .collect::<Result<_>>()?;
        (runs, Bytes::from(index.encode()), index.len())
    };
    let run = merge_runs(&runs, &fields)?;
    let purged = tombs.iter().map(|t| t.seq).max().unwrap_or(0);
    let meta = if run.num_rows() == 0 {
        None
    } else {
        let tags = table.tags();
        Some(put_data_file(
            shared, region.key, &run, &tags, &fields, purged, written,
        )?)
    };
    let id = match &meta {
        Some(m) => m.id,
        None => shared.manifest.lock().next_file_id(),
    };
    let index_path = format!("{}/{id:016x}.tidx", region.key.dir());
    shared.store.put(&index_path, index_bytes)?;
    written.push(index_path.clone());
    Ok((meta, index_path, series))
}

/// Encodes a run as a data file of region `key`, puts it (adding its path to `written`, so a
/// failed commit can delete it) and returns its manifest entry. Flush and compaction share it.
/// `purged_seq` is the newest tombstone already applied to the run.
pub(crate) fn put_data_file(
    shared: &Shared,
    key: RegionKey,
    run: &SortedRun,
    tags: &[String],
    fields: &[(String, FieldType)],
    purged_seq: u64,
    written: &mut Vec<String>,
) -> Result<FileMeta> {
    assert!(run.num_rows() > 0, "a data file holds at least one row");
    let opts = SstWriteOptions {
        row_group_rows: shared.opts.row_group_rows,
        zstd_level: shared.opts.zstd_level,
    };
    let (data, stats) = write_sst(run, tags, fields, &opts)?;
    let id = shared.manifest.lock().next_file_id();
    let path = format!("{}/{id:016x}.parquet", key.dir());
    shared.store.put(&path, data)?;
    written.push(path.clone());
    let last_rows = if worth_last_rows(run.keys.len(), run.num_rows()) {
        let (data, _) = write_sst(&run.last_per_key(), tags, fields, &opts)?;
        let last = format!("{}/{id:016x}.last", key.dir());
        shared.store.put(&last, data)?;
        written.push(last.clone());
        Some(last)
    } else {
        None
    };
    Ok(FileMeta {
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
    })
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
