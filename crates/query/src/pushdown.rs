//! Which filters a Tempora scan can use, as plain functions over DataFusion expressions.
//!
//! A time comparison with a timestamp literal narrows the scan's time range. A predicate
//! over tag columns only (`=`, `!=`, `IN`, `NOT IN`, `~`, `!~`, `~*`, `!~*`, `LIKE`,
//! `ILIKE`, `IS [NOT] NULL`, and `AND` / `OR` / `NOT` of those) becomes an index
//! [`Matcher`], so the series are chosen before any data is read.
//!
//! A numeric comparison of a field with a number becomes a [`FieldBound`], which the scan
//! applies before it decodes the rows' tags.
//!
//! Invariant: what is pushed selects a superset of the rows the filter keeps. Every pushed
//! filter is reported `Inexact`, so DataFusion still evaluates it on what the scan returns;
//! a superset is therefore always correct, only slower. (`NOT` relies on this: the index's
//! complement also holds series without the tag, which SQL's NULL logic drops.)

use datafusion::common::ScalarValue;
use datafusion::logical_expr::expr::Like;
use datafusion::logical_expr::{BinaryExpr, Expr, Operator};
use tempora_storage::{BoundOp, FieldBound, Matcher, ScanRequest};

/// `e` with each typed parameter replaced by a value of its type (for deciding what a filter
/// will push once its parameters are bound; the values themselves mean nothing).
pub fn with_sample_values(e: &Expr) -> std::borrow::Cow<'_, Expr> {
    use datafusion::common::tree_node::{Transformed, TreeNode};
    use datafusion::logical_expr::expr::Placeholder;
    if !e
        .exists(|x| Ok(matches!(x, Expr::Placeholder(_))))
        .unwrap_or(false)
    {
        return std::borrow::Cow::Borrowed(e);
    }
    let out = e
        .clone()
        .transform_up(|x| match &x {
            Expr::Placeholder(Placeholder { field: Some(f), .. }) => {
                let v = match f.data_type() {
                    arrow::datatypes::DataType::Utf8 => ScalarValue::Utf8(Some(String::new())),
                    arrow::datatypes::DataType::Timestamp(_, tz) => {
                        ScalarValue::TimestampNanosecond(Some(0), tz.clone())
                    }
                    t => ScalarValue::new_zero(t).unwrap_or(ScalarValue::Null),
                };
                Ok(Transformed::yes(Expr::Literal(v, None)))
            }
            _ => Ok(Transformed::no(x)),
        })
        .map(|t| t.data)
        .unwrap_or_else(|_| e.clone());
    std::borrow::Cow::Owned(out)
}

/// What one filter tells the scan.
#[derive(Debug)]
pub enum Pushed {
    /// Inclusive start, exclusive end (ns).
    Time(i64, i64),
    Tag(Matcher),
    /// A numeric comparison of a (non-tag) column, as a bound that keeps a superset.
    Field(FieldBound),
}

/// A timestamp literal in nanoseconds.
pub fn ts_nanos(v: &ScalarValue) -> Option<i64> {
    match v {
        ScalarValue::TimestampNanosecond(Some(x), _) => Some(*x),
        ScalarValue::TimestampMicrosecond(Some(x), _) => x.checked_mul(1_000),
        ScalarValue::TimestampMillisecond(Some(x), _) => x.checked_mul(1_000_000),
        ScalarValue::TimestampSecond(Some(x), _) => x.checked_mul(1_000_000_000),
        _ => None,
    }
}

pub fn column_name(e: &Expr) -> Option<&str> {
    match e {
        Expr::Column(c) => Some(c.name.as_str()),
        Expr::Cast(c) => column_name(&c.expr),
        _ => None,
    }
}

fn literal(e: &Expr) -> Option<&ScalarValue> {
    match e {
        Expr::Literal(v, _) => Some(v),
        _ => None,
    }
}

fn string(e: &Expr) -> Option<&str> {
    match literal(e)? {
        ScalarValue::Utf8(Some(s)) | ScalarValue::LargeUtf8(Some(s)) => Some(s),
        ScalarValue::Utf8View(Some(s)) => Some(s),
        _ => None,
    }
}

/// Splits `a op b` into (column, op, literal), swapping sides when the column is on the right.
fn column_op_literal(b: &BinaryExpr) -> Option<(&str, Operator, &Expr)> {
    match (column_name(&b.left), literal(&b.right)) {
        (Some(c), Some(_)) => Some((c, b.op, &b.right)),
        _ => Some((column_name(&b.right)?, b.op.swap()?, &b.left)),
    }
}

