//! The row-selection fast path: plain columns of the rows that pass time, tag and numeric
//! field conditions, sorted, without DataFusion's planner (TSBS high-cpu).
//!
//! ```sql
//! SELECT c1 [AS a1], … FROM t
//! [WHERE <time comparisons> AND <tag predicates> AND <field op number> …]
//! [ORDER BY <column> [ASC|DESC] [NULLS FIRST|LAST], …] [LIMIT n]
//! ```
//!
//! A field comparison is evaluated as DataFusion evaluates it after type coercion: an integer
//! field against an integer literal as `Int64`, anything with a float as `Float64`, both with
//! Arrow's comparison kernels (the ones DataFusion calls, with their NaN ordering). The scan
//! also gets each comparison as a [`FieldBound`] (a superset), so tags are decoded only for
//! rows that may pass.

use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray, Datum, Float64Array, Int64Array, RecordBatch};
use arrow::compute::kernels::cmp;
use arrow::compute::{SortOptions, and, cast, concat_batches, filter_record_batch};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, GroupByExpr, OrderByKind, Query, SelectItem, SetExpr, UnaryOperator,
    Value,
};
use tempora_model::{ColumnKind, FieldType, TIME_COLUMN, TableSchema};
use tempora_storage::{BoundOp, FieldBound, Matcher};

use super::recognize::{
    Cx, conditions, ident_name, limit, plain_query, plain_select, single_table,
};
use super::sorted::{SortKey, conform, gather, sorted_positions};

/// A numeric literal as DataFusion types it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Lit {
    Int(i64),
    Float(f64),
}

/// `field <op> literal`.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub field: String,
    pub op: BinaryOperator,
    pub lit: Lit,
    pub float_field: bool,
}

/// A recognised row-selection query.
#[derive(Debug, Clone)]
pub struct RowsQuery {
    pub table: String,
    /// Inclusive start, exclusive end (ns); `i64::MIN`/`i64::MAX` where unbounded.
    pub time: (i64, i64),
    pub matcher: Matcher,
    pub comparisons: Vec<Comparison>,
    /// Output name, column read, its Arrow type.
    pub columns: Vec<(String, String, DataType)>,
    /// Column, ascending, nulls first.
    pub order: Vec<(String, bool, bool)>,
    pub limit: Option<usize>,
}

fn column_type(schema: &TableSchema, c: &str) -> Option<DataType> {
    Some(match schema.kind(c) {
        Some(ColumnKind::Tag) => DataType::Utf8,
        Some(ColumnKind::Field(t)) => tempora_storage::read::arrow_type(t),
        None if c == TIME_COLUMN => DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
        None => return None,
    })
}

impl RowsQuery {
    pub fn schema(&self) -> SchemaRef {
        Arc::new(Schema::new(
            self.columns
                .iter()
                .map(|(name, _, ty)| Field::new(name, ty.clone(), true))
                .collect::<Vec<_>>(),
        ))
    }

    /// Every column the query reads (selected, compared or sorted), split into the tags and
    /// the fields of `schema`.
    pub fn reads(&self, schema: &TableSchema) -> (Vec<String>, Vec<String>) {
        let mut tags: Vec<String> = Vec::new();
        let mut fields: Vec<String> = Vec::new();
        let all = self
            .columns
            .iter()
            .map(|c| &c.1)
            .chain(self.comparisons.iter().map(|c| &c.field))
            .chain(self.order.iter().map(|o| &o.0));
        for c in all {
            let list = match schema.kind(c) {
                Some(ColumnKind::Tag) => &mut tags,
                Some(ColumnKind::Field(_)) => &mut fields,
                None => continue,
            };
            if !list.contains(c) {
                list.push(c.clone());
            }
        }
        (tags, fields)
    }

    /// The comparisons as scan bounds (supersets, see [`FieldBound`]).
    pub fn bounds(&self) -> Vec<FieldBound> {
        self.comparisons
            .iter()
            .filter_map(|c| {
                let op = match c.op {
                    BinaryOperator::Gt | BinaryOperator::GtEq => BoundOp::AtLeast,
                    BinaryOperator::Lt | BinaryOperator::LtEq => BoundOp::AtMost,
                    BinaryOperator::Eq => BoundOp::Equal,
                    _ => return None,
                };
                let value = match c.lit {
                    Lit::Int(i) => i as f64,
                    Lit::Float(f) => f,
                };
                Some(FieldBound {
                    field: c.field.clone(),
                    op,
                    value,
                })
            })
            .collect()
    }

