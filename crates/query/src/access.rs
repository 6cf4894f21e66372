//! Who may run a statement, and the catalog of tokens: two extension points the server fills
//! (issue 26). The query crate knows statements and their databases
//! ([`crate::sql::scope`]); the server knows credentials and where grants are kept.
//!
//! Every statement a client sends is checked by an [`Authorize`] before it is prepared or
//! run; statements the server runs for itself (model training, stages) use
//! [`Unrestricted`]. `CREATE TOKEN`, `DROP TOKEN` and `SHOW TOKENS` run through the
//! service's [`TokenAdmin`]; without one they are refused.

use arrow::array::{ArrayRef, BooleanArray, RecordBatch, StringArray, TimestampNanosecondArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use std::sync::Arc;

use crate::error::{QueryError, Result};
use crate::sql::{Statement, TokenSpec};

/// Decides whether the caller may run a statement.
pub trait Authorize: Send + Sync {
    /// `Ok` when the caller may run `stmt` in a session of database `db`; otherwise
    /// [`QueryError::Unauthenticated`] or [`QueryError::Denied`] naming the permission.
    fn statement(&self, stmt: &Statement, db: &str) -> Result<()>;
}

/// Allows everything: statements the server runs itself, and servers without
/// authentication.
pub struct Unrestricted;

impl Authorize for Unrestricted {
    fn statement(&self, _: &Statement, _: &str) -> Result<()> {
        Ok(())
    }
}

/// A stored token as `SHOW TOKENS` lists it (never its secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenInfo {
    pub name: String,
    pub read: Vec<String>,
    pub write: Vec<String>,
    pub admin: bool,
    pub created_ns: i64,
}

/// The token catalog (blocking: it writes a file durably).
pub trait TokenAdmin: Send + Sync {
    /// Stores a new token and returns its secret, shown this once.
    fn create(&self, spec: &TokenSpec) -> Result<String>;
    /// Revokes a token at once; a missing one fails unless `if_exists`.
    fn revoke(&self, name: &str, if_exists: bool) -> Result<()>;
    fn list(&self) -> Result<Vec<TokenInfo>>;
}

/// The refusal when no token catalog is configured.
pub fn no_catalog() -> QueryError {
    QueryError::Unsupported("tokens are kept by the server; this service has none".into())
}

/// The columns `CREATE TOKEN` answers.
pub fn created_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("name", DataType::Utf8, false),
        Field::new("token", DataType::Utf8, false),
    ]))
}

/// The columns of `SHOW TOKENS`.
pub fn list_schema() -> SchemaRef {
    let text = |n: &str| Field::new(n, DataType::Utf8, false);
    Arc::new(Schema::new(vec![
        text("name"),
        text("read"),
        text("write"),
        Field::new("admin", DataType::Boolean, false),
        Field::new(
            "created",
            DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
            false,
        ),
    ]))
}

/// The one row `CREATE TOKEN` answers: the name and the secret.
pub fn created_row(name: &str, secret: &str) -> Result<RecordBatch> {
    let schema = created_schema();
    let cols: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(vec![name])),
        Arc::new(StringArray::from(vec![secret])),
    ];
    Ok(RecordBatch::try_new(schema, cols)?)
}

/// The rows of `SHOW TOKENS`.
pub fn list_rows(tokens: &[TokenInfo]) -> Result<RecordBatch> {
    let schema = list_schema();
    let s = |f: fn(&TokenInfo) -> String| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(tokens.iter().map(f)))
    };
    let cols: Vec<ArrayRef> = vec![
        s(|t| t.name.clone()),
        s(|t| t.read.join(",")),
        s(|t| t.write.join(",")),
        Arc::new(BooleanArray::from_iter(
            tokens.iter().map(|t| Some(t.admin)),
        )),
        Arc::new(
            TimestampNanosecondArray::from_iter_values(tokens.iter().map(|t| t.created_ns))
                .with_timezone("UTC"),
        ),
    ];
    Ok(RecordBatch::try_new(schema, cols)?)
}
