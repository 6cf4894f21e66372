//! PromQL: Prometheus's query language, planned onto the same DataFusion operators as SQL.
//!
//! ```text
//! text ─► parse (bounded, once) ─► PromQuery ─► Statement::PromQl ─► plan::expr ─► LogicalPlan
//!          promql-parser           + steps,      (the front door:     (PromScan leaves,
//!                                    lookback     permissions,          Aggregate, Join,
//!                                                 limits, timeout)      Projection …)
//! ```
//!
//! | module | what it holds |
//! |---|---|
//! | [`time`] | time and duration parameters, the step grid, Prometheus's number formats |
//! | [`names`] | metric names ↔ tables and fields |
//! | [`functions`] | the pure functions of a window of samples (`rate` …) and quantiles |
//! | [`scan`] | the `PromScan` node and operator: series read and evaluated per step |
//! | [`plan`] | expressions → logical plans |
//! | [`udf`] | the scalar functions the plans call |
//! | [`unique`] | the `PromUnique` check: vector matching's refusals of repeated matches |
//!
//! Semantics are Prometheus 2.42's: windows include both ends, staleness markers end a
//! series, a sample is found up to the lookback delta (5 minutes by default) before a step.
//! Not yet: subqueries, `count_values`, native histograms, `limitk`.
//!
//! Result rows: the labels (sorted by name; null = absent), `__ts` (ms), `__value`.

pub mod functions;
pub mod meta;
pub mod names;
pub mod plan;
pub mod scan;
pub mod time;
pub mod udf;
pub mod unique;

use std::sync::Arc;

use datafusion::logical_expr::LogicalPlan;
use lrpar::{Lexeme, Lexer, NonStreamingLexer};
use promql_parser::parser::Expr as PExpr;
use promql_parser::parser::token::{T_ADD, T_COLON, T_LEFT_BRACKET, T_NUMBER, T_OFFSET, T_SUB};
use promql_parser::parser::value::ValueType;
use tempora_storage::Engine;

use crate::error::{QueryError, Result};
pub use time::Steps;

/// Longest PromQL text accepted (bytes).
pub const MAX_QUERY_BYTES: usize = 64 * 1024;
/// Deepest nesting of brackets accepted.
pub const MAX_NESTING: usize = 64;
/// Most binary operators in one expression.
pub const MAX_OPERATORS: usize = 256;
/// Longest duration a number of seconds may give (`offset N`, `[N]`, `[N:M]`): 10^15 s
/// (about 31.7 million years), whose milliseconds still fit an i64.
pub const MAX_DURATION_SECS: f64 = 1e15;
/// Default lookback delta: how far before a step an instant selector finds a sample (ms).
pub const DEFAULT_LOOKBACK_MS: i64 = 5 * 60 * 1000;

/// A parsed PromQL query with its evaluation times: a statement of the front door.
#[derive(Debug, Clone, PartialEq)]
pub struct PromQuery {
    pub text: String,
    pub expr: PExpr,
    pub steps: Steps,
    /// Lookback delta (ms).
    pub lookback: i64,
    /// An instant query (`/api/v1/query`): one step, and a range vector may be the result.
    pub instant: bool,
    /// A range vector's raw samples keep staleness markers (remote read answers them).
    pub keep_stale: bool,
}

/// What a query's answer is, as Prometheus names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultType {
    Vector,
    Matrix,
    Scalar,
    String,
}

impl ResultType {
    pub fn name(self) -> &'static str {
        match self {
            ResultType::Vector => "vector",
            ResultType::Matrix => "matrix",
            ResultType::Scalar => "scalar",
            ResultType::String => "string",
        }
    }
}

impl PromQuery {
    /// The type of the answer: a range query's is always a matrix.
    pub fn result_type(&self) -> ResultType {
        if !self.instant {
            return ResultType::Matrix;
        }
        match self.expr.value_type() {
            ValueType::Vector => ResultType::Vector,
            ValueType::Matrix => ResultType::Matrix,
            ValueType::Scalar => ResultType::Scalar,
            ValueType::String => ResultType::String,
        }
    }

    /// For an instant query ending in `sort(…)` / `sort_desc(…)`: the order of its answer
    /// by value (`Some(true)`: descending). Other answers are ordered by labels.
    pub fn value_order(&self) -> Option<bool> {
        let mut e = &self.expr;
        while let PExpr::Paren(p) = e {
            e = &p.expr;
        }
        match e {
            PExpr::Call(c) if c.func.name == "sort" => Some(false),
            PExpr::Call(c) if c.func.name == "sort_desc" => Some(true),
            _ => None,
        }
    }
}

