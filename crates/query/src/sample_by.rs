//! `SAMPLE BY` (Lindorm, QuestDB), rewritten into standard SQL before planning:
//!
//! ```sql
//! SELECT host, time, avg(v) FROM cpu WHERE … SAMPLE BY 10m [ALIGN TO CALENDAR [WITH OFFSET '00:15']]
//! -- becomes
//! SELECT host, date_bin(INTERVAL '10 minutes', time, TIMESTAMP '1970-01-01T00:00:00Z') AS time, avg(v)
//! FROM cpu WHERE … GROUP BY <that bucket>, host ORDER BY time, host
//! ```
//!
//! Rules: the result's `time` is the bucket start (UTC); rows are grouped by the bucket and by
//! every plain column in the select list other than `time` (the tags); without an `ORDER BY`
//! the result is ordered by `time`, then the tags, when `time` is selected. Computed columns
//! are named as written (`avg(v)`) unless aliased. The width is `<n><unit>` with
//! unit `s`, `m`, `h`, `d`, `w`, `M` (months) or `y`, or a quoted interval (`'10min'`,
//! `'1 hour'`). `ALIGN TO CALENDAR` (the default) aligns buckets to the epoch in UTC,
//! `WITH OFFSET 'hh:mm'` shifts them.
//!
//! `FILL(NONE | NULL | PREV | LINEAR | <number>)` fills empty buckets (see [`crate::fill`]).
//!
//! `ALIGN TO CALENDAR TIME ZONE 'Europe/Oslo'` buckets by that zone's local calendar (see
//! [`zoned_bucket`]); the result's `time` is still the bucket start in UTC.
//!
//! Not yet: `ALIGN TO FIRST OBSERVATION`, `FILL` with `TIME ZONE`; each is refused naming
//! it rather than ignored.

use datafusion::sql::sqlparser::ast::{Expr, Ident, SelectItem, SetExpr, Statement};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;

use crate::error::{QueryError, Result};
pub use crate::fill::Fill;
use crate::fill::{Bound, Columns};
use crate::sql_text::{find_keywords, quote};

/// What the `SAMPLE BY` clause said.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleBy {
    /// An interval literal's text, e.g. `10 minutes`.
    pub width: String,
    /// Bucket origin, RFC 3339.
    pub origin: String,
    pub fill: Fill,
    /// `ALIGN TO CALENDAR TIME ZONE 'zone'`: buckets follow that zone's local calendar.
    pub time_zone: Option<String>,
    /// The `WITH OFFSET` in nanoseconds (also part of `origin`).
    pub offset_ns: i64,
}

/// Rewrites a statement with `SAMPLE BY`; `None` when it has none.
pub fn rewrite(sql: &str) -> Result<Option<String>> {
    let Some(at) = find_keywords(sql, &["SAMPLE", "BY"], 0) else {
        return Ok(None);
    };
    if paren_depth(sql, at.0) > 0 {
        return Err(bad(
            "it belongs to the outermost SELECT; a subquery cannot use it (move SAMPLE BY out, \
             or write the subquery with date_bin and GROUP BY)",
        ));
    }
    let clause_start = at.1;
    let clause_end = ["ORDER", "LIMIT", ";"]
        .iter()
        .filter_map(|k| find_keywords(sql, &[k], clause_start).map(|p| p.0))
        .min()
        .unwrap_or(sql.len());
    let spec = parse_clause(&sql[clause_start..clause_end])?;
    let rest = format!("{} {}", &sql[..at.0], &sql[clause_end..]);
    rewrite_query(&rest, &spec).map(Some)
}

/// How many parentheses (outside quotes and comments) are open at byte `at`.
fn paren_depth(sql: &str, at: usize) -> i64 {
    let mut depth = 0;
    let mut i = 0;
    while let Some((s, e)) = [&["("], &[")"]]
        .iter()
        .filter_map(|k| find_keywords(&sql[..at], *k, i))
        .min()
    {
        depth += if &sql[s..e] == "(" { 1 } else { -1 };
        i = e;
    }
    depth
}

fn bad(msg: impl Into<String>) -> QueryError {
    QueryError::Sql(format!("SAMPLE BY: {}", msg.into()))
}

