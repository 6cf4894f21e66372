//! [`Lru`]: at most `capacity` entries keyed by text, the least recently used dropped for a new
//! one, every operation O(1) (the index crate's [`LruCache`], each entry weighing 1). Shared and
//! synchronous: a lookup takes a lock for a hash probe, never across an await.

use std::sync::Arc;

use parking_lot::Mutex;
use tempora_index::LruCache;

pub struct Lru<V> {
    capacity: usize,
    entries: Mutex<LruCache<String, Arc<V>>>,
}

impl<V> Lru<V> {
    /// Holds at most `capacity` entries; 0 holds none.
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            entries: Mutex::new(LruCache::new(capacity, |_, _| 1)),
        }
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    /// The value of `key`, marked most recently used.
    pub fn get(&self, key: &str) -> Option<Arc<V>> {
        self.entries.lock().get(key).cloned()
    }

    /// Keeps `value` under `key`, dropping the least recently used entry when full. What
    /// leaves the cache is dropped after the lock is released.
    pub fn put(&self, key: String, value: Arc<V>) {
        let gone = {
            let mut entries = self.entries.lock();
            let gone = entries.insert(key, value);
            debug_assert!(entries.len() <= self.capacity);
            gone
        };
        drop(gone);
    }

    pub fn remove(&self, key: &str) {
        let gone = self.entries.lock().remove(key);
        drop(gone);
    }

    /// Drops every entry whose key starts with `prefix`.
    pub fn forget_prefix(&self, prefix: &str) {
        let mut entries = self.entries.lock();
        let keys: Vec<String> = entries
            .keys()
            .filter(|k| k.starts_with(prefix))
            .cloned()
            .collect();
        for k in keys {
            entries.remove(&k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_at_most_capacity_and_drops_the_least_recently_used() {
        let lru = Lru::new(2);
        lru.put("a".into(), Arc::new(1));
        lru.put("b".into(), Arc::new(2));
        assert_eq!(
            lru.get("a").as_deref(),
            Some(&1),
            "a is now the most recent"
        );
        lru.put("c".into(), Arc::new(3));
        assert_eq!(lru.len(), 2);
        assert!(lru.get("b").is_none(), "b was the least recently used");
        assert_eq!(lru.get("a").as_deref(), Some(&1));
        assert_eq!(lru.get("c").as_deref(), Some(&3));
    }

    #[test]
    fn replacing_a_key_does_not_evict_and_capacity_zero_keeps_nothing() {
        let lru = Lru::new(1);
        lru.put("a".into(), Arc::new(1));
        lru.put("a".into(), Arc::new(2));
        assert_eq!(lru.get("a").as_deref(), Some(&2));
        let off = Lru::new(0);
        off.put("a".into(), Arc::new(1));
        assert_eq!((off.len(), off.get("a")), (0, None));
    }

    #[test]
    fn forgets_by_prefix() {
        let lru = Lru::new(4);
        for k in ["d1\0x", "d1\0y", "d2\0x"] {
            lru.put(k.into(), Arc::new(0));
        }
        lru.forget_prefix("d1\0");
        assert_eq!(lru.len(), 1);
        assert!(lru.get("d2\0x").is_some());
    }
}
