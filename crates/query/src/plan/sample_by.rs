//! What `SAMPLE BY` means, as a change of the query's syntax tree before DataFusion plans it:
//!
//! ```sql
//! SELECT host, time, avg(v) FROM cpu WHERE … SAMPLE BY 10m
//! -- is planned as
//! SELECT host, tempora_sample_bucket(time, 600000000000, 0, 0, '') AS time, avg(v) AS "avg(v)"
//! FROM cpu WHERE … GROUP BY tempora_sample_bucket(time, …), host ORDER BY time, host
//! ```
//!
//! Rules: the result's `time` is the bucket start (UTC); rows are grouped by the bucket and by
//! every plain column in the select list other than `time` (the tags); without an `ORDER BY`
//! the result is ordered by `time`, then the tags, when `time` is selected. Computed columns are
//! named as written (`avg(v)`) unless aliased. With `FILL`, the grouped query (without its
//! `ORDER BY` and `LIMIT`) becomes the input of a [`crate::nodes::GapFill`] node, and the
//! order and limit apply to the filled rows.
//!
//! The bucket is one function, [`crate::functions::sample_bucket`], whose arguments are the
//! clause's typed values; the operators' rules recognise it like any other bucket spelling.

use datafusion::sql::sqlparser::ast::{
    self, Expr, FunctionArg, FunctionArgExpr, FunctionArgumentList, FunctionArguments, GroupByExpr,
    Ident, ObjectName, OrderBy, OrderByExpr, OrderByKind, OrderByOptions, Query, SelectItem,
    SetExpr, Value,
};

use crate::error::Result;
use crate::functions::sample_bucket::{self, NAME as BUCKET_FN};
use crate::sql::sample_by::{Fill, SampleBy, Width, bad};

/// The sampled query, and what a fill needs to know about it.
#[derive(Debug, Clone)]
pub struct Sampled {
    /// The grouped query; with a fill, without its ORDER BY and LIMIT.
    pub query: Box<Query>,
    pub fill: Option<FillSpec>,
}

/// The fill of a sampled query (see [`crate::nodes::GapFill`]).
#[derive(Debug, Clone)]
pub struct FillSpec {
    pub fill: Fill,
    /// Output names: the tags, the time column, the aggregates.
    pub tags: Vec<String>,
    pub time: String,
    pub aggs: Vec<String>,
    pub width: Width,
    pub offset_ns: i64,
    /// The WHERE's bounds on time: (expression, exclusive).
    pub lower: Option<(Expr, bool)>,
    pub upper: Option<(Expr, bool)>,
    /// The user's ORDER BY and LIMIT, applied to the filled rows.
    pub order_by: Option<OrderBy>,
    pub limit: Option<ast::LimitClause>,
}

/// `q` with `spec` applied (see the module header).
pub fn rewrite(q: &Query, spec: &SampleBy) -> Result<Sampled> {
    if let Some(tz) = &spec.time_zone {
        check_zoned(spec, tz)?;
    }
    let mut query = Box::new(q.clone());
    let SetExpr::Select(select) = query.body.as_mut() else {
        return Err(bad("it applies to a plain SELECT (not UNION or VALUES)"));
    };
    if !matches!(&select.group_by, GroupByExpr::Expressions(e, _) if e.is_empty()) {
        return Err(bad("it replaces GROUP BY; use one or the other"));
    }
    let mut tags: Vec<String> = Vec::new();
    let mut tag_exprs: Vec<Expr> = Vec::new();
    let mut aggs: Vec<String> = Vec::new();
    let mut time: Option<String> = None;
    let mut bucket: Option<Expr> = None;
    for item in &mut select.projection {
        let (expr, alias) = match item {
            SelectItem::UnnamedExpr(e) => (e.clone(), None),
            SelectItem::ExprWithAlias { expr, alias } => (expr.clone(), Some(name(alias))),
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => {
                return Err(bad("list the columns: SELECT * cannot be sampled"));
            }
            other => return Err(bad(format!("unexpected select item {other}"))),
        };
        match column(&expr) {
            Some(c) if c.eq_ignore_ascii_case("time") => {
                let b = bucket_expr(expr.clone(), spec);
                let out = alias.unwrap_or_else(|| "time".into());
                *item = aliased(b.clone(), &out);
                bucket = Some(b);
                time = Some(out);
            }
            Some(c) => {
                tags.push(alias.unwrap_or(c));
                tag_exprs.push(expr);
            }
            None => {
                let out = alias.unwrap_or_else(|| expr.to_string());
                *item = aliased(expr, &out);
                aggs.push(out);
            }
        }
    }
    // Without `time` in the list the rows are still grouped by its bucket.
    let bucket = bucket.unwrap_or_else(|| bucket_expr(Expr::Identifier(Ident::new("time")), spec));
    let mut group = vec![bucket];
    group.extend(tag_exprs);
    select.group_by = GroupByExpr::Expressions(group, vec![]);
    let default_order = time.as_ref().map(|t| {
        let mut keys = vec![t.clone()];
        keys.extend(tags.iter().cloned());
        order_by_names(&keys)
    });
    if spec.fill == Fill::None {
        if query.order_by.is_none() {
            query.order_by = default_order;
        }
        return Ok(Sampled { query, fill: None });
    }
    let Some(time) = time else {
        return Err(bad("FILL needs `time` in the select list"));
    };
    let (lower, upper) = time_bounds(select_where(&query));
    let order_by = query.order_by.take().or(default_order);
    let limit = query.limit_clause.take();
    Ok(Sampled {
        query,
        fill: Some(FillSpec {
            fill: spec.fill.clone(),
            tags,
            time,
            aggs,
            width: spec.width,
            offset_ns: spec.offset_ns,
            lower,
            upper,
            order_by,
            limit,
        }),
    })
}

