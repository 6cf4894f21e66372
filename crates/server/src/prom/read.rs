//! Prometheus remote read 1.0 (`POST /api/v1/read`, `/api/v1/prom/read`): a snappy
//! protobuf `ReadRequest` of queries (a time range and label matchers each), answered with
//! every matching series' raw samples in `[start, end]`, staleness markers included, as a
//! snappy protobuf `ReadResponse` of sampled time series (the only response type Prometheus
//! 2.x asks for; a request that accepts only streamed chunks is refused).
//!
//! Each query runs through the front door as the range selector `{matchers}[end − start]`
//! at `end`, under the caller's read permission and the query limits.
//!
//! `ReadRequest { repeated Query queries = 1; repeated ResponseType accepted_response_types = 2; }`,
//! `Query { int64 start_timestamp_ms = 1; int64 end_timestamp_ms = 2; repeated LabelMatcher matchers = 3; … }`,
//! `LabelMatcher { Type type = 1; string name = 2; string value = 3; }` (EQ, NEQ, RE, NRE),
//! `ReadResponse { repeated QueryResult results = 1; }`, `QueryResult { repeated TimeSeries timeseries = 1; }`.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use promql_parser::label::{Matcher, Matchers};
use promql_parser::parser::token::{T_EQL, T_EQL_REGEX, T_NEQ, T_NEQ_REGEX};
use promql_parser::parser::{Expr, MatrixSelector, VectorSelector};
use tempora_query::promql::{self, Steps};
use tempora_query::sql::Statement;

use super::proto::{LEN, Reader, VARINT, put_bytes, put_series};
use crate::auth::Principal;
use crate::body::read_body;
use crate::error::ServerError;
use crate::state::AppState;

/// Most queries one read request may hold.
pub const MAX_QUERIES: usize = 64;

/// One query of a read request.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadQuery {
    pub start: i64,
    pub end: i64,
    /// (type, name, value): type 0 `=`, 1 `!=`, 2 `=~`, 3 `!~`.
    pub matchers: Vec<(u64, String, String)>,
}

/// Decodes a `ReadRequest`: its queries, and whether the client accepts sampled answers.
pub fn decode(buf: &[u8]) -> Result<(Vec<ReadQuery>, bool), String> {
    let mut r = Reader { buf, pos: 0 };
    let (mut queries, mut types) = (Vec::new(), Vec::new());
    while let Some((field, wire)) = r.key()? {
        match (field, wire) {
            (1, LEN) => {
                if queries.len() == MAX_QUERIES {
                    return Err(format!("more than {MAX_QUERIES} queries in one request"));
                }
                queries.push(query(r.bytes()?)?);
            }
            (2, VARINT) => types.push(r.varint()?),
            (2, LEN) => {
                // Packed.
                let mut p = Reader {
                    buf: r.bytes()?,
                    pos: 0,
                };
                while p.pos < p.buf.len() {
                    types.push(p.varint()?);
                }
            }
            _ => r.skip(wire)?,
        }
    }
    Ok((queries, types.is_empty() || types.contains(&0)))
}

fn query(buf: &[u8]) -> Result<ReadQuery, String> {
    let mut q = ReadQuery {
        start: 0,
        end: 0,
        matchers: Vec::new(),
    };
    let mut r = Reader { buf, pos: 0 };
    while let Some((field, wire)) = r.key()? {
        match (field, wire) {
            (1, VARINT) => q.start = r.varint()? as i64,
            (2, VARINT) => q.end = r.varint()? as i64,
            (3, LEN) => q.matchers.push(matcher(r.bytes()?)?),
            _ => r.skip(wire)?,
        }
    }
    Ok(q)
}

