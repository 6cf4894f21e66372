//! Writing data files: one or more sorted runs appended, in key order, to one Parquet file.
//!
//! The file's columns (docs/format/data-files.md): `__primary_key` and one dictionary `Utf8`
//! column per tag, `time` and `__seq` (delta-encoded), then the fields: integers
//! delta-encoded, floats as `float_codec` chooses from the first run appended. All zstd.
//!
//! Invariants: runs are appended in key order (each run's first key after the previous run's
//! last); a run whose floats do not fit the representation the file chose ([`SstWriter::fits`])
//! is not appended, the caller starts a new file; the statistics cover every row appended.

use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray, BinaryArray, DictionaryArray, RecordBatch};
use arrow::datatypes::{DataType, Field, Float64Type, Schema, SchemaRef, TimeUnit, UInt32Type};
use bytes::Bytes;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;
use tempora_model::{FieldType, PRIMARY_KEY_COLUMN, SEQ_COLUMN, TIME_COLUMN};

use crate::error::{Result, StorageError};
use crate::files::float_codec::{self, FloatCodec};
use crate::files::sst::{SstStats, SstWriteOptions};
use crate::read::run::SortedRun;

/// Encodes a run as a Parquet file. `tags` are the table's tag names (columns written for them).
#[cfg(test)]
pub fn write_sst(
    run: &SortedRun,
    tags: &[String],
    fields: &[(String, FieldType)],
    o: &SstWriteOptions,
) -> Result<(Bytes, SstStats)> {
    assert!(run.num_rows() > 0, "no empty data files");
    let mut w = SstWriter::new(tags, fields, o);
    w.append(run)?;
    Ok(w.finish()?.expect("one run appended"))
}

/// A data file being written run by run.
pub struct SstWriter {
    tags: Vec<String>,
    fields: Vec<(String, FieldType)>,
    opts: SstWriteOptions,
    /// Float representations to use instead of choosing from the first run.
    preset: Option<Vec<Option<FloatCodec>>>,
    open: Option<Open>,
}

/// The file once its first run fixed the schema.
struct Open {
    writer: ArrowWriter<Vec<u8>>,
    schema: SchemaRef,
    codecs: Vec<Option<FloatCodec>>,
    stats: SstStats,
    keys: (Bytes, Bytes),
}

impl SstWriter {
    pub fn new(tags: &[String], fields: &[(String, FieldType)], o: &SstWriteOptions) -> Self {
        Self {
            tags: tags.to_vec(),
            fields: fields.to_vec(),
            opts: o.clone(),
            preset: None,
            open: None,
        }
    }

    /// A writer that takes `other`'s float representations and encodings (chosen from its
    /// first run) instead of choosing from its own: for a file of a subset of another's rows.
    pub fn follow(&mut self, other: &SstWriter) {
        if self.open.is_none() {
            self.preset = other.open.as_ref().map(|o| o.codecs.clone());
        }
    }

    /// Whether `run`'s float fields fit the representations the file chose (always, before
    /// the first run).
    pub fn fits(&self, run: &SortedRun) -> bool {
        let Some(open) = &self.open else {
            return true;
        };
        open.codecs.iter().enumerate().all(|(i, c)| match c {
            Some(c) => {
                let col = run.batch.column(3 + i);
                col.as_primitive_opt::<Float64Type>()
                    .is_none_or(|f| float_codec::fits(f, c.repr))
            }
            None => true,
        })
    }

