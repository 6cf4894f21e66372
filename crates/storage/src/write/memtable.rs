//! Region memtable: series-once, columnar, active → frozen.
//!
//! Tags are not stored here: a row carries only its region-local [`SeriesId`]; the key (and so
//! the tags) lives once in the region's series index. Values go into columnar Arrow builders
//! (the active buffer). Freezing turns the active buffer into an immutable [`FrozenPart`] (rows
//! in arrival order) that readers and flushes share through an `Arc`; they sort it by
//! (series, time, seq) off the worker thread, stably, so the later of two rows of one write
//! naming the same point wins.
//!
//! Invariants:
//! - Field columns are indexed by the table's field ordinal and grow lazily: a column that has
//!   no value for a row is padded with nulls only when needed, so sparse tables stay small.
//! - `bytes()` is an upper estimate of the heap memory the buffer holds; budgets use it.

use std::sync::{Arc, OnceLock};

use arrow::array::{
    ArrayBuilder, ArrayRef, BooleanBuilder, Float64Builder, Int64Builder, RecordBatch,
    StringBuilder, UInt32Array, UInt64Builder,
};
use arrow::compute::take_record_batch;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use tempora_model::{FieldType, FieldValue, SeqNo, SeriesId};

use crate::read::run::arrow_type;

/// Column name of the region-local series id in frozen parts.
pub const SERIES_COLUMN: &str = "__series";

enum ColumnBuilder {
    F64(Float64Builder),
    I64(Int64Builder),
    U64(UInt64Builder),
    Bool(BooleanBuilder),
    Str(StringBuilder),
}

impl ColumnBuilder {
    fn new(ty: FieldType) -> Self {
        match ty {
            FieldType::F64 => Self::F64(Float64Builder::new()),
            FieldType::I64 => Self::I64(Int64Builder::new()),
            FieldType::U64 => Self::U64(UInt64Builder::new()),
            FieldType::Bool => Self::Bool(BooleanBuilder::new()),
            FieldType::Str => Self::Str(StringBuilder::new()),
        }
    }
    fn len(&self) -> usize {
        match self {
            Self::F64(b) => b.len(),
            Self::I64(b) => b.len(),
            Self::U64(b) => b.len(),
            Self::Bool(b) => b.len(),
            Self::Str(b) => b.len(),
        }
    }
    fn pad_to(&mut self, n: usize) {
        let missing = n - self.len();
        if missing == 0 {
            return;
        }
        match self {
            Self::F64(b) => b.append_nulls(missing),
            Self::I64(b) => b.append_nulls(missing),
            Self::U64(b) => b.append_nulls(missing),
            Self::Bool(b) => b.append_nulls(missing),
            Self::Str(b) => (0..missing).for_each(|_| b.append_null()),
        }
    }
    /// Appends a value; returns false when its type does not match the column.
    fn push(&mut self, v: &FieldValue) -> bool {
        match (self, v) {
            (Self::F64(b), FieldValue::F64(x)) => b.append_value(*x),
            (Self::I64(b), FieldValue::I64(x)) => b.append_value(*x),
            (Self::U64(b), FieldValue::U64(x)) => b.append_value(*x),
            (Self::Bool(b), FieldValue::Bool(x)) => b.append_value(*x),
            (Self::Str(b), FieldValue::Str(x)) => b.append_value(x),
            _ => return false,
        }
        true
    }
    fn finish(&mut self) -> ArrayRef {
        match self {
            Self::F64(b) => Arc::new(b.finish()),
            Self::I64(b) => Arc::new(b.finish()),
            Self::U64(b) => Arc::new(b.finish()),
            Self::Bool(b) => Arc::new(b.finish()),
            Self::Str(b) => Arc::new(b.finish()),
        }
    }
}

/// The mutable, append-only buffer of one region.
#[derive(Default)]
pub struct ActiveBuffer {
    series: Vec<u32>,
    times: Vec<i64>,
    seqs: Vec<u64>,
    /// By table field ordinal: the column's type and builder, created on first value.
    columns: Vec<Option<(FieldType, ColumnBuilder)>>,
    bytes: usize,
    max_seq: SeqNo,
}

impl ActiveBuffer {
    pub fn len(&self) -> usize {
        self.times.len()
    }
    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Appends one row. `fields` pairs a table field ordinal with its value; the caller has
    /// checked types against the schema, so a mismatch here is a bug.
    pub fn push<'a>(
        &mut self,
        series: SeriesId,
        time: i64,
        seq: SeqNo,
        fields: impl Iterator<Item = (usize, FieldType, &'a FieldValue)>,
    ) {
        let row = self.times.len();
        self.series.push(series.0);
        self.times.push(time);
        self.seqs.push(seq.0);
        self.max_seq = self.max_seq.max(seq);
        self.bytes += 20;
        for (ord, ty, v) in fields {
            if self.columns.len() <= ord {
                self.columns.resize_with(ord + 1, || None);
            }
            let (cty, col) = self.columns[ord].get_or_insert_with(|| (ty, ColumnBuilder::new(ty)));
            assert_eq!(*cty, ty, "field type checked by the schema");
            col.pad_to(row);
            let ok = col.push(v);
            assert!(ok, "field value type checked by the schema");
            self.bytes += match v {
                FieldValue::Str(s) => s.len() + 4,
                _ => 8,
            };
        }
    }

