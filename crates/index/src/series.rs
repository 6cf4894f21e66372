//! [`SeriesIndex`]: the forward index (key ↔ id) and the per-tag inverted index of a region.

use std::collections::BTreeMap;
use std::fmt;

use hashbrown::HashTable;
use roaring::RoaringBitmap;
use tempora_model::{SeriesId, decode_series_key, series_hash};

use crate::arena::{Arena, Span};
use crate::error::IndexError;
use crate::tags::{TagValues, table_bytes};

/// Default for [`IndexLimits::max_series`].
pub const DEFAULT_MAX_SERIES: usize = 10_000_000;

/// Limits of one [`SeriesIndex`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexLimits {
    /// Most series the index accepts; inserting one more fails with
    /// [`IndexError::TooManySeries`]. Ids are `u32`, so values above `u32::MAX` act as `u32::MAX`.
    pub max_series: usize,
}

impl Default for IndexLimits {
    fn default() -> Self {
        Self {
            max_series: DEFAULT_MAX_SERIES,
        }
    }
}

impl IndexLimits {
    fn effective_max(&self) -> usize {
        self.max_series.min(u32::MAX as usize)
    }
}

/// The series index of one region. See the crate docs for the invariants.
#[derive(Clone)]
pub struct SeriesIndex {
    limits: IndexLimits,
    /// Every encoded series key, once.
    keys: Arena,
    /// `spans[id]` locates the key of series `id` in `keys`.
    spans: Vec<Span>,
    /// Series ids hashed by `series_hash(key)`; the key bytes are compared through `spans`.
    table: HashTable<u32>,
    /// Tag key (interned once, sorted) → its values and posting lists.
    tags: BTreeMap<Box<str>, TagValues>,
}

impl fmt::Debug for SeriesIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SeriesIndex")
            .field("series", &self.spans.len())
            .field("tag_keys", &self.tags.len())
            .field("key_bytes", &self.keys.len())
            .field("limits", &self.limits)
            .finish()
    }
}

impl Default for SeriesIndex {
    fn default() -> Self {
        Self::new(IndexLimits::default())
    }
}

impl SeriesIndex {
    pub fn new(limits: IndexLimits) -> Self {
        Self {
            limits,
            keys: Arena::default(),
            spans: Vec::new(),
            table: HashTable::new(),
            tags: BTreeMap::new(),
        }
    }

    pub fn limits(&self) -> IndexLimits {
        self.limits
    }

    /// The id of the series with this encoded key, if indexed.
    pub fn get(&self, key: &[u8]) -> Option<SeriesId> {
        self.find(series_hash(key), key)
    }

    fn find(&self, hash: u64, key: &[u8]) -> Option<SeriesId> {
        let (keys, spans) = (&self.keys, &self.spans);
        self.table
            .find(hash, |&id| keys.get(spans[id as usize]) == key)
            .map(|&id| SeriesId(id))
    }

    /// Returns the id of `key`, assigning the next dense id if it is new (`true` = created).
    ///
    /// A new key must decode with [`decode_series_key`] and be canonical (tag keys strictly
    /// ascending); on any error the index is unchanged.
    pub fn get_or_insert(&mut self, key: &[u8]) -> Result<(SeriesId, bool), IndexError> {
        let hash = series_hash(key);
        if let Some(id) = self.find(hash, key) {
            return Ok((id, false));
        }
        let limit = self.limits.effective_max();
        if self.spans.len() >= limit {
            return Err(IndexError::TooManySeries {
                limit: self.limits.max_series,
            });
        }
        let tags = decode_series_key(key)?;
        for pair in tags.windows(2) {
            if pair[0].0 >= pair[1].0 {
                return Err(IndexError::NonCanonicalKey {
                    key: pair[1].0.chars().take(64).collect(),
                });
            }
        }
        let span = self
            .keys
            .push(key)
            .ok_or(IndexError::KeyTooLong { len: key.len() })?;
        let id = self.spans.len() as u32;
        self.spans.push(span);
        let (keys, spans) = (&self.keys, &self.spans);
        self.table
            .insert_unique(hash, id, |&i| series_hash(keys.get(spans[i as usize])));
        for (k, v) in tags {
            let values = match self.tags.get_mut(k.as_str()) {
                Some(t) => t,
                None => self.tags.entry(k.into_boxed_str()).or_default(),
            };
            // A value is shorter than its key, which the key arena accepted, so this holds.
            values
                .add(&v, id)
                .ok_or(IndexError::KeyTooLong { len: key.len() })?;
        }
        Ok((SeriesId(id), true))
    }

    /// The encoded key of series `id`.
    pub fn key(&self, id: SeriesId) -> Option<&[u8]> {
        self.spans.get(id.0 as usize).map(|&s| self.keys.get(s))
    }

    /// Number of series.
    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    /// Keys in id order.
    pub fn keys(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        self.spans.iter().map(|&s| self.keys.get(s))
    }

    /// Total bytes of all keys.
    pub fn key_bytes(&self) -> usize {
        self.keys.len()
    }

    /// Tag keys present in any series, sorted.
    pub fn tag_keys(&self) -> Vec<&str> {
        self.tags.keys().map(|k| &**k).collect()
    }

    /// Distinct values of tag `key`, sorted (byte order); empty for an unknown key.
    pub fn tag_values(&self, key: &str) -> Vec<&str> {
        let mut v: Vec<&str> = self
            .tags
            .get(key)
            .map(|t| t.values().collect())
            .unwrap_or_default();
        v.sort_unstable();
        v
    }

    /// Number of distinct values of tag `key`.
    pub fn tag_cardinality(&self, key: &str) -> usize {
        self.tags.get(key).map_or(0, TagValues::cardinality)
    }

    pub(crate) fn tag(&self, key: &str) -> Option<&TagValues> {
        self.tags.get(key)
    }

    /// Every series id.
    pub(crate) fn all(&self) -> RoaringBitmap {
        let mut b = RoaringBitmap::new();
        b.insert_range(0..self.spans.len() as u32);
        b
    }

    /// Reserves room for `additional` more series in the forward index.
    pub(crate) fn reserve(&mut self, additional: usize) {
        self.spans.reserve_exact(additional);
        let (keys, spans) = (&self.keys, &self.spans);
        self.table
            .reserve(additional, |&i| series_hash(keys.get(spans[i as usize])));
    }

    /// Estimated heap bytes of the whole index (keys, forward table, inverted index).
    pub fn memory_bytes(&self) -> usize {
        let tags: usize = self
            .tags
            .iter()
            .map(|(k, t)| k.len() + size_of::<(Box<str>, TagValues)>() + t.memory_bytes())
            .sum();
        self.keys.memory_bytes()
            + self.spans.capacity() * size_of::<Span>()
            + table_bytes(self.table.capacity())
            + tags
    }
}
