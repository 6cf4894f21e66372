//! `POST /api/v1/import?db=&table=&time_column=&tags=a,b&precision=[&preview=N]`: a CSV body
//! (header row first) written as rows of `table`; with `preview`, only what would be written
//! (each column's role and inferred type, the first N rows and their refusals), as JSON.
//!
//! The CSV is converted to line protocol (`csv_import`) and then takes the write path of
//! `/write`, so its answer has the same shape: 204 when every row was stored, otherwise 400
//! with each rejected row by its 1-based data-row number (the header is not counted) and the
//! reason. Defaults: `db` is the default database, `time_column` is `time`, no tags,
//! `precision` (for integer times) is `ns`.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};

use crate::body::read_body;
use crate::csv_import::{CsvSpec, convert};
use crate::error::ServerError;
use crate::influx::{ingest_lines, list_param, parse_precision};
use crate::state::AppState;

pub async fn import(
    State(s): State<Arc<AppState>>,
    Query(p): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    match import_inner(&s, p, headers, body).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn import_inner(
    s: &Arc<AppState>,
    p: HashMap<String, String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ServerError> {
    s.ready()?;
    let table = p
        .get("table")
        .filter(|t| !t.is_empty())
        .ok_or_else(|| ServerError::BadRequest("the `table` parameter is required".into()))?;
    let spec = CsvSpec {
        table: table.clone(),
        time_column: p
            .get("time_column")
            .cloned()
            .unwrap_or_else(|| "time".into()),
        tags: list_param(&p, "tags").unwrap_or_default(),
    };
    let precision = parse_precision(p.get("precision").map(String::as_str))?;
    if let Some(n) = p.get("preview") {
        return preview(s, n, &spec, precision.nanos(), headers, body).await;
    }
    let db = crate::state::write_database(s, &p).await?;
    let body = read_body(&headers, body, s.config.max_body_bytes).await?;
    s.metrics.ingest_bytes.inc_by(body.len() as u64);
    let converted = tokio::task::spawn_blocking(move || convert(&body, &spec, precision.nanos()))
        .await
        .map_err(|e| ServerError::Internal(e.to_string()))?
        .map_err(ServerError::BadRequest)?;
    let mut out = ingest_lines(
        s,
        &db,
        converted.lines.into(),
        tempora_lineproto::Precision::Ns,
    )
    .await?;
    // Line numbers of the converted body back to CSV row numbers.
    for r in &mut out.rejected {
        r.0 =
            r.0.checked_sub(1)
                .and_then(|i| converted.rows.get(i))
                .copied()
                .unwrap_or(r.0);
    }
    Ok(out.answer(&converted.rejected))
}

/// Most rows a preview returns.
pub const MAX_PREVIEW_ROWS: usize = 1000;

/// `preview=N`: what the import would make of the body (roles, inferred types, the first N
/// rows and their refusals) as JSON; nothing is written.
async fn preview(
    s: &Arc<AppState>,
    n: &str,
    spec: &CsvSpec,
    precision_ns: i64,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ServerError> {
    let rows = n
        .parse::<usize>()
        .ok()
        .filter(|r| *r <= MAX_PREVIEW_ROWS)
        .ok_or_else(|| {
            ServerError::BadRequest(format!(
                "parameter preview: expected a row count up to {MAX_PREVIEW_ROWS}, not {n:?}"
            ))
        })?;
    let body = read_body(&headers, body, s.config.max_body_bytes).await?;
    let spec = spec.clone();
    let p = tokio::task::spawn_blocking(move || {
        crate::csv_import::preview(&body, &spec, precision_ns, rows)
    })
    .await
    .map_err(|e| ServerError::Internal(e.to_string()))?
    .map_err(ServerError::BadRequest)?;
    Ok(axum::Json(p).into_response())
}
