//! Prometheus's HTTP query API, so Grafana's Prometheus data source and `promtool` work:
//! `/api/v1/query`, `/api/v1/query_range` (PromQL through the front door), `/api/v1/series`,
//! `/api/v1/labels`, `/api/v1/label/<name>/values` (from the series indexes), and the
//! endpoints clients probe (`status/buildinfo`, `metadata`, `query_exemplars`, `rules`,
//! `alerts`).
//!
//! Parameters come from the URL and, for POST, from a form body (`match[]` may repeat). The
//! database is `?db=` in the URL (else the default database), and every endpoint needs read
//! permission on it. Errors are Prometheus's: 400 `bad_data` for bad parameters and
//! queries, 422 `execution` for a query that fails running, 503 `timeout`.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use tempora_query::promql::{self, Steps, time};
use tempora_query::sql::Statement;
use tempora_query::sql::scope::Scope;
use tempora_query::{QueryError, QueryOptions};

use super::json;
use crate::auth::Principal;
use crate::body::read_body;
use crate::error::ServerError;
use crate::state::AppState;

/// Largest form body a query request may have (bytes).
pub const MAX_FORM_BYTES: usize = 1 << 20;

/// A request's parameters, in order (a name may repeat).
pub struct Params(Vec<(String, String)>);

impl Params {
    async fn read(raw: Option<String>, headers: &HeaderMap, body: Body) -> Result<Params, Answer> {
        let mut pairs: Vec<(String, String)> =
            crate::form::pairs(raw.as_deref().unwrap_or("")).collect();
        let form = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
        if form {
            let body = read_body(headers, body, MAX_FORM_BYTES)
                .await
                .map_err(|e| Answer::error(e.status(), "bad_data", &e.to_string()))?;
            pairs.extend(crate::form::pairs(&String::from_utf8_lossy(&body)));
        }
        Ok(Params(pairs))
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn all(&self, name: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
            .collect()
    }
}

/// A Prometheus answer: status and JSON body.
pub struct Answer(StatusCode, String);

impl Answer {
    fn ok(body: String) -> Answer {
        Answer(StatusCode::OK, body)
    }

    fn error(status: StatusCode, kind: &str, msg: &str) -> Answer {
        Answer(status, json::error(kind, msg))
    }

    fn bad(e: impl std::fmt::Display) -> Answer {
        Answer::error(StatusCode::BAD_REQUEST, "bad_data", &e.to_string())
    }

    /// A failure as Prometheus reports it.
    fn from_query(e: &QueryError) -> Answer {
        let (status, kind) = match e.http_status() {
            400 => (400, "bad_data"),
            401 => (401, "unauthorized"),
            403 => (403, "forbidden"),
            404 => (404, "not_found"),
            408 => (503, "timeout"),
            503 => (503, "unavailable"),
            500 => (500, "internal"),
            _ => (422, "execution"),
        };
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        Answer::error(status, kind, &e.to_string())
    }

    fn from_server(e: ServerError) -> Answer {
        match e {
            ServerError::Query(q) => Answer::from_query(&q),
            other => Answer::error(other.status(), "unavailable", &other.to_string()),
        }
    }
}

impl IntoResponse for Answer {
    fn into_response(self) -> Response {
        (self.0, [(header::CONTENT_TYPE, "application/json")], self.1).into_response()
    }
}

/// The database of a request: `?db=` in the URL, else the default one.
fn database(s: &AppState, raw: &Option<String>) -> String {
    crate::form::pairs(raw.as_deref().unwrap_or(""))
        .find(|(k, _)| k == "db")
        .map(|(_, v)| v)
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| s.config.default_database.clone())
}

/// A time parameter, or `default` when absent.
fn time_param(p: &Params, name: &str, default: i64) -> Result<i64, Answer> {
    match p.get(name) {
        None | Some("") => Ok(default),
        Some(v) => time::parse_time(name, v).map_err(Answer::bad),
    }
}

fn now_ms() -> i64 {
    crate::state::now_ns().div_euclid(1_000_000)
}

/// The query options of a request: the server's row limit and the client's `timeout=`.
fn options(s: &AppState, p: &Params) -> Result<QueryOptions, Answer> {
    let timeout = match p.get("timeout") {
        None | Some("") => None,
        Some(v) => {
            let ms = time::parse_duration("timeout", v).map_err(Answer::bad)?;
            Some(std::time::Duration::from_millis(ms.max(1) as u64))
        }
    };
    Ok(QueryOptions {
        max_rows: Some(s.config.max_result_rows),
        timeout,
        ..Default::default()
    })
}

