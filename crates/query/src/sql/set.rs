//! `SET` and `RESET` of the settings Tempora keeps per session:
//!
//! | setting | value | what it does |
//! |---|---|---|
//! | `statement_timeout` | milliseconds, or `5s`, `2min` … (`0`: the server's) | a query's timeout, at most the server's |
//! | `tempora.query_memory_limit` | bytes, or `64MB` … (`0`: the server's) | a query's memory, at most the server's |
//! | `tempora.operators` | `on` / `off` | Tempora's plan operators for the monitoring shapes (off: DataFusion's plain plan, for comparison) |
//! | `tempora.last_value_cache` | `on` / `off` | latest-value queries answered from the last-value cache |
//! | `tempora.rollups` | `on` / `off` | bucketed aggregates answered from the table's rollups where they give the same rows |
//!
//! `SET x TO v` and `SET x = v` are the same; `RESET x` and `SET x TO DEFAULT` return to the
//! server's value. Any other `SET` is a PostgreSQL session setting (`DateStyle`, `TimeZone`,
//! `application_name` …) that the PostgreSQL protocol keeps; an unknown `tempora.*` name is
//! an error that lists the known ones.

use datafusion::sql::parser::ResetStatement;
use datafusion::sql::sqlparser::ast::{self, Expr, ObjectName, Value};

use super::Statement;
use crate::error::{QueryError, Result};

/// A Tempora setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Setting {
    StatementTimeout,
    QueryMemoryLimit,
    Operators,
    LastValueCache,
    Rollups,
}

impl Setting {
    pub const ALL: [Setting; 5] = [
        Setting::StatementTimeout,
        Setting::QueryMemoryLimit,
        Setting::Operators,
        Setting::LastValueCache,
        Setting::Rollups,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Setting::StatementTimeout => "statement_timeout",
            Setting::QueryMemoryLimit => "tempora.query_memory_limit",
            Setting::Operators => "tempora.operators",
            Setting::LastValueCache => "tempora.last_value_cache",
            Setting::Rollups => "tempora.rollups",
        }
    }

    fn from_name(name: &str) -> Option<Setting> {
        Setting::ALL
            .into_iter()
            .find(|s| s.name().eq_ignore_ascii_case(name))
    }
}

/// `SET name = value` (`value: None`: back to the server's value).
#[derive(Debug, Clone, PartialEq)]
pub struct SetVariable {
    pub setting: Setting,
    pub value: Option<String>,
}

/// What a `SET` statement is: a Tempora setting, or a PostgreSQL session statement.
pub fn classify(set: ast::Set) -> Result<Statement> {
    let ast::Set::SingleAssignment {
        variable, values, ..
    } = &set
    else {
        return Ok(Statement::Session(Box::new(ast::Statement::Set(set))));
    };
    let name = variable.to_string();
    let Some(setting) = known(&name)? else {
        return Ok(Statement::Session(Box::new(ast::Statement::Set(set))));
    };
    let value = match values.as_slice() {
        [v] => value_text(v),
        _ => None,
    }
    .ok_or_else(|| {
        QueryError::Sql(format!(
            "SET {name}: expected one value, found {}",
            values
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })?;
    let value = (!value.eq_ignore_ascii_case("default")).then_some(value);
    Ok(Statement::Set(SetVariable { setting, value }))
}

/// `RESET name`.
pub fn reset(r: ResetStatement) -> Result<Statement> {
    let ResetStatement::Variable(name) = &r;
    match known(&name.to_string())? {
        Some(setting) => Ok(Statement::Set(SetVariable {
            setting,
            value: None,
        })),
        None => Ok(Statement::Session(Box::new(reset_statement(name)))),
    }
}

/// sqlparser has no RESET statement: the PostgreSQL front end reads it as `SET x TO DEFAULT`.
fn reset_statement(name: &ObjectName) -> ast::Statement {
    ast::Statement::Set(ast::Set::SingleAssignment {
        scope: None,
        hivevar: false,
        variable: name.clone(),
        values: vec![Expr::Identifier(ast::Ident::new("DEFAULT"))],
    })
}

/// The setting `name` names; an unknown `tempora.*` name is an error.
fn known(name: &str) -> Result<Option<Setting>> {
    let name = name.trim_matches('"');
    if let Some(s) = Setting::from_name(name) {
        return Ok(Some(s));
    }
    // `get`: byte 8 may fall inside a letter (`SET K.E11S1϶=L` was a fuzzing find).
    if name.len() > 8
        && name
            .get(..8)
            .is_some_and(|p| p.eq_ignore_ascii_case("tempora."))
    {
        let names: Vec<&str> = Setting::ALL.iter().map(|s| s.name()).collect();
        return Err(QueryError::Sql(format!(
            "unknown setting {name:?}; Tempora's settings are {}",
            names.join(", ")
        )));
    }
    Ok(None)
}

/// A setting's value as text: a string, a number or a word (`on`, `DEFAULT`).
fn value_text(e: &Expr) -> Option<String> {
    match e {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => Some(s.clone()),
            Value::Number(n, _) => Some(n.clone()),
            Value::Boolean(b) => Some(b.to_string()),
            _ => None,
        },
        Expr::Identifier(i) => Some(i.value.clone()),
        _ => None,
    }
}

/// `on`/`off` (also `true`/`false`, `1`/`0`, `yes`/`no`) as a boolean.
pub fn parse_bool(setting: Setting, v: &str) -> Result<bool> {
    match v.to_ascii_lowercase().as_str() {
        "on" | "true" | "1" | "yes" => Ok(true),
        "off" | "false" | "0" | "no" => Ok(false),
        _ => Err(QueryError::InvalidParameter(format!(
            "{}: expected on or off, not {v:?}",
            setting.name()
        ))),
    }
}
