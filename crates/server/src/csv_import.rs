//! CSV to line protocol, shared by `POST /api/v1/import` and `tempora import`.
//!
//! A pure conversion: one CSV record (with its header) becomes one line-protocol line, so the
//! rows then take the same path as every other write (parse, gate, region workers) and get the
//! same checks. Rules:
//! - the header names the columns; `time_column` holds RFC 3339 (a space may stand for `T`,
//!   no offset means UTC) or an integer in the request's precision;
//! - columns listed in `tags` are tags; every other column is a field whose type is inferred
//!   from the rows at hand (the whole body over HTTP, the first batch in the CLI): integer
//!   when every cell is one, else float when every cell is a number, else boolean when every
//!   cell is `true`/`false`, else string. A later cell that does not fit its column's type is
//!   written with the type of its own text, and the engine names the conflict;
//! - an empty cell is a missing value; a row with no field values is rejected.
//!
//! Row numbers are 1-based data rows (the header is not counted).

use std::fmt::Write;

/// Which columns mean what.
#[derive(Debug, Clone)]
pub struct CsvSpec {
    pub table: String,
    pub time_column: String,
    pub tags: Vec<String>,
}

/// A CSV body converted to line protocol.
#[derive(Debug, Default)]
pub struct Converted {
    /// The line-protocol body, one line per accepted row.
    pub lines: String,
    /// For each line of `lines`, its CSV row number.
    pub rows: Vec<usize>,
    /// Rows refused during conversion: (row number, reason).
    pub rejected: Vec<(usize, String)>,
}

/// Finds the time column in the header.
pub fn time_index(headers: &csv::StringRecord, spec: &CsvSpec) -> Result<usize, String> {
    headers
        .iter()
        .position(|h| h == spec.time_column)
        .ok_or_else(|| {
            format!(
                "no column {:?} in the CSV header (columns: {})",
                spec.time_column,
                headers.iter().collect::<Vec<_>>().join(", ")
            )
        })
}

/// Converts a whole CSV body (header first).
pub fn convert(body: &[u8], spec: &CsvSpec, precision_ns: i64) -> Result<Converted, String> {
    let mut rdr = csv::ReaderBuilder::new().flexible(false).from_reader(body);
    let headers = rdr
        .headers()
        .map_err(|e| format!("CSV header: {e}"))?
        .clone();
    if headers.is_empty() || (headers.len() == 1 && headers[0].is_empty()) {
        return Err("the CSV body is empty: a header row is required".into());
    }
    let time_idx = time_index(&headers, spec)?;
    let records: Vec<_> = rdr.records().collect();
    let types = infer_types(
        records.iter().filter_map(|r| r.as_ref().ok()),
        headers.len(),
    );
    let mut out = Converted::default();
    for (i, rec) in records.into_iter().enumerate() {
        let row = i + 1;
        let line = rec.map_err(|e| format!("{e}")).and_then(|r| {
            let cols = Columns {
                spec,
                headers: &headers,
                types: &types,
                time_idx,
            };
            record_to_line(&cols, &r, precision_ns)
        });
        match line {
            Ok(l) => {
                out.lines.push_str(&l);
                out.lines.push('\n');
                out.rows.push(row);
            }
            Err(e) => out.rejected.push((row, e)),
        }
    }
    Ok(out)
}

/// What an import would make of a CSV body, without writing: each column's role (`time`,
/// `tag`, `field`) and type as [`convert`] infers it from the rows given, the first rows, and
/// the refusals among them.
#[derive(Debug, serde::Serialize)]
pub struct Preview {
    pub columns: Vec<PreviewColumn>,
    pub rows: Vec<Vec<String>>,
    pub rejected: Vec<(usize, String)>,
}

#[derive(Debug, serde::Serialize)]
pub struct PreviewColumn {
    pub name: String,
    pub role: &'static str,
    #[serde(rename = "type")]
    pub ty: &'static str,
}

