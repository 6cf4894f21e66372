//! The grammar of the model statements (issue 24), read from tokens into typed values:
//!
//! ```sql
//! CREATE MODEL [IF NOT EXISTS] name WITH (key = value, ...) AS <query>
//! DROP MODEL [IF EXISTS] name
//! ALTER MODEL name REFRESH
//! SHOW MODELS
//! DESCRIBE MODEL name
//! ```
//!
//! The training query is kept as its text (the model is retrained from it after a restart
//! and by `REFRESH`); it is read here once to refuse what is not a query.

use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::tokenizer::TokenWithSpan;

use super::Statement;
use super::ddl::{self, Options, ident_name};
use super::tokens::{self, is_word};
use crate::error::{QueryError, Result};

#[derive(Debug, Clone, PartialEq)]
pub enum ModelStatement {
    Create(CreateModel),
    Drop { name: String, if_exists: bool },
    Refresh { name: String },
    Show,
    Describe { name: String },
}

#[derive(Debug, Clone, PartialEq)]
pub struct CreateModel {
    pub name: String,
    pub if_not_exists: bool,
    pub options: Options,
    /// The training query's text.
    pub query: String,
}

fn syntax(e: impl std::fmt::Display) -> QueryError {
    QueryError::Sql(format!("SQL syntax: {e}"))
}

fn name(p: &mut datafusion::sql::sqlparser::parser::Parser) -> Result<String> {
    Ok(ident_name(&p.parse_identifier().map_err(syntax)?))
}

fn expect_word(
    p: &mut datafusion::sql::sqlparser::parser::Parser,
    w: &str,
    usage: &str,
) -> Result<()> {
    if is_word(&p.next_token().token, w) {
        Ok(())
    } else {
        Err(QueryError::Sql(format!("SQL syntax: expected {usage}")))
    }
}

/// `CREATE MODEL ...` from its tokens.
pub fn create(tokens: Vec<TokenWithSpan>) -> Result<ModelStatement> {
    let usage = "CREATE MODEL name WITH (task = '...', ...) AS SELECT ...";
    let mut p = tokens::parser(tokens.clone());
    p.expect_keyword(Keyword::CREATE).map_err(syntax)?;
    expect_word(&mut p, "MODEL", usage)?;
    let if_not_exists = p.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    let name = name(&mut p)?;
    let options = ddl::with_options(&mut p)?;
    if !p.parse_keyword(Keyword::AS) {
        return Err(QueryError::Sql(format!(
            "SQL syntax: expected AS <query>: {usage}"
        )));
    }
    let rest = &tokens[p.index().min(tokens.len())..];
    let query = tokens::text(rest).trim().to_string();
    match super::statement(rest.to_vec()) {
        Ok(Statement::Query(_)) => {}
        Ok(other) => {
            return Err(QueryError::Sql(format!(
                "CREATE MODEL: the training statement must be a query, not {}",
                other.tag()
            )));
        }
        Err(e) => {
            return Err(QueryError::Sql(format!(
                "CREATE MODEL: the training query: {e}"
            )));
        }
    }
    Ok(ModelStatement::Create(CreateModel {
        name,
        if_not_exists,
        options,
        query,
    }))
}

/// `DROP MODEL ...` from its tokens.
pub fn drop(tokens: Vec<TokenWithSpan>) -> Result<ModelStatement> {
    let mut p = tokens::parser(tokens);
    p.expect_keyword(Keyword::DROP).map_err(syntax)?;
    expect_word(&mut p, "MODEL", "DROP MODEL [IF EXISTS] name")?;
    let if_exists = p.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
    let name = name(&mut p)?;
    ddl::end(&p)?;
    Ok(ModelStatement::Drop { name, if_exists })
}

/// `ALTER MODEL name REFRESH` from its tokens.
pub fn alter(tokens: Vec<TokenWithSpan>) -> Result<ModelStatement> {
    let usage = "ALTER MODEL name REFRESH";
    let mut p = tokens::parser(tokens);
    p.expect_keyword(Keyword::ALTER).map_err(syntax)?;
    expect_word(&mut p, "MODEL", usage)?;
    let name = name(&mut p)?;
    expect_word(&mut p, "REFRESH", usage)?;
    ddl::end(&p)?;
    Ok(ModelStatement::Refresh { name })
}

