//! InfluxDB-compatible endpoints: `/write` (v1), `/api/v2/write`, `/query` (the statements
//! clients and loaders send at start, retention policies among them: [`crate::retention`]),
//! `/ping`.
//!
//! Choices: writing to a database that does not exist creates it (as QuestDB and GreptimeDB
//! do); a body with some bad lines stores the good ones and answers 400 with every rejected
//! line by number and reason.

use std::collections::HashMap;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tempora_lineproto::{ParseOptions, Precision};

use crate::body::read_body;
use crate::error::ServerError;
use crate::state::AppState;

type Params = Query<HashMap<String, String>>;

pub async fn ping() -> Response {
    (
        StatusCode::NO_CONTENT,
        [
            ("X-Influxdb-Version", "1.8.10"),
            ("X-Influxdb-Build", "OSS"),
        ],
    )
        .into_response()
}

pub async fn write_v1(
    State(s): State<Arc<AppState>>,
    Query(p): Params,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let db = p.get("db").cloned();
    write(s, db, p.get("precision").cloned(), headers, body).await
}

pub async fn write_v2(
    State(s): State<Arc<AppState>>,
    Query(p): Params,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let db = p.get("bucket").cloned();
    write(s, db, p.get("precision").cloned(), headers, body).await
}

async fn write(
    s: Arc<AppState>,
    db: Option<String>,
    precision: Option<String>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    match write_inner(&s, db, precision, headers, body).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn write_inner(
    s: &Arc<AppState>,
    db: Option<String>,
    precision: Option<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ServerError> {
    let inner = s.ready()?;
    let db = db.unwrap_or_else(|| s.config.default_database.clone());
    let precision = parse_precision(precision.as_deref())?;
    crate::state::ensure_database(&inner.engine, &db).await?;
    let body = read_body(&headers, body, s.config.max_body_bytes).await?;
    if body.is_empty() {
        // As InfluxDB 2 does: an empty write is almost always a client bug.
        return Err(ServerError::BadRequest(
            "the request body is empty: send one or more lines of line protocol".into(),
        ));
    }
    s.metrics.ingest_bytes.inc_by(body.len() as u64);
    let out = ingest_lines(s, &db, body, precision).await?;
    Ok(out.answer(&[]))
}

pub fn parse_precision(p: Option<&str>) -> Result<Precision, ServerError> {
    match p {
        None | Some("") => Ok(Precision::default()),
        Some(p) => p
            .parse()
            .map_err(|e: tempora_lineproto::Error| ServerError::BadRequest(e.to_string())),
    }
}

/// A comma-separated list parameter (`tags=a,b`), empty items dropped; `None` when absent.
pub fn list_param(p: &HashMap<String, String>, key: &str) -> Option<Vec<String>> {
    p.get(key).map(|t| {
        t.split(',')
            .filter(|x| !x.is_empty())
            .map(String::from)
            .collect()
    })
}

/// What a write did, line by line.
pub struct WriteOutcome {
    pub written: usize,
    /// Lines in the body (good and bad).
    pub lines: usize,
    /// (1-based line number, reason), in line order.
    pub rejected: Vec<(usize, String)>,
}

impl WriteOutcome {
    /// 204 when every line was stored; otherwise 400 naming each rejected line. `extra` are
    /// rejections found before line protocol (CSV rows), already numbered.
    pub fn answer(&self, extra: &[(usize, String)]) -> Response {
        if self.rejected.is_empty() && extra.is_empty() {
            return StatusCode::NO_CONTENT.into_response();
        }
        let mut all: Vec<_> = self.rejected.iter().chain(extra).collect();
        all.sort_by_key(|r| r.0);
        let rejected: Vec<_> = all
            .iter()
            .map(|(line, reason)| json!({ "line": line, "reason": reason }))
            .collect();
        let total = self.lines + extra.len();
        let body = json!({
            "error": format!("{} of {} lines rejected; the other {} were written", all.len(), total, self.written),
            "written": self.written,
            "rejected": rejected,
        });
        (StatusCode::BAD_REQUEST, axum::Json(body)).into_response()
    }
}

/// Parses a line-protocol body off the runtime and writes it through the gate into `db`.
pub async fn ingest_lines(
    s: &Arc<AppState>,
    db: &str,
    body: bytes::Bytes,
    precision: Precision,
) -> Result<WriteOutcome, ServerError> {
    let inner = s.ready()?;
    let _room = inner.ingest_buffer.hold(body.len()).await;
    let mut opts = ParseOptions::new(precision, crate::state::now_ns());
    opts.max_line_bytes = s.config.max_line_bytes;
    let gate = inner.gate.clone();
    let db2 = db.to_string();
    let parsed = tokio::task::spawn_blocking(move || {
        let mut parsed = gate.parse(&body, &opts);
        for b in &mut parsed.batches {
            let name = tempora_storage::catalog::qualified(&db2, b.table());
            if let Err(e) = b.set_table(&name) {
                return Err(ServerError::BadRequest(format!(
                    "measurement {:?}: {e}",
                    b.table()
                )));
            }
        }
        Ok(parsed)
    })
    .await
    .map_err(|e| ServerError::Internal(e.to_string()))??;
    let lines = parsed.rows + parsed.errors.len();
    let out = inner.gate.write(parsed).await?;
    s.metrics.ingest_rows.inc_by(out.rows as u64);
    let rejected = out
        .rejected
        .into_iter()
        .map(|r| {
            (
                r.line,
                tempora_storage::catalog::user_message(db, &r.reason),
            )
        })
        .collect();
    Ok(WriteOutcome {
        written: out.rows,
        lines,
        rejected,
    })
}

/// `/query?q=`: InfluxQL (SELECT, SHOW …, databases, retention policies) in InfluxDB's JSON.
pub async fn query(
    State(s): State<Arc<AppState>>,
    axum::Extension(who): axum::Extension<crate::auth::Principal>,
    Query(mut p): Params,
    headers: HeaderMap,
    body: Body,
) -> Response {
    if !p.contains_key("q") {
        // Clients may POST the query (and its parameters) as a form body.
        let raw = match read_body(&headers, body, 1 << 20).await {
            Ok(raw) => raw,
            Err(e) => return e.into_response(),
        };
        for (k, v) in crate::form::pairs(&String::from_utf8_lossy(&raw)) {
            p.entry(k).or_insert(v);
        }
    }
    let q = p.get("q").cloned().unwrap_or_default();
    let csv = crate::influxql_format::wants_csv(
        headers
            .get(axum::http::header::ACCEPT)
            .and_then(|v| v.to_str().ok()),
    );
    let chunk = (p.get("chunked").map(String::as_str) == Some("true")).then(|| {
        p.get("chunk_size")
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|&n| n > 0)
            .unwrap_or(crate::influxql_format::DEFAULT_CHUNK_SIZE)
    });
    match influxql(&s, &who, &q, &p).await {
        Ok(results) if csv => (
            [(axum::http::header::CONTENT_TYPE, "text/csv")],
            crate::influxql_format::csv(&results),
        )
            .into_response(),
        Ok(results) => match chunk {
            Some(size) => (
                [(axum::http::header::CONTENT_TYPE, "application/json")],
                crate::influxql_format::chunked(&results, size),
            )
                .into_response(),
            None => axum::Json(json!({ "results": results })).into_response(),
        },
        Err(e) if csv => (
            e.status(),
            [(axum::http::header::CONTENT_TYPE, "text/csv")],
            format!("error\n{}\n", e),
        )
            .into_response(),
        Err(e) => (e.status(), axum::Json(json!({ "error": e.to_string() }))).into_response(),
    }
}

/// Runs InfluxQL statements; one result per statement (an error ends only its own).
async fn influxql(
    s: &AppState,
    who: &crate::auth::Principal,
    q: &str,
    p: &HashMap<String, String>,
) -> Result<Vec<serde_json::Value>, ServerError> {
    s.ready()?;
    let stmts = tempora_query::influxql::parse(q).map_err(ServerError::BadRequest)?;
    if stmts.is_empty() {
        return Err(ServerError::BadRequest(
            "missing required parameter \"q\"".into(),
        ));
    }
    let mut results = Vec::new();
    for (id, stmt) in stmts.iter().enumerate() {
        results.push(match stmt {
            tempora_query::influxql::Statement::Other(text) => other(s, who, id, text)?,
            typed => crate::influxql_http::run(s, who, id, typed, p).await,
        });
    }
    Ok(results)
}

/// The statements kept as text: databases and retention policies.
fn other(
    s: &AppState,
    who: &crate::auth::Principal,
    id: usize,
    stmt: &str,
) -> Result<serde_json::Value, ServerError> {
    let inner = s.ready()?;
    {
        let words: Vec<&str> = stmt.split_whitespace().collect();
        let upper: Vec<String> = words.iter().map(|w| w.to_ascii_uppercase()).collect();
        let name = |i: usize| words.get(i).map(|w| w.trim_matches('"').to_string());
        // SHOW DATABASES reads; everything else here (databases, retention policies) is DDL.
        let perm = match upper.first().map(String::as_str) {
            Some("SHOW") => crate::auth::Permission::Read,
            _ => crate::auth::Permission::Admin,
        };
        s.access
            .require(who, perm, &tempora_query::sql::scope::Scope::None)?;
        if let Some(rp) = crate::retention::parse(&words) {
            return Ok(rp
                .map_err(ServerError::BadRequest)
                .and_then(|rp| crate::retention::run(s, id, rp))
                .unwrap_or_else(|e| json!({ "statement_id": id, "error": e.to_string() })));
        }
        let r = match upper
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .as_slice()
        {
            ["SHOW", "DATABASES"] => {
                let values: Vec<_> = inner
                    .query
                    .dbs
                    .list()
                    .into_iter()
                    .map(|d| json!([d]))
                    .collect();
                json!({ "statement_id": id, "series": [{ "name": "databases", "columns": ["name"], "values": values }] })
            }
            ["CREATE", "DATABASE", _, ..] => {
                inner.query.dbs.create(&name(2).expect("matched"))?;
                json!({ "statement_id": id })
            }
            ["DROP", "DATABASE", _] => {
                let db = name(2).expect("matched");
                inner.query.dbs.drop_database(&db)?;
                inner.query.forget(&db);
                json!({ "statement_id": id })
            }
            _ => {
                json!({ "statement_id": id, "error": format!("unsupported InfluxQL statement {stmt:?}: use SQL at /api/v1/sql or the PostgreSQL port") })
            }
        };
        Ok(r)
    }
}