/// Checks the text's size and shape before the parser sees it: the parser's tree and the
/// planner recurse, so depth and operator count are bounded (named by what was exceeded).
pub fn check_text(text: &str) -> Result<()> {
    if text.len() > MAX_QUERY_BYTES {
        return Err(QueryError::Sql(format!(
            "the query is {} bytes; at most {MAX_QUERY_BYTES} are accepted",
            text.len()
        )));
    }
    let (mut depth, mut ops) = (0usize, 0usize);
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '"' | '\'' | '`' => {
                // A string: skip to its end (backslash escapes, but not in backquotes).
                while let Some((_, d)) = chars.next() {
                    if d == '\\' && c != '`' {
                        chars.next();
                    } else if d == c {
                        break;
                    }
                }
            }
            '#' => {
                for (_, d) in chars.by_ref() {
                    if d == '\n' {
                        break;
                    }
                }
            }
            '(' | '[' | '{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(QueryError::Sql(format!(
                        "brackets nest deeper than {MAX_NESTING} at byte {at}"
                    )));
                }
            }
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            '+' | '-' | '*' | '/' | '%' | '^' | '<' | '>' | '=' | '!' => {
                ops += 1;
                if ops > MAX_OPERATORS * 2 {
                    return Err(QueryError::Sql(format!(
                        "more than {MAX_OPERATORS} operators (at byte {at})"
                    )));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Refuses a number in a duration's place — after `offset` (and its sign), after `[`, after a
/// subquery's `:` — unless it is a finite count of seconds from 0 to [`MAX_DURATION_SECS`].
/// promql-parser 0.11 turns such a number into a `Duration` with `from_secs_f64`, which
/// panics on a negative, non-finite or too large value (`up offset 1e400`, `up offset Inf`, `up[1e400]`).
/// Reads the parser's own tokens; text it cannot lex is left for the parser to refuse.
pub fn check_durations(text: &str) -> Result<()> {
    let Ok(lexer) = promql_parser::parser::lexer(text) else {
        return Ok(());
    };
    let (mut before, mut last) = (None, None);
    for lexeme in lexer.iter().flatten() {
        let id = lexeme.tok_id();
        let after_offset = last == Some(T_OFFSET)
            || (before == Some(T_OFFSET) && matches!(last, Some(T_ADD | T_SUB)));
        let in_brackets = matches!(last, Some(T_LEFT_BRACKET | T_COLON));
        if id == T_NUMBER && (after_offset || in_brackets) {
            let span = lexeme.span();
            let number = lexer.span_str(span);
            if let Ok(secs) = promql_parser::util::parse_str_radix(number)
                && !(0.0..=MAX_DURATION_SECS).contains(&secs)
            {
                return Err(QueryError::Sql(format!(
                    "1:{}: parse error: the duration {number:?} (at byte {}) is not a \
                     number of seconds from 0 to {MAX_DURATION_SECS}",
                    span.start() + 1,
                    span.start()
                )));
            }
        }
        (before, last) = (last, Some(id));
    }
    Ok(())
}

/// Parses `text` into a query evaluated on `steps`.
pub fn parse(text: &str, steps: Steps, lookback: i64, instant: bool) -> Result<PromQuery> {
    check_text(text)?;
    check_durations(text)?;
    if lookback <= 0 {
        return Err(QueryError::Sql(
            "the lookback delta must be positive".into(),
        ));
    }
    let expr = promql_parser::parser::parse(text)
        .map_err(|e| QueryError::Sql(format!("1:1: parse error: {e}")))?;
    Ok(PromQuery {
        text: text.to_string(),
        expr,
        steps,
        lookback,
        instant,
        keep_stale: false,
    })
}

/// The logical plan of `q` over database `db`: rows `(labels…, __ts, __value)`.
pub fn logical_plan(engine: &Arc<Engine>, db: &str, q: &PromQuery) -> Result<LogicalPlan> {
    let cx = plan::Context {
        engine,
        db,
        steps: q.steps,
        lookback: q.lookback,
        instant: q.instant,
        keep_stale: q.keep_stale,
    };
    Ok(match plan::expr(&cx, &q.expr, &plan::ALL)? {
        plan::Value::Vector(v) | plan::Value::Matrix(v) => v.plan,
        plan::Value::Scalar(s) => plan::scalar_rows(&cx, s)?,
        plan::Value::String(_) => plan::empty()?.plan,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_bounded_before_parsing() {
        assert!(check_text("sum(rate(x[5m]))").is_ok());
        assert!(
            check_text(
                r#"x{a="((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((("}"#
            )
            .is_ok()
        );
        let deep = format!("{}x{}", "(".repeat(65), ")".repeat(65));
        assert!(
            check_text(&deep)
                .unwrap_err()
                .to_string()
                .contains("nest deeper than 64")
        );
        let long = "x".repeat(MAX_QUERY_BYTES + 1);
        assert!(check_text(&long).unwrap_err().to_string().contains("bytes"));
        let chain = vec!["x"; 600].join(" + ");
        assert!(
            check_text(&chain)
                .unwrap_err()
                .to_string()
                .contains("operators")
        );
        let commented = format!("x # {}\n", "(".repeat(100));
        assert!(check_text(&commented).is_ok());
    }

    /// Numbers in a duration's place that promql-parser 0.11 would panic on, and their
    /// neighbours that are fine (the parser answers those itself).
    #[test]
    fn durations_are_checked_before_parsing() {
        let refused = [
            ("too large offset", "up offset 1e400"),
            ("57-digit offset", &format!("up offset 5{}", "5".repeat(56))),
            ("negative-signed huge offset", "up offset -1e300"),
            ("infinite offset", "up offset Inf"),
            ("a comment before the number", "up offset # why\n 1e400"),
            ("NaN offset", "up offset -NaN"),
            ("range past f64", "rate(up[1e400])"),
            ("subquery range past f64", "max_over_time(up[1e309:1m])"),
            ("subquery step past f64", "max_over_time(up[5m:1e999])"),
            ("huge hex range", "up[0x7fffffffffffffff]"),
            ("just past the bound", "up offset 1000000000000001"),
        ];
        for (name, text) in refused {
            let err = parse(text, Steps::instant(0), DEFAULT_LOOKBACK_MS, true)
                .expect_err(name)
                .to_string();
            assert!(err.contains("is not a number of seconds"), "{name}: {err}");
        }
        let accepted = [
            ("seconds as a number", "up offset 300"),
            ("signed offset", "up offset -300"),
            ("fractional range", "rate(up[90.5])"),
            ("numeric subquery", "max_over_time(up[600:60])"),
            ("at the bound", "up offset 1e15"),
            ("large value elsewhere", "up > 1e400"),
            ("Inf as a value", "up > Inf"),
            ("number in a label value", r#"up{a="[1e400]"} offset 5m"#),
        ];
        for (name, text) in accepted {
            assert!(check_durations(text).is_ok(), "{name}");
            parse(text, Steps::instant(0), DEFAULT_LOOKBACK_MS, true).expect(name);
        }
        // Text the lexer refuses is left to the parser, which reads it with the same lexer.
        assert!(check_durations("up offset 1e400 ¬").is_ok());
        assert!(
            parse(
                "up offset 1e400 ¬",
                Steps::instant(0),
                DEFAULT_LOOKBACK_MS,
                true
            )
            .is_err()
        );
        // The fuzzer's artifact (issue 26), whole: refused by the check, not a panic.
        let artifact = format!(
            r#"sum by (job) (ratu(ep{{job=~"a.*", insta!=""}}[0m] offset 1e))[5m] offset {}"#,
            "5".repeat(56)
        );
        assert!(parse(&artifact, Steps::instant(0), DEFAULT_LOOKBACK_MS, true).is_err());
    }

    #[test]
    fn result_types_and_order() {
        let q = |text: &str, instant| {
            parse(text, Steps::instant(0), DEFAULT_LOOKBACK_MS, instant).unwrap()
        };
        assert_eq!(q("up", true).result_type(), ResultType::Vector);
        assert_eq!(q("up[5m]", true).result_type(), ResultType::Matrix);
        assert_eq!(q("1 + 2", true).result_type(), ResultType::Scalar);
        assert_eq!(q("\"a\"", true).result_type(), ResultType::String);
        assert_eq!(q("up", false).result_type(), ResultType::Matrix);
        assert_eq!(q("sort_desc(up)", true).value_order(), Some(true));
        assert_eq!(q("(sort(up))", true).value_order(), Some(false));
        assert_eq!(q("up", true).value_order(), None);
        assert!(parse("sum(", Steps::instant(0), 1, true).is_err());
        assert!(parse("up", Steps::instant(0), 0, true).is_err());
    }
}
