//! The series cache: region indexes of cold regions live on disk and are loaded on demand,
//! with an LRU bounded by `index_cache_bytes` in front (Lindorm §4.3).
//!
//! Invariants:
//! - Only a *clean* index is evicted: persisted by a flush with every series it holds, and its
//!   region's memtable empty. A dirty index stays loaded past the budget (it is being written).
//! - The LRU lock is never held while a region's index lock is taken, and eviction only
//!   `try_write`s, so cache upkeep cannot deadlock with readers or the worker.

use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use tempora_index::LruCache;

use crate::catalog::region::Region;
use crate::files::manifest::RegionKey;
use crate::metrics::Counter;

/// LRU of loaded region indexes, weighted by their memory.
pub struct IndexCache {
    lru: Mutex<LruCache<RegionKey, (Weak<Region>, usize)>>,
    /// Indexes heavier than the whole budget: loaded while used, evicted at the next touch of
    /// another region.
    oversized: Mutex<Vec<(RegionKey, Weak<Region>)>>,
    pub loads: Counter,
    pub evictions: Counter,
}

impl IndexCache {
    pub fn new(max_bytes: usize) -> Arc<Self> {
        Arc::new(Self {
            lru: Mutex::new(LruCache::new(
                max_bytes,
                |_: &RegionKey, v: &(Weak<Region>, usize)| v.1,
            )),
            oversized: Mutex::new(Vec::new()),
            loads: Counter::default(),
            evictions: Counter::default(),
        })
    }

    /// Marks a region's index as just used, with its current size; evicts what falls out.
    pub fn touch(&self, region: &Arc<Region>, bytes: usize) {
        let evicted = {
            let mut lru = self.lru.lock();
            match lru.get(&region.key) {
                Some((_, b)) if b.abs_diff(bytes) <= bytes / 8 => Vec::new(),
                _ => lru.insert(region.key, (Arc::downgrade(region), bytes)),
            }
        };
        let mut victims: Vec<(RegionKey, Weak<Region>)> =
            evicted.into_iter().map(|(k, (w, _))| (k, w)).collect();
        {
            let mut oversized = self.oversized.lock();
            victims.append(&mut oversized);
            let before = victims.len();
            victims.retain(|(k, _)| *k != region.key);
            if victims.len() < before {
                // Heavier than the whole budget alone: keep it while it is used.
                oversized.push((region.key, Arc::downgrade(region)));
            }
        }
        for (_, weak) in victims {
            if let Some(r) = weak.upgrade()
                && r.try_evict_index()
            {
                self.evictions.inc();
            }
        }
    }

    /// Bytes of the indexes the cache tracks.
    pub fn weight(&self) -> usize {
        self.lru.lock().weight()
    }
}
