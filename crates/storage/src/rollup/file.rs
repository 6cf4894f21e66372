//! Rollup files: a [`PartialRun`] as Parquet (docs/format/rollup-files.md).
//!
//! The file holds the partial run's columns with `__rank` replaced by `__primary_key` (the
//! series key, dictionary-encoded binary, as in data files), sorted by (`__primary_key`,
//! `time`). Float columns are stored as data files store them (a decimal, f32 or f64
//! representation, read back bit for bit; `crate::files::float_codec`), integer columns
//! delta-encoded. Key-value metadata `tempora.rollup` = [`FORMAT_VERSION`] and
//! `tempora.resolution_ns` identify it; a reader refuses a file without them, so a data file
//! or a damaged file is never taken for a rollup.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BinaryArray, BooleanArray, RecordBatch, UInt32Array};
use arrow::datatypes::{DataType, Field, Int64Type, Schema};
use bytes::Bytes;
use parquet::arrow::ArrowWriter;
use parquet::arrow::ProjectionMask;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::schema::types::ColumnPath;
use tempora_model::{FieldType, PRIMARY_KEY_COLUMN};

use super::partial::{LEAD, PartialRun, STATS, partial_schema};
use crate::error::{Result, StorageError};
use crate::files::float_codec;
use crate::read::decoded_cache::DecodedCache;
use crate::read::sst_cache::CachedSst;

/// The rollup file format's version, in the file's key-value metadata.
pub const FORMAT_VERSION: &str = "1";
const FORMAT_KEY: &str = "tempora.rollup";
/// Rows per row group: a read for a few series or a short range decodes only the row groups
/// whose key and bucket statistics it overlaps (a day of hourly states of 85 series).
pub const ROW_GROUP_ROWS: usize = 2 * 1024;
const RESOLUTION_KEY: &str = "tempora.resolution_ns";

fn parquet_err(path: &str, e: parquet::errors::ParquetError) -> StorageError {
    StorageError::Parquet {
        path: path.to_string(),
        source: e,
    }
}

/// Encodes `p` (computed at resolution `res`) as a rollup file.
pub fn encode(p: &PartialRun, res: i64, zstd_level: i32) -> Result<Bytes> {
    let schema = p.batch.schema();
    let mut fields: Vec<Field> = vec![Field::new(PRIMARY_KEY_COLUMN, DataType::Binary, false)];
    fields.extend(schema.fields().iter().skip(1).map(|f| f.as_ref().clone()));
    let file_schema = Arc::new(Schema::new(fields));
    let keys: BinaryArray = p
        .ranks()
        .iter()
        .map(|&r| Some(p.keys[r as usize].as_ref()))
        .collect();
    let mut cols: Vec<ArrayRef> = vec![Arc::new(keys)];
    cols.extend(p.batch.columns().iter().skip(1).cloned());
    let level = ZstdLevel::try_new(zstd_level).map_err(|e| parquet_err("<options>", e))?;
    let mut props = WriterProperties::builder()
        .set_compression(Compression::ZSTD(level))
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_key_value_metadata(Some(vec![
            KeyValue::new(FORMAT_KEY.into(), FORMAT_VERSION.to_string()),
            KeyValue::new(RESOLUTION_KEY.into(), res.to_string()),
        ]));
    // Floats as the data files store them (a decimal, f32 or f64 representation and the
    // encoding that writes a sample smallest); times delta-encoded.
    let mut fields: Vec<Field> = Vec::with_capacity(cols.len());
    for (col, f) in cols.iter_mut().zip(file_schema.fields()) {
        let path = ColumnPath::from(f.name().as_str());
        match f.data_type() {
            DataType::Float64 => {
                if let Some(c) = float_codec::choose(col, zstd_level) {
                    *col = float_codec::as_repr(col, c.repr);
                    let (enc, dict) = c.encoding.parquet();
                    props = props.set_column_dictionary_enabled(path.clone(), dict);
                    if let Some(e) = enc {
                        props = props.set_column_encoding(path, e);
                    }
                }
            }
            DataType::Int64 => {
                props = props
                    .set_column_dictionary_enabled(path.clone(), false)
                    .set_column_encoding(path, Encoding::DELTA_BINARY_PACKED);
            }
            _ => {}
        }
        fields.push(Field::new(
            f.name(),
            col.data_type().clone(),
            f.is_nullable(),
        ));
    }
    let file_schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(file_schema.clone(), cols)?;
    let props = props.build();
    let mut out = Vec::new();
    let mut w = ArrowWriter::try_new(&mut out, file_schema, Some(props))
        .map_err(|e| parquet_err("<rollup>", e))?;
    w.write(&batch).map_err(|e| parquet_err("<rollup>", e))?;
    w.close().map_err(|e| parquet_err("<rollup>", e))?;
    Ok(Bytes::from(out))
}

