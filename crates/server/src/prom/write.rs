//! Prometheus remote write 1.0 (`POST /api/v1/prom/write`, `/api/v1/write`): a
//! snappy-compressed protobuf `WriteRequest`, stored as one table per metric (`__name__`),
//! its other labels as tags and each sample as a row with the float field `value` at the
//! sample's millisecond time.
//!
//! The protobuf is read by hand, without copying labels or samples (the messages are small
//! and fixed: prometheus/prompb/types.proto, remote.proto):
//! `WriteRequest { repeated TimeSeries timeseries = 1; repeated MetricMetadata metadata = 3; }`,
//! `TimeSeries { repeated Label labels = 1; repeated Sample samples = 2; … }`,
//! `Label { string name = 1; string value = 2; }`,
//! `Sample { double value = 1; int64 timestamp = 2; }`. Unknown fields are skipped, as
//! protobuf requires (exemplars, histograms and metadata are not stored).
//!
//! Invariants: pure over bytes; every length is checked against the bytes present, so no
//! input panics or allocates beyond its size; a series that cannot be stored (no name, a
//! label named `time` or `value`, a bad name) is refused by its position with the reason,
//! and the others are written. Staleness markers (a special NaN) are stored bit for bit.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use tempora_model::{FieldValue, RowBatch, RowBatchBuilder, Timestamp};

use super::proto::{I64, LEN, Reader, VARINT};
use crate::body::read_body;
use crate::error::ServerError;
use crate::state::AppState;

