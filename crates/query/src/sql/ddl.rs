//! The grammar of Tempora's data definition statements, read from tokens into typed values:
//!
//! ```sql
//! CREATE DATABASE [IF NOT EXISTS] name [WITH (key = value, ...)]
//! DROP DATABASE [IF EXISTS] name
//! CREATE TABLE [IF NOT EXISTS] name (
//!     [time TIMESTAMP,]            -- the time column: named `time`, declared or implied
//!     host TAG,                    -- a tag (also: `host TEXT TAG`, or listed in PRIMARY KEY)
//!     usage DOUBLE, n BIGINT, u BIGINT UNSIGNED, ok BOOLEAN, note TEXT,   -- fields
//!     [PRIMARY KEY (host, ...)]    -- the tags
//! ) [WITH (key = value, ...)]
//! DROP TABLE [IF EXISTS] name [, ...]
//! ALTER DATABASE name SET (key = value, ...)
//! ALTER TABLE name SET (key = value, ...)
//! ```
//!
//! `WITH` options are read as (key, value) text pairs; which keys a statement takes is the
//! planner's decision ([`crate::plan::ddl`]). Every refusal names the column, type or word.

use datafusion::sql::sqlparser::ast::{DataType, ObjectName, ObjectNamePart};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan};
use tempora_model::{ColumnKind, FieldType, TIME_COLUMN};

use super::tokens::{self, is_word};
use crate::error::{QueryError, Result};

/// `WITH (key = value, ...)`: keys lower-cased, values as written (strings unquoted).
pub type Options = Vec<(String, String)>;

#[derive(Debug, Clone, PartialEq)]
pub struct CreateDatabase {
    pub name: String,
    pub if_not_exists: bool,
    pub options: Options,
}

#[derive(Debug, Clone, PartialEq)]
pub struct DropDatabase {
    pub name: String,
    pub if_exists: bool,
}

