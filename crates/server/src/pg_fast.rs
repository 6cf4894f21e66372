//! The fast path (`tempora_query::fast`) on the PostgreSQL protocol.
//!
//! Simple protocol: a recognised text is answered by the fast path before any session is made.
//! Extended protocol: `Parse` of a recognised text stores a *marker* plan, an `EmptyRelation`
//! with the result's schema (so `Describe` answers without DataFusion's planner), and
//! `Execute` runs the fast path. A marker is never executed as a plan: if the fast path turns
//! the query down at `Execute` (its fold bailed, or the table changed since `Parse`), the text
//! is planned by DataFusion then. DataFusion's SQL planner never makes a bare `EmptyRelation`
//! with columns as a statement's root (a `SELECT` has a projection on top), so the marker
//! cannot be mistaken for a real plan.

use std::sync::Arc;

use datafusion::common::DFSchema;
use datafusion::logical_expr::{EmptyRelation, LogicalPlan};
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser;
use datafusion_postgres::arrow_pg::datatypes::arrow_schema_to_pg_fields;
use datafusion_postgres::pgwire;
use pgwire::api::ClientInfo;
use pgwire::api::portal::Format;
use pgwire::api::results::QueryResponse;
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::types::format::FormatOptions;
use tempora_query::fast::FastQuery;
use tempora_query::service::QueryOutput;

/// The statement `Parse` stores for a recognised text (see the module header).
pub fn marker_statement(
    sql: &str,
    q: &FastQuery,
) -> Option<(String, Option<(sqlparser::ast::Statement, LogicalPlan)>)> {
    let dialect = sqlparser::dialect::PostgreSqlDialect {};
    let mut stmts = sqlparser::parser::Parser::parse_sql(&dialect, sql).ok()?;
    let stmt = stmts.pop()?;
    let schema = DFSchema::try_from(q.schema().as_ref().clone()).ok()?;
    let plan = LogicalPlan::EmptyRelation(EmptyRelation {
        produce_one_row: false,
        schema: Arc::new(schema),
    });
    Some((sql.to_string(), Some((stmt, plan))))
}

/// Whether a stored plan is a fast-path marker.
pub fn is_marker(plan: &LogicalPlan) -> bool {
    matches!(plan, LogicalPlan::EmptyRelation(e) if !e.produce_one_row && !e.schema.fields().is_empty())
}

/// A fast-path result as pgwire rows in `format`.
pub fn encode_output<C: ClientInfo + ?Sized>(
    client: &C,
    out: QueryOutput,
    format: &Format,
) -> PgWireResult<QueryResponse> {
    let opts = Arc::new(FormatOptions::from_client_metadata(client.metadata()));
    let fields = Arc::new(arrow_schema_to_pg_fields(&out.schema, format, Some(opts))?);
    let batches = futures::stream::iter(out.batches.into_iter().map(Ok));
    Ok(crate::pg_encode::query_response(fields, batches))
}

/// Plans and runs `sql` with DataFusion (a marker's text the fast path turned down).
pub async fn run_text<C: ClientInfo + ?Sized>(
    ctx: &SessionContext,
    client: &C,
    sql: &str,
    format: &Format,
) -> PgWireResult<QueryResponse> {
    let df = ctx
        .sql(sql)
        .await
        .map_err(|e| PgWireError::ApiError(Box::new(e)))?;
    crate::pg_encode::dataframe_response(client, df, format).await
}
