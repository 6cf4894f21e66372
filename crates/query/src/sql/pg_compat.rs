//! Catalog queries PostgreSQL clients send, made plannable: rewrites of a query's syntax
//! tree before planning.
//!
//! - `information_schema.columns` (however spelled) becomes a derived table over it that adds
//!   PostgreSQL's `udt_name` (`int8`, `float8`, `timestamptz`, …), which Grafana's schema
//!   lookups and SQLAlchemy read; the analyzer rule `rules::pg_types` gives `data_type`
//!   PostgreSQL's names and keeps the connected database's rows only.
//! - The search-path idiom (Grafana's table and column lists ask whether a schema is on the
//!   search path with `IN (SELECT … FROM generate_series(array_lower(string_to_array(
//!   current_setting('search_path'), ','), 1), …) AS i, string_to_array(…) s)`) is answered
//!   with the search path's one schema: `x IN ('public')`.
//!
//! Invariant: a rewritten query reads the same tables; the derived table is marked so the
//! rewrite never applies to its own inner reference.

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, Query, TableAlias, TableFactor, Value, VisitMut, VisitorMut, visit_expressions_mut,
};
use datafusion::sql::sqlparser::parser::Parser;

/// The alias that marks the inner scan of the derived `information_schema.columns`.
const INNER: &str = "__tempora_pg_columns";

/// The derived table that stands for `information_schema.columns`.
fn columns_query() -> Box<Query> {
    let sql = format!(
        "SELECT table_catalog, table_schema, table_name, column_name, ordinal_position, \
         column_default, is_nullable, data_type, character_maximum_length, \
         character_octet_length, numeric_precision, numeric_precision_radix, numeric_scale, \
         datetime_precision, interval_type, pg_udt_name(data_type) AS udt_name \
         FROM information_schema.columns AS {INNER}"
    );
    parse_query(&sql)
}

fn parse_query(sql: &str) -> Box<Query> {
    Parser::new(&super::tokens::DIALECT)
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_query())
        .expect("a fixed query parses")
}

/// Rewrites `q` in place (see the module header).
pub fn rewrite(q: &mut Query) {
    let _ = visit_expressions_mut(q, |e| {
        if let Expr::InSubquery {
            expr,
            subquery,
            negated,
        } = e
            && is_search_path_expansion(subquery)
        {
            // A list, not a subquery: it may stand in ORDER BY, where DataFusion plans no
            // subquery.
            *e = Expr::InList {
                expr: expr.clone(),
                list: vec![Expr::Value(
                    Value::SingleQuotedString("public".into()).into(),
                )],
                negated: *negated,
            };
        }
        ControlFlow::<()>::Continue(())
    });
    let _ = q.visit(&mut Columns);
}

/// Whether a subquery expands `current_setting('search_path')` into its schemas.
fn is_search_path_expansion(q: &Query) -> bool {
    let text = q.to_string().to_ascii_lowercase();
    text.contains("current_setting('search_path')") && text.contains("generate_series")
}

struct Columns;

fn is_columns(name: &datafusion::sql::sqlparser::ast::ObjectName) -> bool {
    let parts: Vec<String> = name
        .0
        .iter()
        .filter_map(|p| p.as_ident())
        .map(|i| i.value.to_ascii_lowercase())
        .collect();
    matches!(parts.as_slice(), [.., s, t] if s == "information_schema" && t == "columns")
}

impl VisitorMut for Columns {
    type Break = ();

    fn post_visit_table_factor(&mut self, f: &mut TableFactor) -> ControlFlow<()> {
        let TableFactor::Table {
            name, alias, args, ..
        } = f
        else {
            return ControlFlow::Continue(());
        };
        let inner = alias.as_ref().is_some_and(|a| a.name.value == INNER);
        // An alias that names the columns is left alone: it counts them.
        let renamed = alias.as_ref().is_some_and(|a| !a.columns.is_empty());
        if inner || renamed || args.is_some() || !is_columns(name) {
            return ControlFlow::Continue(());
        }
        let alias = alias.clone().unwrap_or(TableAlias {
            name: "columns".into(),
            columns: vec![],
            explicit: true,
            at: None,
        });
        *f = TableFactor::Derived {
            lateral: false,
            subquery: columns_query(),
            alias: Some(alias),
            sample: None,
        };
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        let mut q = parse_query(sql);
        rewrite(&mut q);
        q.to_string()
    }

    #[test]
    fn cases() {
        let cases: &[(&str, &str, &[&str], &[&str])] = &[
            (
                "columns gains udt_name",
                "SELECT column_name, udt_name FROM information_schema.columns WHERE table_name = 't'",
                &[
                    "pg_udt_name(data_type) AS udt_name",
                    "AS columns WHERE table_name = 't'",
                ],
                &[],
            ),
            (
                "any case, the user's alias kept",
                "SELECT c.udt_name FROM INFORMATION_SCHEMA.COLUMNS c",
                &["AS __tempora_pg_columns) c"],
                &[],
            ),
            (
                "a database-qualified name",
                "SELECT udt_name FROM public.information_schema.columns",
                &["pg_udt_name(data_type) AS udt_name"],
                &[],
            ),
            (
                "an alias naming the columns is left alone",
                "SELECT a FROM information_schema.columns AS c(a, b)",
                &["FROM information_schema.columns AS c (a, b)"],
                &["udt_name"],
            ),
            (
                "other tables untouched",
                "SELECT * FROM information_schema.tables",
                &["FROM information_schema.tables"],
                &["udt_name"],
            ),
            (
                "grafana's search-path test",
                "SELECT 1 FROM t WHERE s IN (SELECT CASE WHEN trim(s[i]) = '\"$user\"' THEN user \
                 ELSE trim(s[i]) END FROM generate_series(array_lower(string_to_array(\
                 current_setting('search_path'),','),1), array_upper(string_to_array(\
                 current_setting('search_path'),','),1)) AS i, \
                 string_to_array(current_setting('search_path'),',') s)",
                &["s IN ('public')"],
                &["generate_series"],
            ),
            (
                "an ordinary IN subquery untouched",
                "SELECT 1 FROM t WHERE s IN (SELECT x FROM generate_series(1, 3) AS g(x))",
                &["generate_series(1, 3)"],
                &["'public'"],
            ),
        ];
        for (name, sql, has, lacks) in cases {
            let out = rewritten(sql);
            for h in *has {
                assert!(out.contains(h), "{name}: {h:?} not in {out}");
            }
            for l in *lacks {
                assert!(!out.contains(l), "{name}: {l:?} in {out}");
            }
        }
        // Rewriting twice changes nothing more (the inner scan is marked).
        let once = rewritten("SELECT udt_name FROM information_schema.columns");
        assert_eq!(rewritten(&once), once);
    }
}
