//! `tempora_rollup('t', '1h')`: the rollup of table `t` at a declared resolution, as a table
//! for tools that want the pre-aggregated rows themselves. One row per (series, bucket):
//! the table's tags, `time` (the bucket's first instant), `rows` (points in the bucket), then
//! for each numeric field `f`: `f_count`, `f_sum`, `f_min`, `f_max`, `f_first`,
//! `f_first_time`, `f_last`, `f_last_time` (NULL where the bucket has no value of `f`).
//!
//! The rows are exact: buckets the rollup files answer come from them, the others (the
//! memtable's, late writes', deletes') are computed from the raw rows, as an aggregate query
//! reads them ([`tempora_storage::rollup::read`]). The whole table is read when the query is
//! planned; filters apply to the result.

use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray, RecordBatch, TimestampNanosecondArray, UInt32Array};
use arrow::compute::{cast, concat_batches, take};
use arrow::datatypes::{DataType, Field, Int64Type, Schema, SchemaRef, TimeUnit};
use datafusion::catalog::{TableFunctionImpl, TableProvider};
use datafusion::common::{Result, ScalarValue, plan_err};
use datafusion::datasource::MemTable;
use datafusion::error::DataFusionError;
use datafusion::logical_expr::Expr;
use tempora_storage::catalog::settings::parse_duration_ns;
use tempora_storage::read::{arrow_type, tag_columns};
use tempora_storage::rollup::partial::{
    LEAD, PartialRun, STATS, bucket_of, from_run, merge, rollup_fields, stat_column,
};
use tempora_storage::{Engine, ScanRequest};

pub struct RollupFn {
    pub engine: Arc<Engine>,
    pub db: String,
}

impl std::fmt::Debug for RollupFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RollupFn").field("db", &self.db).finish()
    }
}

impl TableFunctionImpl for RollupFn {
    fn call(&self, args: &[Expr]) -> Result<Arc<dyn TableProvider>> {
        let text = |e: &Expr| match e {
            Expr::Literal(ScalarValue::Utf8(Some(s)), _) => Some(s.clone()),
            _ => None,
        };
        let [Some(table), Some(res)] = [args.first().and_then(text), args.get(1).and_then(text)]
        else {
            return plan_err!(
                "tempora_rollup takes a table name and a resolution as string literals: tempora_rollup('cpu', '1h')"
            );
        };
        if args.len() != 2 {
            return plan_err!("tempora_rollup takes two arguments, not {}", args.len());
        }
        rollup_table(
            &self.engine,
            &crate::engine_table(&self.db, &table),
            &table,
            &res,
        )
    }
}

fn ext(e: tempora_storage::StorageError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// Table `name`'s rollup at `res` (see the module header).
fn rollup_table(
    engine: &Engine,
    name: &str,
    short: &str,
    res: &str,
) -> Result<Arc<dyn TableProvider>> {
    let Some(rollups) = engine.table_rollups(name) else {
        return plan_err!("tempora_rollup: table {short:?} not found");
    };
    let declared = rollups.resolutions();
    let r = parse_duration_ns(res)
        .map_err(|e| DataFusionError::Plan(format!("tempora_rollup: {e}")))?;
    if !declared.contains(&r) {
        return plan_err!(
            "tempora_rollup: table {short:?} declares no rollup of {res} (it declares {})",
            rollups
        );
    }
    let schema = engine.schema(name).expect("the table exists");
    let tags: Vec<String> = schema.tags().map(str::to_string).collect();
    let plan = engine
        .plan_scan(name, &ScanRequest::default())
        .map_err(ext)?;
    let all: Vec<(String, tempora_model::FieldType)> =
        schema.fields().map(|(n, t)| (n.to_string(), t)).collect();
    let fields = rollup_fields(&all);
    let whole = (bucket_of(-(1 << 62), r), bucket_of(1 << 62, r));
    let out = output_schema(&tags, &fields);
    let mut parts: Vec<PartialRun> = Vec::new();
    for i in 0..plan.regions() {
        let read = plan.read_rollup(i, r, whole).map_err(ext)?;
        parts.extend(read.run);
        for range in read.raw {
            if let Some(run) = plan.read_run_in(i, range).map_err(ext)? {
                parts.push(from_run(&run, &all, r).map_err(ext)?);
            }
        }
    }
    // A bucket cut by a partition boundary has a state in each region: one row of both
    // (regions hold disjoint times, so their points are distinct).
    let merged = merge(parts, &fields).map_err(ext)?;
    if let Some(b) = merged.overlapping.first() {
        return Err(DataFusionError::Internal(format!(
            "tempora_rollup: states of bucket {b} overlap across regions"
        )));
    }
    let batches = match merged.run {
        Some(p) => vec![to_rows(&p, &tags, &out)?],
        None => Vec::new(),
    };
    let batch = concat_batches(&out, &batches)?;
    Ok(Arc::new(MemTable::try_new(out, vec![vec![batch]])?))
}

fn ts() -> DataType {
    DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()))
}

fn output_schema(tags: &[String], fields: &[(String, tempora_model::FieldType)]) -> SchemaRef {
    let mut f: Vec<Field> = tags
        .iter()
        .map(|t| Field::new(t, DataType::Utf8, true))
        .collect();
    f.push(Field::new("time", ts(), false));
    f.push(Field::new("rows", DataType::UInt64, false));
    for (name, ty) in fields {
        for stat in STATS {
            let dt = match stat {
                "count" => DataType::UInt64,
                "first_time" | "last_time" => ts(),
                _ => arrow_type(*ty),
            };
            f.push(Field::new(stat_column(name, stat), dt, stat != "count"));
        }
    }
    Arc::new(Schema::new(f))
}

/// A partial run as rows of the output schema: tags from the keys, times as timestamps.
fn to_rows(p: &PartialRun, tags: &[String], out: &SchemaRef) -> Result<RecordBatch> {
    let ranks = UInt32Array::from(p.ranks().to_vec());
    let mut cols: Vec<ArrayRef> = Vec::new();
    for values in tag_columns(p.keys.iter().map(|k| k.as_ref()), tags).map_err(ext)? {
        cols.push(take(&values, &ranks, None)?);
    }
    let buckets = p
        .batch
        .column(1)
        .as_primitive::<Int64Type>()
        .values()
        .clone();
    cols.push(Arc::new(
        TimestampNanosecondArray::new(buckets, None).with_timezone("UTC"),
    ));
    cols.push(p.batch.column(4).clone());
    for c in &p.batch.columns()[LEAD..] {
        cols.push(c.clone());
    }
    let cols = cols
        .into_iter()
        .zip(out.fields())
        .map(|(c, f)| match c.data_type() == f.data_type() {
            true => Ok(c),
            false => cast(&c, f.data_type()),
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(RecordBatch::try_new(out.clone(), cols)?)
}
