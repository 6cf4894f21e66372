//! The query crate's error type, with its HTTP status and SQLSTATE.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum QueryError {
    #[error("database {0:?} does not exist")]
    DatabaseNotFound(String),
    #[error("invalid database name {name:?}: {reason}")]
    InvalidDatabase { name: String, reason: String },
    #[error("{0}")]
    Sql(String),
    /// A statement or feature Tempora does not run (HTTP 400, SQLSTATE 0A000).
    #[error("{0}")]
    Unsupported(String),
    /// A setting's value that is not valid for it (HTTP 400, SQLSTATE 22023).
    #[error("{0}")]
    InvalidParameter(String),
    #[error("database {0:?} already exists")]
    DuplicateDatabase(String),
    #[error("table {0:?} doesn't exist")]
    TableNotFound(String),
    #[error("table {0:?} already exists")]
    DuplicateTable(String),
    #[error("{}", one_line(.0))]
    DataFusion(#[from] datafusion::error::DataFusionError),
    #[error("{0}")]
    Arrow(#[from] arrow::error::ArrowError),
    #[error("storage: {0}")]
    Storage(#[from] tempora_storage::StorageError),
    #[error("{0}")]
    Model(#[from] tempora_model::ModelError),
    #[error("insert: {0}")]
    Insert(String),
    #[error("query cancelled: it ran longer than its timeout of {0:?}")]
    Timeout(std::time::Duration),
    #[error("the result has more than {0} rows (max_result_rows); add a LIMIT or aggregate")]
    TooManyRows(usize),
    #[error("model {0:?} does not exist")]
    ModelNotFound(String),
    #[error("model {0:?} already exists")]
    DuplicateModel(String),
    /// A model that is training or failed (HTTP 409, SQLSTATE 55000).
    #[error("{0}")]
    ModelNotReady(String),
    /// Credentials missing, wrong or revoked (HTTP 401, SQLSTATE 28P01). The message never
    /// says whether a name exists.
    #[error("{0}")]
    Unauthenticated(String),
    /// The credentials lack a permission (HTTP 403, SQLSTATE 42501); the message names it.
    #[error("{0}")]
    Denied(String),
    #[error("token {0:?} already exists")]
    DuplicateToken(String),
    /// A query its data makes fail while it runs (PromQL's refused matches): HTTP 422,
    /// SQLSTATE 22000.
    #[error("{0}")]
    Execution(String),
}

/// A query error an operator or function handed DataFusion (as `External`).
fn query_root(e: &datafusion::error::DataFusionError) -> Option<&QueryError> {
    match e.find_root() {
        datafusion::error::DataFusionError::External(x) => x.downcast_ref(),
        _ => None,
    }
}

/// DataFusion prints a context on its own line above the cause ("DELETE operation on table
/// 't'\ncaused by\n…"); clients show the first line, so the cause joins the context there.
fn one_line(e: &datafusion::error::DataFusionError) -> String {
    match e {
        datafusion::error::DataFusionError::Context(ctx, inner) => {
            format!("{ctx}: {}", one_line(inner))
        }
        e => match (storage_root(e), query_root(e)) {
            (Some(s), _) => format!("storage: {s}"),
            (None, Some(q)) => q.to_string(),
            (None, None) => e.to_string(),
        },
    }
}

/// The storage error an operator handed DataFusion (as `External`), if that is the root cause:
/// it answers with its own status and SQLSTATE, as if the storage call had failed directly.
fn storage_root(e: &datafusion::error::DataFusionError) -> Option<&tempora_storage::StorageError> {
    match e.find_root() {
        datafusion::error::DataFusionError::External(x) => x.downcast_ref(),
        _ => None,
    }
}

pub type Result<T, E = QueryError> = std::result::Result<T, E>;

impl QueryError {
    /// The HTTP status a client should see.
    pub fn http_status(&self) -> u16 {
        use datafusion::error::DataFusionError as D;
        match self {
            Self::DatabaseNotFound(_) | Self::TableNotFound(_) => 404,
            Self::DuplicateDatabase(_) | Self::DuplicateTable(_) => 409,
            Self::Unsupported(_) | Self::InvalidParameter(_) => 400,
            Self::InvalidDatabase { .. } | Self::Sql(_) | Self::Model(_) | Self::Insert(_) => 400,
            Self::Arrow(_) => 400,
            // DataFusion wraps errors (context, diagnostics): judge by the root cause.
            Self::DataFusion(e) if storage_root(e).is_some() => {
                storage_root(e).map_or(500, |s| s.http_status())
            }
            Self::DataFusion(e) if query_root(e).is_some() => {
                query_root(e).map_or(500, |q| q.http_status())
            }
            Self::DataFusion(e) => match e.find_root() {
                D::SQL(..) | D::Plan(_) | D::SchemaError(..) | D::NotImplemented(_) => 400,
                D::ResourcesExhausted(_) => 507,
                _ => 500,
            },
            Self::Storage(e) => e.http_status(),
            Self::Timeout(_) => 408,
            Self::TooManyRows(_) => 400,
            Self::ModelNotFound(_) => 404,
            Self::DuplicateModel(_) | Self::ModelNotReady(_) => 409,
            Self::Unauthenticated(_) => 401,
            Self::Denied(_) => 403,
            Self::DuplicateToken(_) => 409,
            Self::Execution(_) => 422,
        }
    }

    /// The SQLSTATE for the PostgreSQL protocol.
    pub fn sqlstate(&self) -> &'static str {
        use datafusion::error::DataFusionError as D;
        match self {
            Self::DatabaseNotFound(_) => "3D000",
            Self::TableNotFound(_) => "42P01",
            Self::DuplicateDatabase(_) => "42P04",
            Self::DuplicateTable(_) => "42P07",
            Self::Unsupported(_) => "0A000",
            Self::InvalidParameter(_) => "22023",
            Self::InvalidDatabase { .. } => "42602",
            Self::Sql(_) => "42601",
            Self::Model(_) | Self::Insert(_) | Self::Arrow(_) => "22000",
            Self::Timeout(_) => "57014",
            Self::TooManyRows(_) => "54000",
            Self::DataFusion(e) if storage_root(e).is_some() => {
                storage_root(e).map_or("XX000", |s| s.sqlstate())
            }
            Self::DataFusion(e) if query_root(e).is_some() => {
                query_root(e).map_or("XX000", |q| q.sqlstate())
            }
            Self::DataFusion(e) => match e.find_root() {
                D::SQL(..) => "42601",
                D::SchemaError(..) => "42703",
                D::Plan(_) => "42P01",
                D::NotImplemented(_) => "0A000",
                D::ResourcesExhausted(_) => "53200",
                _ => "XX000",
            },
            Self::Storage(e) => e.sqlstate(),
            Self::ModelNotFound(_) => "42704",
            Self::DuplicateModel(_) => "42710",
            Self::ModelNotReady(_) => "55000",
            Self::Unauthenticated(_) => "28P01",
            Self::Denied(_) => "42501",
            Self::DuplicateToken(_) => "42710",
            Self::Execution(_) => "22000",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::common::{Column, SchemaError};
    use datafusion::error::DataFusionError as D;

    #[test]
    fn wrapped_errors_are_judged_by_their_root() {
        let missing = || {
            D::SchemaError(
                Box::new(SchemaError::FieldNotFound {
                    field: Box::new(Column::from_name("nope")),
                    valid_fields: vec![],
                }),
                Box::new(None),
            )
        };
        for (name, e, status, state) in [
            ("bare schema error", missing(), 400, "42703"),
            (
                "schema error in context",
                missing().context("planning"),
                400,
                "42703",
            ),
            ("plan", D::Plan("table t not found".into()), 400, "42P01"),
            (
                "not implemented",
                D::NotImplemented("x".into()),
                400,
                "0A000",
            ),
            ("memory", D::ResourcesExhausted("pool".into()), 507, "53200"),
            ("internal", D::Internal("bug".into()), 500, "XX000"),
            (
                "a storage error an operator handed on",
                D::External(Box::new(tempora_storage::StorageError::RawExpired {
                    table: "cpu".into(),
                    horizon: "2026-10-27 00:00:00 UTC".into(),
                    what: "this query".into(),
                }))
                .context("reading region 3"),
                422,
                "0A000",
            ),
        ] {
            let e = QueryError::DataFusion(e);
            assert_eq!(e.http_status(), status, "{name}");
            assert_eq!(e.sqlstate(), state, "{name}");
            if name.starts_with("a storage error") {
                let text = e.to_string();
                assert!(
                    text.starts_with("reading region 3: storage: raw rows of cpu"),
                    "{text}"
                );
            }
        }
    }
}
