//! The statements Tempora runs itself ([`Command`]): databases and tables in the engine's
//! catalog, and a session's settings.
//!
//! - `CREATE DATABASE d` fails when `d` exists, unless `IF NOT EXISTS` (InfluxDB's
//!   `/query?q=CREATE DATABASE` stays idempotent, as InfluxDB's is).
//! - `DROP DATABASE d` drops every table of `d`; it fails when `d` does not exist, unless
//!   `IF EXISTS`.
//! - `CREATE TABLE` declares tags and fields up front in an existing database; line protocol
//!   and inserts keep adding columns to it (schema on write).
//! - `DROP TABLE` fails for a missing table unless `IF EXISTS`.
//! - `WITH (…)` options: none are known yet, so any is refused by name.

use tempora_model::TableSchema;

use crate::engine_table;
use crate::error::{QueryError, Result};
use crate::limits::QueryOptions;
use crate::plan::Command;
use crate::plan::show::resolve;
use crate::service::QueryService;
use crate::sql::ddl::Options;

/// Runs `c` for a session of `db` whose settings are `opts`.
pub async fn run(q: &QueryService, db: &str, opts: &mut QueryOptions, c: &Command) -> Result<()> {
    let dbs = q.dbs.clone();
    match c {
        Command::Set(s) => opts.apply(s),
        Command::CreateDatabase(c) => {
            no_options("CREATE DATABASE", &c.options)?;
            crate::validate_database(&c.name)?;
            if dbs.exists(&c.name) {
                return if c.if_not_exists {
                    Ok(())
                } else {
                    Err(QueryError::DuplicateDatabase(c.name.clone()))
                };
            }
            let (dbs, name) = (dbs.clone(), c.name.clone());
            blocking(move || dbs.create(&name)).await
        }
        Command::DropDatabase(d) => {
            if !dbs.exists(&d.name) {
                return if d.if_exists {
                    Ok(())
                } else {
                    Err(QueryError::DatabaseNotFound(d.name.clone()))
                };
            }
            let (dbs2, name) = (dbs.clone(), d.name.clone());
            blocking(move || dbs2.drop_database(&name).map(|_| ())).await?;
            q.forget(&d.name);
            Ok(())
        }
        Command::CreateTable(t) => {
            no_options("CREATE TABLE", &t.options)?;
            let (db, table) = resolve(db, &t.name);
            if !dbs.exists(&db) {
                return Err(QueryError::DatabaseNotFound(db));
            }
            tempora_model::validate_name(&table)
                .map_err(|e| QueryError::Sql(format!("CREATE TABLE: {e}")))?;
            let name = engine_table(&db, &table);
            let schema = TableSchema::with_columns(&name, t.columns.clone());
            let if_not_exists = t.if_not_exists;
            let engine = dbs.engine().clone();
            let created =
                blocking(move || create_table(&engine, &name, schema, if_not_exists)).await?;
            if !created && !if_not_exists {
                return Err(QueryError::DuplicateTable(table));
            }
            q.cache.forget_database(&db);
            Ok(())
        }
        Command::DropTable(d) => {
            for t in &d.names {
                let (db, table) = resolve(db, t);
                let name = engine_table(&db, &table);
                let engine = dbs.engine().clone();
                if engine.schema(&name).is_none() {
                    if d.if_exists {
                        continue;
                    }
                    return Err(QueryError::TableNotFound(table));
                }
                blocking(move || engine.drop_table(&name).map_err(QueryError::from)).await?;
                q.cache.forget_database(&db);
            }
            Ok(())
        }
    }
}

/// Declares a table in the engine's catalog; false when it existed.
fn create_table(
    engine: &tempora_storage::Engine,
    name: &str,
    schema: TableSchema,
    if_not_exists: bool,
) -> Result<bool> {
    Ok(engine.create_table(name, schema, if_not_exists)?)
}

fn no_options(what: &str, options: &Options) -> Result<()> {
    match options.first() {
        None => Ok(()),
        Some((k, _)) => Err(QueryError::Unsupported(format!(
            "{what} … WITH ({k} = …): unknown option {k:?}; {what} takes no options yet"
        ))),
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| QueryError::Sql(format!("catalog task failed: {e}")))?
}
