//! Data files: a [`SortedRun`] written as Parquet, and read back with pruning.
//!
//! File layout (one row group per `row_group_rows` rows, sorted by key then time):
//! `__primary_key` (dictionary-encoded binary: the memcomparable series key), one dictionary
//! `Utf8` column per tag (so other tools can read the tags without decoding keys), `time`
//! (timestamp ns UTC, delta-encoded, with statistics per row group and page), `__seq` (u64,
//! delta-encoded), then the fields (floats byte-stream-split, integers delta-encoded), all
//! compressed with zstd. DuckDB and pyarrow read these files as they are.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Int64Array, RecordBatch, UInt32Array};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Int64Type, SchemaRef, UInt32Type};
use bytes::Bytes;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use tempora_model::{FieldType, PRIMARY_KEY_COLUMN, SEQ_COLUMN, TIME_COLUMN};

use crate::error::{Result, StorageError};
use crate::files::float_codec;
use crate::files::row_select::{Segment, key_runs, per_row, segments, segments_to_selection};
use crate::read::decoded_cache::Derived;
use crate::read::run::{SortedRun, run_schema};
use crate::read::sst_cache::CachedSst;

/// What a writer needs to know beyond the rows.
#[derive(Debug, Clone)]
pub struct SstWriteOptions {
    pub row_group_rows: usize,
    pub zstd_level: i32,
}

/// Statistics of a written file, recorded in the manifest.
#[derive(Debug, Clone, PartialEq)]
pub struct SstStats {
    pub rows: u64,
    pub min_time: i64,
    pub max_time: i64,
    pub max_seq: u64,
    pub min_seq: u64,
    pub size: u64,
}

/// Which rows of a file a read wants.
#[derive(Debug, Clone, Default)]
pub struct SstFilter {
    /// Inclusive start and exclusive end of the time range.
    pub time: Option<(i64, i64)>,
    /// Sorted keys to keep; `None` keeps all.
    pub keys: Option<Arc<Vec<Bytes>>>,
    /// Field bounds to apply while reading (`crate::read::field_bound`). Only for a file that is a
    /// region's only source: a row a bound drops may be the newest version of a (series, time)
    /// another source also holds, and dropping it first would bring the older one back.
    pub bounds: Vec<crate::read::field_bound::FieldBound>,
}

/// Reads a data file back into a run over `fields` (fields the file lacks are null).
pub fn read_sst(
    path: &str,
    file: &CachedSst,
    fields: &[(String, FieldType)],
    filter: &SstFilter,
) -> Result<SortedRun> {
    let perr = |e| StorageError::Parquet {
        path: path.to_string(),
        source: e,
    };
    let (row_groups, wanted) = selection(file, fields, filter)?;
    let builder =
        ParquetRecordBatchReaderBuilder::new_with_metadata(file.data.clone(), file.meta.clone());
    let mask = ProjectionMask::roots(builder.parquet_schema(), wanted);
    let reader = builder
        .with_row_groups(row_groups)
        .with_projection(mask)
        .build()
        .map_err(perr)?;
    // Streams: each batch is converted (and filtered) before the next is decoded.
    to_run(
        reader.map(|b| Ok((b.map_err(StorageError::from)?, None))),
        fields,
        filter,
    )
}

/// [`read_sst`] through the decoded-column cache: the same rows, with the row groups' column
/// chunks taken from `cache` where they are and decoded (and kept) where they are not.
pub fn read_sst_cached(
    path: &str,
    file: &CachedSst,
    fields: &[(String, FieldType)],
    filter: &SstFilter,
    cache: &crate::read::decoded_cache::DecodedCache,
) -> Result<SortedRun> {
    let (row_groups, wanted) = selection(file, fields, filter)?;
    let batches = row_groups
        .into_iter()
        .map(|rg| cached_row_group(path, file, rg, &wanted, cache));
    to_run(batches, fields, filter)
}

