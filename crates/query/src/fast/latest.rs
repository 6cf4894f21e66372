//! The latest-value fast path: `DISTINCT ON (tags) … ORDER BY tags, time DESC` answered from
//! the last-value cache without DataFusion's planner.
//!
//! ```sql
//! SELECT DISTINCT ON (k1, …) c1 [AS a1], … FROM t [WHERE <tag predicates>]
//! ORDER BY k1 [ASC|DESC], …, time DESC [LIMIT n]
//! ```
//!
//! with `k…` tag columns and `c…` plain columns (tags, `time`, fields). It is the plan
//! `latest_rule` gives DataFusion for the same text (the cache's newest row per series, then
//! the newest per key with [`crate::latest_rows::newest_per_key`], sorted by the keys), with
//! the same answer, minus the planning.

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch};
use arrow::compute::{SortColumn, SortOptions, lexsort_to_indices, take_record_batch};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::sql::sqlparser::ast::{Distinct, OrderByKind, Query, SetExpr};
use tempora_model::{ColumnKind, TIME_COLUMN, TableSchema};
use tempora_storage::Matcher;

use super::recognize::{Cx, conditions, limit, plain_query, plain_select, single_table};
use super::rows::plain_columns;

/// A recognised latest-value query.
#[derive(Debug, Clone)]
pub struct LatestQuery {
    pub table: String,
    pub matcher: Matcher,
    /// The `DISTINCT ON` tags, with their sort direction (`true` = ascending).
    pub keys: Vec<(String, bool)>,
    /// Output name, column read, its Arrow type.
    pub columns: Vec<(String, String, DataType)>,
    pub limit: Option<usize>,
}

impl LatestQuery {
    pub fn schema(&self) -> SchemaRef {
        Arc::new(Schema::new(
            self.columns
                .iter()
                .map(|(name, _, ty)| Field::new(name, ty.clone(), true))
                .collect::<Vec<_>>(),
        ))
    }

    /// The fields read, in first-use order.
    pub fn fields(&self, schema: &TableSchema) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for (_, c, _) in &self.columns {
            if matches!(schema.kind(c), Some(ColumnKind::Field(_))) && !out.contains(c) {
                out.push(c.clone());
            }
        }
        out
    }

    /// From the cache's newest row per series (`engine.latest`'s batch: every tag, time, the
    /// fields read): the newest per key, sorted, limited, projected.
    pub fn finish(&self, latest: &RecordBatch) -> datafusion::error::Result<RecordBatch> {
        let names: Vec<String> = self.keys.iter().map(|(k, _)| k.clone()).collect();
        let newest = crate::latest_rows::newest_per_key(latest, &names)?;
        let sort: Vec<SortColumn> = self
            .keys
            .iter()
            .map(|(k, asc)| {
                Ok(SortColumn {
                    values: newest.column(newest.schema().index_of(k)?).clone(),
                    options: Some(SortOptions {
                        descending: !asc,
                        nulls_first: !asc,
                    }),
                })
            })
            .collect::<datafusion::error::Result<_>>()?;
        let idx = lexsort_to_indices(&sort, self.limit)?;
        let sorted = take_record_batch(&newest, &idx)?;
        let cols: Vec<ArrayRef> = self
            .columns
            .iter()
            .map(|(_, c, _)| Ok(sorted.column(sorted.schema().index_of(c)?).clone()))
            .collect::<datafusion::error::Result<_>>()?;
        Ok(RecordBatch::try_new(self.schema(), cols)?)
    }
}

/// A parsed query as a [`LatestQuery`], or `None` when it is not of that shape.
pub fn latest_query(
    q: &Query,
    schema: &dyn Fn(&str) -> Option<Arc<TableSchema>>,
) -> Option<LatestQuery> {
    let SetExpr::Select(s) = q.body.as_ref() else {
        return None;
    };
    let Some(Distinct::On(on)) = &s.distinct else {
        return None;
    };
    let group_by_empty = matches!(
        &s.group_by,
        datafusion::sql::sqlparser::ast::GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty()
    );
    if !plain_query(q) || !plain_select(s) || !group_by_empty {
        return None;
    }
    let (table, alias) = single_table(s)?;
    let ts = schema(&table)?;
    let cx = Cx {
        table: &table,
        alias: alias.as_deref(),
        schema: &ts,
    };
    let keys: Vec<String> = on.iter().map(|e| cx.tag(e)).collect::<Option<_>>()?;
    let columns = plain_columns(&cx, &s.projection)?;
    let cond = conditions(&cx, s.selection.as_ref());
    // Tag predicates only: a time bound or anything else keeps the query on DataFusion.
    if cond.time != (i64::MIN, i64::MAX) || !cond.rest.is_empty() {
        return None;
    }
    let matcher = cond.matcher;
    let directions = order(&cx, q, &keys)?;
    Some(LatestQuery {
        table: table.clone(),
        matcher,
        keys: keys.into_iter().zip(directions).collect(),
        columns,
        limit: limit(q)?,
    })
}

/// `ORDER BY k1, …, kn, time DESC` over the `DISTINCT ON` keys in order (default nulls
/// placement only): each key's direction.
fn order(cx: &Cx, q: &Query, keys: &[String]) -> Option<Vec<bool>> {
    let ob = q.order_by.as_ref()?;
    let OrderByKind::Expressions(list) = &ob.kind else {
        return None;
    };
    if ob.interpolate.is_some() || list.len() != keys.len() + 1 {
        return None;
    }
    let mut dirs = Vec::new();
    for (o, k) in list.iter().zip(keys) {
        let asc = o.options.asc.unwrap_or(true);
        let plain = o.with_fill.is_none() && o.options.nulls_first.is_none_or(|n| n != asc);
        if !plain || cx.tag(&o.expr).as_ref() != Some(k) {
            return None;
        }
        dirs.push(asc);
    }
    let last = list.last()?;
    let time_desc = last.options.asc == Some(false)
        && last.options.nulls_first.is_none_or(|n| n)
        && last.with_fill.is_none()
        && cx.column(&last.expr).is_some_and(|c| c == TIME_COLUMN);
    time_desc.then_some(dirs)
}
