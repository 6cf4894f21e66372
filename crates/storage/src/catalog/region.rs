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
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};

use parking_lot::{
    MappedRwLockReadGuard, MappedRwLockWriteGuard, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard,
};
use tempora_index::{IndexLimits, SeriesIndex};
use tempora_model::{FieldType, FieldValue, SeqNo, SeriesId};

use crate::error::Result;
use crate::files::manifest::{FileMeta, RegionKey};
use crate::files::store::FileStore;
use crate::maintenance::tombstone::Tombstone;
use crate::read::index_cache::IndexCache;
use crate::read::lvc::LastValues;
use crate::write::memtable::{ActiveBuffer, FrozenPart};
use crate::write::placement::IntervalMeter;

/// A data file shared by snapshots; deleted on last drop once marked obsolete.
#[derive(Debug)]
pub struct FileHandle {
    pub meta: FileMeta,
    store: FileStore,
    obsolete: AtomicBool,
    /// Paths a newer entry for the same file still names (retention turning a file into its
    /// rollups, or dropping one of them): not deleted with this handle.
    carried: Mutex<Vec<String>>,
}

impl FileHandle {
    pub fn new(meta: FileMeta, store: FileStore) -> Arc<Self> {
        Arc::new(Self {
            meta,
            store,
            obsolete: AtomicBool::new(false),
            carried: Mutex::new(Vec::new()),
        })
    }
    pub fn mark_obsolete(&self) {
        self.obsolete.store(true, Ordering::SeqCst);
    }

    /// Marks the handle obsolete in favour of `by`, an entry for the same file that names
    /// some of its paths: those stay, the others are deleted on last drop.
    pub fn mark_superseded(&self, by: &FileMeta) {
        *self.carried.lock() = by.paths().map(str::to_string).collect();
        self.mark_obsolete();
    }
}

impl Drop for FileHandle {
    fn drop(&mut self) {
        if !self.obsolete.load(Ordering::SeqCst) {
            return;
        }
        let carried = std::mem::take(&mut *self.carried.lock());
        for path in self
            .meta
            .paths()
            .filter(|p| !carried.iter().any(|c| c == p))
        {
            if let Err(e) = self.store.delete(path) {
                // The file is unreferenced; the orphan sweep at the next start removes it.
                tracing::warn!(path = %path, error = %e, "could not delete obsolete file");
            }
        }
    }
}

/// What a reader sees of a region at one moment.
#[derive(Clone)]
pub struct RegionSnapshot {
    pub frozen: Vec<Arc<FrozenPart>>,
    pub files: Vec<Arc<FileHandle>>,
    /// Files whose raw rows expired while rollups of them remain (`FileMeta::raw_expired`).
    pub rollup_only: Vec<Arc<FileHandle>>,
    /// Deletes the reader must apply (see `tombstone`).
    pub tombstones: Arc<Vec<Tombstone>>,
}

/// What a region needs to load and evict its series index: the file store, the series cache
/// and the index limits.
#[derive(Clone)]
pub struct RegionIo {
    pub store: FileStore,
    pub index_cache: Arc<IndexCache>,
    pub limits: IndexLimits,
}

/// A region's series index: loaded, or evicted to its persisted file.
pub struct IndexSlot {
    loaded: Option<SeriesIndex>,
    /// The index file the manifest names and how many series it holds.
    persisted: Option<(String, usize)>,
}

pub struct Region {
    pub key: RegionKey,
    /// The worker that owns the region. Fixed while the engine runs; start-up may move a
    /// region to the worker whose WAL holds its unflushed records.
    worker: AtomicUsize,
    /// Measured write interval of the source that placement used for this region.
    pub placed_interval_ns: f64,
    index: RwLock<IndexSlot>,
    io: RegionIo,
    /// Series ids below this are in a persisted index the manifest names.
    pub durable_prefix: AtomicU32,
    pub active: Mutex<ActiveBuffer>,
    pub frozen: RwLock<Vec<Arc<FrozenPart>>>,
    pub files: RwLock<Vec<Arc<FileHandle>>>,
    /// Files whose raw rows retention dropped while rollups of them remain; only rollup
    /// reads see them (scans, compaction and the last-value cache read `files`).
    pub rollup_only: RwLock<Vec<Arc<FileHandle>>>,
    pub lvc: RwLock<LastValues>,
    /// Committed deletes not yet compacted away, oldest first.
    pub tombstones: RwLock<Arc<Vec<Tombstone>>>,
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
    /// The index's estimated size for the series cache, and the series count it was taken at:
    /// recounted when the count has moved by more than an eighth (the cache ignores smaller
    /// changes), so a write does not walk every bitmap of the index.
    index_weight: Mutex<(usize, usize)>,
}

