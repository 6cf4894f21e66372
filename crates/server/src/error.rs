//! The server's error type: every failure a client can see, with its HTTP status.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("{0}")]
    BadRequest(String),
    #[error("request body is larger than the limit of {limit} bytes{after}")]
    TooLarge { limit: usize, after: &'static str },
    #[error("server is starting: replaying the write-ahead log")]
    Starting,
    #[error(transparent)]
    Gate(#[from] tempora_gate::GateError),
    #[error(transparent)]
    Query(#[from] tempora_query::QueryError),
    #[error(transparent)]
    Storage(#[from] tempora_storage::StorageError),
    #[error("{0}")]
    Internal(String),
}

impl ServerError {
    pub fn status(&self) -> StatusCode {
        let code = match self {
            Self::BadRequest(_) => 400,
            Self::TooLarge { .. } => 413,
            Self::Starting => 503,
            Self::Gate(tempora_gate::GateError::QueueFull { .. }) => 503,
            Self::Gate(tempora_gate::GateError::ShutDown) => 503,
            Self::Gate(tempora_gate::GateError::Storage(e)) | Self::Storage(e) => e.http_status(),
            Self::Query(e) => e.http_status(),
            Self::Internal(_) => 500,
        };
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }
}

impl IntoResponse for ServerError {
    fn into_response(self) -> Response {
        let status = self.status();
        let body = serde_json::json!({ "error": self.to_string() });
        let mut resp = (status, axum::Json(body)).into_response();
        if status == StatusCode::SERVICE_UNAVAILABLE {
            resp.headers_mut()
                .insert("Retry-After", axum::http::HeaderValue::from_static("1"));
        }
        resp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses() {
        let full = ServerError::Gate(tempora_gate::GateError::QueueFull { capacity: 8 });
        for (name, e, want) in [
            ("bad request", ServerError::BadRequest("x".into()), 400),
            (
                "too large",
                ServerError::TooLarge {
                    limit: 1,
                    after: "",
                },
                413,
            ),
            ("starting", ServerError::Starting, 503),
            ("queue full", full, 503),
            ("internal", ServerError::Internal("x".into()), 500),
        ] {
            let r = e.into_response();
            assert_eq!(r.status().as_u16(), want, "{name}");
            assert_eq!(
                r.headers().contains_key("Retry-After"),
                want == 503,
                "{name}: Retry-After goes with 503 only"
            );
        }
    }
}
