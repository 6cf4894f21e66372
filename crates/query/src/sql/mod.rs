//! Tempora's SQL grammar: one text, tokenized once, read into typed [`Statement`]s.
//!
//! Every protocol (HTTP, the PostgreSQL simple and extended protocols) hands its text to
//! [`parse`]. It tokenizes the text with sqlparser's PostgreSQL tokenizer, splits it into
//! statements, and reads each one:
//!
//! - Tempora's own statements (`SHOW DATABASES`, `SHOW TAG VALUES`, `DESCRIBE`, `CREATE |
//!   DROP DATABASE`, `CREATE | DROP TABLE`) by the small grammars of [`show`] and [`ddl`],
//!   built on sqlparser's parser primitives.
//! - Tempora's clauses of a query (`SAMPLE BY … FILL … ALIGN TO`, `LATEST ON … PARTITION BY`)
//!   are cut out of the token stream by [`sample_by`] and [`latest_on`] and read into typed
//!   values; the remaining tokens are the plain query, read by DataFusion's parser.
//! - Everything else by DataFusion's parser (`DFParser`), then sorted by what it is.
//!
//! No statement is turned back into text and parsed again: the planner ([`crate::plan`])
//! works from these values. Adding a statement: see `docs/sql.md`, "Adding a statement".
//!
//! Statements that read PostgreSQL's catalog (`pg_catalog.…`, as psql's `\d`, JDBC's and
//! Grafana's metadata queries do) are read by datafusion-postgres's compatibility parser
//! instead, which knows how to make those clients' texts plannable.

pub mod access;
pub mod ddl;
pub mod latest_on;
pub mod model;
pub mod normalize;
pub mod pg_compat;
pub mod sample_by;
pub mod scope;
pub mod set;
pub mod show;
pub mod tokens;

use std::sync::OnceLock;

use datafusion::sql::parser::{DFParserBuilder, Statement as DfStatement};
use datafusion::sql::sqlparser::ast;
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan};
use datafusion_pg_catalog::sql::PostgresCompatibilityParser;

use crate::error::{QueryError, Result};
pub use access::{TokenSpec, TokenStatement};
pub use ddl::{
    AlterSettings, AlterTarget, CreateDatabase, CreateTable, DropDatabase, DropTable, TableName,
};
pub use latest_on::LatestOn;
pub use model::{CreateModel, ModelStatement};
pub use sample_by::SampleBy;
pub use set::SetVariable;
pub use show::Show;

/// One statement, typed.
#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    /// A query, with Tempora's clauses read apart.
    Query(Box<QueryStatement>),
    /// `EXPLAIN [ANALYZE] [VERBOSE] <statement>`.
    Explain(Box<Explain>),
    /// `INSERT …` (sqlparser's statement).
    Insert(Box<ast::Statement>),
    /// `DELETE FROM …` (sqlparser's statement).
    Delete(Box<ast::Statement>),
    /// `UPDATE t SET … WHERE …` (sqlparser's statement): rows rewritten (issue 25).
    Update(Box<ast::Statement>),
    Show(Show),
    CreateDatabase(CreateDatabase),
    DropDatabase(DropDatabase),
    CreateTable(CreateTable),
    DropTable(DropTable),
    /// `ALTER DATABASE|TABLE name SET (...)`: retention and partition width.
    Alter(AlterSettings),
    /// `CREATE | DROP | ALTER MODEL`, `SHOW MODELS`, `DESCRIBE MODEL` (issue 24).
    Model(ModelStatement),
    /// `CREATE | DROP TOKEN`, `SHOW TOKENS` (issue 26).
    Token(TokenStatement),
    /// `SET` / `RESET` of a setting Tempora keeps per session.
    Set(SetVariable),
    /// A PostgreSQL session statement (`BEGIN`, `COMMIT`, `SET DateStyle`, `SHOW x`, cursors):
    /// the PostgreSQL protocol answers it; over HTTP it is refused.
    Session(Box<ast::Statement>),
    /// A statement DataFusion plans as it is (`SHOW TABLES`, `SHOW COLUMNS`, catalog queries).
    Plan(Box<DfStatement>),
    /// A PromQL query with its steps (the Prometheus HTTP API builds it: [`crate::promql`]).
    PromQl(Box<crate::promql::PromQuery>),
}

