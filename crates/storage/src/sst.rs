//! Data files: a [`SortedRun`] written as Parquet, and read back with pruning.
//!
//! File layout (one row group per `row_group_rows` rows, sorted by key then time):
//! `__primary_key` (dictionary-encoded binary: the memcomparable series key), one dictionary
//! `Utf8` column per tag (so other tools can read the tags without decoding keys), `time`
//! (timestamp ns UTC, delta-encoded, with statistics per row group and page), `__seq` (u64,
//! delta-encoded), then the fields (floats byte-stream-split, integers delta-encoded), all
//! compressed with zstd. DuckDB and pyarrow read these files as they are.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BinaryArray, DictionaryArray, Int64Array, RecordBatch, UInt32Array,
};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Int64Type, Schema, SchemaRef, TimeUnit, UInt32Type};
use bytes::Bytes;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::{ArrowWriter, ProjectionMask};
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::statistics::Statistics;
use parquet::schema::types::ColumnPath;
use tempora_model::{FieldType, PRIMARY_KEY_COLUMN, SEQ_COLUMN, TIME_COLUMN};

use crate::error::{Result, StorageError};
use crate::run::{SortedRun, run_schema};
use crate::sst_cache::CachedSst;

/// What a writer needs to know beyond the rows.
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

fn time_type() -> DataType {
    DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()))
}

fn dict(value: DataType) -> DataType {
    DataType::Dictionary(Box::new(DataType::UInt32), Box::new(value))
}

fn writer_props(
    schema: &Schema,
    fields: &[(String, FieldType)],
    o: &SstWriteOptions,
) -> Result<WriterProperties> {
    let level = ZstdLevel::try_new(o.zstd_level).map_err(|e| StorageError::Parquet {
        path: "<options>".into(),
        source: e,
    })?;
    let mut b = WriterProperties::builder()
        .set_compression(Compression::ZSTD(level))
        .set_max_row_group_row_count(Some(o.row_group_rows))
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_dictionary_enabled(false)
        .set_key_value_metadata(Some(vec![KeyValue::new(
            "tempora.format".into(),
            "1".to_string(),
        )]));
    for f in schema.fields() {
        if matches!(f.data_type(), DataType::Dictionary(..)) {
            b = b.set_column_dictionary_enabled(ColumnPath::from(f.name().as_str()), true);
        }
    }
    let delta = |b: parquet::file::properties::WriterPropertiesBuilder, name: &str| {
        b.set_column_encoding(ColumnPath::from(name), Encoding::DELTA_BINARY_PACKED)
    };
    b = delta(b, TIME_COLUMN);
    b = delta(b, SEQ_COLUMN);
    b = b.set_column_statistics_enabled(ColumnPath::from(TIME_COLUMN), EnabledStatistics::Page);
    for (name, ty) in fields {
        b = match ty {
            FieldType::F64 => {
                b.set_column_encoding(ColumnPath::from(name.as_str()), Encoding::BYTE_STREAM_SPLIT)
            }
            FieldType::I64 | FieldType::U64 => delta(b, name),
            FieldType::Bool | FieldType::Str => b,
        };
    }
    Ok(b.build())
}

