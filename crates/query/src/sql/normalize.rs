//! A query with its comparison literals turned into parameters: the key of the plan cache
//! ([`crate::cache`]).
//!
//! A dashboard sends the same query every few seconds with other times, a benchmark with
//! other hosts: the literals a column is compared with (`col <op> literal`, `col IN (…)`,
//! `col BETWEEN a AND b`, either way round) become placeholders numbered after the client's
//! own (`$n+1`, …), and their values are kept in order. Every other literal (a bucket's unit
//! or interval, a `LIMIT`, a function's argument) stays in the text, since the plan depends on
//! it. The key also names each value's kind (text, integer, float, boolean), so a text that
//! compares a column with `2` and with `2.5` are two keys.
//!
//! A statement that calls `now()` or another function of the current time is not keyed: the
//! optimiser folds those to a constant, which a reused plan would keep. Nor is one that reads
//! a model (`anomaly_detect`, `anomaly_score`, `forecast`): its plan holds what the model was
//! when it was planned (its key columns, its forecast), which `ALTER MODEL … REFRESH`
//! changes.

use std::ops::ControlFlow;

use datafusion::common::ScalarValue;
use datafusion::sql::sqlparser::ast::{
    BinaryOperator, Expr, Query, UnaryOperator, Value, visit_expressions, visit_expressions_mut,
};

/// The functions whose value is the time of the query.
const NOW_FUNCTIONS: [&str; 7] = [
    "now",
    "current_timestamp",
    "current_date",
    "current_time",
    "localtime",
    "localtimestamp",
    "today",
];

/// A normalised query: the query with placeholders, its literals in placeholder order and
/// their kinds (one letter each).
#[derive(Debug, Clone, PartialEq)]
pub struct Normalized {
    pub query: Box<Query>,
    pub literals: Vec<ScalarValue>,
    pub kinds: String,
}

