use std::collections::BTreeMap;

use arrow::array::{Float64Array, Int64Array, UInt32Array, UInt64Array};
use proptest::prelude::*;

use super::*;
use crate::read::run::run_schema;

/// (key, time, float, int)
type Row = (u8, i64, Option<f64>, Option<i64>);

fn fields() -> Vec<(String, FieldType)> {
    vec![
        ("f".into(), FieldType::F64),
        ("s".into(), FieldType::Str),
        ("i".into(), FieldType::I64),
    ]
}

/// A run of distinct points (sorted, one row per (key, time)).
fn run_of(rows: &[Row]) -> SortedRun {
    let mut rows = rows.to_vec();
    rows.sort_by_key(|r| (r.0, r.1));
    rows.dedup_by_key(|r| (r.0, r.1));
    let mut keys: Vec<Bytes> = rows.iter().map(|r| Bytes::from(vec![r.0])).collect();
    keys.dedup();
    let rank = |k: u8| keys.iter().position(|x| x[0] == k).unwrap() as u32;
    let batch = RecordBatch::try_new(
        run_schema(&fields()),
        vec![
            Arc::new(UInt32Array::from_iter_values(
                rows.iter().map(|r| rank(r.0)),
            )),
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.1))),
            Arc::new(UInt64Array::from_iter_values(rows.iter().map(|_| 1))),
            Arc::new(Float64Array::from_iter(rows.iter().map(|r| r.2))),
            Arc::new(arrow::array::StringArray::from_iter(
                rows.iter().map(|_| None::<&str>),
            )),
            Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.3))),
        ],
    )
    .unwrap();
    SortedRun {
        keys: Arc::new(keys),
        batch,
    }
}

/// (time, float, int)
type Point = (i64, Option<f64>, Option<i64>);

/// (key, bucket) → (first, last, rows, f stats, i stats), each stats (count, sum, min, max,
/// first, first_time, last, last_time) printed as text.
type Model = BTreeMap<(u8, i64), (i64, i64, u64, String, String)>;

fn model(rows: &[Row], res: i64) -> Model {
    let run = run_of(rows);
    let mut by: BTreeMap<(u8, i64), Vec<Point>> = BTreeMap::new();
    for i in 0..run.num_rows() {
        let k = run.keys[run.ranks()[i] as usize][0];
        let t = run.times()[i];
        let f = run.batch.column(3).as_primitive::<Float64Type>();
        let n = run.batch.column(5).as_primitive::<Int64Type>();
        by.entry((k, bucket_of(t, res))).or_default().push((
            t,
            f.is_valid(i).then(|| f.value(i)),
            n.is_valid(i).then(|| n.value(i)),
        ));
    }
    by.into_iter()
        .map(|(k, v)| {
            let fs: Vec<(i64, f64)> = v.iter().filter_map(|r| r.1.map(|x| (r.0, x))).collect();
            let is: Vec<(i64, i64)> = v.iter().filter_map(|r| r.2.map(|x| (r.0, x))).collect();
            let f = match fs.is_empty() {
                true => "0".into(),
                false => format!(
                    "{} {} {} {} ({}, {}) ({}, {})",
                    fs.len(),
                    fs.iter().map(|x| x.1).sum::<f64>(),
                    fs.iter().map(|x| x.1).min_by(f64::total_cmp).unwrap(),
                    fs.iter().map(|x| x.1).max_by(f64::total_cmp).unwrap(),
                    fs[0].0,
                    fs[0].1,
                    fs[fs.len() - 1].0,
                    fs[fs.len() - 1].1
                ),
            };
            let i = match is.is_empty() {
                true => "0".into(),
                false => format!(
                    "{} {} {} {} ({}, {}) ({}, {})",
                    is.len(),
                    is.iter().fold(0i64, |a, x| a.wrapping_add(x.1)),
                    is.iter().map(|x| x.1).min().unwrap(),
                    is.iter().map(|x| x.1).max().unwrap(),
                    is[0].0,
                    is[0].1,
                    is[is.len() - 1].0,
                    is[is.len() - 1].1
                ),
            };
            let (first, last) = (v.first().unwrap().0, v.last().unwrap().0);
            (k, (first, last, v.len() as u64, f, i))
        })
        .collect()
}

fn flatten(p: &PartialRun) -> Model {
    let text = |j: usize, i: usize| -> String {
        let count = p.stat(j, 0).as_primitive::<UInt64Type>().value(i);
        if count == 0 {
            return "0".into();
        }
        let v = |s: usize| -> String {
            let c = p.stat(j, s);
            match c.data_type() {
                DataType::Float64 => format!("{}", c.as_primitive::<Float64Type>().value(i)),
                _ => format!("{}", c.as_primitive::<Int64Type>().value(i)),
            }
        };
        let t = |s: usize| p.stat(j, s).as_primitive::<Int64Type>().value(i);
        format!(
            "{} {} {} {} ({}, {}) ({}, {})",
            count,
            v(1),
            v(2),
            v(3),
            t(5),
            v(4),
            t(7),
            v(6)
        )
    };
    (0..p.num_rows())
        .map(|i| {
            let k = p.keys[p.ranks()[i] as usize][0];
            (
                (k, p.buckets()[i]),
                (
                    p.first_times()[i],
                    p.last_times()[i],
                    p.rows()[i],
                    text(0, i),
                    text(1, i),
                ),
            )
        })
        .collect()
}

