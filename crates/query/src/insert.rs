//! Writes through SQL: a DataFusion sink for `INSERT … SELECT`, and a fast path for
//! `INSERT INTO t (…) VALUES (…), …` that bypasses the planner (Lindorm §4.4).
//!
//! Fast-path rules: every value is a literal (number, string, boolean, NULL, or a negated
//! number) or a bound parameter (`$1`); the column list is required and must name `time` unless the server's clock
//! should stamp the rows. Columns the table already has keep their kind; a new column is a
//! tag when its first value is a string and a field otherwise. `time` takes nanoseconds as an
//! integer or a timestamp string (`'2024-01-01 00:00:00'`, RFC 3339). Anything else (no
//! column list, expressions, `INSERT … SELECT`) goes through DataFusion.

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::common::ScalarValue;
use datafusion::datasource::sink::DataSink;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::physical_plan::{DisplayAs, DisplayFormatType};
use datafusion::sql::sqlparser::ast::{
    Expr, SetExpr, Statement, TableObject, UnaryOperator, Value,
};
use futures::StreamExt;
use tempora_model::{ColumnKind, FieldValue, RowBatch, RowBatchBuilder, Timestamp};
use tempora_storage::Engine;

use crate::error::{QueryError, Result};

/// Writes the rows of `batch` and fails if the engine refused any of them.
pub fn write_all_or_fail(engine: &Engine, batch: RowBatch) -> Result<u64> {
    let db = crate::split_engine_table(batch.table())
        .map(|(db, _)| db.to_string())
        .unwrap_or_default();
    let out = engine.write(batch)?;
    if let Some(r) = out.rejected.first() {
        return Err(QueryError::Insert(format!(
            "{} of {} rows refused; row {}: {}",
            out.rejected.len(),
            out.written + out.rejected.len(),
            r.row + 1,
            crate::user_message(&db, &r.reason)
        )));
    }
    Ok(out.written as u64)
}

/// The sink behind `INSERT INTO t SELECT …`.
pub struct EngineSink {
    engine: Arc<Engine>,
    table: String,
    schema: SchemaRef,
}

impl EngineSink {
    pub fn new(engine: Arc<Engine>, table: String, schema: SchemaRef) -> Self {
        Self {
            engine,
            table,
            schema,
        }
    }
}

impl std::fmt::Debug for EngineSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "EngineSink({})", self.table)
    }
}

impl DisplayAs for EngineSink {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "EngineSink: table={}", self.table)
    }
}

#[async_trait]
impl DataSink for EngineSink {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }
    async fn write_all(
        &self,
        mut data: SendableRecordBatchStream,
        _context: &Arc<TaskContext>,
    ) -> DfResult<u64> {
        let tags: Vec<String> = self
            .engine
            .schema(&self.table)
            .map(|s| s.tags().map(str::to_string).collect())
            .unwrap_or_default();
        let mut n = 0;
        while let Some(batch) = data.next().await {
            let rows = crate::convert::record_batch_to_rows(&self.table, &tags, &batch?)
                .map_err(|e| DataFusionError::External(Box::new(e)))?;
            let engine = self.engine.clone();
            n += tokio::task::spawn_blocking(move || write_all_or_fail(&engine, rows))
                .await
                .map_err(|e| DataFusionError::External(Box::new(e)))?
                .map_err(|e| DataFusionError::External(Box::new(e)))?;
        }
        Ok(n)
    }
}

/// A simple insert with its rows bound: the table (unqualified) and its rows.
#[derive(Debug)]
pub struct SimpleInsert {
    pub table: String,
    pub batch: RowBatch,
}

/// One literal of a VALUES list.
#[derive(Debug, Clone, PartialEq)]
pub enum Lit {
    Num(String),
    Str(String),
    Bool(bool),
    Null,
}

/// One cell of a VALUES list: a literal, or a bound parameter (0-based).
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Lit(Lit),
    Param(usize),
}

