//! Tempora SQL: DataFusion over the storage engine.
//!
//! Naming: a Tempora database is a DataFusion catalog with one schema, `public`; the engine
//! stores table `t` of database `db` under the name `db.t` (database names hold no `.`). A
//! [`QueryService`] keeps one `SessionContext` per database, whose default catalog is that
//! database, so unqualified names resolve in it and other databases are reachable as
//! `other.public.t`.
//!
//! One front door: every statement, from every protocol, is read once by [`sql`] into a
//! typed statement, planned by [`plan`] into a DataFusion logical plan with Tempora's nodes
//! ([`nodes`]), optimised by DataFusion with Tempora's rules ([`rules`]), kept in the plan
//! cache ([`cache`]), and run by DataFusion with Tempora's operators ([`exec`]). The service
//! ([`service`]) is the only entry.
//!
//! | folder | what it holds |
//! |---|---|
//! | `sql/` | the grammar: text → typed statements |
//! | `plan/` | typed statements → logical plans and commands |
//! | `nodes/` | Tempora's logical plan nodes |
//! | `rules/` | analyzer and optimizer rules that choose Tempora's nodes by what a plan means |
//! | `exec/` | physical operators and the planner that makes them from the nodes |
//! | `functions/` | scalar, aggregate and table functions |
//! | `models/` | `CREATE MODEL`: the registry, training in the background, kept scoring state |
//!
//! Invariants:
//! - Engine calls (which block) run on the blocking pool, never on the async runtime.
//! - Every query runs under the configured memory pool limit; [`QueryLimits`] names them.

pub mod access;
pub mod cache;
pub mod catalog;
pub mod command;
pub mod convert;
pub mod delete;
pub mod dense;
pub mod error;
pub mod exec;
pub mod functions;
pub mod influxql;
pub mod insert;
pub mod latest_rows;
pub mod limits;
pub mod models;
pub mod nodes;
pub mod options;
pub mod params;
pub mod plan;
pub mod promql;
pub mod pushdown;
pub mod rules;
pub mod series_tags;
pub mod service;
pub mod sql;
pub mod stages;
pub mod table;
pub mod update;

pub use error::{QueryError, Result};
pub use limits::QueryOptions;
pub use service::{Output, Prepared, QueryLimits, QueryOutput, QueryService};

/// The only schema inside a database.
pub const SCHEMA: &str = "public";

/// The engine's name for table `table` of database `db`.
pub fn engine_table(db: &str, table: &str) -> String {
    tempora_storage::catalog::qualified(db, table)
}

/// An engine message as a client of `db` should read it (see
/// [`tempora_storage::catalog::user_message`]).
pub fn user_message(db: &str, msg: &str) -> String {
    tempora_storage::catalog::user_message(db, msg)
}

/// Splits an engine table name into (database, table).
pub fn split_engine_table(name: &str) -> Option<(&str, &str)> {
    tempora_storage::catalog::split(name)
}

/// Checks a database name (see [`tempora_storage::catalog::validate_database`]).
pub fn validate_database(name: &str) -> Result<()> {
    Ok(tempora_storage::catalog::validate_database(name)?)
}
