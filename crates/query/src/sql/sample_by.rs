//! The grammar of `SAMPLE BY` (Lindorm, QuestDB), read from tokens into a typed [`SampleBy`]:
//!
//! ```sql
//! SAMPLE BY <width> [FILL(NONE | NULL | PREV | LINEAR | <number>)]
//!           [ALIGN TO CALENDAR [TIME ZONE '<zone>'] [WITH OFFSET '<hh:mm>']]
//! ```
//!
//! `<width>` is `<n><unit>` with unit `ns`, `us`/`U`, `ms`/`T`, `s`, `m`/`min`, `h`, `d`,
//! `w`, `M` (months) or `y`, or a quoted interval (`'10min'`, `'1 hour'`). The clause
//! belongs to the outermost SELECT and comes before its `ORDER BY` and `LIMIT`. What it
//! means is planned in [`crate::plan::sample_by`]; `ALIGN TO FIRST OBSERVATION` and a list of
//! fills are refused, naming them.

use arrow::datatypes::IntervalMonthDayNano;
use datafusion::common::ScalarValue;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan};

use super::tokens::{self, is_word};
use crate::error::{QueryError, Result};

const NS_PER_DAY: i64 = 86_400_000_000_000;

/// The bucket width.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd)]
pub enum Width {
    /// A fixed length in nanoseconds (days count as 24 hours: buckets are in UTC).
    Nanos(i64),
    /// Calendar months (a year is 12).
    Months(i32),
}

/// How empty buckets are filled.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Fill {
    /// Empty buckets are left out.
    None,
    /// Empty buckets get a row with NULL aggregates.
    Null,
    /// The group's previous non-NULL value.
    Prev,
    /// Interpolated between the group's neighbouring non-NULL values, by time.
    Linear,
    /// A constant (an integer stays an integer for integer columns).
    Value(ScalarValue),
}

/// What the `SAMPLE BY` clause said.
#[derive(Debug, Clone, PartialEq)]
pub struct SampleBy {
    pub width: Width,
    /// The width as written, for messages.
    pub width_text: String,
    pub fill: Fill,
    /// `ALIGN TO CALENDAR TIME ZONE 'zone'`: buckets follow that zone's local calendar.
    pub time_zone: Option<String>,
    /// `WITH OFFSET 'hh:mm'` in nanoseconds: buckets start that long after midnight.
    pub offset_ns: i64,
}

pub(crate) fn bad(msg: impl std::fmt::Display) -> QueryError {
    QueryError::Sql(format!("SAMPLE BY: {msg}"))
}

/// Reads the clause from its tokens (those after `SAMPLE BY`).
pub fn parse(clause: Vec<TokenWithSpan>) -> Result<SampleBy> {
    let mut p = tokens::parser(clause);
    let (width, width_text) = width(&mut p)?;
    let mut spec = SampleBy {
        width,
        width_text,
        fill: Fill::None,
        time_zone: None,
        offset_ns: 0,
    };
    loop {
        let t = p.next_token();
        match &t.token {
            Token::EOF => break,
            w if is_word(w, "FILL") => spec.fill = fill(&mut p)?,
            w if is_word(w, "ALIGN") => align(&mut p, &mut spec)?,
            w if is_word(w, "WITH") => {
                p.prev_token();
                calendar_options(&mut p, &mut spec)?;
            }
            other => return Err(bad(format!("unexpected {other} {}", tokens::position(&t)))),
        }
    }
    if spec.time_zone.is_some() && spec.fill != Fill::None {
        return Err(bad("FILL with TIME ZONE is not supported yet"));
    }
    Ok(spec)
}

fn width(p: &mut Parser) -> Result<(Width, String)> {
    let t = p.next_token();
    match &t.token {
        Token::Number(n, _) => {
            let unit = match p.peek_token().token {
                Token::Word(w) if w.quote_style.is_none() => {
                    p.next_token();
                    w.value
                }
                _ => return Err(bad(format!("width {n} has no unit (s, m, h, d, w, M, y)"))),
            };
            let text = format!("{n}{unit}");
            let n: i64 = n
                .parse()
                .map_err(|_| bad(format!("width {text} must start with a whole number")))?;
            Ok((unit_width(n, &unit, &text)?, text))
        }
        Token::SingleQuotedString(s) => Ok((interval_width(s)?, s.clone())),
        Token::EOF => Err(bad("a bucket width is required, e.g. SAMPLE BY 1m")),
        other => Err(bad(format!(
            "expected a width such as 1m or '10 minutes', found {other} {}",
            tokens::position(&t)
        ))),
    }
}

