//! The data-file cache: recently read data files kept in memory together with their decoded
//! Parquet footer, in an LRU bounded by `sst_cache_bytes` (file bytes plus footer and row-group index memory).
//!
//! Invariants:
//! - A data file never changes once written: a flush or compaction writes a new path (file
//!   ids only grow, [`crate::files::manifest::Manifest::next_file_id`]), so a cached entry is never
//!   stale. Entries of deleted files are never asked for again and age out of the LRU.
//! - A file heavier than the whole budget is read and decoded but not kept.
//! - The LRU lock is held only to look up and insert, never during I/O or decoding; two
//!   readers missing the same file at once both read it, and the second insert replaces the
//!   first (same bytes).

use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
use tempora_index::LruCache;

use crate::error::{Result, StorageError};
use crate::files::footer_guard;
use crate::files::rg_index::RowGroupIndex;
use crate::files::store::FileStore;
use crate::metrics::Counter;

/// A data file's bytes and its decoded footer.
#[derive(Debug)]
pub struct CachedSst {
    pub data: Bytes,
    pub meta: ArrowReaderMetadata,
    /// The row groups' time and key bounds, copied out of the footer once.
    pub rg_index: RowGroupIndex,
}

impl CachedSst {
    /// Decodes the footer of a file read whole.
    pub fn decode(path: &str, data: Bytes) -> Result<Self> {
        // Bound the footer first: a damaged one can make the Parquet decoder spin for seconds.
        footer_guard::check_file(&data).map_err(|reason| StorageError::Corrupt {
            path: path.to_string(),
            reason,
        })?;
        let meta = ArrowReaderMetadata::load(&data, ArrowReaderOptions::new()).map_err(|e| {
            StorageError::Parquet {
                path: path.to_string(),
                source: e,
            }
        })?;
        let rg_index = row_group_index(&meta);
        Ok(Self {
            data,
            meta,
            rg_index,
        })
    }

    /// Memory the entry holds (its weight in the cache).
    pub fn weight(&self) -> usize {
        self.data.len() + self.meta.metadata().memory_size() + self.rg_index.memory_bytes()
    }
}

/// The row-group index of a data file's footer (every row group unbounded when the file lacks
/// a time or key column; reading it then fails as it did before). Columns are looked up as
/// Parquet leaf columns by name, not by their Arrow root index.
fn row_group_index(meta: &ArrowReaderMetadata) -> RowGroupIndex {
    let (schema, parquet) = (
        meta.schema(),
        meta.metadata().file_metadata().schema_descr(),
    );
    let leaf = |name| parquet::arrow::parquet_column(parquet, schema, name).map(|(i, _)| i);
    match (
        leaf(tempora_model::TIME_COLUMN),
        leaf(tempora_model::PRIMARY_KEY_COLUMN),
    ) {
        (Some(t), Some(k)) => RowGroupIndex::from_metadata(meta.metadata(), t, k),
        _ => {
            RowGroupIndex::from_bounds((0..meta.metadata().num_row_groups()).map(|_| (None, None)))
        }
    }
}

/// LRU of decoded data files.
pub struct SstCache {
    lru: Mutex<LruCache<String, Arc<CachedSst>>>,
    pub hits: Counter,
    pub misses: Counter,
}

impl SstCache {
    /// A cache of at most `max_bytes`; 0 keeps nothing.
    pub fn new(max_bytes: usize) -> Self {
        Self {
            lru: Mutex::new(LruCache::new(
                max_bytes,
                |_: &String, v: &Arc<CachedSst>| v.weight(),
            )),
            hits: Counter::default(),
            misses: Counter::default(),
        }
    }

    /// The file at `path`, from the cache or read from `store` (and then cached).
    pub fn get(&self, store: &FileStore, path: &str) -> Result<Arc<CachedSst>> {
        if let Some(hit) = self.lru.lock().get(path).cloned() {
            self.hits.inc();
            return Ok(hit);
        }
        self.misses.inc();
        let entry = Arc::new(CachedSst::decode(path, store.get(path)?)?);
        // What leaves the cache (evicted or too heavy) is dropped after the lock is released.
        let left = self.lru.lock().insert(path.to_string(), entry.clone());
        drop(left);
        Ok(entry)
    }

    /// Bytes held now.
    #[cfg(test)]
    pub fn weight(&self) -> usize {
        self.lru.lock().weight()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::store::FaultPlan;

    fn parquet_file(rows: i64) -> Bytes {
        use arrow::array::{ArrayRef, Int64Array, RecordBatch};
        let col: ArrayRef = Arc::new(Int64Array::from_iter_values(0..rows));
        let batch = RecordBatch::try_from_iter([("v", col)]).unwrap();
        let mut buf = Vec::new();
        let mut w = parquet::arrow::ArrowWriter::try_new(&mut buf, batch.schema(), None).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        Bytes::from(buf)
    }

    #[test]
    fn a_second_read_is_served_without_the_store() {
        let plan = Arc::new(FaultPlan::default());
        let store = FileStore::memory().with_faults(plan.clone());
        store.put("a.parquet", parquet_file(100)).unwrap();
        let cache = SstCache::new(1 << 20);
        let first = cache.get(&store, "a.parquet").unwrap();
        let ops = plan.ops();
        // Every store operation now fails: only the cache can answer.
        plan.crash_after(ops);
        let second = cache.get(&store, "a.parquet").unwrap();
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!(second.meta.metadata().file_metadata().num_rows(), 100);
        assert_eq!((cache.hits.get(), cache.misses.get()), (1, 1));
        assert!(
            cache.get(&store, "b.parquet").is_err(),
            "a miss goes to the store"
        );
    }

    #[test]
    fn the_budget_bounds_what_is_kept() {
        let store = FileStore::memory();
        for name in ["a", "b", "c"] {
            store.put(name, parquet_file(1000)).unwrap();
        }
        let one = CachedSst::decode("a", store.get("a").unwrap())
            .unwrap()
            .weight();
        // Room for two files: reading a third evicts the least recently used.
        let cache = SstCache::new(2 * one + one / 2);
        cache.get(&store, "a").unwrap();
        cache.get(&store, "b").unwrap();
        cache.get(&store, "a").unwrap();
        cache.get(&store, "c").unwrap();
        assert!(cache.weight() <= 2 * one + one / 2);
        let misses = cache.misses.get();
        cache.get(&store, "a").unwrap();
        assert_eq!(
            cache.misses.get(),
            misses,
            "a was used last, so b was evicted"
        );
        cache.get(&store, "b").unwrap();
        assert_eq!(cache.misses.get(), misses + 1);
        // A budget of 0 keeps nothing, and reads still work.
        let none = SstCache::new(0);
        none.get(&store, "a").unwrap();
        none.get(&store, "a").unwrap();
        assert_eq!((none.hits.get(), none.weight()), (0, 0));
    }

    #[test]
    fn a_corrupt_file_is_an_error_naming_it_and_is_not_cached() {
        let store = FileStore::memory();
        store
            .put("bad.parquet", Bytes::from_static(b"not parquet"))
            .unwrap();
        let cache = SstCache::new(1 << 20);
        let err = cache.get(&store, "bad.parquet").unwrap_err().to_string();
        assert!(err.contains("bad.parquet"), "{err}");
        assert_eq!(cache.weight(), 0);
    }
}
