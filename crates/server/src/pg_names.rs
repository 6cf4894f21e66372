//! Output column names as PostgreSQL gives them, for clients of the PostgreSQL port.
//!
//! DataFusion names an unaliased output column after its whole expression
//! (`max(cpu.usage_user)`, `Int64(1)`); PostgreSQL names it after the select-list item's
//! outermost name (`max`, `?column?`), and clients that map rows to objects by column name
//! (Grafana's query builder, ORMs, pandas) expect that. The rule (PostgreSQL's
//! `FigureColname`): an alias; else a column's own name; a function's name; a cast's inner
//! name, or the type's when the inner has none; `case` for CASE; otherwise `?column?`.
//!
//! Invariants:
//! - Pure over the statement's syntax tree; the plan's names are used for `*` and whenever
//!   the select list cannot be matched to the output columns one to one.
//! - Only names change, never the number or order of columns (PostgreSQL allows two
//!   columns of one name, so `max(a), max(b)` are both `max`).

use datafusion::sql::sqlparser::ast::{
    CastKind, DataType, Expr, Function, ObjectName, Query, SelectItem, SetExpr, Statement,
};

/// `schema` with its fields named as PostgreSQL names the output of `stmt` (an Arrow schema
/// may hold two fields of one name).
pub fn renamed(
    schema: &arrow::datatypes::Schema,
    query: Option<&Query>,
) -> arrow::datatypes::Schema {
    let planned: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    let Some(q) = query else {
        return schema.clone();
    };
    let names = query_names(q, &planned);
    if names == planned {
        return schema.clone();
    }
    let fields: Vec<arrow::datatypes::Field> = schema
        .fields()
        .iter()
        .zip(names)
        .map(|(f, n)| f.as_ref().clone().with_name(n))
        .collect();
    arrow::datatypes::Schema::new_with_metadata(fields, schema.metadata().clone())
}

/// PostgreSQL's name for an expression without a name of its own.
const NO_NAME: &str = "?column?";

/// The output column names of `stmt`, given the names the plan gives them.
pub fn column_names(stmt: &Statement, planned: &[String]) -> Vec<String> {
    match stmt {
        Statement::Query(q) => query_names(q, planned),
        _ => planned.to_vec(),
    }
}

/// The output column names of query `q`, given the names the plan gives them.
pub fn query_names(q: &Query, planned: &[String]) -> Vec<String> {
    let Some(items) = select_items(q) else {
        return planned.to_vec();
    };
    let wildcards = items
        .iter()
        .filter(|i| {
            matches!(
                i,
                SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)
            )
        })
        .count();
    let named = items.len() - wildcards;
    // One wildcard at most, and it must stand for at least nothing.
    if wildcards > 1 || planned.len() < named || (wildcards == 0 && planned.len() != named) {
        return planned.to_vec();
    }
    let star = planned.len() - named;
    let mut out = Vec::with_capacity(planned.len());
    for item in items {
        match item {
            SelectItem::UnnamedExpr(e) => out.push(expr_name(e).unwrap_or(NO_NAME.into())),
            SelectItem::ExprWithAlias { alias, .. } => out.push(ident(alias)),
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => {
                let at = out.len();
                out.extend_from_slice(&planned[at..at + star]);
            }
            _ => return planned.to_vec(),
        }
    }
    out
}

/// The select list that names the output: the query's, or the first branch of a set
/// operation's (as PostgreSQL does).
fn select_items(q: &Query) -> Option<&[SelectItem]> {
    let mut body = q.body.as_ref();
    loop {
        match body {
            SetExpr::Select(s) => return Some(&s.projection),
            SetExpr::Query(q) => body = q.body.as_ref(),
            SetExpr::SetOperation { left, .. } => body = left.as_ref(),
            _ => return None,
        }
    }
}

/// An identifier as PostgreSQL folds it: unquoted ones to lower case.
fn ident(i: &datafusion::sql::sqlparser::ast::Ident) -> String {
    match i.quote_style {
        Some(_) => i.value.clone(),
        None => i.value.to_lowercase(),
    }
}

/// The name PostgreSQL gives an expression, if it gives one.
fn expr_name(e: &Expr) -> Option<String> {
    strong_name(e).or_else(|| weak_name(e))
}

/// Names that win over a cast's type name.
fn strong_name(e: &Expr) -> Option<String> {
    match e {
        Expr::Identifier(i) => Some(ident(i)),
        Expr::CompoundIdentifier(parts) => parts.last().map(ident),
        Expr::Function(f) => Some(function_name(f)),
        Expr::Cast {
            kind,
            expr,
            data_type,
            ..
        } => match strong_name(expr) {
            Some(n) => Some(n),
            None if matches!(kind, CastKind::Cast | CastKind::DoubleColon) => {
                Some(type_name(data_type))
            }
            None => None,
        },
        Expr::Nested(inner) => strong_name(inner),
        Expr::Value(v) if matches!(v.value, datafusion::sql::sqlparser::ast::Value::Boolean(_)) => {
            Some("bool".into())
        }
        Expr::TypedString(t) => Some(type_name(&t.data_type)),
        Expr::Interval(_) => Some("interval".into()),
        Expr::AtTimeZone { .. } => Some("timezone".into()),
        Expr::Array(_) => Some("array".into()),
        Expr::Exists { .. } => Some("exists".into()),
        // Functions with a syntax of their own.
        Expr::Extract { .. } => Some("extract".into()),
        Expr::Substring { .. } => Some("substring".into()),
        Expr::Position { .. } => Some("position".into()),
        Expr::Trim { .. } => Some("btrim".into()),
        Expr::Ceil { .. } => Some("ceil".into()),
        Expr::Floor { .. } => Some("floor".into()),
        _ => None,
    }
}

