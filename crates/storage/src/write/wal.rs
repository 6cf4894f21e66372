//! The engine's use of the write-ahead log: where each worker's log lives ([`WalFactory`]) and
//! what a record holds.
//!
//! A record is one request's rows for one region: the region address (table id u32, partition
//! i64, bucket u32, little-endian; 16 bytes), then the rows as `RowBatch::encode_rows_keyed`
//! writes them, naming a series by its region-local id once its key is durable (in an earlier
//! committed record or in a persisted index) and by its key otherwise.
//!
//! Invariant: a record names a series by id only when replay can resolve that id: the key is
//! in the region's persisted index, or in a record committed before this one.

use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::Mutex;
use tempora_model::{RowBatch, SeriesId, TableId};
use tempora_wal::{FsLogStore, LogStore, WalOptions};

use crate::catalog::Region;
use crate::error::{Result, StorageError};
use crate::files::manifest::RegionKey;
use crate::options::EngineOptions;

/// Where each worker's WAL lives.
pub trait WalFactory: Send + Sync {
    /// The log store of worker `id`.
    fn store(&self, id: usize) -> Result<Arc<dyn LogStore>>;
    /// Ids of the logs that exist (possibly more than the current worker count).
    fn existing(&self) -> Result<Vec<usize>>;
}

/// WALs in `dir/{id}` on local disk.
pub struct DirWals(pub PathBuf);

impl WalFactory for DirWals {
    fn store(&self, id: usize) -> Result<Arc<dyn LogStore>> {
        let dir = self.0.join(id.to_string());
        let s = FsLogStore::new(&dir)
            .map_err(|e| crate::error::io_err("open wal", dir.display().to_string(), e))?;
        Ok(Arc::new(s))
    }
    fn existing(&self) -> Result<Vec<usize>> {
        let Ok(rd) = std::fs::read_dir(&self.0) else {
            return Ok(Vec::new());
        };
        Ok(rd
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
            .collect())
    }
}

/// WALs in memory, for tests: `crash` drops every byte of every log that was not synced.
#[derive(Default)]
pub struct MemWals {
    logs: Mutex<std::collections::BTreeMap<usize, Arc<tempora_wal::MemLogStore>>>,
}

impl MemWals {
    pub fn crash(&self) {
        for l in self.logs.lock().values() {
            l.crash();
        }
    }
}

impl WalFactory for MemWals {
    fn store(&self, id: usize) -> Result<Arc<dyn LogStore>> {
        Ok(self
            .logs
            .lock()
            .entry(id)
            .or_insert_with(|| Arc::new(tempora_wal::MemLogStore::new()))
            .clone())
    }
    fn existing(&self) -> Result<Vec<usize>> {
        Ok(self.logs.lock().keys().copied().collect())
    }
}

/// The WAL options the engine options ask for.
pub(crate) fn wal_options(opts: &EngineOptions) -> WalOptions {
    WalOptions {
        segment_size: opts.wal_segment_bytes,
        sync: opts.wal_sync,
        ..WalOptions::default()
    }
}

/// Length of the region address at the head of a record.
pub(crate) const ADDRESS_LEN: usize = 16;

/// Encodes a WAL record: region address then the rows, naming a series by id when its key
/// is already durable and by key otherwise.
pub(crate) fn encode_record(
    region: &Region,
    batch: &RowBatch,
    rows: &[u32],
    ids: &[SeriesId],
    out: &mut Vec<u8>,
) {
    out.extend_from_slice(&region.key.table.0.to_le_bytes());
    out.extend_from_slice(&region.key.partition.to_le_bytes());
    out.extend_from_slice(&region.key.bucket.to_le_bytes());
    let logged = region.logged.lock();
    let durable = region
        .durable_prefix
        .load(std::sync::atomic::Ordering::SeqCst);
    let next = std::cell::Cell::new(0usize);
    batch.encode_rows_keyed(
        Some(rows),
        |_| {
            let id = ids[next.get()];
            next.set(next.get() + 1);
            (logged.contains(id.0) || id.0 < durable).then_some(id.0)
        },
        out,
    );
}

/// Reads the region address at the head of a WAL record.
pub(crate) fn record_region(payload: &[u8]) -> Result<RegionKey> {
    if payload.len() < ADDRESS_LEN {
        return Err(StorageError::Model(
            tempora_model::ModelError::CorruptBatch {
                offset: payload.len(),
                reason: "record shorter than its region address",
            },
        ));
    }
    let le4 =
        |r: std::ops::Range<usize>| u32::from_le_bytes(payload[r].try_into().expect("4 bytes"));
    Ok(RegionKey {
        table: TableId(le4(0..4)),
        partition: i64::from_le_bytes(payload[4..12].try_into().expect("8 bytes")),
        bucket: le4(12..16),
    })
}