    /// Moves the buffer into an immutable part (rows in arrival order) and leaves it empty.
    /// Sorting is left to readers and the flusher, off the worker thread.
    /// `field_names` gives the table's field names by ordinal.
    pub fn freeze(&mut self, field_names: &[String]) -> Option<FrozenPart> {
        if self.is_empty() {
            return None;
        }
        let n = self.len();
        let mut fields = vec![
            Field::new(SERIES_COLUMN, DataType::UInt32, false),
            Field::new(tempora_model::TIME_COLUMN, DataType::Int64, false),
            Field::new(tempora_model::SEQ_COLUMN, DataType::UInt64, false),
        ];
        let mut arrays: Vec<ArrayRef> = vec![
            Arc::new(UInt32Array::from(std::mem::take(&mut self.series))),
            Arc::new(arrow::array::Int64Array::from(std::mem::take(
                &mut self.times,
            ))),
            Arc::new(arrow::array::UInt64Array::from(std::mem::take(
                &mut self.seqs,
            ))),
        ];
        let mut ordinals = Vec::new();
        for (ord, col) in self.columns.iter_mut().enumerate() {
            if let Some((ty, b)) = col {
                b.pad_to(n);
                fields.push(Field::new(&field_names[ord], arrow_type(*ty), true));
                arrays.push(b.finish());
                ordinals.push(ord);
            }
        }
        self.columns.clear();
        let bytes = std::mem::take(&mut self.bytes);
        let max_seq = std::mem::take(&mut self.max_seq);
        let schema: SchemaRef = Arc::new(Schema::new(fields));
        let batch = RecordBatch::try_new(schema, arrays).expect("columns have equal length");
        Some(FrozenPart::new(batch, bytes, max_seq))
    }
}

/// Sorts a batch by its first three columns (series or rank, time, seq). The sort is stable:
/// rows equal in all three (one write naming the same point twice) keep their order, so the
/// later one still wins when duplicates are merged.
pub fn sort_by_series_time_seq(batch: &RecordBatch) -> RecordBatch {
    take_record_batch(batch, &sort_order(batch)).expect("indices in range")
}

/// The order [`sort_by_series_time_seq`] puts the rows in.
fn sort_order(batch: &RecordBatch) -> UInt32Array {
    use arrow::array::AsArray;
    use arrow::datatypes::{Int64Type, UInt32Type, UInt64Type};
    let s = batch.column(0).as_primitive::<UInt32Type>().values();
    let t = batch.column(1).as_primitive::<Int64Type>().values();
    let q = batch.column(2).as_primitive::<UInt64Type>().values();
    let mut idx: Vec<u32> = (0..batch.num_rows() as u32).collect();
    // A stable sort on plain integers: equal keys keep arrival order.
    idx.sort_by_key(|&i| (s[i as usize], t[i as usize], q[i as usize]));
    UInt32Array::from(idx)
}

/// An immutable part of a region's memtable, rows in arrival order.
#[derive(Debug)]
pub struct FrozenPart {
    /// Columns: `__series`, `time`, `__seq`, then the fields present, by name.
    pub batch: RecordBatch,
    pub bytes: usize,
    pub max_seq: SeqNo,
    /// The rows' (series, time, seq) order, sorted once by the first reader that needs it
    /// and shared by the later ones and the flush (a part never changes). Four bytes a row,
    /// not counted in `bytes`: bounded by the memtable's own limit.
    order: OnceLock<UInt32Array>,
}

impl FrozenPart {
    pub fn new(batch: RecordBatch, bytes: usize, max_seq: SeqNo) -> Self {
        Self {
            batch,
            bytes,
            max_seq,
            order: OnceLock::new(),
        }
    }

    /// The part's rows sorted by (series, time, seq), stably (as
    /// [`sort_by_series_time_seq`] sorts them); the order is computed once.
    pub fn sorted(&self) -> RecordBatch {
        take_record_batch(&self.batch, self.order()).expect("indices in range")
    }

