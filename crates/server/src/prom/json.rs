//! Prometheus's HTTP API answers, written straight into a string: `{"status":"success",
//! "data":{"resultType":…,"result":…}}` and `{"status":"error","errorType":…,"error":…}`.
//!
//! Times are seconds with the milliseconds as a fraction, values are strings in Go's
//! shortest form (`"1"`, `"0.1"`, `"NaN"`, `"+Inf"`); a matrix's series are ordered by their
//! labels and their points by time, as Prometheus orders them. Pure over record batches.

use std::collections::BTreeMap;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{Float64Type, Int64Type};
use tempora_query::promql::time::{format_seconds, format_value};

/// One series of an answer: its labels (sorted by name) and its points.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub labels: Vec<(String, String)>,
    pub points: Vec<(i64, f64)>,
}

/// Groups PromQL result rows `(labels…, __ts, __value)` into series ordered by labels, each
/// with its points in time order.
pub fn series(batches: &[RecordBatch]) -> Vec<Series> {
    type Labels = Vec<(String, String)>;
    let mut by_labels: BTreeMap<Labels, Vec<(i64, f64)>> = BTreeMap::new();
    for b in batches {
        let n = b.num_columns();
        if n < 2 {
            continue;
        }
        let names: Vec<String> = b.schema().fields()[..n - 2]
            .iter()
            .map(|f| f.name().clone())
            .collect();
        let labels: Vec<_> = (0..n - 2).map(|c| b.column(c).as_string::<i32>()).collect();
        let ts = b.column(n - 2).as_primitive::<Int64Type>();
        let values = b.column(n - 1).as_primitive::<Float64Type>();
        let mut key = Vec::with_capacity(n - 2);
        for i in 0..b.num_rows() {
            key.clear();
            for (name, col) in names.iter().zip(&labels) {
                if !col.is_null(i) && !col.value(i).is_empty() {
                    key.push((name.clone(), col.value(i).to_string()));
                }
            }
            by_labels
                .entry(key.clone())
                .or_default()
                .push((ts.value(i), values.value(i)));
        }
    }
    by_labels
        .into_iter()
        .map(|(labels, mut points)| {
            points.sort_by_key(|p| p.0);
            Series { labels, points }
        })
        .collect()
}

fn string(out: &mut String, s: &str) {
    out.push_str(&serde_json::to_string(s).expect("a string serialises"));
}

fn metric(out: &mut String, labels: &[(String, String)]) {
    out.push('{');
    for (i, (k, v)) in labels.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        string(out, k);
        out.push(':');
        string(out, v);
    }
    out.push('}');
}

/// `[t,"v"]`.
fn point(out: &mut String, t: i64, v: f64) {
    out.push('[');
    format_seconds(t, out);
    out.push_str(",\"");
    format_value(v, out);
    out.push_str("\"]");
}

fn success(result_type: &str, result: &str) -> String {
    format!(
        "{{\"status\":\"success\",\"data\":{{\"resultType\":\"{result_type}\",\"result\":{result}}}}}"
    )
}

/// A matrix answer.
pub fn matrix(series: &[Series]) -> String {
    let mut r = String::from("[");
    for (i, s) in series.iter().enumerate() {
        if i > 0 {
            r.push(',');
        }
        r.push_str("{\"metric\":");
        metric(&mut r, &s.labels);
        r.push_str(",\"values\":[");
        for (j, (t, v)) in s.points.iter().enumerate() {
            if j > 0 {
                r.push(',');
            }
            point(&mut r, *t, *v);
        }
        r.push_str("]}");
    }
    r.push(']');
    success("matrix", &r)
}

