//! Arrow batches as PostgreSQL `DataRow`s, a column resolved once per batch.
//!
//! arrow-pg encodes value by value: for every value it matches the column's Arrow type,
//! downcasts the array, formats a timestamp through chrono's strftime and, for a timestamp with
//! a zone, parses the zone's name again. On TSBS high-cpu-all (45,000 rows of 21 columns) that
//! was a third of the server's time (docs/benchmarks.md). Here each column is resolved once per
//! batch into a [`Col`] (the downcast array and how to write it) and a batch's rows are written
//! into one buffer, each `DataRow` a slice of it. Strings are copied from their offsets and
//! bytes, timestamps' dates formatted once per day, and lengths written as 4-byte stores.
//!
//! Invariants:
//! - The bytes are arrow-pg's, for every type and format option: the common types are written
//!   here (integers, floats, booleans, strings, dictionaries of them, timestamps in the ISO
//!   `DateStyle` with no zone or UTC), everything else value by value through arrow-pg's own
//!   `encode_value`. The tests compare the two byte for byte over a table of columns.
//! - A column is resolved from its Arrow type *and* the PostgreSQL type and format the client
//!   was told (`FieldInfo`); when those are not the pair this module writes, arrow-pg writes it.
//! - Large batches are encoded on the blocking pool, not on the async runtime, in slices of
//!   [`ENCODE_CHUNK_ROWS`]: the next slice is encoded while the connection sends one, so
//!   encoding and sending overlap and at most [`ENCODE_AHEAD`] slices' rows are held. Rows keep
//!   their order.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use chrono::{DateTime, Datelike, NaiveDate};
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Float32Array, Float64Array, Int16Array, Int32Array,
    Int64Array, RecordBatch,
};
use datafusion::arrow::buffer::NullBuffer;
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

/// A batch is encoded in slices of at most this many rows, one blocking-pool task each.
pub const ENCODE_CHUNK_ROWS: usize = 8192;

/// Slices encoded at once, the one being sent included: while the connection sends one
/// slice's rows, the next is encoded on another thread. The encoded rows of at most this many
/// slices are held.
pub const ENCODE_AHEAD: usize = 2;

