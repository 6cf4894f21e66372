//! An InfluxQL SELECT as SQL over one measurement, for the front door to plan: aggregates
//! with `GROUP BY time(…)` become `SAMPLE BY` with its fill, grouped tags come first as
//! `"__tag0"`, `"__tag1"`, … and order the rows, time conditions become timestamp literals
//! (`now()` resolved once per request), and tag conditions keep InfluxDB's rule that a
//! missing tag equals `''`.
//!
//! Invariants: a pure function of the statement, the measurement's columns and `now`; every
//! identifier is quoted and every string literal escaped, so no name or value changes the
//! statement's shape; an identifier the measurement lacks reads as NULL, as in InfluxDB.

use super::ast::*;

/// A measurement's columns as the translation needs them.
#[derive(Debug, Clone, Default)]
pub struct Columns {
    pub tags: Vec<String>,
    /// (name, InfluxDB type name: float, integer, unsigned, boolean, string)
    pub fields: Vec<(String, String)>,
}

/// One measurement's part of a SELECT: its SQL and how its rows become series.
#[derive(Debug, Clone, PartialEq)]
pub struct Translated {
    pub sql: String,
    /// Tags the rows are grouped by (their columns are `__tag0`, … in this order).
    pub group_tags: Vec<String>,
    /// The output columns after `time`.
    pub columns: Vec<String>,
    /// For an aggregate without `GROUP BY time`: the time every row is reported at (the
    /// range's start, else 0).
    pub fixed_time: Option<i64>,
    /// Per-series LIMIT and OFFSET, applied while cutting series.
    pub series_limit: Option<(u64, u64)>,
    /// Per output column, a transform applied over each series' rows in time order.
    pub transforms: Vec<Option<Transform>>,
    /// Points before this time (ns) are dropped after the transforms: a derivative reads one
    /// bucket before the range (as InfluxDB does, so that the range's first bucket has a
    /// rate), which is not itself reported. It is the start of the bucket holding the
    /// range's start.
    pub drop_before: Option<i64>,
    /// Points after this time (ns) are dropped after the transforms: in descending order a
    /// derivative reads one bucket after the range instead (InfluxDB widens the end then).
    /// It is the start of the bucket holding the range's last instant.
    pub drop_after: Option<i64>,
}

/// `derivative(agg, unit)` and `non_negative_derivative(agg, unit)`: each bucket's change from
/// the previous bucket with a value, in the order reported, per `unit_ns` of the time
/// between them; the first is left out, and a negative change too when `non_negative`.
/// In descending order (`ORDER BY time DESC`) the previous bucket is the later one, so an
/// increasing series has negative rates, as InfluxDB reports them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Transform {
    pub unit_ns: i64,
    pub non_negative: bool,
    pub descending: bool,
}

/// The rates of `points` ((time ns, value), in the order reported) as [`Transform`]
/// computes them, one per point after the first with a value (`None` where there is none).
pub fn derivative(points: &[(i64, Option<f64>)], t: Transform) -> Vec<Option<f64>> {
    let mut out = vec![None; points.len()];
    let mut prev: Option<(i64, f64)> = None;
    for (i, &(time, v)) in points.iter().enumerate() {
        let Some(v) = v else { continue };
        if let Some((pt, pv)) = prev {
            let elapsed = if t.descending { pt - time } else { time - pt };
            if elapsed > 0 {
                let rate = (v - pv) / (elapsed as f64 / t.unit_ns as f64);
                out[i] = (!t.non_negative || rate >= 0.0).then_some(rate);
            }
        }
        prev = Some((time, v));
    }
    out
}

fn ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// A timestamp literal of `ns` since the epoch.
pub fn time_literal(ns: i64) -> String {
    let t = chrono::DateTime::from_timestamp_nanos(ns);
    format!("'{}'", t.format("%Y-%m-%dT%H:%M:%S%.9fZ"))
}

struct Ctx<'a> {
    cols: &'a Columns,
    now: i64,
    lower: Option<i64>,
    /// The last instant the range holds (ns), when it has an upper bound.
    upper: Option<i64>,
    /// Subtracted from every lower time bound written, or added to every upper one when
    /// `widen_upper` (the bounds recorded are the ones the statement gives).
    widen_ns: i64,
    widen_upper: bool,
}