/// `INSERT INTO t (c, ...) VALUES (...), ...` whose cells are constants or parameters: written
/// without the planner, to tables that may not exist yet (schema on write).
#[derive(Debug, Clone, PartialEq)]
pub struct SimpleInsertPlan {
    pub table: crate::sql::TableName,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
}

fn cell(e: &Expr) -> Option<Cell> {
    if let Expr::Value(v) = e
        && let Value::Placeholder(p) = &v.value
    {
        let n: usize = p.strip_prefix('$')?.parse().ok()?;
        return n.checked_sub(1).map(Cell::Param);
    }
    literal(e).map(Cell::Lit)
}

fn literal(e: &Expr) -> Option<Lit> {
    match e {
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) => Some(Lit::Num(n.clone())),
            Value::SingleQuotedString(s) => Some(Lit::Str(s.clone())),
            Value::Boolean(b) => Some(Lit::Bool(*b)),
            Value::Null => Some(Lit::Null),
            _ => None,
        },
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match literal(expr)? {
            Lit::Num(n) => Some(Lit::Num(format!("-{n}"))),
            _ => None,
        },
        _ => None,
    }
}

/// A bound parameter as the literal it stands for.
fn param_literal(v: &ScalarValue) -> Result<Lit> {
    use ScalarValue as S;
    if v.is_null() {
        return Ok(Lit::Null);
    }
    Ok(match v {
        S::Utf8(Some(s)) | S::LargeUtf8(Some(s)) | S::Utf8View(Some(s)) => Lit::Str(s.clone()),
        S::Boolean(Some(b)) => Lit::Bool(*b),
        S::Float64(Some(f)) => Lit::Num(f.to_string()),
        S::Float32(Some(f)) => Lit::Num(f.to_string()),
        v if v.data_type().is_integer() => Lit::Num(v.to_string()),
        v => match crate::pushdown::ts_nanos(v) {
            Some(ns) => Lit::Num(ns.to_string()),
            None => {
                return Err(QueryError::Insert(format!(
                    "a parameter of type {} cannot be inserted",
                    v.data_type()
                )));
            }
        },
    })
}

impl SimpleInsertPlan {
    /// The plan of a simple insert statement; `None` when it is another kind of insert (the
    /// caller plans it with DataFusion).
    pub fn from_statement(stmt: &Statement) -> Option<Result<SimpleInsertPlan>> {
        let Statement::Insert(ins) = stmt else {
            return None;
        };
        let TableObject::TableName(name) = &ins.table else {
            return None;
        };
        if ins.columns.is_empty() || ins.on.is_some() || ins.returning.is_some() {
            return None;
        }
        let SetExpr::Values(values) = ins.source.as_ref()?.body.as_ref() else {
            return None;
        };
        let mut rows = Vec::with_capacity(values.rows.len());
        for r in &values.rows {
            rows.push(r.iter().map(cell).collect::<Option<Vec<_>>>()?);
        }
        let columns: Vec<String> = ins
            .columns
            .iter()
            .map(|c| {
                c.0.last()
                    .and_then(|p| p.as_ident())
                    .map(crate::sql::ddl::ident_name)
            })
            .collect::<Option<_>>()?;
        Some(
            crate::sql::ddl::table_name(name).map(|table| SimpleInsertPlan {
                table,
                columns,
                rows,
            }),
        )
    }

    /// How many parameters the rows use (the highest `$n`).
    pub fn param_count(&self) -> usize {
        self.rows
            .iter()
            .flatten()
            .filter_map(|c| match c {
                Cell::Param(i) => Some(i + 1),
                Cell::Lit(_) => None,
            })
            .max()
            .unwrap_or(0)
    }

