//! Recognises the fast path's query shape in SQL text (see the module header of
//! [`crate::fast`]): a pure function from text and table schemas to a [`BucketQuery`], `None`
//! for anything else.
//!
//! The parse follows DataFusion's reading of the same text: unquoted identifiers are
//! lower-cased, a string compared with `time` is cast to a UTC nanosecond timestamp by
//! Arrow's cast, an unaliased aggregate is named `func(table.field)`, `ASC` sorts nulls
//! last and `DESC` first. Where DataFusion's reading is not obvious (an alias that shadows
//! a column, an unaliased `date_trunc`, names that need quoting) the text is not
//! recognised, so it goes to DataFusion.

use std::sync::Arc;

use arrow::array::{Array, AsArray, StringArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit, TimestampNanosecondType};
use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, GroupByExpr,
    Ident, LimitClause, ObjectName, ObjectNamePart, OrderByKind, Query, Select, SelectItem,
    SetExpr, TableFactor, Value,
};
use tempora_model::{ColumnKind, FieldType, TIME_COLUMN, TableSchema};
use tempora_storage::Matcher;

use crate::functions::date_trunc::fixed_unit;

/// An aggregate the fold computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AggFunc {
    Max,
    Min,
    Sum,
    Avg,
    Count,
}

/// One column of the result, in select-list order.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// The time bucket's start.
    Bucket { name: String },
    /// A grouped tag's value (index into [`BucketQuery::group_tags`]).
    Tag { name: String, tag: usize },
    /// An aggregate over a field (`None`: `count(*)`).
    Agg {
        name: String,
        func: AggFunc,
        field: Option<(String, FieldType)>,
    },
}

impl Output {
    pub fn name(&self) -> &str {
        match self {
            Output::Bucket { name } | Output::Tag { name, .. } | Output::Agg { name, .. } => name,
        }
    }
}

/// One `ORDER BY` key over the result's columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SortKey {
    pub column: usize,
    pub asc: bool,
    pub nulls_first: bool,
}

/// A recognised query.
#[derive(Debug, Clone)]
pub struct BucketQuery {
    /// Table name within the database.
    pub table: String,
    /// Inclusive start, exclusive end (ns); `i64::MIN`/`i64::MAX` where unbounded.
    pub time: (i64, i64),
    pub matcher: Matcher,
    /// `(length, origin)` of the bucket in ns (see `date_trunc::fixed_unit`).
    pub bucket: Option<(i64, i64)>,
    /// Tags the rows are grouped by (selected or not).
    pub group_tags: Vec<String>,
    /// Whether the query has a `GROUP BY` (without one, the result is one row even when no
    /// row matches).
    pub grouped: bool,
    pub outputs: Vec<Output>,
    pub order: Vec<SortKey>,
    pub limit: Option<usize>,
}

impl BucketQuery {
    /// The result's schema (names and Arrow types as DataFusion gives them).
    pub fn schema(&self) -> SchemaRef {
        let fields: Vec<Field> = self
            .outputs
            .iter()
            .map(|o| match o {
                Output::Bucket { name } => Field::new(
                    name,
                    DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
                    true,
                ),
                Output::Tag { name, .. } => Field::new(name, DataType::Utf8, true),
                Output::Agg { name, func, field } => {
                    let ty = agg_type(*func, field.as_ref().map(|f| f.1));
                    Field::new(name, ty, *func != AggFunc::Count)
                }
            })
            .collect();
        Arc::new(Schema::new(fields))
    }

    /// The distinct fields the aggregates read, in first-use order.
    pub fn fields(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for o in &self.outputs {
            if let Output::Agg {
                field: Some((f, _)),
                ..
            } = o
                && !out.contains(f)
            {
                out.push(f.clone());
            }
        }
        out
    }

    /// The bucket column's index, when the first sort key is the bucket.
    pub fn bucket_first(&self) -> Option<SortKey> {
        let first = *self.order.first()?;
        matches!(self.outputs[first.column], Output::Bucket { .. }).then_some(first)
    }
}

