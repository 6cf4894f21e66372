//! `UPDATE t SET f = expr, … [WHERE …]`: the rows the WHERE clause selects are read, the
//! assignments evaluated on them, and each row written back whole.
//!
//! A point is identified by its series (tags) and time, so writing it again replaces it: in a
//! dense table that is one slot write per point, in place (issue 25); in an ordinary table a
//! newer version that reads and compaction keep. Tags and `time` cannot be assigned (they are
//! the point's identity: delete and insert instead). The WHERE clause may use any column;
//! time and tag conditions also narrow what is read. In an ordinary table a field set to NULL
//! keeps its old value (a write cannot clear a field there); in a dense table it is NULL.
//! The result is one row, `count`: the rows rewritten. Not atomic against concurrent writes
//! to the same points (the last write wins).

use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray, RecordBatch};
use arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::common::DFSchema;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::{Expr, ExprSchemable};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::memory::{LazyBatchGenerator, LazyMemoryExec};
use parking_lot::RwLock;
use tempora_model::TIME_COLUMN;
use tempora_storage::Engine;

use crate::delete::{count_batch, count_schema, unqualified};
use crate::pushdown::request;

/// What an UPDATE runs: the table, its read, the row filter and the new value of each
/// assigned column.
#[derive(Clone)]
struct UpdateRun {
    engine: Arc<Engine>,
    table: String,
    tags: Vec<String>,
    req: tempora_storage::ScanRequest,
    schema: SchemaRef,
    predicate: Option<Arc<dyn PhysicalExpr>>,
    /// (column position in `schema`, its new value).
    assign: Vec<(usize, Arc<dyn PhysicalExpr>)>,
    done: bool,
}

/// The plan that runs an UPDATE when executed (not when planned, so `EXPLAIN` is harmless).
pub fn exec(
    state: &dyn Session,
    engine: Arc<Engine>,
    table: String,
    tags: &[String],
    schema: SchemaRef,
    assignments: Vec<(String, Expr)>,
    filters: &[Expr],
) -> DfResult<Arc<dyn ExecutionPlan>> {
    let df_schema = DFSchema::try_from(schema.as_ref().clone())?;
    let mut assign = Vec::new();
    for (name, value) in assignments {
        let value = unqualified(value)?;
        // DataFusion lists every column; those set to themselves are unchanged.
        if matches!(&value, Expr::Column(c) if c.name == name) {
            continue;
        }
        if name == TIME_COLUMN || tags.contains(&name) {
            return Err(DataFusionError::NotImplemented(format!(
                "UPDATE cannot set {name:?}: time and tags identify a point (delete it and \
                 insert it under the new identity)"
            )));
        }
        let idx = schema
            .index_of(&name)
            .map_err(|_| DataFusionError::Plan(format!("UPDATE: table has no column {name:?}")))?;
        let ty = schema.field(idx).data_type().clone();
        let value = match value.get_type(&df_schema)? == ty {
            true => value,
            false => value.cast_to(&ty, &df_schema)?,
        };
        assign.push((idx, state.create_physical_expr(value, &df_schema)?));
    }
    let filters: Vec<Expr> = filters
        .iter()
        .cloned()
        .map(unqualified)
        .collect::<DfResult<_>>()?;
    let is_tag = |c: &str| tags.iter().any(|t| t == c);
    let (req, _) = request(&filters, &is_tag, None);
    let predicate = match filters.iter().cloned().reduce(Expr::and) {
        Some(all) => Some(state.create_physical_expr(all, &df_schema)?),
        None => None,
    };
    let run = UpdateRun {
        engine,
        table,
        tags: tags.to_vec(),
        req,
        schema,
        predicate,
        assign,
        done: false,
    };
    Ok(Arc::new(LazyMemoryExec::try_new(
        count_schema(),
        vec![Arc::new(RwLock::new(run))],
    )?))
}

impl std::fmt::Debug for UpdateRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

impl std::fmt::Display for UpdateRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "TemporaUpdate: table={}, time={:?}",
            self.table, self.req.time
        )
    }
}

impl UpdateRun {
    /// Rewrites the selected rows of one batch; returns how many.
    fn rewrite(&self, batch: RecordBatch) -> crate::error::Result<u64> {
        let rows = batch.num_rows();
        let batch = match &self.predicate {
            None => batch,
            Some(p) => {
                let keep = p.evaluate(&batch)?.into_array(rows)?;
                arrow::compute::filter_record_batch(&batch, keep.as_boolean())?
            }
        };
        if batch.num_rows() == 0 {
            return Ok(0);
        }
        let mut cols: Vec<ArrayRef> = batch.columns().to_vec();
        for (idx, e) in &self.assign {
            cols[*idx] = e.evaluate(&batch)?.into_array(batch.num_rows())?;
        }
        let batch = RecordBatch::try_new(self.schema.clone(), cols)?;
        let rows = crate::convert::record_batch_to_rows(&self.table, &self.tags, &batch)?;
        crate::insert::write_all_or_fail(&self.engine, rows)
    }

    fn run(&self) -> crate::error::Result<u64> {
        let plan = self.engine.plan_scan(&self.table, &self.req)?;
        let mut n = 0;
        for i in 0..plan.regions() {
            if let Some(b) = plan.read(i)? {
                // The scan's columns are the table's (tags, time, fields), in its order.
                let b = RecordBatch::try_new(self.schema.clone(), b.columns().to_vec())?;
                n += self.rewrite(b)?;
            }
        }
        Ok(n)
    }
}

impl LazyBatchGenerator for UpdateRun {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn generate_next_batch(&mut self) -> DfResult<Option<RecordBatch>> {
        if std::mem::replace(&mut self.done, true) {
            return Ok(None);
        }
        count_batch(|| self.run()).map(Some)
    }

    fn reset_state(&self) -> Arc<RwLock<dyn LazyBatchGenerator>> {
        Arc::new(RwLock::new(UpdateRun {
            done: false,
            ..self.clone()
        }))
    }
}