    /// The rows with `params` bound. `kinds` gives the kinds of an existing table's columns;
    /// `now_ns` stamps rows without time.
    pub fn bind(
        &self,
        table: &str,
        params: &[ScalarValue],
        kinds: &dyn Fn(&str) -> Option<ColumnKind>,
        now_ns: i64,
    ) -> Result<RowBatch> {
        let rows = self
            .rows
            .iter()
            .map(|r| {
                r.iter()
                    .map(|c| match c {
                        Cell::Lit(l) => Ok(l.clone()),
                        Cell::Param(i) => params
                            .get(*i)
                            .ok_or_else(|| {
                                QueryError::Insert(format!(
                                    "no value bound for parameter ${}",
                                    i + 1
                                ))
                            })
                            .and_then(param_literal),
                    })
                    .collect::<Result<Vec<_>>>()
            })
            .collect::<Result<Vec<_>>>()?;
        build_rows(table, &self.columns, rows, kinds, now_ns)
    }
}

/// Parses `sql` as a simple insert; `None` when it is something else. (Tests and tools: the
/// service reads inserts through [`crate::sql::parse`].)
pub fn parse_simple_insert(
    sql: &str,
    kinds: impl Fn(&str, &str) -> Option<ColumnKind>,
    now_ns: i64,
) -> Option<Result<SimpleInsert>> {
    let stmt = match crate::sql::parse(sql).ok()?.pop()? {
        crate::sql::Statement::Insert(s) => s,
        _ => return None,
    };
    let plan = SimpleInsertPlan::from_statement(&stmt)?;
    Some(plan.and_then(|p| {
        let table = p.table.table.clone();
        p.bind(&table, &[], &|c| kinds(&table, c), now_ns)
            .map(|batch| SimpleInsert { table, batch })
    }))
}

fn build_rows(
    table: &str,
    columns: &[String],
    rows: Vec<Vec<Lit>>,
    kinds: &dyn Fn(&str) -> Option<ColumnKind>,
    now_ns: i64,
) -> Result<RowBatch> {
    let mut b = RowBatchBuilder::new(table)?;
    let time_col = columns.iter().position(|c| c == tempora_model::TIME_COLUMN);
    // A new column's kind follows its first non-NULL value.
    let is_tag: Vec<bool> = columns
        .iter()
        .enumerate()
        .map(|(i, c)| match kinds(c) {
            Some(ColumnKind::Tag) => true,
            Some(ColumnKind::Field(_)) => false,
            None => rows
                .iter()
                .find_map(|r| match r.get(i) {
                    Some(Lit::Null) | None => None,
                    Some(Lit::Str(_)) => Some(true),
                    Some(_) => Some(false),
                })
                .unwrap_or(false),
        })
        .collect();
    for (n, row) in rows.into_iter().enumerate() {
        let at = |msg: String| QueryError::Insert(format!("row {}: {msg}", n + 1));
        if row.len() != columns.len() {
            return Err(at(format!(
                "{} values for {} columns",
                row.len(),
                columns.len()
            )));
        }
        let mut tags = Vec::new();
        let mut fields = Vec::new();
        let mut time = now_ns;
        for (i, v) in row.into_iter().enumerate() {
            let col = columns[i].as_str();
            if Some(i) == time_col {
                time = match v {
                    Lit::Num(s) => s
                        .parse()
                        .map_err(|_| at(format!("time {s:?} is not an integer of nanoseconds")))?,
                    Lit::Str(s) => {
                        arrow::compute::kernels::cast_utils::string_to_timestamp_nanos(&s)
                            .map_err(|e| at(format!("time {s:?}: {e}")))?
                    }
                    _ => return Err(at("time must be a timestamp string or nanoseconds".into())),
                };
                continue;
            }
            match (is_tag[i], v) {
                (_, Lit::Null) => {}
                (true, Lit::Str(s)) => tags.push((col, s)),
                (true, Lit::Num(s)) => tags.push((col, s)),
                (true, Lit::Bool(x)) => tags.push((col, x.to_string())),
                (false, Lit::Str(s)) => fields.push((col, FieldValue::Str(s))),
                (false, Lit::Bool(x)) => fields.push((col, FieldValue::Bool(x))),
                (false, Lit::Num(s)) => fields.push((col, number(col, &s, &kinds).map_err(at)?)),
            }
        }
        let tag_refs: Vec<(&str, &str)> = tags.iter().map(|(k, v)| (*k, v.as_str())).collect();
        b.push(&tag_refs, &fields, Timestamp(time))
            .map_err(|e| at(e.to_string()))?;
    }
    Ok(b.finish())
}

