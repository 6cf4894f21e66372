//! `POST /api/v1/ingest/json`: JSON rows, as services and scripts emit them, written through
//! the same gate as line protocol (each object becomes one line; a bad object is reported
//! by its number and the others are written).
//!
//! The body is JSON lines (one object per line, blank lines skipped) or one JSON array of
//! objects. An object is either
//! - explicit: `{"measurement": "cpu", "tags": {"host": "a"}, "fields": {"usage": 1.5},
//!   "time": 1700000000000000000}` (`table` or `name` for `measurement`), or
//! - flat: `{"host": "a", "usage": 1.5, "time": "2023-11-14T22:13:20Z"}` with the table from
//!   `?table=` (or a `measurement` key); keys named in `?tags=a,b` are tags, and without
//!   `tags=` every string value is a tag.
//!
//! Values: numbers are floats (as Telegraf's JSON parser reads them; `?integers=true` writes
//! whole numbers as integers), booleans are booleans, strings in `fields` are strings; a null
//! value is left out; arrays and nested objects are refused by key. `time` (or `timestamp`)
//! is an integer in `?precision=` units (default ns) or RFC 3339 text; absent, the server's
//! clock.
//!
//! Invariant: conversion is a pure function of the object and the options; every refusal
//! names the object's number and the key.

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::Response;
use serde_json::{Map, Value};

use crate::body::read_body;
use crate::csv_import::time_ns;
use crate::error::ServerError;
use crate::influx::{WriteOutcome, ingest_lines, list_param, parse_precision};
use crate::state::AppState;