    /// Which rows of a scan batch (tags, time, fields by name) every comparison keeps, or
    /// `None` when there is no comparison. The batch is not copied: the kept rows are copied
    /// once, by [`RowsQuery::finish`].
    pub fn keep(&self, b: &RecordBatch) -> arrow::error::Result<Option<BooleanArray>> {
        let mut mask: Option<BooleanArray> = None;
        for c in &self.comparisons {
            let col = b.column(b.schema().index_of(&c.field)?);
            let m = compare(col, c)?;
            mask = Some(match mask {
                None => m,
                Some(prev) => and(&prev, &m)?,
            });
        }
        Ok(mask)
    }

    /// The kept rows of all regions (each batch with its [`RowsQuery::keep`] mask): sorted,
    /// limited, projected to the output. The rows are copied once, in output order (see
    /// [`super::sorted`]).
    pub fn finish(
        &self,
        read: &[(RecordBatch, Option<BooleanArray>)],
        schema: &SchemaRef,
    ) -> arrow::error::Result<RecordBatch> {
        let out: Vec<usize> = self
            .columns
            .iter()
            .map(|(_, c, _)| schema.index_of(c))
            .collect::<arrow::error::Result<_>>()?;
        let batches: Vec<RecordBatch> = read.iter().map(|(b, _)| b.clone()).collect();
        let masks: Vec<Option<&BooleanArray>> = read.iter().map(|(_, m)| m.as_ref()).collect();
        if self.order.is_empty() {
            let projected = read
                .iter()
                .map(|(b, m)| {
                    let b = b.project(&out)?;
                    m.as_ref()
                        .map_or(Ok(b.clone()), |m| filter_record_batch(&b, m))
                })
                .collect::<arrow::error::Result<Vec<_>>>()?;
            let all = concat_batches(&Arc::new(schema.project(&out)?), &projected)?;
            let all = match self.limit {
                Some(l) if l < all.num_rows() => all.slice(0, l),
                _ => all,
            };
            let plain = self.schema();
            let cols = all
                .columns()
                .iter()
                .zip(plain.fields())
                .map(|(c, f)| conform(c.clone(), f.data_type()))
                .collect::<arrow::error::Result<Vec<_>>>()?;
            return RecordBatch::try_new(plain, cols);
        }
        let keys: Vec<SortKey> = self
            .order
            .iter()
            .map(|(c, asc, nulls_first)| SortKey {
                column: c,
                options: SortOptions {
                    descending: !asc,
                    nulls_first: *nulls_first,
                },
            })
            .collect();
        let positions = sorted_positions(&batches, &masks, &keys, self.limit)?;
        gather(&batches, &out, &positions, self.schema())
    }
}

/// `col <op> lit` with DataFusion's coercion: Int64 against an integer, Float64 otherwise.
fn compare(col: &ArrayRef, c: &Comparison) -> arrow::error::Result<BooleanArray> {
    let (left, right): (ArrayRef, Box<dyn Datum>) = match (c.float_field, c.lit) {
        (false, Lit::Int(i)) => (col.clone(), Box::new(Int64Array::new_scalar(i))),
        (_, lit) => {
            let v = match lit {
                Lit::Int(i) => i as f64,
                Lit::Float(f) => f,
            };
            (
                cast(col, &DataType::Float64)?,
                Box::new(Float64Array::new_scalar(v)),
            )
        }
    };
    let right = right.as_ref();
    match c.op {
        BinaryOperator::Gt => cmp::gt(&left, right),
        BinaryOperator::GtEq => cmp::gt_eq(&left, right),
        BinaryOperator::Lt => cmp::lt(&left, right),
        BinaryOperator::LtEq => cmp::lt_eq(&left, right),
        BinaryOperator::Eq => cmp::eq(&left, right),
        BinaryOperator::NotEq => cmp::neq(&left, right),
        ref other => unreachable!("recognised comparisons only: {other}"),
    }
}

/// A parsed query as a [`RowsQuery`], or `None` when it is not of that shape.
pub fn rows_query(
    q: &Query,
    schema: &dyn Fn(&str) -> Option<Arc<TableSchema>>,
) -> Option<RowsQuery> {
    let SetExpr::Select(s) = q.body.as_ref() else {
        return None;
    };
    let no_group =
        matches!(&s.group_by, GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty());
    if !plain_query(q) || !plain_select(s) || s.distinct.is_some() || !no_group {
        return None;
    }
    let (table, alias) = single_table(s)?;
    let ts = schema(&table)?;
    let cx = Cx {
        table: &table,
        alias: alias.as_deref(),
        schema: &ts,
    };
    let columns = plain_columns(&cx, &s.projection)?;
    let mut fq = RowsQuery {
        table: table.clone(),
        time: (i64::MIN, i64::MAX),
        matcher: Matcher::All,
        comparisons: Vec::new(),
        columns,
        order: Vec::new(),
        limit: limit(q)?,
    };
    let cond = conditions(&cx, s.selection.as_ref());
    (fq.time, fq.matcher) = (cond.time, cond.matcher);
    fq.comparisons = cond
        .rest
        .into_iter()
        .map(|c| comparison(&cx, c))
        .collect::<Option<_>>()?;
    fq.order = order(&cx, q, &fq.columns)?;
    Some(fq)
}