/// Row group `rg`'s `wanted` columns with its key runs, from `cache` or decoded into it.
fn cached_row_group(
    path: &str,
    file: &CachedSst,
    rg: usize,
    wanted: &[usize],
    cache: &crate::read::decoded_cache::DecodedCache,
) -> Result<Decoded> {
    let b = cache.row_group(path, file, rg, wanted)?;
    let runs = cache.derived(path, rg, Derived::KeyRuns, || key_runs_of(&b));
    Ok((b, runs))
}

/// Decodes the row groups of `file` into `cache` as a read of all `fields` does (with each row
/// group's key runs) until `enough()`; returns how many it decoded (prewarming).
pub(crate) fn warm_sst_cached(
    path: &str,
    file: &CachedSst,
    fields: &[(String, FieldType)],
    cache: &crate::read::decoded_cache::DecodedCache,
    enough: &dyn Fn() -> bool,
) -> Result<usize> {
    let (row_groups, wanted) = selection(file, fields, &SstFilter::default())?;
    let mut decoded = 0;
    for rg in row_groups {
        if enough() {
            break;
        }
        cached_row_group(path, file, rg, &wanted, cache)?;
        decoded += 1;
    }
    Ok(decoded)
}

/// The row groups a read needs (time and key statistics may overlap the filter) and the root
/// columns it decodes: the key, time, seq and the fields asked for (not the tag columns, which
/// exist for other tools, nor other fields), ascending.
fn selection(
    file: &CachedSst,
    fields: &[(String, FieldType)],
    filter: &SstFilter,
) -> Result<(Vec<usize>, Vec<usize>)> {
    let file_schema = file.meta.schema();
    // Both columns must exist (as the statistics test required before the index).
    file_schema.index_of(TIME_COLUMN)?;
    file_schema.index_of(PRIMARY_KEY_COLUMN)?;
    let row_groups = file
        .rg_index
        .select(filter.keys.as_ref().map(|k| k.as_slice()), filter.time);
    let wanted: Vec<usize> = file_schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| {
            let n = f.name().as_str();
            n == PRIMARY_KEY_COLUMN
                || n == TIME_COLUMN
                || n == SEQ_COLUMN
                || fields.iter().any(|(name, _)| name == n)
        })
        .map(|(i, _)| i)
        .collect();
    Ok((row_groups, wanted))
}

/// A decoded row group (key, time, seq, fields), with its key runs when known
/// (`row_select::key_runs`; a cached read keeps them with the row group).
type Decoded = (RecordBatch, Option<ArrayRef>);

/// Decoded batches of a file as a run: filtered, keys ranked.
fn to_run(
    decoded: impl Iterator<Item = Result<Decoded>>,
    fields: &[(String, FieldType)],
    filter: &SstFilter,
) -> Result<SortedRun> {
    let mut keys: Vec<Bytes> = Vec::new();
    let mut batches = Vec::new();
    let schema = run_schema(fields);
    for d in decoded {
        let (b, runs) = d?;
        let runs = runs
            .as_ref()
            .map(|s| s.as_primitive::<Int64Type>().values().as_ref());
        convert_batch(&b, runs, &schema, fields, filter, &mut keys, &mut batches)?;
    }
    let batch = arrow::compute::concat_batches(&schema, &batches)?;
    Ok(SortedRun {
        keys: Arc::new(keys),
        batch,
    })
}

/// The key runs of a decoded row group (`row_select::key_runs`), for a dictionary key column.
fn key_runs_of(b: &RecordBatch) -> Option<ArrayRef> {
    let pk = b.column_by_name(PRIMARY_KEY_COLUMN)?;
    let ids = pk.as_dictionary_opt::<UInt32Type>()?.keys().values();
    // A bad time column is reported by `convert_batch`, which reads it again.
    let times = time_values(b.column_by_name(TIME_COLUMN)?).ok()?;
    Some(Arc::new(Int64Array::from(key_runs(ids, &times)?)))
}