#[test]
fn named_cases() {
    let rows: Vec<Row> = vec![
        (1, 0, Some(1.5), Some(3)),
        (1, 5, None, Some(-4)),
        (1, 9, Some(f64::NAN), None),
        (1, 10, Some(2.0), None),
        (2, -1, None, None),
        (2, 3, Some(-0.0), Some(i64::MAX)),
        (2, 4, Some(0.0), Some(1)),
    ];
    let p = from_run(&run_of(&rows), &fields(), 10).unwrap();
    let got = flatten(&p);
    assert_eq!(got, model(&rows, 10), "the model");
    let names: Vec<String> = p
        .batch
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    assert_eq!(
        names[..6],
        [
            "__rank",
            "time",
            "__first_time",
            "__last_time",
            "__rows",
            "f_count"
        ]
    );
    assert!(
        names.iter().all(|n| !n.starts_with("s_")),
        "strings are not rolled up"
    );
    // (1, 0): NaN is the max, the NULL float is not counted, the int sum skips NULLs.
    assert_eq!(got[&(1, 0)].3, "2 NaN 1.5 NaN (0, 1.5) (9, NaN)");
    assert_eq!(got[&(1, 0)].4, "2 -1 -4 3 (0, 3) (5, -4)");
    // A row with every field NULL still counts as a row; the bucket before 0 is -10.
    assert_eq!(got[&(2, -10)], (-1, -1, 1, "0".into(), "0".into()));
    // -0.0 orders below 0.0; the int sum wraps.
    assert_eq!(got[&(2, 0)].3, "2 0 -0 0 (3, -0) (4, 0)");
    assert_eq!(
        got[&(2, 0)].4,
        format!("2 {} 1 {} (3, {}) (4, 1)", i64::MIN, i64::MAX, i64::MAX)
    );
}

#[test]
fn overlapping_parts_are_reported_not_combined() {
    let a = from_run(
        &run_of(&[(1, 0, Some(1.0), None), (1, 5, Some(2.0), None)]),
        &fields(),
        10,
    )
    .unwrap();
    let b = from_run(
        &run_of(&[(1, 3, Some(9.0), None), (2, 1, Some(1.0), None)]),
        &fields(),
        10,
    )
    .unwrap();
    let m = merge(vec![a, b], &fields()).unwrap();
    assert_eq!(m.overlapping, vec![0]);
    assert!(
        m.run.is_none(),
        "the whole bucket is left out, for every series"
    );
}

fn rows_strategy() -> impl Strategy<Value = Vec<Row>> {
    prop::collection::vec(
        (
            0u8..4,
            -50i64..200,
            prop::option::of(-100i32..100),
            prop::option::of(-1000i64..1000),
        )
            .prop_map(|(k, t, f, i)| (k, t, f.map(|x| x as f64 / 4.0), i)),
        0..80,
    )
}

proptest! {
    #[test]
    fn from_run_matches_the_model(rows in rows_strategy(), res in 1i64..40) {
        let p = from_run(&run_of(&rows), &fields(), res).unwrap();
        prop_assert_eq!(flatten(&p), model(&rows, res));
    }

    #[test]
    fn coarsening_equals_computing_at_the_coarser_resolution(rows in rows_strategy(), res in 1i64..10, k in 1i64..6) {
        let fine = from_run(&run_of(&rows), &fields(), res).unwrap();
        let coarse = coarsen(&fine, &fields(), res * k).unwrap();
        prop_assert_eq!(flatten(&coarse), model(&rows, res * k));
    }

    /// Parts cut at a time (as flushes of in-order writes are) merge to the whole.
    #[test]
    fn disjoint_parts_merge_to_the_whole(rows in rows_strategy(), cut in -50i64..200, res in 1i64..40) {
        let (a, b): (Vec<Row>, Vec<Row>) = rows.iter().partition(|r| r.1 < cut);
        let parts = vec![
            from_run(&run_of(&b), &fields(), res).unwrap(),
            from_run(&run_of(&a), &fields(), res).unwrap(),
        ];
        let m = merge(parts, &fields()).unwrap();
        prop_assert!(m.overlapping.is_empty());
        let got = m.run.map(|r| flatten(&r)).unwrap_or_default();
        prop_assert_eq!(got, model(&rows, res));
    }
}

proptest! {
    /// A run cut between series (as compaction's key slices are) concatenates to the whole.
    #[test]
    fn parts_in_key_order_concatenate_to_the_whole(rows in rows_strategy(), cut in 0u8..4, res in 1i64..40) {
        let (a, b): (Vec<Row>, Vec<Row>) = rows.iter().partition(|r| r.0 < cut);
        let parts = vec![
            from_run(&run_of(&a), &fields(), res).unwrap(),
            from_run(&run_of(&b), &fields(), res).unwrap(),
        ];
        let got = concat(parts).unwrap().map(|r| flatten(&r)).unwrap_or_default();
        prop_assert_eq!(got, model(&rows, res));
    }
}