/// Parses `10m [FILL(NONE)] [ALIGN TO CALENDAR [WITH OFFSET 'hh:mm']]`.
pub fn parse_clause(clause: &str) -> Result<SampleBy> {
    let mut words = tokens(clause).into_iter().peekable();
    let width = match words.next() {
        None => return Err(bad("a bucket width is required, e.g. SAMPLE BY 1m")),
        Some(w) if w.starts_with('\'') => w.trim_matches('\'').to_string(),
        Some(w) => width_interval(&w)?,
    };
    let mut origin = "1970-01-01T00:00:00Z".to_string();
    let mut fill = Fill::None;
    let mut time_zone = None;
    let mut offset_ns = 0;
    while let Some(w) = words.next() {
        match w.to_ascii_uppercase().as_str() {
            "FILL(NONE)" => fill = Fill::None,
            "FILL(NULL)" => fill = Fill::Null,
            "FILL(PREV)" => fill = Fill::Prev,
            "FILL(LINEAR)" => fill = Fill::Linear,
            f if f.starts_with("FILL(") && f.ends_with(')') => {
                let v = w[5..w.len() - 1].trim();
                if !v.parse::<f64>().is_ok_and(f64::is_finite) {
                    return Err(bad(format!(
                        "{w}: FILL takes NONE, NULL, PREV, LINEAR or a number"
                    )));
                }
                fill = Fill::Value(v.to_string());
            }
            "ALIGN" => {
                let to = words.next().unwrap_or_default().to_ascii_uppercase();
                let what = words.next().unwrap_or_default().to_ascii_uppercase();
                if to != "TO" || what != "CALENDAR" {
                    return Err(bad(format!(
                        "ALIGN TO {what} is not supported; only ALIGN TO CALENDAR"
                    )));
                }
            }
            "WITH" => {
                let kw = words.next().unwrap_or_default();
                let off = words.next().unwrap_or_default();
                if !kw.eq_ignore_ascii_case("OFFSET") {
                    return Err(bad(format!("expected WITH OFFSET, got WITH {kw}")));
                }
                let (h, m) = parse_offset(off.trim_matches('\''))?;
                origin = format!("1970-01-01T{h:02}:{m:02}:00Z");
                offset_ns = (i64::from(h) * 3600 + i64::from(m) * 60) * 1_000_000_000;
            }
            "TIME" => {
                let kw = words.next().unwrap_or_default();
                let zone = words.next().unwrap_or_default();
                if !kw.eq_ignore_ascii_case("ZONE") || !zone.starts_with('\'') {
                    return Err(bad("expected TIME ZONE 'Area/City'"));
                }
                time_zone = Some(zone_name(zone.trim_matches('\''))?);
            }
            _ => return Err(bad(format!("unexpected {w:?}"))),
        }
    }
    if time_zone.is_some() && fill != Fill::None {
        return Err(bad("FILL with TIME ZONE is not supported yet"));
    }
    Ok(SampleBy {
        width,
        origin,
        fill,
        time_zone,
        offset_ns,
    })
}

/// A time-zone name as arrow takes it (`Europe/Oslo`, `UTC`, `+05:30`); refuses anything
/// that could break out of the SQL string it is placed in.
fn zone_name(z: &str) -> Result<String> {
    let ok = !z.is_empty()
        && z.len() <= 64
        && z.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/_+-:".contains(c));
    if !ok {
        return Err(bad(format!("{z:?} is not a time zone name")));
    }
    z.parse::<arrow::array::timezone::Tz>()
        .map_err(|e| bad(format!("unknown time zone {z:?}: {e}")))?;
    Ok(z.to_string())
}

/// The bucket start of `time` in zone `tz`'s local calendar, as a UTC timestamp. A width of
/// one day, week, month or year starts at local midnight (a DST day has 23 or 25 hours);
/// a width that divides a day counts from local midnight plus the offset.
fn zoned_bucket(width: &str, tz: &str, offset_ns: i64) -> Result<String> {
    let local = format!("arrow_cast(time, 'Timestamp(Nanosecond, Some(\"{tz}\"))')");
    let utc = |e: String| format!("arrow_cast({e}, 'Timestamp(Nanosecond, Some(\"UTC\"))')");
    let (n, unit) = width
        .split_once(' ')
        .and_then(|(n, u)| Some((n.parse::<i64>().ok()?, u)))
        .ok_or_else(|| {
            bad(format!(
                "width {width:?}: use a short width such as 1h with TIME ZONE"
            ))
        })?;
    let calendar = match unit {
        "days" => Some("day"),
        "weeks" => Some("week"),
        "months" => Some("month"),
        "years" => Some("year"),
        _ => None,
    };
    if let Some(field) = calendar {
        if n != 1 || offset_ns != 0 {
            return Err(bad(format!(
                "with TIME ZONE, a {unit} width must be 1 and without an offset"
            )));
        }
        return Ok(utc(format!("date_trunc('{field}', {local})")));
    }
    let secs = match unit {
        "seconds" => n,
        "minutes" => n * 60,
        "hours" => n * 3600,
        _ => return Err(bad(format!("unknown unit in width {width:?}"))),
    };
    if secs <= 0 || 86_400 % secs != 0 {
        return Err(bad(format!(
            "with TIME ZONE, the width must divide a day (got {width})"
        )));
    }
    let w = secs * 1_000_000_000;
    let day = format!("arrow_cast(date_trunc('day', {local}), 'Int64')");
    let rel = format!("(arrow_cast(time, 'Int64') - {day} - {offset_ns})");
    Ok(utc(format!(
        "{day} + {offset_ns} + {rel} - ((({rel} % {w}) + {w}) % {w})"
    )))
}

