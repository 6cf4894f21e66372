//! [`SortedRun`]: rows sorted by (series key, time, seq), the form in which memtable parts,
//! data files and merge results meet.
//!
//! A run holds its distinct series keys once, sorted (`keys`), and a batch whose first three
//! columns are `__rank` (u32 index into `keys`), `time` (i64 ns) and `__seq` (u64), followed by
//! nullable field columns. Merging runs unifies their keys, sorts, and removes duplicates:
//! for the same (series, time) the newest write wins **field by field** (a later write that
//! leaves a field null does not erase an earlier value).

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, RecordBatch, StringArray, StringBuilder, UInt32Array, new_null_array,
};
use arrow::compute::{concat_batches, take};
use arrow::datatypes::{DataType, Field, Int64Type, Schema, SchemaRef, UInt32Type, UInt64Type};
use bytes::Bytes;
use tempora_model::{FieldType, SEQ_COLUMN, TIME_COLUMN};

use crate::error::Result;

/// Arrow type of a field column.
pub fn arrow_type(ty: FieldType) -> DataType {
    match ty {
        FieldType::F64 => DataType::Float64,
        FieldType::I64 => DataType::Int64,
        FieldType::U64 => DataType::UInt64,
        FieldType::Bool => DataType::Boolean,
        FieldType::Str => DataType::Utf8,
    }
}

/// Column name of the key rank inside a run.
pub const RANK_COLUMN: &str = "__rank";

/// Rows sorted by (key, time, seq) with their keys stored once.
#[derive(Debug, Clone)]
pub struct SortedRun {
    pub keys: Arc<Vec<Bytes>>,
    pub batch: RecordBatch,
}

/// The schema of a run holding the given fields.
pub fn run_schema(fields: &[(String, FieldType)]) -> SchemaRef {
    let mut f = vec![
        Field::new(RANK_COLUMN, DataType::UInt32, false),
        Field::new(TIME_COLUMN, DataType::Int64, false),
        Field::new(SEQ_COLUMN, DataType::UInt64, false),
    ];
    f.extend(
        fields
            .iter()
            .map(|(n, t)| Field::new(n, arrow_type(*t), true)),
    );
    Arc::new(Schema::new(f))
}

impl SortedRun {
    pub fn empty(fields: &[(String, FieldType)]) -> Self {
        Self {
            keys: Arc::new(Vec::new()),
            batch: RecordBatch::new_empty(run_schema(fields)),
        }
    }

    /// For each tag, its value for every key of the run (null where a key lacks the tag);
    /// each key is decoded once. Index the arrays with [`SortedRun::ranks`].
    pub fn tag_values(&self, tags: &[String]) -> Result<Vec<StringArray>> {
        tag_columns(self.keys.iter().map(|k| k.as_ref()), tags)
    }

    /// The run's times as a UTC nanosecond timestamp column.
    pub fn time_column(&self) -> arrow::array::TimestampNanosecondArray {
        let times = self
            .batch
            .column(1)
            .as_primitive::<Int64Type>()
            .values()
            .clone();
        arrow::array::TimestampNanosecondArray::new(times, None).with_timezone("UTC")
    }

    pub fn num_rows(&self) -> usize {
        self.batch.num_rows()
    }

    pub fn ranks(&self) -> &[u32] {
        self.batch.column(0).as_primitive::<UInt32Type>().values()
    }
    pub fn times(&self) -> &[i64] {
        self.batch.column(1).as_primitive::<Int64Type>().values()
    }
    pub fn seqs(&self) -> &[u64] {
        self.batch.column(2).as_primitive::<UInt64Type>().values()
    }

    /// The rows `mask` keeps, as a run whose keys are those of the kept rows only (so that
    /// every key of it still has a row).
    pub fn filter(&self, mask: &arrow::array::BooleanArray) -> Result<SortedRun> {
        let batch = arrow::compute::filter_record_batch(&self.batch, mask)?;
        SortedRun {
            keys: self.keys.clone(),
            batch,
        }
        .without_empty_keys()
    }

