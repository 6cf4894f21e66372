//! The grammar of the token statements (issue 26), read from tokens into typed values:
//!
//! ```sql
//! CREATE TOKEN name WITH (read = 'db1,db2', write = 'db1', admin = true)
//! DROP TOKEN [IF EXISTS] name
//! SHOW TOKENS
//! ```
//!
//! The keys are `read`, `write` (lists of databases, `*` for all) and `admin` (true/false);
//! an unknown key is refused by name. The grant itself is checked by whoever stores it.

use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::TokenWithSpan;

use super::ddl::{self, ident_name};
use super::tokens::{self, is_word};
use crate::error::{QueryError, Result};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenStatement {
    Create(TokenSpec),
    Drop { name: String, if_exists: bool },
    Show,
}

/// A token to make: its name and what it may do.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TokenSpec {
    pub name: String,
    /// Databases it reads (`*`: all).
    pub read: Vec<String>,
    /// Databases it writes (`*`: all).
    pub write: Vec<String>,
    pub admin: bool,
}

fn syntax(usage: &str) -> QueryError {
    QueryError::Sql(format!("SQL syntax: expected {usage}"))
}

fn name(p: &mut datafusion::sql::sqlparser::parser::Parser, usage: &str) -> Result<String> {
    Ok(ident_name(
        &p.parse_identifier().map_err(|_| syntax(usage))?,
    ))
}

/// A list option's databases: `'db1, db2'` split at commas, blanks dropped.
fn databases(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(str::to_string)
        .collect()
}

/// `CREATE TOKEN ...` from its tokens.
pub fn create(tokens: Vec<TokenWithSpan>) -> Result<TokenStatement> {
    let usage = "CREATE TOKEN name WITH (read = 'db1,db2', write = 'db1', admin = false)";
    let mut p = tokens::parser(tokens);
    p.expect_keyword(Keyword::CREATE)
        .map_err(|_| syntax(usage))?;
    if !is_word(&p.next_token().token, "TOKEN") {
        return Err(syntax(usage));
    }
    let mut spec = TokenSpec {
        name: name(&mut p, usage)?,
        ..TokenSpec::default()
    };
    for (k, v) in ddl::with_options(&mut p)? {
        match k.as_str() {
            "read" => spec.read = databases(&v),
            "write" => spec.write = databases(&v),
            "admin" => {
                spec.admin = match v.to_ascii_lowercase().as_str() {
                    "true" | "on" | "yes" => true,
                    "false" | "off" | "no" => false,
                    _ => {
                        return Err(QueryError::InvalidParameter(format!(
                            "CREATE TOKEN: admin = {v:?}: expected true or false"
                        )));
                    }
                }
            }
            other => {
                return Err(QueryError::InvalidParameter(format!(
                    "CREATE TOKEN: unknown option {other:?} (read, write, admin)"
                )));
            }
        }
    }
    ddl::end(&p)?;
    Ok(TokenStatement::Create(spec))
}

/// `DROP TOKEN [IF EXISTS] name` from its tokens.
pub fn drop(tokens: Vec<TokenWithSpan>) -> Result<TokenStatement> {
    let usage = "DROP TOKEN [IF EXISTS] name";
    let mut p = tokens::parser(tokens);
    p.expect_keyword(Keyword::DROP).map_err(|_| syntax(usage))?;
    if !is_word(&p.next_token().token, "TOKEN") {
        return Err(syntax(usage));
    }
    let if_exists = p.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
    let name = name(&mut p, usage)?;
    ddl::end(&p)?;
    Ok(TokenStatement::Drop { name, if_exists })
}

/// `SHOW TOKENS` from its tokens.
pub fn show(tokens: Vec<TokenWithSpan>) -> Result<TokenStatement> {
    let mut p = tokens::parser(tokens);
    p.expect_keyword(Keyword::SHOW)
        .map_err(|_| syntax("SHOW TOKENS"))?;
    p.next_token();
    ddl::end(&p)?;
    Ok(TokenStatement::Show)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::{Statement, parse};

    fn token(sql: &str) -> Result<TokenStatement> {
        match parse(sql)?.pop() {
            Some(Statement::Token(t)) => Ok(t),
            other => panic!("{sql}: {other:?}"),
        }
    }

    #[test]
    fn token_statements_read_into_values() {
        let create = token("CREATE TOKEN grafana WITH (read = 'db1, db2', write = 'db1')");
        assert_eq!(
            create.unwrap(),
            TokenStatement::Create(TokenSpec {
                name: "grafana".into(),
                read: vec!["db1".into(), "db2".into()],
                write: vec!["db1".into()],
                admin: false,
            })
        );
        let admin = token("create token \"Ops\" with (admin = true)").unwrap();
        assert!(matches!(admin, TokenStatement::Create(s) if s.admin && s.name == "Ops"));
        assert_eq!(
            token("DROP TOKEN IF EXISTS grafana").unwrap(),
            TokenStatement::Drop {
                name: "grafana".into(),
                if_exists: true
            }
        );
        assert_eq!(token("SHOW TOKENS").unwrap(), TokenStatement::Show);
        for (sql, want) in [
            (
                "CREATE TOKEN t WITH (admin = maybe)",
                "expected true or false",
            ),
            (
                "CREATE TOKEN t WITH (owner = 'x')",
                "unknown option \"owner\"",
            ),
            ("CREATE TOKEN", "CREATE TOKEN name"),
            ("DROP TOKEN a b", "unexpected"),
            ("SHOW TOKENS now", "unexpected"),
        ] {
            let e = token(sql).unwrap_err().to_string();
            assert!(e.contains(want), "{sql}: {e}");
        }
    }
}
