//! The grammar of the catalog statements DataFusion does not have:
//!
//! ```sql
//! SHOW DATABASES
//! SHOW TAG VALUES FROM <table> WITH KEY = <tag>
//! DESCRIBE <table>          -- also DESC
//! ```
//!
//! `SHOW TABLES`, `SHOW COLUMNS FROM t` and `information_schema` are DataFusion's own. What
//! each statement returns is planned in [`crate::plan::show`].

use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan};

use super::ddl::{TableName, ident_name, table_name};
use super::tokens::{self, is_word};
use crate::error::{QueryError, Result};

#[derive(Debug, Clone, PartialEq)]
pub enum Show {
    Databases,
    TagValues { table: TableName, key: String },
    Describe(TableName),
}

fn syntax(e: impl std::fmt::Display) -> QueryError {
    QueryError::Sql(format!("SQL syntax: {e}"))
}

/// `SHOW DATABASES` from its tokens.
pub fn databases(tokens: Vec<TokenWithSpan>) -> Result<Show> {
    let mut p = tokens::parser(tokens);
    p.expect_keywords(&[Keyword::SHOW, Keyword::DATABASES])
        .map_err(syntax)?;
    end(&p).map(|()| Show::Databases)
}

/// `SHOW TAG VALUES FROM t WITH KEY = k` from its tokens.
pub fn tag_values(tokens: Vec<TokenWithSpan>) -> Result<Show> {
    let usage = || {
        QueryError::Sql(
            "SHOW TAG VALUES: expected SHOW TAG VALUES FROM <table> WITH KEY = <tag>".into(),
        )
    };
    let mut p = tokens::parser(tokens);
    for w in ["SHOW", "TAG", "VALUES", "FROM"] {
        if !is_word(&p.next_token().token, w) {
            return Err(usage());
        }
    }
    let table = table_name(&p.parse_object_name(false).map_err(|_| usage())?)?;
    if !p.parse_keywords(&[Keyword::WITH, Keyword::KEY]) || !p.consume_token(&Token::Eq) {
        return Err(usage());
    }
    let key = ident_name(&p.parse_identifier().map_err(|_| usage())?);
    end(&p).map(|()| Show::TagValues { table, key })
}

/// `DESCRIBE t` / `DESC t` from its tokens.
pub fn describe(tokens: Vec<TokenWithSpan>) -> Result<Show> {
    let mut p = tokens::parser(tokens);
    p.next_token();
    let table = table_name(&p.parse_object_name(false).map_err(syntax)?)?;
    end(&p).map(|()| Show::Describe(table))
}

fn end(p: &datafusion::sql::sqlparser::parser::Parser) -> Result<()> {
    let t = p.peek_token();
    if tokens::significant(&t.token) {
        return Err(QueryError::Sql(format!(
            "SQL syntax: unexpected {} {}",
            t.token,
            tokens::position(&t)
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(sql: &str) -> Vec<TokenWithSpan> {
        tokens::tokenize(sql).unwrap()
    }

    #[test]
    fn statements() {
        assert_eq!(databases(toks("show databases")).unwrap(), Show::Databases);
        let cases = [
            ("show tag values from cpu with key = host", "cpu", "host"),
            (
                "SHOW TAG VALUES FROM \"Cpu\" WITH KEY=\"Host\"",
                "Cpu",
                "Host",
            ),
        ];
        for (sql, t, k) in cases {
            match tag_values(toks(sql)).unwrap() {
                Show::TagValues { table, key } => {
                    assert_eq!((table.table.as_str(), key.as_str()), (t, k), "{sql}")
                }
                other => panic!("{sql}: {other:?}"),
            }
        }
        assert!(
            matches!(describe(toks("DESC cpu")).unwrap(), Show::Describe(t) if t.table == "cpu")
        );
        for (sql, want) in [
            ("SHOW TAG VALUES FROM cpu", "WITH KEY = <tag>"),
            ("SHOW TAG VALUES FROM cpu WITH KEY =", "WITH KEY = <tag>"),
            ("SHOW TAG VALUES cpu", "WITH KEY = <tag>"),
            ("SHOW DATABASES now", "unexpected"),
        ] {
            let r = if sql.starts_with("SHOW DATABASES") {
                databases(toks(sql))
            } else {
                tag_values(toks(sql))
            };
            let e = r.unwrap_err().to_string();
            assert!(e.contains(want), "{sql}: {e}");
        }
    }
}