/// The Arrow type of an aggregate's result.
pub fn agg_type(func: AggFunc, input: Option<FieldType>) -> DataType {
    match (func, input) {
        (AggFunc::Count, _) | (_, None) => DataType::Int64,
        (AggFunc::Avg, _) => DataType::Float64,
        (_, Some(t)) => tempora_storage::read::arrow_type(t),
    }
}

/// A parsed query as a [`BucketQuery`], or `None` when it is not of that shape.
pub fn bucket_query(
    q: &Query,
    schema: &dyn Fn(&str) -> Option<Arc<TableSchema>>,
) -> Option<BucketQuery> {
    let SetExpr::Select(s) = q.body.as_ref() else {
        return None;
    };
    if !plain_query(q) || !plain_select(s) || s.distinct.is_some() {
        return None;
    }
    bucket_select(q, s, schema)
}

/// A query with nothing beyond its SELECT, ORDER BY and LIMIT.
pub(crate) fn plain_query(q: &Query) -> bool {
    q.with.is_none()
        && q.fetch.is_none()
        && q.locks.is_empty()
        && q.for_clause.is_none()
        && q.settings.is_none()
        && q.format_clause.is_none()
        && q.pipe_operators.is_empty()
}

fn bucket_select(
    q: &Query,
    s: &Select,
    schema: &dyn Fn(&str) -> Option<Arc<TableSchema>>,
) -> Option<BucketQuery> {
    let (table, alias) = single_table(s)?;
    let ts = schema(&table)?;
    let cx = Cx {
        table: &table,
        alias: alias.as_deref(),
        schema: &ts,
    };
    let mut fq = BucketQuery {
        table: table.clone(),
        time: (i64::MIN, i64::MAX),
        matcher: Matcher::All,
        bucket: None,
        group_tags: Vec::new(),
        grouped: false,
        outputs: Vec::new(),
        order: Vec::new(),
        limit: None,
    };
    let mut items: Vec<Pending> = Vec::new();
    let mut bucket_aliases: Vec<String> = Vec::new();
    for item in &s.projection {
        let (e, alias) = match item {
            SelectItem::UnnamedExpr(e) => (e, None),
            SelectItem::ExprWithAlias { expr, alias } => (expr, Some(ident_name(alias))),
            _ => return None,
        };
        let p = select_item(&cx, &mut fq, e, alias.clone())?;
        // An alias that names a column of the table is read differently by GROUP BY and
        // ORDER BY (column or output?): not matched.
        if let Some(a) = &alias {
            let same_tag = matches!(&p, Pending::Tag { tag, .. } if tag == a);
            if !same_tag && (cx.column_kind(a).is_some() || a == TIME_COLUMN) {
                return None;
            }
            if matches!(p, Pending::Done(Output::Bucket { .. })) {
                bucket_aliases.push(a.clone());
            }
        }
        items.push(p);
    }
    if items.is_empty() {
        return None;
    }
    fq.outputs = group_by(&cx, &mut fq, s, items, &bucket_aliases)?;
    let cond = conditions(&cx, s.selection.as_ref());
    if !cond.rest.is_empty() {
        return None;
    }
    (fq.time, fq.matcher) = (cond.time, cond.matcher);
    order_by(&cx, &mut fq, q, &s.projection)?;
    fq.limit = limit(q)?;
    Some(fq)
}

/// A SELECT with nothing beyond DISTINCT, projection, FROM, WHERE and GROUP BY.
pub(crate) fn plain_select(s: &Select) -> bool {
    s.top.is_none()
        && s.select_modifiers.is_none()
        && s.exclude.is_none()
        && s.into.is_none()
        && s.lateral_views.is_empty()
        && s.prewhere.is_none()
        && s.connect_by.is_empty()
        && s.cluster_by.is_empty()
        && s.distribute_by.is_empty()
        && s.sort_by.is_empty()
        && s.having.is_none()
        && s.named_window.is_empty()
        && s.qualify.is_none()
        && s.value_table_mode.is_none()
        && s.optimizer_hints.is_empty()
}

