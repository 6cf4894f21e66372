//! Tombstones: what `DELETE` leaves behind until compaction rewrites the rows away.
//!
//! A tombstone names a time range, a set of series (by key; `None` = every series) and the
//! sequence number the delete took. It hides a row when the row's series and time match and
//! the row was written before the delete (`row seq < tombstone seq`), so a point written
//! again after the delete, at the same series and time, is visible.
//!
//! Invariants:
//! - Tombstones apply to rows *before* rows of different writes are merged (a memtable part
//!   by series id, each data file on its own), because the merge combines a (series, time)
//!   field by field: merged first, a deleted field could come back under a newer write.
//! - A data file records the newest tombstone already applied to it (`purged_seq`); a file
//!   whose rows were all written after a tombstone (`min_seq > seq`) or whose time range
//!   misses it is clean too. A tombstone is dropped once every file of its region is clean
//!   for it and the region's memtable holds nothing written before it (`flushed_seq`).
//! - Tombstones are committed in the manifest before any reader applies them, and their
//!   sequence numbers are observed at start-up, so new writes always sort after them.

use arrow::array::{BooleanArray, RecordBatch};
use arrow::compute::filter_record_batch;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::files::manifest::FileMeta;
use crate::read::run::SortedRun;

/// One delete's effect on one region.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tombstone {
    /// The delete's sequence number: rows written before it (smaller seq) are hidden.
    pub seq: u64,
    /// Inclusive start and exclusive end of the deleted times (ns).
    pub start: i64,
    pub end: i64,
    /// Sorted series keys, hex in the manifest; `None` = every series of the region.
    #[serde(with = "hex_keys")]
    pub keys: Option<Vec<Bytes>>,
}

impl Tombstone {
    /// Whether a row at `time`, written at `seq`, of a series the tombstone names
    /// ([`Tombstone::has_key`]) is deleted.
    pub fn hides_row(&self, time: i64, seq: u64) -> bool {
        seq < self.seq && self.start <= time && time < self.end
    }

    /// Whether the tombstone names the series.
    pub fn has_key(&self, key: &[u8]) -> bool {
        self.keys
            .as_ref()
            .is_none_or(|k| k.binary_search_by(|x| x.as_ref().cmp(key)).is_ok())
    }

    /// Whether `file` can hold no row this tombstone hides.
    pub fn spares(&self, file: &FileMeta) -> bool {
        file.purged_seq >= self.seq
            || file.min_seq > self.seq
            || file.max_time < self.start
            || file.min_time >= self.end
    }
}

/// The tombstones that may hide rows of `file`.
pub fn for_file<'a>(tombs: &'a [Tombstone], file: &FileMeta) -> Vec<&'a Tombstone> {
    tombs.iter().filter(|t| !t.spares(file)).collect()
}

/// Removes the rows of a single-version run (a data file: one row per series and time) that
/// any of `tombs` hides.
pub fn apply_to_run(run: SortedRun, tombs: &[&Tombstone]) -> Result<SortedRun> {
    if tombs.is_empty() || run.num_rows() == 0 {
        return Ok(run);
    }
    // Per key rank, the tombstones naming it; most runs then test a row against few.
    let per_key: Vec<Vec<&Tombstone>> = run
        .keys
        .iter()
        .map(|k| tombs.iter().copied().filter(|t| t.has_key(k)).collect())
        .collect();
    let (ranks, times, seqs) = (run.ranks(), run.times(), run.seqs());
    let keep: BooleanArray = (0..run.num_rows())
        .map(|i| {
            let hidden = per_key[ranks[i] as usize]
                .iter()
                .any(|t| t.hides_row(times[i], seqs[i]));
            Some(!hidden)
        })
        .collect();
    if keep.true_count() == run.num_rows() {
        return Ok(run);
    }
    Ok(SortedRun {
        batch: filter_record_batch(&run.batch, &keep)?,
        keys: run.keys,
    })
}

/// Removes hidden rows from a memtable part (first columns: series id, time, seq), before
/// the part's own rows are merged. `key_of` maps a series id to its key.
pub fn apply_to_part(
    batch: &RecordBatch,
    tombs: &[Tombstone],
    key_of: impl Fn(u32) -> Bytes,
) -> Result<RecordBatch> {
    use arrow::array::AsArray;
    use arrow::datatypes::{Int64Type, UInt32Type, UInt64Type};
    if tombs.is_empty() || batch.num_rows() == 0 {
        return Ok(batch.clone());
    }
    let ids = batch.column(0).as_primitive::<UInt32Type>().values();
    let times = batch.column(1).as_primitive::<Int64Type>().values();
    let seqs = batch.column(2).as_primitive::<UInt64Type>().values();
    let mut memo: std::collections::HashMap<u32, Vec<&Tombstone>> = Default::default();
    let keep: BooleanArray = (0..batch.num_rows())
        .map(|i| {
            let named = memo.entry(ids[i]).or_insert_with(|| {
                let key = key_of(ids[i]);
                tombs.iter().filter(|t| t.has_key(&key)).collect()
            });
            let hidden = named.iter().any(|t| t.hides_row(times[i], seqs[i]));
            Some(!hidden)
        })
        .collect();
    Ok(filter_record_batch(batch, &keep)?)
}

/// The tombstones a region may drop: every file spares them and nothing written before them
/// is left in the memtable.
pub fn droppable(tombs: &[Tombstone], files: &[&FileMeta], flushed_seq: u64) -> Vec<u64> {
    tombs
        .iter()
        .filter(|t| flushed_seq >= t.seq && files.iter().all(|f| t.spares(f)))
        .map(|t| t.seq)
        .collect()
}