/// `10m` → `10 minutes`.
pub fn width_interval(w: &str) -> Result<String> {
    let split = w
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| bad(format!("width {w:?} has no unit (s, m, h, d, w, M, y)")))?;
    let (n, unit) = w.split_at(split);
    let n: u64 = n
        .parse()
        .map_err(|_| bad(format!("width {w:?} must start with a whole number")))?;
    if n == 0 {
        return Err(bad("the bucket width must be positive"));
    }
    let unit = match unit {
        "s" => "seconds",
        "m" | "min" => "minutes",
        "h" => "hours",
        "d" => "days",
        "w" => "weeks",
        "M" => "months",
        "y" => "years",
        u => return Err(bad(format!("unknown unit {u:?} in width {w:?}"))),
    };
    Ok(format!("{n} {unit}"))
}

/// `'00:15'` → (0, 15): hours below 24, minutes below 60.
fn parse_offset(off: &str) -> Result<(u32, u32)> {
    off.split_once(':')
        .and_then(|(h, m)| Some((h.parse::<u32>().ok()?, m.parse::<u32>().ok()?)))
        .filter(|(h, m)| *h < 24 && *m < 60)
        .ok_or_else(|| bad(format!("offset {off:?} must be 'hh:mm'")))
}

/// Words of the clause; a quoted string and a `FILL(…)` stay whole.
fn tokens(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let (mut quoted, mut depth) = (false, 0);
    for c in s.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                cur.push(c);
            }
            '(' if !quoted => {
                depth += 1;
                cur.push(c);
            }
            ')' if !quoted => {
                depth -= 1;
                cur.push(c);
            }
            c if c.is_whitespace() && !quoted && depth == 0 => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c if c.is_whitespace() && !quoted => {}
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The last part of a column reference, if `e` is one.
fn column_ident(e: &Expr) -> Option<&Ident> {
    match e {
        Expr::Identifier(id) => Some(id),
        Expr::CompoundIdentifier(ids) => ids.last(),
        _ => None,
    }
}

fn column_name(e: &Expr) -> Option<String> {
    column_ident(e).map(ident_name)
}

/// A name as DataFusion resolves it: unquoted identifiers are lowercased.
fn ident_name(id: &Ident) -> String {
    match id.quote_style {
        None => id.value.to_lowercase(),
        Some(_) => id.value.clone(),
    }
}

