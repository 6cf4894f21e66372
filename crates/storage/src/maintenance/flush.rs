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
use tempora_model::SeqNo;

use crate::catalog::{Catalog, FileHandle, Region, Table};
use crate::error::Result;
use crate::files::manifest::{Edit, FileMeta};
use crate::maintenance::Output;
use crate::maintenance::output::PendingFile;
use crate::maintenance::tombstone;
use crate::metrics::Metrics;
use crate::read::run::{SortedRun, merge_runs};
use crate::write::budget::Budget;
use crate::write::memtable::FrozenPart;

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
    catalog: &Catalog,
    worker: usize,
    flush_seq: SeqNo,
    waiters: Vec<Sender<Result<()>>>,
) -> FlushJob {
    let mut regions = Vec::new();
    for table in catalog.tables() {
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

/// What a flush needs: where it writes and commits, the memtable budget it releases, and
/// the counters.
pub(crate) struct Flusher {
    pub out: Output,
    pub budget: Arc<Budget>,
    pub metrics: Arc<Metrics>,
}

/// Makes a job durable (runs on the flusher thread).
pub(crate) fn run_flush(f: &Flusher, job: &FlushJob) -> Result<()> {
    let mut edits = Vec::new();
    let mut installs = Vec::new();
    let mut tables = BTreeMap::new();
    let mut written = Vec::new();
    let mut superseded = Vec::new();
    let result = (|| -> Result<()> {
        for (table, region, parts) in &job.regions {
            let (meta, index_path, series) =
                flush_region(&f.out, table, region, parts, &mut written)?;
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
        let mut manifest = f.out.catalog.manifest();
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
            let _ = f.out.store.delete(&path);
        }
        return Err(e);
    }
    for (region, parts, meta, (index_path, series)) in installs {
        region.set_persisted(index_path, series);
        if let Some(meta) = meta {
            region
                .files
                .write()
                .push(FileHandle::new(meta, f.out.store.clone()));
        }
        region
            .flushed_seq
            .fetch_max(job.flush_seq.0, std::sync::atomic::Ordering::SeqCst);
        let bytes = region.release_parts(&parts);
        f.budget.sub(region.worker(), bytes);
    }
    for path in superseded {
        if let Err(e) = f.out.store.delete(&path) {
            tracing::warn!(path = %path, error = %e, "could not delete a superseded index");
        }
    }
    f.metrics.flushes.inc();
    Ok(())
}

/// Writes one region's parts as a data file and the region's index beside it; returns the
/// file (none when deletes left no row), the index path and how many series the index holds.
/// The region's tombstones are applied to each part before the parts are merged.
fn flush_region(
    out: &Output,
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
                let b = tombstone::apply_to_part(&p.sorted(), &tombs, key_of)?;
                SortedRun::from_series_batch(&b, &fields, key_of)
            })
            .collect::<Result<_>>()?;
        (runs, Bytes::from(index.encode()), index.len())
    };
    let run = merge_runs(&runs, &fields)?;
    // A flush holds many points per series even when every write held one per series.
    if let (Some(lo), Some(hi)) = (run.times().iter().min(), run.times().iter().max()) {
        table.observe_rate(run.num_rows(), run.keys.len(), hi - lo);
    }
    let purged = tombs.iter().map(|t| t.seq).max().unwrap_or(0);
    let meta = if run.num_rows() == 0 {
        None
    } else {
        let tags = table.tags();
        let rollups = table.effective().rollups;
        let mut file = PendingFile::new(&tags, &fields, &out.sst, &rollups, out.rollup_min_rows);
        file.append(&run)?;
        out.put_pending(region.key, file, purged, written)?
    };
    let id = match &meta {
        Some(m) => m.id,
        None => out.catalog.next_file_id(),
    };
    let index_path = format!("{}/{id:016x}.tidx", region.key.dir());
    out.store.put(&index_path, index_bytes)?;
    written.push(index_path.clone());
    Ok((meta, index_path, series))
}
