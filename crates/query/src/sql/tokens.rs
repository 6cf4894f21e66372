//! The tokens of one SQL text, as sqlparser's PostgreSQL tokenizer reads them: split into
//! statements and searched for Tempora's clauses.
//!
//! Every search works on tokens, never on the text: a keyword inside a string literal, a
//! quoted identifier or a comment is not a keyword. "Depth" is the number of parentheses
//! open before a token, so a clause of the outermost query is found at depth 0.

use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer};

use crate::error::{QueryError, Result};

/// The dialect every statement is read in, from every protocol.
pub const DIALECT: PostgreSqlDialect = PostgreSqlDialect {};

/// Longest SQL text accepted (bytes); a longer one is refused before it is tokenized.
pub const MAX_SQL_BYTES: usize = 16 << 20;

/// Deepest nesting the parser follows (sqlparser's recursion limit).
pub const RECURSION_LIMIT: usize = 64;

/// Deepest nesting of calls (a word followed by `(`) accepted. sqlparser's reading of
/// function arguments backtracks, which costs about twice as much per level (found by the
/// `sql` fuzz target: 14 nested calls took half a second, 14 unclosed `CAST(` a minute).
pub const MAX_CALL_DEPTH: usize = 12;

/// The tokens of `sql`; a tokenizer error names its line and column. Brackets must balance
/// and calls nest at most [`MAX_CALL_DEPTH`] deep, checked here before any parser backtracks.
pub fn tokenize(sql: &str) -> Result<Vec<TokenWithSpan>> {
    if sql.len() > MAX_SQL_BYTES {
        return Err(QueryError::Sql(format!(
            "the SQL text is {} bytes, more than the limit of {MAX_SQL_BYTES}",
            sql.len()
        )));
    }
    let tokens = Tokenizer::new(&DIALECT, sql)
        .tokenize_with_location()
        .map_err(|e| QueryError::Sql(format!("SQL syntax: {e}")))?;
    check_nesting(&tokens)?;
    check_chains(&tokens)?;
    check_operators(&tokens)?;
    Ok(tokens)
}

/// Most binary operators in one chain of an expression (`a + b + …`, `x = 1 OR x = 2 OR …`,
/// `v::int::text…`). sqlparser reads a chain in a loop but builds it as a tree as deep as the
/// chain is long, and everything after it — cloning, planning, the optimizer, dropping the
/// tree — recurses once per level: `SELECT 1+1+…` with 5,000 terms (10 KB) overflowed a
/// server thread's stack and killed the server. In a debug build a table query survives
/// 1,000 levels and not 2,000.
pub const MAX_CHAIN_OPERATORS: usize = 1024;

