//! `tempora_tables()`: the tables of the session's database with their storage settings, one
//! row each: `table_name`; `ttl` and `partition`, the settings in force (the table's own, else
//! its database's, else the server's: a duration such as `30d`, `forever`, or `auto` for a
//! width chosen from the data rate); `own_ttl` and `own_partition`, what the table itself sets
//! (NULL: inherited); `next_partition`, the width the next new partition gets; `partitions`,
//! how many it has; `rollups`, the declared rollups in force (`1m,1h`, or `none`); `files` and
//! `bytes`, its data files now. `SHOW DATABASES` shows each database's `ttl` and `partition`
//! the same way.

use std::sync::Arc;

use arrow::array::{RecordBatch, StringArray, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema};
use datafusion::catalog::{TableFunctionImpl, TableProvider};
use datafusion::common::{Result, plan_err};
use datafusion::datasource::MemTable;
use datafusion::logical_expr::Expr;
use tempora_storage::Engine;
use tempora_storage::catalog::settings::{Setting, format_duration_ns, format_setting};

pub struct TablesFn {
    pub engine: Arc<Engine>,
    pub db: String,
}

impl std::fmt::Debug for TablesFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TablesFn").field("db", &self.db).finish()
    }
}

/// A retention in force as users read it.
pub fn ttl_text(ttl_ns: Option<i64>) -> String {
    ttl_ns.map_or_else(|| "forever".into(), format_duration_ns)
}

/// A partition width in force as users read it.
pub fn partition_text(width_ns: Option<i64>) -> String {
    width_ns.map_or_else(|| "auto".into(), format_duration_ns)
}

impl TableFunctionImpl for TablesFn {
    fn call(&self, args: &[Expr]) -> Result<Arc<dyn TableProvider>> {
        if !args.is_empty() {
            return plan_err!("tempora_tables takes no arguments");
        }
        let prefix = format!("{}.", self.db);
        let mut names = Vec::new();
        let mut cols: [Vec<Option<String>>; 5] = Default::default();
        let mut counts = Vec::new();
        let mut rollups = Vec::new();
        let (mut files, mut bytes) = (Vec::new(), Vec::new());
        for full in self.engine.tables() {
            let Some(name) = full.strip_prefix(&prefix) else {
                continue;
            };
            let Some((own, eff, next)) = self.engine.table_settings(&full) else {
                continue;
            };
            names.push(name.to_string());
            cols[0].push(Some(ttl_text(eff.ttl_ns)));
            cols[1].push(Some(partition_text(eff.partition_ns)));
            cols[2].push(own.ttl.map(|s| format_setting(s, "forever")));
            cols[3].push(own.partition.map(|s: Setting| format_setting(s, "auto")));
            cols[4].push(Some(format_duration_ns(next)));
            counts.push(self.engine.partitions(&full).len() as u64);
            rollups.push(match eff.rollups.resolutions().is_empty() {
                true => "none".to_string(),
                false => eff.rollups.to_string(),
            });
            let (n, b) = self.engine.table_files(&full).unwrap_or_default();
            files.push(n);
            bytes.push(b);
        }
        let schema = Arc::new(Schema::new(vec![
            Field::new("table_name", DataType::Utf8, false),
            Field::new("ttl", DataType::Utf8, false),
            Field::new("partition", DataType::Utf8, false),
            Field::new("own_ttl", DataType::Utf8, true),
            Field::new("own_partition", DataType::Utf8, true),
            Field::new("next_partition", DataType::Utf8, false),
            Field::new("partitions", DataType::UInt64, false),
            Field::new("rollups", DataType::Utf8, false),
            Field::new("files", DataType::UInt64, false),
            Field::new("bytes", DataType::UInt64, false),
        ]));
        let [ttl, part, own_ttl, own_part, next] = cols;
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from_iter_values(names)),
                Arc::new(StringArray::from(ttl)),
                Arc::new(StringArray::from(part)),
                Arc::new(StringArray::from(own_ttl)),
                Arc::new(StringArray::from(own_part)),
                Arc::new(StringArray::from(next)),
                Arc::new(UInt64Array::from(counts)),
                Arc::new(StringArray::from_iter_values(rollups)),
                Arc::new(UInt64Array::from(files)),
                Arc::new(UInt64Array::from(bytes)),
            ],
        )?;
        Ok(Arc::new(MemTable::try_new(schema, vec![vec![batch]])?))
    }
}