/// The handler: `?db=` picks the database (default: the default database).
pub async fn write(
    State(s): State<Arc<AppState>>,
    Query(p): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ServerError> {
    let inner = s.ready()?;
    let db = crate::state::write_database(&s, &p).await?;
    // The compressed body is read raw: snappy is the protocol's, not a Content-Encoding.
    let mut headers = headers;
    headers.remove(axum::http::header::CONTENT_ENCODING);
    let body = read_body(&headers, body, s.config.max_body_bytes).await?;
    s.metrics.ingest_bytes.inc_by(body.len() as u64);
    // The rows may take four times the decoded body (keys are copied per row), held in the
    // ingest buffer before decoding.
    let decoded_len = snap::raw::decompress_len(&body)
        .map_err(|e| ServerError::BadRequest(format!("not snappy: {e}")))?;
    let limits = PromLimits {
        max_decoded_bytes: s.config.max_body_bytes,
        max_rows_bytes: decoded_len
            .saturating_mul(4)
            .saturating_add(1 << 20)
            .min(s.config.max_body_bytes.saturating_mul(4)),
    };
    let _room = inner.ingest_buffer.hold(limits.max_rows_bytes).await;
    let db2 = db.clone();
    let decoded = tokio::task::spawn_blocking(move || {
        let mut d = decode_body(&body, limits)?;
        // A metric whose qualified name is too long refuses its own series only.
        let mut keep = Vec::with_capacity(d.batches.len());
        for (mut b, rows) in d.batches.drain(..).zip(d.series_of_rows.drain(..)) {
            let name = tempora_storage::catalog::qualified(&db2, b.table());
            match b.set_table(&name) {
                Ok(()) => keep.push((b, rows)),
                Err(e) => {
                    let why = format!("metric {:?}: {e}", b.table());
                    let mut series: Vec<usize> = rows.clone();
                    series.dedup();
                    d.samples -= rows.len();
                    d.rejected
                        .extend(series.into_iter().map(|n| (n, why.clone())));
                }
            }
        }
        (d.batches, d.series_of_rows) = keep.into_iter().unzip();
        d.rejected.sort_by_key(|r| r.0);
        Ok::<_, String>(d)
    })
    .await
    .map_err(|e| ServerError::Internal(e.to_string()))?
    .map_err(ServerError::BadRequest)?;
    let parsed = tempora_lineproto::ParsedBody {
        rows: decoded.samples,
        batches: decoded.batches,
        errors: Vec::new(),
        line_numbers: decoded.series_of_rows,
    };
    let out = inner.gate.write(parsed).await?;
    s.metrics.ingest_rows.inc_by(out.rows as u64);
    let mut rejected: Vec<String> = decoded
        .rejected
        .iter()
        .map(|(n, r)| format!("series {n}: {r}"))
        .collect();
    rejected.extend(out.rejected.iter().map(|r| {
        let why = tempora_storage::catalog::user_message(&db, &r.reason);
        format!("series {}: {why}", r.line)
    }));
    if rejected.is_empty() {
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    // 400: Prometheus drops the request instead of retrying it (its bad series stay bad).
    let body = serde_json::json!({
        "error": format!("{} series or samples rejected; the others were written", rejected.len()),
        "written": out.rows,
        "rejected": rejected,
    });
    Ok((StatusCode::BAD_REQUEST, axum::Json(body)).into_response())
}

/// Limits of one request.
#[derive(Debug, Clone, Copy)]
pub struct PromLimits {
    /// Largest decompressed body.
    pub max_decoded_bytes: usize,
    /// Most bytes the decoded rows may take (keys are copied per row).
    pub max_rows_bytes: usize,
}

/// Rows of one request, a batch per metric, and the series refused: (1-based position,
/// reason).
#[derive(Debug, Default)]
pub struct Decoded {
    pub batches: Vec<RowBatch>,
    /// For each batch, the 1-based position of each row's series in the request.
    pub series_of_rows: Vec<Vec<usize>>,
    pub samples: usize,
    pub rejected: Vec<(usize, String)>,
}

/// Decompresses (snappy block format) and decodes a remote-write body.
pub fn decode_body(body: &[u8], limits: PromLimits) -> Result<Decoded, String> {
    let len = snap::raw::decompress_len(body).map_err(|e| format!("not snappy: {e}"))?;
    if len > limits.max_decoded_bytes {
        return Err(format!(
            "the body decompresses to {len} bytes; the limit is {}",
            limits.max_decoded_bytes
        ));
    }
    let raw = snap::raw::Decoder::new()
        .decompress_vec(body)
        .map_err(|e| format!("not snappy: {e}"))?;
    decode(&raw, limits.max_rows_bytes)
}

/// Decodes a `WriteRequest` whose rows may take `max_rows_bytes`.
pub fn decode(buf: &[u8], max_rows_bytes: usize) -> Result<Decoded, String> {
    let mut out = Decoded::default();
    let mut budget = max_rows_bytes;
    let mut by_metric: Metrics = FxHashMap::default();
    let mut r = Reader { buf, pos: 0 };
    let mut n = 0;
    while let Some((field, wire)) = r.key()? {
        match (field, wire) {
            (1, LEN) => {
                n += 1;
                let ts = r.bytes()?;
                if let Err(e) = series(ts, n, &mut by_metric, &mut out.samples, &mut budget) {
                    out.rejected.push((n, e));
                }
            }
            _ => r.skip(wire)?,
        }
    }
    let mut names: Vec<&str> = by_metric.keys().copied().collect();
    names.sort_unstable();
    for name in names {
        let (b, rows) = by_metric.remove(name).expect("listed");
        out.batches.push(b.finish());
        out.series_of_rows.push(rows);
    }
    Ok(out)
}

/// A request's metrics: each one's rows and the position of each row's series.
type Metrics<'a> = FxHashMap<&'a str, (RowBatchBuilder, Vec<usize>)>;

/// One `TimeSeries` into its metric's batch. Two passes over its bytes: labels and a check of
/// every sample first (nothing is pushed for a series that is refused), then the rows. The
/// batch holds the series' key once, but further on each row may carry it (a new series'
/// rows each write it to the WAL), so the rows a request expands to are counted against
/// `budget` (bytes left) as if each copied the key, before any is pushed: a body of many
/// tiny samples under one long label cannot make the server allocate without bound.
fn series<'a>(
    buf: &'a [u8],
    n: usize,
    by_metric: &mut Metrics<'a>,
    samples: &mut usize,
    budget: &mut usize,
) -> Result<(), String> {
    let mut labels: Vec<(&str, &str)> = Vec::with_capacity(16);
    let mut count = 0usize;
    let mut r = Reader { buf, pos: 0 };
    while let Some((field, wire)) = r.key()? {
        match (field, wire) {
            (1, LEN) => labels.push(label(r.bytes()?)?),
            (2, LEN) => {
                let (_, ms) = sample(r.bytes()?)?;
                ms.checked_mul(1_000_000)
                    .ok_or_else(|| format!("timestamp {ms} ms is out of range"))?;
                count += 1;
            }
            _ => r.skip(wire)?,
        }
    }
    let name = labels
        .iter()
        .find(|(k, _)| *k == "__name__")
        .map(|(_, v)| *v)
        .ok_or("a series without __name__")?;
    let mut tags: Vec<(&str, &str)> = Vec::with_capacity(labels.len());
    for &(k, v) in &labels {
        match k {
            "__name__" => {}
            "time" | "value" => return Err(format!("label {k:?} is a column name of the table")),
            _ if v.is_empty() => {} // an empty label is no label (Prometheus' rule)
            _ => tags.push((k, v)),
        }
    }
    let key_bytes: usize = tags.iter().map(|(k, v)| k.len() + v.len() + 4).sum();
    let cost = count.saturating_mul(key_bytes + ROW_OVERHEAD);
    *budget = budget.checked_sub(cost).ok_or_else(|| {
        format!("the request expands to more rows than the limit allows ({count} samples of a {key_bytes}-byte series)")
    })?;
    let (b, rows) = match by_metric.entry(name) {
        Entry::Occupied(e) => e.into_mut(),
        Entry::Vacant(e) => {
            let b = RowBatchBuilder::new(name).map_err(|e| format!("metric {name:?}: {e}"))?;
            e.insert((b, Vec::new()))
        }
    };
    // The series' key is encoded once, by its first row; the others share it.
    let mut first = true;
    let mut r = Reader { buf, pos: 0 };
    while let Some((field, wire)) = r.key()? {
        match (field, wire) {
            (2, LEN) => {
                let (v, ms) = sample(r.bytes()?)?;
                let t = Timestamp(ms * 1_000_000); // checked in the first pass
                let value = [("value", FieldValue::F64(v))];
                let pushed = if first {
                    b.push(&tags, &value, t)
                } else {
                    b.push_same_series(&value, t)
                };
                pushed.map_err(|e| format!("metric {name:?}: {e}"))?;
                first = false;
                rows.push(n);
                *samples += 1;
            }
            _ => r.skip(wire)?,
        }
    }
    Ok(())
}

/// Bytes a row costs besides its key (row metadata, its field, its time).
const ROW_OVERHEAD: usize = 64;

fn label(buf: &[u8]) -> Result<(&str, &str), String> {
    let (mut name, mut value) = ("", "");
    let mut r = Reader { buf, pos: 0 };
    while let Some((field, wire)) = r.key()? {
        match (field, wire) {
            (1, LEN) => name = utf8(r.bytes()?)?,
            (2, LEN) => value = utf8(r.bytes()?)?,
            _ => r.skip(wire)?,
        }
    }
    Ok((name, value))
}

fn sample(buf: &[u8]) -> Result<(f64, i64), String> {
    let (mut value, mut ts) = (0.0, 0);
    let mut r = Reader { buf, pos: 0 };
    while let Some((field, wire)) = r.key()? {
        match (field, wire) {
            (1, I64) => value = f64::from_bits(r.fixed64()?),
            (2, VARINT) => ts = r.varint()? as i64,
            _ => r.skip(wire)?,
        }
    }
    Ok((value, ts))
}

fn utf8(b: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(b).map_err(|_| "a label is not UTF-8".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prom::proto::encode;

    #[test]
    fn requests() {
        let body = encode(&[
            (
                vec![("__name__", "up"), ("job", "node"), ("instance", "a:9100")],
                vec![(1.0, 1_700_000_000_000), (0.0, 1_700_000_015_000)],
            ),
            (
                vec![("__name__", "up"), ("job", "node"), ("instance", "b:9100")],
                vec![(1.0, 5)],
            ),
            (
                vec![("__name__", "temp"), ("zone", "")],
                vec![(f64::NAN, 7)],
            ),
            (vec![("job", "x")], vec![(1.0, 1)]),
            (vec![("__name__", "bad"), ("time", "x")], vec![(1.0, 1)]),
        ]);
        let d = decode(&body, 1 << 20).unwrap();
        assert_eq!(d.samples, 4);
        let names: Vec<&str> = d.batches.iter().map(|b| b.table()).collect();
        assert_eq!(names, ["temp", "up"]);
        let up = &d.batches[1];
        assert_eq!(up.len(), 3);
        assert_eq!(up.row(0).time.0, 1_700_000_000_000_000_000);
        let mut tags = up.tag_names().to_vec();
        tags.sort();
        assert_eq!(tags, ["instance", "job"]);
        // The empty label is no tag; the NaN is kept bit for bit.
        assert!(d.batches[0].tag_names().is_empty());
        assert_eq!(
            d.rejected,
            vec![
                (4, "a series without __name__".to_string()),
                (
                    5,
                    "label \"time\" is a column name of the table".to_string()
                )
            ]
        );
    }

    #[test]
    fn hostile_bytes_are_errors() {
        let cases: &[(&str, &[u8], &str)] = &[
            ("truncated varint", &[0x0a, 0xff], "truncated varint"),
            (
                "length past the end",
                &[0x0a, 0x05, 0x01],
                "runs past the end",
            ),
            ("bad wire type", &[0x0b], "wire type 3"),
        ];
        for (name, bytes, want) in cases {
            let e = decode(bytes, 1 << 20).unwrap_err();
            assert!(e.contains(want), "{name}: {e}");
        }
        // A bad series inside a good frame is refused alone.
        let d = decode(&[0x0a, 0x02, 0x0a, 0x09], 1 << 20).unwrap();
        assert_eq!(d.rejected.len(), 1, "{:?}", d.rejected);
        let big = snap::raw::Encoder::new()
            .compress_vec(&vec![0u8; 1000])
            .unwrap();
        let limits = PromLimits {
            max_decoded_bytes: 100,
            max_rows_bytes: 1 << 20,
        };
        let e = decode_body(&big, limits).unwrap_err();
        assert!(e.contains("limit is 100"), "{e}");
        assert!(decode_body(b"\xff\xff\xff", limits).is_err());
        // Many tiny samples under a long label: refused before any row is made.
        let long = "x".repeat(10_000);
        let many: Vec<(f64, i64)> = (0..1000).map(|i| (0.0, i)).collect();
        let body = encode(&[(vec![("__name__", "m"), ("l", long.as_str())], many)]);
        let d = decode(&body, 1 << 20).unwrap();
        assert!(d.batches.iter().all(|b| b.is_empty()) && d.samples == 0);
        assert!(
            d.rejected[0].1.contains("expands to more rows"),
            "{:?}",
            d.rejected
        );
        // A bad timestamp refuses its whole series: nothing of it is pushed.
        let body = encode(&[(vec![("__name__", "m")], vec![(1.0, 1), (2.0, i64::MAX)])]);
        let d = decode(&body, 1 << 20).unwrap();
        assert_eq!(d.samples, 0);
        assert!(d.rejected[0].1.contains("out of range"), "{:?}", d.rejected);
    }
}