/// `n` units as a width.
pub fn unit_width(n: i64, unit: &str, text: &str) -> Result<Width> {
    if n <= 0 {
        return Err(bad("the bucket width must be positive"));
    }
    let ns: i64 = match unit {
        "ns" => 1,
        "us" | "U" => 1_000,
        "ms" | "T" => 1_000_000,
        "s" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => NS_PER_DAY,
        "w" => 7 * NS_PER_DAY,
        "M" | "y" => {
            let months = if unit == "M" { n } else { n.saturating_mul(12) };
            let m = i32::try_from(months).map_err(|_| bad(format!("width {text} is too long")))?;
            return Ok(Width::Months(m));
        }
        u => return Err(bad(format!("unknown unit {u:?} in width {text}"))),
    };
    n.checked_mul(ns)
        .map(Width::Nanos)
        .ok_or_else(|| bad(format!("width {text} is too long")))
}

/// A quoted interval (`'10min'`, `'1 hour'`, `'2 months'`) as a width.
fn interval_width(s: &str) -> Result<Width> {
    let v: IntervalMonthDayNano =
        arrow::compute::kernels::cast_utils::parse_interval_month_day_nano(s)
            .map_err(|e| bad(format!("width '{s}': {e}")))?;
    match (v.months, v.days, v.nanoseconds) {
        (0, d, ns) => {
            let total = i64::from(d)
                .checked_mul(NS_PER_DAY)
                .and_then(|d| d.checked_add(ns))
                .ok_or_else(|| bad(format!("width '{s}' is too long")))?;
            if total <= 0 {
                return Err(bad("the bucket width must be positive"));
            }
            Ok(Width::Nanos(total))
        }
        (m, 0, 0) if m > 0 => Ok(Width::Months(m)),
        _ => Err(bad(format!(
            "width '{s}' mixes months with days or time; use one unit"
        ))),
    }
}

fn fill(p: &mut Parser) -> Result<Fill> {
    let open = p.next_token();
    if open.token != Token::LParen {
        return Err(bad(format!(
            "expected FILL(...) {}",
            tokens::position(&open)
        )));
    }
    let t = p.next_token();
    let f = match &t.token {
        w if is_word(w, "NONE") => Fill::None,
        w if is_word(w, "NULL") => Fill::Null,
        w if is_word(w, "PREV") => Fill::Prev,
        w if is_word(w, "LINEAR") => Fill::Linear,
        Token::Minus => match p.next_token().token {
            Token::Number(n, _) => Fill::Value(number(&format!("-{n}"))?),
            other => return Err(fill_error(&other.to_string())),
        },
        Token::Number(n, _) => Fill::Value(number(n)?),
        other => return Err(fill_error(&other.to_string())),
    };
    let close = p.next_token();
    match close.token {
        Token::RParen => Ok(f),
        Token::Comma => Err(bad(
            "FILL takes one value for every aggregate (a list per column is not supported yet)",
        )),
        other => Err(fill_error(&other.to_string())),
    }
}

fn fill_error(found: &str) -> QueryError {
    bad(format!(
        "FILL({found}...): FILL takes NONE, NULL, PREV, LINEAR or a number"
    ))
}

/// A number as DataFusion types a literal: an integer if it is one, else a float.
fn number(n: &str) -> Result<ScalarValue> {
    if let Ok(i) = n.parse::<i64>() {
        return Ok(ScalarValue::Int64(Some(i)));
    }
    match n.parse::<f64>() {
        Ok(f) if f.is_finite() => Ok(ScalarValue::Float64(Some(f))),
        _ => Err(fill_error(n)),
    }
}

fn align(p: &mut Parser, spec: &mut SampleBy) -> Result<()> {
    let to = p.next_token().token;
    let what = p.next_token().token;
    if !is_word(&to, "TO") || !is_word(&what, "CALENDAR") {
        return Err(bad(format!(
            "ALIGN TO {what} is not supported; only ALIGN TO CALENDAR"
        )));
    }
    calendar_options(p, spec)
}

/// `[TIME ZONE '<zone>'] [WITH OFFSET '<hh:mm>']`.
fn calendar_options(p: &mut Parser, spec: &mut SampleBy) -> Result<()> {
    loop {
        let t = p.peek_token().token;
        if is_word(&t, "TIME") {
            p.next_token();
            let zone = p.next_token().token;
            match (is_word(&zone, "ZONE"), p.next_token().token) {
                (true, Token::SingleQuotedString(z)) => spec.time_zone = Some(zone_name(&z)?),
                _ => return Err(bad("expected TIME ZONE 'Area/City'")),
            }
        } else if is_word(&t, "WITH") {
            p.next_token();
            let kw = p.next_token().token;
            if !is_word(&kw, "OFFSET") {
                return Err(bad(format!("expected WITH OFFSET, got WITH {kw}")));
            }
            let off = match p.next_token().token {
                Token::SingleQuotedString(s) => s,
                other => return Err(bad(format!("offset {other} must be 'hh:mm'"))),
            };
            let (h, m) = parse_offset(&off)?;
            spec.offset_ns = (i64::from(h) * 3600 + i64::from(m) * 60) * 1_000_000_000;
        } else {
            return Ok(());
        }
    }
}

