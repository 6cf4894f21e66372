//! Tempora SQL: DataFusion over the storage engine.
//!
//! Naming: a Tempora database is a DataFusion catalog with one schema, `public`; the engine
//! stores table `t` of database `db` under the name `db.t` (database names hold no `.`). A
//! [`QueryService`] keeps one `SessionContext` per database, whose default catalog is that
//! database, so unqualified names resolve in it and other databases are reachable as
//! `other.public.t`.
//!
//! Invariants:
//! - Engine calls (which block) run on the blocking pool, never on the async runtime.
//! - Every query runs under the configured memory pool limit; [`QueryLimits`] names them.
//! - Simple `INSERT … VALUES` statements take [`insert::fast_insert`], which bypasses the
//!   planner; anything else goes through DataFusion.

pub mod catalog;
pub mod convert;
pub mod delete;
pub mod error;
pub mod fast;
pub mod fill;
pub mod functions;
pub mod insert;
pub mod latest_on;
pub mod latest_rows;
pub mod latest_rule;
pub mod limits;
pub mod pushdown;
pub mod sample_by;
pub mod scan_exec;
pub mod service;
pub mod show;
pub mod sql_text;
pub mod table;

pub use error::{QueryError, Result};
pub use limits::QueryOptions;
pub use service::{QueryLimits, QueryService};

/// Rewrites Tempora's SQL extensions (`SAMPLE BY`, `LATEST ON`, `SHOW DATABASES`, `SHOW TAG
/// VALUES`) into standard SQL; `None` when `sql` uses none of them.
pub fn rewrite_extensions(sql: &str) -> Result<Option<String>> {
    if let Some(q) = show::rewrite(sql)? {
        return Ok(Some(q));
    }
    let uses = |kws: &[&str]| sql_text::find_keywords(sql, kws, 0).is_some();
    if !uses(&["SAMPLE", "BY"]) && !uses(&["LATEST", "ON"]) {
        return Ok(None);
    }
    // Each statement of a multi-statement text on its own.
    let mut out = Vec::new();
    let mut changed = false;
    let mut from = 0;
    while from < sql.len() {
        let end = sql_text::find_keywords(sql, &[";"], from).map_or(sql.len(), |p| p.0);
        let (explain, stmt) = split_explain(&sql[from..end]);
        let sampled = sample_by::rewrite(stmt)?;
        let s = sampled.as_deref().unwrap_or(stmt);
        match latest_on::rewrite(s)?.or(sampled) {
            Some(r) => {
                changed = true;
                out.push(format!("{explain} {r}"));
            }
            None => out.push(sql[from..end].to_string()),
        }
        from = end + 1;
    }
    Ok(changed.then(|| out.join(";")))
}

/// Splits a leading `EXPLAIN [ANALYZE] [VERBOSE]` off a statement, so the extensions are
/// rewritten in what it explains.
pub(crate) fn split_explain(stmt: &str) -> (&str, &str) {
    let mut at = 0;
    for (i, kw) in ["EXPLAIN", "ANALYZE", "VERBOSE"].iter().enumerate() {
        let rest = &stmt[at..];
        let word = rest.trim_start();
        let skipped = rest.len() - word.len();
        // `get` also refuses a cut inside a multi-byte character (`-- 日本語`).
        let matches = word.len() > kw.len()
            && word
                .get(..kw.len())
                .is_some_and(|w| w.eq_ignore_ascii_case(kw))
            && word[kw.len()..].starts_with(char::is_whitespace);
        if matches {
            at += skipped + kw.len();
        } else if i == 0 {
            return ("", stmt);
        }
    }
    stmt.split_at(at)
}

/// The only schema inside a database.
pub const SCHEMA: &str = "public";

/// The engine's name for table `table` of database `db`.
pub fn engine_table(db: &str, table: &str) -> String {
    format!("{db}.{table}")
}

/// An engine message as a client of `db` should read it: the engine names table `t` of `db`
/// `"db.t"`, the client wrote `"t"`.
pub fn user_message(db: &str, msg: &str) -> String {
    msg.replace(&format!("\"{db}."), "\"")
}

/// Splits an engine table name into (database, table).
pub fn split_engine_table(name: &str) -> Option<(&str, &str)> {
    name.split_once('.')
}

/// Checks a database name: what [`tempora_model::validate_name`] allows, without `.`.
pub fn validate_database(name: &str) -> Result<()> {
    tempora_model::validate_name(name).map_err(|e| QueryError::InvalidDatabase {
        name: name.chars().take(64).collect(),
        reason: e.to_string(),
    })?;
    if name.contains('.') {
        return Err(QueryError::InvalidDatabase {
            name: name.chars().take(64).collect(),
            reason: "a database name must not contain '.'".into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::split_explain;

    #[test]
    fn split_explain_named_cases() {
        let cases = [
            ("plain", "EXPLAIN SELECT 1", ("EXPLAIN", " SELECT 1")),
            (
                "analyze verbose",
                "explain analyze verbose SELECT 1",
                ("explain analyze verbose", " SELECT 1"),
            ),
            ("no explain", "SELECT 1", ("", "SELECT 1")),
            ("a word that starts like it", "EXPLAINED", ("", "EXPLAINED")),
            (
                "multi-byte text where the keyword would end",
                "-- 日本語\nSELECT 1",
                ("", "-- 日本語\nSELECT 1"),
            ),
            (
                "multi-byte after EXPLAIN",
                "EXPLAIN 温度",
                ("EXPLAIN", " 温度"),
            ),
        ];
        for (name, text, want) in cases {
            assert_eq!(split_explain(text), want, "{name}");
        }
    }

    #[test]
    fn each_statement_of_a_text_is_rewritten_on_its_own() {
        let got = super::rewrite_extensions(
            "SELECT 1; SELECT time, max(v) FROM t SAMPLE BY 1m; SELECT ';'",
        )
        .unwrap()
        .unwrap();
        let parts: Vec<&str> = got.split(';').collect();
        assert_eq!(parts[0], "SELECT 1");
        assert!(parts[1].contains("GROUP BY date_bin"), "{got}");
        assert!(got.ends_with(" SELECT ';'"), "{got}");
        assert_eq!(
            super::rewrite_extensions("SELECT 1; SELECT 2").unwrap(),
            None
        );
    }

    #[test]
    fn explain_prefixes_are_kept_around_the_rewrite() {
        let cases = [
            ("EXPLAIN SELECT", "EXPLAIN", " SELECT"),
            (
                "  explain analyze verbose SELECT",
                "  explain analyze verbose",
                " SELECT",
            ),
            ("EXPLAIN VERBOSE SELECT", "EXPLAIN VERBOSE", " SELECT"),
            ("SELECT explain", "", "SELECT explain"),
            ("EXPLAINED", "", "EXPLAINED"),
        ];
        for (stmt, prefix, rest) in cases {
            assert_eq!(super::split_explain(stmt), (prefix, rest), "{stmt}");
        }
        let got =
            super::rewrite_extensions("EXPLAIN SELECT * FROM t LATEST ON time PARTITION BY h")
                .unwrap()
                .unwrap();
        assert!(got.starts_with("EXPLAIN SELECT DISTINCT ON"), "{got}");
    }
}
