//! The fast path: the monitoring shapes (downsampling of one or many series, cross-series
//! aggregation by tags and time, and their combination) answered straight from the engine's
//! scan, the latest value of many series from the last-value cache ([`latest`]), and rows
//! selected by time, tags and field values ([`rows`]), without DataFusion's planning.
//!
//! A query of the recognised shape costs DataFusion about 2 ms of fixed work on this machine
//! (session, parse, optimise, physical plan, repartitions and a two-phase aggregate for a few
//! hundred rows; docs/benchmarks.md, "Where a small query's time goes"). Here it is parsed
//! once, turned into a scan request and a list of aggregates, and folded region by region.
//!
//! The shape ([`recognize`]):
//!
//! ```sql
//! SELECT [date_trunc('<unit>', time) AS b,] [tag, ...] agg(field) [AS a], ...
//! FROM t
//! [WHERE <time comparisons with a literal> AND <tag = | IN | OR of them>]
//! [GROUP BY b | <position> | tag, ...]
//! [ORDER BY <output column> [ASC|DESC] [NULLS FIRST|LAST], ...]
//! [LIMIT n]
//! ```
//!
//! with `agg` one of `max`, `min`, `sum`, `avg`, `count` over an integer or float field
//! (`count(*)` too) and `<unit>` a fixed-length `date_trunc` unit (microsecond … week).
//! Everything else, and anything ambiguous, goes to DataFusion.
//!
//! Invariants:
//! - Same answer as DataFusion: column names, Arrow types, rows and their order (checked
//!   by `tests/fast_path.rs` against the planner on memtable and file data). Float sums may
//!   differ in the last bits, as DataFusion's own do between runs, since both add in an order
//!   that depends on how the rows are split.
//! - A case the fold cannot match exactly (a NaN under `min`/`max`, -0.0 meeting 0.0 there,
//!   an integer sum that overflows) is found during the fold and answered by DataFusion
//!   instead ([`aggregate::Bail`]).
//! - Rows are read under the query's memory limit, one region at a time, as the planned scan
//!   reads them; the fold holds one state per group, so memory follows the groups.
//! - `ORDER BY <bucket> DESC LIMIT n` first reads only the last `n` buckets of the range, and
//!   widens the window only when they hold fewer than `n` groups (see [`run`]).

pub mod aggregate;
pub mod explain;
pub mod latest;
pub mod memo;
pub mod recognize;
pub mod rows;
pub mod run;
pub mod sorted;

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use datafusion::sql::sqlparser::ast::Statement;
use datafusion::sql::sqlparser::dialect::GenericDialect;
use datafusion::sql::sqlparser::parser::Parser;
use tempora_model::TableSchema;

pub use aggregate::Fold;
pub use latest::LatestQuery;
pub use recognize::{AggFunc, BucketQuery, Output};
pub use rows::RowsQuery;

/// A query the fast path answers.
#[derive(Debug, Clone)]
pub enum FastQuery {
    /// Time buckets and tags, aggregated (`recognize::bucket_query`).
    Bucket(BucketQuery),
    /// The newest row per tag value, from the last-value cache (`latest`).
    Latest(LatestQuery),
    /// Plain columns of the rows that pass time, tag and field conditions (`rows`).
    Rows(RowsQuery),
}

impl FastQuery {
    /// The result's schema, known before any data is read.
    pub fn schema(&self) -> SchemaRef {
        match self {
            FastQuery::Bucket(q) => q.schema(),
            FastQuery::Latest(q) => q.schema(),
            FastQuery::Rows(q) => q.schema(),
        }
    }

    pub fn table(&self) -> &str {
        match self {
            FastQuery::Bucket(q) => &q.table,
            FastQuery::Latest(q) => &q.table,
            FastQuery::Rows(q) => &q.table,
        }
    }
}

/// The query `sql` as a [`FastQuery`], or `None` when it is of neither shape (or not exactly
/// one statement). `schema` gives a table's schema by name.
pub fn recognize(
    sql: &str,
    schema: &dyn Fn(&str) -> Option<Arc<TableSchema>>,
) -> Option<FastQuery> {
    let mut stmts = Parser::parse_sql(&GenericDialect {}, sql).ok()?;
    if stmts.len() != 1 {
        return None;
    }
    let Statement::Query(q) = stmts.pop()? else {
        return None;
    };
    if let Some(b) = recognize::bucket_query(&q, schema) {
        return Some(FastQuery::Bucket(b));
    }
    if let Some(l) = latest::latest_query(&q, schema) {
        return Some(FastQuery::Latest(l));
    }
    rows::rows_query(&q, schema).map(FastQuery::Rows)
}