/// A query and the Tempora clauses that were cut out of it.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryStatement {
    pub query: Box<ast::Query>,
    pub sample_by: Option<SampleBy>,
    pub latest_on: Option<LatestOn>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Explain {
    pub analyze: bool,
    pub verbose: bool,
    pub statement: Statement,
}

impl Statement {
    /// A short name for messages and PostgreSQL command tags (`SELECT`, `CREATE DATABASE` …).
    pub fn tag(&self) -> &'static str {
        match self {
            Statement::Query(_)
            | Statement::Plan(_)
            | Statement::PromQl(_)
            | Statement::Explain(_)
            | Statement::Show(_) => "SELECT",
            Statement::Insert(_) => "INSERT",
            Statement::Delete(_) => "DELETE",
            Statement::Update(_) => "UPDATE",
            Statement::CreateDatabase(_) => "CREATE DATABASE",
            Statement::DropDatabase(_) => "DROP DATABASE",
            Statement::CreateTable(_) => "CREATE TABLE",
            Statement::DropTable(_) => "DROP TABLE",
            Statement::Alter(a) => match a.target {
                AlterTarget::Database(_) => "ALTER DATABASE",
                AlterTarget::Table(_) => "ALTER TABLE",
            },
            Statement::Model(m) => match m {
                ModelStatement::Create(_) => "CREATE MODEL",
                ModelStatement::Drop { .. } => "DROP MODEL",
                ModelStatement::Refresh { .. } => "ALTER MODEL",
                ModelStatement::Show | ModelStatement::Describe { .. } => "SELECT",
            },
            Statement::Token(t) => match t {
                TokenStatement::Create(_) => "CREATE TOKEN",
                TokenStatement::Drop { .. } => "DROP TOKEN",
                TokenStatement::Show => "SELECT",
            },
            Statement::Set(_) => "SET",
            Statement::Session(_) => "SESSION",
        }
    }
}

/// Reads every statement of `sql`.
pub fn parse(sql: &str) -> Result<Vec<Statement>> {
    tokens::split_statements(tokens::tokenize(sql)?)
        .into_iter()
        .map(statement)
        .collect()
}

/// Reads one statement from its tokens.
pub fn statement(tokens: Vec<TokenWithSpan>) -> Result<Statement> {
    let words = tokens::leading_words(&tokens, 3);
    let w: Vec<&str> = words.iter().map(String::as_str).collect();
    match w.as_slice() {
        ["EXPLAIN", ..] => explain(tokens),
        ["SHOW", "DATABASES", ..] => show::databases(tokens).map(Statement::Show),
        ["SHOW", "TAG", "VALUES"] => show::tag_values(tokens).map(Statement::Show),
        ["DESCRIBE" | "DESC", "MODEL", _] => model::describe(tokens).map(Statement::Model),
        ["DESCRIBE" | "DESC", ..] => show::describe(tokens).map(Statement::Show),
        ["SHOW", "MODELS", ..] => model::show(tokens).map(Statement::Model),
        ["CREATE", "MODEL", ..] => model::create(tokens).map(Statement::Model),
        ["DROP", "MODEL", ..] => model::drop(tokens).map(Statement::Model),
        ["ALTER", "MODEL", ..] => model::alter(tokens).map(Statement::Model),
        ["CREATE", "TOKEN", ..] => access::create(tokens).map(Statement::Token),
        ["DROP", "TOKEN", ..] => access::drop(tokens).map(Statement::Token),
        ["SHOW", "TOKENS", ..] => access::show(tokens).map(Statement::Token),
        ["CREATE", "DATABASE", ..] => ddl::create_database(tokens).map(Statement::CreateDatabase),
        ["DROP", "DATABASE", ..] => ddl::drop_database(tokens).map(Statement::DropDatabase),
        ["CREATE", "TABLE", ..] => ddl::create_table(tokens).map(Statement::CreateTable),
        ["DROP", "TABLE", ..] => ddl::drop_table(tokens).map(Statement::DropTable),
        ["ALTER", "DATABASE" | "TABLE", ..] => ddl::alter(tokens).map(Statement::Alter),
        _ if reads_pg_catalog(&tokens) && !has_clause(&tokens) => pg_compatible(&tokens),
        _ => query_or_other(tokens),
    }
}

