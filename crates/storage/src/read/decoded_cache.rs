//! The decoded-column cache: column chunks of data files that queries read, kept decoded
//! (Arrow arrays) in an LRU bounded by `decoded_cache_bytes`, keyed by (file, row group,
//! column). A query over hot data then neither decodes Parquet pages nor makes the zstd
//! contexts parquet-rs creates for every column chunk it opens (a quarter of a small query's
//! file-reading time, docs/benchmarks.md "Where a small query's time goes").
//!
//! Invariants:
//! - A data file never changes once written (file ids only grow), so an entry is never stale;
//!   entries of deleted files are not asked for again and age out of the LRU.
//! - An entry is the column chunk exactly as Parquet decodes it, before any filter: tombstones,
//!   time and series filters are applied after, per query, as for an uncached read.
//! - Only the columns a read misses are decoded, all in one pass over the row group.
//! - The LRU lock is never held while decoding; two readers missing the same chunk both decode
//!   it, and the second insert replaces the first (same values).
//! - A chunk heavier than the whole budget is decoded and used but not kept; 0 keeps nothing.
//! - A derived entry (`Derived`) is a pure function of its row group's columns, so it is as
//!   immutable as they are.

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch};
use arrow::datatypes::Schema;
use parking_lot::Mutex;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use tempora_index::LruCache;

use crate::error::{Result, StorageError};
use crate::metrics::Counter;
use crate::read::sst_cache::CachedSst;

/// (file path, row group, what of it).
type Key = (Arc<str>, usize, Slot);

/// What an entry holds of a row group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Slot {
    /// A root column, by its index in the file's schema.
    Column(usize),
    /// Something computed from the row group's columns.
    Derived(Derived),
}

/// Arrays computed once from a row group's decoded columns and kept with them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Derived {
    /// Each series' run of the key column (start, id, first and last time), then the row
    /// count (`Int64`): `row_select::key_runs`. 32 bytes per series in the row group, weighed
    /// like any entry (a row group of one-row series keeps more here than in its time column).
    KeyRuns,
}

/// LRU of decoded column chunks.
pub struct DecodedCache {
    lru: Mutex<LruCache<Key, ArrayRef>>,
    pub hits: Counter,
    pub misses: Counter,
}

impl DecodedCache {
    /// A cache of at most `max_bytes`; 0 keeps nothing.
    pub fn new(max_bytes: usize) -> Self {
        Self {
            lru: Mutex::new(LruCache::new(max_bytes, |k: &Key, v: &ArrayRef| {
                v.get_array_memory_size() + k.0.len() + 64
            })),
            hits: Counter::default(),
            misses: Counter::default(),
        }
    }

    /// Row group `rg` of `file` with the root columns `columns` (indices into the file's
    /// schema, ascending), as one batch: cached chunks as they are, the others decoded together
    /// and cached.
    pub fn row_group(
        &self,
        path: &str,
        file: &CachedSst,
        rg: usize,
        columns: &[usize],
    ) -> Result<RecordBatch> {
        debug_assert!(columns.windows(2).all(|w| w[0] < w[1]), "ascending columns");
        let path: Arc<str> = Arc::from(path);
        let mut got: Vec<Option<ArrayRef>> = {
            let mut lru = self.lru.lock();
            columns
                .iter()
                .map(|&c| lru.get(&(path.clone(), rg, Slot::Column(c))).cloned())
                .collect()
        };
        let missing: Vec<usize> = columns
            .iter()
            .zip(&got)
            .filter(|(_, a)| a.is_none())
            .map(|(&c, _)| c)
            .collect();
        self.hits.add((columns.len() - missing.len()) as u64);
        if !missing.is_empty() {
            self.misses.add(missing.len() as u64);
            let decoded = decode(&path, file, rg, &missing)?;
            let mut fresh = decoded.into_iter();
            let mut left = Vec::new();
            {
                let mut lru = self.lru.lock();
                for (slot, &c) in got.iter_mut().zip(columns) {
                    if slot.is_none() {
                        let a = fresh.next().expect("one array per missing column");
                        left.extend(lru.insert((path.clone(), rg, Slot::Column(c)), a.clone()));
                        *slot = Some(a);
                    }
                }
            }
            // What leaves the cache (evicted or too heavy) is dropped after the lock.
            drop(left);
        }
        let schema = file.meta.schema();
        let fields: Vec<_> = columns.iter().map(|&c| schema.field(c).clone()).collect();
        let arrays: Vec<ArrayRef> = got.into_iter().map(|a| a.expect("filled")).collect();
        Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), arrays)?)
    }

    /// The `what` of row group `rg` of `path`: from the cache, else made by `make` and kept
    /// (when it makes one). Derived arrays share the budget and the LRU with the columns.
    pub fn derived(
        &self,
        path: &str,
        rg: usize,
        what: Derived,
        make: impl FnOnce() -> Option<ArrayRef>,
    ) -> Option<ArrayRef> {
        let key: Key = (Arc::from(path), rg, Slot::Derived(what));
        if let Some(a) = self.lru.lock().get(&key).cloned() {
            return Some(a);
        }
        let a = make()?;
        let left = self.lru.lock().insert(key, a.clone());
        drop(left);
        Some(a)
    }

    /// Bytes held now.
    pub fn weight(&self) -> usize {
        self.lru.lock().weight()
    }
}