fn lookback(p: &Params) -> Result<i64, Answer> {
    match p.get("lookback_delta") {
        None | Some("") => Ok(promql::DEFAULT_LOOKBACK_MS),
        Some(v) => time::parse_duration("lookback_delta", v).map_err(Answer::bad),
    }
}

/// Runs a parsed query under the caller's permissions; its rows as series.
async fn run(
    s: &AppState,
    who: &Principal,
    db: &str,
    q: promql::PromQuery,
    p: &Params,
) -> Result<Vec<json::Series>, Answer> {
    let inner = s.ready().map_err(Answer::from_server)?;
    let mut opts = options(s, p)?;
    let stmt = Statement::PromQl(Box::new(q));
    let started = std::time::Instant::now();
    let out = inner
        .query
        .run_statement(
            db,
            &stmt,
            &mut opts,
            &s.access.statements(who.clone()),
            crate::state::now_ns(),
        )
        .await
        .map_err(|e| Answer::from_query(&e))?;
    s.metrics.promql_latency.observe(started.elapsed());
    Ok(json::series(&out.batches))
}

async fn instant(s: &AppState, who: &Principal, raw: Option<String>, p: Params) -> Answer {
    let db = database(s, &raw);
    let go = async {
        let text = p
            .get("query")
            .ok_or_else(|| Answer::bad("invalid parameter \"query\": no query given"))?;
        let t = time_param(&p, "time", now_ms())?;
        let q = promql::parse(text, Steps::instant(t), lookback(&p)?, true).map_err(Answer::bad)?;
        let kind = q.result_type();
        if let (promql::ResultType::String, promql_parser::parser::Expr::StringLiteral(l)) =
            (kind, &q.expr)
        {
            return Ok(Answer::ok(json::string_answer(t, &l.val)));
        }
        let order = q.value_order();
        let series = run(s, who, &db, q, &p).await?;
        Ok(Answer::ok(match kind {
            promql::ResultType::Matrix => json::matrix(&series),
            promql::ResultType::Scalar => {
                let v = series
                    .first()
                    .and_then(|x| x.points.first())
                    .map_or(f64::NAN, |p| p.1);
                json::scalar(t, v)
            }
            _ => json::vector(&series, t, order),
        }))
    };
    go.await.unwrap_or_else(|a| a)
}

async fn range(s: &AppState, who: &Principal, raw: Option<String>, p: Params) -> Answer {
    let db = database(s, &raw);
    let go = async {
        let text = p
            .get("query")
            .ok_or_else(|| Answer::bad("invalid parameter \"query\": no query given"))?;
        let need = |name: &str| {
            p.get(name)
                .filter(|v| !v.is_empty())
                .ok_or_else(|| Answer::bad(format!("invalid parameter {name:?}: missing")))
        };
        let start = time::parse_time("start", need("start")?).map_err(Answer::bad)?;
        let end = time::parse_time("end", need("end")?).map_err(Answer::bad)?;
        let step = time::parse_duration("step", need("step")?).map_err(Answer::bad)?;
        let steps = Steps::range(start, end, step).map_err(Answer::bad)?;
        let q = promql::parse(text, steps, lookback(&p)?, false).map_err(Answer::bad)?;
        let series = run(s, who, &db, q, &p).await?;
        Ok(Answer::ok(json::matrix(&series)))
    };
    go.await.unwrap_or_else(|a| a)
}