    /// The rows of the series `ids` selects (all: `None`) in the time range `[start, end)`,
    /// sorted as [`FrozenPart::sorted`], with the columns `__series`, `time`, `__seq` and
    /// those of `fields` the part has: a read copies only what it asked for. In the sorted
    /// order a series' rows are one block in time order, so each block costs two binary
    /// searches, not a look at every row.
    pub fn sorted_rows(
        &self,
        ids: Option<&roaring::RoaringBitmap>,
        time: Option<(i64, i64)>,
        fields: &[&str],
    ) -> RecordBatch {
        use arrow::array::AsArray;
        use arrow::datatypes::{Int64Type, UInt32Type};
        let s = self.batch.column(0).as_primitive::<UInt32Type>().values();
        let t = self.batch.column(1).as_primitive::<Int64Type>().values();
        let order = self.order().values();
        let mut rows: Vec<u32> = Vec::new();
        let mut a = 0;
        while a < order.len() {
            let sid = s[order[a] as usize];
            let b = a + order[a..].partition_point(|&i| s[i as usize] == sid);
            if ids.is_none_or(|m| m.contains(sid)) {
                let block = &order[a..b];
                let (lo, hi) = match time {
                    None => (0, block.len()),
                    Some((start, end)) => (
                        block.partition_point(|&i| t[i as usize] < start),
                        block.partition_point(|&i| t[i as usize] < end),
                    ),
                };
                rows.extend_from_slice(&block[lo..hi.max(lo)]);
            }
            a = b;
        }
        let schema = self.batch.schema();
        let columns: Vec<usize> = (0..3)
            .chain(fields.iter().filter_map(|f| schema.index_of(f).ok()))
            .collect();
        let projected = self.batch.project(&columns).expect("columns exist");
        take_record_batch(&projected, &UInt32Array::from(rows)).expect("indices in range")
    }

    fn order(&self) -> &UInt32Array {
        self.order.get_or_init(|| sort_order(&self.batch))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{Float64Type, Int64Type, UInt32Type, UInt64Type};

    #[test]
    fn freeze_pads_sparse_columns_and_sorts_stably() {
        let mut b = ActiveBuffer::default();
        let names = vec!["a".to_string(), "b".to_string()];
        b.push(
            SeriesId(2),
            10,
            SeqNo(1),
            [(0, FieldType::F64, &FieldValue::F64(1.0))].into_iter(),
        );
        b.push(
            SeriesId(1),
            20,
            SeqNo(2),
            [(1, FieldType::I64, &FieldValue::I64(7))].into_iter(),
        );
        b.push(
            SeriesId(1),
            5,
            SeqNo(3),
            [(0, FieldType::F64, &FieldValue::F64(3.0))].into_iter(),
        );
        let part = b.freeze(&names).unwrap();
        assert!(b.is_empty() && b.bytes() == 0);
        let batch = &sort_by_series_time_seq(&part.batch);
        let series: Vec<u32> = batch
            .column(0)
            .as_primitive::<UInt32Type>()
            .values()
            .to_vec();
        let times: Vec<i64> = batch
            .column(1)
            .as_primitive::<Int64Type>()
            .values()
            .to_vec();
        let seqs: Vec<u64> = batch
            .column(2)
            .as_primitive::<UInt64Type>()
            .values()
            .to_vec();
        assert_eq!(series, vec![1, 1, 2]);
        assert_eq!(times, vec![5, 20, 10]);
        assert_eq!(seqs, vec![3, 2, 1]);
        let a = batch
            .column_by_name("a")
            .unwrap()
            .as_primitive::<Float64Type>();
        assert_eq!((a.value(0), a.is_null(1), a.value(2)), (3.0, true, 1.0));
        let bcol = batch
            .column_by_name("b")
            .unwrap()
            .as_primitive::<Int64Type>();
        assert_eq!(
            (bcol.is_null(0), bcol.value(1), bcol.is_null(2)),
            (true, 7, true)
        );
        assert_eq!(part.max_seq, SeqNo(3));
        // The part's own sorted form is the same, and a read takes only the rows it keeps
        // and the fields it names, still sorted.
        assert_eq!(&part.sorted(), batch);
        let ones = roaring::RoaringBitmap::from_iter([1u32]);
        let read = part.sorted_rows(Some(&ones), Some((0, 21)), &["b", "missing"]);
        let names: Vec<String> = read
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        assert_eq!(names, ["__series", "time", "__seq", "b"]);
        let times: Vec<i64> = read.column(1).as_primitive::<Int64Type>().values().to_vec();
        assert_eq!(times, vec![5, 20], "series 1 only, in time order");
        let late = part.sorted_rows(None, Some((6, 100)), &[]);
        let times: Vec<i64> = late.column(1).as_primitive::<Int64Type>().values().to_vec();
        assert_eq!(times, vec![20, 10], "every series, its rows in [6, 100)");
        assert_eq!(late.num_columns(), 3);
    }

    #[test]
    fn empty_buffer_freezes_to_none() {
        assert!(ActiveBuffer::default().freeze(&[]).is_none());
    }
}