impl Ctx<'_> {
    fn is_tag(&self, n: &str, hint: &Option<String>) -> bool {
        hint.as_deref() != Some("field") && self.cols.tags.iter().any(|t| t == n)
    }

    fn is_field(&self, n: &str, hint: &Option<String>) -> bool {
        hint.as_deref() != Some("tag") && self.cols.fields.iter().any(|(f, _)| f == n)
    }

    /// A value in a time comparison, in ns.
    fn time_value(&self, e: &Expr) -> Result<i64, String> {
        match e {
            Expr::Now => Ok(self.now),
            Expr::Dur(d) | Expr::Int(d) => Ok(*d),
            Expr::Float(f) => Ok(*f as i64),
            Expr::Str(s) => parse_time(s),
            Expr::Binary(l, op @ ("+" | "-"), r) => {
                let (l, r) = (self.time_value(l)?, self.time_value(r)?);
                Ok(if *op == "+" {
                    l.saturating_add(r)
                } else {
                    l.saturating_sub(r)
                })
            }
            other => Err(format!(
                "invalid operation: time and {other:?} are not compatible"
            )),
        }
    }

    /// A condition as SQL.
    fn cond(&mut self, e: &Expr) -> Result<String, String> {
        match e {
            Expr::Binary(l, op @ ("AND" | "OR"), r) => {
                Ok(format!("({} {op} {})", self.cond(l)?, self.cond(r)?))
            }
            Expr::Binary(l, op, r) if is_time(l) || is_time(r) => {
                let (op, other) = if is_time(l) { (*op, r) } else { (flip(op), l) };
                let ns = self.time_value(other)?;
                let last = match op {
                    "<" => Some(ns.saturating_sub(1)),
                    "<=" | "=" => Some(ns),
                    _ => None,
                };
                if let Some(last) = last {
                    self.upper = Some(self.upper.map_or(last, |u| u.min(last)));
                }
                match op {
                    ">" | ">=" => self.lower = Some(self.lower.map_or(ns, |l| l.max(ns))),
                    "=" => self.lower = Some(ns),
                    _ => {}
                }
                let op = if op == "<>" { "!=" } else { op };
                let written = match op {
                    ">" | ">=" if !self.widen_upper => ns.saturating_sub(self.widen_ns),
                    "<" | "<=" if self.widen_upper => ns.saturating_add(self.widen_ns),
                    _ => ns,
                };
                Ok(format!("\"time\" {op} {}", time_literal(written)))
            }
            Expr::Binary(l, op @ ("=~" | "!~"), r) => {
                let Expr::Regex(re) = r.as_ref() else {
                    return Err(format!("{op} needs a regex on its right"));
                };
                // A tag or field on the left: its SQL is written twice below, so any other
                // operand (`a =~ /x/ =~ /y/ …`) would double the text at each level.
                if !matches!(l.as_ref(), Expr::Var(..)) {
                    return Err(format!("{op} needs a tag or field on its left"));
                }
                let col = self.operand(l)?;
                let matches_empty = regex::Regex::new(re)
                    .map_err(|e| format!("invalid regex /{re}/: {e}"))?
                    .is_match("");
                let sql_op = if *op == "=~" { "~" } else { "!~" };
                let base = format!("{col} {sql_op} {}", literal(re));
                // A missing tag is '': it matches when '' does (=~) or does not (!~).
                let missing_matches = (*op == "=~") == matches_empty;
                Ok(match missing_matches {
                    false => base,
                    true => format!("({base} OR {col} IS NULL)"),
                })
            }
            Expr::Binary(l, op @ ("=" | "!=" | "<>"), r)
                if matches!(r.as_ref(), Expr::Str(_)) && self.tag_var(l) =>
            {
                let Expr::Str(v) = r.as_ref() else {
                    unreachable!()
                };
                let col = self.operand(l)?;
                // A missing tag is '': it equals '' and differs from every other value.
                Ok(match (*op, v.is_empty()) {
                    ("=", false) => format!("{col} = {}", literal(v)),
                    ("=", true) => format!("({col} = '' OR {col} IS NULL)"),
                    (_, true) => format!("{col} <> ''"),
                    (_, false) => format!("({col} <> {} OR {col} IS NULL)", literal(v)),
                })
            }
            Expr::Binary(l, op, r) => {
                let op = if *op == "<>" { "!=" } else { op };
                Ok(format!("({} {op} {})", self.operand(l)?, self.operand(r)?))
            }
            Expr::Bool(b) => Ok(b.to_string().to_uppercase()),
            other => self.operand(other),
        }
    }

    fn tag_var(&self, e: &Expr) -> bool {
        matches!(e, Expr::Var(n, h) if self.is_tag(n, h))
    }

    /// A value or column as SQL.
    fn operand(&mut self, e: &Expr) -> Result<String, String> {
        Ok(match e {
            Expr::Var(n, h) if self.is_tag(n, h) || self.is_field(n, h) => ident(n),
            Expr::Var(..) => "NULL".into(),
            Expr::Int(v) => v.to_string(),
            Expr::Float(v) => format!("{v:?}"),
            Expr::Str(s) => literal(s),
            Expr::Bool(b) => b.to_string().to_uppercase(),
            Expr::Binary(l, op, r) if matches!(*op, "+" | "-" | "*" | "/" | "%") => {
                format!("({} {op} {})", self.operand(l)?, self.operand(r)?)
            }
            Expr::Binary(..) => self.cond(e)?,
            other => return Err(format!("{other:?} is not supported in a condition")),
        })
    }
}