/// `EXPLAIN [ANALYZE] [VERBOSE] <statement>`.
fn explain(tokens: Vec<TokenWithSpan>) -> Result<Statement> {
    let sig = tokens::scan(&tokens);
    let (mut analyze, mut verbose) = (false, false);
    let mut k = 1;
    while let Some(&(i, _)) = sig.get(k) {
        let t = &tokens[i].token;
        if tokens::is_word(t, "ANALYZE") && !analyze && !verbose {
            analyze = true;
        } else if tokens::is_word(t, "VERBOSE") && !verbose {
            verbose = true;
        } else {
            break;
        }
        k += 1;
    }
    let Some(&(start, _)) = sig.get(k) else {
        return Err(QueryError::Sql("EXPLAIN: which statement?".into()));
    };
    let statement = statement(tokens[start..].to_vec())?;
    if matches!(statement, Statement::Explain(_)) {
        return Err(QueryError::Sql("EXPLAIN of an EXPLAIN".into()));
    }
    Ok(Statement::Explain(Box::new(Explain {
        analyze,
        verbose,
        statement,
    })))
}

/// Whether a statement names a relation of PostgreSQL's catalog.
fn reads_pg_catalog(tokens: &[TokenWithSpan]) -> bool {
    tokens.iter().any(|t| {
        matches!(&t.token, Token::Word(w)
            if w.value.len() > 3
                && w.value.get(..3).is_some_and(|p| p.eq_ignore_ascii_case("pg_")))
    })
}

/// Whether a statement has a `SAMPLE BY` or `LATEST ON` clause anywhere.
fn has_clause(tokens: &[TokenWithSpan]) -> bool {
    tokens::find_words(tokens, &["SAMPLE", "BY"]).is_some()
        || tokens::find_words(tokens, &["LATEST", "ON"]).is_some()
}

/// A catalog query of a PostgreSQL client, through datafusion-postgres's compatibility
/// parser (it replaces whole client queries DataFusion cannot plan, and rewrites the rest).
fn pg_compatible(tokens: &[TokenWithSpan]) -> Result<Statement> {
    static PARSER: OnceLock<PostgresCompatibilityParser> = OnceLock::new();
    let parser = PARSER.get_or_init(PostgresCompatibilityParser::new);
    let mut stmts = parser
        .parse(&tokens::text(tokens))
        .map_err(|e| QueryError::Sql(format!("SQL syntax: {e}")))?;
    match (stmts.pop(), stmts.is_empty()) {
        (Some(s), true) => classify(DfStatement::Statement(Box::new(s)), None, None),
        _ => Err(QueryError::Sql("expected one statement".into())),
    }
}

/// A statement DataFusion's parser reads, with any `SAMPLE BY` or `LATEST ON` cut out first.
fn query_or_other(mut tokens: Vec<TokenWithSpan>) -> Result<Statement> {
    let sample_by = cut_sample_by(&mut tokens)?;
    let latest_on = cut_latest_on(&mut tokens)?;
    if sample_by.is_some() && latest_on.is_some() {
        return Err(QueryError::Sql(
            "SAMPLE BY and LATEST ON cannot be combined in one SELECT".into(),
        ));
    }
    let mut p = DFParserBuilder::new(tokens)
        .with_dialect(&tokens::DIALECT)
        .with_recursion_limit(tokens::RECURSION_LIMIT)
        .build()?;
    let stmt = p.parse_statement()?;
    let rest = p.parser.peek_token();
    if tokens::significant(&rest.token) {
        return Err(QueryError::Sql(format!(
            "SQL syntax: unexpected {} {}",
            rest.token,
            tokens::position(&rest)
        )));
    }
    classify(stmt, sample_by, latest_on)
}

/// Cuts `SAMPLE BY <clause>` out of a statement's tokens.
fn cut_sample_by(tokens: &mut Vec<TokenWithSpan>) -> Result<Option<SampleBy>> {
    let Some((start, after, depth)) = tokens::find_words(tokens, &["SAMPLE", "BY"]) else {
        return Ok(None);
    };
    if depth > 0 {
        return Err(sample_by::bad(
            "it belongs to the outermost SELECT; a subquery cannot use it (move SAMPLE BY out, \
             or write the subquery with date_bin and GROUP BY)",
        ));
    }
    let end = tokens::clause_end(tokens, after, &["ORDER", "LIMIT", "LATEST"]);
    let clause: Vec<TokenWithSpan> = tokens.drain(start..end).skip(after - start).collect();
    sample_by::parse(clause).map(Some)
}

