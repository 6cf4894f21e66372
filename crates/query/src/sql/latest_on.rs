//! The grammar of `LATEST ON` (QuestDB), read from tokens into a typed [`LatestOn`]:
//!
//! ```sql
//! SELECT … FROM t [WHERE …] LATEST ON time PARTITION BY <expr>, … [ORDER BY …] [LIMIT …]
//! ```
//!
//! The clause names the `time` column and at least one partition expression; the `ORDER BY`
//! and `LIMIT` after it apply to the latest rows. `… AS latest ON a = b` (a join on a table
//! aliased `latest`) is not the clause: the words must be followed by `<column> PARTITION BY`.
//! What it means is planned in [`crate::plan::latest_on`].

use datafusion::sql::sqlparser::ast::Expr;
use datafusion::sql::sqlparser::tokenizer::TokenWithSpan;

use super::tokens::{self, find_words, is_word, scan};
use crate::error::{QueryError, Result};

/// What the `LATEST ON` clause said.
#[derive(Debug, Clone, PartialEq)]
pub struct LatestOn {
    /// The partition expressions, in order.
    pub partition_by: Vec<Expr>,
}

fn bad(msg: impl std::fmt::Display) -> QueryError {
    QueryError::Sql(format!("LATEST ON: {msg}"))
}

/// Whether the tokens from `at` (just after `LATEST ON`) read `<column> PARTITION BY`.
pub fn is_clause(tokens: &[TokenWithSpan], at: usize) -> bool {
    let sig: Vec<usize> = scan(tokens)
        .into_iter()
        .map(|(i, _)| i)
        .filter(|&i| i >= at)
        .take(3)
        .collect();
    matches!(sig.as_slice(), [c, p, b]
        if matches!(tokens[*c].token, datafusion::sql::sqlparser::tokenizer::Token::Word(_))
            && is_word(&tokens[*p].token, "PARTITION")
            && is_word(&tokens[*b].token, "BY"))
}

/// Reads the clause from its tokens (those after `LATEST ON`).
pub fn parse(clause: Vec<TokenWithSpan>) -> Result<LatestOn> {
    let Some((_, after, _)) = find_words(&clause, &["PARTITION", "BY"]) else {
        return Err(bad("expected LATEST ON time PARTITION BY <columns>"));
    };
    let mut p = tokens::parser(clause[..after].to_vec());
    let time = p
        .parse_identifier()
        .map_err(|e| bad(format!("expected the time column: {e}")))?;
    if !time.value.eq_ignore_ascii_case("time") {
        return Err(bad(format!(
            "the time column is `time`, not {:?}",
            time.value
        )));
    }
    let rest = clause[after..].to_vec();
    if !rest.iter().any(|t| tokens::significant(&t.token)) {
        return Err(bad("PARTITION BY needs at least one column"));
    }
    let mut p = tokens::parser(rest);
    let partition_by = p
        .parse_comma_separated(|p| p.parse_expr())
        .map_err(|e| bad(e.to_string()))?;
    let next = p.peek_token();
    if tokens::significant(&next.token) {
        return Err(bad(format!(
            "unexpected {} {}",
            next.token,
            tokens::position(&next)
        )));
    }
    Ok(LatestOn { partition_by })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clause(text: &str) -> Result<LatestOn> {
        parse(tokens::tokenize(text).unwrap())
    }

    #[test]
    fn partitions_read_as_expressions() {
        let l = clause("time PARTITION BY host, region").unwrap();
        let names: Vec<String> = l.partition_by.iter().map(|e| e.to_string()).collect();
        assert_eq!(names, ["host", "region"]);
    }

    #[test]
    fn refusals_name_the_problem() {
        for (text, want) in [
            ("ts PARTITION BY h", "not \"ts\""),
            ("time PARTITION BY", "at least one"),
            ("time", "expected LATEST ON time PARTITION BY"),
            ("time PARTITION BY h h2", "unexpected"),
        ] {
            let e = clause(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
    }

    #[test]
    fn a_join_on_an_alias_is_not_the_clause() {
        let t = tokens::tokenize("latest ON cpu.host = latest.host").unwrap();
        let (_, after, _) = find_words(&t, &["LATEST", "ON"]).unwrap();
        assert!(!is_clause(&t, after));
        let t = tokens::tokenize("LATEST ON time PARTITION BY h").unwrap();
        let (_, after, _) = find_words(&t, &["LATEST", "ON"]).unwrap();
        assert!(is_clause(&t, after));
    }
}
