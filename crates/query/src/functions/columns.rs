//! `tempora_columns('t')`: the columns of table `t` of the session's database, one row each:
//! `column_name`, `data_type` (`string` for tags and `timestamp` for time; a field's type
//! otherwise) and `kind` (`tag`, `field` or `time`). `DESCRIBE t` is rewritten to it, so
//! clients can tell tags from fields. A dense table's `time` row names its layout
//! (`timestamp (dense, every 1s, blocks of 1d)`) and its text fields their length.

use std::sync::Arc;

use arrow::array::{RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use datafusion::catalog::{TableFunctionImpl, TableProvider};
use datafusion::common::{Result, ScalarValue, plan_err};
use datafusion::datasource::MemTable;
use datafusion::logical_expr::Expr;
use tempora_model::ColumnKind;
use tempora_storage::Engine;

pub struct ColumnsFn {
    pub engine: Arc<Engine>,
    pub db: String,
}

impl std::fmt::Debug for ColumnsFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ColumnsFn").field("db", &self.db).finish()
    }
}

impl TableFunctionImpl for ColumnsFn {
    fn call(&self, args: &[Expr]) -> Result<Arc<dyn TableProvider>> {
        let [Expr::Literal(ScalarValue::Utf8(Some(table)), _)] = args else {
            return plan_err!("tempora_columns takes one table name as a string literal");
        };
        columns_table(&self.engine, &self.db, table)
            .map_err(|e| datafusion::error::DataFusionError::Plan(e.to_string()))
    }
}

/// The columns of table `table` of database `db` as a table (see the module header).
pub fn columns_table(
    engine: &Engine,
    db: &str,
    table: &str,
) -> crate::error::Result<Arc<dyn TableProvider>> {
    let Some(schema) = engine.schema(&crate::engine_table(db, table)) else {
        return Err(crate::error::QueryError::Sql(format!(
            "table {table:?} not found in database {db:?}"
        )));
    };
    // In the table's column order: tags, time, fields.
    let mut rows: Vec<(String, String, &str)> = schema
        .tags()
        .map(|t| (t.to_string(), "string".to_string(), "tag"))
        .collect();
    let dense = engine.dense_spec(&crate::engine_table(db, table));
    let time = match &dense {
        Some(spec) => format!("timestamp ({})", crate::dense::layout_text(spec)),
        None => "timestamp".into(),
    };
    rows.push(("time".into(), time, "time"));
    for (name, kind) in schema.columns() {
        if let ColumnKind::Field(t) = kind {
            let ty = match dense
                .as_ref()
                .and_then(|s| s.fields.iter().find(|f| f.name == *name))
            {
                Some(f) if *t == tempora_model::FieldType::Str => format!("{t}({})", f.max_len),
                _ => t.to_string(),
            };
            rows.push((name.clone(), ty, "field"));
        }
    }
    let out = Arc::new(Schema::new(vec![
        Field::new("column_name", DataType::Utf8, false),
        Field::new("data_type", DataType::Utf8, false),
        Field::new("kind", DataType::Utf8, false),
    ]));
    let names = StringArray::from_iter_values(rows.iter().map(|r| r.0.as_str()));
    let types = StringArray::from_iter_values(rows.iter().map(|r| r.1.as_str()));
    let kinds = StringArray::from_iter_values(rows.iter().map(|r| r.2));
    let batch = RecordBatch::try_new(
        out.clone(),
        vec![Arc::new(names), Arc::new(types), Arc::new(kinds)],
    )?;
    Ok(Arc::new(MemTable::try_new(out, vec![vec![batch]])?))
}
