//! Helpers shared by the query tests: a service over an in-memory engine, statements that
//! must succeed, flushing, and results as text tables.
#![allow(dead_code)]

pub mod grammar;

use std::sync::Arc;

use arrow::util::pretty::pretty_format_batches;
use tempora_query::catalog::Databases;
use tempora_query::{QueryLimits, QueryService};
use tempora_storage::{Engine, EngineIo, EngineOptions};

/// An engine with database `db` and a service over it.
pub async fn service() -> (Arc<Engine>, QueryService) {
    let (engine, dbs) = engine();
    (
        engine,
        QueryService::new(dbs, QueryLimits::default()).unwrap(),
    )
}

/// An in-memory engine with database `db`.
pub fn engine() -> (Arc<Engine>, Arc<Databases>) {
    engine_with(EngineOptions::default())
}

/// [`engine`] with one-day partitions whatever the data's rate: for tests that count
/// partitions (series × days).
pub fn engine_with_day_partitions() -> (Arc<Engine>, Arc<Databases>) {
    engine_with(EngineOptions {
        partition_auto: false,
        ..EngineOptions::default()
    })
}

fn engine_with(opts: EngineOptions) -> (Arc<Engine>, Arc<Databases>) {
    let (io, _) = EngineIo::memory();
    let engine = Arc::new(Engine::open(opts, io).unwrap());
    let dbs = Arc::new(Databases::open(engine.clone(), None).unwrap());
    dbs.create("db").unwrap();
    (engine, dbs)
}

/// A service over `dbs` with Tempora's operators off: DataFusion's plain plans.
pub fn planner_only(dbs: Arc<Databases>) -> QueryService {
    let limits = QueryLimits {
        operators: false,
        ..QueryLimits::default()
    };
    QueryService::new(dbs, limits).unwrap()
}

/// Runs a statement that must succeed (inserts).
pub async fn exec(q: &QueryService, sql: &str) {
    q.sql("db", sql, 0)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
}

/// Flushes the memtables, so that later rows sit in the memtable and earlier ones in files.
pub async fn flush(engine: &Arc<Engine>) {
    let e = engine.clone();
    tokio::task::spawn_blocking(move || e.flush())
        .await
        .unwrap()
        .unwrap();
}

/// The result of a query that must succeed, as a text table.
pub async fn table(q: &QueryService, sql: &str) -> String {
    let out = q
        .sql("db", sql, 0)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    pretty_format_batches(&out.batches).unwrap().to_string()
}
