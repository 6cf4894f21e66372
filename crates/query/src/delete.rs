//! `DELETE FROM t [WHERE …]`: a time range and a series predicate, handed to the engine as
//! tombstones (see `tempora_storage::tombstone`).
//!
//! The WHERE clause must be a conjunction of time comparisons with constants (`=`, `<`,
//! `<=`, `>`, `>=`, `BETWEEN`) and predicates over tag columns only (any expression: the
//! index proposes candidate series and the predicate itself, evaluated on each candidate's
//! tags, decides exactly, so SQL's NULL rules hold). Fields cannot be filtered on, and an
//! `OR` cannot mix time and tags: a tombstone is one time range over one set of series.
//! The result is one row, `count`: the (series, time) rows the delete hid.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch, StringArray, UInt64Array};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use bytes::Bytes;
use datafusion::catalog::Session;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Column, DFSchema, ScalarValue};
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::utils::split_conjunction;
use datafusion::logical_expr::{BinaryExpr, Expr};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::memory::{LazyBatchGenerator, LazyMemoryExec};
use parking_lot::RwLock;
use tempora_model::TIME_COLUMN;
use tempora_storage::{DeleteRequest, Engine, Matcher, StorageError};

use crate::pushdown::{tag_matcher, time_range, ts_nanos};

/// What a DELETE's WHERE clause says, checked.
#[derive(Debug, Default)]
pub struct DeletePlan {
    /// Inclusive start, exclusive end (ns); `None` = all time.
    pub time: Option<(i64, i64)>,
    /// Predicates over tags only, all of which must hold.
    pub tag_filters: Vec<Expr>,
}

/// Checks a DELETE's filters; `is_tag(c)` says whether column `c` is a tag (any other
/// column but `time` is a field).
pub fn plan(filters: &[Expr], is_tag: &dyn Fn(&str) -> bool) -> Result<DeletePlan, String> {
    let mut out = DeletePlan::default();
    for f in filters.iter().flat_map(|f| split_conjunction(f)) {
        let cols: Vec<String> = f.column_refs().iter().map(|c| c.name.clone()).collect();
        let has_time = cols.iter().any(|c| c == TIME_COLUMN);
        if let Some(field) = cols.iter().find(|c| *c != TIME_COLUMN && !is_tag(c)) {
            return Err(format!(
                "DELETE can filter on time and tags only; {field:?} is a field"
            ));
        }
        match (has_time, cols.len() > usize::from(has_time)) {
            (true, true) => {
                return Err(format!(
                    "DELETE cannot combine time and tag conditions inside OR or NOT \
                     (in {f}); join them with AND"
                ));
            }
            (true, false) => {
                let (s, e) = exact_time(f).ok_or_else(|| {
                    format!(
                        "DELETE filters time by comparing it with a constant (=, <, <=, >, \
                         >=, BETWEEN); cannot use {f}"
                    )
                })?;
                let (s0, e0) = out.time.unwrap_or((i64::MIN, i64::MAX));
                out.time = Some((s0.max(s), e0.min(e).max(s0.max(s))));
            }
            (false, true) => out.tag_filters.push(f.clone()),
            (false, false) => match f {
                Expr::Literal(ScalarValue::Boolean(Some(true)), _) => {}
                Expr::Literal(ScalarValue::Boolean(_), _) => out.time = Some((0, 0)),
                _ => return Err(format!("DELETE cannot use the condition {f}")),
            },
        }
    }
    Ok(out)
}

/// The range a bare `time` compared with a timestamp constant keeps (no casts: a cast
/// would make the range inexact).
fn exact_time(e: &Expr) -> Option<(i64, i64)> {
    let is_time = |e: &Expr| matches!(e, Expr::Column(c) if c.name == TIME_COLUMN);
    let lit = |e: &Expr| match e {
        Expr::Literal(v, _) => ts_nanos(v),
        _ => None,
    };
    match e {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            if is_time(left) {
                time_range(*op, lit(right)?)
            } else if is_time(right) {
                time_range(op.swap()?, lit(left)?)
            } else {
                None
            }
        }
        Expr::Between(b) if !b.negated && is_time(&b.expr) => {
            Some((lit(&b.low)?, lit(&b.high)?.checked_add(1)?))
        }
        _ => None,
    }
}