/// A table name as written: `[db.][public.]table`.
#[derive(Debug, Clone, PartialEq)]
pub struct TableName {
    pub database: Option<String>,
    pub table: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct CreateTable {
    pub name: TableName,
    pub if_not_exists: bool,
    /// Tags and fields in declared order (the time column is not listed).
    pub columns: Vec<(String, ColumnKind)>,
    /// Declared lengths of text fields (`VARCHAR(32)`): what a dense table's slot holds.
    pub lengths: Vec<(String, usize)>,
    pub options: Options,
}

/// `ALTER DATABASE|TABLE name SET (key = value, ...)`.
#[derive(Debug, Clone, PartialEq)]
pub struct AlterSettings {
    pub target: AlterTarget,
    pub options: Options,
}

#[derive(Debug, Clone, PartialEq)]
pub enum AlterTarget {
    Database(String),
    Table(TableName),
}

#[derive(Debug, Clone, PartialEq)]
pub struct DropTable {
    pub names: Vec<TableName>,
    pub if_exists: bool,
}

fn syntax(e: impl std::fmt::Display) -> QueryError {
    QueryError::Sql(format!("SQL syntax: {e}"))
}

/// `CREATE DATABASE ...` from its tokens (all of them).
pub fn create_database(tokens: Vec<TokenWithSpan>) -> Result<CreateDatabase> {
    let mut p = tokens::parser(tokens);
    p.expect_keywords(&[Keyword::CREATE, Keyword::DATABASE])
        .map_err(syntax)?;
    let if_not_exists = p.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    let name = database_name(&mut p)?;
    let options = with_options(&mut p)?;
    end(&p)?;
    Ok(CreateDatabase {
        name,
        if_not_exists,
        options,
    })
}

/// `DROP DATABASE ...` from its tokens.
pub fn drop_database(tokens: Vec<TokenWithSpan>) -> Result<DropDatabase> {
    let mut p = tokens::parser(tokens);
    p.expect_keywords(&[Keyword::DROP, Keyword::DATABASE])
        .map_err(syntax)?;
    let if_exists = p.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
    let name = database_name(&mut p)?;
    if p.parse_one_of_keywords(&[Keyword::CASCADE, Keyword::RESTRICT])
        .is_some()
    {
        // A database always drops with its tables; the words change nothing.
    }
    end(&p)?;
    Ok(DropDatabase { name, if_exists })
}

/// `CREATE TABLE ...` from its tokens.
pub fn create_table(tokens: Vec<TokenWithSpan>) -> Result<CreateTable> {
    let mut p = tokens::parser(tokens);
    p.expect_keywords(&[Keyword::CREATE, Keyword::TABLE])
        .map_err(syntax)?;
    let if_not_exists = p.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    let name = table_name(&p.parse_object_name(false).map_err(syntax)?)?;
    p.expect_token(&Token::LParen).map_err(syntax)?;
    let mut columns: Vec<(String, ColumnKind)> = Vec::new();
    let mut primary_key: Vec<String> = Vec::new();
    let mut lengths: Vec<(String, usize)> = Vec::new();
    loop {
        if p.parse_keywords(&[Keyword::PRIMARY, Keyword::KEY]) {
            p.expect_token(&Token::LParen).map_err(syntax)?;
            let cols = p
                .parse_comma_separated(|p| p.parse_identifier())
                .map_err(syntax)?;
            p.expect_token(&Token::RParen).map_err(syntax)?;
            primary_key.extend(cols.iter().map(ident_name));
        } else if let Some((c, len)) = column(&mut p)? {
            if let Some(len) = len {
                lengths.push((c.0.clone(), len));
            }
            if columns.iter().any(|(n, _)| *n == c.0) {
                return Err(QueryError::Sql(format!(
                    "CREATE TABLE: column {:?} is declared twice",
                    c.0
                )));
            }
            columns.push(c);
        }
        if !p.consume_token(&Token::Comma) {
            break;
        }
    }
    p.expect_token(&Token::RParen).map_err(syntax)?;
    for k in &primary_key {
        match columns.iter_mut().find(|(n, _)| n == k) {
            Some((_, kind @ ColumnKind::Field(FieldType::Str))) => *kind = ColumnKind::Tag,
            Some((_, ColumnKind::Tag)) => {}
            Some((n, ColumnKind::Field(t))) => {
                return Err(QueryError::Sql(format!(
                    "CREATE TABLE: PRIMARY KEY column {n:?} is {t:?}; the key (the tags) holds \
                     text columns only"
                )));
            }
            None if k == TIME_COLUMN => {}
            None => {
                return Err(QueryError::Sql(format!(
                    "CREATE TABLE: PRIMARY KEY names {k:?}, which is not a column"
                )));
            }
        }
    }
    let options = with_options(&mut p)?;
    end(&p)?;
    Ok(CreateTable {
        name,
        if_not_exists,
        columns,
        lengths,
        options,
    })
}

/// `DROP TABLE ...` from its tokens.
pub fn drop_table(tokens: Vec<TokenWithSpan>) -> Result<DropTable> {
    let mut p = tokens::parser(tokens);
    p.expect_keywords(&[Keyword::DROP, Keyword::TABLE])
        .map_err(syntax)?;
    let if_exists = p.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
    let names = p
        .parse_comma_separated(|p| p.parse_object_name(false))
        .map_err(syntax)?
        .iter()
        .map(table_name)
        .collect::<Result<_>>()?;
    let _ = p.parse_one_of_keywords(&[Keyword::CASCADE, Keyword::RESTRICT]);
    end(&p)?;
    Ok(DropTable { names, if_exists })
}

/// One column definition and its declared length (`VARCHAR(32)`); `None` for the time
/// column (implied anyway).
type Column = ((String, ColumnKind), Option<usize>);

fn column(p: &mut Parser) -> Result<Option<Column>> {
    let name = ident_name(&p.parse_identifier().map_err(syntax)?);
    let ty = p.parse_data_type().map_err(syntax)?;
    let len = declared_length(&ty);
    let mut tag = is_tag_type(&ty);
    loop {
        if p.parse_keywords(&[Keyword::PRIMARY, Keyword::KEY]) {
            tag = true;
        } else if is_word(&p.peek_token().token, "TAG") {
            p.next_token();
            tag = true;
        } else if p.parse_keywords(&[Keyword::NOT, Keyword::NULL]) {
            if name != TIME_COLUMN {
                return Err(QueryError::Sql(format!(
                    "CREATE TABLE: column {name:?} NOT NULL is not supported: a point may omit \
                     any tag or field"
                )));
            }
        } else if !p.parse_keyword(Keyword::NULL) {
            break;
        }
    }
    let kind = column_kind(&name, &ty, tag)?;
    Ok(kind.map(|k| ((name, k), len)))
}

/// The length in a type written as `VARCHAR(32)` or `CHAR(8)`.
fn declared_length(ty: &DataType) -> Option<usize> {
    let t = ty.to_string();
    let (_, rest) = t.split_once('(')?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

fn is_tag_type(ty: &DataType) -> bool {
    matches!(ty, DataType::Custom(n, args) if args.is_empty() && n.to_string().eq_ignore_ascii_case("tag"))
}

/// What a declared column is; `None` for `time`.
fn column_kind(name: &str, ty: &DataType, tag: bool) -> Result<Option<ColumnKind>> {
    let t = ty.to_string().to_ascii_uppercase();
    let word = t
        .split(|c: char| !c.is_ascii_alphanumeric())
        .next()
        .unwrap_or("");
    let timestamp = word.starts_with("TIMESTAMP") || word == "DATETIME";
    if name == TIME_COLUMN {
        return if timestamp && !tag {
            Ok(None)
        } else {
            Err(QueryError::Sql(format!(
                "CREATE TABLE: `time` is the time column and must be a TIMESTAMP, not {ty}"
            )))
        };
    }
    if timestamp {
        return Err(QueryError::Sql(format!(
            "CREATE TABLE: column {name:?} is a {ty}; a table has one time column, named `time`"
        )));
    }
    tempora_model::validate_name(name)
        .map_err(|e| QueryError::Sql(format!("CREATE TABLE: {e}")))?;
    let unsigned = t.contains("UNSIGNED") || word.starts_with("UINT") || word == "UBIGINT";
    let field = match word {
        _ if is_tag_type(ty) => FieldType::Str,
        _ if unsigned => FieldType::U64,
        "DOUBLE" | "FLOAT" | "FLOAT4" | "FLOAT8" | "FLOAT32" | "FLOAT64" | "REAL" | "NUMERIC"
        | "DECIMAL" => FieldType::F64,
        "BIGINT" | "INT" | "INTEGER" | "SMALLINT" | "TINYINT" | "INT2" | "INT4" | "INT8"
        | "INT16" | "INT32" | "INT64" => FieldType::I64,
        "BOOL" | "BOOLEAN" => FieldType::Bool,
        "TEXT" | "VARCHAR" | "CHAR" | "CHARACTER" | "STRING" => FieldType::Str,
        _ => {
            return Err(QueryError::Sql(format!(
                "CREATE TABLE: column {name:?} has type {ty}, which Tempora does not store; use \
                 TAG, TEXT, DOUBLE, BIGINT, BIGINT UNSIGNED or BOOLEAN"
            )));
        }
    };
    if tag && field != FieldType::Str {
        return Err(QueryError::Sql(format!(
            "CREATE TABLE: tag {name:?} must be text, not {ty}"
        )));
    }
    Ok(Some(if tag {
        ColumnKind::Tag
    } else {
        ColumnKind::Field(field)
    }))
}

/// A database name: one identifier.
fn database_name(p: &mut Parser) -> Result<String> {
    let name = p.parse_object_name(false).map_err(syntax)?;
    match name.0.as_slice() {
        [ObjectNamePart::Identifier(i)] => Ok(ident_name(i)),
        _ => Err(QueryError::Sql(format!(
            "a database name is one identifier, not {name}"
        ))),
    }
}

/// `[db.][public.]table` as written.
pub fn table_name(name: &ObjectName) -> Result<TableName> {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| match p {
            ObjectNamePart::Identifier(i) => Ok(ident_name(i)),
            other => Err(QueryError::Sql(format!("unexpected name part {other}"))),
        })
        .collect::<Result<_>>()?;
    let schema_ok = |s: &str| s == crate::SCHEMA;
    match parts.as_slice() {
        [t] => Ok(TableName {
            database: None,
            table: t.clone(),
        }),
        [s, t] if schema_ok(s) => Ok(TableName {
            database: None,
            table: t.clone(),
        }),
        [d, s, t] if schema_ok(s) => Ok(TableName {
            database: Some(d.clone()),
            table: t.clone(),
        }),
        _ => Err(QueryError::Sql(format!(
            "table name {name}: use table, public.table or database.public.table"
        ))),
    }
}

/// An identifier as SQL resolves it: lower-cased unless quoted.
pub fn ident_name(i: &datafusion::sql::sqlparser::ast::Ident) -> String {
    match i.quote_style {
        Some(_) => i.value.clone(),
        None => i.value.to_lowercase(),
    }
}

/// `WITH (key = value, ...)`, or nothing.
pub(crate) fn with_options(p: &mut Parser) -> Result<Options> {
    if !p.parse_keyword(Keyword::WITH) {
        return Ok(Vec::new());
    }
    option_list(p)
}

/// `ALTER DATABASE name SET (...)` or `ALTER TABLE name SET (...)` from its tokens.
pub fn alter(tokens: Vec<TokenWithSpan>) -> Result<AlterSettings> {
    let mut p = tokens::parser(tokens);
    p.expect_keyword(Keyword::ALTER).map_err(syntax)?;
    let target = if p.parse_keyword(Keyword::DATABASE) {
        AlterTarget::Database(database_name(&mut p)?)
    } else {
        p.expect_keyword(Keyword::TABLE).map_err(syntax)?;
        AlterTarget::Table(table_name(&p.parse_object_name(false).map_err(syntax)?)?)
    };
    p.expect_keyword(Keyword::SET).map_err(|_| {
        QueryError::Unsupported(
            "ALTER takes SET (ttl = '...', partition = '...') only; columns are added by \
             writing them"
                .into(),
        )
    })?;
    let options = option_list(&mut p)?;
    end(&p)?;
    Ok(AlterSettings { target, options })
}

/// `(key = value, ...)`.
fn option_list(p: &mut Parser) -> Result<Options> {
    p.expect_token(&Token::LParen).map_err(syntax)?;
    let mut out: Options = Vec::new();
    loop {
        let key = ident_name(&p.parse_identifier().map_err(syntax)?);
        p.expect_token(&Token::Eq).map_err(syntax)?;
        let t = p.next_token();
        let value = match &t.token {
            Token::SingleQuotedString(s) => s.clone(),
            Token::Number(n, _) => n.clone(),
            Token::Word(w) => w.value.clone(),
            other => {
                return Err(QueryError::Sql(format!(
                    "option {key}: expected a value, found {other} {}",
                    tokens::position(&t)
                )));
            }
        };
        if out.iter().any(|(k, _)| *k == key) {
            return Err(QueryError::Sql(format!("option {key} is given twice")));
        }
        out.push((key, value));
        if !p.consume_token(&Token::Comma) {
            break;
        }
    }
    p.expect_token(&Token::RParen).map_err(syntax)?;
    Ok(out)
}

/// Refuses anything after the statement.
pub(crate) fn end(p: &Parser) -> Result<()> {
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
    fn create_table_reads_tags_fields_and_options() {
        let t = create_table(toks(
            "CREATE TABLE IF NOT EXISTS db.public.cpu (time TIMESTAMP, host TAG, dc TEXT TAG, \
             region TEXT, usage DOUBLE PRECISION, n BIGINT, u BIGINT UNSIGNED, ok BOOLEAN, \
             note VARCHAR(20), PRIMARY KEY (region)) WITH (partition = '1d')",
        ))
        .unwrap();
        assert_eq!(t.name.database.as_deref(), Some("db"));
        assert_eq!(t.name.table, "cpu");
        assert!(t.if_not_exists);
        let kinds: Vec<(&str, ColumnKind)> =
            t.columns.iter().map(|(n, k)| (n.as_str(), *k)).collect();
        assert_eq!(
            kinds,
            [
                ("host", ColumnKind::Tag),
                ("dc", ColumnKind::Tag),
                ("region", ColumnKind::Tag),
                ("usage", ColumnKind::Field(FieldType::F64)),
                ("n", ColumnKind::Field(FieldType::I64)),
                ("u", ColumnKind::Field(FieldType::U64)),
                ("ok", ColumnKind::Field(FieldType::Bool)),
                ("note", ColumnKind::Field(FieldType::Str)),
            ]
        );
        assert_eq!(t.options, [("partition".to_string(), "1d".to_string())]);
    }

    #[test]
    fn create_table_refusals_name_the_column() {
        for (sql, want) in [
            ("CREATE TABLE t (time BIGINT)", "must be a TIMESTAMP"),
            ("CREATE TABLE t (ts TIMESTAMP)", "one time column"),
            ("CREATE TABLE t (v JSON)", "type JSON"),
            ("CREATE TABLE t (host BIGINT TAG)", "must be text"),
            (
                "CREATE TABLE t (v DOUBLE, PRIMARY KEY (v))",
                "text columns only",
            ),
            ("CREATE TABLE t (v DOUBLE, PRIMARY KEY (w))", "not a column"),
            ("CREATE TABLE t (v DOUBLE, v BIGINT)", "declared twice"),
            ("CREATE TABLE t (__v DOUBLE)", "reserved"),
            ("CREATE TABLE a.b.c.d (v DOUBLE)", "table name"),
            ("CREATE TABLE t (v DOUBLE) extra", "unexpected"),
        ] {
            let e = create_table(toks(sql)).unwrap_err().to_string();
            assert!(e.contains(want), "{sql}: {e}");
        }
    }

    #[test]
    fn databases_and_drops() {
        let c = create_database(toks(
            "create database if not exists \"Mixed\" with (ttl = '30d')",
        ))
        .unwrap();
        assert_eq!(
            c,
            CreateDatabase {
                name: "Mixed".into(),
                if_not_exists: true,
                options: vec![("ttl".into(), "30d".into())],
            }
        );
        let d = drop_database(toks("DROP DATABASE IF EXISTS x")).unwrap();
        assert_eq!(
            d,
            DropDatabase {
                name: "x".into(),
                if_exists: true
            }
        );
        let t = drop_table(toks("DROP TABLE a, public.b")).unwrap();
        assert_eq!(t.names.len(), 2);
        assert!(!t.if_exists);
        let e = create_database(toks("CREATE DATABASE a.b")).unwrap_err();
        assert!(e.to_string().contains("one identifier"), "{e}");
        let e =
            create_database(toks("CREATE DATABASE d WITH (ttl = '1d', ttl = '2d')")).unwrap_err();
        assert!(e.to_string().contains("twice"), "{e}");
    }
}
