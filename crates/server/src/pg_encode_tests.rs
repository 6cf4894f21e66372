//! `encode_batch` against arrow-pg's own row encoder, byte for byte: a table of columns, each
//! in text and binary, under several client format options.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::*;
use datafusion::arrow::datatypes::*;
use datafusion_postgres::arrow_pg::datatypes::{arrow_schema_to_pg_fields, encode_recordbatch};
use pgwire::api::portal::Format;
use pgwire::types::format::FormatOptions;

use super::*;

/// Nanosecond instants: the epoch, before it with sub-microsecond parts, TSBS's 2016, the
/// extremes of i64.
const NANOS: [i64; 8] = [
    0,
    -1,
    -1_500,
    1_451_629_590_123_456_789,
    946_684_800_000_000_000,
    -946_684_800_000_000_001,
    i64::MAX,
    i64::MIN,
];

fn columns() -> Vec<(&'static str, ArrayRef)> {
    let strings = vec![
        Some("host_1"),
        None,
        Some(""),
        Some("日本語 with a long tail"),
        Some("x"),
    ];
    let dict: DictionaryArray<Int32Type> = vec![Some("a"), None, Some("b"), Some("a"), Some("c")]
        .into_iter()
        .collect();
    let dict_null_value = DictionaryArray::<UInt8Type>::try_new(
        UInt8Array::from(vec![Some(0), Some(1), None, Some(1), Some(0)]),
        Arc::new(StringArray::from(vec![Some("v"), None])),
    )
    .unwrap();
    let dict_ints = DictionaryArray::<Int16Type>::try_new(
        Int16Array::from(vec![0, 1, 1, 0, 1]),
        Arc::new(Int64Array::from(vec![-7, i64::MAX])),
    )
    .unwrap();
    let ts = |unit: &str, zone: Option<&str>, v: Vec<Option<i64>>| -> ArrayRef {
        let a: ArrayRef = match unit {
            "s" => Arc::new(TimestampSecondArray::from(v)),
            "ms" => Arc::new(TimestampMillisecondArray::from(v)),
            "us" => Arc::new(TimestampMicrosecondArray::from(v)),
            _ => Arc::new(TimestampNanosecondArray::from(v)),
        };
        match zone {
            Some(z) => datafusion::arrow::compute::cast(
                &a,
                &DataType::Timestamp(
                    match a.data_type() {
                        DataType::Timestamp(u, _) => *u,
                        _ => unreachable!(),
                    },
                    Some(z.into()),
                ),
            )
            .unwrap(),
            None => a,
        }
    };
    let nanos: Vec<Option<i64>> = NANOS.iter().map(|v| Some(*v)).chain([None]).collect();
    let wide: Vec<Option<i64>> = vec![
        Some(0),
        Some(-1),
        Some(253_402_300_800),
        Some(i64::MAX),
        None,
    ];
    let days: Vec<Option<i64>> = (-30..30).map(|i| Some(i * 7_654_321_987)).collect();
    vec![
        (
            "int16",
            Arc::new(Int16Array::from(vec![
                Some(i16::MIN),
                None,
                Some(0),
                Some(-1),
                Some(i16::MAX),
            ])),
        ),
        (
            "int32",
            Arc::new(Int32Array::from(vec![
                Some(i32::MIN),
                None,
                Some(42),
                Some(-1),
                Some(i32::MAX),
            ])),
        ),
        (
            "int64",
            Arc::new(Int64Array::from(vec![
                Some(i64::MIN),
                None,
                Some(0),
                Some(99),
                Some(i64::MAX),
            ])),
        ),
        (
            "float32",
            Arc::new(Float32Array::from(vec![
                Some(0.1),
                Some(-0.0),
                None,
                Some(f32::NAN),
                Some(f32::INFINITY),
                Some(16.0),
                Some(1e-40),
            ])),
        ),
        (
            "float64",
            Arc::new(Float64Array::from(vec![
                Some(0.1),
                Some(-0.0),
                None,
                Some(f64::NAN),
                Some(f64::NEG_INFINITY),
                Some(16.0),
                Some(1e300),
                Some(5e-324),
                Some(1.0 / 3.0),
            ])),
        ),
        (
            "bool",
            Arc::new(BooleanArray::from(vec![Some(true), None, Some(false)])),
        ),
        ("utf8", Arc::new(StringArray::from(strings.clone()))),
        (
            "large_utf8",
            Arc::new(LargeStringArray::from(strings.clone())),
        ),
        ("utf8_view", Arc::new(StringViewArray::from(strings))),
        ("dict_utf8", Arc::new(dict)),
        ("dict_null_value", Arc::new(dict_null_value)),
        ("dict_int64", Arc::new(dict_ints)),
        ("ts_ns_utc", ts("ns", Some("UTC"), nanos.clone())),
        ("ts_ns_plus0", ts("ns", Some("+00:00"), nanos.clone())),
        ("ts_ns_naive", ts("ns", None, nanos.clone())),
        ("ts_ns_oslo", ts("ns", Some("Europe/Oslo"), nanos)),
        (
            "ts_us_utc",
            ts(
                "us",
                Some("UTC"),
                vec![Some(-1), Some(1), Some(i64::MIN), None],
            ),
        ),
        (
            "ts_ms_naive",
            ts(
                "ms",
                None,
                vec![Some(-1), Some(1), Some(253_402_300_800_000), None],
            ),
        ),
        ("ts_s_utc", ts("s", Some("UTC"), wide.clone())),
        // Steps of about 2 h 7 min from 2.6 days before the epoch to 2.6 days after: rows of
        // one day share its date text, and the date changes at each midnight either side.
        ("ts_us_days", ts("us", None, days)),
        ("ts_s_naive", ts("s", None, wide)),
        (
            "int8",
            Arc::new(Int8Array::from(vec![Some(-8), None, Some(127)])),
        ),
        (
            "uint64",
            Arc::new(UInt64Array::from(vec![Some(u64::MAX), None])),
        ),
        (
            "date32",
            Arc::new(Date32Array::from(vec![Some(0), None, Some(-1)])),
        ),
        (
            "binary",
            Arc::new(BinaryArray::from(vec![Some(&b"\x00\xff"[..]), None])),
        ),
    ]
}

