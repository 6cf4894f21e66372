//! [`LruCache`]: a least-recently-used cache bounded by total weight in bytes.
//!
//! Meant as the "series cache" in front of persisted indexes of older partitions: the value is
//! typically an `Arc<SeriesIndex>` weighed by [`crate::SeriesIndex::memory_bytes`]. Entries
//! live in a slab linked into a recency list (head = most recent); a hash table maps keys to
//! slab slots. Every operation is O(1) expected. Not thread-safe by itself: wrap it in a mutex.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{BuildHasher, Hash, RandomState};

use hashbrown::HashTable;

const NIL: usize = usize::MAX;

/// Computes the weight in bytes of one entry.
pub type Weigher<K, V> = Box<dyn Fn(&K, &V) -> usize + Send + Sync>;

struct Entry<K, V> {
    key: K,
    value: V,
    weight: usize,
    prev: usize,
    next: usize,
}

/// A cache that keeps the sum of entry weights at or below `max_bytes`, evicting least
/// recently used entries first. An entry heavier than `max_bytes` on its own is not kept.
pub struct LruCache<K, V> {
    max_bytes: usize,
    weight: usize,
    weigher: Weigher<K, V>,
    hasher: RandomState,
    table: HashTable<usize>,
    slots: Vec<Option<Entry<K, V>>>,
    free: Vec<usize>,
    head: usize,
    tail: usize,
}

impl<K, V> fmt::Debug for LruCache<K, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LruCache")
            .field("len", &(self.slots.len() - self.free.len()))
            .field("weight", &self.weight)
            .field("max_bytes", &self.max_bytes)
            .finish()
    }
}

impl<K: Hash + Eq, V> LruCache<K, V> {
    /// A cache holding at most `max_bytes` of total weight as measured by `weigher`.
    pub fn new(
        max_bytes: usize,
        weigher: impl Fn(&K, &V) -> usize + Send + Sync + 'static,
    ) -> Self {
        Self {
            max_bytes,
            weight: 0,
            weigher: Box::new(weigher),
            hasher: RandomState::new(),
            table: HashTable::new(),
            slots: Vec::new(),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sum of the weights of the cached entries, in bytes.
    pub fn weight(&self) -> usize {
        self.weight
    }

    /// The capacity limit, in bytes of weight.
    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// Changes the limit, returning whatever had to be evicted to meet it (oldest first).
    pub fn set_max_bytes(&mut self, max_bytes: usize) -> Vec<(K, V)> {
        self.max_bytes = max_bytes;
        let mut evicted = Vec::new();
        self.evict_over_limit(&mut evicted);
        evicted
    }

    fn slot_of<Q>(&self, key: &Q) -> Option<usize>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let hash = self.hasher.hash_one(key);
        let slots = &self.slots;
        self.table
            .find(hash, |&s| {
                slots[s].as_ref().is_some_and(|e| e.key.borrow() == key)
            })
            .copied()
    }

    /// The value of `key`, marking it most recently used.
    pub fn get<Q>(&mut self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let slot = self.slot_of(key)?;
        self.unlink(slot);
        self.link_front(slot);
        self.slots[slot].as_ref().map(|e| &e.value)
    }

    /// The value of `key` without touching its recency.
    pub fn peek<Q>(&self, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let slot = self.slot_of(key)?;
        self.slots[slot].as_ref().map(|e| &e.value)
    }

    pub fn contains<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.slot_of(key).is_some()
    }

    /// Inserts or replaces `key` as the most recently used entry, then evicts least recently
    /// used entries until the weight fits. Returns every entry that left the cache: a replaced
    /// value, evicted entries (oldest first), and the new entry itself if it alone is heavier
    /// than `max_bytes`.
    pub fn insert(&mut self, key: K, value: V) -> Vec<(K, V)> {
        let mut out = Vec::new();
        if let Some(old) = self.remove_entry(&key) {
            out.push(old);
        }
        let weight = (self.weigher)(&key, &value);
        if weight > self.max_bytes {
            out.push((key, value));
            return out;
        }
        let hash = self.hasher.hash_one(&key);
        let entry = Entry {
            key,
            value,
            weight,
            prev: NIL,
            next: NIL,
        };
        let slot = match self.free.pop() {
            Some(s) => {
                self.slots[s] = Some(entry);
                s
            }
            None => {
                self.slots.push(Some(entry));
                self.slots.len() - 1
            }
        };
        let (slots, hasher) = (&self.slots, &self.hasher);
        self.table.insert_unique(hash, slot, |&s| {
            slots[s].as_ref().map_or(0, |e| hasher.hash_one(&e.key))
        });
        self.weight += weight;
        self.link_front(slot);
        self.evict_over_limit(&mut out);
        out
    }

