//! `GET|POST /api/v1/sql?db=&q=&format=json|csv|arrow` (the query may also be the POST body).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

use tempora_query::QueryOptions;
use tempora_query::limits::{parse_bytes, parse_duration};

use crate::body::read_body;
use crate::error::ServerError;
use crate::state::AppState;

/// The client's limits: `timeout=` (e.g. `5s`, `500ms`) and `memory_limit=` (e.g. `64MB`),
/// both at most the server's.
fn options(p: &HashMap<String, String>, max_rows: usize) -> Result<QueryOptions, ServerError> {
    let bad = |k: &str, e: String| ServerError::BadRequest(format!("parameter {k}: {e}"));
    Ok(QueryOptions {
        timeout: match p.get("timeout") {
            Some(v) => parse_duration(v).map_err(|e| bad("timeout", e))?,
            None => None,
        },
        memory_bytes: match p.get("memory_limit") {
            Some(v) => parse_bytes(v).map_err(|e| bad("memory_limit", e))?,
            None => None,
        },
        max_rows: Some(max_rows),
    })
}

pub async fn sql(
    State(s): State<Arc<AppState>>,
    Query(p): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let started = Instant::now();
    let r = run(&s, &p, headers, body).await;
    s.metrics.http_query_latency.observe(started.elapsed());
    match r {
        Ok(resp) => resp,
        Err(e) => {
            s.metrics.query_errors.inc_by(1);
            e.into_response()
        }
    }
}

async fn run(
    s: &AppState,
    p: &HashMap<String, String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ServerError> {
    let inner = s.ready()?;
    let q = match p.get("q") {
        Some(q) => q.clone(),
        None => {
            let raw = read_body(&headers, body, s.config.max_body_bytes).await?;
            String::from_utf8(raw.to_vec())
                .map_err(|_| ServerError::BadRequest("the query is not valid UTF-8".into()))?
        }
    };
    if q.trim().is_empty() {
        return Err(ServerError::BadRequest(
            "no query: pass it as q= or as the request body".into(),
        ));
    }
    let db = p
        .get("db")
        .cloned()
        .unwrap_or_else(|| s.config.default_database.clone());
    if db == s.config.default_database {
        inner.query.dbs.create(&db)?;
    }
    let opts = options(p, s.config.max_result_rows)?;
    // Dropped with this future when the client goes away, which stops the query.
    let running = s.metrics.queries.start();
    let out = inner
        .query
        .sql_with(&db, &q, crate::state::now_ns(), &opts)
        .await;
    running.finish();
    if let Err(tempora_query::QueryError::Timeout(_)) = &out {
        s.metrics.queries.timed_out.inc_by(1);
    }
    let out = out?;
    let format = p.get("format").map(String::as_str).unwrap_or("json");
    let (ctype, bytes) = tokio::task::spawn_blocking({
        let (schema, batches, format) = (out.schema, out.batches, format.to_string());
        move || encode(&format, &schema, &batches)
    })
    .await
    .map_err(|e| ServerError::Internal(e.to_string()))??;
    Ok((StatusCode::OK, [("Content-Type", ctype)], bytes).into_response())
}

/// Encodes a result as JSON (`{"columns": [{name, type}], "rows": [[…]]}`), CSV (header row,
/// RFC 3339 UTC timestamps) or an Arrow IPC stream.
pub fn encode(
    format: &str,
    schema: &SchemaRef,
    batches: &[RecordBatch],
) -> Result<(&'static str, Vec<u8>), ServerError> {
    let arrow_err = |e: arrow::error::ArrowError| ServerError::Internal(e.to_string());
    match format {
        "json" => {
            let columns: Vec<_> = schema
                .fields()
                .iter()
                .map(|f| serde_json::json!({"name": f.name(), "type": f.data_type().to_string()}))
                .collect();
            let mut w = arrow::json::ArrayWriter::new(Vec::new());
            for b in batches {
                w.write(b).map_err(arrow_err)?;
            }
            w.finish().map_err(arrow_err)?;
            let buf = w.into_inner();
            let objects: Vec<serde_json::Map<String, serde_json::Value>> = if buf.is_empty() {
                Vec::new()
            } else {
                serde_json::from_slice(&buf).map_err(|e| ServerError::Internal(e.to_string()))?
            };
            let rows: Vec<Vec<serde_json::Value>> = objects
                .into_iter()
                .map(|mut o| {
                    schema
                        .fields()
                        .iter()
                        .map(|f| o.remove(f.name()).unwrap_or(serde_json::Value::Null))
                        .collect()
                })
                .collect();
            let body = serde_json::json!({ "columns": columns, "rows": rows });
            Ok(("application/json", serde_json::to_vec(&body).expect("json")))
        }
        "csv" => {
            let mut w = arrow::csv::WriterBuilder::new()
                .with_header(true)
                .with_timestamp_tz_format("%Y-%m-%dT%H:%M:%S%.fZ".to_string())
                .with_timestamp_format("%Y-%m-%dT%H:%M:%S%.fZ".to_string())
                .build(Vec::new());
            if batches.is_empty() {
                w.write(&RecordBatch::new_empty(schema.clone()))
                    .map_err(arrow_err)?;
            }
            for b in batches {
                w.write(b).map_err(arrow_err)?;
            }
            Ok(("text/csv", w.into_inner()))
        }
        "arrow" => {
            let mut w =
                arrow::ipc::writer::StreamWriter::try_new(Vec::new(), schema).map_err(arrow_err)?;
            for b in batches {
                w.write(b).map_err(arrow_err)?;
            }
            w.finish().map_err(arrow_err)?;
            Ok((
                "application/vnd.apache.arrow.stream",
                w.into_inner().map_err(arrow_err)?,
            ))
        }
        other => Err(ServerError::BadRequest(format!(
            "unknown format {other:?}: expected json, csv or arrow"
        ))),
    }
}
