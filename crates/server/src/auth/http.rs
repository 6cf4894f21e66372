//! The HTTP port's check: one middleware in front of every route. It reads the credentials
//! ([`super::credentials`]), refuses what authenticates nobody (401, with
//! `WWW-Authenticate`), checks the endpoint's own permission (writes: write on the database
//! the request names; admin endpoints: admin), and hands the [`Principal`] to the handlers,
//! which check each statement ([`super::access::StatementAccess`]).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tempora_query::sql::scope::Scope;

use super::credentials::from_headers;
use super::required::{self, Endpoint};
use crate::error::ServerError;
use crate::state::AppState;

/// The middleware.
pub async fn check(State(s): State<Arc<AppState>>, mut req: Request, next: Next) -> Response {
    let endpoint = required::endpoint_of(req.method().as_str(), req.uri().path());
    if matches!(endpoint, Endpoint::Health | Endpoint::Console) {
        return next.run(req).await;
    }
    // The console asks for a token in its own dialog, not the browser's password prompt.
    let challenge = !req.headers().contains_key(crate::console::HEADER);
    let creds = from_headers(
        req.headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok()),
        req.uri().query(),
    );
    let principal = match s.access.http(&creds) {
        Ok(p) => p,
        Err(e) => return refuse(e, challenge),
    };
    if let Some(perm) = required::for_endpoint(endpoint) {
        let scope = match endpoint {
            Endpoint::Write => Scope::Databases(BTreeSet::from([write_database(
                req.uri(),
                &s.config.default_database,
            )])),
            _ => Scope::None,
        };
        if let Err(e) = s.access.require(&principal, perm, &scope) {
            return refuse(e, challenge);
        }
    }
    req.extensions_mut().insert(principal);
    next.run(req).await
}

/// A refusal, with the challenge a 401 carries (unless the console asked without it).
fn refuse(e: tempora_query::QueryError, challenge: bool) -> Response {
    let unauthenticated = challenge && matches!(e, tempora_query::QueryError::Unauthenticated(_));
    let mut r = ServerError::Query(e).into_response();
    if unauthenticated {
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"tempora\", charset=\"UTF-8\""),
        );
    }
    r
}

/// The database a write names — `bucket` for `/api/v2/write`, `db` otherwise, else the
/// default — read with the same extractor as the handlers, so both see the same name.
pub fn write_database(uri: &axum::http::Uri, default: &str) -> String {
    let key = match uri.path() {
        "/api/v2/write" => "bucket",
        _ => "db",
    };
    axum::extract::Query::<HashMap<String, String>>::try_from_uri(uri)
        .ok()
        .and_then(|q| q.0.get(key).cloned())
        .unwrap_or_else(|| default.to_string())
}