/// Encodes a run as a Parquet file. `tags` are the table's tag names (columns written for them).
pub fn write_sst(
    run: &SortedRun,
    tags: &[String],
    fields: &[(String, FieldType)],
    o: &SstWriteOptions,
) -> Result<(Bytes, SstStats)> {
    assert!(run.num_rows() > 0, "no empty data files");
    let ranks = run.batch.column(0).as_primitive::<UInt32Type>().clone();
    let key_values = BinaryArray::from_iter_values(run.keys.iter().map(|k| k.as_ref()));
    let pk = DictionaryArray::<UInt32Type>::try_new(ranks.clone(), Arc::new(key_values))?;
    let mut schema_fields = vec![Field::new(
        PRIMARY_KEY_COLUMN,
        dict(DataType::Binary),
        false,
    )];
    let mut cols: Vec<ArrayRef> = vec![Arc::new(pk)];
    for (tag, values) in tags.iter().zip(run.tag_values(tags)?) {
        let arr = DictionaryArray::<UInt32Type>::try_new(ranks.clone(), Arc::new(values))?;
        schema_fields.push(Field::new(tag, dict(DataType::Utf8), true));
        cols.push(Arc::new(arr));
    }
    cols.push(Arc::new(run.time_column()));
    schema_fields.push(Field::new(TIME_COLUMN, time_type(), false));
    cols.push(run.batch.column(2).clone());
    schema_fields.push(Field::new(SEQ_COLUMN, DataType::UInt64, false));
    for (i, (name, _)) in fields.iter().enumerate() {
        let col = float_as_decimal(run.batch.column(3 + i));
        schema_fields.push(Field::new(name, col.data_type().clone(), true));
        cols.push(col);
    }
    let schema: SchemaRef = Arc::new(Schema::new(schema_fields));
    let batch = RecordBatch::try_new(schema.clone(), cols)?;
    let stats = SstStats {
        rows: run.num_rows() as u64,
        min_time: *run.times().iter().min().expect("non-empty"),
        max_time: *run.times().iter().max().expect("non-empty"),
        max_seq: *run.seqs().iter().max().expect("non-empty"),
        min_seq: *run.seqs().iter().min().expect("non-empty"),
        size: 0,
    };
    let props = writer_props(&schema, fields, o)?;
    let mut buf = Vec::with_capacity(run.num_rows() * 8);
    let perr = |e| StorageError::Parquet {
        path: "<new file>".into(),
        source: e,
    };
    let mut w = ArrowWriter::try_new(&mut buf, schema, Some(props)).map_err(perr)?;
    w.write(&batch).map_err(perr)?;
    w.close().map_err(perr)?;
    let size = buf.len() as u64;
    Ok((Bytes::from(buf), SstStats { size, ..stats }))
}

/// Largest decimal scale tried for float columns.
const MAX_DECIMAL_SCALE: i8 = 6;
/// Largest magnitude of a scaled value (exact in f64 and within decimal precision 18).
const MAX_SCALED: f64 = 9.0e15;

/// ALP-style float storage: when every value of a float column is a decimal with at most
/// `MAX_DECIMAL_SCALE` digits after the point that converts back to the very same f64, the
/// column is stored as DECIMAL(18, scale) (INT64, delta-encoded), which compresses several
/// times better than raw doubles; readers cast it back to the identical f64 values.
/// Otherwise the column is returned unchanged.
fn float_as_decimal(col: &ArrayRef) -> ArrayRef {
    let Some(f) = col.as_primitive_opt::<arrow::datatypes::Float64Type>() else {
        return col.clone();
    };
    let fits = |scale: i8| {
        let m = 10f64.powi(scale as i32);
        f.iter().flatten().all(|v| {
            let x = (v * m).round();
            x.abs() <= MAX_SCALED && x / m == v && !(v == 0.0 && v.is_sign_negative())
        })
    };
    let Some(scale) = (0..=MAX_DECIMAL_SCALE).find(|&s| fits(s)) else {
        return col.clone();
    };
    let m = 10f64.powi(scale as i32);
    let dec: arrow::array::Decimal128Array = f.unary_opt(|v| Some((v * m).round() as i128));
    match dec.with_precision_and_scale(18, scale) {
        Ok(d) => Arc::new(d),
        Err(_) => col.clone(),
    }
}

/// The exact inverse of [`float_as_decimal`]: `unscaled / 10^scale`, the same expression the
/// writer checked, so every value comes back bit for bit.
fn decimal_to_float(col: &ArrayRef) -> Option<ArrayRef> {
    let DataType::Decimal128(_, scale) = col.data_type() else {
        return None;
    };
    let m = 10f64.powi(*scale as i32);
    let d = col.as_primitive::<arrow::datatypes::Decimal128Type>();
    let f: arrow::array::Float64Array = d.unary(|x| x as f64 / m);
    Some(Arc::new(f))
}