/// A time-zone name as arrow takes it (`Europe/Oslo`, `UTC`, `+05:30`).
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

/// `'00:15'` → (0, 15): hours below 24, minutes below 60.
fn parse_offset(off: &str) -> Result<(u32, u32)> {
    off.split_once(':')
        .and_then(|(h, m)| Some((h.parse::<u32>().ok()?, m.parse::<u32>().ok()?)))
        .filter(|(h, m)| *h < 24 && *m < 60)
        .ok_or_else(|| bad(format!("offset {off:?} must be 'hh:mm'")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clause(text: &str) -> Result<SampleBy> {
        parse(tokens::tokenize(text).unwrap())
    }

    #[test]
    fn clauses_read_as_typed_values() {
        let min = 60_000_000_000;
        type Case = (
            &'static str,
            &'static str,
            Width,
            Fill,
            Option<&'static str>,
            i64,
        );
        let cases: Vec<Case> = vec![
            ("minutes", "1m", Width::Nanos(min), Fill::None, None, 0),
            (
                "ten minutes quoted",
                "'10min'",
                Width::Nanos(10 * min),
                Fill::None,
                None,
                0,
            ),
            (
                "an hour spelled out",
                "'1 hour'",
                Width::Nanos(60 * min),
                Fill::None,
                None,
                0,
            ),
            ("months", "3M", Width::Months(3), Fill::None, None, 0),
            ("years", "2y", Width::Months(24), Fill::None, None, 0),
            (
                "milliseconds",
                "250ms",
                Width::Nanos(250_000_000),
                Fill::None,
                None,
                0,
            ),
            (
                "fill prev",
                "1h FILL(PREV)",
                Width::Nanos(60 * min),
                Fill::Prev,
                None,
                0,
            ),
            (
                "fill a negative number",
                "1h FILL(-1.5)",
                Width::Nanos(60 * min),
                Fill::Value(ScalarValue::Float64(Some(-1.5))),
                None,
                0,
            ),
            (
                "fill an integer",
                "1h fill(0)",
                Width::Nanos(60 * min),
                Fill::Value(ScalarValue::Int64(Some(0))),
                None,
                0,
            ),
            (
                "offset",
                "1h ALIGN TO CALENDAR WITH OFFSET '00:15'",
                Width::Nanos(60 * min),
                Fill::None,
                None,
                15 * min,
            ),
            (
                "zone and offset",
                "1d ALIGN TO CALENDAR TIME ZONE 'Europe/Oslo' WITH OFFSET '01:00'",
                Width::Nanos(NS_PER_DAY),
                Fill::None,
                Some("Europe/Oslo"),
                60 * min,
            ),
        ];
        for (name, text, w, f, tz, off) in cases {
            let s = clause(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(
                (s.width, s.fill, s.time_zone.as_deref(), s.offset_ns),
                (w, f, tz, off),
                "{name}"
            );
        }
    }

    #[test]
    fn refusals_name_the_problem() {
        for (text, want) in [
            ("", "width is required"),
            ("10", "no unit"),
            ("0m", "positive"),
            ("1q", "unknown unit"),
            ("'1 month 2 days'", "mixes months"),
            ("1m FILL(MAYBE)", "FILL takes NONE, NULL"),
            ("1m FILL(PREV, 0)", "one value"),
            ("1m ALIGN TO FIRST OBSERVATION", "ALIGN TO FIRST"),
            (
                "1m ALIGN TO CALENDAR TIME ZONE 'Mars/Olympus'",
                "unknown time zone",
            ),
            (
                "1m ALIGN TO CALENDAR TIME ZONE 'x'') --'",
                "not a time zone name",
            ),
            (
                "1h FILL(PREV) ALIGN TO CALENDAR TIME ZONE 'UTC'",
                "FILL with TIME ZONE",
            ),
            ("1m ALIGN TO CALENDAR WITH OFFSET '25:00'", "'hh:mm'"),
            ("1m banana", "unexpected"),
            ("99999999999999y", "too long"),
        ] {
            let e = clause(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}