fn is_time(e: &Expr) -> bool {
    matches!(e, Expr::Var(n, _) if n.eq_ignore_ascii_case("time"))
}

fn flip(op: &'static str) -> &'static str {
    match op {
        ">" => "<",
        ">=" => "<=",
        "<" => ">",
        "<=" => ">=",
        o => o,
    }
}

/// A time literal: RFC 3339, or `YYYY-MM-DD[ HH:MM:SS[.f]]` in UTC.
pub fn parse_time(s: &str) -> Result<i64, String> {
    let t = chrono::DateTime::parse_from_rfc3339(s)
        .map(|t| t.to_utc())
        .or_else(|_| {
            chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f").map(|t| t.and_utc())
        })
        .or_else(|_| {
            chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
                .map(|d| d.and_hms_opt(0, 0, 0).expect("midnight").and_utc())
        })
        .map_err(|_| format!("invalid time {s:?}: expected RFC 3339 or YYYY-MM-DD HH:MM:SS"))?;
    t.timestamp_nanos_opt()
        .ok_or_else(|| format!("time {s:?} is out of range"))
}

/// The SQL aggregate for an InfluxQL function over column `c`.
fn aggregate(name: &str, args: &[Expr], ctx: &mut Ctx<'_>) -> Result<String, String> {
    if name == "count"
        && let [Expr::Call(inner, a)] = args
        && inner == "distinct"
    {
        return Ok(format!("count(DISTINCT {})", ctx.operand(arg(name, a)?)?));
    }
    let c = ctx.operand(arg(name, args)?)?;
    Ok(match name {
        "mean" => format!("avg({c})"),
        "median" => format!("median(CAST({c} AS DOUBLE))"),
        "count" | "sum" | "min" | "max" | "first" | "last" => format!("{name}({c})"),
        "spread" => format!("(max({c}) - min({c}))"),
        "stddev" => format!("stddev({c})"),
        other => return Err(format!("function {other}() is not supported yet")),
    })
}

/// Arithmetic over aggregates and constants (`mean(x) * 2 + 1`), at any depth.
fn aggregate_arithmetic(e: &Expr, ctx: &mut Ctx<'_>) -> Result<String, String> {
    match e {
        Expr::Call(n, a) => aggregate(n, a, ctx),
        Expr::Binary(l, op, r) if matches!(*op, "+" | "-" | "*" | "/" | "%") => Ok(format!(
            "({} {op} {})",
            aggregate_arithmetic(l, ctx)?,
            aggregate_arithmetic(r, ctx)?
        )),
        other => ctx.operand(other),
    }
}

fn arg<'e>(name: &str, args: &'e [Expr]) -> Result<&'e Expr, String> {
    match args {
        [a] => Ok(a),
        _ => Err(format!(
            "invalid number of arguments for {name}, expected 1, got {}",
            args.len()
        )),
    }
}

fn has_call(e: &Expr) -> bool {
    match e {
        Expr::Call(..) => true,
        Expr::Binary(l, _, r) => has_call(l) || has_call(r),
        _ => false,
    }
}