/// `q` normalised; `None` when it must not be (it reads the current time).
pub fn normalize(q: &Query) -> Option<Normalized> {
    if reads_now(q) || reads_model(q) {
        return None;
    }
    let mut query = Box::new(q.clone());
    let mut next = max_placeholder(&query) + 1;
    let mut literals = Vec::new();
    let mut kinds = String::new();
    let mut take = |e: &mut Expr| {
        if let Some(v) = literal(e) {
            kinds.push(kind(&v));
            literals.push(v);
            *e = Expr::Value(Value::Placeholder(format!("${next}")).into());
            next += 1;
        }
    };
    let _ = visit_expressions_mut(query.as_mut(), |e: &mut Expr| {
        match e {
            Expr::BinaryOp { left, op, right } if comparison(op) => {
                if is_column(left) {
                    take(right);
                } else if is_column(right) {
                    take(left);
                }
            }
            Expr::InList { expr, list, .. }
                if is_column(expr) && list.iter().all(|x| literal(x).is_some()) =>
            {
                list.iter_mut().for_each(&mut take);
            }
            Expr::Between {
                expr, low, high, ..
            } if is_column(expr) => {
                take(low);
                take(high);
            }
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
    Some(Normalized {
        query,
        literals,
        kinds,
    })
}

fn comparison(op: &BinaryOperator) -> bool {
    matches!(
        op,
        BinaryOperator::Eq
            | BinaryOperator::NotEq
            | BinaryOperator::Lt
            | BinaryOperator::LtEq
            | BinaryOperator::Gt
            | BinaryOperator::GtEq
    )
}

fn is_column(e: &Expr) -> bool {
    match e {
        Expr::Identifier(_) | Expr::CompoundIdentifier(_) => true,
        Expr::Nested(inner) => is_column(inner),
        _ => false,
    }
}

/// A literal's value as DataFusion types it: a string, an integer when the digits fit, else
/// a float, a boolean.
fn literal(e: &Expr) -> Option<ScalarValue> {
    match e {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) => Some(ScalarValue::Utf8(Some(s.clone()))),
            Value::Number(n, _) => number(n),
            Value::Boolean(b) => Some(ScalarValue::Boolean(Some(*b))),
            _ => None,
        },
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => match expr.as_ref() {
            Expr::Value(v) => match &v.value {
                Value::Number(n, _) => number(&format!("-{n}")),
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
}

fn number(n: &str) -> Option<ScalarValue> {
    if let Ok(i) = n.parse::<i64>() {
        return Some(ScalarValue::Int64(Some(i)));
    }
    // Digits only but too long: DataFusion reads a decimal there; leave it in the text.
    if n.trim_start_matches('-')
        .bytes()
        .all(|b| b.is_ascii_digit())
    {
        return None;
    }
    n.parse::<f64>()
        .ok()
        .filter(|f| f.is_finite())
        .map(|f| ScalarValue::Float64(Some(f)))
}

fn kind(v: &ScalarValue) -> char {
    match v {
        ScalarValue::Utf8(_) => 's',
        ScalarValue::Int64(_) => 'i',
        ScalarValue::Float64(_) => 'f',
        _ => 'b',
    }
}

/// The highest `$n` the client wrote (0 for none).
fn max_placeholder(q: &Query) -> usize {
    let mut max = 0;
    let _ = visit_expressions(q, |e: &Expr| {
        if let Expr::Value(v) = e
            && let Value::Placeholder(p) = &v.value
            && let Some(n) = p.strip_prefix('$').and_then(|n| n.parse::<usize>().ok())
        {
            max = max.max(n);
        }
        ControlFlow::<()>::Continue(())
    });
    max
}

/// Whether `q` calls a function of the current time.
/// Whether `q` calls a function that may read a model.
fn reads_model(q: &Query) -> bool {
    use datafusion::sql::sqlparser::ast::visit_relations;
    let named = |n: &datafusion::sql::sqlparser::ast::ObjectName, names: &[&str]| {
        n.0.last().is_some_and(|p| {
            p.as_ident()
                .is_some_and(|i| names.iter().any(|w| i.value.eq_ignore_ascii_case(w)))
        })
    };
    visit_relations(q, |r| {
        if named(r, &["forecast"]) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .is_break()
        || visit_expressions(q, |e: &Expr| match e {
            Expr::Function(f) if named(&f.name, &["anomaly_detect", "anomaly_score"]) => {
                ControlFlow::Break(())
            }
            _ => ControlFlow::Continue(()),
        })
        .is_break()
}

fn reads_now(q: &Query) -> bool {
    visit_expressions(q, |e: &Expr| match e {
        Expr::Function(f)
            if f.name.0.last().is_some_and(|p| {
                p.as_ident().is_some_and(|i| {
                    NOW_FUNCTIONS
                        .iter()
                        .any(|n| i.value.eq_ignore_ascii_case(n))
                })
            }) =>
        {
            ControlFlow::Break(())
        }
        _ => ControlFlow::Continue(()),
    })
    .is_break()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::{Statement, parse};

    fn query(sql: &str) -> Box<Query> {
        match parse(sql).unwrap().pop() {
            Some(Statement::Query(q)) => q.query,
            other => panic!("{sql}: {other:?}"),
        }
    }

    #[test]
    fn comparison_literals_become_parameters() {
        let cases: &[(&str, &str, &str, &str)] = &[
            (
                "time range and tags",
                "SELECT date_trunc('minute', time) AS m, max(v) FROM cpu WHERE (host = 'a' OR host = 'b') AND time >= '2016-01-01' AND time < '2016-01-02' GROUP BY m ORDER BY m LIMIT 5",
                "SELECT date_trunc('minute', time) AS m, max(v) FROM cpu WHERE (host = $1 OR host = $2) AND time >= $3 AND time < $4 GROUP BY m ORDER BY m LIMIT 5",
                "ssss",
            ),
            (
                "in, between, numbers either way round",
                "SELECT * FROM t WHERE host IN ('a', 'b') AND time BETWEEN '1' AND '2' AND 90.5 < v AND n = -3",
                "SELECT * FROM t WHERE host IN ($1, $2) AND time BETWEEN $3 AND $4 AND $5 < v AND n = $6",
                "ssssfi",
            ),
            (
                "after the client's parameters",
                "SELECT * FROM t WHERE host = $2 AND v > 1",
                "SELECT * FROM t WHERE host = $2 AND v > $3",
                "i",
            ),
            (
                "a list with an expression stays",
                "SELECT * FROM t WHERE host IN ('a', lower('B'))",
                "SELECT * FROM t WHERE host IN ('a', lower('B'))",
                "",
            ),
            (
                "literals that are not compared with a column stay",
                "SELECT date_bin(INTERVAL '1 minute', time), 1 + 2 FROM t WHERE 1 = 1",
                "SELECT date_bin(INTERVAL '1 minute', time), 1 + 2 FROM t WHERE 1 = 1",
                "",
            ),
        ];
        for (name, sql, want, kinds) in cases {
            let n = normalize(&query(sql)).unwrap();
            assert_eq!(n.query.to_string(), *want, "{name}");
            assert_eq!(n.kinds, *kinds, "{name}");
            assert_eq!(n.literals.len(), kinds.len(), "{name}");
        }
    }

    #[test]
    fn queries_of_the_current_time_are_not_normalised() {
        for sql in [
            "SELECT * FROM t WHERE time > now() - INTERVAL '1 hour'",
            "SELECT * FROM t WHERE time > CURRENT_TIMESTAMP",
            "SELECT current_date",
        ] {
            assert!(normalize(&query(sql)).is_none(), "{sql}");
        }
    }
}