mod hex_keys {
    use bytes::Bytes;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(keys: &Option<Vec<Bytes>>, s: S) -> Result<S::Ok, S::Error> {
        let hex: Option<Vec<String>> = keys.as_ref().map(|ks| ks.iter().map(hex::encode).collect());
        serde::Serialize::serialize(&hex, s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Bytes>>, D::Error> {
        let hex: Option<Vec<String>> = Option::deserialize(d)?;
        hex.map(|ks| {
            ks.iter()
                .map(|k| hex::decode(k).map(Bytes::from))
                .collect::<Result<Vec<_>, _>>()
                .map_err(serde::de::Error::custom)
        })
        .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::run::run_schema;
    use arrow::array::{Float64Array, Int64Array, UInt32Array, UInt64Array};
    use std::sync::Arc;
    use tempora_model::FieldType;

    fn tomb(seq: u64, start: i64, end: i64, keys: Option<&[&str]>) -> Tombstone {
        Tombstone {
            seq,
            start,
            end,
            keys: keys.map(|k| {
                let mut v: Vec<Bytes> = k.iter().map(|s| Bytes::from(s.to_string())).collect();
                v.sort();
                v
            }),
        }
    }

    /// A run over keys "a", "b" with rows (rank, time, seq).
    fn run(rows: &[(u32, i64, u64)]) -> SortedRun {
        let fields = vec![("v".to_string(), FieldType::F64)];
        let batch = RecordBatch::try_new(
            run_schema(&fields),
            vec![
                Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.0))),
                Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1))),
                Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.2))),
                Arc::new(Float64Array::from_iter_values(rows.iter().map(|_| 1.0))),
            ],
        )
        .unwrap();
        SortedRun {
            keys: Arc::new(vec![Bytes::from("a"), Bytes::from("b")]),
            batch,
        }
    }

    fn rows_of(r: &SortedRun) -> Vec<(u32, i64, u64)> {
        (0..r.num_rows())
            .map(|i| (r.ranks()[i], r.times()[i], r.seqs()[i]))
            .collect()
    }

    #[test]
    fn which_rows_a_tombstone_hides() {
        let rows = [(0, 10, 1), (0, 20, 1), (0, 30, 9), (1, 10, 1), (1, 20, 1)];
        type Case = (&'static str, Vec<Tombstone>, Vec<(u32, i64, u64)>);
        let cases: Vec<Case> = vec![
            ("none", vec![], rows.to_vec()),
            (
                "every series in [15, 25)",
                vec![tomb(5, 15, 25, None)],
                vec![(0, 10, 1), (0, 30, 9), (1, 10, 1)],
            ),
            (
                "one series, whole time",
                vec![tomb(5, i64::MIN, i64::MAX, Some(&["b"]))],
                vec![(0, 10, 1), (0, 20, 1), (0, 30, 9)],
            ),
            (
                "a row written after the delete stays",
                vec![tomb(5, 0, 100, Some(&["a"]))],
                vec![(0, 30, 9), (1, 10, 1), (1, 20, 1)],
            ),
            (
                "end is exclusive",
                vec![tomb(5, 0, 10, None)],
                rows.to_vec(),
            ),
            (
                "two tombstones add up",
                vec![tomb(5, 10, 11, Some(&["a"])), tomb(6, 20, 21, Some(&["b"]))],
                vec![(0, 20, 1), (0, 30, 9), (1, 10, 1)],
            ),
            (
                "a key the run lacks",
                vec![tomb(5, 0, 100, Some(&["c"]))],
                rows.to_vec(),
            ),
        ];
        for (name, tombs, want) in cases {
            let refs: Vec<&Tombstone> = tombs.iter().collect();
            let got = apply_to_run(run(&rows), &refs).unwrap();
            assert_eq!(rows_of(&got), want, "{name}");
        }
    }

    fn file(min_time: i64, max_time: i64, min_seq: u64, purged_seq: u64) -> FileMeta {
        FileMeta {
            id: 1,
            path: "f".into(),
            rows: 1,
            size: 1,
            min_time,
            max_time,
            max_seq: min_seq + 10,
            min_seq,
            purged_seq,
            last_rows: None,
            key_range: None,
            rollups: Vec::new(),
            raw_expired: false,
            crc32c: None,
        }
    }

    #[test]
    fn which_files_a_tombstone_spares() {
        let t = tomb(50, 100, 200, None);
        for (name, f, spared) in [
            ("overlapping, written before", file(150, 250, 1, 0), false),
            ("before the range", file(0, 99, 1, 0), true),
            ("after the range", file(200, 300, 1, 0), true),
            ("written after the delete", file(150, 160, 51, 0), true),
            ("already purged", file(150, 160, 1, 50), true),
            (
                "purged by an older delete only",
                file(150, 160, 1, 49),
                false,
            ),
        ] {
            assert_eq!(t.spares(&f), spared, "{name}");
        }
        let files = [file(150, 160, 1, 50)];
        let refs: Vec<&FileMeta> = files.iter().collect();
        assert_eq!(droppable(std::slice::from_ref(&t), &refs, 50), vec![50]);
        assert!(
            droppable(std::slice::from_ref(&t), &refs, 49).is_empty(),
            "memtable may still hold older rows"
        );
    }

    #[test]
    fn keys_round_trip_through_the_manifest_as_hex() {
        for t in [tomb(3, -5, 5, Some(&["a\0b", "z"])), tomb(4, 0, 1, None)] {
            let json = serde_json::to_string(&t).unwrap();
            assert_eq!(serde_json::from_str::<Tombstone>(&json).unwrap(), t);
        }
        let bad = r#"{"seq":1,"start":0,"end":1,"keys":["zz"]}"#;
        assert!(serde_json::from_str::<Tombstone>(bad).is_err());
    }
}