    /// Appends a run whose keys follow those appended before; see [`SstWriter::fits`].
    pub fn append(&mut self, run: &SortedRun) -> Result<()> {
        if run.num_rows() == 0 {
            return Ok(());
        }
        assert!(self.fits(run), "the caller checks that a run fits");
        let codecs = match (&self.open, &self.preset) {
            (Some(o), _) => o.codecs.clone(),
            (None, Some(p)) => p.clone(),
            (None, None) => self.fields_codecs(run),
        };
        let batch = self.batch(run, &codecs)?;
        let (first, last) = (
            run.keys.first().expect("rows have keys").clone(),
            run.keys.last().expect("rows have keys").clone(),
        );
        let stats = run_stats(run);
        match &mut self.open {
            None => {
                let schema = batch.schema();
                let props = writer_props(&schema, &self.fields, &codecs, &self.opts)?;
                let writer =
                    ArrowWriter::try_new(Vec::new(), schema.clone(), Some(props)).map_err(perr)?;
                self.open = Some(Open {
                    writer,
                    schema,
                    codecs,
                    stats,
                    keys: (first, last),
                });
            }
            Some(open) => {
                assert!(open.keys.1 < first, "runs are appended in key order");
                let s = &mut open.stats;
                s.rows += stats.rows;
                s.min_time = s.min_time.min(stats.min_time);
                s.max_time = s.max_time.max(stats.max_time);
                s.min_seq = s.min_seq.min(stats.min_seq);
                s.max_seq = s.max_seq.max(stats.max_seq);
                open.keys.1 = last;
            }
        }
        let open = self.open.as_mut().expect("opened above");
        // The file's schema (its first run's) with this run's columns.
        let batch = RecordBatch::try_new(open.schema.clone(), batch.columns().to_vec())?;
        open.writer.write(&batch).map_err(perr)?;
        Ok(())
    }

    /// Bytes the file holds so far (written row groups; the one in progress is not counted).
    pub fn bytes_written(&self) -> usize {
        self.open.as_ref().map_or(0, |o| {
            o.writer.bytes_written() + o.writer.in_progress_size()
        })
    }

    /// The rows appended so far.
    pub fn rows(&self) -> u64 {
        self.open.as_ref().map_or(0, |o| o.stats.rows)
    }

    /// The file's smallest and largest key.
    pub fn key_range(&self) -> Option<(Bytes, Bytes)> {
        self.open.as_ref().map(|o| o.keys.clone())
    }

    /// The file's bytes and statistics; `None` when no row was appended.
    pub fn finish(self) -> Result<Option<(Bytes, SstStats)>> {
        let Some(open) = self.open else {
            return Ok(None);
        };
        let buf = open.writer.into_inner().map_err(perr)?;
        let size = buf.len() as u64;
        Ok(Some((Bytes::from(buf), SstStats { size, ..open.stats })))
    }

    fn fields_codecs(&self, run: &SortedRun) -> Vec<Option<FloatCodec>> {
        (0..self.fields.len())
            .map(|i| float_codec::choose(run.batch.column(3 + i), self.opts.zstd_level))
            .collect()
    }

    /// The run as the file's columns.
    fn batch(&self, run: &SortedRun, codecs: &[Option<FloatCodec>]) -> Result<RecordBatch> {
        let ranks = run.batch.column(0).as_primitive::<UInt32Type>().clone();
        let key_values = BinaryArray::from_iter_values(run.keys.iter().map(|k| k.as_ref()));
        let pk = DictionaryArray::<UInt32Type>::try_new(ranks.clone(), Arc::new(key_values))?;
        let mut schema_fields = vec![Field::new(
            PRIMARY_KEY_COLUMN,
            dict(DataType::Binary),
            false,
        )];
        let mut cols: Vec<ArrayRef> = vec![Arc::new(pk)];
        for (tag, values) in self.tags.iter().zip(run.tag_values(&self.tags)?) {
            let arr = DictionaryArray::<UInt32Type>::try_new(ranks.clone(), Arc::new(values))?;
            schema_fields.push(Field::new(tag, dict(DataType::Utf8), true));
            cols.push(Arc::new(arr));
        }
        cols.push(Arc::new(run.time_column()));
        schema_fields.push(Field::new(TIME_COLUMN, time_type(), false));
        cols.push(run.batch.column(2).clone());
        schema_fields.push(Field::new(SEQ_COLUMN, DataType::UInt64, false));
        for (i, ((name, _), codec)) in self.fields.iter().zip(codecs).enumerate() {
            let col = run.batch.column(3 + i);
            let col = codec.map_or_else(|| col.clone(), |c| float_codec::as_repr(col, c.repr));
            schema_fields.push(Field::new(name, col.data_type().clone(), true));
            cols.push(col);
        }
        let schema: SchemaRef = Arc::new(Schema::new(schema_fields));
        Ok(RecordBatch::try_new(schema, cols)?)
    }
}