/// The handler.
pub async fn ingest(
    State(s): State<Arc<AppState>>,
    Query(p): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ServerError> {
    s.ready()?;
    let precision = parse_precision(p.get("precision").map(String::as_str))?;
    let o = JsonOptions {
        table: p.get("table").filter(|t| !t.is_empty()).cloned(),
        tags: list_param(&p, "tags"),
        integers: p.get("integers").is_some_and(|v| v == "true"),
        precision_ns: precision.nanos(),
        now_ns: crate::state::now_ns(),
    };
    let db = crate::state::write_database(&s, &p).await?;
    let body = read_body(&headers, body, s.config.max_body_bytes).await?;
    s.metrics.ingest_bytes.inc_by(body.len() as u64);
    let converted = tokio::task::spawn_blocking(move || convert(&body, &o))
        .await
        .map_err(|e| ServerError::Internal(e.to_string()))?
        .map_err(ServerError::BadRequest)?;
    if converted.lines.is_empty() {
        let none = WriteOutcome {
            written: 0,
            lines: 0,
            rejected: Vec::new(),
        };
        return Ok(none.answer(&converted.rejected));
    }
    let mut out = ingest_lines(
        &s,
        &db,
        converted.lines.into(),
        tempora_lineproto::Precision::Ns,
    )
    .await?;
    // Line numbers of the converted body back to the objects' numbers.
    for r in &mut out.rejected {
        r.0 =
            r.0.checked_sub(1)
                .and_then(|i| converted.numbers.get(i))
                .copied()
                .unwrap_or(r.0);
    }
    Ok(out.answer(&converted.rejected))
}

/// How objects are read.
#[derive(Debug, Clone, Default)]
pub struct JsonOptions {
    pub table: Option<String>,
    /// Keys that are tags in flat objects (`None`: every string value is a tag).
    pub tags: Option<Vec<String>>,
    pub integers: bool,
    pub precision_ns: i64,
    pub now_ns: i64,
}

/// The line-protocol body of a JSON body, with each line's object number, and the objects
/// refused: (number, reason).
#[derive(Debug, Default, PartialEq)]
pub struct Converted {
    pub lines: String,
    pub numbers: Vec<usize>,
    pub rejected: Vec<(usize, String)>,
}

/// Converts a body; an error when it is neither JSON lines nor an array.
pub fn convert(body: &[u8], o: &JsonOptions) -> Result<Converted, String> {
    let text = std::str::from_utf8(body).map_err(|e| format!("the body is not UTF-8: {e}"))?;
    let mut out = Converted::default();
    let mut one = |n: usize, v: Result<Value, String>| match v.and_then(|v| line(&v, o)) {
        Ok(l) => {
            out.lines.push_str(&l);
            out.lines.push('\n');
            out.numbers.push(n);
        }
        Err(e) => out.rejected.push((n, e)),
    };
    let whole = text.trim_start();
    // One object over several lines (pretty-printed) is one object, not lines of JSON.
    let single = whole.starts_with('{') && text.trim_end().lines().count() > 1;
    if single && let Ok(v @ Value::Object(_)) = serde_json::from_str::<Value>(text) {
        one(1, Ok(v));
    } else if whole.starts_with('[') {
        let all: Vec<Value> =
            serde_json::from_str(text).map_err(|e| format!("the JSON array is invalid: {e}"))?;
        for (i, v) in all.into_iter().enumerate() {
            one(i + 1, Ok(v));
        }
    } else {
        for (i, l) in text.lines().enumerate() {
            if !l.trim().is_empty() {
                one(
                    i + 1,
                    serde_json::from_str(l).map_err(|e| format!("invalid JSON: {e}")),
                );
            }
        }
    }
    if out.numbers.is_empty() && out.rejected.is_empty() {
        return Err("the request body is empty: send JSON lines or an array of objects".into());
    }
    Ok(out)
}

/// A name or tag value as line protocol writes it: `,` and space (and `=` outside a
/// measurement) escaped, a backslash doubled; control characters refused (a line break would
/// end the line), and a measurement may not start with `#` (a comment line).
fn escaped(what: &str, s: &str, measurement: bool) -> Result<String, String> {
    if let Some(c) = s.chars().find(|c| c.is_control()) {
        return Err(format!("{what} {s:?} holds the control character {c:?}"));
    }
    if measurement && s.starts_with('#') {
        return Err(format!("{what} {s:?} starts with '#'"));
    }
    let mut out = String::with_capacity(s.len() + 2);
    for c in s.chars() {
        if matches!(c, ',' | ' ' | '\\') || (c == '=' && !measurement) {
            out.push('\\');
        }
        out.push(c);
    }
    Ok(out)
}

/// One object as a line of line protocol.
pub fn line(v: &Value, o: &JsonOptions) -> Result<String, String> {
    let Value::Object(obj) = v else {
        return Err("not a JSON object".into());
    };
    fn key_of<'a>(
        obj: &'a Map<String, Value>,
        names: &[&'static str],
    ) -> Option<(&'static str, &'a Value)> {
        names.iter().find_map(|n| obj.get(*n).map(|v| (*n, v)))
    }
    // `table` and `name` name the measurement only beside `fields`: in a flat object they are
    // ordinary keys.
    let explicit = obj.contains_key("fields");
    let names: &[&'static str] = match explicit {
        true => &["measurement", "table", "name"],
        false => &["measurement"],
    };
    let table = match key_of(obj, names) {
        Some((_, Value::String(s))) => s.clone(),
        Some((k, _)) => return Err(format!("{k:?} must be a string")),
        None => o
            .table
            .clone()
            .ok_or("no measurement: give `measurement` or ?table=")?,
    };
    let time = match key_of(obj, &["time", "timestamp"]) {
        None | Some((_, Value::Null)) => o.now_ns,
        Some((k, Value::Number(n))) => n
            .as_i64()
            .and_then(|n| n.checked_mul(o.precision_ns))
            .ok_or_else(|| format!("{k:?}: {n} is not an integer time in range"))?,
        Some((k, Value::String(s))) => {
            time_ns(s, o.precision_ns).ok_or_else(|| format!("{k:?}: {s:?} is not a time"))?
        }
        Some((k, _)) => return Err(format!("{k:?} must be a number or RFC 3339 text")),
    };
    let (tags, fields) = match (obj.get("tags"), obj.get("fields")) {
        (_, Some(Value::Object(f))) => (
            explicit_tags(obj.get("tags"))?,
            f.iter().filter(|(_, v)| !v.is_null()).collect(),
        ),
        (_, Some(_)) => return Err("\"fields\" must be an object".into()),
        (Some(_), None) => return Err("\"tags\" without \"fields\"".into()),
        (None, None) => flat(obj, o)?,
    };
    let mut out = escaped("measurement", &table, true)?;
    for (k, v) in &tags {
        if !v.is_empty() {
            let (k, v) = (
                escaped("tag key", k, false)?,
                escaped("tag value", v, false)?,
            );
            let _ = write!(out, ",{k}={v}");
        }
    }
    let fields: Vec<String> = fields
        .iter()
        .map(|(k, v)| {
            let key = escaped("field key", k, false)?;
            field(k, v, o.integers).map(|v| format!("{key}={v}"))
        })
        .collect::<Result<_, _>>()?;
    if fields.is_empty() {
        return Err("no field values".into());
    }
    let _ = write!(out, " {} {time}", fields.join(","));
    Ok(out)
}

type Pairs<'a> = Vec<(&'a String, &'a Value)>;

fn explicit_tags(t: Option<&Value>) -> Result<Vec<(String, String)>, String> {
    match t {
        None => Ok(Vec::new()),
        Some(Value::Object(m)) => m
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                Value::Number(n) => Ok((k.clone(), n.to_string())),
                Value::Bool(b) => Ok((k.clone(), b.to_string())),
                _ => Err(format!("tag {k:?} must be a string")),
            })
            .collect(),
        Some(_) => Err("\"tags\" must be an object".into()),
    }
}