/// Names a cast's type name replaces (PostgreSQL's weaker names).
fn weak_name(e: &Expr) -> Option<String> {
    match e {
        Expr::Nested(inner) => weak_name(inner),
        Expr::Case { .. } => Some("case".into()),
        _ => None,
    }
}

fn function_name(f: &Function) -> String {
    last_part(&f.name).to_lowercase()
}

fn last_part(n: &ObjectName) -> String {
    n.0.last()
        .and_then(|p| p.as_ident())
        .map_or_else(|| n.to_string(), |i| i.value.clone())
}

/// PostgreSQL's internal name of a cast's type (`int4` for INTEGER, also of an array of it).
fn type_name(t: &DataType) -> String {
    let s = t.to_string().to_lowercase();
    let base = s.split(['(', '[']).next().unwrap_or(&s).trim();
    match base {
        "int" | "integer" | "int4" => "int4",
        "bigint" | "int8" => "int8",
        "smallint" | "int2" => "int2",
        "real" | "float4" => "float4",
        "double precision" | "double" | "float8" | "float" => "float8",
        "boolean" | "bool" => "bool",
        "varchar" | "character varying" => "varchar",
        "timestamp with time zone" | "timestamptz" => "timestamptz",
        "timestamp" | "timestamp without time zone" => "timestamp",
        "decimal" | "numeric" => "numeric",
        other => return other.to_string(),
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(sql: &str, planned: &[&str]) -> Vec<String> {
        use datafusion::sql::sqlparser::{dialect::PostgreSqlDialect, parser::Parser};
        let stmt = Parser::parse_sql(&PostgreSqlDialect {}, sql)
            .unwrap()
            .remove(0);
        let planned: Vec<String> = planned.iter().map(|s| s.to_string()).collect();
        column_names(&stmt, &planned)
    }

    #[test]
    fn cases() {
        let cases: &[(&str, &str, &[&str], &[&str])] = &[
            (
                "an aggregate",
                "SELECT max(usage_user) FROM cpu",
                &["max(cpu.usage_user)"],
                &["max"],
            ),
            (
                "count star",
                "SELECT count(*) FROM cpu",
                &["count(*)"],
                &["count"],
            ),
            (
                "an alias",
                "SELECT max(v) AS top FROM cpu",
                &["top"],
                &["top"],
            ),
            (
                "a qualified column",
                "SELECT cpu.host FROM cpu",
                &["host"],
                &["host"],
            ),
            ("a literal", "SELECT 1", &["Int64(1)"], &["?column?"]),
            (
                "grafana's version check",
                "SELECT current_setting('server_version_num')::int/100",
                &["x"],
                &["?column?"],
            ),
            (
                "a cast of a function",
                "SELECT version()::text",
                &["x"],
                &["version"],
            ),
            ("a cast of a literal", "SELECT '1'::int", &["x"], &["int4"]),
            (
                "case",
                "SELECT CASE WHEN 1 = 1 THEN 2 END",
                &["x"],
                &["case"],
            ),
            (
                "a star among items",
                "SELECT max(v), * FROM t",
                &["max(t.v)", "a", "b"],
                &["max", "a", "b"],
            ),
            (
                "two of one name",
                "SELECT max(a), max(b) FROM t",
                &["x", "y"],
                &["max", "max"],
            ),
            (
                "a union takes the first branch",
                "SELECT count(*) FROM a UNION ALL SELECT 1",
                &["count(*)"],
                &["count"],
            ),
            (
                "an expression",
                "SELECT a + 1 FROM t",
                &["t.a + Int64(1)"],
                &["?column?"],
            ),
            (
                "not a query",
                "SHOW TABLES",
                &["table_name"],
                &["table_name"],
            ),
            (
                "two stars keep the plan's",
                "SELECT *, * FROM t",
                &["a", "a"],
                &["a", "a"],
            ),
            (
                "unquoted names fold",
                "SELECT Host, v AS Top FROM t",
                &["x", "y"],
                &["host", "top"],
            ),
            (
                "quoted names keep case",
                "SELECT \"Host\" AS \"Top\" FROM t",
                &["x"],
                &["Top"],
            ),
            ("a boolean", "SELECT true", &["x"], &["bool"]),
            (
                "a typed literal",
                "SELECT DATE '2024-01-01'",
                &["x"],
                &["date"],
            ),
            (
                "an interval",
                "SELECT INTERVAL '1 day'",
                &["x"],
                &["interval"],
            ),
            (
                "at time zone",
                "SELECT t AT TIME ZONE 'UTC' FROM t",
                &["x"],
                &["timezone"],
            ),
            (
                "a cast of a case takes the type",
                "SELECT CASE WHEN 1 = 1 THEN 1 END::text",
                &["x"],
                &["text"],
            ),
            ("an array cast", "SELECT '{1}'::int[]", &["x"], &["int4"]),
        ];
        for (name, sql, planned, want) in cases {
            assert_eq!(names(sql, planned), *want, "{name}: {sql}");
        }
    }
}