fn run_stats(run: &SortedRun) -> SstStats {
    SstStats {
        rows: run.num_rows() as u64,
        min_time: *run.times().iter().min().expect("non-empty"),
        max_time: *run.times().iter().max().expect("non-empty"),
        max_seq: *run.seqs().iter().max().expect("non-empty"),
        min_seq: *run.seqs().iter().min().expect("non-empty"),
        size: 0,
    }
}

fn perr(e: parquet::errors::ParquetError) -> StorageError {
    StorageError::Parquet {
        path: "<new file>".into(),
        source: e,
    }
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
    codecs: &[Option<FloatCodec>],
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
    for ((name, ty), codec) in fields.iter().zip(codecs) {
        b = match (ty, codec) {
            (FieldType::F64, Some(c)) => {
                let path = ColumnPath::from(name.as_str());
                let (enc, dict) = c.encoding.parquet();
                b = b.set_column_dictionary_enabled(path.clone(), dict);
                match enc {
                    Some(e) => b.set_column_encoding(path, e),
                    None => b,
                }
            }
            (FieldType::I64 | FieldType::U64, _) => delta(b, name),
            _ => b,
        };
    }
    Ok(b.build())
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Float64Array, Int64Array, UInt32Array, UInt64Array};

    /// A run of one key `k` with float values `v` at times 0, 1, ...
    fn run(k: &str, v: &[f64]) -> SortedRun {
        let fields = [("v".to_string(), FieldType::F64)];
        let n = v.len();
        let batch = RecordBatch::try_new(
            crate::read::run::run_schema(&fields),
            vec![
                Arc::new(UInt32Array::from(vec![0; n])),
                Arc::new(Int64Array::from_iter_values(0..n as i64)),
                Arc::new(UInt64Array::from(vec![1; n])),
                Arc::new(Float64Array::from(v.to_vec())),
            ],
        )
        .unwrap();
        SortedRun {
            keys: Arc::new(vec![Bytes::from(k.to_string())]),
            batch,
        }
    }

    fn writer() -> SstWriter {
        let o = SstWriteOptions {
            row_group_rows: 1024,
            zstd_level: 3,
        };
        SstWriter::new(&[], &[("v".to_string(), FieldType::F64)], &o)
    }

    #[test]
    fn runs_append_while_their_floats_fit_the_first_runs_choice() {
        type Case = (&'static str, Vec<f64>, Vec<f64>, bool);
        let cases: Vec<Case> = vec![
            (
                "one decimal, then one decimal",
                vec![1.5, 2.5],
                vec![3.5],
                true,
            ),
            ("one decimal, then two", vec![1.5, 2.5], vec![3.25], false),
            (
                "doubles take anything",
                vec![std::f64::consts::PI],
                vec![0.1, 7.0],
                true,
            ),
            (
                "integral, then a fraction",
                vec![1.0, 2.0],
                vec![2.5],
                false,
            ),
        ];
        for (name, first, second, fits) in cases {
            let mut w = writer();
            w.append(&run("a", &first)).unwrap();
            let next = run("b", &second);
            assert_eq!(w.fits(&next), fits, "{name}");
            if fits {
                w.append(&next).unwrap();
            }
            let (data, stats) = w.finish().unwrap().unwrap();
            let want = first.len() + if fits { second.len() } else { 0 };
            assert_eq!(stats.rows as usize, want, "{name}");
            assert_eq!(stats.size as usize, data.len(), "{name}");
        }
    }

    #[test]
    fn a_follower_takes_the_leaders_choice() {
        let mut data = writer();
        data.append(&run("a", &[1.25, 2.5])).unwrap();
        let mut last = writer();
        last.follow(&data);
        // Alone, 2.5 would be chosen as one decimal; following, it takes two.
        last.append(&run("a", &[2.5])).unwrap();
        assert!(last.fits(&run("b", &[3.75])), "two decimals fit");
        let empty = writer();
        let mut free = writer();
        free.follow(&empty);
        free.append(&run("a", &[2.5])).unwrap();
        assert!(
            !free.fits(&run("b", &[3.75])),
            "nothing to follow: its own choice"
        );
    }

    #[test]
    #[should_panic(expected = "key order")]
    fn runs_out_of_key_order_are_refused() {
        let mut w = writer();
        w.append(&run("b", &[1.0])).unwrap();
        w.append(&run("a", &[1.0])).unwrap();
    }
}