/// The time range a comparison of `time` with a literal keeps.
pub(crate) fn time_range(op: Operator, t: i64) -> Option<(i64, i64)> {
    match op {
        Operator::GtEq => Some((t, i64::MAX)),
        Operator::Gt => Some((t.checked_add(1)?, i64::MAX)),
        Operator::Lt => Some((i64::MIN, t)),
        Operator::LtEq => Some((i64::MIN, t.checked_add(1)?)),
        Operator::Eq => Some((t, t.checked_add(1)?)),
        _ => None,
    }
}

/// What `e` tells a scan of a table whose tag columns `is_tag` recognises.
pub fn classify(e: &Expr, is_tag: &dyn Fn(&str) -> bool) -> Option<Pushed> {
    match e {
        Expr::BinaryExpr(b) => {
            if let Some((col, op, v)) = column_op_literal(b)
                && col == tempora_model::TIME_COLUMN
            {
                let (s, e) = time_range(op, ts_nanos(literal(v)?)?)?;
                return Some(Pushed::Time(s, e));
            }
            if let Some(m) = tag_matcher(e, is_tag) {
                return Some(Pushed::Tag(m));
            }
            field_bound(b, is_tag).map(Pushed::Field)
        }
        Expr::Between(b) if !b.negated && column_name(&b.expr) == Some("time") => {
            let lo = ts_nanos(literal(&b.low)?)?;
            let hi = ts_nanos(literal(&b.high)?)?;
            Some(Pushed::Time(lo, hi.checked_add(1)?))
        }
        e => tag_matcher(e, is_tag).map(Pushed::Tag),
    }
}

/// `field op number` (either way round) as a [`FieldBound`]: `>`/`>=` → at least, `<`/`<=`
/// → at most, `=` → equal. Not for `time` or tags; a column that is not a numeric field is
/// ignored by the scan.
fn field_bound(b: &BinaryExpr, is_tag: &dyn Fn(&str) -> bool) -> Option<FieldBound> {
    // Only a bare column or a cast to Float64 (exact for floats, monotone for integers): a
    // narrowing cast (`CAST(v AS BIGINT) = 5` keeps 5.7) would make the bound drop rows.
    let plain = |e: &Expr| match e {
        Expr::Column(_) => true,
        Expr::Cast(c) => {
            c.field.data_type() == &arrow::datatypes::DataType::Float64
                && matches!(*c.expr, Expr::Column(_))
        }
        _ => false,
    };
    if !plain(&b.left) && !plain(&b.right) {
        return None;
    }
    let (col, op, v) = column_op_literal(b)?;
    if col == tempora_model::TIME_COLUMN || is_tag(col) {
        return None;
    }
    let value = match literal(v)? {
        ScalarValue::Float64(Some(x)) => *x,
        ScalarValue::Float32(Some(x)) => *x as f64,
        ScalarValue::Int64(Some(x)) => *x as f64,
        ScalarValue::Int32(Some(x)) => *x as f64,
        ScalarValue::Int16(Some(x)) => *x as f64,
        ScalarValue::Int8(Some(x)) => *x as f64,
        ScalarValue::UInt64(Some(x)) => *x as f64,
        ScalarValue::UInt32(Some(x)) => *x as f64,
        _ => return None,
    };
    let op = match op {
        Operator::Gt | Operator::GtEq => BoundOp::AtLeast,
        Operator::Lt | Operator::LtEq => BoundOp::AtMost,
        Operator::Eq => BoundOp::Equal,
        _ => return None,
    };
    (!value.is_nan()).then(|| FieldBound {
        field: col.to_string(),
        op,
        value,
    })
}

