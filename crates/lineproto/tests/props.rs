//! Property tests: formatted random lines parse back exactly; garbage never panics; parsing
//! `split_chunks` pieces gives the same rows, errors and line numbers as the whole body.

mod common;

use std::collections::BTreeMap;

use common::{Row, esc_key, esc_measurement, format_value, rows, rows_by_line, same_value};
use proptest::prelude::*;
use tempora_lineproto::{LineError, ParseOptions, Precision, parse, parse_from_line, split_chunks};
use tempora_model::{FieldValue, validate_name};

/// Characters that need escaping somewhere, plus a few ordinary and multi-byte ones.
const NAME_CHARS: &str = "[a-c0-9_,= \\\\\"#éü=]";

fn name() -> impl Strategy<Value = String> {
    proptest::string::string_regex(&format!("{NAME_CHARS}{{1,6}}"))
        .unwrap()
        .prop_filter("valid name", |s| validate_name(s).is_ok())
}

fn measurement() -> impl Strategy<Value = String> {
    name().prop_filter("not a comment", |s| !s.starts_with('#'))
}

fn value() -> impl Strategy<Value = FieldValue> {
    prop_oneof![
        (proptest::num::f64::NORMAL
            | proptest::num::f64::SUBNORMAL
            | proptest::num::f64::ZERO
            | proptest::num::f64::NEGATIVE
            | proptest::num::f64::POSITIVE)
            .prop_map(FieldValue::F64),
        (0u32..1000).prop_map(|x| FieldValue::F64(x as f64 / 10.0)),
        any::<i64>().prop_map(FieldValue::I64),
        any::<u64>().prop_map(FieldValue::U64),
        any::<bool>().prop_map(FieldValue::Bool),
        "[a-b\"\\\\\n\r ,=é]{0,8}".prop_map(FieldValue::Str),
    ]
}

#[derive(Debug, Clone)]
struct Point {
    measurement: String,
    tags: BTreeMap<String, String>,
    fields: BTreeMap<String, FieldValue>,
    time: Option<i64>,
}

fn point() -> impl Strategy<Value = Point> {
    (
        measurement(),
        proptest::collection::btree_map(name(), name(), 0..4),
        proptest::collection::btree_map(name(), value(), 1..4),
        proptest::option::of(any::<i64>()),
    )
        .prop_map(|(measurement, tags, fields, time)| Point {
            measurement,
            tags,
            fields,
            time,
        })
}

fn format_point(p: &Point) -> String {
    let mut s = esc_measurement(&p.measurement);
    for (k, v) in &p.tags {
        s += &format!(",{}={}", esc_key(k), esc_key(v));
    }
    for (i, (k, v)) in p.fields.iter().enumerate() {
        s.push(if i == 0 { ' ' } else { ',' });
        s += &format!("{}={}", esc_key(k), format_value(v));
    }
    if let Some(t) = p.time {
        s += &format!(" {t}");
    }
    s
}

/// A body of points with blank and comment lines mixed in; returns the body and the expected
/// rows (sorted by line).
fn body_of(points: &[(Point, u8)]) -> (String, Vec<Row>) {
    let mut body = String::new();
    let mut want = Vec::new();
    let mut line = 1;
    for (p, extra) in points {
        match extra % 4 {
            0 => body += "\n",
            1 => body += "# comment \"\n",
            _ => {}
        }
        if extra % 4 < 2 {
            line += 1;
        }
        let text = format_point(p);
        want.push(Row {
            line,
            table: p.measurement.clone(),
            tags: p.tags.clone().into_iter().collect(),
            fields: p.fields.clone().into_iter().collect(),
            time: p.time.unwrap_or(-7),
        });
        line += 1 + text.matches('\n').count();
        body += &text;
        body += if extra % 3 == 0 { "\r\n" } else { "\n" };
    }
    (body, want)
}

fn opts() -> ParseOptions {
    ParseOptions::new(Precision::Ns, -7)
}

/// Parses `body` whole and in `n` chunks, and checks both agree.
fn check_chunks(body: &[u8], n: usize) -> Result<(), TestCaseError> {
    let whole = parse(body, &opts());
    let chunks = split_chunks(body, n);
    let joined: Vec<u8> = chunks.iter().flat_map(|(_, c)| c.iter().copied()).collect();
    prop_assert_eq!(&joined[..], body);
    let mut got_rows = Vec::new();
    let mut got_errors: Vec<LineError> = Vec::new();
    for (line, chunk) in &chunks {
        prop_assert!(!chunk.is_empty());
        let p = parse_from_line(chunk, *line, &opts());
        got_rows.extend(rows(&p));
        got_errors.extend(p.errors);
    }
    got_rows.sort_by_key(|r| r.line);
    prop_assert_eq!(got_rows, rows_by_line(&whole));
    prop_assert_eq!(got_errors, whole.errors);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn formatted_points_roundtrip(points in proptest::collection::vec((point(), any::<u8>()), 1..6)) {
        let (body, want) = body_of(&points);
        let p = parse(body.as_bytes(), &opts());
        prop_assert!(p.errors.is_empty(), "{:?}\n{}", p.errors, body);
        let got = rows_by_line(&p);
        prop_assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            prop_assert_eq!(&g.line, &w.line, "{}", body);
            prop_assert_eq!(&g.table, &w.table);
            prop_assert_eq!(&g.tags, &w.tags);
            prop_assert_eq!(g.time, w.time);
            prop_assert_eq!(g.fields.len(), w.fields.len());
            for (a, b) in g.fields.iter().zip(&w.fields) {
                prop_assert_eq!(&a.0, &b.0);
                prop_assert!(same_value(&a.1, &b.1), "{:?} != {:?}", a.1, b.1);
            }
        }
        for n in [2, 3, 7] {
            check_chunks(body.as_bytes(), n)?;
        }
    }

    #[test]
    fn garbage_never_panics(bytes in proptest::collection::vec(
        prop_oneof![
            4 => proptest::sample::select(b"m,= \"\\\n\r#tif.0123456789-ue".to_vec()),
            1 => any::<u8>(),
        ],
        0..300,
    )) {
        let p = parse(&bytes, &opts());
        let lines = 1 + bytes.iter().filter(|&&b| b == b'\n').count();
        prop_assert!(p.rows + p.errors.len() <= lines);
        for e in &p.errors {
            prop_assert!(e.line >= 1 && e.line <= lines);
        }
        for n in [1, 2, 5] {
            check_chunks(&bytes, n)?;
        }
    }

    #[test]
    fn mixed_valid_and_garbage_chunks_agree(
        parts in proptest::collection::vec(prop_oneof![
            point().prop_map(|p| format_point(&p)),
            "[m,= \"\\\\\n#a1.]{0,12}",
        ], 1..12),
        n in 1usize..8,
    ) {
        let body = parts.join("\n");
        check_chunks(body.as_bytes(), n)?;
    }
}