fn options(date_style: &str, extra_float_digits: i8) -> Arc<FormatOptions> {
    let mut meta = HashMap::new();
    meta.insert("DateStyle".to_string(), date_style.to_string());
    meta.insert(
        "extra_float_digits".to_string(),
        extra_float_digits.to_string(),
    );
    let mut o = FormatOptions::from_client_metadata(&meta);
    o.date_style = date_style.to_string();
    o.extra_float_digits = extra_float_digits;
    Arc::new(o)
}

/// The rows (or the error) each encoder gives for `array` in `format` under `opts`.
fn both(array: &ArrayRef, format: &Format, opts: &Arc<FormatOptions>) -> (String, String) {
    let schema = Arc::new(Schema::new(vec![Field::new(
        "c",
        array.data_type().clone(),
        true,
    )]));
    let batch = RecordBatch::try_new(schema.clone(), vec![array.clone()]).unwrap();
    let fields = Arc::new(arrow_schema_to_pg_fields(&schema, format, Some(opts.clone())).unwrap());
    let show = |rows: PgWireResult<Vec<DataRow>>| match rows {
        Ok(rows) => format!(
            "{:?}",
            rows.iter()
                .map(|r| (r.field_count, r.data.to_vec()))
                .collect::<Vec<_>>()
        ),
        Err(_) => "error".to_string(),
    };
    let ours = show(encode_batch(&fields, &batch));
    let theirs = show(encode_recordbatch(fields, batch).collect());
    (ours, theirs)
}

#[test]
fn every_column_is_encoded_as_arrow_pg_encodes_it() {
    let formats = [
        ("text", Format::UnifiedText),
        ("binary", Format::UnifiedBinary),
    ];
    let styles = [
        ("ISO, MDY", 1),
        ("ISO", 0),
        ("SQL, DMY", 1),
        ("Postgres, MDY", 3),
        ("German", -4),
        ("bogus", 1),
    ];
    let mut checked = 0;
    for (name, array) in columns() {
        for (fname, format) in &formats {
            for (style, digits) in styles {
                // Floats in text with extra_float_digits >= 1 are PostgreSQL's (pg_float.rs),
                // not arrow-pg's (`3` rather than `3.0`, `Infinity` rather than `inf`).
                let float = matches!(array.data_type(), DataType::Float32 | DataType::Float64);
                if float && *fname == "text" && digits >= 1 {
                    continue;
                }
                let (ours, theirs) = both(&array, format, &options(style, digits));
                assert_eq!(
                    ours, theirs,
                    "{name}, {fname}, DateStyle {style:?}, extra_float_digits {digits}"
                );
                checked += 1;
            }
        }
    }
    // Skipped: two float columns in text under the four settings with extra_float_digits >= 1.
    assert_eq!(checked, 25 * 2 * 6 - 2 * 4);
}

#[test]
fn floats_in_text_are_postgres_text() {
    let a: ArrayRef = Arc::new(datafusion::arrow::array::Float64Array::from(vec![
        Some(16.0),
        Some(-0.0),
        None,
        Some(f64::INFINITY),
        Some(1e20),
    ]));
    let (ours, _) = both(&a, &Format::UnifiedText, &options("ISO, MDY", 1));
    let text = |s: &str| {
        format!(
            "(1, {:?})",
            [&(s.len() as u32).to_be_bytes()[..], s.as_bytes()].concat()
        )
    };
    let want = format!(
        "[{}, {}, (1, [255, 255, 255, 255]), {}, {}]",
        text("16"),
        text("-0"),
        text("Infinity"),
        text("1e+20")
    );
    assert_eq!(ours, want);
}