/// `FROM t [AS a]`: the table's name and alias, lower-cased unless quoted.
pub(crate) fn single_table(s: &Select) -> Option<(String, Option<String>)> {
    let [from] = s.from.as_slice() else {
        return None;
    };
    if !from.joins.is_empty() {
        return None;
    }
    let TableFactor::Table {
        name,
        alias,
        args: None,
        with_hints,
        version: None,
        with_ordinality: false,
        partitions,
        json_path: None,
        sample: None,
        index_hints,
    } = &from.relation
    else {
        return None;
    };
    if !with_hints.is_empty() || !partitions.is_empty() || !index_hints.is_empty() {
        return None;
    }
    let table = single_name(name)?;
    let alias = match alias {
        None => None,
        Some(a) if a.columns.is_empty() => Some(ident_name(&a.name)),
        Some(_) => return None,
    };
    plain_name(&table).then_some((table, alias))
}

/// A name DataFusion prints without quotes (so `func(table.field)` is its display name).
fn plain_name(n: &str) -> bool {
    let mut chars = n.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

pub(crate) fn ident_name(i: &Ident) -> String {
    match i.quote_style {
        Some(_) => i.value.clone(),
        None => i.value.to_lowercase(),
    }
}

fn single_name(n: &ObjectName) -> Option<String> {
    match n.0.as_slice() {
        [ObjectNamePart::Identifier(i)] => Some(ident_name(i)),
        _ => None,
    }
}

/// The table being read, for resolving column references.
pub(crate) struct Cx<'a> {
    pub(crate) table: &'a str,
    pub(crate) alias: Option<&'a str>,
    pub(crate) schema: &'a TableSchema,
}

impl Cx<'_> {
    pub(crate) fn column_kind(&self, name: &str) -> Option<ColumnKind> {
        self.schema.kind(name)
    }

    /// The column an expression names (`c`, `t.c` or `alias.c`), if it is a plain reference.
    pub(crate) fn column(&self, e: &Expr) -> Option<String> {
        match e {
            Expr::Identifier(i) => Some(ident_name(i)),
            Expr::CompoundIdentifier(parts) => match parts.as_slice() {
                [t, c] => {
                    let t = ident_name(t);
                    let ok = match self.alias {
                        Some(a) => t == a,
                        None => t == self.table,
                    };
                    ok.then(|| ident_name(c))
                }
                _ => None,
            },
            Expr::Nested(inner) => self.column(inner),
            _ => None,
        }
    }

    pub(crate) fn tag(&self, e: &Expr) -> Option<String> {
        let c = self.column(e)?;
        matches!(self.column_kind(&c), Some(ColumnKind::Tag)).then_some(c)
    }

    fn is_time(&self, e: &Expr) -> bool {
        self.column(e).is_some_and(|c| c == TIME_COLUMN)
    }
}

/// The plain argument list of a function call with no modifiers.
fn plain_args(f: &Function) -> Option<&[FunctionArg]> {
    let FunctionArguments::List(list) = &f.args else {
        return None;
    };
    let plain = !f.uses_odbc_syntax
        && matches!(f.parameters, FunctionArguments::None)
        && f.filter.is_none()
        && f.null_treatment.is_none()
        && f.over.is_none()
        && f.within_group.is_empty()
        && list.duplicate_treatment.is_none()
        && list.clauses.is_empty();
    plain.then_some(list.args.as_slice())
}

fn func_name(f: &Function) -> Option<String> {
    match f.name.0.as_slice() {
        [ObjectNamePart::Identifier(i)] if i.quote_style.is_none() => Some(i.value.to_lowercase()),
        _ => None,
    }
}

pub(crate) fn string_literal(e: &Expr) -> Option<&str> {
    match e {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) => Some(s),
            _ => None,
        },
        Expr::Nested(inner) => string_literal(inner),
        _ => None,
    }
}

fn unnamed_expr(a: &FunctionArg) -> Option<&Expr> {
    match a {
        FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
        _ => None,
    }
}

/// `date_trunc('<fixed unit>', time)` as (length, origin).
fn bucket_of(cx: &Cx, e: &Expr) -> Option<(i64, i64)> {
    let Expr::Function(f) = e else { return None };
    if func_name(f)?.as_str() != "date_trunc" {
        return None;
    }
    let [unit, ts] = plain_args(f)? else {
        return None;
    };
    let unit = string_literal(unnamed_expr(unit)?)?;
    cx.is_time(unnamed_expr(ts)?).then_some(())?;
    fixed_unit(unit)
}