/// Reads several data files with one filter.
pub fn read_files<'a>(
    store: &crate::store::FileStore,
    paths: impl IntoIterator<Item = &'a str>,
    fields: &[(String, FieldType)],
    filter: &SstFilter,
) -> Result<Vec<SortedRun>> {
    paths
        .into_iter()
        .map(|p| read_sst(p, &CachedSst::decode(p, store.get(p)?)?, fields, filter))
        .collect()
}

/// Which rows of a file a read wants.
#[derive(Debug, Clone, Default)]
pub struct SstFilter {
    /// Inclusive start and exclusive end of the time range.
    pub time: Option<(i64, i64)>,
    /// Sorted keys to keep; `None` keeps all.
    pub keys: Option<Arc<Vec<Bytes>>>,
    /// Field bounds to apply while reading (`crate::field_bound`). Only for a file that is a
    /// region's only source: a row a bound drops may be the newest version of a (series, time)
    /// another source also holds, and dropping it first would bring the older one back.
    pub bounds: Vec<crate::field_bound::FieldBound>,
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
        reader.map(|b| b.map_err(StorageError::from)),
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
    cache: &crate::decoded_cache::DecodedCache,
) -> Result<SortedRun> {
    let (row_groups, wanted) = selection(file, fields, filter)?;
    let batches = row_groups
        .into_iter()
        .map(|rg| cache.row_group(path, file, rg, &wanted));
    to_run(batches, fields, filter)
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
    let meta = file.meta.metadata();
    let time_idx = file_schema.index_of(TIME_COLUMN)?;
    let key_idx = file_schema.index_of(PRIMARY_KEY_COLUMN)?;
    let row_groups: Vec<usize> = (0..meta.num_row_groups())
        .filter(|&i| {
            let rg = meta.row_group(i);
            let time_ok = match (filter.time, rg.column(time_idx).statistics()) {
                (Some((start, end)), Some(Statistics::Int64(s))) => {
                    match (s.min_opt(), s.max_opt()) {
                        (Some(&min), Some(&max)) => max >= start && min < end,
                        _ => true,
                    }
                }
                _ => true,
            };
            let keys_ok = match (&filter.keys, rg.column(key_idx).statistics()) {
                (Some(want), Some(Statistics::ByteArray(s))) => {
                    match (s.min_bytes_opt(), s.max_bytes_opt()) {
                        (Some(min), Some(max)) => any_key_within(want, min, max),
                        _ => true,
                    }
                }
                _ => true,
            };
            time_ok && keys_ok
        })
        .collect();
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

/// Decoded batches of a file (key, time, seq, fields) as a run: filtered, keys ranked.
fn to_run(
    decoded: impl Iterator<Item = Result<RecordBatch>>,
    fields: &[(String, FieldType)],
    filter: &SstFilter,
) -> Result<SortedRun> {
    let mut keys: Vec<Bytes> = Vec::new();
    let mut batches = Vec::new();
    for b in decoded {
        if let Some(rb) = convert_batch(&b?, fields, filter, &mut keys)? {
            batches.push(rb);
        }
    }
    let schema = run_schema(fields);
    let batch = arrow::compute::concat_batches(&schema, &batches)?;
    Ok(SortedRun {
        keys: Arc::new(keys),
        batch,
    })
}

/// Whether a sorted key list holds a key in `[min, max]` (a row group's key statistics;
/// truncated statistics are still bounds, so the test never drops a group that matches).
fn any_key_within(want: &[Bytes], min: &[u8], max: &[u8]) -> bool {
    let first = want.partition_point(|k| k.as_ref() < min);
    want.get(first).is_some_and(|k| k.as_ref() <= max)
}

/// Ranks (into `keys`) and key-filter flags of rows whose keys are `value(ids[i])`. Rows are
/// sorted by key, so a key either continues the last one or starts a new rank; key bytes are
/// compared only where the id changes (a dictionary id names one key within a batch).
fn walk_keys<'a>(
    ids: &[u32],
    value: impl Fn(u32) -> &'a [u8],
    filter: &SstFilter,
    keys: &mut Vec<Bytes>,
) -> (Vec<u32>, Vec<bool>) {
    let mut ranks = Vec::with_capacity(ids.len());
    let mut keep = Vec::with_capacity(ids.len());
    let mut last_id = None;
    let mut last_keep = true;
    for &id in ids {
        if last_id != Some(id) {
            last_id = Some(id);
            let k = value(id);
            if keys.last().map(|l| l.as_ref()) != Some(k) {
                keys.push(Bytes::copy_from_slice(k));
            }
            // Decided for every run of one id, also one that continues the previous batch's
            // key (a batch boundary inside a series must not reset the decision).
            last_keep = filter
                .keys
                .as_ref()
                .is_none_or(|want| want.binary_search_by(|w| w.as_ref().cmp(k)).is_ok());
        }
        ranks.push(keys.len() as u32 - 1);
        keep.push(last_keep);
    }
    (ranks, keep)
}

