//! How a float field is stored, chosen per column chunk of each data file from its values.
//!
//! Every choice is plain Parquet that DuckDB and pyarrow read as they are:
//! - **Decimal** (ALP-style): when every value is a decimal with at most
//!   [`MAX_DECIMAL_SCALE`] digits after the point that converts back to the very same f64, the
//!   column is DECIMAL(18, s) (INT64). Readers see the same numbers.
//! - **Single**: when every value is an f32 widened to f64 (sensors that measure in f32), the
//!   column is FLOAT; readers see the same numbers as REAL.
//! - Otherwise DOUBLE.
//! - Then the encoding that writes a sample of the chunk smallest with the file's zstd level:
//!   BYTE_STREAM_SPLIT, PLAIN or a dictionary, and DELTA_BINARY_PACKED for decimals.
//!
//! pco and ALP with exceptions compress some columns further but have no Parquet encoding;
//! using them would make the files unreadable to other tools (docs/format/data-files.md).
//!
//! Invariant: [`decode`] of [`encode`] gives back every value bit for bit (NaN, infinities and
//! -0.0 keep the Double representation).

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Float32Array, Float64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Float32Type, Float64Type, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::WriterProperties;

/// Largest decimal scale tried.
pub const MAX_DECIMAL_SCALE: i8 = 6;
/// Largest magnitude of a scaled value (exact in f64 and within decimal precision 18).
const MAX_SCALED: f64 = 9.0e15;
/// Values of a chunk the encodings are tried on.
pub const SAMPLE_VALUES: usize = 16 * 1024;

/// The value representation of a float column chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repr {
    Decimal(i8),
    Single,
    Double,
}

/// The Parquet encoding of a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloatEncoding {
    Plain,
    ByteStreamSplit,
    Dictionary,
    /// DELTA_BINARY_PACKED: Decimal chunks only (an integer encoding).
    Delta,
}

impl FloatEncoding {
    /// The Parquet encoding to set, and whether the dictionary is on.
    pub fn parquet(self) -> (Option<Encoding>, bool) {
        match self {
            FloatEncoding::Plain => (Some(Encoding::PLAIN), false),
            FloatEncoding::ByteStreamSplit => (Some(Encoding::BYTE_STREAM_SPLIT), false),
            FloatEncoding::Dictionary => (None, true),
            FloatEncoding::Delta => (Some(Encoding::DELTA_BINARY_PACKED), false),
        }
    }
}

/// A chunk's representation and encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FloatCodec {
    pub repr: Repr,
    pub encoding: FloatEncoding,
}

/// The representation every value of `f` allows: the smallest decimal scale, else f32, else f64.
pub fn repr_of(f: &Float64Array) -> Repr {
    (0..=MAX_DECIMAL_SCALE)
        .map(Repr::Decimal)
        .chain([Repr::Single])
        .find(|r| fits(f, *r))
        .unwrap_or(Repr::Double)
}

/// Whether every value of `f` is stored exactly as `repr`.
pub fn fits(f: &Float64Array, repr: Repr) -> bool {
    match repr {
        Repr::Decimal(scale) => {
            let m = 10f64.powi(scale as i32);
            f.iter().flatten().all(|v| {
                let x = (v * m).round();
                x.abs() <= MAX_SCALED && x / m == v && !(v == 0.0 && v.is_sign_negative())
            })
        }
        Repr::Single => f.iter().flatten().all(|v| {
            v.is_finite() && (v as f32) as f64 == v && !(v == 0.0 && v.is_sign_negative())
        }),
        Repr::Double => true,
    }
}

/// Chooses how to store a float column chunk: its representation, then the encoding that
/// writes a sample of it smallest at zstd `level` (ties go to the earlier candidate).
pub fn choose(col: &ArrayRef, level: i32) -> Option<FloatCodec> {
    let f = col.as_primitive_opt::<Float64Type>()?;
    let repr = repr_of(f);
    let sample = as_repr(&col.slice(0, col.len().min(SAMPLE_VALUES)), repr);
    let encoding = candidates(repr)
        .iter()
        .copied()
        .min_by_key(|e| trial_size(&sample, *e, level))
        .expect("candidates");
    Some(FloatCodec { repr, encoding })
}

/// The encodings tried for a representation.
pub fn candidates(repr: Repr) -> &'static [FloatEncoding] {
    use FloatEncoding::*;
    match repr {
        Repr::Decimal(_) => &[Delta, ByteStreamSplit, Plain, Dictionary],
        Repr::Single | Repr::Double => &[ByteStreamSplit, Plain, Dictionary],
    }
}

/// The column as stored for `repr`.
pub fn as_repr(col: &ArrayRef, repr: Repr) -> ArrayRef {
    let f = col.as_primitive::<Float64Type>();
    match repr {
        Repr::Double => col.clone(),
        Repr::Single => {
            let s: Float32Array = f.unary(|v| v as f32);
            Arc::new(s)
        }
        Repr::Decimal(scale) => {
            let m = 10f64.powi(scale as i32);
            let dec: arrow::array::Decimal128Array = f.unary(|v| (v * m).round() as i128);
            Arc::new(
                dec.with_precision_and_scale(18, scale)
                    .expect("scale within precision 18"),
            )
        }
    }
}

