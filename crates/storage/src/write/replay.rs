//! Start-up: rebuild tables and regions from the manifest, then replay every WAL.
//!
//! Replay applies a record only to a region whose flushed sequence is below the record's, and
//! skips records of dropped tables and expired partitions. The engine then accepts writes at
//! once and its workers flush the replayed rows in the background (Lindorm §7): each region was
//! moved to the worker whose log holds its records, so that worker's first flush covers them and
//! lets it truncate its log. Logs of workers that no longer exist are flushed and truncated here.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crossbeam::channel::bounded;
use parking_lot::Mutex;

use tempora_index::SeriesIndex;
use tempora_model::{RowBatch, SeqNo, SeriesId};
use tempora_wal::{Wal, WalOptions};

use crate::catalog::{Catalog, FileHandle, Table};
use crate::clock::Clock;
use crate::error::{Result, StorageError};
use crate::files::manifest::LegacyLayout;
use crate::maintenance::flush::{Flusher, collect_flush_job, run_flush};
use crate::metrics::Metrics;
use crate::write::budget::Budget;
use crate::write::regions::Placement;
use crate::write::wal::{WalFactory, record_region};
use crate::write::worker::resolve_series;

/// What start-up works on: the catalog it fills, where regions go and what their memtables
/// cost, and how the WALs are read.
pub(crate) struct Replay<'a> {
    pub catalog: &'a Catalog,
    pub placement: &'a Placement,
    pub budget: &'a Budget,
    pub metrics: &'a Metrics,
    pub clock: &'a dyn Clock,
    /// How records written before partitions were sized to the data are read.
    pub legacy: LegacyLayout,
    /// Workers of this run (logs of higher ids belong to no worker).
    pub workers: usize,
    /// Threads that apply replayed records.
    pub threads: usize,
    pub wal: WalOptions,
}

/// Builds tables and regions (with files and persisted indexes) from the manifest.
pub(crate) fn load_manifest_state(r: &Replay) -> Result<()> {
    let state = r.catalog.manifest().state().clone();
    let store = &r.placement.io().store;
    let mut max_seq = 0;
    let mut tables: Vec<Arc<Table>> = Vec::with_capacity(state.tables.len());
    for (name, meta) in &state.tables {
        let effective = r.catalog.effective_for(name, meta.settings);
        let t = Table::new(name, meta.id, meta.schema.clone(), meta.settings, effective);
        if let Some(spec) = &meta.dense {
            t.set_dense(r.catalog.open_dense(&t, spec.clone())?);
        }
        tables.push(Arc::new(t));
    }
    for meta in state.regions.values() {
        let Some(table) = tables.iter().find(|t| t.id == meta.key.table) else {
            continue;
        };
        // The index stays on disk until first used; its header says how many series it holds.
        let persisted = match &meta.index_path {
            Some(p) => {
                let head = store.get_range(p, 0..tempora_index::HEADER_LEN as u64)?;
                Some((p.clone(), SeriesIndex::peek_series_count(&head)?))
            }
            None => None,
        };
        let region = r.placement.restore(meta.key, persisted);
        region.flushed_seq.store(meta.flushed_seq, Ordering::SeqCst);
        region
            .lvc_from_files
            .store(meta.files.values().all(|f| f.raw_expired), Ordering::SeqCst);
        let (rollup_only, files): (Vec<_>, Vec<_>) = meta
            .files
            .values()
            .map(|f| FileHandle::new(f.clone(), store.clone()))
            .partition(|f| f.meta.raw_expired);
        *region.files.write() = files;
        *region.rollup_only.write() = rollup_only;
        *region.tombstones.write() = Arc::new(meta.tombstones.clone());
        max_seq = max_seq
            .max(meta.flushed_seq)
            .max(
                meta.files
                    .values()
                    .map(|f| f.max_seq.max(f.purged_seq))
                    .max()
                    .unwrap_or(0),
            )
            .max(meta.tombstones.iter().map(|t| t.seq).max().unwrap_or(0));
        table.add_span(meta.key.span());
        table
            .regions
            .write()
            .insert((meta.key.start, meta.key.bucket), Arc::new(region));
    }
    r.catalog.restore(tables);
    let orphans = r.catalog.remove_orphan_dense();
    if orphans > 0 {
        tracing::info!(orphans, "removed the dense files of dropped tables");
    }
    r.catalog.observe_seq(SeqNo(max_seq.max(state.seq_floor)));
    Ok(())
}