/// Converts one file batch to run form, appending newly seen keys to `keys` (rows are sorted by
/// key, so a key only ever continues the last one or starts a new rank).
fn convert_batch(
    b: &RecordBatch,
    fields: &[(String, FieldType)],
    filter: &SstFilter,
    keys: &mut Vec<Bytes>,
) -> Result<Option<RecordBatch>> {
    let pk = b
        .column_by_name(PRIMARY_KEY_COLUMN)
        .expect("file has a key column");
    let times = cast(
        b.column_by_name(TIME_COLUMN).expect("time column"),
        &DataType::Int64,
    )?;
    let t = times.as_primitive::<Int64Type>();
    let (ranks, mask) = match pk.as_dictionary_opt::<UInt32Type>() {
        Some(dict) => {
            let values = cast(dict.values(), &DataType::Binary)?;
            let values = values.as_binary::<i32>();
            let value = |i: u32| values.value(i as usize);
            let ids = dict.keys().values();
            let before = keys.len();
            match segments(ids, t.values(), value, filter, keys) {
                Some(segs) => segments_to_selection(&segs, b.num_rows()),
                None => {
                    // Not sorted as a data file is: row by row (never seen; kept as a guard).
                    keys.truncate(before);
                    per_row(ids, value, t.values(), filter, keys)
                }
            }
        }
        None => {
            let plain = cast(pk, &DataType::Binary)?;
            let plain = plain.as_binary::<i32>();
            let ids: Vec<u32> = (0..plain.len() as u32).collect();
            per_row(&ids, |i| plain.value(i as usize), t.values(), filter, keys)
        }
    };
    if ranks.is_empty() {
        return Ok(None);
    }
    let mut cols: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::new(t.values().clone(), None)),
        b.column_by_name(SEQ_COLUMN).expect("seq column").clone(),
    ];
    for (name, ty) in fields {
        let want = crate::memtable::arrow_type(*ty);
        cols.push(match b.column_by_name(name) {
            Some(c) if c.data_type() == &want => c.clone(),
            Some(c) if want == DataType::Float64 => {
                decimal_to_float(c).unwrap_or_else(|| c.clone())
            }
            _ => arrow::array::new_null_array(&want, b.num_rows()),
        });
    }
    let (ranks, mask) =
        crate::field_bound::narrow_selection(ranks, mask, &cols[2..], fields, &filter.bounds)?;
    if ranks.is_empty() {
        return Ok(None);
    }
    // Kept rows are a few long ranges: the filter copies them as slices (and keeps a batch
    // whose rows are all kept as it is).
    let predicate = arrow::compute::FilterBuilder::new(&mask).optimize().build();
    let mut out: Vec<ArrayRef> = vec![Arc::new(UInt32Array::from(ranks))];
    for c in &cols {
        out.push(predicate.filter(c)?);
    }
    Ok(Some(RecordBatch::try_new(run_schema(fields), out)?))
}

