//! The engine's use of the write-ahead log: where each worker's log lives ([`WalFactory`]) and
//! what a record holds.
//!
//! A record is one request's rows for one region: the region address, then the rows as
//! `RowBatch::encode_rows_keyed` writes them, naming a series by its region-local id once its
//! key is durable (in an earlier committed record or in a persisted index) and by its key
//! otherwise. The address is, little-endian, the table id u32 with its top bit set
//! ([`SPAN_FLAG`]), the partition's start i64 and end i64, the bucket u32 and the partition's
//! bucket count u32: 28 bytes. Records written before partitions were sized to the data have
//! the table id without the flag, a partition index i64 and the bucket u32 (16 bytes), read in
//! the engine's legacy layout.
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
use crate::files::manifest::{LegacyLayout, RegionKey};
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
        let mut ids = Vec::new();
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            // A log `tempora repair` is swapping: opening now could miss its records.
            if name.ends_with(crate::check::REPAIRING) || name.ends_with(crate::check::DAMAGED) {
                return Err(StorageError::Corrupt {
                    path: e.path().display().to_string(),
                    reason: "a repair of this log was interrupted: run `tempora repair` again"
                        .into(),
                });
            }
            ids.extend(name.parse::<usize>().ok());
        }
        Ok(ids)
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
pub(crate) const ADDRESS_LEN: usize = 28;
/// Length of a legacy record's address.
const LEGACY_ADDRESS_LEN: usize = 16;
/// Set in the table id of an address that holds a span.
pub(crate) const SPAN_FLAG: u32 = 1 << 31;

/// Encodes a WAL record: region address then the rows, naming a series by id when its key
/// is already durable and by key otherwise.
pub(crate) fn encode_record(
    region: &Region,
    batch: &RowBatch,
    rows: &[u32],
    ids: &[SeriesId],
    out: &mut Vec<u8>,
) {
    let k = &region.key;
    debug_assert!(k.table.0 & SPAN_FLAG == 0, "table ids stay below 2^31");
    out.extend_from_slice(&(k.table.0 | SPAN_FLAG).to_le_bytes());
    out.extend_from_slice(&k.start.to_le_bytes());
    out.extend_from_slice(&k.end.to_le_bytes());
    out.extend_from_slice(&k.bucket.to_le_bytes());
    out.extend_from_slice(&k.buckets.to_le_bytes());
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

/// Reads the region address at the head of a WAL record: the key and the address's length.
pub(crate) fn record_region(payload: &[u8], legacy: LegacyLayout) -> Result<(RegionKey, usize)> {
    let short = |reason| {
        StorageError::Model(tempora_model::ModelError::CorruptBatch {
            offset: payload.len(),
            reason,
        })
    };
    if payload.len() < LEGACY_ADDRESS_LEN {
        return Err(short("record shorter than its region address"));
    }
    let le4 = |at: usize| u32::from_le_bytes(payload[at..at + 4].try_into().expect("4 bytes"));
    let le8 = |at: usize| i64::from_le_bytes(payload[at..at + 8].try_into().expect("8 bytes"));
    let table = le4(0);
    if table & SPAN_FLAG == 0 {
        let key = RegionKey::legacy(TableId(table), le8(4), le4(12), legacy);
        return Ok((key, LEGACY_ADDRESS_LEN));
    }
    if payload.len() < ADDRESS_LEN {
        return Err(short("record shorter than its region address"));
    }
    let key = RegionKey {
        table: TableId(table & !SPAN_FLAG),
        start: le8(4),
        end: le8(12),
        bucket: le4(20),
        buckets: le4(24),
    };
    if key.start >= key.end || key.bucket >= key.buckets {
        return Err(short(
            "region address with an empty span or a bucket past its count",
        ));
    }
    Ok((key, ADDRESS_LEN))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_addresses_in_both_layouts() {
        let l = LegacyLayout {
            partition_ns: 100,
            buckets: 4,
        };
        // A record written before partitions were sized to the data: table 7, partition 3,
        // bucket 2.
        let mut old = Vec::new();
        old.extend_from_slice(&7u32.to_le_bytes());
        old.extend_from_slice(&3i64.to_le_bytes());
        old.extend_from_slice(&2u32.to_le_bytes());
        old.push(0xAB);
        let (k, len) = record_region(&old, l).unwrap();
        assert_eq!(
            (k.table.0, k.start, k.end, k.bucket, k.buckets),
            (7, 300, 400, 2, 4)
        );
        assert_eq!(len, 16);
        // Today's address.
        let mut new = Vec::new();
        new.extend_from_slice(&(7u32 | SPAN_FLAG).to_le_bytes());
        new.extend_from_slice(&(-50i64).to_le_bytes());
        new.extend_from_slice(&250i64.to_le_bytes());
        new.extend_from_slice(&0u32.to_le_bytes());
        new.extend_from_slice(&1u32.to_le_bytes());
        let (k, len) = record_region(&new, l).unwrap();
        assert_eq!(
            (k.table.0, k.start, k.end, k.bucket, k.buckets),
            (7, -50, 250, 0, 1)
        );
        assert_eq!(len, ADDRESS_LEN);
        // Torn and nonsensical addresses are named errors.
        let cases: [(&str, &[u8]); 3] = [
            ("shorter than a legacy address", &old[..10]),
            ("a span address cut short", &new[..20]),
            ("a bucket past the count", &{
                let mut b = new.clone();
                b[20..24].copy_from_slice(&5u32.to_le_bytes());
                b
            }),
        ];
        for (name, bytes) in cases {
            let e = record_region(bytes, l).unwrap_err().to_string();
            assert!(e.contains("region address"), "{name}: {e}");
        }
    }
}
