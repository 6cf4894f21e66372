//! [`Lru`]: at most `capacity` entries keyed by text, the least recently used dropped for a new
//! one. Shared and synchronous: a lookup takes a lock for a hash probe, never across an await.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

struct Slot<V> {
    value: Arc<V>,
    used: AtomicU64,
}

pub struct Lru<V> {
    capacity: usize,
    entries: Mutex<HashMap<String, Slot<V>>>,
    clock: AtomicU64,
}

impl<V> Lru<V> {
    /// Holds at most `capacity` entries; 0 holds none.
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            entries: Mutex::new(HashMap::new()),
            clock: AtomicU64::new(0),
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
        let entries = self.entries.lock();
        let slot = entries.get(key)?;
        slot.used.store(self.tick(), Ordering::Relaxed);
        Some(slot.value.clone())
    }

    /// Keeps `value` under `key`, dropping the least recently used entry when full.
    pub fn put(&self, key: String, value: Arc<V>) {
        if self.capacity == 0 {
            return;
        }
        let mut entries = self.entries.lock();
        if entries.len() >= self.capacity && !entries.contains_key(&key) {
            let oldest = entries
                .iter()
                .min_by_key(|(_, s)| s.used.load(Ordering::Relaxed))
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                entries.remove(&k);
            }
        }
        let used = AtomicU64::new(self.tick());
        entries.insert(key, Slot { value, used });
        debug_assert!(entries.len() <= self.capacity);
    }

    pub fn remove(&self, key: &str) {
        self.entries.lock().remove(key);
    }

    /// Drops every entry whose key starts with `prefix`.
    pub fn forget_prefix(&self, prefix: &str) {
        self.entries.lock().retain(|k, _| !k.starts_with(prefix));
    }

    fn tick(&self) -> u64 {
        self.clock.fetch_add(1, Ordering::Relaxed)
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