/// `SHOW MODELS` from its tokens.
pub fn show(tokens: Vec<TokenWithSpan>) -> Result<ModelStatement> {
    let mut p = tokens::parser(tokens);
    p.expect_keyword(Keyword::SHOW).map_err(syntax)?;
    expect_word(&mut p, "MODELS", "SHOW MODELS")?;
    ddl::end(&p)?;
    Ok(ModelStatement::Show)
}

/// `DESCRIBE MODEL name` from its tokens.
pub fn describe(tokens: Vec<TokenWithSpan>) -> Result<ModelStatement> {
    let mut p = tokens::parser(tokens);
    p.next_token();
    expect_word(&mut p, "MODEL", "DESCRIBE MODEL name")?;
    let name = name(&mut p)?;
    ddl::end(&p)?;
    Ok(ModelStatement::Describe { name })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(sql: &str) -> Result<Statement> {
        let mut all = super::super::parse(sql)?;
        assert_eq!(all.len(), 1);
        Ok(all.remove(0))
    }

    #[test]
    fn the_issue_statements_read() {
        let s = read(
            "CREATE MODEL cpu_anomaly WITH (task = 'anomaly_detection', algorithm = 'auto')\n  \
             AS SELECT time, host, usage_user FROM cpu WHERE time >= now() - INTERVAL '14 days'",
        )
        .unwrap();
        let Statement::Model(ModelStatement::Create(c)) = s else {
            panic!("{s:?}")
        };
        assert_eq!(c.name, "cpu_anomaly");
        assert_eq!(
            c.options[0],
            ("task".to_string(), "anomaly_detection".to_string())
        );
        assert_eq!(
            c.query,
            "SELECT time, host, usage_user FROM cpu WHERE time >= now() - INTERVAL '14 days'"
        );
        let s = read("CREATE MODEL lf WITH (task = 'forecasting', season = '1d') AS SELECT time, region, avg(load) AS load FROM power SAMPLE BY 30m").unwrap();
        assert!(
            matches!(s, Statement::Model(ModelStatement::Create(c)) if c.query.ends_with("SAMPLE BY 30m"))
        );
        let cases = [
            ("SHOW MODELS", ModelStatement::Show),
            (
                "describe model Cpu_Anomaly",
                ModelStatement::Describe {
                    name: "cpu_anomaly".into(),
                },
            ),
            (
                "DROP MODEL cpu_anomaly",
                ModelStatement::Drop {
                    name: "cpu_anomaly".into(),
                    if_exists: false,
                },
            ),
            (
                "DROP MODEL IF EXISTS m",
                ModelStatement::Drop {
                    name: "m".into(),
                    if_exists: true,
                },
            ),
            (
                "ALTER MODEL cpu_anomaly REFRESH",
                ModelStatement::Refresh {
                    name: "cpu_anomaly".into(),
                },
            ),
        ];
        for (sql, want) in cases {
            assert_eq!(read(sql).unwrap(), Statement::Model(want), "{sql}");
        }
        // A table named `model` is still described as a table.
        assert!(matches!(
            read("DESCRIBE model").unwrap(),
            Statement::Show(_)
        ));
    }

    #[test]
    fn refusals_name_what_is_wrong() {
        for (sql, want) in [
            ("CREATE MODEL m WITH (task = 'forecasting')", "AS <query>"),
            ("CREATE MODEL m AS DELETE FROM cpu", "must be a query"),
            ("CREATE MODEL m AS SELEC 1", "training query"),
            ("ALTER MODEL m RETRAIN", "ALTER MODEL name REFRESH"),
            ("DROP MODEL m extra", "unexpected"),
            ("SHOW MODELS now", "unexpected"),
        ] {
            let e = read(sql).unwrap_err().to_string();
            assert!(e.contains(want), "{sql}: {e}");
        }
    }
}
