//! Times, durations and the step grid of a PromQL query, as Prometheus's HTTP API reads them.
//!
//! - A time is Unix seconds with an optional fraction (`1700000000.123`) or RFC 3339
//!   (`2023-11-14T22:13:20.123Z`), rounded to the millisecond.
//! - A duration is seconds with an optional fraction (`15`, `0.5`) or a Prometheus duration
//!   (`1h30m`, `5m`, `250ms`; units `ms s m h d w y`).
//! - The steps of a range query are `start + i·step` for every `i` with a time ≤ `end`; (end − start) / step
//!   is at most [`MAX_STEPS`] (Prometheus's limit, 11,000).
//!
//! Everything here is milliseconds since the Unix epoch, as PromQL works in milliseconds.

use crate::error::{QueryError, Result};

/// Most steps past the first a range query may have ((end − start) / step; Prometheus's limit).
pub const MAX_STEPS: i64 = 11_000;

/// The grid a query is evaluated on: `start, start + step, …` up to `end` (ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd)]
pub struct Steps {
    pub start: i64,
    pub end: i64,
    /// At least 1.
    pub step: i64,
}

impl Steps {
    /// The grid of a range query; refuses what Prometheus refuses.
    pub fn range(start: i64, end: i64, step: i64) -> Result<Steps> {
        if step <= 0 {
            return Err(bad(
                "zero or negative query resolution step widths are not accepted. Try a positive integer",
            ));
        }
        if end < start {
            return Err(bad("end timestamp must not be before start time"));
        }
        if (end - start) / step > MAX_STEPS {
            return Err(bad(
                "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query resolution (?step=XX)",
            ));
        }
        Ok(Steps { start, end, step })
    }

    /// The one step of an instant query at `t`.
    pub fn instant(t: i64) -> Steps {
        Steps {
            start: t,
            end: t,
            step: 1,
        }
    }

    /// How many steps the grid has.
    pub fn len(&self) -> usize {
        ((self.end - self.start) / self.step + 1) as usize
    }

    pub fn is_empty(&self) -> bool {
        false
    }

    /// The time of step `i`.
    pub fn at(&self, i: usize) -> i64 {
        self.start + i as i64 * self.step
    }

    /// The steps `[from, to)` of this grid as a grid of their own (`from < to <= len`).
    pub fn slice(&self, from: usize, to: usize) -> Steps {
        assert!(
            from < to && to <= self.len(),
            "step slice {from}..{to} of {}",
            self.len()
        );
        Steps {
            start: self.at(from),
            end: self.at(to - 1),
            step: self.step,
        }
    }

    /// The grid cut into at most `n` contiguous slices of nearly equal length.
    pub fn chunks(&self, n: usize) -> Vec<Steps> {
        let len = self.len();
        let n = n.clamp(1, len);
        (0..n)
            .map(|i| self.slice(i * len / n, (i + 1) * len / n))
            .collect()
    }
}

fn bad(msg: &str) -> QueryError {
    QueryError::Sql(msg.to_string())
}

/// Reads a time parameter (`name` is for the message): Unix seconds or RFC 3339, in ms.
pub fn parse_time(name: &str, s: &str) -> Result<i64> {
    let s = s.trim();
    if let Ok(secs) = s.parse::<f64>() {
        if !secs.is_finite() || secs.abs() > 9.2e12 {
            return Err(QueryError::Sql(format!(
                "invalid parameter {name:?}: cannot parse {s:?} to a valid timestamp"
            )));
        }
        return Ok((secs * 1000.0).round() as i64);
    }
    // Prometheus's own names for the ends of time (clients send them for "no bound").
    match s {
        "-292273086-05-16T16:47:06Z" => return Ok(i64::MIN / 1_000_000),
        "292277025-08-18T07:12:54.999999999Z" => return Ok(i64::MAX / 1_000_000),
        _ => {}
    }
    chrono::DateTime::parse_from_rfc3339(s)
        .map(|t| {
            let ms = t.timestamp_millis();
            // Round to the millisecond as Prometheus does.
            if t.timestamp_subsec_nanos() % 1_000_000 >= 500_000 {
                ms + 1
            } else {
                ms
            }
        })
        .map_err(|_| {
            QueryError::Sql(format!(
                "invalid parameter {name:?}: cannot parse {s:?} to a valid timestamp"
            ))
        })
}

/// Reads a duration parameter: seconds (with a fraction) or a Prometheus duration, in ms.
pub fn parse_duration(name: &str, s: &str) -> Result<i64> {
    let s = s.trim();
    let fail = || {
        QueryError::Sql(format!(
            "invalid parameter {name:?}: cannot parse {s:?} to a valid duration"
        ))
    };
    if let Ok(secs) = s.parse::<f64>() {
        if !secs.is_finite() || secs.abs() > 9.2e12 {
            return Err(fail());
        }
        return Ok((secs * 1000.0).round() as i64);
    }
    parse_prom_duration(s).ok_or_else(fail)
}