    /// The run with every row's write sequence set to `seq`. For a compaction that merged
    /// every file of a region: each (series, time) is then in one row, every other source of
    /// the region (memtables, later flushes, later deletes) is newer than all of them, so the
    /// rows need no order among themselves, and a constant column costs a few bytes per row
    /// group instead of one delta per row.
    pub fn with_one_seq(self, seq: u64) -> Result<SortedRun> {
        let mut columns = self.batch.columns().to_vec();
        columns[2] = Arc::new(arrow::array::UInt64Array::from_value(
            seq,
            self.batch.num_rows(),
        ));
        Ok(SortedRun {
            keys: self.keys,
            batch: RecordBatch::try_new(self.batch.schema(), columns)?,
        })
    }

    /// The run without the keys that have no row (a delete or a window split can leave
    /// some), ranks renumbered.
    pub fn without_empty_keys(self) -> Result<SortedRun> {
        let batch = self.batch;
        let ranks = batch.column(0).as_primitive::<UInt32Type>().values();
        let distinct = ranks.windows(2).filter(|w| w[0] != w[1]).count() + 1;
        if ranks.is_empty() || distinct == self.keys.len() {
            let keys = if ranks.is_empty() {
                Arc::new(Vec::new())
            } else {
                self.keys
            };
            return Ok(SortedRun { keys, batch });
        }
        let mut keys = Vec::with_capacity(distinct);
        let mut remap = Vec::with_capacity(ranks.len());
        for (i, &r) in ranks.iter().enumerate() {
            if i == 0 || ranks[i - 1] != r {
                keys.push(self.keys[r as usize].clone());
            }
            remap.push(keys.len() as u32 - 1);
        }
        let mut columns = batch.columns().to_vec();
        columns[0] = Arc::new(UInt32Array::from(remap));
        Ok(SortedRun {
            keys: Arc::new(keys),
            batch: RecordBatch::try_new(batch.schema(), columns)?,
        })
    }

    /// The newest row of each key (the last of its rows, the run being sorted by key then
    /// time), with the same keys: every key of a run has at least one row.
    pub fn last_per_key(&self) -> SortedRun {
        debug_assert!(
            self.ranks()
                .last()
                .is_none_or(|r| (*r as usize) < self.keys.len()),
            "ranks within the keys"
        );
        let ranks = self.ranks();
        let n = ranks.len();
        if n == self.keys.len() {
            return self.clone();
        }
        let last: UInt32Array = (0..n)
            .filter(|&i| i + 1 == n || ranks[i + 1] != ranks[i])
            .map(|i| i as u32)
            .collect();
        let batch = arrow::compute::take_record_batch(&self.batch, &last).expect("in range");
        debug_assert_eq!(batch.num_rows(), self.keys.len(), "one row per key");
        SortedRun {
            keys: self.keys.clone(),
            batch,
        }
    }

    /// Builds a run from a batch whose first column holds arbitrary u32 series ids, mapping ids
    /// to keys with `key_of`. The result is sorted and deduplicated.
    pub fn from_series_batch(
        batch: &RecordBatch,
        fields: &[(String, FieldType)],
        key_of: impl Fn(u32) -> Bytes,
    ) -> Result<SortedRun> {
        let ids = batch.column(0).as_primitive::<UInt32Type>();
        let mut distinct: Vec<u32> = ids.values().to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        let mut keyed: Vec<(Bytes, u32)> = distinct.iter().map(|&id| (key_of(id), id)).collect();
        keyed.sort_unstable();
        // Ids are dense per region, so a vector maps id → rank.
        let mut rank_of = vec![u32::MAX; distinct.last().map_or(0, |&m| m as usize + 1)];
        for (r, (_, id)) in keyed.iter().enumerate() {
            rank_of[*id as usize] = r as u32;
        }
        let ranks: UInt32Array = ids
            .values()
            .iter()
            .map(|&id| rank_of[id as usize])
            .collect();
        let id_order: Vec<u32> = keyed.iter().map(|(_, id)| *id).collect();
        let keys: Vec<Bytes> = keyed.into_iter().map(|(k, _)| k).collect();
        let aligned = align(batch, Arc::new(ranks), fields)?;
        if is_sorted(batch) {
            // Sorted by (id, time, seq): each series' rows are one block already in order;
            // putting the blocks in key order sorts the run without comparing rows.
            let order = blocks_in_order(ids.values(), &id_order);
            let sorted = arrow::compute::take_record_batch(&aligned, &order)?;
            debug_assert!(is_sorted(&sorted));
            return Ok(SortedRun {
                keys: Arc::new(keys),
                batch: dedup_sorted(sorted),
            });
        }
        Ok(sort_dedup(Arc::new(keys), aligned))
    }
}