/// A flat object's tags and fields.
fn flat<'a>(
    obj: &'a Map<String, Value>,
    o: &JsonOptions,
) -> Result<(Vec<(String, String)>, Pairs<'a>), String> {
    const META: [&str; 3] = ["measurement", "time", "timestamp"];
    let mut tags = Vec::new();
    let mut fields = Vec::new();
    for (k, v) in obj.iter().filter(|(k, _)| !META.contains(&k.as_str())) {
        let is_tag = match &o.tags {
            Some(names) => names.iter().any(|n| n == k),
            None => v.is_string(),
        };
        match (is_tag, v) {
            (_, Value::Null) => {}
            (true, Value::String(s)) => tags.push((k.clone(), s.clone())),
            (true, Value::Number(n)) => tags.push((k.clone(), n.to_string())),
            (true, Value::Bool(b)) => tags.push((k.clone(), b.to_string())),
            (true, _) => return Err(format!("tag {k:?} must be a string")),
            (false, _) => fields.push((k, v)),
        }
    }
    Ok((tags, fields))
}

/// A field value in line protocol.
fn field(k: &str, v: &Value, integers: bool) -> Result<String, String> {
    match v {
        Value::Number(n) if integers && (n.is_i64() || n.is_u64()) => match n.as_i64() {
            Some(i) => Ok(format!("{i}i")),
            None => Ok(format!("{}u", n.as_u64().expect("u64"))),
        },
        Value::Number(n) => match n.as_f64() {
            Some(f) if f.is_finite() => Ok(format!("{f:?}")),
            _ => Err(format!("field {k:?}: {n} is not a finite number")),
        },
        Value::Bool(b) => Ok(b.to_string()),
        Value::String(s) if s.contains('\n') => {
            Err(format!("field {k:?}: a string with a line break"))
        }
        Value::String(s) => Ok(format!(
            "\"{}\"",
            s.replace('\\', "\\\\").replace('"', "\\\"")
        )),
        Value::Array(_) => Err(format!("field {k:?}: arrays are not stored")),
        Value::Object(_) => Err(format!("field {k:?}: nested objects are not stored")),
        Value::Null => unreachable!("nulls are left out before"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts() -> JsonOptions {
        JsonOptions {
            table: Some("m".into()),
            precision_ns: 1,
            now_ns: 42,
            ..Default::default()
        }
    }

    #[test]
    fn objects() {
        let cases: &[(&str, &str, Result<&str, &str>)] = &[
            (
                "explicit",
                r#"{"measurement":"cpu","tags":{"host":"a"},"fields":{"u":1.5,"ok":true,"msg":"hi"},"time":7}"#,
                Ok("cpu,host=a msg=\"hi\",ok=true,u=1.5 7"),
            ),
            (
                "flat: strings are tags",
                r#"{"host":"a b","v":2,"time":9}"#,
                Ok("m,host=a\\ b v=2.0 9"),
            ),
            ("no time: the clock", r#"{"v":1}"#, Ok("m v=1.0 42")),
            (
                "rfc 3339",
                r#"{"v":1,"time":"1970-01-01T00:00:01Z"}"#,
                Ok("m v=1.0 1000000000"),
            ),
            (
                "null left out",
                r#"{"v":1,"w":null,"time":1}"#,
                Ok("m v=1.0 1"),
            ),
            (
                "table key",
                r#"{"table":"t","fields":{"v":1},"time":1}"#,
                Ok("t v=1.0 1"),
            ),
            (
                "a flat object's name is a tag",
                r#"{"name":"db1","v":1,"time":1}"#,
                Ok("m,name=db1 v=1.0 1"),
            ),
            ("array field", r#"{"v":[1]}"#, Err("field \"v\": arrays")),
            ("nested", r#"{"v":{"x":1}}"#, Err("field \"v\": nested")),
            ("no fields", r#"{"host":"a"}"#, Err("no field values")),
            ("not an object", r#"[1]"#, Err("not a JSON object")),
            (
                "bad time",
                r#"{"v":1,"time":"yesterday"}"#,
                Err("\"time\": \"yesterday\" is not a time"),
            ),
            (
                "fraction time",
                r#"{"v":1,"time":1.5}"#,
                Err("not an integer time"),
            ),
            (
                "line break",
                r#"{"fields":{"s":"a\nb"}}"#,
                Err("line break"),
            ),
            (
                "equals in a measurement is kept as it is",
                r#"{"measurement":"a=b","fields":{"v":1},"time":1}"#,
                Ok("a=b v=1.0 1"),
            ),
            (
                "a measurement that would be a comment",
                r##"{"measurement":"#m","fields":{"v":1}}"##,
                Err("starts with '#'"),
            ),
            (
                "a line break in a tag",
                r#"{"t":"a\nb","v":1}"#,
                Err("control character"),
            ),
            (
                "a tab in a measurement",
                r#"{"measurement":"\tm","fields":{"v":1}}"#,
                Err("control"),
            ),
        ];
        for (name, json, want) in cases {
            let v: Value = serde_json::from_str(json).unwrap();
            match (line(&v, &opts()), want) {
                (Ok(got), Ok(w)) => assert_eq!(&got, w, "{name}"),
                (Err(e), Err(w)) => assert!(e.contains(w), "{name}: {e}"),
                (got, _) => panic!("{name}: {got:?}"),
            }
        }
    }

    #[test]
    fn tags_param_and_integers() {
        let o = JsonOptions {
            tags: Some(vec!["dc".into()]),
            integers: true,
            ..opts()
        };
        let v: Value = serde_json::from_str(r#"{"dc":"x","name":"s","n":3,"f":1.5}"#).unwrap();
        assert_eq!(line(&v, &o).unwrap(), "m,dc=x f=1.5,n=3i,name=\"s\" 42");
    }

    #[test]
    fn bodies() {
        let body = b"{\"v\":1,\"time\":1}\n\n{bad\n{\"v\":2,\"time\":2}\n";
        let c = convert(body, &opts()).unwrap();
        assert_eq!(c.lines, "m v=1.0 1\nm v=2.0 2\n");
        assert_eq!(c.numbers, vec![1, 4]);
        assert_eq!(c.rejected.len(), 1);
        assert_eq!(c.rejected[0].0, 3);
        let c = convert(br#"[{"v":1,"time":1},{"x":[]}]"#, &opts()).unwrap();
        assert_eq!(c.numbers, vec![1]);
        assert_eq!(c.rejected[0].0, 2);
        assert!(convert(b"  \n", &opts()).unwrap_err().contains("empty"));
        let pretty = convert(b"{\n  \"v\": 1,\n  \"time\": 3\n}\n", &opts()).unwrap();
        assert_eq!(pretty.lines, "m v=1.0 3\n", "a pretty-printed object");
        assert!(
            convert(b"[1,", &opts())
                .unwrap_err()
                .contains("array is invalid")
        );
        assert!(convert(&[0xff], &opts()).unwrap_err().contains("UTF-8"));
    }
}