/// What a read of a rollup file keeps.
#[derive(Debug, Clone, Default)]
pub struct RollupFilter {
    /// Buckets whose first instant is in `[start, end)`.
    pub buckets: Option<(i64, i64)>,
    /// Sorted series keys to keep; `None` keeps all.
    pub keys: Option<Arc<Vec<Bytes>>>,
}

/// Decodes a rollup file written at `res` over the table's `fields`, keeping the statistics
/// of `want` (numeric fields of the table, in this order) and the rows `filter` keeps. A
/// field the file lacks (added to the table later) reads as no values.
pub fn decode(
    path: &str,
    data: Bytes,
    res: i64,
    want: &[(String, FieldType)],
    filter: &RollupFilter,
) -> Result<PartialRun> {
    decode_cached(
        &CachedSst::decode(path, data)?,
        path,
        res,
        want,
        filter,
        None,
    )
}

/// [`decode`] of a file whose bytes and footer the data-file cache holds (a query reads the
/// same rollup files again and again; their footers are most of a small read's cost), its
/// row groups' columns taken from `cache` or decoded into it when one is given (then a
/// dashboard's repeated reads only filter).
pub fn decode_cached(
    file: &CachedSst,
    path: &str,
    res: i64,
    want: &[(String, FieldType)],
    filter: &RollupFilter,
    cache: Option<&DecodedCache>,
) -> Result<PartialRun> {
    let meta = file.meta.metadata();
    check_header(path, meta.file_metadata().key_value_metadata(), res)?;
    let file_schema = file.meta.schema().clone();
    let mut leaves = vec![0, 1, 2, 3, 4];
    for (name, _) in want {
        let first = super::partial::stat_column(name, STATS[0]);
        if let Ok(i) = file_schema.index_of(&first) {
            leaves.extend(i..i + STATS.len());
        }
    }
    // Root columns ascending (file order; `to_partial` finds the statistics by name).
    leaves.sort_unstable();
    leaves.dedup();
    let groups = row_groups(meta, filter);
    let mut batches = Vec::new();
    match cache {
        Some(cache) => {
            for rg in groups {
                let b = cache.row_group(path, file, rg, &leaves)?;
                batches.push(keep_rows(&b, filter)?);
            }
        }
        None => {
            let b = ParquetRecordBatchReaderBuilder::new_with_metadata(
                file.data.clone(),
                file.meta.clone(),
            );
            let mask = ProjectionMask::roots(b.parquet_schema(), leaves);
            let reader = b
                .with_row_groups(groups)
                .with_projection(mask)
                .with_batch_size(64 * 1024)
                .build()
                .map_err(|e| parquet_err(path, e))?;
            for batch in reader {
                batches.push(keep_rows(&batch?, filter)?);
            }
        }
    }
    let schema = match batches.first() {
        Some(b) => b.schema(),
        None => return Ok(empty(want)),
    };
    let batch = arrow::compute::concat_batches(&schema, &batches)?;
    let cols: Vec<ArrayRef> = batch
        .columns()
        .iter()
        .map(|c| float_codec::decode(c).unwrap_or_else(|| c.clone()))
        .collect();
    let fields: Vec<Field> = batch
        .schema()
        .fields()
        .iter()
        .zip(&cols)
        .map(|(f, c)| Field::new(f.name(), c.data_type().clone(), f.is_nullable()))
        .collect();
    let batch = RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)?;
    to_partial(path, &batch, want)
}

/// The empty partial run over `want`.
pub fn empty(want: &[(String, FieldType)]) -> PartialRun {
    PartialRun {
        keys: Arc::new(Vec::new()),
        batch: RecordBatch::new_empty(partial_schema(want)),
    }
}

/// The row groups whose key and bucket statistics overlap what `f` keeps (all of those
/// without statistics).
fn row_groups(meta: &parquet::file::metadata::ParquetMetaData, f: &RollupFilter) -> Vec<usize> {
    use parquet::file::statistics::Statistics;
    (0..meta.num_row_groups())
        .filter(|&i| {
            let rg = meta.row_group(i);
            let time_ok = match (f.buckets, rg.column(1).statistics()) {
                (Some((s, e)), Some(Statistics::Int64(st))) => match (st.min_opt(), st.max_opt()) {
                    (Some(lo), Some(hi)) => *hi >= s && *lo < e,
                    _ => true,
                },
                _ => true,
            };
            let key_ok = match (&f.keys, rg.column(0).statistics()) {
                (Some(keys), Some(Statistics::ByteArray(st))) => {
                    match (st.min_bytes_opt(), st.max_bytes_opt()) {
                        (Some(lo), Some(hi)) => {
                            let at = keys.partition_point(|k| k.as_ref() < lo);
                            keys.get(at).is_some_and(|k| k.as_ref() <= hi)
                        }
                        _ => true,
                    }
                }
                _ => true,
            };
            time_ok && key_ok
        })
        .collect()
}