fn select_item(cx: &Cx, fq: &mut BucketQuery, e: &Expr, alias: Option<String>) -> Option<Pending> {
    if let Some(b) = bucket_of(cx, e) {
        if fq.bucket.is_some_and(|have| have != b) {
            return None;
        }
        fq.bucket = Some(b);
        // DataFusion's name for an unaliased date_trunc is its expression text: not matched.
        return Some(Pending::Done(Output::Bucket { name: alias? }));
    }
    if let Some(tag) = cx.tag(e) {
        let name = alias.unwrap_or_else(|| tag.clone());
        return Some(Pending::Tag { name, tag });
    }
    let Expr::Function(f) = e else { return None };
    let func = match func_name(f)?.as_str() {
        "max" => AggFunc::Max,
        "min" => AggFunc::Min,
        "sum" => AggFunc::Sum,
        "avg" => AggFunc::Avg,
        "count" => AggFunc::Count,
        _ => return None,
    };
    let [arg] = plain_args(f)? else { return None };
    let field = match arg {
        FunctionArg::Unnamed(FunctionArgExpr::Wildcard) if func == AggFunc::Count => None,
        FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => {
            let c = cx.column(e)?;
            match cx.column_kind(&c)? {
                ColumnKind::Field(t @ (FieldType::F64 | FieldType::I64 | FieldType::U64)) => {
                    Some((c, t))
                }
                _ => return None,
            }
        }
        _ => return None,
    };
    let fname = format!("{func:?}").to_lowercase();
    let default = match &field {
        None => format!("{fname}(*)"),
        Some((c, _)) if plain_name(c) => format!("{fname}({}.{c})", cx.table),
        Some(_) => return None,
    };
    if alias.is_none() && cx.alias.is_some() {
        // DataFusion names it after the alias; not worth matching.
        return None;
    }
    Some(Pending::Done(Output::Agg {
        name: alias.unwrap_or(default),
        func,
        field,
    }))
}

/// A select item before GROUP BY gives a selected tag its group index.
enum Pending {
    Done(Output),
    Tag { name: String, tag: String },
}

impl Pending {
    fn name(&self) -> &str {
        match self {
            Pending::Done(o) => o.name(),
            Pending::Tag { name, .. } => name,
        }
    }
}

/// Reads GROUP BY into `fq` and resolves the select items to outputs: every selected tag
/// must be grouped, and a bucket, if selected, too.
fn group_by(
    cx: &Cx,
    fq: &mut BucketQuery,
    s: &Select,
    items: Vec<Pending>,
    bucket_aliases: &[String],
) -> Option<Vec<Output>> {
    let GroupByExpr::Expressions(exprs, modifiers) = &s.group_by else {
        return None;
    };
    if !modifiers.is_empty() {
        return None;
    }
    fq.grouped = !exprs.is_empty();
    let mut bucket_grouped = false;
    for g in exprs {
        if let Some(i) = position(g, items.len()) {
            match &items[i] {
                Pending::Done(Output::Bucket { .. }) => bucket_grouped = true,
                Pending::Tag { tag, .. } => push_unique(&mut fq.group_tags, tag.clone()),
                Pending::Done(_) => return None,
            }
        } else if bucket_of(cx, g).is_some_and(|b| Some(b) == fq.bucket)
            || matches!(g, Expr::Identifier(i) if bucket_aliases.contains(&ident_name(i)))
        {
            bucket_grouped = true;
        } else {
            push_unique(&mut fq.group_tags, cx.tag(g)?);
        }
    }
    if fq.bucket.is_some() != bucket_grouped {
        return None;
    }
    let names: Vec<&str> = items.iter().map(Pending::name).collect();
    if names
        .iter()
        .enumerate()
        .any(|(i, n)| names[..i].contains(n))
    {
        // Two outputs with one name: ORDER BY by name would be ambiguous; keep it simple.
        return None;
    }
    items
        .into_iter()
        .map(|p| match p {
            Pending::Done(o) => Some(o),
            Pending::Tag { name, tag } => {
                let i = fq.group_tags.iter().position(|t| *t == tag)?;
                Some(Output::Tag { name, tag: i })
            }
        })
        .collect()
}