#[test]
fn the_common_columns_are_written_here_not_by_arrow_pg() {
    let opts = options("ISO, MDY", 1);
    let written_here = |array: &ArrayRef, format: &Format| {
        let schema = Schema::new(vec![Field::new("c", array.data_type().clone(), true)]);
        let fields = arrow_schema_to_pg_fields(&schema, format, Some(opts.clone())).unwrap();
        !matches!(Col::new(array, schema.field(0), &fields[0]), Col::Other(_))
    };
    for (name, array) in columns() {
        let here = !matches!(name, "ts_ns_oslo" | "int8" | "uint64" | "date32" | "binary");
        for format in [Format::UnifiedText, Format::UnifiedBinary] {
            assert_eq!(written_here(&array, &format), here, "{name}");
        }
    }
}

#[test]
fn a_batch_is_one_row_per_data_row_with_every_column() {
    let cols = columns();
    let (a, b) = (cols[2].1.clone(), cols[6].1.clone());
    let schema = Arc::new(Schema::new(vec![
        Field::new("i", a.data_type().clone(), true),
        Field::new("s", b.data_type().clone(), true),
    ]));
    let batch = RecordBatch::try_new(schema.clone(), vec![a, b]).unwrap();
    let fields = arrow_schema_to_pg_fields(&schema, &Format::UnifiedText, None).unwrap();
    let rows = encode_batch(&fields, &batch).unwrap();
    assert_eq!(rows.len(), 5);
    assert!(rows.iter().all(|r| r.field_count == 2));
    // int64 i64::MIN then "host_1": each value its length, then its bytes.
    let mut want = Vec::new();
    want.extend_from_slice(&20i32.to_be_bytes());
    want.extend_from_slice(b"-9223372036854775808");
    want.extend_from_slice(&6i32.to_be_bytes());
    want.extend_from_slice(b"host_1");
    assert_eq!(rows[0].data.to_vec(), want);
    // A NULL in each column: length -1 and no bytes.
    assert_eq!(
        rows[1].data.to_vec(),
        [(-1i32).to_be_bytes(), (-1i32).to_be_bytes()].concat()
    );
}

/// Every row of `response`'s stream, or the first error's message.
async fn drain(mut response: QueryResponse) -> Result<Vec<(i16, Vec<u8>)>, String> {
    let mut rows = Vec::new();
    while let Some(row) = response.data_rows().next().await {
        let row = row.map_err(|e| e.to_string())?;
        rows.push((row.field_count, row.data.to_vec()));
    }
    Ok(rows)
}

#[tokio::test]
async fn a_response_is_its_batches_rows_in_order_whatever_their_sizes() {
    let n = 2 * ENCODE_CHUNK_ROWS + 3;
    let hosts: ArrayRef = Arc::new(StringArray::from_iter(
        (0..n).map(|i| (i % 7 != 0).then(|| format!("host_{i}"))),
    ));
    let values: ArrayRef = Arc::new(Int64Array::from_iter_values((0..n as i64).map(|i| i * 31)));
    let schema = Arc::new(Schema::new(vec![
        Field::new("host", DataType::Utf8, true),
        Field::new("v", DataType::Int64, false),
    ]));
    let big = RecordBatch::try_new(schema.clone(), vec![hosts, values]).unwrap();
    let fields = Arc::new(arrow_schema_to_pg_fields(&schema, &Format::UnifiedText, None).unwrap());
    let whole = |b: &RecordBatch| -> Vec<(i16, Vec<u8>)> {
        encode_batch(&fields, b)
            .unwrap()
            .into_iter()
            .map(|r| (r.field_count, r.data.to_vec()))
            .collect()
    };
    // Batch sizes: inline, on the blocking pool in one slice, in three slices (the last short),
    // empty, and a slice that does not start at row 0.
    let cases: Vec<(&str, Vec<RecordBatch>)> = vec![
        ("one small batch", vec![big.slice(5, 10)]),
        (
            "one batch past the inline limit",
            vec![big.slice(0, INLINE_ROWS_MAX + 1)],
        ),
        ("one batch of three slices", vec![big.clone()]),
        (
            "an empty batch between two",
            vec![
                big.slice(1, 3),
                big.slice(0, 0),
                big.slice(7, ENCODE_CHUNK_ROWS + 1),
            ],
        ),
    ];
    for (name, batches) in cases {
        let want: Vec<_> = batches.iter().flat_map(&whole).collect();
        let stream = futures::stream::iter(batches.into_iter().map(Ok));
        let got = drain(query_response(fields.clone(), stream)).await;
        assert_eq!(got.as_ref().map(Vec::len), Ok(want.len()), "{name}");
        assert!(got.unwrap() == want, "{name}");
    }
    // An error after a batch: its rows come first, then the error.
    let stream = futures::stream::iter(vec![
        Ok(big.slice(0, ENCODE_CHUNK_ROWS + 1)),
        Err(PgWireError::ApiError("the scan failed".into())),
    ]);
    let mut response = query_response(fields.clone(), stream);
    for _ in 0..=ENCODE_CHUNK_ROWS {
        assert!(response.data_rows().next().await.unwrap().is_ok());
    }
    let err = response.data_rows().next().await.unwrap().unwrap_err();
    assert!(err.to_string().contains("the scan failed"), "{err}");
}
