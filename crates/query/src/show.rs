//! Catalog statements DataFusion does not have, rewritten into queries:
//!
//! - `SHOW DATABASES` → the databases (`name`), sorted;
//! - `SHOW TAG VALUES FROM t WITH KEY = k` → the distinct values of tag `k` in `t` (`value`),
//!   sorted;
//! - `DESCRIBE t` → each column's name, type and kind (`tag`, `time`, `field`), from
//!   `tempora_columns('t')`.
//!
//! `SHOW TABLES`, `SHOW COLUMNS FROM t` and `information_schema` are DataFusion's own.

use crate::error::{QueryError, Result};
use crate::sql_text::quote;

/// The query for a statement above; `None` for anything else.
pub fn rewrite(sql: &str) -> Result<Option<String>> {
    // Every statement passes here: only SHOW and DESCRIBE are looked at further.
    let first = sql.split_whitespace().next().unwrap_or_default();
    if !["SHOW", "DESCRIBE", "DESC"]
        .iter()
        .any(|k| first.eq_ignore_ascii_case(k))
    {
        return Ok(None);
    }
    let spaced = sql.trim().trim_end_matches(';').replace('=', " = ");
    let words: Vec<&str> = spaced.split_whitespace().collect();
    let upper: Vec<String> = words.iter().map(|w| w.to_ascii_uppercase()).collect();
    let upper: Vec<&str> = upper.iter().map(String::as_str).collect();
    match upper.as_slice() {
        ["SHOW", "DATABASES"] => Ok(Some(
            "SELECT DISTINCT catalog_name AS name FROM information_schema.schemata \
             WHERE schema_name = 'public' ORDER BY name"
                .into(),
        )),
        ["SHOW", "TAG", "VALUES", "FROM", _, "WITH", "KEY", ..] => {
            // `= host`, `=host`, `= "host"`, in the case the user typed.
            let rest = &words[7..];
            let key = rest.concat();
            let key = key
                .strip_prefix('=')
                .map(|k| k.trim_matches('"'))
                .filter(|k| !k.is_empty())
                .ok_or_else(|| {
                    QueryError::Sql("SHOW TAG VALUES: expected WITH KEY = <tag>".into())
                })?;
            let table = words[4].trim_matches('"');
            // Names keep the case the user typed only when quoted, as everywhere in SQL.
            let name = |raw: &str, unquoted: &str| {
                if raw.starts_with('"') {
                    quote(unquoted)
                } else {
                    quote(&unquoted.to_lowercase())
                }
            };
            let raw_key = rest.concat();
            let raw_key = raw_key.trim_start_matches('=');
            Ok(Some(format!(
                "SELECT DISTINCT {} AS value FROM {} WHERE {} IS NOT NULL ORDER BY value",
                name(raw_key, key),
                name(words[4], table),
                name(raw_key, key)
            )))
        }
        ["DESCRIBE" | "DESC", _] => Ok(Some(format!(
            "SELECT column_name, data_type, kind FROM tempora_columns('{}')",
            words[1].trim_matches('"').replace('\'', "''")
        ))),
        ["SHOW", "TAG", "VALUES", ..] => Err(QueryError::Sql(
            "SHOW TAG VALUES: expected SHOW TAG VALUES FROM <table> WITH KEY = <tag>".into(),
        )),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements() {
        for (sql, want) in [
            (
                "show tag values from cpu with key = host;",
                Some(
                    "SELECT DISTINCT \"host\" AS value FROM \"cpu\" WHERE \"host\" IS NOT NULL ORDER BY value",
                ),
            ),
            (
                "SHOW TAG VALUES FROM \"Cpu\" WITH KEY=\"Host\"",
                Some(
                    "SELECT DISTINCT \"Host\" AS value FROM \"Cpu\" WHERE \"Host\" IS NOT NULL ORDER BY value",
                ),
            ),
            ("SELECT 1", None),
            (
                "describe cpu",
                Some("SELECT column_name, data_type, kind FROM tempora_columns('cpu')"),
            ),
            ("DESCRIBE SELECT 1", None),
            ("SHOW TABLES", None),
        ] {
            assert_eq!(rewrite(sql).unwrap().as_deref(), want, "{sql}");
        }
        assert!(
            rewrite("SHOW DATABASES")
                .unwrap()
                .unwrap()
                .contains("schemata")
        );
        let e = rewrite("SHOW TAG VALUES FROM cpu").unwrap_err().to_string();
        assert!(e.contains("WITH KEY"), "{e}");
        let e = rewrite("SHOW TAG VALUES FROM cpu WITH KEY =")
            .unwrap_err()
            .to_string();
        assert!(e.contains("WITH KEY = <tag>"), "{e}");
    }
}
