//! Plans of `SHOW MODELS` and `DESCRIBE MODEL name`: constant rows read from the model
//! registry when the statement is planned (neither is kept in the plan cache).
//!
//! - `SHOW MODELS` → `name, task, algorithm, chosen, series, rows, status, reason,
//!   trained_at, training_seconds, metrics`;
//! - `DESCRIBE MODEL m` → per series: `series` (`host=a, dc=x`), `status` (`trained`,
//!   `failed`, `untrained`: seen by scoring only), `algorithm`, `parameters`,
//!   `in_sample_error` (share of training points flagged, or the one-step MAE), `points`,
//!   `reason`.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, Float64Array, RecordBatch, StringArray, TimestampNanosecondArray, UInt64Array,
};
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use datafusion::datasource::{MemTable, provider_as_source};
use datafusion::logical_expr::{LogicalPlan, LogicalPlanBuilder};
use tempora_ml::model::SeriesKey;

use crate::error::Result;
use crate::models::Models;

fn plan(fields: Vec<Field>, arrays: Vec<ArrayRef>) -> Result<LogicalPlan> {
    let schema = Arc::new(Schema::new(fields));
    let batch = RecordBatch::try_new(schema.clone(), arrays)?;
    let table = Arc::new(MemTable::try_new(schema, vec![vec![batch]])?);
    Ok(LogicalPlanBuilder::scan("models", provider_as_source(table), None)?.build()?)
}

fn text(name: &str, nullable: bool) -> Field {
    Field::new(name, DataType::Utf8, nullable)
}

/// `SHOW MODELS` in `db`.
pub fn show(models: &Models, db: &str) -> Result<LogicalPlan> {
    let rows = models.show(db);
    let s = |f: fn(&crate::models::registry::ShowRow) -> String| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(rows.iter().map(f)))
    };
    plan(
        vec![
            text("name", false),
            text("task", false),
            text("algorithm", false),
            text("chosen", false),
            Field::new("series", DataType::UInt64, false),
            Field::new("rows", DataType::UInt64, false),
            text("status", false),
            text("reason", true),
            Field::new(
                "trained_at",
                DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
                true,
            ),
            Field::new("training_seconds", DataType::Float64, true),
            text("metrics", false),
        ],
        vec![
            s(|r| r.name.clone()),
            s(|r| r.task.clone()),
            s(|r| r.algorithm.clone()),
            s(|r| r.chosen.clone()),
            Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.series))),
            Arc::new(UInt64Array::from_iter_values(rows.iter().map(|r| r.rows))),
            s(|r| r.status.clone()),
            Arc::new(StringArray::from_iter(
                rows.iter().map(|r| r.reason.clone()),
            )),
            Arc::new(
                TimestampNanosecondArray::from_iter(rows.iter().map(|r| r.trained_at_ns))
                    .with_timezone("UTC"),
            ),
            Arc::new(Float64Array::from_iter(
                rows.iter().map(|r| r.training_seconds),
            )),
            s(|r| r.metrics.clone()),
        ],
    )
}

/// `series=a, dc=x` for a key of `columns`.
pub fn key_text(columns: &[String], key: &SeriesKey) -> String {
    columns
        .iter()
        .zip(key)
        .map(|(c, v)| format!("{c}={}", v.as_deref().unwrap_or("NULL")))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `DESCRIBE MODEL name` in `db`.
pub fn describe(models: &Models, db: &str, name: &str) -> Result<LogicalPlan> {
    let (loaded, status) = models.describe(db, name)?;
    let mut cols: [Vec<Option<String>>; 5] = Default::default();
    let (mut err, mut points) = (Vec::new(), Vec::new());
    if let Some(l) = &loaded {
        let m = &l.model;
        for (k, s) in &m.series {
            for (c, v) in cols.iter_mut().zip([
                Some(key_text(&m.key_columns, k)),
                Some("trained".into()),
                Some(s.algorithm().into()),
                Some(s.parameters()),
                None,
            ]) {
                c.push(v);
            }
            err.push(Some(s.in_sample_error()));
            points.push(s.points() as u64);
        }
        for (k, why) in &m.failed {
            for (c, v) in cols.iter_mut().zip([
                Some(key_text(&m.key_columns, k)),
                Some("failed".into()),
                None,
                None,
                Some(why.clone()),
            ]) {
                c.push(v);
            }
            err.push(None);
            points.push(0);
        }
        for k in l.untrained.lock().iter() {
            let why = "appeared after training: scored with auto defaults (mad) from no history; ALTER MODEL ... REFRESH trains it";
            for (c, v) in cols.iter_mut().zip([
                Some(key_text(&m.key_columns, k)),
                Some("untrained".into()),
                Some("mad".into()),
                None,
                Some(why.into()),
            ]) {
                c.push(v);
            }
            err.push(None);
            points.push(0);
        }
    } else {
        for (c, v) in cols.iter_mut().zip([
            None,
            Some(status),
            None,
            None,
            Some("no trained model yet".to_string()),
        ]) {
            c.push(v);
        }
        err.push(None);
        points.push(0);
    }
    let [series, st, algo, params, reason] = cols;
    plan(
        vec![
            text("series", true),
            text("status", true),
            text("algorithm", true),
            text("parameters", true),
            Field::new("in_sample_error", DataType::Float64, true),
            Field::new("points", DataType::UInt64, false),
            text("reason", true),
        ],
        vec![
            Arc::new(StringArray::from(series)),
            Arc::new(StringArray::from(st)),
            Arc::new(StringArray::from(algo)),
            Arc::new(StringArray::from(params)),
            Arc::new(Float64Array::from(err)),
            Arc::new(UInt64Array::from(points)),
            Arc::new(StringArray::from(reason)),
        ],
    )
}