/// The ranks of the kept rows and the mask that keeps them, deciding row by row.
fn per_row<'a>(
    ids: &[u32],
    value: impl Fn(u32) -> &'a [u8],
    times: &[i64],
    filter: &SstFilter,
    keys: &mut Vec<Bytes>,
) -> (Vec<u32>, arrow::array::BooleanArray) {
    let (ranks, mut keep) = walk_keys(ids, value, filter, keys);
    if let Some((start, end)) = filter.time {
        for (k, &t) in keep.iter_mut().zip(times) {
            *k = *k && t >= start && t < end;
        }
    }
    let kept: Vec<u32> = ranks
        .iter()
        .zip(&keep)
        .filter(|(_, k)| **k)
        .map(|(r, _)| *r)
        .collect();
    (kept, arrow::array::BooleanArray::from(keep))
}

/// Rows `lo..hi` of a batch, all of series rank `rank`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Segment {
    rank: u32,
    lo: usize,
    hi: usize,
}

/// The rows of a batch sorted by key then time that the filter keeps, as one segment per
/// kept series: a key's rows are contiguous (one dictionary id per key in a row group), so
/// each series is found by binary search, and its time range within it too. Cost: the number
/// of series times a logarithm, not the number of rows. `None` when an id turns up in two
/// places (the rows are not sorted as a data file's are).
fn segments<'a>(
    ids: &[u32],
    times: &[i64],
    value: impl Fn(u32) -> &'a [u8],
    filter: &SstFilter,
    keys: &mut Vec<Bytes>,
) -> Option<Vec<Segment>> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut a = 0;
    while a < ids.len() {
        let id = ids[a];
        let b = a + ids[a..].partition_point(|&x| x == id);
        if !seen.insert(id) {
            return None;
        }
        let k = value(id);
        if keys.last().map(|l| l.as_ref()) != Some(k) {
            keys.push(Bytes::copy_from_slice(k));
        }
        let wanted = filter
            .keys
            .as_ref()
            .is_none_or(|want| want.binary_search_by(|w| w.as_ref().cmp(k)).is_ok());
        if wanted {
            let run = &times[a..b];
            let (lo, hi) = match filter.time {
                Some((start, end)) => (
                    a + run.partition_point(|&t| t < start),
                    a + run.partition_point(|&t| t < end),
                ),
                None => (a, b),
            };
            if lo < hi {
                out.push(Segment {
                    rank: keys.len() as u32 - 1,
                    lo,
                    hi,
                });
            }
        }
        a = b;
    }
    Some(out)
}

