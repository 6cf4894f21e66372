//! A region: one table's rows of one time partition and one series-hash bucket.
//!
//! Invariants:
//! - Exactly one worker (`worker`) writes to a region: it inserts series into the index,
//!   appends to the active buffer and updates the last-value cache. Readers and the flush job
//!   only take short locks to freeze the active buffer or swap immutable lists.
//! - `frozen` parts and `files` are immutable and shared by `Arc`; a reader clones the lists
//!   (a snapshot) and then reads without locks.
//! - A file removed by compaction or retention is deleted only when the last snapshot holding
//!   its [`FileHandle`] is dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::{Mutex, RwLock};
use tempora_index::SeriesIndex;
use tempora_model::{FieldType, FieldValue, SeqNo, SeriesId};

use crate::lvc::LastValues;
use crate::manifest::{FileMeta, RegionKey};
use crate::memtable::{ActiveBuffer, FrozenPart};
use crate::placement::IntervalMeter;
use crate::store::FileStore;

/// A data file shared by snapshots; deleted on last drop once marked obsolete.
#[derive(Debug)]
pub struct FileHandle {
    pub meta: FileMeta,
    store: FileStore,
    obsolete: AtomicBool,
}

impl FileHandle {
    pub fn new(meta: FileMeta, store: FileStore) -> Arc<Self> {
        Arc::new(Self {
            meta,
            store,
            obsolete: AtomicBool::new(false),
        })
    }
    pub fn mark_obsolete(&self) {
        self.obsolete.store(true, Ordering::SeqCst);
    }
}

impl Drop for FileHandle {
    fn drop(&mut self) {
        if self.obsolete.load(Ordering::SeqCst)
            && let Err(e) = self.store.delete(&self.meta.path)
        {
            // The file is unreferenced; the orphan sweep at the next start removes it.
            tracing::warn!(path = %self.meta.path, error = %e, "could not delete obsolete file");
        }
    }
}

/// What a reader sees of a region at one moment.
#[derive(Clone)]
pub struct RegionSnapshot {
    pub frozen: Vec<Arc<FrozenPart>>,
    pub files: Vec<Arc<FileHandle>>,
}

pub struct Region {
    pub key: RegionKey,
    pub worker: usize,
    /// Measured write interval of the source that placement used for this region.
    pub placed_interval_ns: f64,
    pub index: RwLock<SeriesIndex>,
    pub active: Mutex<ActiveBuffer>,
    pub frozen: RwLock<Vec<Arc<FrozenPart>>>,
    pub files: RwLock<Vec<Arc<FileHandle>>>,
    pub lvc: RwLock<LastValues>,
    /// Every write at or below this sequence is in `files`.
    pub flushed_seq: AtomicU64,
    pub meter: Mutex<IntervalMeter>,
    /// Set when retention dropped the region; writes to it are refused.
    pub dropped: AtomicBool,
    /// Whether the last-value cache includes the rows of `files` (false after a restart
    /// until the first latest-value read fills it).
    pub lvc_from_files: AtomicBool,
    pub lvc_loading: Mutex<()>,
    /// Series whose key is durable (in a committed WAL record or a persisted index), so WAL
    /// records may name them by id. Only the worker (and replay) changes it.
    pub logged: Mutex<roaring::RoaringBitmap>,
}

impl Region {
    pub fn new(key: RegionKey, worker: usize, placed_interval_ns: f64, index: SeriesIndex) -> Self {
        Self {
            key,
            worker,
            placed_interval_ns,
            index: RwLock::new(index),
            active: Mutex::new(ActiveBuffer::default()),
            frozen: RwLock::new(Vec::new()),
            files: RwLock::new(Vec::new()),
            lvc: RwLock::new(LastValues::default()),
            flushed_seq: AtomicU64::new(0),
            meter: Mutex::new(IntervalMeter::default()),
            dropped: AtomicBool::new(false),
            lvc_from_files: AtomicBool::new(true),
            lvc_loading: Mutex::new(()),
            logged: Mutex::new(roaring::RoaringBitmap::new()),
        }
    }

    /// Appends resolved rows to the memtable and the last-value cache (worker only).
    pub fn apply<'a>(
        &self,
        rows: impl Iterator<Item = (SeriesId, i64, &'a [(u16, FieldValue)])>,
        seq: SeqNo,
        field_map: &[(usize, FieldType)],
    ) -> usize {
        let mut active = self.active.lock();
        let mut lvc = self.lvc.write();
        let before = active.bytes();
        for (sid, time, fields) in rows {
            let mapped = fields.iter().map(|(i, v)| {
                let (ord, ty) = field_map[*i as usize];
                (ord, ty, v)
            });
            lvc.update(sid, time, mapped.clone());
            active.push(sid, time, seq, mapped);
        }
        active.bytes() - before
    }

    /// Freezes the active buffer (if not empty) into the frozen list.
    pub fn freeze(&self, field_names: &[String]) {
        let part = self.active.lock().freeze(field_names);
        if let Some(p) = part {
            self.frozen.write().push(Arc::new(p));
        }
    }

    /// Freezes, then returns the immutable lists.
    pub fn snapshot(&self, field_names: &[String]) -> RegionSnapshot {
        self.freeze(field_names);
        RegionSnapshot {
            frozen: self.frozen.read().clone(),
            files: self.files.read().clone(),
        }
    }

    /// Removes the given frozen parts (after they were flushed); returns the bytes released.
    pub fn release_parts(&self, parts: &[Arc<FrozenPart>]) -> usize {
        let mut frozen = self.frozen.write();
        let before: usize = frozen.iter().map(|p| p.bytes).sum();
        frozen.retain(|p| !parts.iter().any(|q| Arc::ptr_eq(p, q)));
        before - frozen.iter().map(|p| p.bytes).sum::<usize>()
    }
}