/// Binary operators in each chain are at most [`MAX_CHAIN_OPERATORS`]. A chain is what lies
/// between commas at one depth of brackets; a bracketed group is one operand of its chain
/// (its own operators count in a chain of their own). Operators of neighbouring clauses at
/// the same depth count together (`… WHERE a = 1 AND …`): a bound, not a parse.
pub fn check_operators(tokens: &[TokenWithSpan]) -> Result<()> {
    // The count of each open bracket's enclosing chain.
    let mut open: Vec<usize> = Vec::new();
    let mut count = 0usize;
    for t in tokens {
        match &t.token {
            Token::LParen | Token::LBracket => open.push(std::mem::replace(&mut count, 0)),
            Token::RParen | Token::RBracket => count = open.pop().unwrap_or(0),
            Token::Comma | Token::SemiColon => count = 0,
            other if binary_operator(other) => {
                count += 1;
                if count > MAX_CHAIN_OPERATORS {
                    return Err(QueryError::Sql(format!(
                        "SQL syntax: more than {MAX_CHAIN_OPERATORS} operators in one chain of \
                         an expression at line {} column {} (a longer chain nests too deep to \
                         plan; for a long list of values use IN (…))",
                        t.span.start.line, t.span.start.column
                    )));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Tokens that join two operands in a chain (a unary `-` or `NOT` counts too: harmless, as
/// those nest only as deep as the parser's recursion limit).
fn binary_operator(t: &Token) -> bool {
    use datafusion::sql::sqlparser::keywords::Keyword;
    match t {
        Token::Word(w) => {
            w.quote_style.is_none()
                && matches!(
                    w.keyword,
                    Keyword::AND
                        | Keyword::OR
                        | Keyword::XOR
                        | Keyword::LIKE
                        | Keyword::ILIKE
                        | Keyword::IS
                        | Keyword::COLLATE
                )
        }
        Token::Plus
        | Token::Minus
        | Token::Mul
        | Token::Div
        | Token::Mod
        | Token::StringConcat
        | Token::Eq
        | Token::DoubleEq
        | Token::Neq
        | Token::Lt
        | Token::Gt
        | Token::LtEq
        | Token::GtEq
        | Token::Spaceship
        | Token::Caret
        | Token::Ampersand
        | Token::Pipe
        | Token::ShiftLeft
        | Token::ShiftRight
        | Token::Tilde
        | Token::TildeAsterisk
        | Token::ExclamationMarkTilde
        | Token::ExclamationMarkTildeAsterisk
        | Token::DoubleColon
        | Token::Arrow
        | Token::LongArrow
        | Token::HashArrow
        | Token::HashLongArrow => true,
        _ => false,
    }
}

/// Most `.` accepted in one chain of names and field accesses (`db.schema.table.column` has
/// three). sqlparser reads the part after each `.` tentatively and, when the rest of the
/// chain fails, reads it again, so a failing chain costs about twice as much per `.` (found
/// by the `sql` fuzz target: 30 dotted parts, some with prefix operators, took seconds).
pub const MAX_CHAIN_DOTS: usize = 8;

/// Every `.` is followed by a name or `*`, and chains of `.`-joined parts are at most
/// [`MAX_CHAIN_DOTS`] long. A part is one token, after any prefix operators (`NOT`, ...) and
/// before any bracketed arguments or subscripts; the chain goes on while a `.` follows a part.
pub fn check_chains(tokens: &[TokenWithSpan]) -> Result<()> {
    let sig: Vec<&TokenWithSpan> = tokens.iter().filter(|t| significant(&t.token)).collect();
    let at =
        |t: &TokenWithSpan| format!("line {} column {}", t.span.start.line, t.span.start.column);
    // The chain count of each open bracket's enclosing chain (a call's or subscript's
    // arguments are scanned as chains of their own; the chain goes on after the group).
    let mut open: Vec<usize> = Vec::new();
    let mut dots = 0;
    let mut i = 0;
    while i < sig.len() {
        match sig[i].token {
            Token::Period => {}
            Token::LParen | Token::LBracket => {
                open.push(dots);
                dots = 0;
                i += 1;
                continue;
            }
            Token::RParen | Token::RBracket => {
                let outer = open.pop().unwrap_or(0);
                let goes_on = matches!(
                    sig.get(i + 1).map(|t| &t.token),
                    Some(Token::Period | Token::LParen | Token::LBracket)
                );
                dots = if goes_on { outer } else { 0 };
                i += 1;
                continue;
            }
            _ => {
                dots = 0;
                i += 1;
                continue;
            }
        }
        let next = sig.get(i + 1).map(|t| &t.token);
        let named = matches!(next, Some(Token::Word(_) | Token::Mul));
        // psql's `OPERATOR(pg_catalog.~)` names an operator after the `.`.
        let operator_name = i >= 3
            && sig[i - 2].token == Token::LParen
            && matches!(&sig[i - 3].token, Token::Word(w) if w.value.eq_ignore_ascii_case("OPERATOR"));
        if !(named || (operator_name && next.is_some())) {
            // sqlparser would fail here too, but only after re-reading the chain before it.
            return Err(QueryError::Sql(format!(
                "SQL syntax: the `.` at {} is not followed by a name or `*`",
                at(sig[i])
            )));
        }
        dots += 1;
        if dots > MAX_CHAIN_DOTS {
            return Err(QueryError::Sql(format!(
                "SQL syntax: more than {MAX_CHAIN_DOTS} `.` in one chain of names at {}",
                at(sig[i])
            )));
        }
        // Prefix words (`NOT NOT x`) before the part; a last one before a `.` is the part.
        let mut j = i + 1;
        while j + 1 < sig.len()
            && prefix_operator(&sig[j].token)
            && sig[j + 1].token != Token::Period
        {
            j += 1;
        }
        j += 1; // the part itself
        if !matches!(
            sig.get(j).map(|t| &t.token),
            Some(Token::Period | Token::LParen | Token::LBracket)
        ) {
            dots = 0;
        }
        i = j;
    }
    Ok(())
}

/// Words that can start an expression as a prefix operator (after a `.` only words come).
fn prefix_operator(t: &Token) -> bool {
    matches!(t, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("NOT"))
}

/// Brackets balance (each closer matches the last opener) and calls nest at most
/// [`MAX_CALL_DEPTH`] deep.
pub fn check_nesting(tokens: &[TokenWithSpan]) -> Result<()> {
    let at =
        |t: &TokenWithSpan| format!("line {} column {}", t.span.start.line, t.span.start.column);
    // Open brackets: (the opener, whether it opens a call).
    let mut open: Vec<(&TokenWithSpan, bool)> = Vec::new();
    let mut calls = 0;
    let mut prev_word = false;
    for t in tokens {
        match &t.token {
            Token::LParen | Token::LBracket => {
                let call = prev_word && t.token == Token::LParen;
                calls += usize::from(call);
                if calls > MAX_CALL_DEPTH {
                    return Err(QueryError::Sql(format!(
                        "SQL syntax: calls nest more than {MAX_CALL_DEPTH} deep at {}",
                        at(t)
                    )));
                }
                open.push((t, call));
            }
            Token::RParen | Token::RBracket => {
                let want = match t.token {
                    Token::RParen => Token::LParen,
                    _ => Token::LBracket,
                };
                match open.pop() {
                    Some((o, call)) if o.token == want => calls -= usize::from(call),
                    Some((o, _)) => {
                        return Err(QueryError::Sql(format!(
                            "SQL syntax: {} at {} closes the {} opened at {}",
                            t.token,
                            at(t),
                            o.token,
                            at(o)
                        )));
                    }
                    None => {
                        return Err(QueryError::Sql(format!(
                            "SQL syntax: {} at {} closes nothing",
                            t.token,
                            at(t)
                        )));
                    }
                }
            }
            _ => {}
        }
        if significant(&t.token) {
            prev_word = matches!(t.token, Token::Word(_));
        }
    }
    match open.last() {
        Some((o, _)) => Err(QueryError::Sql(format!(
            "SQL syntax: the {} opened at {} is never closed",
            o.token,
            at(o)
        ))),
        None => Ok(()),
    }
}

/// Whether a token is neither whitespace nor a comment.
pub fn significant(t: &Token) -> bool {
    !matches!(t, Token::Whitespace(_) | Token::EOF)
}

/// Splits a text's tokens into statements at each `;` outside parentheses, dropping empty
/// statements and the `;` themselves.
pub fn split_statements(tokens: Vec<TokenWithSpan>) -> Vec<Vec<TokenWithSpan>> {
    let mut out = Vec::new();
    let mut cur: Vec<TokenWithSpan> = Vec::new();
    let mut depth = 0i64;
    for t in tokens {
        match &t.token {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            Token::SemiColon if depth <= 0 => {
                if cur.iter().any(|t| significant(&t.token)) {
                    out.push(std::mem::take(&mut cur));
                } else {
                    cur.clear();
                }
                continue;
            }
            Token::EOF => continue,
            _ => {}
        }
        cur.push(t);
    }
    if cur.iter().any(|t| significant(&t.token)) {
        out.push(cur);
    }
    out
}

/// Whether `t` is the unquoted word `w` (any case).
pub fn is_word(t: &Token, w: &str) -> bool {
    matches!(t, Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w))
}

/// The significant tokens of a statement with their index and depth.
pub fn scan(tokens: &[TokenWithSpan]) -> Vec<(usize, i64)> {
    let mut out = Vec::new();
    let mut depth = 0i64;
    for (i, t) in tokens.iter().enumerate() {
        match t.token {
            Token::RParen => depth -= 1,
            _ if !significant(&t.token) => continue,
            _ => {}
        }
        out.push((i, depth));
        if t.token == Token::LParen {
            depth += 1;
        }
    }
    out
}

/// The upper-cased unquoted words a statement starts with (at most `n`; stops at the first
/// token that is not a plain word).
pub fn leading_words(tokens: &[TokenWithSpan], n: usize) -> Vec<String> {
    tokens
        .iter()
        .filter(|t| significant(&t.token))
        .take(n)
        .map_while(|t| match &t.token {
            Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_uppercase()),
            _ => None,
        })
        .collect()
}

/// Where the word sequence `words` first occurs among the significant tokens: (index in
/// `tokens` of its first word, index just after its last word, its depth).
pub fn find_words(tokens: &[TokenWithSpan], words: &[&str]) -> Option<(usize, usize, i64)> {
    let sig = scan(tokens);
    (0..sig.len()).find_map(|k| {
        let run = sig.get(k..k + words.len())?;
        let all = run
            .iter()
            .zip(words)
            .all(|(&(i, d), w)| d == run[0].1 && is_word(&tokens[i].token, w));
        all.then(|| (run[0].0, run[words.len() - 1].0 + 1, run[0].1))
    })
}

/// The index just past the tokens of a clause that starts at `from`: the first significant
/// token at depth 0 that is one of the words `ends` (or the end of the statement).
pub fn clause_end(tokens: &[TokenWithSpan], from: usize, ends: &[&str]) -> usize {
    scan(tokens)
        .into_iter()
        .find(|&(i, d)| i >= from && d == 0 && ends.iter().any(|w| is_word(&tokens[i].token, w)))
        .map_or(tokens.len(), |(i, _)| i)
}

/// A sqlparser parser over `tokens` in Tempora's dialect.
pub fn parser(tokens: Vec<TokenWithSpan>) -> Parser<'static> {
    Parser::new(&DIALECT)
        .with_tokens_with_locations(tokens)
        .with_recursion_limit(RECURSION_LIMIT)
}

/// The text of `tokens` as written (whitespace and comments included).
pub fn text(tokens: &[TokenWithSpan]) -> String {
    tokens.iter().map(|t| t.token.to_string()).collect()
}

/// "at line L, column C" of a token, for errors.
pub fn position(t: &TokenWithSpan) -> String {
    format!(
        "at line {}, column {}",
        t.span.start.line, t.span.start.column
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statements(sql: &str) -> Vec<String> {
        split_statements(tokenize(sql).unwrap())
            .iter()
            .map(|s| text(s).trim().to_string())
            .collect()
    }

    #[test]
    fn statements_split_at_semicolons_outside_parentheses_and_strings() {
        let cases: &[(&str, &str, &[&str])] = &[
            ("one", "SELECT 1", &["SELECT 1"]),
            ("two", "SELECT 1; SELECT 2;", &["SELECT 1", "SELECT 2"]),
            ("empty ones", ";; SELECT 1 ;;", &["SELECT 1"]),
            ("in a string", "SELECT ';'", &["SELECT ';'"]),
            ("in a comment", "SELECT 1 -- ; x\n", &["SELECT 1 -- ; x"]),
            ("only a comment", "-- nothing", &[]),
        ];
        for (name, sql, want) in cases {
            assert_eq!(statements(sql), *want, "{name}");
        }
    }

    /// Each (name, text, expected error fragment or `None` for accepted) through `tokenize`.
    fn check_cases(cases: Vec<(&str, String, Option<&str>)>) {
        for (name, sql, want) in cases {
            match (tokenize(&sql), want) {
                (Ok(_), None) => {}
                (Err(e), Some(w)) => assert!(e.to_string().contains(w), "{name}: {e}"),
                (got, _) => panic!("{name}: {:?}", got.map(|t| t.len())),
            }
        }
    }

    #[test]
    fn nesting_is_bounded_before_parsing() {
        let deep = |n: usize| format!("SELECT {}1{}", "f(".repeat(n), ")".repeat(n));
        let cases: Vec<(&str, String, Option<&str>)> = vec![
            ("calls at the limit", deep(MAX_CALL_DEPTH), None),
            (
                "calls past the limit",
                deep(MAX_CALL_DEPTH + 1),
                Some("nest more than 12 deep at line 1 column 33"),
            ),
            (
                "plain parentheses are not calls",
                format!("SELECT {}1{}", "(".repeat(40), ")".repeat(40)),
                None,
            ),
            (
                "an unclosed call",
                "SELECT CAST(CAST(1".into(),
                Some("the ( opened at line 1 column 17 is never closed"),
            ),
            (
                "a stray closer",
                "SELECT 1)".into(),
                Some(") at line 1 column 9 closes nothing"),
            ),
            (
                "crossed brackets",
                "SELECT a[1)".into(),
                Some(") at line 1 column 11 closes the [ opened at line 1 column 9"),
            ),
            (
                "brackets in strings do not count",
                "SELECT '(((' , \"a(\"".into(),
                None,
            ),
            (
                "the fuzz finding",
                "IF(IF(LIF(L[-LF(IF(IF(LIF(L[-LF(".into(),
                Some("never closed"),
            ),
        ];
        check_cases(cases);
    }

    #[test]
    fn operator_chains_are_bounded_before_parsing() {
        let plus = |n: usize| format!("SELECT 1{}", "+1".repeat(n));
        let ors = |n: usize| {
            let terms: Vec<String> = (0..n).map(|i| format!("x = {i}")).collect();
            format!("SELECT * FROM t WHERE {}", terms.join(" OR "))
        };
        let cases: Vec<(&str, String, Option<&str>)> = vec![
            ("a chain at the limit", plus(MAX_CHAIN_OPERATORS), None),
            (
                "one past the limit",
                plus(MAX_CHAIN_OPERATORS + 1),
                Some(
                    "more than 1024 operators in one chain of an expression at line 1 column 2057",
                ),
            ),
            (
                "the crash (5,000 terms)",
                plus(4_999),
                Some("operators in one chain"),
            ),
            // `x = i OR` is two operators a term.
            ("512 equalities joined by OR", ors(512), None),
            ("513 of them", ors(513), Some("operators in one chain")),
            (
                "commas end a chain: a long list of values",
                format!(
                    "SELECT 1 WHERE 5 IN ({})",
                    (0..20_000)
                        .map(|i| format!("-{i}"))
                        .collect::<Vec<_>>()
                        .join(",")
                ),
                None,
            ),
            (
                "rows of VALUES with negative numbers",
                format!(
                    "INSERT INTO t VALUES {}",
                    vec!["(-1, -2.5, 'a-b')"; 5_000].join(",")
                ),
                None,
            ),
            (
                "a bracketed group counts in its own chain",
                format!(
                    "SELECT ({}) + ({})",
                    plus(1_000).replace("SELECT ", ""),
                    plus(1_000).replace("SELECT ", "")
                ),
                None,
            ),
            (
                "operators in strings and quoted names do not count",
                format!(
                    "SELECT '{}' AS \"{}\"",
                    "+".repeat(5_000),
                    "-".repeat(2_000)
                ),
                None,
            ),
            (
                "casts chain too",
                format!("SELECT x{}", "::text".repeat(1_100)),
                Some("operators in one chain"),
            ),
        ];
        check_cases(cases);
    }

    #[test]
    fn chains_of_names_are_bounded_before_parsing() {
        let chain = |n: usize| format!("SELECT a{}", ".b".repeat(n));
        let cases: Vec<(&str, String, Option<&str>)> = vec![
            ("a chain at the limit", chain(MAX_CHAIN_DOTS), None),
            (
                "a chain past the limit",
                chain(MAX_CHAIN_DOTS + 1),
                Some("more than 8 `.` in one chain of names at line 1 column 25"),
            ),
            (
                "many short names",
                format!("SELECT {} FROM t", vec!["t.a"; 200].join(" + ")),
                None,
            ),
            (
                "a `.` before an operator",
                "SELECT a.b\n  .+c".into(),
                Some("the `.` at line 2 column 3 is not followed by a name or `*`"),
            ),
            (
                "a `.` at the end",
                "SELECT a.".into(),
                Some("is not followed by a name"),
            ),
            (
                "NOT as a part continues a chain",
                format!("SELECT a{}", ".NOT.b".repeat(MAX_CHAIN_DOTS)),
                Some("more than 8 `.`"),
            ),
            (
                "NOT as a prefix continues a chain",
                format!("SELECT a{}", ".NOT NOT b".repeat(MAX_CHAIN_DOTS + 1)),
                Some("more than 8 `.`"),
            ),
            (
                "the third fuzz finding (chains joined by `#` after IF: 1.8 s)",
                format!("IF {}C", "CC_._.CC_._.#".repeat(8)),
                Some("the `.` at line 1 column 15 is not followed by a name"),
            ),
            (
                "calls and subscripts continue a chain",
                format!("SELECT a{}", ".f(1)[2]".repeat(MAX_CHAIN_DOTS + 1)),
                Some("more than 8 `.`"),
            ),
            (
                "a chain inside a call's arguments is counted",
                format!("SELECT x.f(a{})", ".b".repeat(MAX_CHAIN_DOTS + 1)),
                Some("more than 8 `.`"),
            ),
            (
                "a chain after a call's group goes on",
                format!("SELECT a{}.c", ".f(1)".repeat(MAX_CHAIN_DOTS)),
                Some("more than 8 `.`"),
            ),
            (
                "psql's \\d pattern query",
                "SELECT c.oid FROM pg_catalog.pg_class c WHERE c.relname OPERATOR(pg_catalog.~) '^(cpu)$' COLLATE pg_catalog.default".into(),
                None,
            ),
            (
                "a qualified wildcard",
                "SELECT db.s.t.* FROM db.s.t".into(),
                None,
            ),
            (
                "dots in strings and numbers do not count",
                format!("SELECT '{}', 1.5, 2.5", ".".repeat(40)),
                None,
            ),
            (
                "the second fuzz finding (104 bytes that took sqlparser 2.4 s)",
                "IF++F\n.\rFF\n.\rF\n.\r++F\n.\rFF\n\n.\rF.\rFF\n.\rF\n.\r++F\n.\rFF\n\n.\rF\n.\r++F\n.\rFF\n.F\n.\rFF\n\n.\rF\n.\r++F\n.\rFF\n.\rF\n.\r++\n\rF\n.\r++\n.\r++F\n.\rFF\n.\rF\n.\r++F\n.\rFF\n21\rB\x01\x00\x00\x00\x00\x00\x02\x00%".into(),
                Some("is not followed by a name"),
            ),
        ];
        check_cases(cases);
    }

    #[test]
    fn words_are_found_as_tokens_at_their_depth() {
        let cases: &[(&str, &str, Option<i64>)] = &[
            ("plain", "SELECT x FROM t SAMPLE BY 1m", Some(0)),
            ("any case", "select x from t sample   by 1m", Some(0)),
            (
                "in a subquery",
                "SELECT * FROM (SELECT x FROM t SAMPLE BY 1m)",
                Some(1),
            ),
            ("in a string", "SELECT 'SAMPLE BY 1m' FROM t", None),
            ("quoted identifiers", "SELECT \"sample\" by FROM t", None),
            ("in a comment", "SELECT x FROM t /* SAMPLE BY 1m */", None),
            ("words apart", "SELECT sample, by FROM t", None),
        ];
        for (name, sql, depth) in cases {
            let tokens = tokenize(sql).unwrap();
            assert_eq!(
                find_words(&tokens, &["SAMPLE", "BY"]).map(|f| f.2),
                *depth,
                "{name}"
            );
        }
    }

    #[test]
    fn a_clause_ends_at_the_next_outer_keyword() {
        let sql = "SAMPLE BY 1m FILL(PREV) ORDER BY time LIMIT 3";
        let tokens = tokenize(sql).unwrap();
        let end = clause_end(&tokens, 0, &["ORDER", "LIMIT"]);
        assert_eq!(text(&tokens[..end]).trim(), "SAMPLE BY 1m FILL(PREV)");
        let tokens = tokenize("SAMPLE BY 1m").unwrap();
        assert_eq!(clause_end(&tokens, 0, &["ORDER"]), tokens.len());
    }

    #[test]
    fn oversized_texts_are_refused_by_size() {
        let big = "x".repeat(MAX_SQL_BYTES + 1);
        let e = tokenize(&big).unwrap_err().to_string();
        assert!(e.contains("limit"), "{e}");
    }
}