/// The output name InfluxDB gives a field: its alias, else its function or variable name.
fn field_name(f: &Field) -> String {
    fn base(e: &Expr) -> String {
        match e {
            Expr::Call(n, _) => n.clone(),
            Expr::Var(n, _) => n.clone(),
            Expr::Binary(l, _, r) => {
                let (l, r) = (base(l), base(r));
                match (l.is_empty(), r.is_empty()) {
                    (false, false) => format!("{l}_{r}"),
                    (false, true) => l,
                    _ => r,
                }
            }
            _ => String::new(),
        }
    }
    f.alias.clone().unwrap_or_else(|| base(&f.expr))
}

/// Raw points with a per-series `LIMIT`/`OFFSET`, limited in SQL rather than after every
/// point is read: `LIMIT 1` as `DISTINCT ON` the series' tags (Grafana's and TSBS's "last
/// point of each host", which the last-value cache answers), others by each point's number
/// in its series. `list` is the select list (`__tag0`, …, `time`, the outputs as `columns`)
/// and `from_where` the statement's FROM and WHERE.
fn raw_per_series(
    list: &[String],
    from_where: &str,
    group_tags: &[String],
    columns: &[String],
    s: &Select,
) -> String {
    let keys: Vec<String> = group_tags.iter().map(|t| ident(t)).collect();
    let keys = keys.join(", ");
    let dir = if s.desc { " DESC" } else { "" };
    let offset = s.offset.unwrap_or(0);
    if s.limit == Some(1) && offset == 0 {
        let by: Vec<String> = group_tags
            .iter()
            .map(|t| format!("{} NULLS FIRST", ident(t)))
            .collect();
        return format!(
            "SELECT DISTINCT ON ({keys}) {}{from_where} ORDER BY {}, \"time\"{dir}",
            list.join(", "),
            by.join(", ")
        );
    }
    let tags = (0..group_tags.len()).map(|i| format!("\"__tag{i}\""));
    let outer: Vec<String> = tags
        .clone()
        .chain(std::iter::once("\"time\"".to_string()))
        .chain(columns.iter().map(|c| ident(c)))
        .collect();
    let order: Vec<String> = tags.map(|t| format!("{t} NULLS FIRST")).collect();
    let upper = s
        .limit
        .map(|l| format!(" AND \"__rn\" <= {}", offset.saturating_add(l)))
        .unwrap_or_default();
    format!(
        "SELECT {} FROM (SELECT {}, row_number() OVER (PARTITION BY {keys} ORDER BY \"time\"{dir}) \
         AS \"__rn\"{from_where}) AS \"__points\" WHERE \"__rn\" > {offset}{upper} ORDER BY {}, \"time\"{dir}",
        outer.join(", "),
        list.join(", "),
        order.join(", ")
    )
}