/// Cuts `LATEST ON <clause>` out of a statement's tokens.
fn cut_latest_on(tokens: &mut Vec<TokenWithSpan>) -> Result<Option<LatestOn>> {
    let Some((start, after, depth)) = tokens::find_words(tokens, &["LATEST", "ON"]) else {
        return Ok(None);
    };
    if !latest_on::is_clause(tokens, after) {
        return Ok(None);
    }
    if depth > 0 {
        return Err(QueryError::Sql(
            "LATEST ON: it belongs to the outermost SELECT; a subquery cannot use it".into(),
        ));
    }
    let before = &tokens[..start];
    if tokens::find_words(before, &["ORDER", "BY"]).is_some_and(|f| f.2 == 0)
        || tokens::find_words(before, &["LIMIT"]).is_some_and(|f| f.2 == 0)
    {
        return Err(QueryError::Sql(
            "LATEST ON: the clause comes before ORDER BY and LIMIT".into(),
        ));
    }
    let end = tokens::clause_end(tokens, after, &["ORDER", "LIMIT"]);
    let clause: Vec<TokenWithSpan> = tokens.drain(start..end).skip(after - start).collect();
    latest_on::parse(clause).map(Some)
}

/// Sorts a statement DataFusion's parser read by what Tempora does with it.
fn classify(
    stmt: DfStatement,
    sample_by: Option<SampleBy>,
    latest_on: Option<LatestOn>,
) -> Result<Statement> {
    let clauses = sample_by.is_some() || latest_on.is_some();
    let s = match stmt {
        DfStatement::Statement(s) => s,
        DfStatement::Reset(r) => return set::reset(r),
        DfStatement::Explain(_) => unreachable!("EXPLAIN is read before DataFusion's parser"),
        DfStatement::CreateExternalTable(_) => return Err(unsupported("CREATE EXTERNAL TABLE")),
        DfStatement::CopyTo(_) => return Err(unsupported("COPY")),
    };
    if clauses && !matches!(*s, ast::Statement::Query(_)) {
        return Err(QueryError::Sql(
            "SAMPLE BY and LATEST ON belong to a SELECT".into(),
        ));
    }
    use ast::Statement as S;
    Ok(match *s {
        S::Query(mut query) => {
            pg_compat::rewrite(&mut query);
            Statement::Query(Box::new(QueryStatement {
                query,
                sample_by,
                latest_on,
            }))
        }
        S::Insert(_) => Statement::Insert(s),
        S::Delete(_) => Statement::Delete(s),
        S::Update { .. } => Statement::Update(s),
        S::Set(set) => set::classify(set)?,
        S::StartTransaction { .. }
        | S::Commit { .. }
        | S::Rollback { .. }
        | S::ShowVariable { .. }
        | S::Declare { .. }
        | S::Fetch { .. }
        | S::Close { .. }
        | S::Discard { .. }
        | S::Deallocate { .. } => Statement::Session(s),
        S::ShowTables { .. } | S::ShowColumns { .. } | S::ShowFunctions { .. } => {
            Statement::Plan(Box::new(DfStatement::Statement(s)))
        }
        other => return Err(unsupported(&statement_name(&other))),
    })
}

/// The leading words of a statement, as a name for messages (`CREATE VIEW`, `UPDATE`).
fn statement_name(s: &ast::Statement) -> String {
    let text = s.to_string();
    let words: Vec<&str> = text.split_whitespace().take(2).collect();
    match words.as_slice() {
        [a, b] if ["CREATE", "ALTER", "DROP"].contains(&a.to_ascii_uppercase().as_str()) => {
            format!("{} {}", a.to_ascii_uppercase(), b.to_ascii_uppercase())
        }
        [a, ..] => a.to_ascii_uppercase(),
        [] => "this statement".into(),
    }
}

/// The error for a statement Tempora does not run (HTTP 400 / SQLSTATE 0A000).
pub fn unsupported(what: &str) -> QueryError {
    QueryError::Unsupported(format!(
        "{what} is not supported by Tempora (see docs/sql.md for the statements it runs)"
    ))
}

#[cfg(test)]
mod tests;