fn rewrite_query(sql: &str, spec: &SampleBy) -> Result<String> {
    let dialect = PostgreSqlDialect {};
    let parse =
        |s: &str| Parser::parse_sql(&dialect, s).map_err(|e| QueryError::Sql(e.to_string()));
    let mut stmts = parse(sql)?;
    let [Statement::Query(query)] = stmts.as_mut_slice() else {
        return Err(bad("it applies to one SELECT statement"));
    };
    let SetExpr::Select(select) = query.body.as_mut() else {
        return Err(bad("it applies to a plain SELECT (not UNION or VALUES)"));
    };
    let bucket = match &spec.time_zone {
        Some(tz) => zoned_bucket(&spec.width, tz, spec.offset_ns)?,
        None => format!(
            "date_bin(INTERVAL '{}', time, TIMESTAMP '{}')",
            spec.width.replace('\'', "''"),
            spec.origin
        ),
    };
    let mut tags = Vec::new();
    let mut cols = Columns {
        tags: Vec::new(),
        time: String::new(),
        aggs: Vec::new(),
        order: Vec::new(),
    };
    let mut time_selected = false;
    for item in &mut select.projection {
        let (expr, alias) = match item {
            SelectItem::UnnamedExpr(e) => (e, None),
            SelectItem::ExprWithAlias { expr, alias } => (expr, Some(ident_name(alias))),
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..) => {
                return Err(bad("list the columns: SELECT * cannot be sampled"));
            }
            _ => continue,
        };
        match column_ident(expr).map(ident_name).as_deref() {
            Some(c) if c.eq_ignore_ascii_case("time") => {
                time_selected = true;
                let alias = alias.unwrap_or_else(|| "time".into());
                *item = parse_item(&format!("{bucket} AS {}", quote(&alias)))?;
                cols.order.push(alias.clone());
                cols.time = alias;
            }
            Some(c) => {
                let name = alias.unwrap_or_else(|| c.to_string());
                cols.order.push(name.clone());
                cols.tags.push(name);
                tags.push(expr.to_string());
            }
            None => {
                // Named, so that a fill can refer to it: its alias, or its text.
                let name = alias.unwrap_or_else(|| expr.to_string());
                *item = parse_item(&format!("{expr} AS {}", quote(&name)))?;
                cols.order.push(name.clone());
                cols.aggs.push(name);
            }
        }
    }
    let group = std::iter::once(bucket.clone())
        .chain(tags.iter().cloned())
        .collect::<Vec<_>>()
        .join(", ");
    let order = std::iter::once(quote(if cols.time.is_empty() {
        "time"
    } else {
        &cols.time
    }))
    .chain(cols.tags.iter().map(|t| quote(t)))
    .collect::<Vec<_>>()
    .join(", ");
    let template = parse(&format!(
        "SELECT 1 FROM x GROUP BY {group} ORDER BY {order}"
    ))?;
    let Some(Statement::Query(t)) = template.into_iter().next() else {
        unreachable!("the template is a query");
    };
    if !matches!(&select.group_by, datafusion::sql::sqlparser::ast::GroupByExpr::Expressions(e, _) if e.is_empty())
    {
        return Err(bad("it replaces GROUP BY; use one or the other"));
    }
    let SetExpr::Select(ts) = *t.body else {
        unreachable!("the template is a SELECT");
    };
    select.group_by = ts.group_by;
    if spec.fill != Fill::None {
        if !time_selected {
            return Err(bad("FILL needs `time` in the select list"));
        }
        let bounds = time_bounds(select.selection.as_ref());
        let tail = format!(
            "{}{}",
            query
                .order_by
                .take()
                .map(|o| o.to_string())
                .unwrap_or_default(),
            query
                .limit_clause
                .take()
                .map(|l| l.to_string())
                .unwrap_or_default()
        );
        return Ok(crate::fill::wrap(
            &query.to_string(),
            &cols,
            &bounds,
            spec,
            &tail,
        ));
    }
    if query.order_by.is_none() && time_selected {
        query.order_by = t.order_by;
    }
    Ok(query.to_string())
}

/// The query's own time range from the `AND`ed conditions of its `WHERE` on `time`:
/// (lower, upper), each with whether it is exclusive.
fn time_bounds(selection: Option<&Expr>) -> (Bound, Bound) {
    use datafusion::sql::sqlparser::ast::BinaryOperator as Op;
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
            Expr::BinaryOp { left, op, right }
                if column_name(left).is_some_and(|c| c.eq_ignore_ascii_case("time")) =>
            {
                let v = right.to_string();
                match op {
                    Op::Gt => lo = Some((v, false)),
                    Op::GtEq => lo = Some((v, false)),
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
            } if column_name(expr).is_some_and(|c| c.eq_ignore_ascii_case("time")) => {
                lo = Some((low.to_string(), false));
                hi = Some((high.to_string(), false));
            }
            _ => {}
        }
    }
    (lo, hi)
}