    /// Removes `key`, returning its value.
    pub fn remove<Q>(&mut self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.remove_entry(key).map(|(_, v)| v)
    }

    fn remove_entry<Q>(&mut self, key: &Q) -> Option<(K, V)>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let slot = self.slot_of(key)?;
        self.remove_slot(slot)
    }

    fn remove_slot(&mut self, slot: usize) -> Option<(K, V)> {
        self.unlink(slot);
        let e = self.slots[slot].take()?;
        let hash = self.hasher.hash_one(&e.key);
        if let Ok(found) = self.table.find_entry(hash, |&s| s == slot) {
            found.remove();
        }
        self.free.push(slot);
        self.weight -= e.weight;
        Some((e.key, e.value))
    }

    fn evict_over_limit(&mut self, out: &mut Vec<(K, V)>) {
        while self.weight > self.max_bytes && self.tail != NIL {
            match self.remove_slot(self.tail) {
                Some(kv) => out.push(kv),
                None => break,
            }
        }
    }

    /// Removes every entry.
    pub fn clear(&mut self) {
        self.table.clear();
        self.slots.clear();
        self.free.clear();
        self.weight = 0;
        self.head = NIL;
        self.tail = NIL;
    }

    /// Keys from most to least recently used.
    pub fn keys(&self) -> impl Iterator<Item = &K> + '_ {
        let mut cur = self.head;
        std::iter::from_fn(move || {
            let e = self.slots.get(cur)?.as_ref()?;
            cur = e.next;
            Some(&e.key)
        })
    }

    fn unlink(&mut self, slot: usize) {
        let Some(e) = self.slots[slot].as_mut() else {
            return;
        };
        let (prev, next) = (e.prev, e.next);
        e.prev = NIL;
        e.next = NIL;
        match self.slots.get_mut(prev).and_then(Option::as_mut) {
            Some(p) => p.next = next,
            None if self.head == slot => self.head = next,
            None => {}
        }
        match self.slots.get_mut(next).and_then(Option::as_mut) {
            Some(n) => n.prev = prev,
            None if self.tail == slot => self.tail = prev,
            None => {}
        }
    }

    fn link_front(&mut self, slot: usize) {
        let old_head = self.head;
        if let Some(e) = self.slots[slot].as_mut() {
            e.prev = NIL;
            e.next = old_head;
        }
        if let Some(h) = self.slots.get_mut(old_head).and_then(Option::as_mut) {
            h.prev = slot;
        }
        self.head = slot;
        if self.tail == NIL {
            self.tail = slot;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy)]
    enum Op {
        /// Insert key with value = weight; expect these keys to leave the cache.
        Insert(&'static str, usize, &'static [&'static str]),
        Get(&'static str, Option<usize>),
        Remove(&'static str, Option<usize>),
        SetMax(usize, &'static [&'static str]),
    }
    use Op::*;

    fn cache(max: usize) -> LruCache<String, usize> {
        LruCache::new(max, |_k: &String, v: &usize| *v)
    }

    fn keys(c: &LruCache<String, usize>) -> Vec<&str> {
        c.keys().map(String::as_str).collect()
    }

    // (name, max_bytes, ops, final keys most-recent first, final weight)
    type Case = (
        &'static str,
        usize,
        &'static [Op],
        &'static [&'static str],
        usize,
    );
    #[rustfmt::skip]
    const CASES: &[Case] = &[
        ("empty", 10, &[], &[], 0),
        ("fits", 10, &[Insert("a", 4, &[]), Insert("b", 6, &[])], &["b", "a"], 10),
        ("evicts oldest", 10, &[Insert("a", 4, &[]), Insert("b", 4, &[]), Insert("c", 4, &["a"])], &["c", "b"], 8),
        ("get refreshes", 10, &[Insert("a", 4, &[]), Insert("b", 4, &[]), Get("a", Some(4)), Insert("c", 4, &["b"])], &["c", "a"], 8),
        ("evicts several", 10, &[Insert("a", 3, &[]), Insert("b", 3, &[]), Insert("c", 3, &[]), Insert("d", 9, &["a", "b", "c"])], &["d"], 9),
        ("too heavy alone", 10, &[Insert("a", 3, &[]), Insert("big", 11, &["big"])], &["a"], 3),
        ("replace", 10, &[Insert("a", 3, &[]), Insert("a", 5, &["a"]), Get("a", Some(5))], &["a"], 5),
        ("replace heavier evicts", 10, &[Insert("a", 3, &[]), Insert("b", 3, &[]), Insert("a", 8, &["a", "b"])], &["a"], 8),
        ("remove", 10, &[Insert("a", 3, &[]), Insert("b", 3, &[]), Remove("a", Some(3)), Remove("zz", None)], &["b"], 3),
        ("miss", 10, &[Get("a", None)], &[], 0),
        ("slot reuse", 10, &[Insert("a", 3, &[]), Remove("a", Some(3)), Insert("b", 2, &[]), Insert("c", 2, &[])], &["c", "b"], 4),
        ("shrink limit", 10, &[Insert("a", 3, &[]), Insert("b", 3, &[]), Insert("c", 3, &[]), SetMax(4, &["a", "b"])], &["c"], 3),
        ("zero weight", 0, &[Insert("a", 0, &[]), Insert("b", 1, &["b"])], &["a"], 0),
        ("remove middle", 100, &[Insert("a", 1, &[]), Insert("b", 1, &[]), Insert("c", 1, &[]), Remove("b", Some(1)), Get("a", Some(1))], &["a", "c"], 2),
    ];

    #[test]
    fn table() {
        for (name, max, ops, want_keys, want_weight) in CASES {
            let mut c = cache(*max);
            for (i, op) in ops.iter().enumerate() {
                match *op {
                    Insert(k, w, want) => {
                        let out = c.insert(k.to_string(), w);
                        let got: Vec<&str> = out.iter().map(|(k, _)| k.as_str()).collect();
                        assert_eq!(got, want, "{name}: op {i}");
                    }
                    Get(k, want) => assert_eq!(c.get(k).copied(), want, "{name}: op {i}"),
                    Remove(k, want) => assert_eq!(c.remove(k), want, "{name}: op {i}"),
                    SetMax(m, want) => {
                        let out = c.set_max_bytes(m);
                        let got: Vec<&str> = out.iter().map(|(k, _)| k.as_str()).collect();
                        assert_eq!(got, want, "{name}: op {i}");
                    }
                }
            }
            assert_eq!(keys(&c), *want_keys, "{name}: keys");
            assert_eq!(c.len(), want_keys.len(), "{name}: len");
            assert_eq!(c.weight(), *want_weight, "{name}: weight");
            assert!(c.weight() <= c.max_bytes(), "{name}: over limit");
        }
    }

    #[test]
    fn peek_does_not_refresh() {
        let mut c = cache(2);
        c.insert("a".into(), 1);
        c.insert("b".into(), 1);
        assert_eq!(c.peek("a"), Some(&1));
        let out = c.insert("c".into(), 1);
        assert_eq!(out, vec![("a".to_string(), 1)]);
        assert!(c.contains("b") && !c.contains("a"));
        c.clear();
        assert!(c.is_empty() && c.weight() == 0 && c.keys().next().is_none());
    }

    #[test]
    fn many_entries_stay_within_limit() {
        let mut c = cache(1000);
        for i in 0..10_000usize {
            c.insert(format!("k{i}"), i % 17 + 1);
            assert!(c.weight() <= 1000);
            if i % 3 == 0 {
                c.get(&format!("k{}", i / 2));
            }
        }
        let sum: usize = c.keys().map(|k| *c.peek(k).unwrap()).sum();
        assert_eq!(sum, c.weight());
        assert_eq!(c.keys().count(), c.len());
    }
}