/// The rows of `ids` (sorted, so each id's rows are one block) with the blocks in the order
/// `id_order` lists the ids.
fn blocks_in_order(ids: &[u32], id_order: &[u32]) -> UInt32Array {
    let max = id_order.iter().copied().max().map_or(0, |m| m as usize + 1);
    let mut block = vec![(0usize, 0usize); max];
    let mut a = 0;
    while a < ids.len() {
        let b = a + ids[a..].iter().take_while(|&&x| x == ids[a]).count();
        block[ids[a] as usize] = (a, b);
        a = b;
    }
    let mut out = Vec::with_capacity(ids.len());
    for &id in id_order {
        let (a, b) = block[id as usize];
        out.extend(a as u32..b as u32);
    }
    UInt32Array::from(out)
}

/// Re-shapes `batch` (first column replaced by `ranks`) to the run schema of `fields`,
/// adding null columns for fields it lacks.
fn align(
    batch: &RecordBatch,
    ranks: ArrayRef,
    fields: &[(String, FieldType)],
) -> Result<RecordBatch> {
    let schema = run_schema(fields);
    let mut cols: Vec<ArrayRef> = vec![ranks, batch.column(1).clone(), batch.column(2).clone()];
    for (name, ty) in fields {
        let col = match batch.column_by_name(name) {
            Some(c) if c.data_type() == &arrow_type(*ty) => c.clone(),
            _ => new_null_array(&arrow_type(*ty), batch.num_rows()),
        };
        cols.push(col);
    }
    Ok(RecordBatch::try_new(schema, cols)?)
}

/// Merges runs into one sorted, deduplicated run with the given fields.
pub fn merge_runs(runs: &[SortedRun], fields: &[(String, FieldType)]) -> Result<SortedRun> {
    // A single run is already sorted and deduplicated: only its columns may need aligning.
    if let [run] = runs
        && run.batch.schema() == run_schema(fields)
    {
        return Ok(run.clone());
    }
    let mut all: Vec<Bytes> = runs.iter().flat_map(|r| r.keys.iter().cloned()).collect();
    all.sort_unstable();
    all.dedup();
    let mut batches = Vec::with_capacity(runs.len());
    for run in runs {
        let remap: Vec<u32> = run
            .keys
            .iter()
            .map(|k| all.binary_search(k).expect("key in union") as u32)
            .collect();
        let ranks: UInt32Array = run.ranks().iter().map(|&r| remap[r as usize]).collect();
        batches.push(align(&run.batch, Arc::new(ranks), fields)?);
    }
    let schema = run_schema(fields);
    let order = merge_order(&batches);
    let batch = concat_batches(&schema, &batches)?;
    // Each run is sorted: interleaving them costs a heap step per row, not a sort.
    let batch = arrow::compute::take_record_batch(&batch, &order)?;
    debug_assert!(is_sorted(&batch));
    Ok(SortedRun {
        keys: Arc::new(all),
        batch: dedup_sorted(batch),
    })
}