fn push_unique(v: &mut Vec<String>, s: String) {
    if !v.contains(&s) {
        v.push(s);
    }
}

/// A 1-based column position (`GROUP BY 1`, `ORDER BY 2`) as an index.
pub(crate) fn position(e: &Expr, n: usize) -> Option<usize> {
    let Expr::Value(v) = e else { return None };
    let Value::Number(s, _) = &v.value else {
        return None;
    };
    let p: usize = s.parse().ok()?;
    (1..=n).contains(&p).then(|| p - 1)
}

/// A WHERE clause read as the fast path reads it: the time range (`i64::MIN`/`i64::MAX`
/// where unbounded), the tag matcher, and the conjuncts that are neither, for the caller to
/// read or refuse.
pub(crate) struct Conditions<'e> {
    pub(crate) time: (i64, i64),
    pub(crate) matcher: Matcher,
    pub(crate) rest: Vec<&'e Expr>,
}

pub(crate) fn conditions<'e>(cx: &Cx, w: Option<&'e Expr>) -> Conditions<'e> {
    let mut conj = Vec::new();
    if let Some(w) = w {
        conjuncts(w, &mut conj);
    }
    let (mut time, mut tags, mut rest) = ((i64::MIN, i64::MAX), Vec::new(), Vec::new());
    for c in conj {
        if let Some((lo, hi)) = time_bound(cx, c) {
            time = (time.0.max(lo), time.1.min(hi));
        } else if let Some(m) = tag_matcher(cx, c) {
            tags.push(m);
        } else {
            rest.push(c);
        }
    }
    let matcher = match tags.len() {
        0 => Matcher::All,
        1 => tags.pop().expect("one"),
        _ => Matcher::And(tags),
    };
    Conditions {
        time,
        matcher,
        rest,
    }
}

pub(crate) fn conjuncts<'e>(e: &'e Expr, out: &mut Vec<&'e Expr>) {
    match e {
        Expr::BinaryOp {
            left,
            op: BinaryOperator::And,
            right,
        } => {
            conjuncts(left, out);
            conjuncts(right, out);
        }
        Expr::Nested(inner) => conjuncts(inner, out),
        other => out.push(other),
    }
}

/// A comparison of `time` with a string literal as a `[start, end)` bound.
pub(crate) fn time_bound(cx: &Cx, e: &Expr) -> Option<(i64, i64)> {
    let Expr::BinaryOp { left, op, right } = e else {
        return None;
    };
    let (lit, op) = if cx.is_time(left) {
        (string_literal(right)?, op.clone())
    } else if cx.is_time(right) {
        let flipped = match op {
            BinaryOperator::Lt => BinaryOperator::Gt,
            BinaryOperator::LtEq => BinaryOperator::GtEq,
            BinaryOperator::Gt => BinaryOperator::Lt,
            BinaryOperator::GtEq => BinaryOperator::LtEq,
            BinaryOperator::Eq => BinaryOperator::Eq,
            _ => return None,
        };
        (string_literal(left)?, flipped)
    } else {
        return None;
    };
    let t = utc_nanos(lit)?;
    Some(match op {
        BinaryOperator::GtEq => (t, i64::MAX),
        BinaryOperator::Gt => (t.checked_add(1)?, i64::MAX),
        BinaryOperator::Lt => (i64::MIN, t),
        BinaryOperator::LtEq => (i64::MIN, t.checked_add(1)?),
        BinaryOperator::Eq => (t, t.checked_add(1)?),
        _ => return None,
    })
}

/// A string as DataFusion casts it for a comparison with `time` (Arrow's cast to a UTC
/// nanosecond timestamp); `None` when the cast fails (DataFusion then reports the error).
pub fn utc_nanos(s: &str) -> Option<i64> {
    let arr = StringArray::from(vec![s]);
    let ty = DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()));
    let opts = arrow::compute::CastOptions {
        safe: false,
        ..Default::default()
    };
    let out = arrow::compute::cast_with_options(&arr, &ty, &opts).ok()?;
    let ts = out.as_primitive::<TimestampNanosecondType>();
    (!ts.is_null(0)).then(|| ts.value(0))
}