/// The plan that runs a delete when executed (not when planned, so `EXPLAIN` is harmless).
pub fn exec(
    state: &dyn Session,
    engine: Arc<Engine>,
    table: String,
    tags: &[String],
    filters: &[Expr],
) -> DfResult<Arc<dyn ExecutionPlan>> {
    let tag_set = |c: &str| tags.iter().any(|t| t == c);
    let plan = plan(filters, &tag_set).map_err(DataFusionError::NotImplemented)?;
    let matcher = match plan
        .tag_filters
        .iter()
        .map(|f| tag_matcher(f, &tag_set).unwrap_or(Matcher::All))
        .collect::<Vec<_>>()
    {
        m if m.is_empty() => Matcher::All,
        mut m if m.len() == 1 => m.pop().expect("one"),
        m => Matcher::And(m),
    };
    let predicate = match plan.tag_filters.is_empty() {
        true => None,
        false => Some(tag_predicate(state, tags, &plan.tag_filters)?),
    };
    let generator = DeleteRun {
        engine,
        table,
        tags: tags.to_vec(),
        time: plan.time,
        matcher,
        predicate,
        done: false,
    };
    Ok(Arc::new(LazyMemoryExec::try_new(
        count_schema(),
        vec![Arc::new(RwLock::new(generator))],
    )?))
}

pub(crate) fn count_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new(
        "count",
        DataType::UInt64,
        false,
    )]))
}

/// One nullable `Utf8` column per tag: what the tag predicate is evaluated over.
fn tags_schema(tags: &[String]) -> Schema {
    Schema::new(
        tags.iter()
            .map(|t| Field::new(t, DataType::Utf8, true))
            .collect::<Vec<_>>(),
    )
}

/// The conjunction of the tag filters over a batch of tag columns (unqualified names).
fn tag_predicate(
    state: &dyn Session,
    tags: &[String],
    filters: &[Expr],
) -> DfResult<Arc<dyn PhysicalExpr>> {
    let df_schema = DFSchema::try_from(tags_schema(tags))?;
    let all = filters
        .iter()
        .cloned()
        .reduce(Expr::and)
        .expect("at least one filter");
    state.create_physical_expr(unqualified(all)?, &df_schema)
}

/// `e` with every column reference stripped of its table qualifier (filters of a DML
/// statement name the table; the batches they are evaluated on do not).
pub(crate) fn unqualified(e: Expr) -> DfResult<Expr> {
    Ok(e.transform(|e| {
        Ok(match e {
            Expr::Column(c) => Transformed::yes(Expr::Column(Column::new_unqualified(c.name))),
            e => Transformed::no(e),
        })
    })?
    .data)
}

/// Runs a DML statement's storage work (`run`, which blocks on I/O: on a multi-threaded
/// runtime the worker is told so) and answers its one-row `count` batch.
pub(crate) fn count_batch<E: std::error::Error + Send + Sync + 'static>(
    run: impl FnOnce() -> Result<u64, E>,
) -> DfResult<RecordBatch> {
    let n = match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(run)
        }
        _ => run(),
    }
    .map_err(|e| DataFusionError::External(Box::new(e)))?;
    let count: ArrayRef = Arc::new(UInt64Array::from(vec![n]));
    Ok(RecordBatch::try_new(count_schema(), vec![count])?)
}

#[derive(Clone)]
struct DeleteRun {
    engine: Arc<Engine>,
    table: String,
    tags: Vec<String>,
    time: Option<(i64, i64)>,
    matcher: Matcher,
    predicate: Option<Arc<dyn PhysicalExpr>>,
    done: bool,
}

impl std::fmt::Debug for DeleteRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

impl std::fmt::Display for DeleteRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "TemporaDelete: table={}, time={:?}",
            self.table, self.time
        )
    }
}