/// `GET|POST /api/v1/query`.
pub async fn query(
    State(s): State<Arc<AppState>>,
    axum::Extension(who): axum::Extension<Principal>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Answer {
    match Params::read(raw.clone(), &headers, body).await {
        Ok(p) => instant(&s, &who, raw, p).await,
        Err(a) => a,
    }
}

/// `GET|POST /api/v1/query_range`.
pub async fn query_range(
    State(s): State<Arc<AppState>>,
    axum::Extension(who): axum::Extension<Principal>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Answer {
    match Params::read(raw.clone(), &headers, body).await {
        Ok(p) => range(&s, &who, raw, p).await,
        Err(a) => a,
    }
}

/// What a listing reads: its database (read permission checked), selectors and range.
struct Listing {
    db: String,
    selectors: Vec<promql_parser::parser::VectorSelector>,
    range: (i64, i64),
}

fn listing(
    s: &AppState,
    who: &Principal,
    raw: &Option<String>,
    p: &Params,
    need_match: bool,
) -> Result<Listing, Answer> {
    let db = database(s, raw);
    let scope = Scope::Databases([db.clone()].into());
    s.access
        .require(who, crate::auth::grant::Permission::Read, &scope)
        .map_err(|e| Answer::from_query(&e))?;
    let texts = p.all("match[]");
    if need_match && texts.is_empty() {
        return Err(Answer::bad("no match[] parameter provided"));
    }
    let selectors = promql::meta::selectors(&texts).map_err(Answer::bad)?;
    let range = (
        time_param(p, "start", i64::MIN / 1_000_000)?,
        time_param(p, "end", i64::MAX / 1_000_000)?,
    );
    Ok(Listing {
        db,
        selectors,
        range,
    })
}

/// Runs a catalog listing on the blocking pool.
async fn listed<T: Send + 'static>(
    s: &AppState,
    l: Listing,
    f: impl FnOnce(&promql::plan::Context, &Listing) -> tempora_query::Result<T> + Send + 'static,
) -> Result<T, Answer> {
    let inner = s.ready().map_err(Answer::from_server)?;
    let engine = inner.engine.clone();
    if !engine.database_exists(&l.db) {
        return Err(Answer::from_query(&QueryError::DatabaseNotFound(l.db)));
    }
    tokio::task::spawn_blocking(move || {
        let cx = promql::plan::Context {
            engine: &engine,
            db: &l.db,
            steps: Steps::instant(0),
            lookback: promql::DEFAULT_LOOKBACK_MS,
            instant: true,
            keep_stale: false,
        };
        f(&cx, &l)
    })
    .await
    .map_err(|e| {
        Answer::error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            &e.to_string(),
        )
    })?
    .map_err(|e| Answer::from_query(&e))
}

fn string_list(items: &[String]) -> String {
    serde_json::to_string(items).expect("strings serialise")
}

/// `GET|POST /api/v1/series`.
pub async fn series(
    State(s): State<Arc<AppState>>,
    axum::Extension(who): axum::Extension<Principal>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Answer {
    let go = async {
        let p = Params::read(raw.clone(), &headers, body).await?;
        let l = listing(&s, &who, &raw, &p, true)?;
        let sets = listed(&s, l, |cx, l| {
            promql::meta::series(cx, &l.selectors, l.range)
        })
        .await?;
        let body = serde_json::to_string(&sets).expect("label sets serialise");
        Ok(Answer::ok(json::data(&body)))
    };
    go.await.unwrap_or_else(|a: Answer| a)
}

/// `GET|POST /api/v1/labels`.
pub async fn labels(
    State(s): State<Arc<AppState>>,
    axum::Extension(who): axum::Extension<Principal>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Answer {
    let go = async {
        let p = Params::read(raw.clone(), &headers, body).await?;
        let l = listing(&s, &who, &raw, &p, false)?;
        let names = listed(&s, l, |cx, l| {
            promql::meta::label_names(cx, &l.selectors, l.range)
        })
        .await?;
        Ok(Answer::ok(json::data(&string_list(&names))))
    };
    go.await.unwrap_or_else(|a: Answer| a)
}

/// `GET /api/v1/label/<name>/values`.
pub async fn label_values(
    State(s): State<Arc<AppState>>,
    axum::Extension(who): axum::Extension<Principal>,
    Path(name): Path<String>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
    body: Body,
) -> Answer {
    let go = async {
        let p = Params::read(raw.clone(), &headers, body).await?;
        let l = listing(&s, &who, &raw, &p, false)?;
        let values = listed(&s, l, move |cx, l| {
            promql::meta::label_values(cx, &name, &l.selectors, l.range)
        })
        .await?;
        Ok(Answer::ok(json::data(&string_list(&values))))
    };
    go.await.unwrap_or_else(|a: Answer| a)
}

/// `GET /api/v1/status/buildinfo`: the Prometheus version whose API this one follows.
pub async fn buildinfo() -> Answer {
    Answer::ok(json::data(&format!(
        "{{\"version\":\"2.42.0\",\"revision\":\"tempora-{}\",\"branch\":\"\",\"buildUser\":\"\",\"buildDate\":\"\",\"goVersion\":\"\"}}",
        env!("CARGO_PKG_VERSION")
    )))
}

/// `GET /api/v1/metadata`: metric metadata is not kept (remote write's metadata is skipped).
pub async fn metadata() -> Answer {
    Answer::ok(json::data("{}"))
}

/// `GET|POST /api/v1/query_exemplars`: exemplars are not kept.
pub async fn exemplars() -> Answer {
    Answer::ok(json::data("[]"))
}

/// `GET /api/v1/rules`: Tempora evaluates no recording or alerting rules.
pub async fn rules() -> Answer {
    Answer::ok(json::data("{\"groups\":[]}"))
}

/// `GET /api/v1/alerts`.
pub async fn alerts() -> Answer {
    Answer::ok(json::data("{\"alerts\":[]}"))
}
