//! What `LATEST ON` means, as a change of the query's syntax tree before DataFusion plans it:
//!
//! ```sql
//! SELECT * FROM cpu WHERE … LATEST ON time PARTITION BY host, region
//! -- is planned as
//! SELECT DISTINCT ON (host, region) * FROM cpu WHERE … ORDER BY host, region, time DESC
//! ```
//!
//! An `ORDER BY` or `LIMIT` after the clause applies to the latest rows: the query above
//! becomes a derived table, `SELECT * FROM (…) AS latest ORDER BY … LIMIT …`. The
//! `DISTINCT ON … ORDER BY …, time DESC` shape is what [`crate::rules::latest`] answers from
//! the last-value cache.

use datafusion::sql::sqlparser::ast::{
    Distinct, Expr, Ident, OrderBy, OrderByExpr, OrderByKind, OrderByOptions, Query, SelectItem,
    SetExpr, TableAlias, TableFactor, TableWithJoins, WildcardAdditionalOptions,
};

use crate::error::{QueryError, Result};
use crate::sql::LatestOn;

fn bad(msg: &str) -> QueryError {
    QueryError::Sql(format!("LATEST ON: {msg}"))
}

/// `q` with `spec` applied (see the module header).
pub fn rewrite(q: &Query, spec: &LatestOn) -> Result<Box<Query>> {
    let mut inner = Box::new(q.clone());
    let outer_order = inner.order_by.take();
    let outer_limit = inner.limit_clause.take();
    let SetExpr::Select(select) = inner.body.as_mut() else {
        return Err(bad("it applies to a plain SELECT (not UNION or VALUES)"));
    };
    if select.distinct.is_some() {
        return Err(bad("it cannot be combined with DISTINCT"));
    }
    select.distinct = Some(Distinct::On(spec.partition_by.clone()));
    let asc = OrderByOptions {
        asc: None,
        nulls_first: None,
    };
    let mut keys: Vec<OrderByExpr> = spec
        .partition_by
        .iter()
        .map(|e| OrderByExpr {
            expr: e.clone(),
            options: asc,
            with_fill: None,
        })
        .collect();
    keys.push(OrderByExpr {
        expr: Expr::Identifier(Ident::new("time")),
        options: OrderByOptions {
            asc: Some(false),
            nulls_first: None,
        },
        with_fill: None,
    });
    inner.order_by = Some(OrderBy {
        kind: OrderByKind::Expressions(keys),
        interpolate: None,
    });
    if outer_order.is_none() && outer_limit.is_none() {
        return Ok(inner);
    }
    // `SELECT * FROM (<inner>) AS latest ORDER BY … LIMIT …`, built from a copy of the inner
    // SELECT so that every other part of it is the empty default of a plain SELECT.
    let SetExpr::Select(template) = inner.body.as_ref() else {
        unreachable!("checked above");
    };
    let mut outer_select = template.clone();
    outer_select.distinct = None;
    outer_select.projection = vec![SelectItem::Wildcard(WildcardAdditionalOptions::default())];
    outer_select.selection = None;
    outer_select.having = None;
    outer_select.from = vec![TableWithJoins {
        relation: TableFactor::Derived {
            lateral: false,
            subquery: inner.clone(),
            alias: Some(TableAlias {
                explicit: true,
                name: Ident::new("latest"),
                columns: vec![],
                at: None,
            }),
            sample: None,
        },
        joins: vec![],
    }];
    let mut outer = inner;
    outer.with = None;
    outer.body = Box::new(SetExpr::Select(outer_select));
    outer.order_by = outer_order;
    outer.limit_clause = outer_limit;
    Ok(outer)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::{Statement, parse};

    fn rewritten(sql: &str) -> Result<String> {
        match parse(sql)?.pop() {
            Some(Statement::Query(q)) => {
                rewrite(&q.query, q.latest_on.as_ref().unwrap()).map(|q| q.to_string())
            }
            other => panic!("{sql}: {other:?}"),
        }
    }

    #[test]
    fn rewrites() {
        for (name, sql, want) in [
            (
                "one partition column",
                "SELECT * FROM cpu LATEST ON time PARTITION BY host",
                "SELECT DISTINCT ON (host) * FROM cpu ORDER BY host, time DESC",
            ),
            (
                "where, two columns, order and limit after",
                "select host, v from cpu where region = 'eu' latest on time partition by host, region order by v desc limit 2",
                "SELECT * FROM (SELECT DISTINCT ON (host, region) host, v FROM cpu WHERE region = 'eu' \
                 ORDER BY host, region, time DESC) AS latest ORDER BY v DESC LIMIT 2",
            ),
        ] {
            assert_eq!(rewritten(sql).unwrap(), want, "{name}");
        }
        let e = rewritten("SELECT DISTINCT h FROM t LATEST ON time PARTITION BY h").unwrap_err();
        assert!(e.to_string().contains("DISTINCT"), "{e}");
    }
}