/// Applies one replayed record. Its rows name series by key the first time the log mentions
/// them and by id afterwards; ids resolve against the region index, which was persisted with
/// the last flush and is rebuilt in log order from there.
fn apply_record(r: &Replay, seq: SeqNo, payload: &[u8], pin: Option<usize>) -> Result<usize> {
    r.catalog.observe_seq(seq);
    let (key, address_len) = record_region(payload, r.legacy)?;
    let Some(table) = r.catalog.table_by_id(key.table) else {
        return Ok(0); // the table was dropped
    };
    if let Some(cutoff) = table.retention_cutoff(r.clock.now_ns())
        && key.end <= cutoff
    {
        return Ok(0); // the partition expired
    }
    let region = r.placement.region_or_create(&table, key.span(), key.bucket);
    if seq.0 <= region.flushed_seq.load(Ordering::SeqCst) {
        return Ok(0);
    }
    if let Some(w) = pin
        && region.worker() != w
    {
        r.placement.move_region(&region, w, r.budget);
    }
    let batch = {
        let index = region.index_read()?;
        RowBatch::decode_keyed(&payload[address_len..], |id| index.key(SeriesId(id)))?
    };
    let (rejected, field_map) = table.check(&batch, usize::MAX);
    if !rejected.is_empty() {
        tracing::warn!(
            seq = seq.0,
            rows = rejected.len(),
            "replayed rows conflict with the schema; skipped"
        );
    }
    let mut skip = rejected.iter().map(|r| r.row as u32).peekable();
    let rows: Vec<u32> = (0..batch.len() as u32)
        .filter(|i| {
            if skip.peek() == Some(i) {
                skip.next();
                false
            } else {
                true
            }
        })
        .collect();
    let mut refused = Vec::new();
    let (kept, ids) = resolve_series(&region, &batch, &rows, &mut refused);
    let it = kept.iter().zip(&ids).map(|(&r, &sid)| {
        let row = batch.row(r as usize);
        (sid, row.time.0, row.fields)
    });
    let added = region.apply(it, seq, &field_map);
    region.logged.lock().extend(ids.iter().map(|s| s.0));
    r.budget.add(region.worker(), added);
    Ok(kept.len())
}

/// Rows replayed: in all, and from logs of workers that no longer exist.
struct Replayed {
    rows: AtomicUsize,
    foreign_rows: AtomicUsize,
}