/// The preview of `body` with its first `rows` data rows (types come from all rows given).
pub fn preview(
    body: &[u8],
    spec: &CsvSpec,
    precision_ns: i64,
    rows: usize,
) -> Result<Preview, String> {
    let converted = convert(body, spec, precision_ns)?;
    let mut rdr = csv::ReaderBuilder::new().flexible(true).from_reader(body);
    let headers = rdr
        .headers()
        .map_err(|e| format!("CSV header: {e}"))?
        .clone();
    let records: Vec<csv::StringRecord> = rdr.records().filter_map(|r| r.ok()).collect();
    let types = infer_types(records.iter(), headers.len());
    let time_idx = time_index(&headers, spec)?;
    let columns = headers
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let tag = spec.tags.iter().any(|t| t == name);
            PreviewColumn {
                name: name.to_string(),
                role: match (i == time_idx, tag) {
                    (true, _) => "time",
                    (_, true) => "tag",
                    _ => "field",
                },
                ty: match (i == time_idx, tag, types[i]) {
                    (true, _, _) => "timestamp",
                    (_, true, _) => "string",
                    (_, _, ColumnType::Integer) => "integer",
                    (_, _, ColumnType::Float) => "float",
                    (_, _, ColumnType::Boolean) => "boolean",
                    (_, _, ColumnType::String) => "string",
                },
            }
        })
        .collect();
    Ok(Preview {
        columns,
        rows: records
            .iter()
            .take(rows)
            .map(|r| r.iter().map(str::to_string).collect())
            .collect(),
        rejected: converted
            .rejected
            .into_iter()
            .filter(|(row, _)| *row <= rows)
            .collect(),
    })
}

/// The type of a field column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    Integer,
    Float,
    Boolean,
    String,
}

/// Each column's type from the cells of `records` (empty cells do not count).
pub fn infer_types<'a>(
    records: impl Iterator<Item = &'a csv::StringRecord>,
    columns: usize,
) -> Vec<ColumnType> {
    // Per column: could it still be integer, float, boolean?
    let mut can = vec![(true, true, true); columns];
    for r in records {
        for (c, v) in r.iter().enumerate().take(columns) {
            if v.is_empty() {
                continue;
            }
            let k = &mut can[c];
            k.0 &= v.parse::<i64>().is_ok();
            k.1 &= v.parse::<f64>().is_ok_and(f64::is_finite);
            k.2 &= matches!(v, "true" | "false");
        }
    }
    can.into_iter()
        .map(|k| match k {
            (true, _, _) => ColumnType::Integer,
            (_, true, _) => ColumnType::Float,
            (_, _, true) => ColumnType::Boolean,
            _ => ColumnType::String,
        })
        .collect()
}

/// What the columns of a CSV body mean.
pub struct Columns<'a> {
    pub spec: &'a CsvSpec,
    pub headers: &'a csv::StringRecord,
    pub types: &'a [ColumnType],
    pub time_idx: usize,
}

/// One record as one line of line protocol (without the newline).
pub fn record_to_line(
    cols: &Columns,
    rec: &csv::StringRecord,
    precision_ns: i64,
) -> Result<String, String> {
    let (spec, headers, time_idx) = (cols.spec, cols.headers, cols.time_idx);
    let raw_time = rec.get(time_idx).unwrap_or("");
    let t = time_ns(raw_time, precision_ns).ok_or_else(|| {
        format!(
            "time {raw_time:?} in column {:?} is neither RFC 3339 nor an integer",
            spec.time_column
        )
    })?;
    if let Some(c) = rec
        .iter()
        .position(|v| v.contains(['\n', '\r']))
        .filter(|&c| c != time_idx)
    {
        return Err(format!(
            "the value of column {:?} holds a line break, which line protocol cannot carry",
            headers.get(c).unwrap_or("")
        ));
    }
    // `=` needs no escape in a measurement, and line protocol keeps a `\=` there as it is.
    let mut line = escape(&spec.table).replace("\\=", "=");
    let mut fields = String::new();
    for (c, (h, v)) in headers.iter().zip(rec.iter()).enumerate() {
        if h == spec.time_column || v.is_empty() {
            continue;
        }
        if spec.tags.iter().any(|t| t == h) {
            let _ = write!(line, ",{}={}", escape(h), escape(v));
        } else {
            if !fields.is_empty() {
                fields.push(',');
            }
            let ty = cols.types.get(c).copied().unwrap_or(ColumnType::String);
            let _ = write!(fields, "{}={}", escape(h), typed_value(v, ty));
        }
    }
    if fields.is_empty() {
        return Err("no field values in this row".into());
    }
    let _ = write!(line, " {fields} {t}");
    Ok(line)
}