/// Decodes root columns `columns` (ascending) of row group `rg`, one array per column.
fn decode(path: &str, file: &CachedSst, rg: usize, columns: &[usize]) -> Result<Vec<ArrayRef>> {
    let perr = |e| StorageError::Parquet {
        path: path.to_string(),
        source: e,
    };
    let rows = file.meta.metadata().row_group(rg).num_rows() as usize;
    let builder =
        ParquetRecordBatchReaderBuilder::new_with_metadata(file.data.clone(), file.meta.clone());
    let mask = ProjectionMask::roots(builder.parquet_schema(), columns.iter().copied());
    let reader = builder
        .with_row_groups(vec![rg])
        .with_projection(mask)
        .with_batch_size(rows.max(1))
        .build()
        .map_err(perr)?;
    let batches = reader.collect::<std::result::Result<Vec<_>, _>>()?;
    let Some(first) = batches.first() else {
        // An empty row group (never written, but not an error): empty arrays.
        let schema = file.meta.schema();
        return Ok(columns
            .iter()
            .map(|&c| arrow::array::new_empty_array(schema.field(c).data_type()))
            .collect());
    };
    let batch = arrow::compute::concat_batches(&first.schema(), &batches)?;
    assert_eq!(batch.num_columns(), columns.len(), "one array per column");
    Ok(batch.columns().to_vec())
}

#[cfg(test)]
mod tests {
    use arrow::array::{AsArray, Int64Array};
    use arrow::datatypes::Int64Type;
    use bytes::Bytes;

    use super::*;

    /// Columns a, b, c (a = row, b = 10 × row, c = 100 × row) in row groups of `rg_rows`.
    fn file(rows: i64, rg_rows: usize) -> CachedSst {
        let col =
            |m: i64| Arc::new(Int64Array::from_iter_values((0..rows).map(|r| r * m))) as ArrayRef;
        let batch =
            RecordBatch::try_from_iter([("a", col(1)), ("b", col(10)), ("c", col(100))]).unwrap();
        let props = parquet::file::properties::WriterProperties::builder()
            .set_max_row_group_row_count(Some(rg_rows))
            .build();
        let mut buf = Vec::new();
        let mut w =
            parquet::arrow::ArrowWriter::try_new(&mut buf, batch.schema(), Some(props)).unwrap();
        w.write(&batch).unwrap();
        w.close().unwrap();
        CachedSst::decode("f", Bytes::from(buf)).unwrap()
    }

    fn values(b: &RecordBatch, i: usize) -> Vec<i64> {
        b.column(i).as_primitive::<Int64Type>().values().to_vec()
    }

