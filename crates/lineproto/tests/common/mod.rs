//! Helpers shared by the integration tests.
#![allow(dead_code)]

use tempora_lineproto::ParsedBody;
use tempora_model::{FieldValue, decode_series_key};

/// One accepted row, flattened for comparisons.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub line: usize,
    pub table: String,
    /// Sorted by key (the series key order).
    pub tags: Vec<(String, String)>,
    /// In the order the builder stored them.
    pub fields: Vec<(String, FieldValue)>,
    pub time: i64,
}

/// All rows of a parsed body, batch by batch, rows in batch order.
pub fn rows(p: &ParsedBody) -> Vec<Row> {
    assert_eq!(p.batches.len(), p.line_numbers.len());
    let mut out = Vec::new();
    for (b, lines) in p.batches.iter().zip(&p.line_numbers) {
        assert_eq!(b.len(), lines.len());
        for (r, &line) in b.rows().zip(lines) {
            out.push(Row {
                line,
                table: b.table().to_string(),
                tags: decode_series_key(r.key).unwrap(),
                fields: r
                    .fields
                    .iter()
                    .map(|(i, v)| (b.field_names()[*i as usize].clone(), v.clone()))
                    .collect(),
                time: r.time.0,
            });
        }
    }
    assert_eq!(out.len(), p.rows);
    out
}

/// Rows sorted by line number (each line gives at most one row).
pub fn rows_by_line(p: &ParsedBody) -> Vec<Row> {
    let mut r = rows(p);
    r.sort_by_key(|r| r.line);
    r
}

/// Bit-exact comparison of field values (floats by bits, so -0.0 != 0.0).
pub fn same_value(a: &FieldValue, b: &FieldValue) -> bool {
    match (a, b) {
        (FieldValue::F64(x), FieldValue::F64(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

/// Escapes a measurement for line protocol.
pub fn esc_measurement(s: &str) -> String {
    esc(s, &[',', ' ', '\\'])
}

/// Escapes a tag key, tag value or field key.
pub fn esc_key(s: &str) -> String {
    esc(s, &[',', '=', ' ', '\\'])
}

/// Quotes a string field value.
pub fn quote(s: &str) -> String {
    format!("\"{}\"", esc(s, &['"', '\\']))
}

fn esc(s: &str, special: &[char]) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if special.contains(&c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Formats a field value as line protocol.
pub fn format_value(v: &FieldValue) -> String {
    match v {
        FieldValue::F64(x) => format!("{x:?}"),
        FieldValue::I64(x) => format!("{x}i"),
        FieldValue::U64(x) => format!("{x}u"),
        FieldValue::Bool(x) => x.to_string(),
        FieldValue::Str(s) => quote(s),
    }
}