fn parse_item(text: &str) -> Result<SelectItem> {
    let q = Parser::parse_sql(&PostgreSqlDialect {}, &format!("SELECT {text}"))
        .map_err(|e| QueryError::Sql(e.to_string()))?;
    match q.into_iter().next() {
        Some(Statement::Query(q)) => match *q.body {
            SetExpr::Select(s) => Ok(s.projection.into_iter().next().expect("one item")),
            _ => unreachable!("a SELECT"),
        },
        _ => unreachable!("a query"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_without_sample_by_are_left_alone() {
        for sql in [
            "SELECT 1",
            "SELECT 'SAMPLE BY 1m' FROM t",
            "SELECT sample, by FROM t -- SAMPLE BY 1m",
            "SELECT resample_by FROM t",
            "SELECT by, temperatur FROM \"måling\"",
            "SELECT ålatest on FROM t",
            "SELECT x FROM t WHERE y = 'ø' -- sample by 1m ø",
            "SELECT x FROM t /* SAMPLE BY 1m */",
            "SELECT 'it''s SAMPLE BY 1m' FROM t",
        ] {
            assert_eq!(rewrite(sql).unwrap(), None, "{sql}");
        }
    }

    #[test]
    fn rewrites() {
        let origin = "TIMESTAMP '1970-01-01T00:00:00Z'";
        for (name, sql, want) in [
            (
                "tags and time",
                "SELECT host, time, avg(v) FROM cpu WHERE v > 0 SAMPLE BY 1m",
                format!(
                    "SELECT host, date_bin(INTERVAL '1 minutes', time, {origin}) AS \"time\", avg(v) AS \"avg(v)\" \
                     FROM cpu WHERE v > 0 GROUP BY date_bin(INTERVAL '1 minutes', time, {origin}), host \
                     ORDER BY \"time\", \"host\""
                ),
            ),
            (
                "quoted width, own ORDER BY and LIMIT kept",
                "select time as t, max(v) from cpu sample by '10min' order by t desc limit 5",
                format!(
                    "SELECT date_bin(INTERVAL '10min', time, {origin}) AS \"t\", max(v) AS \"max(v)\" FROM cpu \
                     GROUP BY date_bin(INTERVAL '10min', time, {origin}) ORDER BY t DESC LIMIT 5"
                ),
            ),
            (
                "offset, no time selected",
                "SELECT region, count(*) FROM cpu SAMPLE BY 1h ALIGN TO CALENDAR WITH OFFSET '00:15';",
                "SELECT region, count(*) AS \"count(*)\" FROM cpu GROUP BY date_bin(INTERVAL '1 hours', time, \
                 TIMESTAMP '1970-01-01T00:15:00Z'), region"
                    .to_string(),
            ),
        ] {
            assert_eq!(
                rewrite(sql).unwrap().as_deref(),
                Some(want.as_str()),
                "{name}"
            );
        }
    }

    #[test]
    fn refusals_name_the_problem() {
        for (sql, want) in [
            ("SELECT avg(v) FROM t SAMPLE BY", "width is required"),
            ("SELECT avg(v) FROM t SAMPLE BY 10", "no unit"),
            ("SELECT avg(v) FROM t SAMPLE BY 0m", "positive"),
            ("SELECT avg(v) FROM t SAMPLE BY 1q", "unknown unit"),
            (
                "SELECT avg(v) FROM t SAMPLE BY 1m FILL(PREV)",
                "FILL needs `time`",
            ),
            (
                "SELECT time, avg(v) FROM t SAMPLE BY 1m FILL(MAYBE)",
                "FILL takes NONE, NULL",
            ),
            (
                "SELECT avg(v) FROM t SAMPLE BY 1m ALIGN TO FIRST OBSERVATION",
                "ALIGN TO FIRST",
            ),
            (
                "SELECT avg(v) FROM t SAMPLE BY 1m ALIGN TO CALENDAR TIME ZONE 'Mars/Olympus'",
                "unknown time zone",
            ),
            (
                "SELECT avg(v) FROM t SAMPLE BY 1m ALIGN TO CALENDAR TIME ZONE 'x'') --'",
                "not a time zone name",
            ),
            (
                "SELECT avg(v) FROM t SAMPLE BY 7h ALIGN TO CALENDAR TIME ZONE 'UTC'",
                "must divide a day",
            ),
            (
                "SELECT avg(v) FROM t SAMPLE BY 2d ALIGN TO CALENDAR TIME ZONE 'UTC'",
                "must be 1",
            ),
            (
                "SELECT avg(v) FROM t SAMPLE BY 1h FILL(PREV) ALIGN TO CALENDAR TIME ZONE 'UTC'",
                "FILL with TIME ZONE",
            ),
            (
                "SELECT avg(v) FROM t SAMPLE BY 1m WITH OFFSET '25:00'",
                "'hh:mm'",
            ),
            ("SELECT * FROM t SAMPLE BY 1m", "SELECT *"),
            (
                "SELECT h, avg(v) FROM t GROUP BY h SAMPLE BY 1m",
                "GROUP BY",
            ),
        ] {
            let e = rewrite(sql).unwrap_err().to_string();
            assert!(e.contains(want), "{sql}: {e}");
        }
    }
}
