//! Which row groups of a data file a read needs, from bounds computed once per file.
//!
//! A read keeps a row group when its time statistics overlap the filter's range and its key
//! statistics `[min, max]` hold one of the wanted keys. Asking the Parquet footer for every
//! row group's statistics on every read costs a walk over all of them (at 4,000 series a
//! day's file has about 530 row groups, and that walk was a sixth of a small query's server
//! time). [`RowGroupIndex`] copies the bounds out of the footer when the file is opened and
//! finds a key's row groups by binary search.
//!
//! Invariants:
//! - [`RowGroupIndex::select`] returns exactly the row groups the statistics test keeps
//!   (tested against it by proptest), ascending, each once. A row group without usable
//!   statistics for a test passes that test, as before.
//! - Key bounds may be truncated statistics (Parquet shortens long byte-array bounds), so
//!   they need not be ordered like the rows: the search orders them by `min` itself and stops
//!   only when no earlier row group's `max` can reach the key (a running maximum).

use bytes::Bytes;
use parquet::file::metadata::ParquetMetaData;
use parquet::file::statistics::Statistics;

/// With more wanted keys than one per this many row groups, [`RowGroupIndex::select`] passes
/// over the bounds once instead of searching per key.
const LINEAR_KEYS_PER_GROUP: usize = 8;

/// One row group's key bounds.
#[derive(Debug, Clone)]
struct KeyBound {
    min: Bytes,
    max: Bytes,
    rg: usize,
}

/// The time and key bounds of a data file's row groups.
#[derive(Debug, Clone, Default)]
pub struct RowGroupIndex {
    /// Per row group, its `[min, max]` time when known.
    time: Vec<Option<(i64, i64)>>,
    /// Row groups with key bounds, ordered by `min` (then row group).
    keyed: Vec<KeyBound>,
    /// `reach[i]`: the greatest `max` of `keyed[..=i]`, as an index into `keyed`.
    reach: Vec<usize>,
    /// Row groups without key bounds: they pass every key test.
    unkeyed: Vec<usize>,
}

impl RowGroupIndex {
    /// The index of a file's footer, with the time and key columns at these Parquet leaf
    /// column indices.
    pub fn from_metadata(meta: &ParquetMetaData, time_idx: usize, key_idx: usize) -> Self {
        let bounds = meta.row_groups().iter().map(|rg| {
            let time = match rg.column(time_idx).statistics() {
                Some(Statistics::Int64(s)) => s.min_opt().zip(s.max_opt()).map(|(a, b)| (*a, *b)),
                _ => None,
            };
            let key = match rg.column(key_idx).statistics() {
                Some(Statistics::ByteArray(s)) => s.min_bytes_opt().zip(s.max_bytes_opt()),
                _ => None,
            };
            (time, key.map(|(a, b)| (a.to_vec(), b.to_vec())))
        });
        Self::from_bounds(bounds)
    }

    /// The index of row groups given as (time bounds, key bounds), in row-group order.
    pub fn from_bounds<I>(bounds: I) -> Self
    where
        I: IntoIterator<Item = (Option<(i64, i64)>, Option<(Vec<u8>, Vec<u8>)>)>,
    {
        let mut out = Self::default();
        for (rg, (time, key)) in bounds.into_iter().enumerate() {
            out.time.push(time);
            match key {
                Some((min, max)) => out.keyed.push(KeyBound {
                    min: min.into(),
                    max: max.into(),
                    rg,
                }),
                None => out.unkeyed.push(rg),
            }
        }
        out.keyed
            .sort_by(|a, b| a.min.cmp(&b.min).then(a.rg.cmp(&b.rg)));
        let mut best = 0;
        for (i, b) in out.keyed.iter().enumerate() {
            if b.max > out.keyed[best].max {
                best = i;
            }
            out.reach.push(best);
        }
        out
    }

    /// How many row groups the file has.
    pub fn len(&self) -> usize {
        self.time.len()
    }

    /// Memory the index holds, for the file cache's weight.
    pub fn memory_bytes(&self) -> usize {
        let keys: usize = self.keyed.iter().map(|k| k.min.len() + k.max.len()).sum();
        keys + self.keyed.len() * std::mem::size_of::<KeyBound>()
            + self.time.len() * std::mem::size_of::<Option<(i64, i64)>>()
            + (self.reach.len() + self.unkeyed.len()) * std::mem::size_of::<usize>()
    }