/// The ranks of the kept rows and the mask that keeps them.
fn segments_to_selection(segs: &[Segment], rows: usize) -> (Vec<u32>, arrow::array::BooleanArray) {
    let kept: usize = segs.iter().map(|s| s.hi - s.lo).sum();
    let mut ranks = Vec::with_capacity(kept);
    let mut mask = arrow::array::BooleanBufferBuilder::new(rows);
    let mut at = 0;
    for s in segs {
        mask.append_n(s.lo - at, false);
        mask.append_n(s.hi - s.lo, true);
        ranks.resize(ranks.len() + (s.hi - s.lo), s.rank);
        at = s.hi;
    }
    mask.append_n(rows - at, false);
    (ranks, arrow::array::BooleanArray::new(mask.finish(), None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_group_key_ranges() {
        let want: Vec<Bytes> = ["b", "d", "f"].iter().map(|k| Bytes::from(*k)).collect();
        for (name, min, max, keep) in [
            ("holds one", "c", "d", true),
            ("exactly a key", "d", "d", true),
            ("between keys", "bb", "cz", false),
            ("before all", "a", "az", false),
            ("after all", "g", "z", false),
            ("spans all", "a", "z", true),
        ] {
            assert_eq!(
                any_key_within(&want, min.as_bytes(), max.as_bytes()),
                keep,
                "{name}"
            );
        }
        assert!(!any_key_within(&[], b"a", b"z"), "no keys wanted");
    }

    #[test]
    fn segment_cases() {
        // ids 0,0,0,1,1,2 name keys a, b, c; times 10,20,30 | 10,20 | 5.
        let ids = [0u32, 0, 0, 1, 1, 2];
        let times = [10i64, 20, 30, 10, 20, 5];
        let names: [&[u8]; 3] = [b"a", b"b", b"c"];
        let want = |ks: &[&str]| {
            Some(Arc::new(
                ks.iter()
                    .map(|k| Bytes::from(k.to_string()))
                    .collect::<Vec<_>>(),
            ))
        };
        let seg = |rank, lo, hi| Segment { rank, lo, hi };
        let cases: Vec<(&str, SstFilter, Vec<Segment>)> = vec![
            (
                "no filter: one segment per key",
                SstFilter::default(),
                vec![seg(0, 0, 3), seg(1, 3, 5), seg(2, 5, 6)],
            ),
            (
                "keys b only",
                SstFilter {
                    time: None,
                    keys: want(&["b"]),
                    bounds: Vec::new(),
                },
                vec![seg(1, 3, 5)],
            ),
            (
                "time [15, 30)",
                SstFilter {
                    time: Some((15, 30)),
                    keys: None,
                    bounds: Vec::new(),
                },
                vec![seg(0, 1, 2), seg(1, 4, 5)],
            ),
            (
                "time and keys",
                SstFilter {
                    time: Some((0, 11)),
                    keys: want(&["a", "c"]),
                    bounds: Vec::new(),
                },
                vec![seg(0, 0, 1), seg(2, 5, 6)],
            ),
            (
                "nothing in range",
                SstFilter {
                    time: Some((40, 50)),
                    keys: None,
                    bounds: Vec::new(),
                },
                vec![],
            ),
        ];
        for (name, filter, expect) in cases {
            let mut keys = Vec::new();
            let got = segments(&ids, &times, |i| names[i as usize], &filter, &mut keys);
            assert_eq!(got, Some(expect), "{name}");
            assert_eq!(keys.len(), 3, "{name}: every key ranked");
        }
        // A key continuing from the previous batch keeps its rank.
        let mut keys = vec![Bytes::from_static(b"a")];
        let got = segments(
            &ids,
            &times,
            |i| names[i as usize],
            &SstFilter::default(),
            &mut keys,
        );
        assert_eq!(got.unwrap()[0], seg(0, 0, 3));
        // An id in two places is not a data file's order.
        let mut keys = Vec::new();
        let bad = segments(
            &[0, 1, 0],
            &[1, 1, 2],
            |i| names[i as usize],
            &SstFilter::default(),
            &mut keys,
        );
        assert_eq!(bad, None);
        // The selection of segments: ranks of kept rows and a mask over all rows.
        let (ranks, mask) = segments_to_selection(&[seg(0, 1, 2), seg(1, 4, 6)], 7);
        assert_eq!(ranks, vec![0, 1, 1]);
        let bits: Vec<bool> = mask.iter().map(|b| b.unwrap()).collect();
        assert_eq!(bits, vec![false, true, false, false, true, true, false]);
    }

    #[test]
    fn key_walk_cases() {
        type Case = (
            &'static str,
            Vec<&'static str>,
            Vec<u32>,
            Vec<&'static str>,
            Option<Vec<&'static str>>,
            Vec<u32>,
            Vec<bool>,
        );
        // (name, keys before, row ids, id → key, wanted keys, ranks, keep)
        let cases: Vec<Case> = vec![
            (
                "no filter",
                vec![],
                vec![0, 0, 1],
                vec!["a", "b"],
                None,
                vec![0, 0, 1],
                vec![true; 3],
            ),
            (
                "filtered",
                vec![],
                vec![0, 0, 1, 1],
                vec!["a", "b"],
                Some(vec!["b"]),
                vec![0, 0, 1, 1],
                vec![false, false, true, true],
            ),
            (
                "a filtered-out key continues from the last batch",
                vec!["a"],
                vec![0, 0, 1],
                vec!["a", "b"],
                Some(vec!["b"]),
                vec![0, 0, 1],
                vec![false, false, true],
            ),
            (
                "plain values, one id per row",
                vec![],
                vec![0, 1, 2],
                vec!["a", "a", "b"],
                Some(vec!["a"]),
                vec![0, 0, 1],
                vec![true, true, false],
            ),
        ];
        for (name, before, ids, values, want, ranks, keep) in cases {
            let mut keys: Vec<Bytes> = before.iter().map(|k| Bytes::from(*k)).collect();
            let filter = SstFilter {
                time: None,
                keys: want.map(|w| Arc::new(w.iter().map(|k| Bytes::from(*k)).collect())),
                bounds: Vec::new(),
            };
            let got = walk_keys(&ids, |i| values[i as usize].as_bytes(), &filter, &mut keys);
            assert_eq!(got, (ranks, keep), "{name}");
        }
    }
    use arrow::array::Float64Array;
    use proptest::prelude::*;

    fn roundtrip(values: Vec<Option<f64>>) -> (Vec<Option<f64>>, bool) {
        let col: ArrayRef = Arc::new(Float64Array::from(values.clone()));
        let stored = float_as_decimal(&col);
        let decimal = matches!(stored.data_type(), DataType::Decimal128(..));
        let back = decimal_to_float(&stored).unwrap_or(stored);
        let back = back.as_primitive::<arrow::datatypes::Float64Type>();
        (back.iter().collect(), decimal)
    }

    fn bits(v: &[Option<f64>]) -> Vec<Option<u64>> {
        v.iter().map(|x| x.map(f64::to_bits)).collect()
    }

    #[test]
    fn float_columns_named_cases() {
        let cases: Vec<(&str, Vec<Option<f64>>, bool)> = vec![
            (
                "integral",
                vec![Some(1.0), Some(58.0), None, Some(-3.0)],
                true,
            ),
            (
                "two decimals",
                vec![Some(12.34), Some(0.01), Some(-7.5)],
                true,
            ),
            (
                "negative zero keeps its sign",
                vec![Some(-0.0), Some(1.0)],
                false,
            ),
            ("nan", vec![Some(f64::NAN), Some(1.0)], false),
            ("infinity", vec![Some(f64::INFINITY)], false),
            ("too many digits", vec![Some(std::f64::consts::PI)], false),
            ("too large", vec![Some(1e300)], false),
            ("all null", vec![None, None], true),
        ];
        for (name, values, want_decimal) in cases {
            let (back, decimal) = roundtrip(values.clone());
            assert_eq!(bits(&back), bits(&values), "{name}");
            assert_eq!(decimal, want_decimal, "{name}");
        }
    }

    proptest! {
        #[test]
        fn any_float_column_roundtrips_bit_for_bit(
            raw in proptest::collection::vec(proptest::option::of(prop_oneof![
                any::<f64>(),
                (-100_000i64..100_000, 0u32..7).prop_map(|(m, e)| m as f64 / 10f64.powi(e as i32)),
            ]), 0..50)
        ) {
            let (back, _) = roundtrip(raw.clone());
            prop_assert_eq!(bits(&back), bits(&raw));
        }
    }
}