fn check_header(path: &str, kv: Option<&Vec<KeyValue>>, res: i64) -> Result<()> {
    let get = |k: &str| {
        kv.and_then(|kv| kv.iter().find(|e| e.key == k))
            .and_then(|e| e.value.clone())
    };
    let bad = |reason: String| StorageError::Corrupt {
        path: path.to_string(),
        reason,
    };
    match get(FORMAT_KEY) {
        Some(v) if v == FORMAT_VERSION => {}
        Some(v) => {
            return Err(bad(format!(
                "rollup format version {v}, this build reads 1"
            )));
        }
        None => return Err(bad("not a rollup file (no tempora.rollup metadata)".into())),
    }
    match get(RESOLUTION_KEY).and_then(|v| v.parse::<i64>().ok()) {
        Some(r) if r == res => Ok(()),
        other => Err(bad(format!(
            "rollup file of resolution {other:?} ns where {res} ns was expected"
        ))),
    }
}

fn keep_rows(batch: &RecordBatch, f: &RollupFilter) -> Result<RecordBatch> {
    if f.buckets.is_none() && f.keys.is_none() {
        return Ok(batch.clone());
    }
    let keys = batch.column(0).as_binary::<i32>();
    let buckets = batch.column(1).as_primitive::<Int64Type>().values();
    let mut last: Option<(&[u8], bool)> = None;
    let keep: BooleanArray = (0..batch.num_rows())
        .map(|i| {
            let in_range = f
                .buckets
                .is_none_or(|(s, e)| buckets[i] >= s && buckets[i] < e);
            if !in_range {
                return Some(false);
            }
            let k = keys.value(i);
            let kept = match (&f.keys, last) {
                (None, _) => true,
                (Some(_), Some((lk, v))) if lk == k => v,
                (Some(want), _) => want.binary_search_by(|x| x.as_ref().cmp(k)).is_ok(),
            };
            last = Some((k, kept));
            Some(kept)
        })
        .collect();
    Ok(arrow::compute::filter_record_batch(batch, &keep)?)
}

/// The file's rows (already projected to `want`'s statistics) as a partial run over `want`.
fn to_partial(path: &str, batch: &RecordBatch, want: &[(String, FieldType)]) -> Result<PartialRun> {
    let schema = partial_schema(want);
    let keys_col = batch.column(0).as_binary::<i32>();
    let mut keys: Vec<Bytes> = Vec::new();
    let mut ranks = Vec::with_capacity(batch.num_rows());
    for i in 0..batch.num_rows() {
        let k = keys_col.value(i);
        if keys.last().is_none_or(|l| l.as_ref() != k) {
            if keys.last().is_some_and(|l| l.as_ref() > k) {
                return Err(StorageError::Corrupt {
                    path: path.to_string(),
                    reason: "rollup rows are not sorted by series key".into(),
                });
            }
            keys.push(Bytes::copy_from_slice(k));
        }
        ranks.push(keys.len() as u32 - 1);
    }
    let mut cols: Vec<ArrayRef> = vec![Arc::new(UInt32Array::from(ranks))];
    cols.extend(batch.columns()[1..LEAD].iter().cloned());
    let n = batch.num_rows();
    for (j, (name, _)) in want.iter().enumerate() {
        for (s, stat) in STATS.iter().enumerate() {
            let target = schema.field(LEAD + j * STATS.len() + s);
            debug_assert_eq!(target.name(), &super::partial::stat_column(name, stat));
            let col = match batch.schema().index_of(target.name()) {
                Ok(i) => batch.column(i).clone(),
                Err(_) if *stat == "count" => Arc::new(arrow::array::UInt64Array::from(vec![0; n])),
                Err(_) => arrow::array::new_null_array(target.data_type(), n),
            };
            if col.data_type() != target.data_type() {
                return Err(StorageError::Corrupt {
                    path: path.to_string(),
                    reason: format!("rollup column {} is {}", target.name(), col.data_type()),
                });
            }
            cols.push(col);
        }
    }
    Ok(PartialRun {
        keys: Arc::new(keys),
        batch: RecordBatch::try_new(schema, cols)?,
    })
}

#[cfg(test)]
mod tests {
    use arrow::array::{Float64Array, Int64Array, UInt64Array};