/// The rows of `batches` (each sorted by rank, time, seq) in merged order, as indices into
/// their concatenation; rows equal in all three keep the batches' order, as a stable sort of
/// the concatenation would.
fn merge_order(batches: &[RecordBatch]) -> UInt32Array {
    use std::cmp::Reverse;
    let cols: Vec<(&[u32], &[i64], &[u64])> = batches
        .iter()
        .map(|b| {
            (
                b.column(0).as_primitive::<UInt32Type>().values().as_ref(),
                b.column(1).as_primitive::<Int64Type>().values().as_ref(),
                b.column(2).as_primitive::<UInt64Type>().values().as_ref(),
            )
        })
        .collect();
    let mut offsets = Vec::with_capacity(cols.len());
    let mut total = 0usize;
    for c in &cols {
        offsets.push(total);
        total += c.0.len();
    }
    let head = |b: usize, i: usize| {
        let (r, t, s) = cols[b];
        Reverse((r[i], t[i], s[i], b, i))
    };
    let mut heap: std::collections::BinaryHeap<_> = (0..cols.len())
        .filter(|&b| !cols[b].0.is_empty())
        .map(|b| head(b, 0))
        .collect();
    let mut out = Vec::with_capacity(total);
    while let Some(Reverse((_, _, _, b, i))) = heap.pop() {
        out.push((offsets[b] + i) as u32);
        if i + 1 < cols[b].0.len() {
            heap.push(head(b, i + 1));
        }
    }
    UInt32Array::from(out)
}

/// Sorts by (rank, time, seq) and removes duplicate (rank, time) rows field by field.
fn sort_dedup(keys: Arc<Vec<Bytes>>, batch: RecordBatch) -> SortedRun {
    let sorted = if is_sorted(&batch) {
        batch
    } else {
        crate::write::memtable::sort_by_series_time_seq(&batch)
    };
    SortedRun {
        keys,
        batch: dedup_sorted(sorted),
    }
}

fn is_sorted(batch: &RecordBatch) -> bool {
    let r = batch.column(0).as_primitive::<UInt32Type>().values();
    let t = batch.column(1).as_primitive::<Int64Type>().values();
    let s = batch.column(2).as_primitive::<UInt64Type>().values();
    (1..r.len()).all(|i| (r[i - 1], t[i - 1], s[i - 1]) <= (r[i], t[i], s[i]))
}

/// Collapses runs of equal (rank, time) in a sorted batch: each field takes the value of the
/// row with the highest seq among those where it is not null.
fn dedup_sorted(batch: RecordBatch) -> RecordBatch {
    let r = batch.column(0).as_primitive::<UInt32Type>().values();
    let t = batch.column(1).as_primitive::<Int64Type>().values();
    let n = r.len();
    let has_dups = (1..n).any(|i| r[i - 1] == r[i] && t[i - 1] == t[i]);
    if !has_dups {
        return batch;
    }
    // Group boundaries: group g spans starts[g]..starts[g+1].
    let mut starts: Vec<usize> = (0..n)
        .filter(|&i| i == 0 || r[i - 1] != r[i] || t[i - 1] != t[i])
        .collect();
    starts.push(n);
    let last_rows: UInt32Array = starts.windows(2).map(|w| (w[1] - 1) as u32).collect();
    let mut cols: Vec<ArrayRef> = (0..3)
        .map(|i| take(batch.column(i), &last_rows, None).expect("in range"))
        .collect();
    for col in batch.columns().iter().skip(3) {
        let idx: UInt32Array = starts
            .windows(2)
            .map(|w| {
                (w[0]..w[1])
                    .rev()
                    .find(|&i| col.is_valid(i))
                    .unwrap_or(w[1] - 1) as u32
            })
            .collect();
        cols.push(take(col, &idx, None).expect("in range"));
    }
    RecordBatch::try_new(batch.schema(), cols).expect("same schema")
}