/// The index matcher for a predicate over tag columns only; `None` when `e` is not one.
pub fn tag_matcher(e: &Expr, is_tag: &dyn Fn(&str) -> bool) -> Option<Matcher> {
    let tag = |c: Option<&str>| c.filter(|c| is_tag(c)).map(str::to_string);
    match e {
        Expr::BinaryExpr(b) => match b.op {
            Operator::And | Operator::Or => {
                let l = tag_matcher(&b.left, is_tag)?;
                let r = tag_matcher(&b.right, is_tag)?;
                Some(if b.op == Operator::And {
                    Matcher::And(vec![l, r])
                } else {
                    Matcher::Or(vec![l, r])
                })
            }
            _ => {
                let (col, op, v) = column_op_literal(b)?;
                let (col, v) = (tag(Some(col))?, string(v)?.to_string());
                match op {
                    Operator::Eq => Some(Matcher::Eq(col, v)),
                    Operator::NotEq => Some(Matcher::NotEq(col, v)),
                    Operator::RegexMatch => Matcher::regex(col, &v).ok(),
                    Operator::RegexIMatch => Matcher::regex(col, &format!("(?i){v}")).ok(),
                    Operator::RegexNotMatch => Matcher::not_regex(col, &v).ok(),
                    Operator::RegexNotIMatch => Matcher::not_regex(col, &format!("(?i){v}")).ok(),
                    _ => None,
                }
            }
        },
        Expr::InList(l) => {
            let col = tag(column_name(&l.expr))?;
            let values = l
                .list
                .iter()
                .map(|e| string(e).map(str::to_string))
                .collect::<Option<Vec<_>>>()?;
            Some(if l.negated {
                Matcher::NotIn(col, values)
            } else {
                Matcher::In(col, values)
            })
        }
        Expr::Like(like) => like_matcher(like, is_tag),
        Expr::IsNull(c) => Some(Matcher::NotExists(tag(column_name(c))?)),
        Expr::IsNotNull(c) => Some(Matcher::Exists(tag(column_name(c))?)),
        Expr::Not(inner) => Some(Matcher::Not(Box::new(tag_matcher(inner, is_tag)?))),
        _ => None,
    }
}

/// `LIKE` / `ILIKE` as an anchored regex (`%` any run, `_` one character).
fn like_matcher(like: &Like, is_tag: &dyn Fn(&str) -> bool) -> Option<Matcher> {
    if like.escape_char.is_some() {
        return None;
    }
    let col = column_name(&like.expr).filter(|c| is_tag(c))?.to_string();
    let mut re = String::from(if like.case_insensitive {
        "(?is)^"
    } else {
        "(?s)^"
    });
    for ch in string(&like.pattern)?.chars() {
        match ch {
            '%' => re.push_str(".*"),
            '_' => re.push('.'),
            c => re.push_str(&regex_escape(c)),
        }
    }
    re.push('$');
    if like.negated {
        Matcher::not_regex(col, &re).ok()
    } else {
        Matcher::regex(col, &re).ok()
    }
}

fn regex_escape(c: char) -> String {
    if "\\.+*?()|[]{}^$#&-~".contains(c) {
        format!("\\{c}")
    } else {
        c.to_string()
    }
}

/// A matcher as `EXPLAIN` shows it, in SQL-like words (long lists shortened).
pub fn describe_matcher(m: &Matcher) -> String {
    let list = |v: &[String]| {
        let mut s: Vec<String> = v.iter().take(5).map(|x| format!("'{x}'")).collect();
        if v.len() > 5 {
            s.push(format!("… {} more", v.len() - 5));
        }
        s.join(", ")
    };
    let join = |v: &[Matcher], op: &str| {
        let parts: Vec<String> = v.iter().map(describe_matcher).collect();
        format!("({})", parts.join(op))
    };
    match m {
        Matcher::All => "all".into(),
        Matcher::Eq(k, v) => format!("{k} = '{v}'"),
        Matcher::NotEq(k, v) => format!("{k} != '{v}'"),
        Matcher::In(k, v) => format!("{k} IN ({})", list(v)),
        Matcher::NotIn(k, v) => format!("{k} NOT IN ({})", list(v)),
        Matcher::Regex(k, r) => format!("{k} ~ '{}'", r.as_str()),
        Matcher::NotRegex(k, r) => format!("{k} !~ '{}'", r.as_str()),
        Matcher::Exists(k) => format!("{k} IS NOT NULL"),
        Matcher::NotExists(k) => format!("{k} IS NULL"),
        Matcher::And(v) => join(v, " AND "),
        Matcher::Or(v) => join(v, " OR "),
        Matcher::Not(m) => format!("NOT {}", describe_matcher(m)),
    }
}

fn describe_time(ns: i64) -> String {
    match arrow::temporal_conversions::timestamp_ns_to_datetime(ns) {
        Some(d) => d.format("%Y-%m-%dT%H:%M:%S%.fZ").to_string(),
        None => ns.to_string(),
    }
}

