//! Token administration over HTTP (admin only; the middleware checks it):
//!
//! - `POST /api/v1/tokens` with `{"name": "grafana", "read": ["db1"], "write": [], "admin":
//!   false}` → 201 `{"name", "token"}` (the token is shown this once);
//! - `GET /api/v1/tokens` → `{"tokens": [{"name", "read", "write", "admin", "created"}]}`;
//! - `DELETE /api/v1/tokens/{name}` → 204, or 404 when there is no such token.

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use tempora_query::access::TokenAdmin;
use tempora_query::sql::TokenSpec;

use crate::error::ServerError;
use crate::state::AppState;

/// The body of a create request (lists or comma-separated text both accepted).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateBody {
    name: String,
    #[serde(default)]
    read: Databases,
    #[serde(default)]
    write: Databases,
    #[serde(default)]
    admin: bool,
}

#[derive(serde::Deserialize, Default)]
#[serde(untagged)]
enum Databases {
    #[default]
    None,
    List(Vec<String>),
    Text(String),
}

impl Databases {
    fn into_vec(self) -> Vec<String> {
        match self {
            Databases::None => Vec::new(),
            Databases::List(v) => v,
            Databases::Text(t) => t.split(',').map(|d| d.trim().to_string()).collect(),
        }
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, tempora_query::QueryError> + Send + 'static,
) -> Result<T, ServerError> {
    Ok(tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| ServerError::Internal(e.to_string()))??)
}

pub async fn create(State(s): State<Arc<AppState>>, body: axum::body::Bytes) -> Response {
    // Read whatever the content type says: curl -d sends JSON labelled as a form.
    let b: CreateBody = match serde_json::from_slice(&body) {
        Ok(b) => b,
        Err(e) => {
            return ServerError::BadRequest(format!(
                "token request: expected JSON {{\"name\", \"read\", \"write\", \"admin\"}}: {e}"
            ))
            .into_response();
        }
    };
    let spec = TokenSpec {
        name: b.name,
        read: b.read.into_vec(),
        write: b.write.into_vec(),
        admin: b.admin,
    };
    let access = s.access.clone();
    let name = spec.name.clone();
    match blocking(move || access.create(&spec)).await {
        Ok(token) => (
            StatusCode::CREATED,
            Json(json!({ "name": name, "token": token })),
        )
            .into_response(),
        Err(e) => e.into_response(),
    }
}

pub async fn list(State(s): State<Arc<AppState>>) -> Response {
    let access = s.access.clone();
    match blocking(move || access.list()).await {
        Ok(tokens) => {
            let rows: Vec<_> = tokens
                .into_iter()
                .map(|t| {
                    json!({
                        "name": t.name,
                        "read": t.read,
                        "write": t.write,
                        "admin": t.admin,
                        "created": chrono::DateTime::from_timestamp_nanos(t.created_ns).to_rfc3339(),
                    })
                })
                .collect();
            Json(json!({ "tokens": rows })).into_response()
        }
        Err(e) => e.into_response(),
    }
}

pub async fn revoke(State(s): State<Arc<AppState>>, Path(name): Path<String>) -> Response {
    let access = s.access.clone();
    let n = name.clone();
    match blocking(move || {
        access
            .store
            .revoke(&n)
            .map_err(|e| tempora_query::QueryError::Sql(e.to_string()))
    })
    .await
    {
        Ok(true) => StatusCode::NO_CONTENT.into_response(),
        Ok(false) => (
            StatusCode::NOT_FOUND,
            Json(json!({ "error": format!("token {name:?} does not exist") })),
        )
            .into_response(),
        Err(e) => e.into_response(),
    }
}