fn check_zoned(spec: &SampleBy, tz: &str) -> Result<()> {
    sample_bucket::zoned_spec_ok(&bucket_spec(spec, tz))
        .map_err(|e| bad(format!("{e} (got {})", spec.width_text)))
}

fn bucket_spec(spec: &SampleBy, zone: &str) -> sample_bucket::Spec {
    let (width_ns, months) = match spec.width {
        Width::Nanos(n) => (n, 0),
        Width::Months(m) => (0, i64::from(m)),
    };
    sample_bucket::Spec {
        width_ns,
        months,
        offset_ns: spec.offset_ns,
        zone: zone.to_string(),
    }
}

/// `tempora_sample_bucket(<time>, width_ns, months, offset_ns, 'zone')`.
fn bucket_expr(time: Expr, spec: &SampleBy) -> Expr {
    let s = bucket_spec(spec, spec.time_zone.as_deref().unwrap_or(""));
    let num = |n: i64| Expr::Value(Value::Number(n.to_string(), false).into());
    call(
        BUCKET_FN,
        vec![
            time,
            num(s.width_ns),
            num(s.months),
            num(s.offset_ns),
            Expr::Value(Value::SingleQuotedString(s.zone).into()),
        ],
    )
}

/// A call of the function `name` with plain arguments.
pub fn call(name: &str, args: Vec<Expr>) -> Expr {
    Expr::Function(ast::Function {
        name: ObjectName::from(vec![Ident::new(name)]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: args
                .into_iter()
                .map(|e| FunctionArg::Unnamed(FunctionArgExpr::Expr(e)))
                .collect(),
            clauses: vec![],
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: vec![],
    })
}

fn aliased(expr: Expr, name: &str) -> SelectItem {
    SelectItem::ExprWithAlias {
        expr,
        alias: Ident::with_quote('"', name),
    }
}

/// `ORDER BY "a", "b", …` (ascending).
pub fn order_by_names(names: &[String]) -> OrderBy {
    OrderBy {
        kind: OrderByKind::Expressions(
            names
                .iter()
                .map(|n| OrderByExpr {
                    expr: Expr::Identifier(Ident::with_quote('"', n)),
                    options: OrderByOptions {
                        asc: None,
                        nulls_first: None,
                    },
                    with_fill: None,
                })
                .collect(),
        ),
        interpolate: None,
    }
}

/// A name as SQL resolves it: lower-cased unless quoted.
fn name(i: &Ident) -> String {
    crate::sql::ddl::ident_name(i)
}

/// The column a plain reference names (`c`, `t.c`).
fn column(e: &Expr) -> Option<String> {
    match e {
        Expr::Identifier(i) => Some(name(i)),
        Expr::CompoundIdentifier(ids) => ids.last().map(name),
        _ => None,
    }
}

fn select_where(q: &Query) -> Option<&Expr> {
    match q.body.as_ref() {
        SetExpr::Select(s) => s.selection.as_ref(),
        _ => None,
    }
}

type Bound = Option<(Expr, bool)>;

/// The query's own time range from the `AND`ed conditions of its `WHERE` on `time`:
/// (lower, upper), each with whether it is exclusive.
fn time_bounds(selection: Option<&Expr>) -> (Bound, Bound) {
    use ast::BinaryOperator as Op;
    let is_time = |e: &Expr| column(e).is_some_and(|c| c.eq_ignore_ascii_case("time"));
    let (mut lo, mut hi) = (None, None);
    let mut stack: Vec<&Expr> = selection.into_iter().collect();
    while let Some(e) = stack.pop() {
        match e {
            Expr::Nested(inner) => stack.push(inner),
            Expr::BinaryOp {
                left,
                op: Op::And,
                right,
            } => {
                stack.push(left);
                stack.push(right);
            }
            Expr::BinaryOp { left, op, right } if is_time(left) => {
                let v = (**right).clone();
                match op {
                    Op::Gt | Op::GtEq => lo = Some((v, false)),
                    Op::Lt => hi = Some((v, true)),
                    Op::LtEq => hi = Some((v, false)),
                    _ => {}
                }
            }
            Expr::Between {
                expr,
                negated: false,
                low,
                high,
            } if is_time(expr) => {
                lo = Some(((**low).clone(), false));
                hi = Some(((**high).clone(), false));
            }
            _ => {}
        }
    }
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::{Statement, parse};

    fn sampled(sql: &str) -> Result<Sampled> {
        match parse(sql)?.pop() {
            Some(Statement::Query(q)) => rewrite(&q.query, q.sample_by.as_ref().unwrap()),
            other => panic!("{sql}: {other:?}"),
        }
    }

    #[test]
    fn queries_are_grouped_by_the_bucket_and_the_tags() {
        let cases = [
            (
                "tags and time",
                "SELECT host, time, avg(v) FROM cpu WHERE v > 0 SAMPLE BY 1m",
                "SELECT host, tempora_sample_bucket(time, 60000000000, 0, 0, '') AS \"time\", \
                 avg(v) AS \"avg(v)\" FROM cpu WHERE v > 0 GROUP BY \
                 tempora_sample_bucket(time, 60000000000, 0, 0, ''), host ORDER BY \"time\", \"host\"",
            ),
            (
                "own ORDER BY and LIMIT kept",
                "select time as t, max(v) from cpu sample by '10min' order by t desc limit 5",
                "SELECT tempora_sample_bucket(time, 600000000000, 0, 0, '') AS \"t\", max(v) AS \
                 \"max(v)\" FROM cpu GROUP BY tempora_sample_bucket(time, 600000000000, 0, 0, '') \
                 ORDER BY t DESC LIMIT 5",
            ),
            (
                "offset, months, no time selected",
                "SELECT region, count(*) FROM cpu SAMPLE BY 1M ALIGN TO CALENDAR WITH OFFSET '00:15'",
                "SELECT region, count(*) AS \"count(*)\" FROM cpu GROUP BY \
                 tempora_sample_bucket(time, 0, 1, 900000000000, ''), region",
            ),
        ];
        for (name, sql, want) in cases {
            let s = sampled(sql).unwrap();
            assert!(s.fill.is_none(), "{name}");
            assert_eq!(s.query.to_string(), want, "{name}");
        }
    }

    #[test]
    fn a_fill_takes_the_bounds_order_and_limit() {
        let s = sampled(
            "SELECT host, time, avg(v) AS a FROM cpu WHERE time >= '2024-01-01' AND time < $1 \
             SAMPLE BY 1h FILL(PREV) ORDER BY time DESC LIMIT 3",
        )
        .unwrap();
        let f = s.fill.unwrap();
        assert_eq!(
            (f.tags, f.time, f.aggs),
            (vec!["host".into()], "time".into(), vec!["a".into()])
        );
        assert_eq!(
            f.lower.map(|(e, x)| (e.to_string(), x)),
            Some(("'2024-01-01'".into(), false))
        );
        assert_eq!(
            f.upper.map(|(e, x)| (e.to_string(), x)),
            Some(("$1".into(), true))
        );
        assert_eq!(f.order_by.unwrap().to_string(), "ORDER BY time DESC");
        assert!(f.limit.is_some());
        assert!(s.query.order_by.is_none() && s.query.limit_clause.is_none());
    }

    #[test]
    fn refusals_name_the_problem() {
        for (sql, want) in [
            (
                "SELECT avg(v) FROM t SAMPLE BY 1m FILL(PREV)",
                "FILL needs `time`",
            ),
            ("SELECT * FROM t SAMPLE BY 1m", "SELECT *"),
            (
                "SELECT h, avg(v) FROM t GROUP BY h SAMPLE BY 1m",
                "GROUP BY",
            ),
            (
                "SELECT avg(v) FROM t SAMPLE BY 7h ALIGN TO CALENDAR TIME ZONE 'UTC'",
                "must divide a day",
            ),
            (
                "SELECT avg(v) FROM t SAMPLE BY 2d ALIGN TO CALENDAR TIME ZONE 'UTC'",
                "must be 1",
            ),
        ] {
            let e = sampled(sql).unwrap_err().to_string();
            assert!(e.contains(want), "{sql}: {e}");
        }
    }
}