impl Region {
    /// A region whose index is `index` (new, or persisted at `persisted` and not yet loaded).
    pub fn new(
        key: RegionKey,
        worker: usize,
        placed_interval_ns: f64,
        index: Option<SeriesIndex>,
        persisted: Option<(String, usize)>,
        io: RegionIo,
    ) -> Self {
        assert!(
            index.is_some() || persisted.is_some(),
            "an index or its file"
        );
        let durable = persisted.as_ref().map_or(0, |p| p.1 as u32);
        Self {
            key,
            worker: AtomicUsize::new(worker),
            placed_interval_ns,
            index: RwLock::new(IndexSlot {
                loaded: index,
                persisted,
            }),
            io,
            durable_prefix: AtomicU32::new(durable),
            active: Mutex::new(ActiveBuffer::default()),
            frozen: RwLock::new(Vec::new()),
            files: RwLock::new(Vec::new()),
            rollup_only: RwLock::new(Vec::new()),
            lvc: RwLock::new(LastValues::default()),
            tombstones: RwLock::new(Arc::new(Vec::new())),
            flushed_seq: AtomicU64::new(0),
            meter: Mutex::new(IntervalMeter::default()),
            dropped: AtomicBool::new(false),
            lvc_from_files: AtomicBool::new(true),
            lvc_loading: Mutex::new(()),
            logged: Mutex::new(roaring::RoaringBitmap::new()),
            index_weight: Mutex::new((0, 0)),
        }
    }

    /// Appends resolved rows to the memtable and the last-value cache (worker only).
    ///
    /// A write that took its sequence number before a delete committed but lands after it
    /// may hold rows the delete hides; the cache cannot tell, so it is refilled from the
    /// data (which applies the tombstones) on its next read.
    pub fn apply<'a>(
        &self,
        rows: impl Iterator<Item = (SeriesId, i64, &'a [(u16, FieldValue)])>,
        seq: SeqNo,
        field_map: &[(usize, FieldType)],
    ) -> usize {
        let added = {
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
        };
        if self.tombstones.read().iter().any(|t| seq.0 < t.seq) {
            self.refill_lvc_later();
        }
        added
    }

    /// Empties the last-value cache so that its next read fills it from the data (deletes
    /// applied). Waits for a fill already running, which may predate a delete (lock order as
    /// in a fill: the fill lock, then the cache).
    pub fn refill_lvc_later(&self) {
        let _fill = self.lvc_loading.lock();
        *self.lvc.write() = LastValues::default();
        self.lvc_from_files.store(false, Ordering::SeqCst);
    }

    /// Freezes the active buffer (if not empty) into the frozen list.
    ///
    /// The part enters `frozen` while the active lock is still held: a reader that freezes
    /// concurrently must find the rows either in the active buffer or in `frozen`, never in
    /// neither (lock order: `active`, then `frozen`).
    pub fn freeze(&self, field_names: &[String]) {
        let mut active = self.active.lock();
        if let Some(p) = active.freeze(field_names) {
            self.frozen.write().push(Arc::new(p));
        }
    }

    /// Freezes, then returns the immutable lists.
    ///
    /// Tombstones are read first: compaction installs purged files before it drops a
    /// tombstone, so a reader that no longer sees the tombstone sees the purged files.
    pub fn snapshot(&self, field_names: &[String]) -> RegionSnapshot {
        let tombstones = self.tombstones.read().clone();
        self.freeze(field_names);
        RegionSnapshot {
            frozen: self.frozen.read().clone(),
            files: self.files.read().clone(),
            rollup_only: self.rollup_only.read().clone(),
            tombstones,
        }
    }

    /// The file store the region's files live in.
    pub fn store(&self) -> &FileStore {
        &self.io.store
    }

    pub fn worker(&self) -> usize {
        self.worker.load(Ordering::SeqCst)
    }

    /// Moves the region to another worker; only before workers start.
    pub(crate) fn set_worker(&self, w: usize) {
        self.worker.store(w, Ordering::SeqCst);
    }

    /// Loads the index from its file if it was evicted.
    fn ensure_loaded(&self) -> Result<()> {
        if self.index.read().loaded.is_some() {
            return Ok(());
        }
        let mut slot = self.index.write();
        if slot.loaded.is_none() {
            let (path, _) = slot.persisted.clone().expect("an evicted index has a file");
            let index = SeriesIndex::decode(&self.io.store.get(&path)?, self.io.limits)?;
            self.durable_prefix
                .fetch_max(index.len() as u32, Ordering::SeqCst);
            slot.loaded = Some(index);
            self.io.index_cache.loads.inc();
        }
        Ok(())
    }

    /// Series in the index (loaded, or as its persisted file says) without loading it.
    pub fn series_count(&self) -> usize {
        let slot = self.index.read();
        match (&slot.loaded, &slot.persisted) {
            (Some(i), _) => i.len(),
            (None, Some((_, n))) => *n,
            (None, None) => 0,
        }
    }

    /// Whether the series index is in memory (reading it will not touch a file).
    pub fn index_loaded(&self) -> bool {
        self.index.read().loaded.is_some()
    }