/// A vector answer at `t`: one point per series, ordered by labels or, for `sort` and
/// `sort_desc`, by value (`Some(true)`: descending; NaN last).
pub fn vector(series: &[Series], t: i64, by_value: Option<bool>) -> String {
    let mut items: Vec<(&Vec<(String, String)>, f64)> = series
        .iter()
        .filter_map(|s| s.points.last().map(|p| (&s.labels, p.1)))
        .collect();
    if let Some(desc) = by_value {
        items.sort_by(|a, b| {
            let (x, y) = if desc { (b.1, a.1) } else { (a.1, b.1) };
            match (a.1.is_nan(), b.1.is_nan()) {
                (true, true) => std::cmp::Ordering::Equal,
                (true, false) => std::cmp::Ordering::Greater,
                (false, true) => std::cmp::Ordering::Less,
                _ => x.partial_cmp(&y).expect("no NaN"),
            }
        });
    }
    let mut r = String::from("[");
    for (i, (labels, v)) in items.iter().enumerate() {
        if i > 0 {
            r.push(',');
        }
        r.push_str("{\"metric\":");
        metric(&mut r, labels);
        r.push_str(",\"value\":");
        point(&mut r, t, *v);
        r.push('}');
    }
    r.push(']');
    success("vector", &r)
}

/// A scalar answer.
pub fn scalar(t: i64, v: f64) -> String {
    let mut r = String::new();
    point(&mut r, t, v);
    success("scalar", &r)
}

/// A string answer.
pub fn string_answer(t: i64, s: &str) -> String {
    let mut r = String::from("[");
    format_seconds(t, &mut r);
    r.push(',');
    string(&mut r, s);
    r.push(']');
    success("string", &r)
}

/// `{"status":"success","data":<data>}` for data already in JSON.
pub fn data(data: &str) -> String {
    format!("{{\"status\":\"success\",\"data\":{data}}}")
}

/// An error answer.
pub fn error(kind: &str, msg: &str) -> String {
    let mut r = format!("{{\"status\":\"error\",\"errorType\":\"{kind}\",\"error\":");
    string(&mut r, msg);
    r.push('}');
    r
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Float64Array, Int64Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    fn batch(rows: &[(Option<&str>, i64, f64)]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("job", DataType::Utf8, true),
            Field::new("__ts", DataType::Int64, false),
            Field::new("__value", DataType::Float64, false),
        ]));
        RecordBatch::try_new(
            schema,
            vec![
                Arc::new(rows.iter().map(|r| r.0).collect::<StringArray>()),
                Arc::new(rows.iter().map(|r| r.1).collect::<Int64Array>()),
                Arc::new(rows.iter().map(|r| r.2).collect::<Float64Array>()),
            ],
        )
        .unwrap()
    }

    #[test]
    fn answers_in_prometheus_shape() {
        let b = batch(&[
            (Some("b"), 2000, 1.5),
            (Some("a"), 1500, f64::NAN),
            (Some("b"), 1000, 1.0),
            (None, 1000, f64::INFINITY),
        ]);
        let s = series(&[b]);
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].labels, vec![], "no labels sort first");
        assert_eq!(
            s[2].points,
            vec![(1000, 1.0), (2000, 1.5)],
            "points by time"
        );
        assert_eq!(
            matrix(&s),
            r#"{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1,"+Inf"]]},{"metric":{"job":"a"},"values":[[1.5,"NaN"]]},{"metric":{"job":"b"},"values":[[1,"1"],[2,"1.5"]]}]}}"#
        );
        assert_eq!(
            vector(&s, 2000, Some(true)),
            r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[2,"+Inf"]},{"metric":{"job":"b"},"value":[2,"1.5"]},{"metric":{"job":"a"},"value":[2,"NaN"]}]}}"#
        );
        assert_eq!(
            scalar(1_700_000_000_123, 0.1),
            r#"{"status":"success","data":{"resultType":"scalar","result":[1700000000.123,"0.1"]}}"#
        );
        assert_eq!(
            string_answer(1000, "a\"b"),
            r#"{"status":"success","data":{"resultType":"string","result":[1,"a\"b"]}}"#
        );
        assert_eq!(
            error("bad_data", "no \"x\""),
            r#"{"status":"error","errorType":"bad_data","error":"no \"x\""}"#
        );
    }
}