fn matcher(buf: &[u8]) -> Result<(u64, String, String), String> {
    let (mut t, mut name, mut value) = (0, String::new(), String::new());
    let mut r = Reader { buf, pos: 0 };
    while let Some((field, wire)) = r.key()? {
        match (field, wire) {
            (1, VARINT) => t = r.varint()?,
            (2, LEN) => name = utf8(r.bytes()?)?,
            (3, LEN) => value = utf8(r.bytes()?)?,
            _ => r.skip(wire)?,
        }
    }
    if t > 3 {
        return Err(format!("unknown matcher type {t}"));
    }
    Ok((t, name, value))
}

fn utf8(b: &[u8]) -> Result<String, String> {
    String::from_utf8(b.to_vec()).map_err(|_| "a matcher is not UTF-8".to_string())
}

/// The selector `{matchers}[end − start]` of a read query.
fn selector(q: &ReadQuery) -> Result<Expr, String> {
    let matchers = q
        .matchers
        .iter()
        .map(|(t, name, value)| {
            let id = [T_EQL, T_NEQ, T_EQL_REGEX, T_NEQ_REGEX][*t as usize];
            Matcher::new_matcher(id, name.clone(), value.clone())
        })
        .collect::<Result<Vec<_>, _>>()?;
    let range = std::time::Duration::from_millis(q.end.saturating_sub(q.start).max(0) as u64);
    Ok(Expr::MatrixSelector(MatrixSelector {
        vs: VectorSelector::new(None, Matchers::new(matchers)),
        range,
    }))
}

/// The encoded `QueryResult` of one query's series.
fn result(out: &mut Vec<u8>, series: &[super::json::Series]) {
    let mut msg = Vec::new();
    let mut ts = Vec::new();
    for s in series {
        let labels: Vec<(&str, &str)> = s
            .labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let samples: Vec<(f64, i64)> = s.points.iter().map(|(t, v)| (*v, *t)).collect();
        ts.clear();
        put_series(&mut ts, &labels, &samples);
        put_bytes(&mut msg, 1, &ts);
    }
    put_bytes(out, 1, &msg);
}

fn refuse(status: StatusCode, msg: String) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain")], msg).into_response()
}