/// A query's result as a pgwire response: `batches` are cut into slices of at most
/// [`ENCODE_CHUNK_ROWS`] and encoded as the client reads, the next slice while one is sent, so
/// the encoded rows of at most [`ENCODE_AHEAD`] slices are held.
pub fn query_response<S>(fields: Arc<Vec<FieldInfo>>, batches: S) -> QueryResponse
where
    S: Stream<Item = PgWireResult<RecordBatch>> + Send + 'static,
{
    let f = fields.clone();
    let rows = batches
        .flat_map(|b| futures::stream::iter(slices(b)))
        .map(move |b| {
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
        .buffered(ENCODE_AHEAD)
        .flat_map(|rows: PgWireResult<Vec<DataRow>>| {
            let items: Vec<PgWireResult<DataRow>> = match rows {
                Ok(rows) => rows.into_iter().map(Ok).collect(),
                Err(e) => vec![Err(e)],
            };
            futures::stream::iter(items)
        });
    QueryResponse::new(fields, rows)
}

/// `batch` as slices of at most [`ENCODE_CHUNK_ROWS`] rows (no copy); an error as itself.
fn slices(batch: PgWireResult<RecordBatch>) -> Vec<PgWireResult<RecordBatch>> {
    match batch {
        Ok(b) if b.num_rows() > ENCODE_CHUNK_ROWS => (0..b.num_rows())
            .step_by(ENCODE_CHUNK_ROWS)
            .map(|at| Ok(b.slice(at, ENCODE_CHUNK_ROWS.min(b.num_rows() - at))))
            .collect(),
        other => vec![other],
    }
}

/// The rows of `batch`, whose columns are described to the client by `fields`.
pub fn encode_batch(fields: &[FieldInfo], batch: &RecordBatch) -> PgWireResult<Vec<DataRow>> {
    assert_eq!(fields.len(), batch.num_columns(), "one field per column");
    let schema = batch.schema();
    let mut cols: Vec<Col> = (0..batch.num_columns())
        .map(|i| Col::new(batch.column(i), schema.field(i), &fields[i]))
        .collect();
    let n = batch.num_rows();
    let mut buf = Vec::with_capacity(n * fields.len() * 12);
    let mut ends = Vec::with_capacity(n);
    for row in 0..n {
        for col in &mut cols {
            col.write(row, &mut buf)?;
        }
        ends.push(buf.len());
    }
    Ok(split_rows(buf, &ends, fields.len() as i16))
}

/// `buf` cut at `ends` into one `DataRow` each, without copying.
fn split_rows(buf: Vec<u8>, ends: &[usize], field_count: i16) -> Vec<DataRow> {
    let mut all = BytesMut::from(Bytes::from(buf));
    let mut start = 0;
    ends.iter()
        .map(|&end| {
            let row = all.split_to(end - start);
            start = end;
            DataRow::new(row, field_count)
        })
        .collect()
}

/// How one column of one batch is written.
enum Col<'a> {
    I16(&'a Int16Array, FieldFormat),
    I32(&'a Int32Array, FieldFormat),
    I64(&'a Int64Array, FieldFormat),
    F32(&'a Float32Array, Floats<'a>),
    F64(&'a Float64Array, Floats<'a>),
    Bool(&'a BooleanArray, FieldFormat),
    Str(Option<&'a NullBuffer>, StrValues<'a>),
    Time(Times<'a>),
    /// A dictionary: its keys (`None` for a null key) and its values, resolved as a column.
    Dict(Vec<Option<usize>>, Box<Col<'a>>),
    Other(Fallback<'a>),
}

/// Floats: binary, or text with the client's `extra_float_digits` (through pgwire's formatter,
/// into `scratch`).
struct Floats<'a> {
    format: FieldFormat,
    ty: &'a Type,
    options: &'a FormatOptions,
    scratch: BytesMut,
}

/// A string column's values, whatever its offsets: offsets and bytes read directly.
enum StrValues<'a> {
    Utf8(&'a [i32], &'a [u8]),
    Large(&'a [i64], &'a [u8]),
    View(&'a datafusion::arrow::array::StringViewArray),
}

impl StrValues<'_> {
    fn value(&self, row: usize) -> &[u8] {
        match self {
            StrValues::Utf8(o, data) => &data[o[row] as usize..o[row + 1] as usize],
            StrValues::Large(o, data) => &data[o[row] as usize..o[row + 1] as usize],
            StrValues::View(v) => v.value(row).as_bytes(),
        }
    }
}

/// A timestamp column: its raw values and unit, and whether it is written with a `+00` zone.
/// `day` caches the text of the last date written (rows of one day share it).
struct Times<'a> {
    nulls: Option<&'a NullBuffer>,
    values: &'a [i64],
    unit: TimeUnit,
    zoned: bool,
    format: FieldFormat,
    day: Option<(i64, Option<[u8; 10]>)>,
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

    fn write(&mut self, row: usize, buf: &mut Vec<u8>) -> PgWireResult<()> {
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
            scratch: BytesMut::new(),
        };
        let str_col = |values| Col::Str(array.nulls(), values);
        Some(match (array.data_type(), ty) {
            (DataType::Int16, &Type::INT2) => Col::I16(array.as_primitive(), format),
            (DataType::Int32, &Type::INT4) => Col::I32(array.as_primitive(), format),
            (DataType::Int64, &Type::INT8) => Col::I64(array.as_primitive(), format),
            (DataType::Float32, &Type::FLOAT4) => Col::F32(array.as_primitive(), floats()),
            (DataType::Float64, &Type::FLOAT8) => Col::F64(array.as_primitive(), floats()),
            (DataType::Boolean, &Type::BOOL) => Col::Bool(array.as_boolean(), format),
            (DataType::Utf8, &Type::TEXT) => {
                let a = array.as_string::<i32>();
                str_col(StrValues::Utf8(a.value_offsets(), a.value_data()))
            }
            (DataType::LargeUtf8, &Type::TEXT) => {
                let a = array.as_string::<i64>();
                str_col(StrValues::Large(a.value_offsets(), a.value_data()))
            }
            (DataType::Utf8View, &Type::TEXT) => str_col(StrValues::View(array.as_string_view())),
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
                    nulls: array.nulls(),
                    values: timestamp_values(array, *unit),
                    unit: *unit,
                    zoned,
                    format,
                    day: None,
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

    fn write(&mut self, row: usize, buf: &mut Vec<u8>) -> PgWireResult<()> {
        match self {
            Col::I16(a, f) => write_int(a, row, *f, buf, |v, b| put_value(b, &v.to_be_bytes())),
            Col::I32(a, f) => write_int(a, row, *f, buf, |v, b| put_value(b, &v.to_be_bytes())),
            Col::I64(a, f) => write_int(a, row, *f, buf, |v, b| put_value(b, &v.to_be_bytes())),
            Col::F32(a, f) => write_float(a, row, f, buf, |v, b| put_value(b, &v.to_be_bytes()))?,
            Col::F64(a, f) => write_float(a, row, f, buf, |v, b| put_value(b, &v.to_be_bytes()))?,
            Col::Bool(a, f) => match a.is_valid(row).then(|| a.value(row)) {
                None => put_null(buf),
                Some(v) if *f == FieldFormat::Text => put_value(buf, if v { b"t" } else { b"f" }),
                Some(v) => put_value(buf, &[v as u8]),
            },
            Col::Str(nulls, values) => match nulls {
                Some(n) if n.is_null(row) => put_null(buf),
                _ => put_value(buf, values.value(row)),
            },
            Col::Time(t) => t.write(row, buf)?,
            Col::Dict(keys, inner) => match keys[row] {
                None => put_null(buf),
                Some(k) => inner.write(k, buf)?,
            },
            Col::Other(f) => f.write(row, buf)?,
        }
        Ok(())
    }
}

/// A value: its length, then its bytes.
#[inline]
fn put_value(buf: &mut Vec<u8>, bytes: &[u8]) {
    buf.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
    buf.extend_from_slice(bytes);
}

/// A NULL: length -1 and no bytes.
#[inline]
fn put_null(buf: &mut Vec<u8>) {
    buf.extend_from_slice(&(-1i32).to_be_bytes());
}

fn write_int<T>(
    a: &datafusion::arrow::array::PrimitiveArray<T>,
    row: usize,
    format: FieldFormat,
    buf: &mut Vec<u8>,
    binary: impl FnOnce(T::Native, &mut Vec<u8>),
) where
    T: datafusion::arrow::datatypes::ArrowPrimitiveType,
    T::Native: itoa::Integer,
{
    if a.is_null(row) {
        return put_null(buf);
    }
    let v = a.value(row);
    if format == FieldFormat::Text {
        put_value(buf, itoa::Buffer::new().format(v).as_bytes());
    } else {
        binary(v, buf);
    }
}

fn write_float<T>(
    a: &datafusion::arrow::array::PrimitiveArray<T>,
    row: usize,
    f: &mut Floats,
    buf: &mut Vec<u8>,
    binary: impl FnOnce(T::Native, &mut Vec<u8>),
) -> PgWireResult<()>
where
    T: datafusion::arrow::datatypes::ArrowPrimitiveType,
    T::Native: ToSqlText + crate::pg_float::PgFloat,
{
    if a.is_null(row) {
        put_null(buf);
        return Ok(());
    }
    let v = a.value(row);
    if f.format != FieldFormat::Text {
        binary(v, buf);
        return Ok(());
    }
    if f.options.extra_float_digits >= 1 {
        // PostgreSQL's shortest text (`3`, `1e+20`), not ryu's (`3.0`, `1e20`).
        put_value(buf, crate::pg_float::PgFloat::pg_text(v).as_bytes());
        return Ok(());
    }
    f.scratch.clear();
    v.to_sql_text(f.ty, &mut f.scratch, f.options)
        .map_err(PgWireError::ApiError)?;
    put_value(buf, &f.scratch);
    Ok(())
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

const SECS_PER_DAY: i64 = 86_400;

impl Times<'_> {
    fn write(&mut self, row: usize, buf: &mut Vec<u8>) -> PgWireResult<()> {
        if self.nulls.is_some_and(|n| n.is_null(row)) {
            put_null(buf);
            return Ok(());
        }
        let (secs, nanos) = self.split(self.values[row]);
        if self.format == FieldFormat::Text {
            let Some(date) = self.date_text(secs.div_euclid(SECS_PER_DAY)) else {
                return self.fallback.write(row, buf);
            };
            let text = iso_text(date, secs.rem_euclid(SECS_PER_DAY) as u32, nanos);
            put_value(buf, &text[..if self.zoned { 29 } else { 26 }]);
            return Ok(());
        }
        let pg_epoch = DateTime::from_timestamp(PG_EPOCH_SECS, 0)
            .expect("in range")
            .naive_utc();
        let t = DateTime::from_timestamp(secs, nanos).map(|d| d.naive_utc());
        match t.and_then(|t| t.signed_duration_since(pg_epoch).num_microseconds()) {
            Some(us) => put_value(buf, &us.to_be_bytes()),
            None => return self.fallback.write(row, buf),
        }
        Ok(())
    }

    /// The value as whole seconds and nanoseconds (arrow's own conversion: floor to seconds).
    fn split(&self, v: i64) -> (i64, u32) {
        let per_sec: i64 = match self.unit {
            TimeUnit::Second => 1,
            TimeUnit::Millisecond => 1_000,
            TimeUnit::Microsecond => 1_000_000,
            TimeUnit::Nanosecond => 1_000_000_000,
        };
        let nanos = v.rem_euclid(per_sec) * (1_000_000_000 / per_sec);
        (v.div_euclid(per_sec), nanos as u32)
    }

    /// `YYYY-MM-DD` of a day counted from 1970-01-01, or `None` when chrono has no such date or
    /// its year is not of four digits (arrow-pg writes those). Cached for the last day asked.
    fn date_text(&mut self, day: i64) -> Option<[u8; 10]> {
        if let Some((d, text)) = self.day
            && d == day
        {
            return text;
        }
        let date = i32::try_from(day)
            .ok()
            .and_then(|d| d.checked_add(719_163))
            .and_then(NaiveDate::from_num_days_from_ce_opt)
            .filter(|date| (0..=9999).contains(&date.year()));
        let text = date.map(|date| {
            let mut out = *b"0000-00-00";
            put_digits(&mut out[0..4], date.year() as u32);
            put_digits(&mut out[5..7], date.month());
            put_digits(&mut out[8..10], date.day());
            out
        });
        self.day = Some((day, text));
        text
    }
}

/// `v`'s last `out.len()` decimal digits, zero-padded.
fn put_digits(out: &mut [u8], mut v: u32) {
    for b in out.iter_mut().rev() {
        *b = b'0' + (v % 10) as u8;
        v /= 10;
    }
}

/// `YYYY-MM-DD HH:MM:SS.ffffff+00`: chrono's `%Y-%m-%d %H:%M:%S%.6f%:::z` (pgwire's ISO format
/// with a zone) for a year of four digits and a zero offset, microseconds truncated. Without a
/// zone, its first 26 bytes.
fn iso_text(date: [u8; 10], secs_of_day: u32, nanos: u32) -> [u8; 29] {
    let mut out = *b"0000-00-00 00:00:00.000000+00";
    out[..10].copy_from_slice(&date);
    put_digits(&mut out[11..13], secs_of_day / 3600);
    put_digits(&mut out[14..16], secs_of_day / 60 % 60);
    put_digits(&mut out[17..19], secs_of_day % 60);
    put_digits(&mut out[20..26], nanos / 1_000);
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
