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
    #[error("{0}")]
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
}

pub type Result<T, E = QueryError> = std::result::Result<T, E>;

impl QueryError {
    /// The HTTP status a client should see.
    pub fn http_status(&self) -> u16 {
        use datafusion::error::DataFusionError as D;
        match self {
            Self::DatabaseNotFound(_) => 404,
            Self::InvalidDatabase { .. } | Self::Sql(_) | Self::Model(_) | Self::Insert(_) => 400,
            Self::Arrow(_) => 400,
            Self::DataFusion(D::SQL(..) | D::Plan(_) | D::SchemaError(..)) => 400,
            Self::DataFusion(D::ResourcesExhausted(_)) => 507,
            Self::DataFusion(_) => 500,
            Self::Storage(e) => e.http_status(),
            Self::Timeout(_) => 408,
        }
    }

    /// The SQLSTATE for the PostgreSQL protocol.
    pub fn sqlstate(&self) -> &'static str {
        use datafusion::error::DataFusionError as D;
        match self {
            Self::DatabaseNotFound(_) => "3D000",
            Self::InvalidDatabase { .. } => "42602",
            Self::Sql(_) | Self::DataFusion(D::SQL(..)) => "42601",
            Self::DataFusion(D::Plan(_) | D::SchemaError(..)) => "42P01",
            Self::DataFusion(D::ResourcesExhausted(_)) => "53200",
            Self::Model(_) | Self::Insert(_) | Self::Arrow(_) => "22000",
            Self::Timeout(_) => "57014",
            Self::DataFusion(_) => "XX000",
            Self::Storage(e) => e.sqlstate(),
        }
    }
}