/// Converts one file batch to run form, appending newly seen keys to `keys` (rows are sorted by
/// key, so a key only ever continues the last one or starts a new rank). `runs`: the batch's
/// key runs (`row_select::key_runs`), when known. The kept rows are appended to `out`: one zero-copy
/// slice per kept series when the rows were found series by series (`segments`) and no field
/// bound applies, else one filtered batch; the run's concatenation then copies them once.
#[allow(clippy::too_many_arguments)]
fn convert_batch(
    b: &RecordBatch,
    runs: Option<&[i64]>,
    schema: &SchemaRef,
    fields: &[(String, FieldType)],
    filter: &SstFilter,
    keys: &mut Vec<Bytes>,
    out: &mut Vec<RecordBatch>,
) -> Result<()> {
    let pk = b
        .column_by_name(PRIMARY_KEY_COLUMN)
        .expect("file has a key column");
    let t = time_values(b.column_by_name(TIME_COLUMN).expect("time column"))?;
    let (ranks, mask, kept_segs) = select_rows(pk, &t, runs, filter, keys)?;
    if ranks.is_empty() {
        return Ok(());
    }
    // Fields stored as decimals are turned back into floats after the filter (fewer rows),
    // unless field bounds must see the values first.
    let early = !filter.bounds.is_empty();
    let mut cols: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::new(t, None)),
        b.column_by_name(SEQ_COLUMN).expect("seq column").clone(),
    ];
    for (name, ty) in fields {
        cols.push(field_column(b, name, *ty, early));
    }
    if let Some(segs) = kept_segs.filter(|_| filter.bounds.is_empty()) {
        let ranks = UInt32Array::from(ranks);
        let mut at = 0;
        for s in segs {
            let n = s.hi - s.lo;
            let mut c: Vec<ArrayRef> = vec![Arc::new(ranks.slice(at, n))];
            c.extend(cols.iter().map(|col| col.slice(s.lo, n)));
            out.push(run_batch(schema, c, fields)?);
            at += n;
        }
        return Ok(());
    }
    let (ranks, mask) = crate::read::field_bound::narrow_selection(
        ranks,
        mask,
        &cols[2..],
        fields,
        &filter.bounds,
    )?;
    if ranks.is_empty() {
        return Ok(());
    }
    // Kept rows are a few long ranges: the filter copies them as slices (and keeps a batch
    // whose rows are all kept as it is).
    let predicate = arrow::compute::FilterBuilder::new(&mask).optimize().build();
    let mut kept: Vec<ArrayRef> = vec![Arc::new(UInt32Array::from(ranks))];
    for c in &cols {
        kept.push(predicate.filter(c)?);
    }
    out.push(run_batch(schema, kept, fields)?);
    Ok(())
}

/// The rows of a file batch a read keeps, by its key column `pk` and times `t`: each kept
/// row's rank (new keys appended to `keys`), a keep mask over the batch, and the kept series'
/// segments when the rows were found series by series (`segments`).
fn select_rows(
    pk: &ArrayRef,
    t: &[i64],
    runs: Option<&[i64]>,
    filter: &SstFilter,
    keys: &mut Vec<Bytes>,
) -> Result<(Vec<u32>, BooleanArray, Option<Vec<Segment>>)> {
    let Some(dict) = pk.as_dictionary_opt::<UInt32Type>() else {
        let plain = cast(pk, &DataType::Binary)?;
        let plain = plain.as_binary::<i32>();
        let ids: Vec<u32> = (0..plain.len() as u32).collect();
        let (ranks, mask) = per_row(&ids, |i| plain.value(i as usize), t, filter, keys);
        return Ok((ranks, mask, None));
    };
    let cast_values;
    let values = match dict.values().as_binary_opt::<i32>() {
        Some(v) => v,
        None => {
            cast_values = cast(dict.values(), &DataType::Binary)?;
            cast_values.as_binary::<i32>()
        }
    };
    let value = |i: u32| values.value(i as usize);
    let ids = dict.keys().values();
    let found;
    let runs = match runs {
        Some(r) => Some(r),
        None => {
            found = key_runs(ids, t);
            found.as_deref()
        }
    };
    let before = keys.len();
    Ok(
        match runs.and_then(|r| segments(r, t, value, filter, keys)) {
            Some(segs) => {
                let (ranks, mask) = segments_to_selection(&segs, pk.len());
                (ranks, mask, Some(segs))
            }
            None => {
                // Not sorted as a data file is: row by row (never seen; kept as a guard).
                keys.truncate(before);
                let (ranks, mask) = per_row(ids, value, t, filter, keys);
                (ranks, mask, None)
            }
        },
    )
}