/// A stored float column back as f64 (`None` when it is already f64 or not a float column).
pub fn decode(col: &ArrayRef) -> Option<ArrayRef> {
    match col.data_type() {
        DataType::Decimal128(_, scale) => {
            // `unscaled / 10^scale`: the expression the writer checked, so values come back
            // bit for bit.
            let m = 10f64.powi(*scale as i32);
            let d = col.as_primitive::<arrow::datatypes::Decimal128Type>();
            let f: Float64Array = d.unary(|x| x as f64 / m);
            Some(Arc::new(f))
        }
        DataType::Float32 => {
            let f: Float64Array = col.as_primitive::<Float32Type>().unary(|v| v as f64);
            Some(Arc::new(f))
        }
        _ => None,
    }
}

/// Bytes a one-column Parquet file of `col` takes with `encoding` and zstd `level`.
fn trial_size(col: &ArrayRef, encoding: FloatEncoding, level: i32) -> usize {
    let schema = Arc::new(Schema::new(vec![Field::new(
        "c",
        col.data_type().clone(),
        true,
    )]));
    let Ok(batch) = RecordBatch::try_new(schema.clone(), vec![col.clone()]) else {
        return usize::MAX;
    };
    let mut b = WriterProperties::builder()
        .set_compression(Compression::ZSTD(
            ZstdLevel::try_new(level).unwrap_or_default(),
        ))
        .set_dictionary_enabled(false);
    let (enc, dict) = encoding.parquet();
    b = b.set_dictionary_enabled(dict);
    if let Some(e) = enc {
        b = b.set_encoding(e);
    }
    let mut buf = Vec::new();
    let written = ArrowWriter::try_new(&mut buf, schema, Some(b.build()))
        .and_then(|mut w| w.write(&batch).and_then(|_| w.close()));
    match written {
        Ok(_) => buf.len(),
        Err(_) => usize::MAX,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn col(v: Vec<Option<f64>>) -> ArrayRef {
        Arc::new(Float64Array::from(v))
    }

    fn bits(c: &ArrayRef) -> Vec<Option<u64>> {
        c.as_primitive::<Float64Type>()
            .iter()
            .map(|v| v.map(f64::to_bits))
            .collect()
    }

    #[test]
    fn representations_named_cases() {
        let wave: Vec<Option<f64>> = (0..1000).map(|i| Some((i as f64 / 7.0).sin())).collect();
        let single: Vec<Option<f64>> = (0..1000)
            .map(|i| Some(((i as f32) * 0.1f32 + 20.0) as f64))
            .collect();
        let cases: Vec<(&str, Vec<Option<f64>>, Repr)> = vec![
            (
                "integral",
                vec![Some(1.0), Some(58.0), None, Some(-3.0)],
                Repr::Decimal(0),
            ),
            (
                "two decimals",
                vec![Some(12.34), Some(0.01), Some(-7.5)],
                Repr::Decimal(2),
            ),
            ("all null", vec![None, None], Repr::Decimal(0)),
            ("f32 readings widened", single, Repr::Single),
            (
                "negative zero keeps f64",
                vec![Some(-0.0), Some(1.0)],
                Repr::Double,
            ),
            ("nan", vec![Some(f64::NAN), Some(1.0)], Repr::Double),
            ("infinity", vec![Some(f64::INFINITY)], Repr::Double),
            (
                "too many digits",
                vec![Some(std::f64::consts::PI)],
                Repr::Double,
            ),
            ("too large", vec![Some(1e300)], Repr::Double),
            ("computed values", wave, Repr::Double),
        ];
        for (name, values, want) in cases {
            let c = col(values);
            let codec = choose(&c, 3).unwrap();
            assert_eq!(codec.repr, want, "{name}");
            let stored = as_repr(&c, codec.repr);
            let back = decode(&stored).unwrap_or(stored);
            assert_eq!(bits(&back), bits(&c), "{name}: bit for bit");
        }
    }

    #[test]
    fn the_encoding_is_the_smallest_on_the_sample() {
        // Forty irrational values in a scrambled order: a dictionary; smooth computed values:
        // byte-stream split.
        let mut x = 88172645463325252u64;
        let few: Vec<Option<f64>> = (0..5000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                Some(((x % 40 + 2) as f64).sqrt())
            })
            .collect();
        let smooth: Vec<Option<f64>> = (0..5000)
            .map(|i| Some(1000.0 + (i as f64 / 100.0).sin()))
            .collect();
        for (name, values, want) in [
            ("forty values", few, FloatEncoding::Dictionary),
            ("smooth wave", smooth, FloatEncoding::ByteStreamSplit),
        ] {
            let c = col(values);
            let got = choose(&c, 3).unwrap();
            assert_eq!(got.encoding, want, "{name}");
            let sizes: Vec<usize> = candidates(got.repr)
                .iter()
                .map(|e| trial_size(&c, *e, 3))
                .collect();
            assert_eq!(
                trial_size(&c, want, 3),
                *sizes.iter().min().unwrap(),
                "{name}"
            );
        }
    }

    #[test]
    fn non_float_columns_are_left_alone() {
        let ints: ArrayRef = Arc::new(arrow::array::Int64Array::from(vec![1, 2]));
        assert_eq!(choose(&ints, 3), None);
        assert!(decode(&ints).is_none());
    }
}