    use super::*;
    use crate::read::run::{SortedRun, run_schema};
    use crate::rollup::partial::from_run;

    fn fields() -> Vec<(String, FieldType)> {
        vec![("f".into(), FieldType::F64), ("i".into(), FieldType::I64)]
    }

    /// Three series, times 0..90 every 10, floats with two decimals and some NULLs.
    fn partials(res: i64) -> PartialRun {
        let (mut r, mut t, mut f, mut n) = (vec![], vec![], vec![], vec![]);
        for k in 0..3u32 {
            for s in 0..10i64 {
                r.push(k);
                t.push(s * 10);
                f.push((s % 4 != 0).then_some((k as f64) * 1.25 + s as f64 / 100.0));
                n.push(Some(s * 1000 - k as i64));
            }
        }
        let batch = RecordBatch::try_new(
            run_schema(&fields()),
            vec![
                Arc::new(UInt32Array::from(r)),
                Arc::new(Int64Array::from(t)),
                Arc::new(UInt64Array::from(vec![1u64; 30])),
                Arc::new(Float64Array::from(f)),
                Arc::new(Int64Array::from(n)),
            ],
        )
        .unwrap();
        let keys = (0..3u8).map(|k| Bytes::from(vec![b'k', k])).collect();
        let run = SortedRun {
            keys: Arc::new(keys),
            batch,
        };
        from_run(&run, &fields(), res).unwrap()
    }

    #[test]
    fn files_read_back_bit_for_bit_and_filtered() {
        let p = partials(30);
        let data = encode(&p, 30, 3).unwrap();
        let all = decode("r", data.clone(), 30, &fields(), &RollupFilter::default()).unwrap();
        assert_eq!(all.batch, p.batch, "every column back as written");
        assert_eq!(all.keys, p.keys);
        let keys = Arc::new(vec![Bytes::from(vec![b'k', 1])]);
        let some = decode(
            "r",
            data.clone(),
            30,
            &fields()[1..],
            &RollupFilter {
                buckets: Some((30, 90)),
                keys: Some(keys.clone()),
            },
        )
        .unwrap();
        assert_eq!(some.keys, keys);
        assert_eq!(some.buckets(), &[30, 60]);
        assert_eq!(
            some.batch.num_columns(),
            LEAD + STATS.len(),
            "one field's statistics"
        );
    }

    #[test]
    fn reads_through_the_decoded_cache_match_reads_without() {
        let p = partials(30);
        let data = encode(&p, 30, 3).unwrap();
        let file = CachedSst::decode("r", data.clone()).unwrap();
        let cache = DecodedCache::new(64 << 20);
        let keys = Arc::new(vec![Bytes::from(vec![b'k', 1])]);
        for (name, f) in [
            ("everything", RollupFilter::default()),
            (
                "one key, two buckets",
                RollupFilter {
                    buckets: Some((30, 90)),
                    keys: Some(keys),
                },
            ),
        ] {
            // The fields in the table's order and reversed (a query may ask in any order).
            let mut reversed = fields();
            reversed.reverse();
            for want in [fields(), reversed] {
                let plain = decode("r", data.clone(), 30, &want, &f).unwrap();
                for round in ["cold", "warm"] {
                    let got = decode_cached(&file, "r", 30, &want, &f, Some(&cache)).unwrap();
                    assert_eq!(got.batch, plain.batch, "{name}, {round}");
                    assert_eq!(got.keys, plain.keys, "{name}, {round}");
                }
            }
        }
        assert!(cache.hits.get() > 0, "the warm reads hit the cache");
    }

    #[test]
    fn wrong_files_are_refused_by_name() {
        let p = partials(30);
        let data = encode(&p, 30, 3).unwrap();
        let f = RollupFilter::default();
        for (name, bytes, res, words) in [
            ("another resolution", data.clone(), 60, "resolution"),
            ("torn", data.slice(..data.len() / 2), 30, "r.x"),
            (
                "not parquet",
                Bytes::from_static(b"hello, world"),
                30,
                "r.x",
            ),
        ] {
            let e = decode("r.x", bytes, res, &fields(), &f)
                .unwrap_err()
                .to_string();
            assert!(e.contains(words) && e.contains("r.x"), "{name}: {e}");
        }
        // A Parquet file that is not a rollup file.
        let mut plain = Vec::new();
        let b = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, false)])),
            vec![Arc::new(Int64Array::from(vec![1]))],
        )
        .unwrap();
        let mut w = ArrowWriter::try_new(&mut plain, b.schema(), None).unwrap();
        w.write(&b).unwrap();
        w.close().unwrap();
        let e = decode("r.x", Bytes::from(plain), 30, &fields(), &f)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a rollup file"), "{e}");
    }
}