    #[test]
    fn chunks_are_decoded_once_and_only_the_missing_ones() {
        let f = file(300, 100);
        let cache = DecodedCache::new(1 << 20);
        let b = cache.row_group("f", &f, 1, &[0, 2]).unwrap();
        assert_eq!(values(&b, 0), (100..200).collect::<Vec<_>>());
        assert_eq!(
            values(&b, 1),
            (100..200).map(|r| r * 100).collect::<Vec<_>>()
        );
        assert_eq!(b.schema().field(1).name(), "c");
        assert_eq!((cache.hits.get(), cache.misses.get()), (0, 2));
        // Again: both from the cache, the same values.
        let again = cache.row_group("f", &f, 1, &[0, 2]).unwrap();
        assert_eq!(again, b);
        assert_eq!((cache.hits.get(), cache.misses.get()), (2, 2));
        // A, B: a is cached, b is decoded; another row group is its own entry.
        let ab = cache.row_group("f", &f, 1, &[0, 1]).unwrap();
        assert_eq!(
            values(&ab, 1),
            (100..200).map(|r| r * 10).collect::<Vec<_>>()
        );
        assert_eq!((cache.hits.get(), cache.misses.get()), (3, 3));
        let other = cache.row_group("f", &f, 2, &[0]).unwrap();
        assert_eq!(values(&other, 0), (200..300).collect::<Vec<_>>());
        assert_eq!(cache.misses.get(), 4);
        // The same row group of another file (another path) is not confused with this one.
        let g = file(300, 150);
        let b2 = cache.row_group("g", &g, 1, &[0]).unwrap();
        assert_eq!(values(&b2, 0), (150..300).collect::<Vec<_>>());
    }

    #[test]
    fn a_derived_array_is_made_once_per_row_group_and_none_is_not_kept() {
        let cache = DecodedCache::new(1 << 20);
        let made = std::cell::Cell::new(0);
        let make = |v: i64| {
            made.set(made.get() + 1);
            Some(Arc::new(Int64Array::from(vec![v])) as ArrayRef)
        };
        let first = cache.derived("f", 0, Derived::KeyRuns, || make(1));
        let again = cache.derived("f", 0, Derived::KeyRuns, || make(2));
        assert_eq!(first, again, "the kept array, not a new one");
        assert_eq!(made.get(), 1);
        // Another row group or file is its own entry; a column entry is not confused with it.
        cache.derived("f", 1, Derived::KeyRuns, || make(3));
        cache.derived("g", 0, Derived::KeyRuns, || make(4));
        assert_eq!(made.get(), 3);
        // Nothing made, nothing kept: the next call makes it again.
        assert_eq!(cache.derived("h", 0, Derived::KeyRuns, || None), None);
        let h = cache.derived("h", 0, Derived::KeyRuns, || make(5));
        assert_eq!(h.unwrap().as_primitive::<Int64Type>().value(0), 5);
    }

    #[test]
    fn the_budget_bounds_what_is_kept() {
        let f = file(3000, 1000);
        let one = {
            let c = DecodedCache::new(1 << 30);
            c.row_group("f", &f, 0, &[0]).unwrap();
            c.weight()
        };
        // Room for two chunks: a third evicts the least recently used.
        let cache = DecodedCache::new(2 * one + one / 2);
        for rg in [0, 1, 0, 2] {
            cache.row_group("f", &f, rg, &[0]).unwrap();
        }
        assert!(cache.weight() <= 2 * one + one / 2);
        let misses = cache.misses.get();
        cache.row_group("f", &f, 0, &[0]).unwrap();
        assert_eq!(
            cache.misses.get(),
            misses,
            "0 was used last, so 1 was evicted"
        );
        cache.row_group("f", &f, 1, &[0]).unwrap();
        assert_eq!(cache.misses.get(), misses + 1);
        // A budget of 0 keeps nothing, and reads still give the values.
        let none = DecodedCache::new(0);
        for _ in 0..2 {
            let b = none.row_group("f", &f, 2, &[1]).unwrap();
            assert_eq!(values(&b, 0)[0], 20_000);
        }
        assert_eq!((none.hits.get(), none.weight()), (0, 0));
    }
}