/// What a request pushes, as `EXPLAIN` shows it: `time=[start, end)` and `tags=…`.
pub fn describe(req: &ScanRequest) -> String {
    let mut parts = Vec::new();
    if let Some((s, e)) = req.time {
        let lo = if s == i64::MIN {
            "-inf".into()
        } else {
            describe_time(s)
        };
        let hi = if e == i64::MAX {
            "+inf".into()
        } else {
            describe_time(e)
        };
        parts.push(format!("time=[{lo}, {hi})"));
    }
    if !matches!(req.matcher, Matcher::All) {
        parts.push(format!("tags={}", describe_matcher(&req.matcher)));
    }
    if !req.field_bounds.is_empty() {
        let b: Vec<String> = req.field_bounds.iter().map(|b| b.to_string()).collect();
        parts.push(format!("fields={}", b.join(" AND ")));
    }
    parts.join(", ")
}

/// The scan request for `filters`, and a description of what was pushed for `EXPLAIN`.
pub fn request(
    filters: &[Expr],
    is_tag: &dyn Fn(&str) -> bool,
    fields: Option<Vec<String>>,
) -> (ScanRequest, String) {
    let mut time: Option<(i64, i64)> = None;
    let mut matchers = Vec::new();
    let mut field_bounds = Vec::new();
    for f in filters {
        match classify(f, is_tag) {
            Some(Pushed::Time(s, e)) => {
                let (s0, e0) = time.unwrap_or((i64::MIN, i64::MAX));
                time = Some((s0.max(s), e0.min(e)));
            }
            Some(Pushed::Tag(m)) => matchers.push(m),
            Some(Pushed::Field(b)) => field_bounds.push(b),
            None => {}
        }
    }
    let matcher = match matchers.len() {
        0 => Matcher::All,
        1 => matchers.pop().expect("one"),
        _ => Matcher::And(matchers),
    };
    let req = ScanRequest {
        time: time.map(|(s, e)| (s, e.max(s))),
        matcher,
        fields,
        tags: None,
        field_bounds,
    };
    let text = describe(&req);
    (req, text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::{col, lit};

    fn is_tag(c: &str) -> bool {
        matches!(c, "host" | "region")
    }

    fn ts(n: i64) -> Expr {
        lit(ScalarValue::TimestampNanosecond(
            Some(n),
            Some("UTC".into()),
        ))
    }

    fn re(op: Operator, c: &str, p: &str) -> Expr {
        Expr::BinaryExpr(BinaryExpr::new(Box::new(col(c)), op, Box::new(lit(p))))
    }

    /// (name, filter, expected debug of what is pushed or None)
    #[test]
    fn classify_table() {
        let cases: Vec<(&str, Expr, Option<&str>)> = vec![
            (
                "eq",
                col("host").eq(lit("a")),
                Some("Tag(Eq(\"host\", \"a\"))"),
            ),
            (
                "eq swapped",
                lit("a").eq(col("host")),
                Some("Tag(Eq(\"host\", \"a\"))"),
            ),
            (
                "not eq",
                col("host").not_eq(lit("a")),
                Some("Tag(NotEq(\"host\", \"a\"))"),
            ),
            ("eq on a field with a string", col("v").eq(lit("a")), None),
            (
                "a field above a number",
                col("v").gt(lit(90.0)),
                Some("Field(FieldBound { field: \"v\", op: AtLeast, value: 90.0 })"),
            ),
            (
                "a number below a field (swapped)",
                lit(5).lt(col("v")),
                Some("Field(FieldBound { field: \"v\", op: AtLeast, value: 5.0 })"),
            ),
            (
                "a field at most a number",
                col("v").lt_eq(lit(-2)),
                Some("Field(FieldBound { field: \"v\", op: AtMost, value: -2.0 })"),
            ),
            (
                "a field equal to a number",
                col("v").eq(lit(4u32)),
                Some("Field(FieldBound { field: \"v\", op: Equal, value: 4.0 })"),
            ),
            (
                "a field not equal to a number",
                col("v").not_eq(lit(3)),
                None,
            ),
            ("a tag compared with a number", col("host").gt(lit(3)), None),
            ("eq with a number", col("host").eq(lit(1)), None),
            (
                "in",
                col("host").in_list(vec![lit("a"), lit("b")], false),
                Some("Tag(In(\"host\", [\"a\", \"b\"]))"),
            ),
            (
                "not in",
                col("host").in_list(vec![lit("a")], true),
                Some("Tag(NotIn(\"host\", [\"a\"]))"),
            ),
            (
                "in with a null",
                col("host").in_list(vec![lit("a"), lit(ScalarValue::Utf8(None))], false),
                None,
            ),
            (
                "or of tags",
                col("host").eq(lit("a")).or(col("region").eq(lit("x"))),
                Some("Tag(Or([Eq(\"host\", \"a\"), Eq(\"region\", \"x\")]))"),
            ),
            (
                "or with a field",
                col("host").eq(lit("a")).or(col("v").gt(lit(1))),
                None,
            ),
            (
                "not",
                Expr::Not(Box::new(col("host").eq(lit("a")))),
                Some("Tag(Not(Eq(\"host\", \"a\")))"),
            ),
            (
                "is null",
                col("host").is_null(),
                Some("Tag(NotExists(\"host\"))"),
            ),
            (
                "is not null",
                col("host").is_not_null(),
                Some("Tag(Exists(\"host\"))"),
            ),
            (
                "time >=",
                col("time").gt_eq(ts(10)),
                Some("Time(10, 9223372036854775807)"),
            ),
            (
                "time >",
                col("time").gt(ts(10)),
                Some("Time(11, 9223372036854775807)"),
            ),
            (
                "time <",
                col("time").lt(ts(10)),
                Some("Time(-9223372036854775808, 10)"),
            ),
            (
                "time <= swapped",
                ts(10).gt_eq(col("time")),
                Some("Time(-9223372036854775808, 11)"),
            ),
            (
                "time between",
                col("time").between(ts(1), ts(5)),
                Some("Time(1, 6)"),
            ),
            ("time != ", col("time").not_eq(ts(1)), None),
            ("time vs a string", col("time").gt(lit("x")), None),
        ];
        for (name, e, want) in cases {
            let got = classify(&e, &is_tag).map(|p| format!("{p:?}"));
            assert_eq!(got.as_deref(), want, "{name}");
        }
    }

    /// Regex and LIKE matchers select the right values (checked by matching, not by text).
    #[test]
    fn pattern_matchers_match_like_sql() {
        let like = |p: &str, ci: bool, neg: bool| {
            Expr::Like(Like::new(
                neg,
                Box::new(col("host")),
                Box::new(lit(p)),
                None,
                ci,
            ))
        };
        let cases: Vec<(&str, Expr, &str, bool)> = vec![
            (
                "~ unanchored",
                re(Operator::RegexMatch, "host", "st_1"),
                "host_12",
                true,
            ),
            (
                "~ no match",
                re(Operator::RegexMatch, "host", "^st"),
                "host_12",
                false,
            ),
            (
                "~* ignores case",
                re(Operator::RegexIMatch, "host", "HOST"),
                "host_1",
                true,
            ),
            (
                "!~",
                re(Operator::RegexNotMatch, "host", "_1$"),
                "host_1",
                false,
            ),
            (
                "!~*",
                re(Operator::RegexNotIMatch, "host", "X"),
                "host_1",
                true,
            ),
            (
                "like prefix",
                like("host_1%", false, false),
                "host_12",
                true,
            ),
            (
                "like _ is one char",
                like("host_1_", false, false),
                "host_1",
                false,
            ),
            (
                "like is anchored",
                like("ost%", false, false),
                "host_1",
                false,
            ),
            (
                "like dot is literal",
                like("a.c", false, false),
                "abc",
                false,
            ),
            ("ilike", like("HOST%", true, false), "host_1", true),
            ("not like", like("host%", false, true), "host_1", false),
        ];
        for (name, e, value, want) in cases {
            let m = tag_matcher(&e, &is_tag).unwrap_or_else(|| panic!("{name}: not pushed"));
            let got = match &m {
                Matcher::Regex(_, r) => r.is_match(value),
                Matcher::NotRegex(_, r) => !r.is_match(value),
                other => panic!("{name}: {other:?}"),
            };
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn request_intersects_time_ands_tags_and_bounds_fields() {
        let filters = vec![
            col("time").gt_eq(ts(10)),
            col("time").lt(ts(20)),
            col("host").eq(lit("a")),
            col("region").not_eq(lit("x")),
            col("v").gt(lit(1.0)),
        ];
        let (req, text) = request(&filters, &is_tag, None);
        assert_eq!(req.time, Some((10, 20)));
        assert!(matches!(req.matcher, Matcher::And(ref v) if v.len() == 2));
        assert_eq!(
            text,
            "time=[1970-01-01T00:00:00.000000010Z, 1970-01-01T00:00:00.000000020Z), \
             tags=(host = 'a' AND region != 'x'), fields=v >= 1"
        );
        // Contradictory bounds give an empty range, not an inverted one.
        let (req, _) = request(
            &[col("time").gt_eq(ts(20)), col("time").lt(ts(10))],
            &is_tag,
            None,
        );
        assert_eq!(req.time, Some((20, 20)));
    }
}
