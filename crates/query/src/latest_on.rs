//! `LATEST ON` (QuestDB): the latest row of each partition, rewritten before planning:
//!
//! ```sql
//! SELECT * FROM cpu WHERE … LATEST ON time PARTITION BY host, region
//! -- becomes
//! SELECT DISTINCT ON (host, region) * FROM cpu WHERE … ORDER BY host, region, time DESC
//! ```
//!
//! An `ORDER BY` or `LIMIT` after the clause applies to the latest rows: the rewritten query
//! becomes a subquery, `SELECT * FROM (…) AS latest ORDER BY … LIMIT …`. The clause must name
//! the `time` column and at least one partition column; `LATEST ON` not followed by
//! `<column> PARTITION BY` is left alone (it is a join on a table aliased `latest`).

use datafusion::sql::sqlparser::ast::{SetExpr, Statement};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;

use crate::error::{QueryError, Result};
use crate::sql_text::find_keywords;

fn bad(msg: impl Into<String>) -> QueryError {
    QueryError::Sql(format!("LATEST ON: {}", msg.into()))
}

/// Rewrites a statement with `LATEST ON`; `None` when it has none.
pub fn rewrite(sql: &str) -> Result<Option<String>> {
    let Some((start, after)) = find_keywords(sql, &["LATEST", "ON"], 0) else {
        return Ok(None);
    };
    let end = ["ORDER", "LIMIT", ";"]
        .iter()
        .filter_map(|k| find_keywords(sql, &[k], after).map(|p| p.0))
        .min()
        .unwrap_or(sql.len());
    let clause = sql[after..end].trim();
    // Only `LATEST ON <column> PARTITION BY …` is the clause; `… AS latest ON a = b` is a join.
    let Some((time, parts)) = find_keywords(clause, &["PARTITION", "BY"], 0)
        .map(|(s, e)| (clause[..s].trim(), clause[e..].trim()))
        .filter(|(time, _)| !time.is_empty() && !time.contains(char::is_whitespace))
    else {
        return Ok(None);
    };
    if !time.eq_ignore_ascii_case("time") {
        return Err(bad(format!("the time column is `time`, not {time:?}")));
    }
    if parts.is_empty() {
        return Err(bad("PARTITION BY needs at least one column"));
    }
    let dialect = PostgreSqlDialect {};
    let parse =
        |s: &str| Parser::parse_sql(&dialect, s).map_err(|e| QueryError::Sql(e.to_string()));
    let mut stmts = parse(&sql[..start])?;
    let [Statement::Query(query)] = stmts.as_mut_slice() else {
        return Err(bad("it applies to one SELECT statement"));
    };
    let template = parse(&format!(
        "SELECT DISTINCT ON ({parts}) 1 FROM x ORDER BY {parts}, time DESC"
    ))?;
    let Some(Statement::Query(t)) = template.into_iter().next() else {
        unreachable!("the template is a query");
    };
    let (SetExpr::Select(select), SetExpr::Select(ts)) = (query.body.as_mut(), *t.body) else {
        return Err(bad("it applies to a plain SELECT (not UNION or VALUES)"));
    };
    if select.distinct.is_some() {
        return Err(bad("it cannot be combined with DISTINCT"));
    }
    select.distinct = ts.distinct;
    query.order_by = t.order_by;
    let rest = sql[end..].trim().trim_end_matches(';').trim();
    Ok(Some(if rest.is_empty() {
        query.to_string()
    } else {
        format!("SELECT * FROM ({query}) AS latest {rest}")
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

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
                "select host, v from cpu where region = 'eu' latest on time partition by host, region order by v desc limit 2;",
                "SELECT * FROM (SELECT DISTINCT ON (host, region) host, v FROM cpu WHERE region = 'eu' \
                 ORDER BY host, region, time DESC) AS latest order by v desc limit 2",
            ),
        ] {
            assert_eq!(rewrite(sql).unwrap().as_deref(), Some(want), "{name}");
        }
        assert_eq!(rewrite("SELECT 'LATEST ON' FROM t").unwrap(), None);
        assert_eq!(
            rewrite("SELECT * FROM cpu JOIN hosts AS latest ON cpu.host = latest.host").unwrap(),
            None,
            "a table aliased `latest` is not the clause"
        );
        assert_eq!(
            rewrite("SELECT x FROM \"måling\" WHERE søk = 'é'").unwrap(),
            None
        );
    }

    #[test]
    fn refusals_name_the_problem() {
        for (sql, want) in [
            ("SELECT * FROM t LATEST ON ts PARTITION BY h", "not \"ts\""),
            (
                "SELECT * FROM t LATEST ON time PARTITION BY",
                "at least one",
            ),
            (
                "SELECT DISTINCT h FROM t LATEST ON time PARTITION BY h",
                "DISTINCT",
            ),
        ] {
            let e = rewrite(sql).unwrap_err().to_string();
            assert!(e.contains(want), "{sql}: {e}");
        }
    }
}
