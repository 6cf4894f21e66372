//! An InfluxQL condition over tags only (`SHOW TAG VALUES … WHERE`, `SHOW SERIES … WHERE`) as
//! a series-index [`Matcher`], so that those statements read the index and never a sample.
//!
//! InfluxDB's rule holds: a missing tag equals `''`. So `k = ''` matches series without `k`,
//! `k != 'v'` matches them, and `k =~ /re/` matches them when the regex matches `''`.
//!
//! Invariant: [`matcher`] answers `None` for anything but tags compared with strings and
//! regexes joined by AND/OR (a field, `time`, a number, a call), and the caller then answers
//! with a scan; a `Some` selects exactly the series the scan's condition would keep.

use tempora_index::Matcher;

use super::ast::Expr;

/// The matcher for `cond` over a measurement whose fields are `fields`, or `None` when the
/// condition needs more than the index (fields, time, numbers). A name that is not a field
/// (nor hinted `::field`) is a tag; one the measurement lacks reads as missing (`''`), as in
/// InfluxDB.
pub fn matcher(cond: &Expr, fields: &[String]) -> Option<Result<Matcher, String>> {
    match cond {
        Expr::Binary(l, op @ ("AND" | "OR"), r) => {
            let (l, r) = (matcher(l, fields)?, matcher(r, fields)?);
            Some(l.and_then(|l| {
                let r = r?;
                Ok(if *op == "AND" {
                    Matcher::And(vec![l, r])
                } else {
                    Matcher::Or(vec![l, r])
                })
            }))
        }
        Expr::Binary(l, op, r) => {
            let (name, value) = match (l.as_ref(), r.as_ref()) {
                (Expr::Var(n, hint), v) | (v, Expr::Var(n, hint))
                    if hint.as_deref() != Some("field")
                        && !fields.contains(n)
                        && !n.eq_ignore_ascii_case("time") =>
                {
                    (n, v)
                }
                _ => return None,
            };
            match (*op, value) {
                ("=", Expr::Str(v)) => Some(Ok(equals(name, v))),
                ("!=" | "<>", Expr::Str(v)) => Some(Ok(Matcher::Not(Box::new(equals(name, v))))),
                ("=~", Expr::Regex(re)) => Some(regex(name, re)),
                ("!~", Expr::Regex(re)) => Some(regex(name, re).map(|m| Matcher::Not(Box::new(m)))),
                _ => None,
            }
        }
        _ => None,
    }
}

/// `name = v` where a missing tag is `''`.
fn equals(name: &str, v: &str) -> Matcher {
    match v.is_empty() {
        false => Matcher::eq(name, v),
        true => Matcher::Or(vec![
            Matcher::NotExists(name.to_string()),
            Matcher::eq(name, ""),
        ]),
    }
}

/// `name =~ /re/` where a missing tag is `''`.
fn regex(name: &str, re: &str) -> Result<Matcher, String> {
    let matches_empty = regex::Regex::new(re)
        .map_err(|e| format!("invalid regex /{re}/: {e}"))?
        .is_match("");
    let m = Matcher::regex(name, re).map_err(|e| e.to_string())?;
    Ok(match matches_empty {
        false => m,
        true => Matcher::Or(vec![m, Matcher::NotExists(name.to_string())]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::influxql::ast::Statement;

    /// The matcher of `SHOW SERIES WHERE <cond>`, judged over tag sets.
    fn judge(cond: &str, series: &[&[(&str, &str)]]) -> Option<Vec<bool>> {
        let stmt = crate::influxql::parse(&format!("SHOW SERIES FROM m WHERE {cond}")).unwrap();
        let Statement::ShowSeries {
            condition: Some(c), ..
        } = &stmt[0]
        else {
            panic!("{stmt:?}")
        };
        let fields = vec!["v".to_string()];
        let m = matcher(c, &fields)?.unwrap();
        Some(
            series
                .iter()
                .map(|s| {
                    let tag = |k: &str| s.iter().find(|(t, _)| *t == k).map(|(_, v)| *v);
                    m.matches(&tag)
                })
                .collect(),
        )
    }

    #[test]
    fn tag_conditions_as_influxdb_reads_them() {
        let a: &[(&str, &str)] = &[("host", "a"), ("dc", "x")];
        let b: &[(&str, &str)] = &[("host", "b")];
        let none: &[(&str, &str)] = &[];
        let all = [a, b, none];
        let cases: &[(&str, &str, Option<[bool; 3]>)] = &[
            ("equal", "host = 'a'", Some([true, false, false])),
            ("missing equals ''", "dc = ''", Some([false, true, true])),
            (
                "not equal keeps missing",
                "host != 'a'",
                Some([false, true, true]),
            ),
            ("<> is !=", "dc <> 'x'", Some([false, true, true])),
            ("not ''", "dc != ''", Some([true, false, false])),
            ("regex", "host =~ /^[ab]$/", Some([true, true, false])),
            (
                "regex matching ''",
                "dc =~ /^x?$/",
                Some([true, true, true]),
            ),
            ("not regex", "host !~ /a/", Some([false, true, true])),
            ("and", "host = 'a' AND dc = 'x'", Some([true, false, false])),
            ("or", "(host = 'b' OR dc = 'x')", Some([true, true, false])),
            (
                "unknown name is missing",
                "zone = ''",
                Some([true, true, true]),
            ),
            ("a field needs a scan", "v = 'a'", None),
            ("time needs a scan", "time > now() - 1h", None),
            ("a number needs a scan", "host = 1", None),
            ("one scan part spoils all", "host = 'a' AND v > 1", None),
        ];
        for (name, cond, want) in cases {
            let got = judge(cond, &all);
            assert_eq!(got, want.map(|w| w.to_vec()), "{name}: {cond}");
        }
    }
}
