//! Plans of the catalog statements ([`crate::sql::Show`]):
//!
//! - `SHOW DATABASES` → the databases (`name`), sorted, with the retention (`ttl`) and
//!   partition width (`partition`) their tables get unless they set their own
//!   (`crate::functions::tables`);
//! - `SHOW TAG VALUES FROM t WITH KEY = k` → the distinct non-NULL values of tag `k` in `t`
//!   (`value`), sorted: a scan of `t` like any query's, so the tag index answers it;
//! - `DESCRIBE t` → each column's name, type and kind (`tag`, `time`, `field`), in the table's
//!   order (tags, time, fields).

use std::sync::Arc;

use arrow::array::{RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use datafusion::catalog::TableProvider;
use datafusion::datasource::{MemTable, provider_as_source};
use datafusion::execution::SessionState;
use datafusion::logical_expr::{LogicalPlan, LogicalPlanBuilder, col, ident};

use crate::catalog::Databases;
use crate::error::{QueryError, Result};
use crate::sql::{Show, TableName};

/// The plan of a catalog statement in database `db`.
pub async fn plan(
    state: &SessionState,
    dbs: &Databases,
    db: &str,
    s: &Show,
) -> Result<LogicalPlan> {
    match s {
        Show::Databases => {
            use crate::functions::tables::{partition_text, ttl_text};
            let names = dbs.list();
            let (mut ttl, mut part) = (Vec::new(), Vec::new());
            for n in &names {
                let (_, eff) = dbs.engine().database_settings(n);
                ttl.push(ttl_text(eff.ttl_ns));
                part.push(partition_text(eff.partition_ns));
            }
            rows_plan(&["name", "ttl", "partition"], vec![names, ttl, part])
        }
        Show::TagValues { table, key } => {
            let (db, name) = resolve(db, table);
            let provider = table_provider(state, &db, &name).await?;
            if !provider
                .schema()
                .field_with_name(key)
                .is_ok_and(|f| f.data_type() == &DataType::Utf8)
            {
                return Err(QueryError::Sql(format!(
                    "SHOW TAG VALUES: {name} has no tag {key:?}"
                )));
            }
            Ok(
                LogicalPlanBuilder::scan(name.as_str(), provider_as_source(provider), None)?
                    .filter(ident(key).is_not_null())?
                    .project(vec![ident(key).alias("value")])?
                    .distinct()?
                    .sort(vec![col("value").sort(true, false)])?
                    .build()?,
            )
        }
        Show::Describe(table) => {
            let (db, name) = resolve(db, table);
            let columns = crate::functions::columns::columns_table(dbs.engine(), &db, &name)?;
            Ok(LogicalPlanBuilder::scan("describe", provider_as_source(columns), None)?.build()?)
        }
    }
}

/// (database, table) of a name written in database `db`.
pub fn resolve(db: &str, t: &TableName) -> (String, String) {
    (
        t.database.clone().unwrap_or_else(|| db.to_string()),
        t.table.clone(),
    )
}

async fn table_provider(
    state: &SessionState,
    db: &str,
    name: &str,
) -> Result<Arc<dyn TableProvider>> {
    let missing = || QueryError::Sql(format!("table {name:?} does not exist in database {db:?}"));
    let catalog = state
        .catalog_list()
        .catalog(db)
        .ok_or_else(|| QueryError::DatabaseNotFound(db.to_string()))?;
    let schema = catalog.schema(crate::SCHEMA).ok_or_else(missing)?;
    schema.table(name).await?.ok_or_else(missing)
}

/// A plan of constant text rows: `columns[i]` holds column `names[i]`.
fn rows_plan(names: &[&str], columns: Vec<Vec<String>>) -> Result<LogicalPlan> {
    let schema = Arc::new(Schema::new(
        names
            .iter()
            .map(|n| Field::new(*n, DataType::Utf8, false))
            .collect::<Vec<_>>(),
    ));
    let arrays = columns
        .into_iter()
        .map(|c| Arc::new(StringArray::from(c)) as _)
        .collect();
    let batch = RecordBatch::try_new(schema.clone(), arrays)?;
    let table = Arc::new(MemTable::try_new(schema, vec![vec![batch]])?);
    Ok(LogicalPlanBuilder::scan("rows", provider_as_source(table), None)?.build()?)
}
