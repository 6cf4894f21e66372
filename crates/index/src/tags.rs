//! The inverted index of one tag key: distinct values → posting lists of series ids.

use hashbrown::HashTable;
use roaring::RoaringBitmap;
use tempora_model::series_hash;

use crate::arena::{Arena, Span};

/// The series ids that carry one tag value. Most values of a high-cardinality tag (a hostname)
/// belong to one series, so that case is stored inline instead of as a bitmap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Postings {
    /// Exactly one series id.
    One(u32),
    /// Index into [`TagValues::bitmaps`], a bitmap of two or more ids.
    Many(u32),
}

#[derive(Debug, Clone, Copy)]
struct ValueEntry {
    span: Span,
    postings: Postings,
}

/// Values of one tag key and their posting lists.
#[derive(Debug, Default, Clone)]
pub(crate) struct TagValues {
    /// Distinct values in first-seen order.
    values: Vec<ValueEntry>,
    /// Value bytes (always UTF-8: they come from decoded keys).
    arena: Arena,
    /// Indexes into `values`, hashed by the value bytes.
    table: HashTable<u32>,
    /// Posting bitmaps of values held by two or more series.
    bitmaps: Vec<RoaringBitmap>,
    /// Every series that has this tag key.
    present: RoaringBitmap,
}

impl TagValues {
    /// Records that series `id` has this tag with `value`. `None` only if the value arena is
    /// exhausted (more than 4 GiB in one value or 2^32 chunks), in which case nothing changed.
    pub(crate) fn add(&mut self, value: &str, id: u32) -> Option<()> {
        let hash = series_hash(value.as_bytes());
        let (values, arena) = (&self.values, &self.arena);
        let found = self.table.find(hash, |&i| {
            arena.get(values[i as usize].span) == value.as_bytes()
        });
        match found.copied() {
            Some(i) => self.add_to(i as usize, id),
            None => {
                let span = self.arena.push(value.as_bytes())?;
                let idx = u32::try_from(self.values.len()).ok()?;
                self.values.push(ValueEntry {
                    span,
                    postings: Postings::One(id),
                });
                let (values, arena) = (&self.values, &self.arena);
                self.table.insert_unique(hash, idx, |&i| {
                    series_hash(arena.get(values[i as usize].span))
                });
            }
        }
        self.present.insert(id);
        Some(())
    }

    fn add_to(&mut self, i: usize, id: u32) {
        let entry = &mut self.values[i];
        match entry.postings {
            Postings::One(first) => {
                let mut b = RoaringBitmap::new();
                b.insert(first);
                b.insert(id);
                entry.postings = Postings::Many(self.bitmaps.len() as u32);
                self.bitmaps.push(b);
            }
            Postings::Many(b) => {
                self.bitmaps[b as usize].insert(id);
            }
        }
    }

    fn find(&self, value: &str) -> Option<&ValueEntry> {
        let hash = series_hash(value.as_bytes());
        let i = self.table.find(hash, |&i| {
            self.arena.get(self.values[i as usize].span) == value.as_bytes()
        })?;
        self.values.get(*i as usize)
    }

    /// Series with exactly this value.
    pub(crate) fn eq(&self, value: &str) -> RoaringBitmap {
        match self.find(value) {
            None => RoaringBitmap::new(),
            Some(e) => self.bitmap_of(e.postings),
        }
    }

    fn bitmap_of(&self, p: Postings) -> RoaringBitmap {
        match p {
            Postings::One(id) => std::iter::once(id).collect(),
            Postings::Many(b) => self.bitmaps[b as usize].clone(),
        }
    }

    /// Union of the posting lists of every value for which `pred` holds. Scans the distinct
    /// values, never the series.
    pub(crate) fn union_where(&self, mut pred: impl FnMut(&str) -> bool) -> RoaringBitmap {
        let mut singles = Vec::new();
        let mut out = RoaringBitmap::new();
        for e in &self.values {
            let Ok(v) = std::str::from_utf8(self.arena.get(e.span)) else {
                continue;
            };
            if !pred(v) {
                continue;
            }
            match e.postings {
                Postings::One(id) => singles.push(id),
                Postings::Many(b) => out |= &self.bitmaps[b as usize],
            }
        }
        if !singles.is_empty() {
            singles.sort_unstable();
            // Sorted and distinct (each id holds one value per key), so this cannot fail.
            if let Ok(b) = RoaringBitmap::from_sorted_iter(singles) {
                out |= b;
            }
        }
        out
    }

    /// Series that have this tag key at all.
    pub(crate) fn present(&self) -> &RoaringBitmap {
        &self.present
    }

    /// Distinct values, in first-seen order.
    pub(crate) fn values(&self) -> impl Iterator<Item = &str> + '_ {
        self.values
            .iter()
            .filter_map(|e| std::str::from_utf8(self.arena.get(e.span)).ok())
    }

    /// Number of distinct values.
    pub(crate) fn cardinality(&self) -> usize {
        self.values.len()
    }

    /// Estimated heap bytes.
    pub(crate) fn memory_bytes(&self) -> usize {
        let bitmaps: usize = self.bitmaps.iter().map(bitmap_bytes).sum();
        self.values.capacity() * size_of::<ValueEntry>()
            + self.arena.memory_bytes()
            + table_bytes(self.table.capacity())
            + self.bitmaps.capacity() * size_of::<RoaringBitmap>()
            + bitmaps
            + bitmap_bytes(&self.present)
    }
}

/// Estimated heap bytes of a bitmap (its serialized size is within a few percent).
pub(crate) fn bitmap_bytes(b: &RoaringBitmap) -> usize {
    if b.is_empty() { 0 } else { b.serialized_size() }
}

/// Estimated heap bytes of a `HashTable<u32>` with `capacity` usable slots.
pub(crate) fn table_bytes(capacity: usize) -> usize {
    if capacity == 0 {
        return 0;
    }
    // hashbrown keeps buckets = next_pow2(capacity * 8 / 7), each a u32 plus one control byte.
    let buckets = (capacity * 8 / 7).next_power_of_two();
    buckets * (size_of::<u32>() + 1) + 16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_then_many() {
        let mut t = TagValues::default();
        let adds = [("a", 0), ("b", 1), ("a", 2), ("", 3), ("a", 4)];
        for (v, id) in adds {
            t.add(v, id).unwrap();
        }
        let cases: &[(&str, &[u32])] = &[("a", &[0, 2, 4]), ("b", &[1]), ("", &[3]), ("zz", &[])];
        for (v, want) in cases {
            let got: Vec<u32> = t.eq(v).iter().collect();
            assert_eq!(got, *want, "value {v:?}");
        }
        assert_eq!(t.cardinality(), 3);
        assert_eq!(t.present().len(), 5);
        let all: Vec<u32> = t.union_where(|_| true).iter().collect();
        assert_eq!(all, vec![0, 1, 2, 3, 4]);
        let b: Vec<u32> = t.union_where(|v| v == "b").iter().collect();
        assert_eq!(b, vec![1]);
    }
}