/// A numeric literal as the column's type: integers stay i64 unless the column is a float
/// (or u64) field; anything with a point or exponent is a float.
fn number(
    col: &str,
    s: &str,
    kinds: &dyn Fn(&str) -> Option<ColumnKind>,
) -> Result<FieldValue, String> {
    use tempora_model::FieldType as T;
    let bad = || format!("{col}: {s:?} is not a valid number for this column");
    match kinds(col) {
        Some(ColumnKind::Field(T::F64)) => s.parse().map(FieldValue::F64).map_err(|_| bad()),
        Some(ColumnKind::Field(T::U64)) => s.parse().map(FieldValue::U64).map_err(|_| bad()),
        Some(ColumnKind::Field(T::I64)) => s.parse().map(FieldValue::I64).map_err(|_| bad()),
        _ => match s.parse::<i64>() {
            Ok(i) => Ok(FieldValue::I64(i)),
            Err(_) => s.parse().map(FieldValue::F64).map_err(|_| bad()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: &str, _: &str) -> Option<ColumnKind> {
        None
    }

    #[test]
    fn simple_inserts_parse_and_others_fall_through() {
        let cases: &[(&str, &str, Option<usize>)] = &[
            (
                "plain",
                "INSERT INTO cpu (host, time, v) VALUES ('a', 1, 1.5), ('b', 2, -2)",
                Some(2),
            ),
            (
                "timestamp string",
                "insert into cpu (host, time, v) values ('a', '2024-01-01T00:00:00Z', 1)",
                Some(1),
            ),
            (
                "no time: server clock",
                "INSERT INTO cpu (host, v) VALUES ('a', 1)",
                Some(1),
            ),
            (
                "select is planned",
                "INSERT INTO cpu SELECT * FROM other",
                None,
            ),
            (
                "no column list is planned",
                "INSERT INTO cpu VALUES ('a', 1)",
                None,
            ),
            (
                "expressions are planned",
                "INSERT INTO cpu (host, v) VALUES ('a', 1 + 1)",
                None,
            ),
            ("not an insert", "SELECT 1", None),
        ];
        for (name, sql, want) in cases {
            let got = parse_simple_insert(sql, none, 7).map(|r| r.unwrap().batch.len());
            assert_eq!(got, *want, "{name}");
        }
    }

    #[test]
    fn bad_simple_inserts_name_the_row() {
        let cases: &[(&str, &str, &str)] = &[
            (
                "value count",
                "INSERT INTO t (host, v) VALUES ('a', 1), ('b')",
                "row 2: 1 values for 2 columns",
            ),
            (
                "bad time",
                "INSERT INTO t (time, v) VALUES ('yesterday', 1)",
                "row 1: time \"yesterday\"",
            ),
            (
                "no fields",
                "INSERT INTO t (host, time) VALUES ('a', 1)",
                "row 1:",
            ),
        ];
        for (name, sql, want) in cases {
            let err = parse_simple_insert(sql, none, 0)
                .unwrap()
                .unwrap_err()
                .to_string();
            assert!(err.contains(want), "{name}: {err}");
        }
    }

    #[test]
    fn existing_kinds_win_over_literal_types() {
        let kinds = |_: &str, c: &str| match c {
            "host" => Some(ColumnKind::Tag),
            "v" => Some(ColumnKind::Field(tempora_model::FieldType::F64)),
            _ => None,
        };
        let ins = parse_simple_insert("INSERT INTO t (host, v) VALUES (5, 3)", kinds, 0)
            .unwrap()
            .unwrap();
        let row = ins.batch.row(0);
        assert_eq!(row.fields.len(), 1);
        assert!(matches!(row.fields[0].1, FieldValue::F64(x) if x == 3.0));
    }
}