/// `field op number` (either way round) over an Int64 or Float64 field.
fn comparison(cx: &Cx, e: &Expr) -> Option<Comparison> {
    let Expr::BinaryOp { left, op, right } = e else {
        return None;
    };
    let field_of = |e: &Expr| {
        let c = cx.column(e)?;
        match cx.column_kind(&c)? {
            ColumnKind::Field(FieldType::I64) => Some((c, false)),
            ColumnKind::Field(FieldType::F64) => Some((c, true)),
            _ => None,
        }
    };
    let ((field, float_field), lit, op) = match (field_of(left), number(right)) {
        (Some(f), Some(n)) => (f, n, op.clone()),
        _ => {
            let flipped = match op {
                BinaryOperator::Lt => BinaryOperator::Gt,
                BinaryOperator::LtEq => BinaryOperator::GtEq,
                BinaryOperator::Gt => BinaryOperator::Lt,
                BinaryOperator::GtEq => BinaryOperator::LtEq,
                BinaryOperator::Eq | BinaryOperator::NotEq => op.clone(),
                _ => return None,
            };
            (field_of(right)?, number(left)?, flipped)
        }
    };
    matches!(
        op,
        BinaryOperator::Gt
            | BinaryOperator::GtEq
            | BinaryOperator::Lt
            | BinaryOperator::LtEq
            | BinaryOperator::Eq
            | BinaryOperator::NotEq
    )
    .then_some(Comparison {
        field,
        op,
        lit,
        float_field,
    })
}

/// A number literal as DataFusion types it: digits only → Int64 (if it fits), else Float64.
fn number(e: &Expr) -> Option<Lit> {
    match e {
        Expr::Nested(inner) => number(inner),
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match number(expr)? {
            Lit::Int(i) => i.checked_neg().map(Lit::Int),
            Lit::Float(f) => Some(Lit::Float(-f)),
        },
        Expr::Value(v) => match &v.value {
            Value::Number(s, _) => {
                if s.bytes().all(|b| b.is_ascii_digit()) {
                    s.parse().ok().map(Lit::Int)
                } else {
                    let f: f64 = s.parse().ok()?;
                    f.is_finite().then_some(Lit::Float(f))
                }
            }
            _ => None,
        },
        _ => None,
    }
}

/// ORDER BY over columns of the table or output names that rename one.
fn order(
    cx: &Cx,
    q: &Query,
    columns: &[(String, String, DataType)],
) -> Option<Vec<(String, bool, bool)>> {
    let Some(ob) = &q.order_by else {
        return Some(Vec::new());
    };
    let OrderByKind::Expressions(list) = &ob.kind else {
        return None;
    };
    if ob.interpolate.is_some() {
        return None;
    }
    list.iter()
        .map(|o| {
            if o.with_fill.is_some() {
                return None;
            }
            let name = cx.column(&o.expr)?;
            // An output alias is named by a bare identifier only (`t.a` is a table column).
            let bare = matches!(o.expr, Expr::Identifier(_));
            let c = match columns
                .iter()
                .find(|(out, src, _)| bare && *out == name && *src != name)
            {
                Some((_, src, _)) => src.clone(),
                None => {
                    column_type(cx.schema, &name)?;
                    name
                }
            };
            let asc = o.options.asc.unwrap_or(true);
            Some((c, asc, o.options.nulls_first.unwrap_or(!asc)))
        })
        .collect()
}

/// A select list of plain columns (tags, `time`, fields), non-empty and naming each output
/// once (DataFusion refuses a projection with two columns of one name): (output name,
/// column, Arrow type). An alias that names another column is refused: ORDER BY would read
/// it as that column.
pub(crate) fn plain_columns(
    cx: &Cx,
    projection: &[SelectItem],
) -> Option<Vec<(String, String, DataType)>> {
    let mut columns: Vec<(String, String, DataType)> = Vec::new();
    for item in projection {
        let (e, alias) = match item {
            SelectItem::UnnamedExpr(e) => (e, None),
            SelectItem::ExprWithAlias { expr, alias } => (expr, Some(ident_name(alias))),
            _ => return None,
        };
        let c = cx.column(e)?;
        let ty = column_type(cx.schema, &c)?;
        if alias
            .as_ref()
            .is_some_and(|a| *a != c && column_type(cx.schema, a).is_some())
        {
            return None;
        }
        let name = alias.unwrap_or_else(|| c.clone());
        if columns.iter().any(|(n, _, _)| *n == name) {
            return None;
        }
        columns.push((name, c, ty));
    }
    (!columns.is_empty()).then_some(columns)
}