/// For each tag, its value for each of `keys` in order (null where a key lacks the tag),
/// decoding every key once without allocating per tag.
pub fn tag_columns<'a>(
    keys: impl IntoIterator<Item = &'a [u8]>,
    tags: &[String],
) -> Result<Vec<StringArray>> {
    if tags.is_empty() {
        return Ok(Vec::new());
    }
    let mut builders: Vec<StringBuilder> = tags.iter().map(|_| StringBuilder::new()).collect();
    let mut filled = vec![false; tags.len()];
    for key in keys {
        // A key's tags come in name order and `tags` in schema order: look from the last
        // match on, which finds the next one at once when the two orders agree.
        let mut at = 0;
        tempora_model::for_each_tag(key, |k, v| {
            let n = tags.len();
            if let Some(i) = (0..n).map(|d| (at + d) % n).find(|&i| tags[i] == k) {
                builders[i].append_value(v);
                filled[i] = true;
                at = i + 1;
            }
        })?;
        for (b, f) in builders.iter_mut().zip(&mut filled) {
            if !std::mem::take(f) {
                b.append_null();
            }
        }
    }
    Ok(builders.into_iter().map(|mut b| b.finish()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Float64Array, Int64Array, UInt64Array};
    use arrow::datatypes::Float64Type;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn fields() -> Vec<(String, FieldType)> {
        vec![("a".into(), FieldType::F64), ("b".into(), FieldType::F64)]
    }

    /// rows: (series id, time, seq, a, b)
    type TRow = (u32, i64, u64, Option<f64>, Option<f64>);

    fn batch(rows: &[TRow]) -> RecordBatch {
        let cols: Vec<ArrayRef> = vec![
            Arc::new(UInt32Array::from_iter_values(rows.iter().map(|r| r.0))),
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1))),
            Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.2))),
            Arc::new(Float64Array::from_iter(rows.iter().map(|r| r.3))),
            Arc::new(Float64Array::from_iter(rows.iter().map(|r| r.4))),
        ];
        RecordBatch::try_new(run_schema(&fields()), cols).unwrap()
    }

    fn key(id: u32) -> Bytes {
        // Reverse order to prove ranks follow keys, not ids.
        Bytes::from(format!("k{:03}", 999 - id))
    }

    type Model = BTreeMap<(Bytes, i64), (Option<f64>, Option<f64>)>;

    fn model(rows: &[TRow]) -> Model {
        let mut sorted = rows.to_vec();
        sorted.sort_by_key(|r| r.2);
        let mut m = Model::new();
        for r in sorted {
            let e = m.entry((key(r.0), r.1)).or_default();
            if r.3.is_some() {
                e.0 = r.3;
            }
            if r.4.is_some() {
                e.1 = r.4;
            }
        }
        m
    }

    fn flatten(run: &SortedRun) -> Model {
        let a = run.batch.column(3).as_primitive::<Float64Type>();
        let b = run.batch.column(4).as_primitive::<Float64Type>();
        let get = |c: &arrow::array::Float64Array, i: usize| c.is_valid(i).then(|| c.value(i));
        (0..run.num_rows())
            .map(|i| {
                let k = run.keys[run.ranks()[i] as usize].clone();
                ((k, run.times()[i]), (get(a, i), get(b, i)))
            })
            .collect()
    }

    #[test]
    fn field_by_field_last_write_wins() {
        let rows = [
            (1, 10, 1, Some(1.0), Some(1.0)),
            (1, 10, 2, Some(2.0), None),
            (1, 10, 3, None, None),
            (2, 10, 4, None, Some(9.0)),
        ];
        let run = SortedRun::from_series_batch(&batch(&rows), &fields(), key).unwrap();
        assert_eq!(run.num_rows(), 2);
        assert_eq!(flatten(&run), model(&rows));
    }

    #[test]
    fn same_point_twice_in_one_write_keeps_the_later_row() {
        // One write (one seq) naming the same point twice: the later row wins.
        let rows: Vec<TRow> = (0..50)
            .map(|i| (1, 10, 7, Some(i as f64), None))
            .chain([(2, 10, 7, None, Some(1.0))])
            .collect();
        let run = SortedRun::from_series_batch(&batch(&rows), &fields(), key).unwrap();
        let got = flatten(&run);
        assert_eq!(got[&(key(1), 10)], (Some(49.0), None));
    }

    #[test]
    fn last_per_key_keeps_each_keys_newest_row() {
        for (name, rows, want) in [
            ("empty", vec![], vec![]),
            ("one row", vec![(1, 5, 1, Some(1.0), None)], vec![(1, 5)]),
            (
                "several keys, out of order",
                vec![
                    (2, 9, 1, Some(1.0), None),
                    (1, 3, 2, Some(2.0), None),
                    (2, 4, 3, None, Some(3.0)),
                    (1, 8, 4, None, None),
                    (3, 1, 5, Some(5.0), None),
                ],
                // key() reverses id order: 3, 2, 1.
                vec![(3, 1), (2, 9), (1, 8)],
            ),
            (
                "duplicate newest point merged field by field first",
                vec![(1, 7, 1, Some(1.0), Some(1.0)), (1, 7, 2, None, Some(2.0))],
                vec![(1, 7)],
            ),
        ] {
            let run = SortedRun::from_series_batch(&batch(&rows), &fields(), key).unwrap();
            let last = run.last_per_key();
            let got: Vec<(Bytes, i64)> = (0..last.num_rows())
                .map(|i| (last.keys[last.ranks()[i] as usize].clone(), last.times()[i]))
                .collect();
            let want: Vec<(Bytes, i64)> = want.into_iter().map(|(id, t)| (key(id), t)).collect();
            assert_eq!(got, want, "{name}");
            assert_eq!(last.keys, run.keys, "{name}: same keys");
            let full = flatten(&run);
            for (k, v) in flatten(&last) {
                assert_eq!(full[&k], v, "{name}: the row's fields are the run's");
            }
        }
    }

    /// Rows of up to three writes: (series, time, a, b), a few series and times so that
    /// points repeat within and across writes.
    type Part = Vec<(u32, i64, Option<f64>, Option<f64>)>;

    fn parts() -> impl Strategy<Value = Vec<Part>> {
        let row = (
            0u32..4,
            0i64..6,
            proptest::option::of(0.0f64..9.0),
            proptest::option::of(0.0f64..9.0),
        );
        proptest::collection::vec(proptest::collection::vec(row, 0..12), 1..4)
    }

    /// Each part as a run, its rows numbered by one write sequence across parts; also every
    /// row so numbered.
    fn numbered_runs(parts: Vec<Part>) -> (Vec<SortedRun>, Vec<TRow>) {
        let mut seq = 0u64;
        let (mut runs, mut all) = (Vec::new(), Vec::new());
        for p in parts {
            let rows: Vec<TRow> = p
                .into_iter()
                .map(|(s, t, a, b)| {
                    seq += 1;
                    (s, t, seq, a, b)
                })
                .collect();
            runs.push(SortedRun::from_series_batch(&batch(&rows), &fields(), key).unwrap());
            all.extend(rows);
        }
        (runs, all)
    }

    proptest! {
        #[test]
        fn merge_matches_model(parts in parts()) {
            let (runs, all) = numbered_runs(parts);
            let merged = merge_runs(&runs, &fields()).unwrap();
            prop_assert_eq!(flatten(&merged), model(&all));
            prop_assert!(is_sorted(&merged.batch));
        }

        /// A part already sorted by (series id, time, seq), as a frozen part is read, makes
        /// the same run as the part in arrival order (its blocks put in key order, no sort).
        #[test]
        fn a_part_sorted_by_id_makes_the_same_run(parts in parts()) {
            let (_, all) = numbered_runs(parts);
            let arrival = batch(&all);
            let by_id = crate::write::memtable::sort_by_series_time_seq(&arrival);
            prop_assert!(is_sorted(&by_id));
            let a = SortedRun::from_series_batch(&arrival, &fields(), key).unwrap();
            let b = SortedRun::from_series_batch(&by_id, &fields(), key).unwrap();
            prop_assert_eq!(&b.keys, &a.keys);
            prop_assert_eq!(&b.batch, &a.batch);
            prop_assert_eq!(flatten(&b), model(&all));
        }

        /// What a fill from each file's newest rows relies on: the newest row of each key of
        /// a merge equals the newest row of each key of the merge of each run's newest rows.
        #[test]
        fn newest_rows_of_parts_merge_to_the_newest_rows_of_the_whole(parts in parts()) {
            let (runs, _) = numbered_runs(parts);
            let whole = merge_runs(&runs, &fields()).unwrap().last_per_key();
            let lasts: Vec<SortedRun> = runs.iter().map(SortedRun::last_per_key).collect();
            let from_parts = merge_runs(&lasts, &fields()).unwrap().last_per_key();
            prop_assert_eq!(flatten(&from_parts), flatten(&whole));
        }
    }
}
