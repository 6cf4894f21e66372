//! Arrow batches as PostgreSQL `DataRow`s, a column resolved once per batch.
//!
//! arrow-pg encodes value by value: for every value it matches the column's Arrow type,
//! downcasts the array, formats a timestamp through chrono's strftime and, for a timestamp with
//! a zone, parses the zone's name again. On TSBS high-cpu-all (45,000 rows of 21 columns) that
//! was a third of the server's time (docs/benchmarks.md). Here each column is resolved once per
//! batch into a [`Col`] (the downcast array and how to write it) and a batch's rows are written
//! into one buffer, each `DataRow` a slice of it.
//!
//! Invariants:
//! - The bytes are arrow-pg's, for every type and format option: the common types are written
//!   here (integers, floats, booleans, strings, dictionaries of them, timestamps in the ISO
//!   `DateStyle` with no zone or UTC), everything else value by value through arrow-pg's own
//!   `encode_value`. The tests compare the two byte for byte over a table of columns.
//! - A column is resolved from its Arrow type *and* the PostgreSQL type and format the client
//!   was told (`FieldInfo`); when those are not the pair this module writes, arrow-pg writes it.
//! - Large batches are encoded on the blocking pool, not on the async runtime.

use std::sync::Arc;

use bytes::{BufMut, BytesMut};
use chrono::{DateTime, Datelike, NaiveDateTime, Timelike};
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Float32Array, Float64Array, Int16Array, Int32Array,
    Int64Array, RecordBatch,
};
use datafusion::arrow::datatypes::{DataType, Field, TimeUnit};
use datafusion_postgres::arrow_pg::encoder::encode_value;
use datafusion_postgres::pgwire;
use futures::{Stream, StreamExt};
use pgwire::api::Type;
use pgwire::api::results::{DataRowEncoder, FieldFormat, FieldInfo, QueryResponse};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::data::DataRow;
use pgwire::types::ToSqlText;
use pgwire::types::format::FormatOptions;

/// Batches with more rows than this are encoded on the blocking pool.
pub const INLINE_ROWS_MAX: usize = 4096;

/// A query's result as a pgwire response: `batches` are encoded one at a time as the client
/// reads, so the encoded rows of at most one batch are held.
pub fn query_response<S>(fields: Arc<Vec<FieldInfo>>, batches: S) -> QueryResponse
where
    S: Stream<Item = PgWireResult<RecordBatch>> + Send + 'static,
{
    let f = fields.clone();
    let rows = batches
        .then(move |b| {
            let f = f.clone();
            async move {
                let b = b?;
                if b.num_rows() <= INLINE_ROWS_MAX {
                    return encode_batch(&f, &b);
                }
                tokio::task::spawn_blocking(move || encode_batch(&f, &b))
                    .await
                    .map_err(|e| PgWireError::ApiError(Box::new(e)))?
            }
        })
        .flat_map(|rows: PgWireResult<Vec<DataRow>>| {
            let items: Vec<PgWireResult<DataRow>> = match rows {
                Ok(rows) => rows.into_iter().map(Ok).collect(),
                Err(e) => vec![Err(e)],
            };
            futures::stream::iter(items)
        });
    QueryResponse::new(fields, rows)
}

/// The rows of `batch`, whose columns are described to the client by `fields`.
pub fn encode_batch(fields: &[FieldInfo], batch: &RecordBatch) -> PgWireResult<Vec<DataRow>> {
    assert_eq!(fields.len(), batch.num_columns(), "one field per column");
    let schema = batch.schema();
    let mut cols: Vec<Col> = (0..batch.num_columns())
        .map(|i| Col::new(batch.column(i), schema.field(i), &fields[i]))
        .collect();
    let n = batch.num_rows();
    let mut buf = BytesMut::with_capacity(n * fields.len() * 12);
    let mut rows = Vec::with_capacity(n);
    for row in 0..n {
        for col in &mut cols {
            col.write(row, &mut buf)?;
        }
        rows.push(DataRow::new(buf.split(), fields.len() as i16));
    }
    Ok(rows)
}