/// A Prometheus duration (`1h30m`, `5m`, `250ms`): units in descending order, each once.
pub fn parse_prom_duration(s: &str) -> Option<i64> {
    const UNITS: [(&str, i64); 7] = [
        ("y", 365 * 86_400_000),
        ("w", 7 * 86_400_000),
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1_000),
        ("ms", 1),
    ];
    if s.is_empty() || s == "0" {
        return (s == "0").then_some(0);
    }
    let (mut rest, mut total, mut last_unit) = (s, 0i64, usize::MAX);
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits > 18 {
            return None;
        }
        let n: i64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        // "ms" before "m": the longest unit that matches.
        let (i, (unit, ms)) = UNITS
            .iter()
            .enumerate()
            .filter(|(_, (u, _))| rest.starts_with(u))
            .max_by_key(|(_, (u, _))| u.len())?;
        if last_unit != usize::MAX && i <= last_unit {
            return None;
        }
        last_unit = i;
        rest = &rest[unit.len()..];
        total = total.checked_add(n.checked_mul(*ms)?)?;
    }
    Some(total)
}

/// A time as Prometheus's API writes it: seconds, with the milliseconds as a fraction when
/// there are any (`1700000000`, `1700000000.5`, `1700000000.125`).
pub fn format_seconds(ms: i64, out: &mut String) {
    use std::fmt::Write;
    let secs = ms.div_euclid(1000);
    let frac = ms.rem_euclid(1000);
    if frac == 0 {
        let _ = write!(out, "{secs}");
        return;
    }
    // A negative time with a fraction: -1.5 s is secs = -2, frac = 500.
    let (whole, frac) = if ms < 0 {
        (secs + 1, 1000 - frac)
    } else {
        (secs, frac)
    };
    let sign = if ms < 0 && whole == 0 { "-" } else { "" };
    let digits = format!("{frac:03}");
    let _ = write!(out, "{sign}{whole}.{}", digits.trim_end_matches('0'));
}

/// A sample value as Prometheus writes it: the shortest decimal that reads back to the same
/// float, never in exponent form, and `NaN`, `+Inf`, `-Inf`.
pub fn format_value(v: f64, out: &mut String) {
    use std::fmt::Write;
    if v.is_nan() {
        out.push_str("NaN");
    } else if v.is_infinite() {
        out.push_str(if v > 0.0 { "+Inf" } else { "-Inf" });
    } else {
        let _ = write!(out, "{v}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_as_prometheus_reads_them() {
        let cases = [
            ("1700000000", Some(1_700_000_000_000)),
            ("1700000000.123", Some(1_700_000_000_123)),
            ("1700000000.1239", Some(1_700_000_000_124)),
            ("-1.5", Some(-1500)),
            ("2023-11-14T22:13:20Z", Some(1_700_000_000_000)),
            ("2023-11-14T22:13:20.5+00:00", Some(1_700_000_000_500)),
            ("2023-11-14T23:13:20.0005+01:00", Some(1_700_000_000_001)),
            ("yesterday", None),
            ("NaN", None),
            ("1e400", None),
            ("", None),
        ];
        for (text, want) in cases {
            assert_eq!(parse_time("time", text).ok(), want, "{text}");
        }
        assert!(
            parse_time("start", "x")
                .unwrap_err()
                .to_string()
                .contains("\"start\"")
        );
    }

    #[test]
    fn durations_read_as_prometheus_reads_them() {
        let cases = [
            ("15", Some(15_000)),
            ("0.5", Some(500)),
            ("5m", Some(300_000)),
            ("1h30m", Some(5_400_000)),
            ("250ms", Some(250)),
            ("1m30s500ms", Some(90_500)),
            ("2d", Some(172_800_000)),
            ("1w", Some(604_800_000)),
            ("1y", Some(31_536_000_000)),
            ("0", Some(0)),
            ("30s1m", None),
            ("5x", None),
            ("m", None),
            ("5 m", None),
            ("1h1h", None),
            ("99999999999999999999s", None),
        ];
        for (text, want) in cases {
            assert_eq!(parse_duration("step", text).ok(), want, "{text}");
        }
    }

    #[test]
    fn the_step_grid_and_its_limits() {
        let s = Steps::range(0, 100, 30).unwrap();
        assert_eq!(s.len(), 4);
        assert_eq!((0..4).map(|i| s.at(i)).collect::<Vec<_>>(), [0, 30, 60, 90]);
        let chunks = s.chunks(3);
        assert_eq!(chunks.iter().map(Steps::len).sum::<usize>(), 4);
        assert_eq!(chunks[0].start, 0);
        assert_eq!(chunks.last().unwrap().end, 90);
        assert_eq!(Steps::instant(7).chunks(4), vec![Steps::instant(7)]);
        assert!(Steps::range(0, 10, 0).is_err());
        assert!(Steps::range(10, 0, 1).is_err());
        assert!(
            Steps::range(0, 11_001, 1)
                .unwrap_err()
                .to_string()
                .contains("11,000")
        );
        assert_eq!(Steps::range(0, 11_000, 1).unwrap().len(), 11_001);
    }

    #[test]
    fn times_and_values_written_as_prometheus_writes_them() {
        let cases = [
            (1_700_000_000_000, "1700000000"),
            (1_700_000_000_500, "1700000000.5"),
            (1_700_000_000_125, "1700000000.125"),
            (1_700_000_000_010, "1700000000.01"),
            (-1500, "-1.5"),
            (-500, "-0.5"),
            (0, "0"),
        ];
        for (ms, want) in cases {
            let mut s = String::new();
            format_seconds(ms, &mut s);
            assert_eq!(s, want, "{ms}");
        }
        let values = [
            (1.0, "1"),
            (0.1, "0.1"),
            (1e21, "1000000000000000000000"),
            (1e-7, "0.0000001"),
            (-2.5, "-2.5"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
        ];
        for (v, want) in values {
            let mut s = String::new();
            format_value(v, &mut s);
            assert_eq!(s, want, "{v}");
        }
    }
}
