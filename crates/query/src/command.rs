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
//! - `CREATE TABLE … WITH (layout = 'dense', interval = '1s' [, block = '1d'])` makes a
//!   dense table ([`crate::dense`]): fixed fields at computed offsets, updated in place.
//! - `WITH (ttl = '30d', partition = '7d')` on `CREATE DATABASE` and `CREATE TABLE`, and
//!   `ALTER DATABASE|TABLE name SET (…)`: retention and partition width
//!   (`tempora_storage::catalog::settings`); a table's setting overrides its database's,
//!   which overrides the server's. Unknown keys and bad values are refused by name.

use tempora_model::TableSchema;

use crate::engine_table;
use crate::error::{QueryError, Result};
use crate::limits::QueryOptions;
use crate::plan::Command;
use crate::plan::show::resolve;
use crate::service::QueryService;
use crate::sql::ddl::{AlterSettings, AlterTarget};
use tempora_storage::catalog::settings::StorageSettings;

/// Runs `c` for a session of `db` whose settings are `opts`.
pub async fn run(
    q: &QueryService,
    db: &str,
    opts: &mut QueryOptions,
    c: &Command,
    now_ns: i64,
) -> Result<()> {
    let dbs = q.dbs.clone();
    match c {
        // Boxed: training reads its rows through the service, which runs commands.
        Command::Model(m) => Box::pin(crate::models::run::run(q, db, opts, m, now_ns)).await,
        Command::Set(s) => opts.apply(s),
        Command::Token(t) => token(q, t).await.map(drop),
        Command::CreateDatabase(c) => {
            let settings = StorageSettings::from_options(&c.options)?;
            crate::validate_database(&c.name)?;
            if dbs.exists(&c.name) {
                return if c.if_not_exists {
                    Ok(())
                } else {
                    Err(QueryError::DuplicateDatabase(c.name.clone()))
                };
            }
            let (dbs, name) = (dbs.clone(), c.name.clone());
            blocking(move || dbs.create_with(&name, settings)).await
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
            q.models.forget_database(&d.name);
            q.forget(&d.name);
            Ok(())
        }
        Command::CreateTable(t) => {
            let (dense, options) =
                crate::dense::layout_options(&t.options, &t.columns, &t.lengths)?;
            let settings = StorageSettings::from_options(&options)?;
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
            let created = blocking(move || match dense {
                Some(spec) => {
                    Ok(engine.create_dense_table(&name, schema, if_not_exists, settings, spec)?)
                }
                None => Ok(engine.create_table_with(&name, schema, if_not_exists, settings)?),
            })
            .await?;
            if !created && !if_not_exists {
                return Err(QueryError::DuplicateTable(table));
            }
            q.cache.forget_database(&db);
            Ok(())
        }
        Command::Alter(a) => alter(q, db, a).await,
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

/// Runs a token statement through the service's token catalog: `CREATE TOKEN` answers its
/// name and secret (shown this once), `SHOW TOKENS` the stored tokens, `DROP TOKEN` nothing.
pub async fn token(
    q: &QueryService,
    t: &crate::sql::TokenStatement,
) -> Result<Option<arrow::array::RecordBatch>> {
    use crate::sql::TokenStatement as T;
    let admin = q.tokens.clone().ok_or_else(crate::access::no_catalog)?;
    let t = t.clone();
    blocking(move || match t {
        T::Create(spec) => {
            let secret = admin.create(&spec)?;
            crate::access::created_row(&spec.name, &secret).map(Some)
        }
        T::Drop { name, if_exists } => admin.revoke(&name, if_exists).map(|()| None),
        T::Show => crate::access::list_rows(&admin.list()?).map(Some),
    })
    .await
}

/// Changes a database's or a table's settings.
async fn alter(q: &QueryService, db: &str, a: &AlterSettings) -> Result<()> {
    let change = StorageSettings::from_options(&a.options)?;
    let engine = q.dbs.engine().clone();
    match &a.target {
        AlterTarget::Database(name) => {
            if !q.dbs.exists(name) {
                return Err(QueryError::DatabaseNotFound(name.clone()));
            }
            let name = name.clone();
            blocking(move || Ok(engine.set_database_settings(&name, change).map(drop)?)).await
        }
        AlterTarget::Table(t) => {
            let (db, table) = resolve(db, t);
            let name = engine_table(&db, &table);
            if engine.schema(&name).is_none() {
                return Err(QueryError::TableNotFound(table));
            }
            blocking(move || Ok(engine.set_table_settings(&name, change).map(drop)?)).await?;
            q.cache.forget_database(&db);
            Ok(())
        }
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| QueryError::Sql(format!("catalog task failed: {e}")))?
}