/// A run batch from its rank, time and seq columns and the fields as read, each field turned
/// to its run type.
fn run_batch(
    schema: &SchemaRef,
    mut cols: Vec<ArrayRef>,
    fields: &[(String, FieldType)],
) -> Result<RecordBatch> {
    for (c, (_, ty)) in cols[3..].iter_mut().zip(fields) {
        *c = as_field_type(c, *ty);
    }
    Ok(RecordBatch::try_new(schema.clone(), cols)?)
}

/// A file's time column as nanoseconds, without a copy when it is what files hold.
fn time_values(c: &ArrayRef) -> Result<arrow::buffer::ScalarBuffer<i64>> {
    use arrow::datatypes::TimestampNanosecondType;
    Ok(match c.as_primitive_opt::<TimestampNanosecondType>() {
        Some(t) => t.values().clone(),
        None => cast(c, &DataType::Int64)?
            .as_primitive::<Int64Type>()
            .values()
            .clone(),
    })
}

/// Field `name` of a file batch: as stored, or as its field type when `convert` (a field the
/// file lacks is null).
fn field_column(b: &RecordBatch, name: &str, ty: FieldType, convert: bool) -> ArrayRef {
    match b.column_by_name(name) {
        Some(c) if convert => as_field_type(c, ty),
        Some(c) => c.clone(),
        None => arrow::array::new_null_array(&crate::read::run::arrow_type(ty), b.num_rows()),
    }
}

