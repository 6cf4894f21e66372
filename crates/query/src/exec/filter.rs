//! A [`ScanFilter`] made runnable: the time range, the index matcher, and the exact
//! predicates over series (tags) and rows (fields) that Tempora's operators apply.
//!
//! - Time bounds are evaluated once, when the operator starts (parameters are bound by then):
//!   a bound that is NULL keeps no row, as `time >= NULL` keeps none.
//! - The tag predicate becomes the scan's index [`Matcher`]. When the matcher is exactly the
//!   predicate (`=`, `IN`, regex, `IS [NOT] NULL`, and `AND`/`OR` of them: a series without
//!   the tag fails both), nothing else is done; otherwise (a `NOT`, `<>`, a function of a tag)
//!   the matcher is a superset and the predicate is evaluated on each series' tag values.
//! - The field predicate is evaluated on each region's rows, as a mask.

use std::sync::Arc;

use arrow::array::{Array, AsArray, BooleanArray, RecordBatch, RecordBatchOptions};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit, TimestampNanosecondType};
use bytes::Bytes;
use datafusion::common::DFSchema;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{Expr, Operator};
use datafusion::physical_expr::PhysicalExpr;
use tempora_storage::Matcher;
use tempora_storage::read::tag_columns;

use crate::nodes::aggregate::ScanFilter;
use crate::table::TemporaTable;

/// The physical form of a [`ScanFilter`].
#[derive(Debug, Clone)]
pub struct PhysicalFilter {
    time: Vec<(Operator, Arc<dyn PhysicalExpr>)>,
    pub matcher: Matcher,
    /// The exact tag predicate when the matcher is not exact, with the tags it reads.
    series: Option<(Arc<dyn PhysicalExpr>, Vec<String>, SchemaRef)>,
    /// The field predicate, with the fields it reads (in the order of its input batch).
    rows: Option<(Arc<dyn PhysicalExpr>, Vec<String>)>,
}

/// Makes a physical expression of `e` over `schema` (the planner's, so functions resolve).
pub type Planner<'a> = dyn Fn(&Expr, &DFSchema) -> Result<Arc<dyn PhysicalExpr>> + 'a;

/// `e` with every column unqualified (the operators' batches have plain column names).
pub fn unqualified(e: &Expr) -> Expr {
    e.clone()
        .transform_up(|e| match e {
            Expr::Column(c) if c.relation.is_some() => Ok(Transformed::yes(Expr::Column(
                datafusion::common::Column::new_unqualified(c.name),
            ))),
            e => Ok(Transformed::no(e)),
        })
        .map(|t| t.data)
        .expect("an infallible rewrite")
}

/// The names of the columns `e` reads, in first-use order.
pub fn columns_of(e: &Expr) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let _ = e.apply(|e| {
        if let Expr::Column(c) = e
            && !out.contains(&c.name)
        {
            out.push(c.name.clone());
        }
        Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
    });
    out
}

impl PhysicalFilter {
    /// `f` over `table`, made runnable by `plan`.
    pub fn new(table: &TemporaTable, f: &ScanFilter, plan: &Planner) -> Result<Self> {
        let empty = DFSchema::empty();
        let time = f
            .time
            .iter()
            .map(|b| Ok((b.op, plan(&b.value, &empty)?)))
            .collect::<Result<_>>()?;
        let (matcher, exact) = match &f.tags {
            None => (Matcher::All, true),
            Some(t) => match crate::pushdown::tag_matcher(t, &|c| table.is_tag(c)) {
                Some(m) => {
                    let exact = exact_matcher(&m);
                    (m, exact)
                }
                None => (Matcher::All, false),
            },
        };
        let series = match (&f.tags, exact) {
            (Some(t), false) => {
                let t = unqualified(t);
                let tags = columns_of(&t);
                let schema = Arc::new(Schema::new(
                    tags.iter()
                        .map(|n| Field::new(n, DataType::Utf8, true))
                        .collect::<Vec<_>>(),
                ));
                let df = DFSchema::try_from(schema.as_ref().clone())?;
                Some((plan(&t, &df)?, tags, schema))
            }
            _ => None,
        };
        let rows = match &f.fields {
            None => None,
            Some(e) => {
                let e = unqualified(e);
                let fields = columns_of(&e);
                let schema = field_schema(table, &fields)?;
                let df = DFSchema::try_from(schema.as_ref().clone())?;
                Some((plan(&e, &df)?, fields))
            }
        };
        Ok(Self {
            time,
            matcher,
            series,
            rows,
        })
    }