/// `s` over measurement `name` with columns `cols`, at request time `now` (ns).
pub fn select(s: &Select, name: &str, cols: &Columns, now: i64) -> Result<Translated, String> {
    let mut ctx = Ctx {
        cols,
        now,
        lower: None,
        upper: None,
        widen_ns: 0,
        widen_upper: s.desc,
    };
    let aggregate_query = s.fields.iter().any(|f| has_call(&f.expr));
    if aggregate_query && s.fields.iter().any(|f| !has_call(&f.expr)) {
        return Err("mixing aggregate and non-aggregate queries is not supported".into());
    }
    if s.group_time.is_some() && !aggregate_query {
        return Err("GROUP BY requires at least one aggregate function".into());
    }
    let group_tags: Vec<String> = match &s.group_tags {
        GroupTags::None => Vec::new(),
        GroupTags::All => cols.tags.clone(),
        GroupTags::Names(n) => n
            .iter()
            .filter(|t| cols.tags.contains(t))
            .cloned()
            .collect(),
    };
    // The output columns and their SQL.
    let mut outputs: Vec<(String, String)> = Vec::new();
    let mut transforms: Vec<Option<Transform>> = Vec::new();
    for f in &s.fields {
        if let Expr::Call(name, args) = &f.expr
            && matches!(name.as_str(), "derivative" | "non_negative_derivative")
        {
            let (inner, unit_ns) = match args.as_slice() {
                [inner] => (inner, 1_000_000_000),
                [inner, Expr::Dur(u)] if *u > 0 => (inner, *u),
                _ => {
                    return Err(format!(
                        "invalid arguments to {name}: expected an aggregate and a positive duration"
                    ));
                }
            };
            let Expr::Call(agg, a) = inner else {
                return Err(format!(
                    "{name} of a raw field is not supported yet; use {name}(mean(field), 1s) with GROUP BY time"
                ));
            };
            if s.group_time.is_none() {
                return Err(format!(
                    "{name} of an aggregate requires a GROUP BY time() clause"
                ));
            }
            let sql = aggregate(agg, a, &mut ctx)?;
            outputs.push((f.alias.clone().unwrap_or_else(|| name.clone()), sql));
            transforms.resize(outputs.len() - 1, None);
            transforms.push(Some(Transform {
                unit_ns,
                non_negative: name == "non_negative_derivative",
                descending: s.desc,
            }));
            continue;
        }
        if f.expr == Expr::Star {
            if aggregate_query {
                return Err("mean(*) and other wildcard calls are not supported yet".into());
            }
            let mut names: Vec<&str> = cols.fields.iter().map(|(n, _)| n.as_str()).collect();
            names.extend(
                cols.tags
                    .iter()
                    .map(String::as_str)
                    .filter(|t| !group_tags.iter().any(|g| g == t)),
            );
            names.sort_unstable();
            outputs.extend(names.into_iter().map(|n| (n.to_string(), ident(n))));
            continue;
        }
        let sql = match &f.expr {
            Expr::Call(n, a) => aggregate(n, a, &mut ctx)?,
            e @ Expr::Binary(..) if has_call(e) => aggregate_arithmetic(e, &mut ctx)?,
            other => ctx.operand(other)?,
        };
        outputs.push((field_name(f), sql));
    }
    // Duplicate names get _1, _2 as in InfluxDB.
    let mut seen = std::collections::HashMap::new();
    for (n, _) in &mut outputs {
        let k = seen.entry(n.clone()).or_insert(0);
        if *k > 0 {
            *n = format!("{n}_{k}");
        }
        *k += 1;
    }
    // A derivative's first bucket needs the bucket before it: before the range, or after it
    // in descending order.
    if transforms.iter().any(Option::is_some)
        && let Some((width, _)) = s.group_time
    {
        ctx.widen_ns = width;
    }
    let condition = s.condition.as_ref().map(|c| ctx.cond(c)).transpose()?;
    let mut wheres: Vec<String> = condition.into_iter().collect();
    if s.group_time.is_some() && ctx.upper.is_none() {
        let end = match ctx.widen_upper {
            true => now.saturating_add(ctx.widen_ns),
            false => now,
        };
        wheres.push(format!("\"time\" <= {}", time_literal(end)));
        ctx.upper = Some(now);
    }
    if !aggregate_query {
        let fields: Vec<&String> = outputs
            .iter()
            .filter(|(n, _)| cols.fields.iter().any(|(f, _)| f == n))
            .map(|(_, sql)| sql)
            .collect();
        // Every stored point has a field: selecting all of them needs no filter (and keeps
        // `SELECT * … GROUP BY tags LIMIT 1` on the last-value cache).
        let all = cols
            .fields
            .iter()
            .all(|(f, _)| outputs.iter().any(|(_, sql)| *sql == ident(f)));
        if !fields.is_empty() && !all {
            let any: Vec<String> = fields.iter().map(|f| format!("{f} IS NOT NULL")).collect();
            wheres.push(format!("({})", any.join(" OR ")));
        }
    }
    let tag_cols: Vec<String> = group_tags
        .iter()
        .enumerate()
        .map(|(i, t)| format!("{} AS \"__tag{i}\"", ident(t)))
        .collect();
    let mut select_list = tag_cols.clone();
    // One selector without GROUP BY time reports its point's own time, as in InfluxDB.
    let selector_time = match s.fields.as_slice() {
        [
            Field {
                expr: Expr::Call(f, a),
                ..
            },
        ] if s.group_time.is_none() => {
            let v = ctx.operand(arg(f, a)?)?;
            match f.as_str() {
                "last" => Some(format!("max(\"time\") FILTER (WHERE {v} IS NOT NULL)")),
                "first" => Some(format!("min(\"time\") FILTER (WHERE {v} IS NOT NULL)")),
                "max" | "min" => Some(format!(
                    "first_value(\"time\" ORDER BY {v} {} NULLS LAST, \"time\") FILTER (WHERE {v} IS NOT NULL)",
                    if f == "max" { "DESC" } else { "ASC" }
                )),
                _ => None,
            }
        }
        _ => None,
    };
    if let Some(t) = &selector_time {
        select_list.push(format!("{t} AS \"time\""));
    } else if !aggregate_query || s.group_time.is_some() {
        select_list.push("\"time\"".into());
    }
    select_list.extend(
        outputs
            .iter()
            .map(|(n, sql)| format!("{sql} AS {}", ident(n))),
    );
    let mut from_where = format!(" FROM {}", ident(name));
    if !wheres.is_empty() {
        from_where += &format!(" WHERE {}", wheres.join(" AND "));
    }
    let mut sql = format!("SELECT {}{from_where}", select_list.join(", "));
    let per_series_raw =
        !aggregate_query && !group_tags.is_empty() && (s.limit.is_some() || s.offset.is_some());
    let order_tags: Vec<String> = (0..group_tags.len())
        .map(|i| format!("\"__tag{i}\" NULLS FIRST"))
        .collect();
    let dir = if s.desc { " DESC" } else { "" };
    match s.group_time {
        Some((width, offset)) => {
            if offset != 0 {
                return Err("GROUP BY time with an offset is not supported yet".into());
            }
            let fill = match &s.fill {
                Fill::Null => "NULL".to_string(),
                Fill::None => "NONE".into(),
                Fill::Previous => "PREV".into(),
                Fill::Linear => "LINEAR".into(),
                Fill::Value(v) => format!("{v:?}"),
            };
            sql += &format!(" SAMPLE BY {width}ns FILL({fill})");
            let mut order = order_tags;
            order.push(format!("\"time\"{dir}"));
            sql += &format!(" ORDER BY {}", order.join(", "));
        }
        None if aggregate_query => {
            if !group_tags.is_empty() {
                let g: Vec<String> = (0..group_tags.len())
                    .map(|i| format!("\"__tag{i}\""))
                    .collect();
                sql += &format!(
                    " GROUP BY {} ORDER BY {}",
                    g.join(", "),
                    order_tags.join(", ")
                );
            }
        }
        None if per_series_raw => {
            let names: Vec<String> = outputs.iter().map(|(n, _)| n.clone()).collect();
            sql = raw_per_series(&select_list, &from_where, &group_tags, &names, s);
        }
        None => {
            let mut order = order_tags;
            order.push(format!("\"time\"{dir}"));
            // Points of one time from several series come in series-key order, as InfluxDB
            // merges them (a key lists its tags by name).
            order.extend(
                cols.tags
                    .iter()
                    .filter(|t| !group_tags.contains(t))
                    .map(|t| format!("{} NULLS LAST", ident(t))),
            );
            sql += &format!(" ORDER BY {}", order.join(", "));
        }
    }
    let series_limit = if per_series_raw {
        None // limited in SQL
    } else if group_tags.is_empty() && ctx.widen_ns == 0 {
        if let Some(l) = s.limit {
            sql += &format!(" LIMIT {l}");
        }
        if let Some(o) = s.offset {
            sql += &format!(" OFFSET {o}");
        }
        None
    } else {
        (s.limit.is_some() || s.offset.is_some())
            .then(|| (s.limit.unwrap_or(u64::MAX), s.offset.unwrap_or(0)))
    };
    let columns_len = outputs.len();
    Ok(Translated {
        sql,
        group_tags,
        columns: outputs.into_iter().map(|(n, _)| n).collect(),
        transforms: {
            let mut t = transforms;
            t.resize(columns_len, None);
            t
        },
        fixed_time: (aggregate_query && s.group_time.is_none() && selector_time.is_none())
            .then_some(ctx.lower.unwrap_or(0)),
        series_limit,
        // The bucket holding the range's start is the first reported (its end the last).
        drop_before: (ctx.widen_ns > 0 && !ctx.widen_upper)
            .then(|| ctx.lower.map(|l| l.div_euclid(ctx.widen_ns) * ctx.widen_ns))
            .flatten(),
        drop_after: (ctx.widen_ns > 0 && ctx.widen_upper)
            .then(|| ctx.upper.map(|u| u.div_euclid(ctx.widen_ns) * ctx.widen_ns))
            .flatten(),
    })
}
