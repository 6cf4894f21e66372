//! Last-value cache: the newest point of every series of a region, kept on write.
//!
//! Columnar by field ordinal, indexed by series id, so a series costs 8 bytes per field plus
//! its timestamp. Rule: a point newer than the cached one replaces it; a point at the same
//! time merges field by field (the later write wins); an older point is ignored.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray, UInt32Array,
    UInt64Array,
};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{DataType, Field, Schema};
use roaring::RoaringBitmap;
use tempora_model::{FieldType, FieldValue, SeriesId, TIME_COLUMN};

use crate::read::run::arrow_type;
use crate::write::memtable::SERIES_COLUMN;

enum Column {
    /// Raw 8-byte values (f64 bits, i64, u64, bool as 0/1).
    Num {
        ty: FieldType,
        values: Vec<u64>,
        valid: Vec<bool>,
    },
    Str(Vec<Option<Box<str>>>),
}

impl Column {
    fn new(ty: FieldType, n: usize) -> Self {
        match ty {
            FieldType::Str => Column::Str(vec![None; n]),
            _ => Column::Num {
                ty,
                values: vec![0; n],
                valid: vec![false; n],
            },
        }
    }
    fn grow(&mut self, n: usize) {
        match self {
            Column::Num { values, valid, .. } => {
                values.resize(n, 0);
                valid.resize(n, false);
            }
            Column::Str(v) => v.resize(n, None),
        }
    }
    fn clear(&mut self, i: usize) {
        match self {
            Column::Num { valid, .. } => valid[i] = false,
            Column::Str(v) => v[i] = None,
        }
    }
    fn set(&mut self, i: usize, v: &FieldValue) {
        match (self, v) {
            (Column::Str(c), FieldValue::Str(s)) => c[i] = Some(s.as_str().into()),
            (Column::Num { values, valid, .. }, v) => {
                values[i] = match v {
                    FieldValue::F64(x) => x.to_bits(),
                    FieldValue::I64(x) => *x as u64,
                    FieldValue::U64(x) => *x,
                    FieldValue::Bool(x) => *x as u64,
                    FieldValue::Str(_) => unreachable!("string into numeric column"),
                };
                valid[i] = true;
            }
            (Column::Str(_), _) => unreachable!("numeric into string column"),
        }
    }
    fn array(&self, ids: &[u32]) -> ArrayRef {
        match self {
            Column::Str(c) => Arc::new(StringArray::from_iter(
                ids.iter().map(|&i| c[i as usize].as_deref()),
            )),
            Column::Num { ty, values, valid } => {
                let nulls = NullBuffer::from_iter(ids.iter().map(|&i| valid[i as usize]));
                let raw = ids.iter().map(|&i| values[i as usize]);
                let arr: ArrayRef = match ty {
                    FieldType::F64 => Arc::new(Float64Array::new(
                        raw.map(f64::from_bits).collect(),
                        Some(nulls),
                    )),
                    FieldType::I64 => Arc::new(Int64Array::new(
                        raw.map(|x| x as i64).collect(),
                        Some(nulls),
                    )),
                    FieldType::U64 => Arc::new(UInt64Array::new(raw.collect(), Some(nulls))),
                    FieldType::Bool => Arc::new(BooleanArray::new(
                        raw.map(|x| x != 0).collect(),
                        Some(nulls),
                    )),
                    FieldType::Str => unreachable!(),
                };
                arr
            }
        }
    }
}

/// The last values of one region's series.
#[derive(Default)]
pub struct LastValues {
    times: Vec<i64>,
    columns: Vec<Option<Column>>,
}

const NONE: i64 = i64::MIN;

impl LastValues {
    /// Records a point. `fields` pairs table field ordinals with values.
    pub fn update<'a>(
        &mut self,
        series: SeriesId,
        time: i64,
        fields: impl Iterator<Item = (usize, FieldType, &'a FieldValue)>,
    ) {
        let i = series.0 as usize;
        if self.times.len() <= i {
            let n = (i + 1).max(self.times.len() * 5 / 4);
            self.times.resize(n, NONE);
            for c in self.columns.iter_mut().flatten() {
                c.grow(n);
            }
        }
        let current = self.times[i];
        if time < current {
            return;
        }
        if time > current {
            self.times[i] = time;
            for c in self.columns.iter_mut().flatten() {
                c.clear(i);
            }
        }
        let n = self.times.len();
        for (ord, ty, v) in fields {
            if self.columns.len() <= ord {
                self.columns.resize_with(ord + 1, || None);
            }
            self.columns[ord]
                .get_or_insert_with(|| Column::new(ty, n))
                .set(i, v);
        }
    }

    /// Series slots: one more than the highest series id seen, at least the cached series.
    pub fn slots(&self) -> usize {
        self.times.len()
    }

    /// Time of the cached point of a series.
    pub fn time(&self, series: SeriesId) -> Option<i64> {
        self.times
            .get(series.0 as usize)
            .copied()
            .filter(|&t| t != NONE)
    }