/// A stored field column as its field type: floats stored as decimals back to the same f64s.
fn as_field_type(c: &ArrayRef, ty: FieldType) -> ArrayRef {
    let want = crate::read::run::arrow_type(ty);
    if c.data_type() != &want && want == DataType::Float64 {
        float_codec::decode(c).unwrap_or_else(|| c.clone())
    } else {
        c.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Five series of 3, 7, 1, 10 and 4 rows (irregular times, a float field that is stored as
    /// decimals and an integer one), in row groups of 4 rows, so runs cross row groups.
    fn five_series_file() -> (CachedSst, Vec<(String, FieldType)>) {
        use arrow::array::{Float64Array, UInt64Array};
        let fields = vec![
            ("f".to_string(), FieldType::F64),
            ("i".to_string(), FieldType::I64),
        ];
        let (mut ranks, mut times) = (Vec::new(), Vec::new());
        for (rank, n) in [3u32, 7, 1, 10, 4].into_iter().enumerate() {
            for j in 0..n as i64 {
                ranks.push(rank as u32);
                times.push(100 + j * 10 + j * j);
            }
        }
        let rows = ranks.len();
        let batch = RecordBatch::try_new(
            run_schema(&fields),
            vec![
                Arc::new(UInt32Array::from(ranks)),
                Arc::new(Int64Array::from(times)),
                Arc::new(UInt64Array::from_iter_values(0..rows as u64)),
                Arc::new(Float64Array::from_iter_values(
                    (0..rows).map(|r| r as f64 / 4.0),
                )),
                Arc::new(Int64Array::from_iter_values((0..rows as i64).map(|r| -r))),
            ],
        )
        .unwrap();
        let keys = ["a", "b", "c", "d", "e"].map(|k| Bytes::from(k.to_string()));
        let run = SortedRun {
            keys: Arc::new(keys.to_vec()),
            batch,
        };
        let o = SstWriteOptions {
            row_group_rows: 4,
            zstd_level: 1,
        };
        let (data, _) = crate::files::sst_writer::write_sst(&run, &[], &fields, &o).unwrap();
        (CachedSst::decode("f", data).unwrap(), fields)
    }

    #[test]
    fn row_group_index_holds_the_written_bounds() {
        // Rows 0-2 a, 3-9 b, 10 c, 11-20 d, 21-24 e, in row groups of 4 rows.
        let (file, _) = five_series_file();
        let index = &file.rg_index;
        assert_eq!(index.len(), 7);
        let k =
            |ks: &[&str]| -> Vec<Bytes> { ks.iter().map(|k| Bytes::from(k.to_string())).collect() };
        assert_eq!(index.select(Some(&k(&["b"])), None), vec![0, 1, 2], "b");
        assert_eq!(index.select(Some(&k(&["c"])), None), vec![2], "c");
        assert_eq!(index.select(Some(&k(&["e"])), None), vec![5, 6], "e");
        assert_eq!(
            index.select(Some(&k(&["zz"])), None),
            Vec::<usize>::new(),
            "none"
        );
        // d's times reach 271 (j = 9); only row groups 4 and 5 hold times in [200, 300).
        assert_eq!(index.select(None, Some((200, 300))), vec![4, 5], "time");
    }

    #[test]
    fn a_file_without_time_or_key_columns_is_an_error_to_read() {
        let col = Arc::new(Int64Array::from(vec![1, 2, 3])) as ArrayRef;
        for name in ["a", TIME_COLUMN, PRIMARY_KEY_COLUMN] {
            let batch = RecordBatch::try_from_iter([(name, col.clone())]).unwrap();
            let mut buf = Vec::new();
            let mut w =
                parquet::arrow::ArrowWriter::try_new(&mut buf, batch.schema(), None).unwrap();
            w.write(&batch).unwrap();
            w.close().unwrap();
            let file = CachedSst::decode("f", Bytes::from(buf)).unwrap();
            assert_eq!(
                file.rg_index.len(),
                1,
                "{name}: the index still counts row groups"
            );
            let cache = crate::read::decoded_cache::DecodedCache::new(1 << 20);
            let filter = SstFilter::default();
            assert!(read_sst("f", &file, &[], &filter).is_err(), "{name}");
            assert!(
                read_sst_cached("f", &file, &[], &filter, &cache).is_err(),
                "{name}"
            );
        }
    }

    #[test]
    fn cached_reads_with_kept_key_runs_equal_plain_reads() {
        use crate::read::field_bound::{BoundOp, FieldBound};
        let (file, fields) = five_series_file();
        let keys = |ks: &[&str]| {
            Some(Arc::new(
                ks.iter().map(|k| Bytes::from(k.to_string())).collect(),
            ))
        };
        let filter = |time, keys, bounds| SstFilter { time, keys, bounds };
        let cases: Vec<(&str, SstFilter)> = vec![
            ("everything", SstFilter::default()),
            (
                "a window inside every series",
                filter(Some((115, 160)), None, vec![]),
            ),
            ("a window before all", filter(Some((0, 100)), None, vec![])),
            (
                "a window after all",
                filter(Some((1_000, 2_000)), None, vec![]),
            ),
            ("one point", filter(Some((100, 101)), None, vec![])),
            (
                "series split across row groups",
                filter(None, keys(&["b", "d"]), vec![]),
            ),
            (
                "time and series",
                filter(Some((120, 250)), keys(&["a", "d", "e"]), vec![]),
            ),
            (
                "a series that is not there",
                filter(None, keys(&["bb"]), vec![]),
            ),
            (
                "a field bound",
                filter(
                    None,
                    None,
                    vec![FieldBound {
                        field: "f".into(),
                        op: BoundOp::AtLeast,
                        value: 2.0,
                    }],
                ),
            ),
        ];
        // Every case but the bound against the rows as written: (key, time, seq, i) in order.
        let names = ["a", "b", "c", "d", "e"];
        let lens = [3i64, 7, 1, 10, 4];
        let mut written = Vec::new();
        for (k, n) in names.iter().zip(lens) {
            for j in 0..n {
                let seq = written.len() as u64;
                written.push((k.to_string(), 100 + j * 10 + j * j, seq, -(seq as i64)));
            }
        }
        for (name, f) in cases.iter().filter(|(_, f)| f.bounds.is_empty()) {
            let want: Vec<_> = written
                .iter()
                .filter(|(k, t, _, _)| {
                    f.time.is_none_or(|(s, e)| *t >= s && *t < e)
                        && f.keys
                            .as_ref()
                            .is_none_or(|ks| ks.iter().any(|x| x.as_ref() == k.as_bytes()))
                })
                .cloned()
                .collect();
            let r = read_sst("f", &file, &fields, f).unwrap();
            let i = r.batch.column(4).as_primitive::<Int64Type>();
            let got: Vec<_> = (0..r.num_rows())
                .map(|row| {
                    let k = String::from_utf8(r.keys[r.ranks()[row] as usize].to_vec()).unwrap();
                    (k, r.times()[row], r.seqs()[row], i.value(row))
                })
                .collect();
            assert_eq!(got, want, "{name}: the rows written");
        }
        let warm = crate::read::decoded_cache::DecodedCache::new(1 << 30);
        let none = crate::read::decoded_cache::DecodedCache::new(0);
        for (name, f) in &cases {
            let want = read_sst("f", &file, &fields, f).unwrap();
            for (how, cache) in [("cold", &warm), ("warm", &warm), ("no cache", &none)] {
                let got = read_sst_cached("f", &file, &fields, f, cache).unwrap();
                assert_eq!(got.batch, want.batch, "{name}: {how}");
                assert_eq!(got.keys, want.keys, "{name}: {how}");
            }
        }
        // The window case by value: b (times 100, 111, 124, 139, 156, ...) keeps 124..=156.
        let w = read_sst("f", &file, &fields, &cases[1].1).unwrap();
        let b = w.keys.iter().position(|k| k.as_ref() == b"b").unwrap() as u32;
        let b_times: Vec<i64> = w
            .ranks()
            .iter()
            .zip(w.times())
            .filter(|(r, _)| **r == b)
            .map(|(_, t)| *t)
            .collect();
        assert_eq!(b_times, vec![124, 139, 156]);
    }

    use arrow::array::Float64Array;
    use proptest::prelude::*;

    fn bits(v: &[Option<f64>]) -> Vec<Option<u64>> {
        v.iter().map(|x| x.map(f64::to_bits)).collect()
    }

    proptest! {
        #[test]
        fn any_float_column_roundtrips_bit_for_bit(
            raw in proptest::collection::vec(proptest::option::of(prop_oneof![
                any::<f64>(),
                any::<f32>().prop_map(|v| v as f64),
                (-100_000i64..100_000, 0u32..7).prop_map(|(m, e)| m as f64 / 10f64.powi(e as i32)),
            ]), 0..50)
        ) {
            let col: ArrayRef = Arc::new(Float64Array::from(raw.clone()));
            let codec = float_codec::choose(&col, 3).unwrap();
            let stored = float_codec::as_repr(&col, codec.repr);
            let back = float_codec::decode(&stored).unwrap_or(stored);
            let back: Vec<Option<f64>> = back.as_primitive::<arrow::datatypes::Float64Type>().iter().collect();
            prop_assert_eq!(bits(&back), bits(&raw));
        }
    }
}