    /// The time range `[start, end)` the bounds keep (`i64::MIN`/`i64::MAX` where open);
    /// `None` when they keep nothing.
    pub fn time_range(&self) -> Result<Option<(i64, i64)>> {
        let (mut start, mut end) = (i64::MIN, i64::MAX);
        for (op, e) in &self.time {
            let Some(t) = constant_ns(e)? else {
                return Ok(None);
            };
            let Some((s, x)) = crate::pushdown::time_range(*op, t) else {
                return Ok(None);
            };
            start = start.max(s);
            end = end.min(x);
        }
        Ok((start < end).then_some((start, end)))
    }

    /// The tags the series predicate reads.
    pub fn series_tags(&self) -> &[String] {
        self.series.as_ref().map_or(&[], |s| &s.1)
    }

    /// The fields the row predicate reads.
    pub fn row_fields(&self) -> &[String] {
        self.rows.as_ref().map_or(&[], |r| &r.1)
    }

    /// Whether each series of `keys` (a run's series keys, by rank) passes the tag predicate;
    /// `None` when every series the matcher selected does.
    pub fn series_mask(&self, keys: &[Bytes]) -> Result<Option<Vec<bool>>> {
        let Some((pred, tags, schema)) = &self.series else {
            return Ok(None);
        };
        let values = tag_columns(keys.iter().map(|k| k.as_ref()), tags)
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        let cols = values
            .into_iter()
            .map(|a| Arc::new(a) as arrow::array::ArrayRef)
            .collect();
        let batch = RecordBatch::try_new_with_options(
            schema.clone(),
            cols,
            &RecordBatchOptions::new().with_row_count(Some(keys.len())),
        )?;
        let mask = pred.evaluate(&batch)?.into_array(keys.len())?;
        let mask = mask.as_boolean();
        Ok(Some(
            (0..mask.len())
                .map(|i| mask.is_valid(i) && mask.value(i))
                .collect(),
        ))
    }

    /// Which rows of `fields` (a batch of the row predicate's fields, by name) it keeps;
    /// `None` when there is no row predicate.
    pub fn row_mask(&self, fields: &RecordBatch) -> Result<Option<BooleanArray>> {
        let Some((pred, _)) = &self.rows else {
            return Ok(None);
        };
        let m = pred.evaluate(fields)?.into_array(fields.num_rows())?;
        // NULL keeps nothing: as false.
        let m = m.as_boolean();
        Ok(Some(match m.nulls() {
            Some(_) => arrow::compute::prep_null_mask_filter(m),
            None => m.clone(),
        }))
    }
}

/// Whether a matcher keeps exactly the series its SQL predicate keeps (a series without the
/// tag fails `=`, `IN` and a regex, as SQL's NULL does; `NOT` and `<>` would keep it).
pub fn exact_matcher(m: &Matcher) -> bool {
    match m {
        Matcher::NotEq(..) | Matcher::NotIn(..) | Matcher::NotRegex(..) | Matcher::Not(_) => false,
        Matcher::And(v) | Matcher::Or(v) => v.iter().all(exact_matcher),
        _ => true,
    }
}

/// The schema of `fields` of `table`, in that order.
pub fn field_schema(table: &TemporaTable, fields: &[String]) -> Result<SchemaRef> {
    let cols = fields
        .iter()
        .map(|f| {
            let ty = table
                .field_type(f)
                .ok_or_else(|| DataFusionError::Plan(format!("{f} is not a field")))?;
            Ok(Field::new(f, ty, true))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Arc::new(Schema::new(cols)))
}

/// A constant expression's value as UTC nanoseconds (`None`: NULL).
pub fn constant_ns(e: &Arc<dyn PhysicalExpr>) -> Result<Option<i64>> {
    let one = RecordBatch::try_new_with_options(
        Arc::new(Schema::empty()),
        vec![],
        &RecordBatchOptions::new().with_row_count(Some(1)),
    )?;
    let v = e.evaluate(&one)?.into_array(1)?;
    let ts = cast(
        &v,
        &DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
    )?;
    let ts = ts.as_primitive::<TimestampNanosecondType>();
    Ok((!ts.is_null(0)).then(|| ts.value(0)))
}