    /// The row groups, ascending, whose time bounds overlap `[start, end)` (any, when `time`
    /// is `None`) and whose key bounds hold one of `keys` (sorted; any, when `None`).
    pub fn select(&self, keys: Option<&[Bytes]>, time: Option<(i64, i64)>) -> Vec<usize> {
        let time_ok = |rg: usize| match (time, self.time[rg]) {
            (Some((start, end)), Some((min, max))) => max >= start && min < end,
            _ => true,
        };
        let Some(keys) = keys else {
            return (0..self.len()).filter(|&rg| time_ok(rg)).collect();
        };
        let mut out = match keys.len() > self.keyed.len() / LINEAR_KEYS_PER_GROUP {
            true => self.key_hits_linear(keys),
            false => self.key_hits_searched(keys),
        };
        out.retain(|&rg| time_ok(rg));
        out
    }

    /// The row groups holding one of `keys`, by a binary search per key (few keys).
    fn key_hits_searched(&self, keys: &[Bytes]) -> Vec<usize> {
        let mut out: Vec<usize> = self.unkeyed.clone();
        for k in keys {
            self.stab(k, &mut out);
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The row groups holding one of `keys`, by one pass over the bounds with a binary search
    /// over the keys each (many keys: a search per key would cost more).
    fn key_hits_linear(&self, keys: &[Bytes]) -> Vec<usize> {
        let mut out: Vec<usize> = self.unkeyed.clone();
        for b in &self.keyed {
            let first = keys.partition_point(|k| k.as_ref() < b.min.as_ref());
            if keys
                .get(first)
                .is_some_and(|k| k.as_ref() <= b.max.as_ref())
            {
                out.push(b.rg);
            }
        }
        out.sort_unstable();
        out
    }

    /// Appends the row groups whose key bounds hold `k`.
    fn stab(&self, k: &[u8], out: &mut Vec<usize>) {
        let mut i = self.keyed.partition_point(|b| b.min.as_ref() <= k);
        while i > 0 {
            i -= 1;
            if self.keyed[self.reach[i]].max.as_ref() < k {
                break; // no row group at or before i reaches k
            }
            if self.keyed[i].max.as_ref() >= k {
                out.push(self.keyed[i].rg);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    type Bound = (Option<(i64, i64)>, Option<(Vec<u8>, Vec<u8>)>);

    /// The test `selection` applied to each row group's statistics before this index.
    fn brute(bounds: &[Bound], keys: Option<&[Bytes]>, time: Option<(i64, i64)>) -> Vec<usize> {
        (0..bounds.len())
            .filter(|&rg| {
                let time_ok = match (time, bounds[rg].0) {
                    (Some((start, end)), Some((min, max))) => max >= start && min < end,
                    _ => true,
                };
                let keys_ok = match (keys, &bounds[rg].1) {
                    (Some(want), Some((min, max))) => {
                        let first = want.partition_point(|k| k.as_ref() < min.as_slice());
                        want.get(first)
                            .is_some_and(|k| k.as_ref() <= max.as_slice())
                    }
                    _ => true,
                };
                time_ok && keys_ok
            })
            .collect()
    }

    fn key(s: &str) -> Vec<u8> {
        s.as_bytes().to_vec()
    }

    fn keys(list: &[&str]) -> Vec<Bytes> {
        let mut out: Vec<Bytes> = list.iter().map(|s| Bytes::from(key(s))).collect();
        out.sort();
        out
    }

    #[test]
    fn select_table() {
        let t = |a, b| Some((a, b));
        let k = |a: &str, b: &str| Some((key(a), key(b)));
        // A sorted file: series a..d, b straddling row groups 0 and 1.
        let sorted: Vec<Bound> = vec![
            (t(0, 100), k("a", "b")),
            (t(0, 100), k("b", "c")),
            (t(0, 50), k("c", "d")),
        ];
        let truncated: Vec<Bound> = vec![
            (t(0, 10), k("a", "zz")), // a truncated max reaching past every later min
            (t(0, 10), k("b", "c")),
            (t(0, 10), k("m", "n")),
        ];
        let no_stats: Vec<Bound> = vec![(None, None), (t(0, 10), k("q", "r"))];
        type Case<'a> = (
            &'a str,
            &'a [Bound],
            Option<Vec<Bytes>>,
            Option<(i64, i64)>,
            Vec<usize>,
        );
        let cases: Vec<Case> = vec![
            ("no filter", &sorted, None, None, vec![0, 1, 2]),
            (
                "key in one group",
                &sorted,
                Some(keys(&["a"])),
                None,
                vec![0],
            ),
            (
                "key straddling two",
                &sorted,
                Some(keys(&["b"])),
                None,
                vec![0, 1],
            ),
            (
                "keys across groups",
                &sorted,
                Some(keys(&["a", "d"])),
                None,
                vec![0, 2],
            ),
            ("key before all", &sorted, Some(keys(&["0"])), None, vec![]),
            ("key after all", &sorted, Some(keys(&["e"])), None, vec![]),
            ("no keys wanted", &sorted, Some(vec![]), None, vec![]),
            (
                "time drops a group",
                &sorted,
                None,
                Some((60, 90)),
                vec![0, 1],
            ),
            ("end is exclusive", &sorted, None, Some((-5, 0)), vec![]),
            (
                "start is inclusive",
                &sorted,
                None,
                Some((100, 200)),
                vec![0, 1],
            ),
            (
                "keys and time",
                &sorted,
                Some(keys(&["c"])),
                Some((60, 90)),
                vec![1],
            ),
            (
                "truncated max reaches far",
                &truncated,
                Some(keys(&["n"])),
                None,
                vec![0, 2],
            ),
            (
                "between groups",
                &truncated,
                Some(keys(&["d"])),
                None,
                vec![0],
            ),
            (
                "no statistics pass",
                &no_stats,
                Some(keys(&["a"])),
                Some((5, 6)),
                vec![0],
            ),
        ];
        for (name, bounds, want_keys, time, want) in cases {
            let index = RowGroupIndex::from_bounds(bounds.to_vec());
            let got = index.select(want_keys.as_deref(), time);
            assert_eq!(got, want, "{name}");
            assert_eq!(
                got,
                brute(bounds, want_keys.as_deref(), time),
                "{name}: brute"
            );
        }
    }

    #[test]
    fn one_row_group_against_wanted_keys() {
        let want = keys(&["b", "d", "f"]);
        for (name, min, max, keep) in [
            ("holds one", "c", "d", true),
            ("exactly a key", "d", "d", true),
            ("between keys", "bb", "cz", false),
            ("before all", "a", "az", false),
            ("after all", "g", "z", false),
            ("spans all", "a", "z", true),
        ] {
            let index = RowGroupIndex::from_bounds([(None, Some((key(min), key(max))))]);
            assert_eq!(!index.select(Some(&want), None).is_empty(), keep, "{name}");
            assert!(
                index.select(Some(&[]), None).is_empty(),
                "{name}: no keys wanted"
            );
        }
    }

    fn bound() -> impl Strategy<Value = Bound> {
        let time = prop::option::of((0i64..50, 0i64..50).prop_map(|(a, b)| (a.min(b), a.max(b))));
        let word = prop::collection::vec(0u8..4, 0..3);
        let key = prop::option::of(
            (word.clone(), word).prop_map(|(a, b)| if a <= b { (a, b) } else { (b, a) }),
        );
        (time, key)
    }

    proptest! {
        #[test]
        fn select_equals_the_statistics_test(
            bounds in prop::collection::vec(bound(), 0..12),
            want in prop::option::of(prop::collection::vec(prop::collection::vec(0u8..4, 0..3), 0..4)),
            time in prop::option::of((0i64..60, 0i64..60)),
        ) {
            let want: Option<Vec<Bytes>> = want.map(|w| {
                let mut w: Vec<Bytes> = w.into_iter().map(Bytes::from).collect();
                w.sort();
                w
            });
            let index = RowGroupIndex::from_bounds(bounds.clone());
            let expected = brute(&bounds, want.as_deref(), time);
            prop_assert_eq!(index.select(want.as_deref(), time), expected);
            if let Some(w) = &want {
                let brute_keys = brute(&bounds, Some(w), None);
                prop_assert_eq!(index.key_hits_searched(w), brute_keys.clone());
                prop_assert_eq!(index.key_hits_linear(w), brute_keys);
            }
        }
    }
}