/// The handler.
pub async fn read(
    State(s): State<Arc<AppState>>,
    axum::Extension(who): axum::Extension<Principal>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let db = crate::form::pairs(raw.as_deref().unwrap_or(""))
        .find(|(k, _)| k == "db")
        .map(|(_, v)| v)
        .unwrap_or_else(|| s.config.default_database.clone());
    let mut headers = headers;
    headers.remove(header::CONTENT_ENCODING);
    let body = match read_body(&headers, body, s.config.max_body_bytes).await {
        Ok(b) => b,
        Err(e) => return refuse(e.status(), e.to_string()),
    };
    let decoded = snap::raw::decompress_len(&body)
        .map_err(|e| format!("not snappy: {e}"))
        .and_then(|n| {
            if n > s.config.max_body_bytes {
                Err(format!(
                    "the body decompresses to {n} bytes; the limit is {}",
                    s.config.max_body_bytes
                ))
            } else {
                snap::raw::Decoder::new()
                    .decompress_vec(&body)
                    .map_err(|e| format!("not snappy: {e}"))
            }
        })
        .and_then(|raw| decode(&raw));
    let (queries, samples_ok) = match decoded {
        Ok(d) => d,
        Err(e) => return refuse(StatusCode::BAD_REQUEST, e),
    };
    if !samples_ok {
        return refuse(
            StatusCode::BAD_REQUEST,
            "only the SAMPLES response type is served; STREAMED_XOR_CHUNKS is not".into(),
        );
    }
    let inner = match s.ready() {
        Ok(i) => i,
        Err(e) => return refuse(e.status(), e.to_string()),
    };
    let mut out = Vec::new();
    for q in &queries {
        let expr = match selector(q) {
            Ok(e) => e,
            Err(e) => return refuse(StatusCode::BAD_REQUEST, e),
        };
        let query = promql::PromQuery {
            text: format!("remote read {:?}", q.matchers),
            expr,
            steps: Steps::instant(q.end),
            lookback: promql::DEFAULT_LOOKBACK_MS,
            instant: true,
            keep_stale: true,
        };
        let mut opts = tempora_query::QueryOptions {
            max_rows: Some(s.config.max_result_rows),
            ..Default::default()
        };
        let run = inner
            .query
            .run_statement(
                &db,
                &Statement::PromQl(Box::new(query)),
                &mut opts,
                &s.access.statements(who.clone()),
                crate::state::now_ns(),
            )
            .await;
        match run {
            Ok(o) => result(&mut out, &super::json::series(&o.batches)),
            Err(e) => {
                let e = ServerError::Query(e);
                return refuse(e.status(), e.to_string());
            }
        }
    }
    let compressed = match snap::raw::Encoder::new().compress_vec(&out) {
        Ok(c) => c,
        Err(e) => return refuse(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "application/x-protobuf"),
            (header::CONTENT_ENCODING, "snappy"),
        ],
        compressed,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prom::proto::put_varint;

    fn encode_request(queries: &[ReadQuery], types: &[u64]) -> Vec<u8> {
        let mut out = Vec::new();
        for q in queries {
            let mut m = Vec::new();
            put_varint(&mut m, 1 << 3);
            put_varint(&mut m, q.start as u64);
            put_varint(&mut m, 2 << 3);
            put_varint(&mut m, q.end as u64);
            for (t, n, v) in &q.matchers {
                let mut lm = Vec::new();
                put_varint(&mut lm, 1 << 3);
                put_varint(&mut lm, *t);
                put_bytes(&mut lm, 2, n.as_bytes());
                put_bytes(&mut lm, 3, v.as_bytes());
                put_bytes(&mut m, 3, &lm);
            }
            put_bytes(&mut out, 1, &m);
        }
        for t in types {
            put_varint(&mut out, 2 << 3);
            put_varint(&mut out, *t);
        }
        out
    }

    #[test]
    fn read_requests_decode_and_refuse() {
        let q = ReadQuery {
            start: 1000,
            end: 5000,
            matchers: vec![
                (0, "__name__".into(), "up".into()),
                (2, "job".into(), "a|b".into()),
            ],
        };
        let body = encode_request(std::slice::from_ref(&q), &[]);
        assert_eq!(decode(&body).unwrap(), (vec![q.clone()], true));
        assert!(
            !decode(&encode_request(std::slice::from_ref(&q), &[1]))
                .unwrap()
                .1
        );
        assert!(
            decode(&encode_request(std::slice::from_ref(&q), &[1, 0]))
                .unwrap()
                .1
        );
        // A packed list of types.
        let mut packed = encode_request(&[], &[]);
        put_bytes(&mut packed, 2, &[1, 0]);
        assert!(decode(&packed).unwrap().1);
        let e = selector(&q).unwrap();
        assert_eq!(e.to_string(), r#"{__name__="up",job=~"a|b"}[4s]"#);
        let bad = ReadQuery {
            matchers: vec![(7, "a".into(), "b".into())],
            ..q.clone()
        };
        assert!(
            decode(&encode_request(&[bad], &[]))
                .unwrap_err()
                .contains("matcher type 7")
        );
        let bad_re = ReadQuery {
            matchers: vec![(2, "a".into(), "(".into())],
            ..q
        };
        assert!(selector(&bad_re).is_err());
        for cut in 1..body.len() {
            // Every truncation is an error or a shorter request, never a panic.
            let _ = decode(&body[..cut]);
        }
        let many: Vec<ReadQuery> = (0..=MAX_QUERIES)
            .map(|_| ReadQuery {
                start: 0,
                end: 1,
                matchers: vec![],
            })
            .collect();
        assert!(
            decode(&encode_request(&many, &[]))
                .unwrap_err()
                .contains("more than 64")
        );
    }
}