/// Escapes a measurement, tag key, tag value or field key.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' | ',' | '=' | ' ' => {
                out.push('\\');
                out.push(c);
            }
            '\n' => out.push_str("\\n"),
            _ => out.push(c),
        }
    }
    out
}

/// A field value with the type its text reads as.
pub fn field_value(v: &str) -> String {
    if v.parse::<i64>().is_ok() {
        format!("{v}i")
    } else if v.parse::<f64>().is_ok_and(f64::is_finite) || matches!(v, "true" | "false") {
        v.to_string()
    } else {
        quote(v)
    }
}

/// A field value written as its column's type when it fits, else as its own text reads.
pub fn typed_value(v: &str, ty: ColumnType) -> String {
    let fits = match ty {
        ColumnType::Integer => v.parse::<i64>().is_ok(),
        ColumnType::Float => v.parse::<f64>().is_ok_and(f64::is_finite),
        ColumnType::Boolean => matches!(v, "true" | "false"),
        ColumnType::String => true,
    };
    match ty {
        _ if !fits => field_value(v),
        ColumnType::Integer => format!("{v}i"),
        ColumnType::Float | ColumnType::Boolean => v.to_string(),
        ColumnType::String => quote(v),
    }
}

fn quote(v: &str) -> String {
    format!("\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""))
}

/// A time cell in nanoseconds: an integer in units of `precision_ns`, or RFC 3339.
pub fn time_ns(v: &str, precision_ns: i64) -> Option<i64> {
    let v = v.trim();
    if let Ok(n) = v.parse::<i64>() {
        return n.checked_mul(precision_ns);
    }
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(v) {
        return t.timestamp_nanos_opt();
    }
    let v = v.trim_end_matches('Z');
    ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d"]
        .iter()
        .find_map(|f| {
            chrono::NaiveDateTime::parse_from_str(v, f)
                .ok()
                .or_else(|| {
                    chrono::NaiveDate::parse_from_str(v, f)
                        .ok()
                        .and_then(|d| d.and_hms_opt(0, 0, 0))
                })
        })
        .and_then(|t| t.and_utc().timestamp_nanos_opt())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> CsvSpec {
        CsvSpec {
            table: "cpu".into(),
            time_column: "time".into(),
            tags: vec!["host".into()],
        }
    }

    /// The preview gives each column's role and the type the import infers, the first rows,
    /// and the refusals among them.
    #[test]
    fn preview_names_roles_types_and_refusals() {
        let body = b"time,host,usage,ok,note\n\
            2024-01-01T00:00:00Z,a,1,true,x\n\
            2024-01-01T00:00:01Z,b,2.5,false,\n\
            not a time,c,3,true,z\n";
        let p = preview(body, &spec(), 1, 3).unwrap();
        let got: Vec<(&str, &str, &str)> = p
            .columns
            .iter()
            .map(|c| (c.name.as_str(), c.role, c.ty))
            .collect();
        assert_eq!(
            got,
            [
                ("time", "time", "timestamp"),
                ("host", "tag", "string"),
                ("usage", "field", "float"),
                ("ok", "field", "boolean"),
                ("note", "field", "string"),
            ]
        );
        assert_eq!(p.rows.len(), 3);
        assert_eq!(p.rows[1], ["2024-01-01T00:00:01Z", "b", "2.5", "false", ""]);
        assert_eq!(p.rejected.len(), 1, "{:?}", p.rejected);
        assert_eq!(p.rejected[0].0, 3);
        assert_eq!(preview(body, &spec(), 1, 1).unwrap().rejected, []);
        let e = preview(b"when,v\n1,2\n", &spec(), 1, 5).unwrap_err();
        assert!(e.contains("no column \"time\""), "{e}");
    }

    #[test]
    fn times() {
        for (s, p, want) in [
            ("1970-01-01T00:00:00Z", 1, Some(0)),
            ("1970-01-01 00:00:01.5", 1, Some(1_500_000_000)),
            ("2024-02-29T12:00:00Z", 1, Some(1_709_208_000_000_000_000)),
            (
                "2024-02-29T13:00:00+01:00",
                1,
                Some(1_709_208_000_000_000_000),
            ),
            ("2024-02-29", 1, Some(1_709_164_800_000_000_000)),
            ("123", 1, Some(123)),
            ("123", 1_000_000_000, Some(123_000_000_000)),
            ("9223372036854775807", 1000, None),
            ("yesterday", 1, None),
            ("", 1, None),
        ] {
            assert_eq!(time_ns(s, p), want, "{s}");
        }
    }

    #[test]
    fn field_types_from_text() {
        for (v, want) in [
            ("42", "42i"),
            ("-1.5", "-1.5"),
            ("true", "true"),
            ("NaN", "\"NaN\""),
            ("a \"b\"", "\"a \\\"b\\\"\""),
        ] {
            assert_eq!(field_value(v), want, "{v}");
        }
    }

    #[test]
    fn a_body_converts_row_by_row() {
        let body = b"time,host,usage,note,n\n\
            1970-01-01T00:00:01Z,a b,1.5,ok,1\n\
            never,a,2,,2\n\
            1970-01-01T00:00:02Z,c=d,,,\n\
            1970-01-01T00:00:03Z,x,3,7,3\n";
        let c = convert(body, &spec(), 1).unwrap();
        assert_eq!(
            c.lines,
            "cpu,host=a\\ b usage=1.5,note=\"ok\",n=1i 1000000000\n\
             cpu,host=x usage=3,note=\"7\",n=3i 3000000000\n",
            "3 is a float in a float column and a string in a string column"
        );
        assert_eq!(c.rows, vec![1, 4]);
        assert_eq!(c.rejected.len(), 2);
        assert_eq!(c.rejected[0].0, 2);
        assert!(c.rejected[0].1.contains("\"never\""), "{:?}", c.rejected);
        assert_eq!(c.rejected[1], (3, "no field values in this row".into()));
    }

    #[test]
    fn column_types_are_inferred_from_every_cell() {
        let recs: Vec<csv::StringRecord> = [
            vec!["1", "1", "true", "x", "", "1"],
            vec!["2", "2.5", "false", "1", "", "true"],
        ]
        .into_iter()
        .map(csv::StringRecord::from)
        .collect();
        use ColumnType::*;
        assert_eq!(
            infer_types(recs.iter(), 6),
            vec![Integer, Float, Boolean, String, Integer, String]
        );
        assert_eq!(typed_value("2.5", Integer), "2.5", "does not fit: own type");
        assert_eq!(typed_value("true", String), "\"true\"");
    }

    #[test]
    fn bad_bodies_are_named() {
        for (name, body, want) in [
            ("empty", &b""[..], "empty"),
            ("no time column", b"t,v\n1,2\n", "no column \"time\""),
        ] {
            let e = convert(body, &spec(), 1).unwrap_err();
            assert!(e.contains(want), "{name}: {e}");
        }
        // A value with a line break is refused by its row; the rows after keep their numbers.
        let c = convert(b"time,v,note\n1,2,\"two\nlines\"\n3,4,ok\n", &spec(), 1).unwrap();
        assert_eq!(c.rows, vec![2]);
        assert_eq!(c.rejected[0].0, 1);
        assert!(
            c.rejected[0].1.contains("\"note\" holds a line break"),
            "{:?}",
            c.rejected
        );
        // A short row is rejected by number; the others are kept.
        let c = convert(b"time,v\n1,2\n3\n4,5\n", &spec(), 1).unwrap();
        assert_eq!(c.rows, vec![1, 3]);
        assert_eq!(c.rejected[0].0, 2);
    }
}