    /// The cached points of the selected series (all when `series` is `None`) as a batch of
    /// `__series`, `time`, then the requested fields by (ordinal, name, type).
    pub fn snapshot(
        &self,
        series: Option<&RoaringBitmap>,
        fields: &[(usize, String, FieldType)],
    ) -> RecordBatch {
        let ids: Vec<u32> = match series {
            Some(b) => b
                .iter()
                .filter(|&i| self.time(SeriesId(i)).is_some())
                .collect(),
            None => (0..self.times.len() as u32)
                .filter(|&i| self.time(SeriesId(i)).is_some())
                .collect(),
        };
        let mut schema = vec![
            Field::new(SERIES_COLUMN, DataType::UInt32, false),
            Field::new(TIME_COLUMN, DataType::Int64, false),
        ];
        let mut cols: Vec<ArrayRef> = vec![
            Arc::new(UInt32Array::from(ids.clone())),
            Arc::new(Int64Array::from_iter_values(
                ids.iter().map(|&i| self.times[i as usize]),
            )),
        ];
        for (ord, name, ty) in fields {
            schema.push(Field::new(name, arrow_type(*ty), true));
            cols.push(match self.columns.get(*ord).and_then(|c| c.as_ref()) {
                Some(c) => c.array(&ids),
                None => arrow::array::new_null_array(&arrow_type(*ty), ids.len()),
            });
        }
        RecordBatch::try_new(Arc::new(Schema::new(schema)), cols).expect("equal lengths")
    }
}

/// The non-null field values of row `i` of a run batch (fields from column 3 on), paired with
/// the ordinals and types of `field_map`.
pub fn row_values(
    batch: &RecordBatch,
    i: usize,
    field_map: &[(usize, FieldType)],
) -> Vec<(usize, FieldType, FieldValue)> {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{Float64Type, Int64Type, UInt64Type};
    let mut out = Vec::new();
    for (j, &(ord, ty)) in field_map.iter().enumerate() {
        let col = batch.column(3 + j);
        if col.is_null(i) {
            continue;
        }
        let v = match ty {
            FieldType::F64 => FieldValue::F64(col.as_primitive::<Float64Type>().value(i)),
            FieldType::I64 => FieldValue::I64(col.as_primitive::<Int64Type>().value(i)),
            FieldType::U64 => FieldValue::U64(col.as_primitive::<UInt64Type>().value(i)),
            FieldType::Bool => FieldValue::Bool(col.as_boolean().value(i)),
            FieldType::Str => FieldValue::Str(col.as_string::<i32>().value(i).to_string()),
        };
        out.push((ord, ty, v));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::Float64Type;

    fn f(ord: usize, x: f64) -> (usize, FieldType, FieldValue) {
        (ord, FieldType::F64, FieldValue::F64(x))
    }

    #[test]
    fn newer_replaces_same_merges_older_ignored() {
        // (name, writes as (time, [(ord, value)]), expected time, expected [a, b])
        type W = (i64, Vec<(usize, FieldType, FieldValue)>);
        type Case = (&'static str, Vec<W>, i64, [Option<f64>; 2]);
        let cases: Vec<Case> = vec![
            ("single", vec![(10, vec![f(0, 1.0)])], 10, [Some(1.0), None]),
            (
                "newer replaces",
                vec![(10, vec![f(0, 1.0), f(1, 2.0)]), (20, vec![f(1, 3.0)])],
                20,
                [None, Some(3.0)],
            ),
            (
                "same time merges",
                vec![(10, vec![f(0, 1.0)]), (10, vec![f(1, 2.0)])],
                10,
                [Some(1.0), Some(2.0)],
            ),
            (
                "same time later wins",
                vec![(10, vec![f(0, 1.0)]), (10, vec![f(0, 5.0)])],
                10,
                [Some(5.0), None],
            ),
            (
                "older ignored",
                vec![(20, vec![f(0, 1.0)]), (10, vec![f(0, 9.0), f(1, 9.0)])],
                20,
                [Some(1.0), None],
            ),
            (
                "negative time",
                vec![(-5, vec![f(0, 1.0)])],
                -5,
                [Some(1.0), None],
            ),
        ];
        let names = [
            (0, "a".to_string(), FieldType::F64),
            (1, "b".to_string(), FieldType::F64),
        ];
        for (name, writes, want_t, want) in cases {
            let mut lv = LastValues::default();
            for (t, fs) in &writes {
                lv.update(SeriesId(3), *t, fs.iter().map(|(o, ty, v)| (*o, *ty, v)));
            }
            let b = lv.snapshot(None, &names);
            assert_eq!(b.num_rows(), 1, "{name}");
            assert_eq!(
                b.column(1)
                    .as_primitive::<arrow::datatypes::Int64Type>()
                    .value(0),
                want_t,
                "{name}"
            );
            for (j, w) in want.iter().enumerate() {
                let c = b.column(2 + j).as_primitive::<Float64Type>();
                let got = c.is_valid(0).then(|| c.value(0));
                assert_eq!(got, *w, "{name} field {j}");
            }
        }
    }

    #[test]
    fn snapshot_filters_series() {
        let mut lv = LastValues::default();
        let v = FieldValue::I64(1);
        for s in 0..5 {
            lv.update(SeriesId(s), 1, [(0, FieldType::I64, &v)].into_iter());
        }
        let mut want = RoaringBitmap::new();
        want.insert(1);
        want.insert(3);
        want.insert(99);
        let b = lv.snapshot(Some(&want), &[(0, "v".into(), FieldType::I64)]);
        let ids: Vec<u32> = b
            .column(0)
            .as_primitive::<arrow::datatypes::UInt32Type>()
            .values()
            .to_vec();
        assert_eq!(ids, vec![1, 3]);
    }
}