/// A tag predicate: `tag = 'v'`, `tag IN ('a', ...)`, and `AND`/`OR` of them.
pub(crate) fn tag_matcher(cx: &Cx, e: &Expr) -> Option<Matcher> {
    match e {
        Expr::Nested(inner) => tag_matcher(cx, inner),
        Expr::BinaryOp { left, op, right } => match op {
            BinaryOperator::And | BinaryOperator::Or => {
                let l = tag_matcher(cx, left)?;
                let r = tag_matcher(cx, right)?;
                Some(match op {
                    BinaryOperator::And => Matcher::And(vec![l, r]),
                    _ => Matcher::Or(vec![l, r]),
                })
            }
            BinaryOperator::Eq => {
                let (tag, v) = match (cx.tag(left), cx.tag(right)) {
                    (Some(t), None) => (t, string_literal(right)?),
                    (None, Some(t)) => (t, string_literal(left)?),
                    _ => return None,
                };
                Some(Matcher::Eq(tag, v.to_string()))
            }
            _ => None,
        },
        Expr::InList {
            expr,
            list,
            negated: false,
        } => {
            let tag = cx.tag(expr)?;
            let values = list
                .iter()
                .map(|v| string_literal(v).map(str::to_string))
                .collect::<Option<Vec<_>>>()?;
            Some(Matcher::In(tag, values))
        }
        _ => None,
    }
}

fn order_by(cx: &Cx, fq: &mut BucketQuery, q: &Query, projection: &[SelectItem]) -> Option<()> {
    let Some(ob) = &q.order_by else {
        return Some(());
    };
    let OrderByKind::Expressions(list) = &ob.kind else {
        return None;
    };
    if ob.interpolate.is_some() {
        return None;
    }
    for o in list {
        if o.with_fill.is_some() {
            return None;
        }
        let column = order_column(cx, fq, &o.expr, projection)?;
        let asc = o.options.asc.unwrap_or(true);
        fq.order.push(SortKey {
            column,
            asc,
            nulls_first: o.options.nulls_first.unwrap_or(!asc),
        });
    }
    Some(())
}

/// The output column an ORDER BY expression names: a position, an output name, a selected
/// tag, or the text of a select expression.
fn order_column(cx: &Cx, fq: &BucketQuery, e: &Expr, projection: &[SelectItem]) -> Option<usize> {
    if let Some(i) = position(e, fq.outputs.len()) {
        return Some(i);
    }
    if let Expr::Identifier(i) = e {
        let name = ident_name(i);
        let hits: Vec<usize> = (0..fq.outputs.len())
            .filter(|&k| fq.outputs[k].name() == name)
            .collect();
        if let [k] = hits.as_slice() {
            return Some(*k);
        }
        if !hits.is_empty() {
            return None;
        }
    }
    if let Some(tag) = cx.tag(e) {
        let g = fq.group_tags.iter().position(|t| *t == tag)?;
        return fq
            .outputs
            .iter()
            .position(|o| matches!(o, Output::Tag { tag: t, .. } if *t == g));
    }
    if bucket_of(cx, e).is_some_and(|b| Some(b) == fq.bucket) {
        return fq
            .outputs
            .iter()
            .position(|o| matches!(o, Output::Bucket { .. }));
    }
    let text = e.to_string();
    projection.iter().position(|p| match p {
        SelectItem::UnnamedExpr(x) | SelectItem::ExprWithAlias { expr: x, .. } => {
            x.to_string() == text
        }
        _ => false,
    })
}

pub(crate) fn limit(q: &Query) -> Option<Option<usize>> {
    match &q.limit_clause {
        None => Some(None),
        Some(LimitClause::LimitOffset {
            limit,
            offset: None,
            limit_by,
        }) if limit_by.is_empty() => match limit {
            None => Some(None),
            Some(Expr::Value(v)) => match &v.value {
                Value::Number(n, _) => n.parse().ok().map(Some),
                _ => None,
            },
            Some(_) => None,
        },
        Some(_) => None,
    }
}