impl DeleteRun {
    /// Which of the candidate series (by key) the tag predicate holds for.
    fn choose(&self, keys: &[Bytes]) -> tempora_storage::Result<Vec<bool>> {
        let pred = self.predicate.as_ref().expect("only with a predicate");
        let decoded = keys
            .iter()
            .map(|k| tempora_model::decode_series_key(k))
            .collect::<Result<Vec<_>, _>>()?;
        let cols: Vec<ArrayRef> = self
            .tags
            .iter()
            .map(|t| {
                let values = decoded
                    .iter()
                    .map(|tags| tags.iter().find(|(k, _)| k == t).map(|(_, v)| v.as_str()));
                Arc::new(StringArray::from_iter(values)) as ArrayRef
            })
            .collect();
        let batch = RecordBatch::try_new_with_options(
            Arc::new(tags_schema(&self.tags)),
            cols,
            &arrow::array::RecordBatchOptions::new().with_row_count(Some(keys.len())),
        )?;
        let shared = |e: DataFusionError| StorageError::Shared(e.to_string());
        let value = pred.evaluate(&batch).map_err(shared)?;
        let array = value.into_array(keys.len()).map_err(shared)?;
        let flags = array.as_boolean();
        Ok((0..keys.len())
            .map(|i| flags.is_valid(i) && flags.value(i))
            .collect())
    }
}

impl LazyBatchGenerator for DeleteRun {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn generate_next_batch(&mut self) -> DfResult<Option<RecordBatch>> {
        if std::mem::replace(&mut self.done, true) {
            return Ok(None);
        }
        let choose = |keys: &[Bytes]| self.choose(keys);
        let req = DeleteRequest {
            time: self.time,
            matcher: self.matcher.clone(),
            series_filter: self
                .predicate
                .as_ref()
                .map(|_| &choose as tempora_storage::SeriesFilter),
        };
        // The delete does storage I/O (a manifest commit, reading the rows it counts).
        count_batch(|| self.engine.delete(&self.table, &req)).map(Some)
    }

    fn reset_state(&self) -> Arc<RwLock<dyn LazyBatchGenerator>> {
        Arc::new(RwLock::new(DeleteRun {
            done: false,
            ..self.clone()
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::{col, lit};

    fn ts(n: i64) -> Expr {
        lit(ScalarValue::TimestampNanosecond(
            Some(n),
            Some("UTC".into()),
        ))
    }

    #[test]
    fn where_clauses_a_delete_takes_and_refuses() {
        let is_tag = |c: &str| matches!(c, "host" | "dc");
        type Case = (
            &'static str,
            Vec<Expr>,
            Result<(Option<(i64, i64)>, usize), &'static str>,
        );
        let cases: Vec<Case> = vec![
            ("nothing", vec![], Ok((None, 0))),
            (
                "a time range",
                vec![col("time").gt_eq(ts(10)).and(col("time").lt(ts(20)))],
                Ok((Some((10, 20)), 0)),
            ),
            (
                "literal on the left",
                vec![ts(10).lt(col("time"))],
                Ok((Some((11, i64::MAX)), 0)),
            ),
            (
                "between",
                vec![col("time").between(ts(5), ts(9))],
                Ok((Some((5, 10)), 0)),
            ),
            (
                "time and tags",
                vec![
                    col("time").eq(ts(7)),
                    col("host").eq(lit("a")).or(col("dc").is_null()),
                ],
                Ok((Some((7, 8)), 1)),
            ),
            (
                "disjoint ranges leave nothing",
                vec![col("time").lt(ts(5)), col("time").gt(ts(9))],
                Ok((Some((10, 10)), 0)),
            ),
            (
                "a field",
                vec![col("v").gt(lit(1.0))],
                Err("\"v\" is a field"),
            ),
            (
                "time OR tag",
                vec![col("time").lt(ts(5)).or(col("host").eq(lit("a")))],
                Err("inside OR"),
            ),
            (
                "time <> constant",
                vec![col("time").not_eq(ts(5))],
                Err("comparing it with a constant"),
            ),
            (
                "a cast of time",
                vec![
                    Expr::Cast(datafusion::logical_expr::Cast::new(
                        Box::new(col("time")),
                        DataType::Int64,
                    ))
                    .gt(lit(5i64)),
                ],
                Err("comparing it with a constant"),
            ),
            ("false", vec![lit(false)], Ok((Some((0, 0)), 0))),
        ];
        for (name, filters, want) in cases {
            let got = plan(&filters, &is_tag).map(|p| (p.time, p.tag_filters.len()));
            match (got, want) {
                (Ok(g), Ok(w)) => assert_eq!(g, w, "{name}"),
                (Err(g), Err(w)) => assert!(g.contains(w), "{name}: {g}"),
                (g, w) => panic!("{name}: got {g:?}, want {w:?}"),
            }
        }
    }
}