/// Applies replayed records on `threads` threads. A record goes to the thread its region
/// hashes to, so each region's records are applied in log order by one thread. A region with
/// records in worker `w`'s log is moved to worker `w`, so that worker's flushes cover them.
fn apply_parallel(r: &Replay, wals: &[(usize, Wal)]) -> Result<Replayed> {
    let threads = r.threads.max(1);
    let done = Replayed {
        rows: AtomicUsize::new(0),
        foreign_rows: AtomicUsize::new(0),
    };
    let failed: Mutex<Option<StorageError>> = Mutex::new(None);
    // Payload buffers are recycled: records are large and fresh allocations fault in pages.
    let (spare_tx, spare_rx) = bounded::<Vec<u8>>(threads * 1100);
    std::thread::scope(|scope| -> Result<()> {
        let mut senders = Vec::new();
        for _ in 0..threads {
            let (tx, rx) = bounded::<(SeqNo, Vec<u8>, Option<usize>)>(1024);
            senders.push(tx);
            let (done, failed, spare) = (&done, &failed, spare_tx.clone());
            scope.spawn(move || {
                for (seq, payload, pin) in rx {
                    match apply_record(r, seq, &payload, pin) {
                        Ok(n) => {
                            done.rows.fetch_add(n, Ordering::Relaxed);
                            if pin.is_none() {
                                done.foreign_rows.fetch_add(n, Ordering::Relaxed);
                            }
                            let _ = spare.try_send(payload);
                        }
                        Err(e) => {
                            failed.lock().get_or_insert(e);
                            return;
                        }
                    }
                }
            });
        }
        for (id, wal) in wals {
            let pin = (*id < r.workers).then_some(*id);
            wal.replay(SeqNo(0), threads, |seq, payload| -> Result<()> {
                if let Some(e) = failed.lock().as_ref() {
                    return Err(e.replicate());
                }
                // One thread per region, so its records apply in log order (legacy and
                // current addresses of one region hash alike).
                let region = record_region(payload, r.legacy).map_or(0, |(k, _)| {
                    let mut a = [0u8; 16];
                    a[..4].copy_from_slice(&k.table.0.to_le_bytes());
                    a[4..12].copy_from_slice(&k.start.to_le_bytes());
                    a[12..].copy_from_slice(&k.bucket.to_le_bytes());
                    tempora_model::series_hash(&a)
                });
                let tx = &senders[(region % threads as u64) as usize];
                let mut buf = spare_rx.try_recv().unwrap_or_default();
                buf.clear();
                buf.extend_from_slice(payload);
                tx.send((seq, buf, pin)).map_err(|_| StorageError::ShutDown)
            })?;
        }
        Ok(())
    })?;
    if let Some(e) = failed.into_inner() {
        return Err(e);
    }
    Ok(done)
}

/// Replays every WAL and returns one open WAL per worker, plus whether replayed rows wait in
/// memtables (the caller lets the workers flush them in the background, Lindorm §7).
///
/// Rows from the log of a worker that no longer exists (fewer workers than last run) are
/// flushed here, synchronously, and every log is truncated, since no worker owns that log.
pub(crate) fn replay_wals(
    r: &Replay,
    wals: &dyn WalFactory,
    flusher: &Flusher,
) -> Result<(Vec<Wal>, bool)> {
    let mut ids = wals.existing()?;
    ids.extend(0..r.workers);
    ids.sort_unstable();
    ids.dedup();
    let mut opened = Vec::new();
    for &id in &ids {
        // Damage names the log as well as the segment (`wal/0/….wal`).
        let wal = Wal::open(wals.store(id)?, r.wal.clone()).map_err(|e| match e {
            tempora_wal::WalError::Corrupt {
                segment,
                offset,
                reason,
            } => tempora_wal::WalError::Corrupt {
                segment: format!("wal/{id}/{segment}"),
                offset,
                reason,
            },
            e => e,
        })?;
        opened.push((id, wal));
    }
    let done = apply_parallel(r, &opened)?;
    let (rows, foreign) = (done.rows.into_inner(), done.foreign_rows.into_inner());
    tracing::info!(rows, "replayed rows from the write-ahead logs");
    r.metrics.rows_replayed.add(rows as u64);
    if foreign > 0 {
        flush_all(r, flusher)?;
        let last = SeqNo(r.catalog.seq_now());
        for (_, wal) in &mut opened {
            wal.truncate_before(last.next())?;
        }
    }
    let mine = opened
        .into_iter()
        .filter(|(id, _)| *id < r.workers)
        .map(|(_, w)| w)
        .collect();
    Ok((mine, rows > 0 && foreign == 0))
}

/// Flushes every region on the calling threads (one per worker).
fn flush_all(r: &Replay, flusher: &Flusher) -> Result<()> {
    let flush_seq = SeqNo(r.catalog.seq_now());
    std::thread::scope(|scope| -> Result<()> {
        let jobs: Vec<_> = (0..r.workers)
            .map(|w| {
                let job = collect_flush_job(r.catalog, w, flush_seq, Vec::new());
                scope.spawn(move || run_flush(flusher, &job))
            })
            .collect();
        for j in jobs {
            j.join().expect("flush thread panicked")?;
        }
        Ok(())
    })
}