/// How one column of one batch is written.
enum Col<'a> {
    I16(&'a Int16Array, FieldFormat),
    I32(&'a Int32Array, FieldFormat),
    I64(&'a Int64Array, FieldFormat),
    F32(&'a Float32Array, Floats<'a>),
    F64(&'a Float64Array, Floats<'a>),
    Bool(&'a BooleanArray, FieldFormat),
    Str(&'a dyn Array, StrValues<'a>),
    Time(Times<'a>),
    /// A dictionary: its keys (`None` for a null key) and its values, resolved as a column.
    Dict(Vec<Option<usize>>, Box<Col<'a>>),
    Other(Fallback<'a>),
}

/// Floats: binary, or text with the client's `extra_float_digits` (through pgwire's formatter).
struct Floats<'a> {
    format: FieldFormat,
    ty: &'a Type,
    options: &'a FormatOptions,
}

/// A string column's values, whatever its offsets.
enum StrValues<'a> {
    Utf8(&'a datafusion::arrow::array::StringArray),
    Large(&'a datafusion::arrow::array::LargeStringArray),
    View(&'a datafusion::arrow::array::StringViewArray),
}

/// A timestamp column: its raw values and unit, and whether it is written with a `+00` zone.
struct Times<'a> {
    array: &'a dyn Array,
    values: &'a [i64],
    unit: TimeUnit,
    zoned: bool,
    format: FieldFormat,
    fallback: Fallback<'a>,
}

/// arrow-pg writing one value at a time, into its own one-field row.
struct Fallback<'a> {
    array: &'a ArrayRef,
    field: Field,
    pg: &'a FieldInfo,
    scratch: DataRowEncoder,
}

impl<'a> Fallback<'a> {
    fn new(array: &'a ArrayRef, field: &Field, pg: &'a FieldInfo) -> Self {
        Self {
            array,
            field: field.clone(),
            pg,
            scratch: DataRowEncoder::new(Arc::new(vec![pg.clone()])),
        }
    }

    fn write(&mut self, row: usize, buf: &mut BytesMut) -> PgWireResult<()> {
        encode_value(&mut self.scratch, self.array, row, &self.field, self.pg)?;
        buf.extend_from_slice(&self.scratch.take_row().data);
        Ok(())
    }
}

impl<'a> Col<'a> {
    fn new(array: &'a ArrayRef, field: &Field, pg: &'a FieldInfo) -> Col<'a> {
        Self::resolve(array, field, pg)
            .unwrap_or_else(|| Col::Other(Fallback::new(array, field, pg)))
    }

    /// The column's writer, or `None` when arrow-pg writes it.
    fn resolve(array: &'a ArrayRef, field: &Field, pg: &'a FieldInfo) -> Option<Col<'a>> {
        let (ty, format) = (pg.datatype(), pg.format());
        let floats = || Floats {
            format,
            ty,
            options: pg.format_options(),
        };
        Some(match (array.data_type(), ty) {
            (DataType::Int16, &Type::INT2) => Col::I16(array.as_primitive(), format),
            (DataType::Int32, &Type::INT4) => Col::I32(array.as_primitive(), format),
            (DataType::Int64, &Type::INT8) => Col::I64(array.as_primitive(), format),
            (DataType::Float32, &Type::FLOAT4) => Col::F32(array.as_primitive(), floats()),
            (DataType::Float64, &Type::FLOAT8) => Col::F64(array.as_primitive(), floats()),
            (DataType::Boolean, &Type::BOOL) => Col::Bool(array.as_boolean(), format),
            (DataType::Utf8, &Type::TEXT) => Col::Str(array, StrValues::Utf8(array.as_string())),
            (DataType::LargeUtf8, &Type::TEXT) => {
                Col::Str(array, StrValues::Large(array.as_string()))
            }
            (DataType::Utf8View, &Type::TEXT) => {
                Col::Str(array, StrValues::View(array.as_string_view()))
            }
            (DataType::Timestamp(unit, zone), &Type::TIMESTAMP | &Type::TIMESTAMPTZ) => {
                let zoned = match zone.as_deref() {
                    None => false,
                    Some("UTC" | "+00:00") => true,
                    Some(_) => return None,
                };
                if zoned != (*ty == Type::TIMESTAMPTZ)
                    || (format == FieldFormat::Text && !iso_date_style(pg.format_options()))
                {
                    return None;
                }
                Col::Time(Times {
                    array: array.as_ref(),
                    values: timestamp_values(array, *unit),
                    unit: *unit,
                    zoned,
                    format,
                    fallback: Fallback::new(array, field, pg),
                })
            }
            (DataType::Dictionary(_, value_type), _) => {
                let dict = array.as_any_dictionary_opt()?;
                let keys = dict.normalized_keys();
                let key_nulls = dict.keys().logical_nulls();
                let keys = keys
                    .into_iter()
                    .enumerate()
                    .map(|(i, k)| {
                        key_nulls
                            .as_ref()
                            .is_none_or(|n| n.is_valid(i))
                            .then_some(k)
                    })
                    .collect();
                let inner = Field::new(pg.name(), value_type.as_ref().clone(), true);
                Col::Dict(keys, Box::new(Col::new(dict.values(), &inner, pg)))
            }
            _ => return None,
        })
    }

    fn write(&mut self, row: usize, buf: &mut BytesMut) -> PgWireResult<()> {
        match self {
            Col::I16(a, f) => write_int(a, row, *f, buf, |v, b| b.put_i16(v)),
            Col::I32(a, f) => write_int(a, row, *f, buf, |v, b| b.put_i32(v)),
            Col::I64(a, f) => write_int(a, row, *f, buf, |v, b| b.put_i64(v)),
            Col::F32(a, f) => write_float(a, row, f, buf, |v, b| b.put_f32(v))?,
            Col::F64(a, f) => write_float(a, row, f, buf, |v, b| b.put_f64(v))?,
            Col::Bool(a, f) => match a.is_valid(row).then(|| a.value(row)) {
                None => buf.put_i32(-1),
                Some(v) if *f == FieldFormat::Text => put_value(buf, if v { b"t" } else { b"f" }),
                Some(v) => put_value(buf, &[v as u8]),
            },
            Col::Str(a, values) => {
                if a.is_null(row) {
                    buf.put_i32(-1);
                } else {
                    let s = match values {
                        StrValues::Utf8(v) => v.value(row),
                        StrValues::Large(v) => v.value(row),
                        StrValues::View(v) => v.value(row),
                    };
                    put_value(buf, s.as_bytes());
                }
            }
            Col::Time(t) => t.write(row, buf)?,
            Col::Dict(keys, inner) => match keys[row] {
                None => buf.put_i32(-1),
                Some(k) => inner.write(k, buf)?,
            },
            Col::Other(f) => f.write(row, buf)?,
        }
        Ok(())
    }
}

/// A value: its length, then its bytes.
fn put_value(buf: &mut BytesMut, bytes: &[u8]) {
    buf.put_i32(bytes.len() as i32);
    buf.put_slice(bytes);
}

/// Writes a value of unknown length: a length placeholder, the bytes `f` writes, the length.
fn put_with<F: FnOnce(&mut BytesMut)>(buf: &mut BytesMut, f: F) {
    let at = buf.len();
    buf.put_i32(0);
    f(buf);
    let len = (buf.len() - at - 4) as i32;
    buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
}

fn write_int<T>(
    a: &datafusion::arrow::array::PrimitiveArray<T>,
    row: usize,
    format: FieldFormat,
    buf: &mut BytesMut,
    binary: impl FnOnce(T::Native, &mut BytesMut),
) where
    T: datafusion::arrow::datatypes::ArrowPrimitiveType,
    T::Native: itoa::Integer,
{
    if a.is_null(row) {
        return buf.put_i32(-1);
    }
    let v = a.value(row);
    if format == FieldFormat::Text {
        put_value(buf, itoa::Buffer::new().format(v).as_bytes());
    } else {
        put_with(buf, |b| binary(v, b));
    }
}

fn write_float<T>(
    a: &datafusion::arrow::array::PrimitiveArray<T>,
    row: usize,
    f: &Floats,
    buf: &mut BytesMut,
    binary: impl FnOnce(T::Native, &mut BytesMut),
) -> PgWireResult<()>
where
    T: datafusion::arrow::datatypes::ArrowPrimitiveType,
    T::Native: ToSqlText,
{
    if a.is_null(row) {
        buf.put_i32(-1);
        return Ok(());
    }
    let v = a.value(row);
    if f.format != FieldFormat::Text {
        put_with(buf, |b| binary(v, b));
        return Ok(());
    }
    let mut err = None;
    put_with(buf, |b| err = v.to_sql_text(f.ty, b, f.options).err());
    err.map_or(Ok(()), |e| Err(PgWireError::ApiError(e)))
}

/// Whether timestamps are written in the ISO style (pgwire's reading of `DateStyle`: its first
/// part, and anything it does not know is ISO).
fn iso_date_style(options: &FormatOptions) -> bool {
    let style = options
        .date_style
        .split_once(", ")
        .map_or(options.date_style.as_str(), |(s, _)| s);
    !matches!(
        style.trim().to_ascii_lowercase().as_str(),
        "sql" | "german" | "postgres"
    )
}

fn timestamp_values(array: &ArrayRef, unit: TimeUnit) -> &[i64] {
    use datafusion::arrow::datatypes as t;
    match unit {
        TimeUnit::Second => array.as_primitive::<t::TimestampSecondType>().values(),
        TimeUnit::Millisecond => array.as_primitive::<t::TimestampMillisecondType>().values(),
        TimeUnit::Microsecond => array.as_primitive::<t::TimestampMicrosecondType>().values(),
        TimeUnit::Nanosecond => array.as_primitive::<t::TimestampNanosecondType>().values(),
    }
}

/// 2000-01-01T00:00:00, PostgreSQL's binary epoch, in Unix seconds.
const PG_EPOCH_SECS: i64 = 946_684_800;

impl Times<'_> {
    fn write(&mut self, row: usize, buf: &mut BytesMut) -> PgWireResult<()> {
        if self.array.is_null(row) {
            buf.put_i32(-1);
            return Ok(());
        }
        let Some(t) = self.datetime(self.values[row]) else {
            return self.fallback.write(row, buf);
        };
        if self.format == FieldFormat::Text {
            if !(0..=9999).contains(&t.year()) {
                return self.fallback.write(row, buf);
            }
            let text = iso_text(&t);
            put_value(buf, &text[..if self.zoned { 29 } else { 26 }]);
            return Ok(());
        }
        let pg_epoch = DateTime::from_timestamp(PG_EPOCH_SECS, 0)
            .expect("in range")
            .naive_utc();
        match t.signed_duration_since(pg_epoch).num_microseconds() {
            Some(us) => put_value(buf, &us.to_be_bytes()),
            None => return self.fallback.write(row, buf),
        }
        Ok(())
    }

    /// The value as a UTC date and time (arrow's own conversion: floor to seconds).
    fn datetime(&self, v: i64) -> Option<NaiveDateTime> {
        let per_sec: i64 = match self.unit {
            TimeUnit::Second => 1,
            TimeUnit::Millisecond => 1_000,
            TimeUnit::Microsecond => 1_000_000,
            TimeUnit::Nanosecond => 1_000_000_000,
        };
        let nanos = v.rem_euclid(per_sec) * (1_000_000_000 / per_sec);
        DateTime::from_timestamp(v.div_euclid(per_sec), nanos as u32).map(|d| d.naive_utc())
    }
}

/// `YYYY-MM-DD HH:MM:SS.ffffff+00`: chrono's `%Y-%m-%d %H:%M:%S%.6f%:::z` (pgwire's ISO format
/// with a zone) for a year of four digits and a zero offset, microseconds truncated. Without a
/// zone, its first 26 bytes.
fn iso_text(t: &NaiveDateTime) -> [u8; 29] {
    let mut out = *b"0000-00-00 00:00:00.000000+00";
    let mut put = |at: usize, width: usize, mut v: u32| {
        for i in (at..at + width).rev() {
            out[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, 4, t.year() as u32);
    put(5, 2, t.month());
    put(8, 2, t.day());
    put(11, 2, t.hour());
    put(14, 2, t.minute());
    put(17, 2, t.second());
    put(20, 6, (t.nanosecond() % 1_000_000_000) / 1_000);
    out
}

/// A DataFrame's result as a pgwire response in `format`, with the client's format options.
pub async fn dataframe_response<C: pgwire::api::ClientInfo + ?Sized>(
    client: &C,
    df: datafusion::dataframe::DataFrame,
    format: &pgwire::api::portal::Format,
) -> PgWireResult<QueryResponse> {
    let opts = Arc::new(FormatOptions::from_client_metadata(client.metadata()));
    let fields = datafusion_postgres::arrow_pg::datatypes::arrow_schema_to_pg_fields(
        df.schema().as_arrow(),
        format,
        Some(opts),
    )?;
    let stream = df
        .execute_stream()
        .await
        .map_err(|e| PgWireError::ApiError(Box::new(e)))?;
    let batches = stream.map(|b| b.map_err(|e| PgWireError::ApiError(Box::new(e))));
    Ok(query_response(Arc::new(fields), batches))
}

#[cfg(test)]
#[path = "pg_encode_tests.rs"]
mod tests;