    /// The series index, loaded on demand and marked as used in the series cache.
    pub fn index_read(self: &Arc<Self>) -> Result<MappedRwLockReadGuard<'_, SeriesIndex>> {
        self.ensure_loaded()?;
        let bytes = {
            let slot = self.index.read();
            let mut weight = self.index_weight.lock();
            match slot.loaded.as_ref() {
                None => 0,
                Some(i) => {
                    let (at, bytes) = *weight;
                    if bytes == 0 || i.len().abs_diff(at) > at / 8 {
                        *weight = (i.len(), i.memory_bytes());
                    }
                    weight.1
                }
            }
        };
        self.io.index_cache.touch(self, bytes);
        loop {
            let g = self.index.read();
            if g.loaded.is_some() {
                return Ok(RwLockReadGuard::map(g, |s| {
                    s.loaded.as_ref().expect("checked")
                }));
            }
            drop(g);
            self.ensure_loaded()?;
        }
    }

    /// The series index for writing (worker, replay, cache fill).
    pub fn index_write(self: &Arc<Self>) -> Result<MappedRwLockWriteGuard<'_, SeriesIndex>> {
        loop {
            self.index_read().map(drop)?; // loads and marks as used
            let g = self.index.write();
            if g.loaded.is_some() {
                return Ok(RwLockWriteGuard::map(g, |s| {
                    s.loaded.as_mut().expect("checked")
                }));
            }
        }
    }

    /// Records that the manifest now names `path`, holding the first `len` series.
    pub fn set_persisted(&self, path: String, len: usize) {
        self.index.write().persisted = Some((path, len));
        self.durable_prefix.fetch_max(len as u32, Ordering::SeqCst);
    }

    /// Drops the loaded index if it is clean (persisted in full, memtable empty).
    pub fn try_evict_index(&self) -> bool {
        let Some(mut slot) = self.index.try_write() else {
            return false;
        };
        let clean = match (&slot.loaded, &slot.persisted) {
            (Some(i), Some((_, n))) => i.len() == *n,
            _ => false,
        };
        let empty = self.active.try_lock().is_some_and(|a| a.is_empty())
            && self.frozen.try_read().is_some_and(|f| f.is_empty());
        if clean && empty {
            slot.loaded = None;
        }
        clean && empty
    }

    /// Removes the given frozen parts (after they were flushed); returns the bytes released.
    pub fn release_parts(&self, parts: &[Arc<FrozenPart>]) -> usize {
        let mut frozen = self.frozen.write();
        let before: usize = frozen.iter().map(|p| p.bytes).sum();
        frozen.retain(|p| !parts.iter().any(|q| Arc::ptr_eq(p, q)));
        before - frozen.iter().map(|p| p.bytes).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tempora_model::TableId;

    fn region() -> Arc<Region> {
        let key = RegionKey {
            table: TableId(0),
            start: 0,
            end: 1,
            bucket: 0,
            buckets: 1,
        };
        let limits = IndexLimits::default();
        let io = RegionIo {
            store: FileStore::memory(),
            index_cache: IndexCache::new(1 << 20),
            limits,
        };
        Arc::new(Region::new(
            key,
            0,
            1e9,
            Some(SeriesIndex::new(limits)),
            None,
            io,
        ))
    }

    /// A write older than a committed delete empties the last-value cache (its rows may be
    /// hidden); a newer write only updates it.
    #[test]
    fn a_write_older_than_a_delete_has_the_cache_refilled() {
        let r = region();
        *r.tombstones.write() = Arc::new(vec![Tombstone {
            seq: 10,
            start: 0,
            end: 100,
            keys: None,
        }]);
        let fields = [(0u16, FieldValue::F64(1.0))];
        let map = [(0usize, FieldType::F64)];
        let row = |t: i64| std::iter::once((SeriesId(0), t, &fields[..]));
        r.apply(row(20), SeqNo(11), &map);
        assert_eq!(r.lvc.read().time(SeriesId(0)), Some(20));
        assert!(
            r.lvc_from_files.load(Ordering::SeqCst),
            "a newer write keeps the cache"
        );
        r.apply(row(50), SeqNo(5), &map);
        assert_eq!(r.lvc.read().time(SeriesId(0)), None, "emptied");
        assert!(
            !r.lvc_from_files.load(Ordering::SeqCst),
            "refilled on the next read"
        );
        assert_eq!(r.active.lock().len(), 2, "both rows are in the memtable");
    }

    /// A reader must find a row in the active buffer or in `frozen` at every moment of a
    /// freeze: the active buffer stays locked until its part is in `frozen`.
    #[test]
    fn a_freeze_publishes_its_part_before_releasing_the_active_buffer() {
        let r = region();
        let field = [(0, FieldType::F64, &FieldValue::F64(1.0))];
        r.active
            .lock()
            .push(SeriesId(0), 1, SeqNo(1), field.into_iter());
        let names = vec!["v".to_string()];
        let held = r.frozen.write(); // the freeze below cannot publish until this is dropped
        std::thread::scope(|s| {
            s.spawn(|| r.freeze(&names));
            let mut locked_streak = 0;
            while locked_streak < 10_000 {
                match r.active.try_lock() {
                    Some(a) => {
                        assert!(!a.is_empty(), "rows left the active buffer unpublished");
                        locked_streak = 0;
                    }
                    None => locked_streak += 1,
                }
                std::hint::spin_loop();
            }
            drop(held);
        });
        assert!(r.active.lock().is_empty());
        assert_eq!(r.frozen.read().len(), 1);
    }
}
