//! InfluxDB 1.8's other answer forms for `/query`: CSV (`Accept: application/csv` or
//! `text/csv`) and chunked JSON (`chunked=true[&chunk_size=N]`). Pure functions of the JSON
//! results the statements produced.
//!
//! - CSV, as InfluxDB's csvFormatter writes it: a header `name,tags,<columns…>` per statement
//!   (again when the columns change), then one record per point: the measurement, its tags
//!   as `k=v,k2=v2` (sorted, `,`, ` ` and `=` escaped), its values; times are integers
//!   (nanoseconds, or the `epoch` unit when one was asked for); statements are separated by
//!   a blank line; an error is `error\n<message>`.
//! - Chunked: one JSON object per line, each holding at most `chunk_size` points of one
//!   series; every chunk but a series' last is marked `"partial": true`, and every result
//!   object but a statement's last too (as InfluxDB's chunked emitter does).

use serde_json::{Value, json};

/// InfluxDB's default chunk size (points).
pub const DEFAULT_CHUNK_SIZE: usize = 10_000;

/// Whether a request asks for CSV.
pub fn wants_csv(accept: Option<&str>) -> bool {
    accept.is_some_and(|a| a.contains("application/csv") || a.contains("text/csv"))
}

fn escape_tag(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, ',' | ' ' | '=') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A value as InfluxDB's CSV writes it; a time in RFC 3339 becomes nanoseconds.
fn cell(v: &Value, is_time: bool) -> String {
    match v {
        Value::Null => String::new(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (_, Some(u), _) => u.to_string(),
            (_, _, Some(f)) => format!("{f}"),
            _ => n.to_string(),
        },
        Value::String(s) if is_time => chrono::DateTime::parse_from_rfc3339(s)
            .ok()
            .and_then(|t| t.timestamp_nanos_opt())
            .map_or_else(|| s.clone(), |ns| ns.to_string()),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Appends one CSV record, quoting a field as Go's `encoding/csv` does (when it holds a
/// comma, a quote or a line break, or starts with a space or tab).
fn record<S: AsRef<str>>(out: &mut String, fields: &[S]) {
    for (i, f) in fields.iter().enumerate() {
        let f = f.as_ref();
        if i > 0 {
            out.push(',');
        }
        let quote = f.contains([',', '"', '\r', '\n']) || f.starts_with([' ', '\t']);
        if quote {
            out.push('"');
            out.push_str(&f.replace('"', "\"\""));
            out.push('"');
        } else {
            out.push_str(f);
        }
    }
    out.push('\n');
}

/// The results (`{"statement_id", "series" | "error"}` objects) as CSV.
pub fn csv(results: &[Value]) -> String {
    let mut out = String::new();
    let mut first_statement = true;
    for r in results {
        if let Some(e) = r["error"].as_str() {
            record(&mut out, &["error"]);
            record(&mut out, &[e]);
            continue;
        }
        let Some(series) = r["series"].as_array().filter(|s| !s.is_empty()) else {
            continue;
        };
        if !first_statement {
            out.push('\n');
        }
        first_statement = false;
        let mut columns: Option<&Vec<Value>> = None;
        for s in series {
            let cols = s["columns"].as_array();
            if let Some(cols) = cols
                && columns != Some(cols)
            {
                if columns.is_some() {
                    out.push('\n');
                }
                let mut header = vec!["name".to_string(), "tags".to_string()];
                header.extend(
                    cols.iter()
                        .map(|c| c.as_str().unwrap_or_default().to_string()),
                );
                record(&mut out, &header);
                columns = Some(cols);
            }
            let name = s["name"].as_str().unwrap_or_default();
            let tags = s["tags"]
                .as_object()
                .map(|t| {
                    let mut pairs: Vec<(&String, &Value)> = t.iter().collect();
                    pairs.sort_by(|a, b| a.0.cmp(b.0));
                    pairs
                        .iter()
                        .map(|(k, v)| {
                            format!(
                                "{}={}",
                                escape_tag(k),
                                escape_tag(v.as_str().unwrap_or_default())
                            )
                        })
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .unwrap_or_default();
            let time_at = cols.and_then(|c| c.iter().position(|x| x == "time"));
            for row in s["values"].as_array().into_iter().flatten() {
                let mut fields = vec![name.to_string(), tags.clone()];
                fields.extend(
                    row.as_array()
                        .into_iter()
                        .flatten()
                        .enumerate()
                        .map(|(i, v)| cell(v, Some(i) == time_at)),
                );
                record(&mut out, &fields);
            }
        }
    }
    out
}

/// The results as chunked JSON lines of at most `size` points per chunk.
pub fn chunked(results: &[Value], size: usize) -> String {
    let size = size.max(1);
    let mut out = String::new();
    let mut line = |v: Value| {
        out.push_str(&v.to_string());
        out.push('\n');
    };
    for r in results {
        let id = r["statement_id"].clone();
        let Some(series) = r["series"].as_array().filter(|s| !s.is_empty()) else {
            line(json!({ "results": [r] }));
            continue;
        };
        let mut pieces: Vec<Value> = Vec::new();
        for s in series {
            let values = s["values"].as_array().cloned().unwrap_or_default();
            let n = values.len().div_ceil(size).max(1);
            for (i, chunk) in values.chunks(size).enumerate().chain(
                // A series with no values still gets its one piece.
                (values.is_empty()).then_some((0usize, &[][..])),
            ) {
                let mut piece = s.clone();
                piece["values"] = Value::Array(chunk.to_vec());
                if i + 1 < n {
                    piece["partial"] = Value::Bool(true);
                }
                pieces.push(piece);
            }
        }
        let last = pieces.len() - 1;
        for (i, piece) in pieces.into_iter().enumerate() {
            let mut result = json!({ "statement_id": id, "series": [piece] });
            if i < last {
                result["partial"] = Value::Bool(true);
            }
            line(json!({ "results": [result] }));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results() -> Vec<Value> {
        vec![
            json!({"statement_id": 0, "series": [
                {"name": "cpu", "tags": {"host": "a,b", "dc": "x y"}, "columns": ["time", "mean"],
                 "values": [["2023-11-14T22:13:20Z", 1.5], ["2023-11-14T22:14:20Z", null]]},
                {"name": "cpu", "tags": {"host": "c", "dc": "z"}, "columns": ["time", "mean"],
                 "values": [["2023-11-14T22:13:20Z", 2]]}
            ]}),
            json!({"statement_id": 1, "series": [
                {"name": "databases", "columns": ["name"], "values": [["db\"1"]]}
            ]}),
            json!({"statement_id": 2, "error": "database not found: x"}),
        ]
    }

    #[test]
    fn csv_as_influxdb_writes_it() {
        assert_eq!(
            csv(&results()),
            "name,tags,time,mean\n\
             cpu,\"dc=x\\ y,host=a\\,b\",1700000000000000000,1.5\n\
             cpu,\"dc=x\\ y,host=a\\,b\",1700000060000000000,\n\
             cpu,\"dc=z,host=c\",1700000000000000000,2\n\
             \n\
             name,tags,name\n\
             databases,,\"db\"\"1\"\n\
             error\n\
             database not found: x\n"
        );
        assert!(wants_csv(Some("application/csv")));
        assert!(wants_csv(Some("text/csv; charset=utf-8")));
        assert!(!wants_csv(Some("application/json")));
        assert!(!wants_csv(None));
    }

    #[test]
    fn chunks_split_series_and_mark_partial_pieces() {
        let text = chunked(&results(), 1);
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 5, "{text}");
        let first = &lines[0]["results"][0];
        assert_eq!(first["series"][0]["values"].as_array().unwrap().len(), 1);
        assert_eq!(first["series"][0]["partial"], true);
        assert_eq!(first["partial"], true);
        let last_of_0 = &lines[2]["results"][0];
        assert!(last_of_0.get("partial").is_none());
        assert!(last_of_0["series"][0].get("partial").is_none());
        assert_eq!(lines[4]["results"][0]["error"], "database not found: x");
        // Everything in one chunk when it fits.
        assert_eq!(chunked(&results(), DEFAULT_CHUNK_SIZE).lines().count(), 4);
    }
}
