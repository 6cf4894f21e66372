//! Storage settings of databases and tables: retention (`ttl`) and partition width
//! (`partition`), as users write them and as they resolve.
//!
//! Each setting is unset (inherit), `forever`/`auto`, or a duration. A table's effective value
//! is its own, else its database's, else the server's default ([`Defaults`]). Pure values: the
//! catalog stores them in the manifest and recomputes tables' effective values when a
//! database's change.
//!
//! Durations are a whole number with a unit: `ns`, `us`, `ms`, `s`, `m`/`min`, `h`, `d`, `w`,
//! `y` (365 days), concatenated as InfluxDB writes them (`1h30m`); `INF`, `forever`, `none`
//! and `0` mean no retention.

use serde::{Deserialize, Serialize};

use super::rollups::RollupList;
use crate::error::{Result, StorageError};
use crate::options::{DAY_NS, HOUR_NS};

/// Shortest retention: rows are refused at write when older, so anything shorter than a
/// minute would refuse a clock-skewed client's current rows.
pub const MIN_TTL_NS: i64 = 60 * 1_000_000_000;
/// Narrowest and widest partition a user may set.
pub const MIN_PARTITION_NS: i64 = 60 * 1_000_000_000;
pub const MAX_PARTITION_NS: i64 = 100 * 365 * DAY_NS;

/// A retention or width setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Setting {
    /// `forever` for retention, `auto` for the partition width.
    Unbounded,
    /// A duration in ns.
    Ns(i64),
}

impl Setting {
    /// The duration in ns; `None` when unbounded (forever, auto).
    pub fn ns(self) -> Option<i64> {
        match self {
            Setting::Unbounded => None,
            Setting::Ns(n) => Some(n),
        }
    }
}

/// The settings a database or table holds; `None` inherits.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StorageSettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<Setting>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<Setting>,
    /// Declared rollups (`none` declares none, overriding the database's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollups: Option<RollupList>,
}

impl StorageSettings {
    /// `self` with every setting `other` holds put over it.
    pub fn merged(self, other: StorageSettings) -> StorageSettings {
        StorageSettings {
            ttl: other.ttl.or(self.ttl),
            partition: other.partition.or(self.partition),
            rollups: other.rollups.or(self.rollups),
        }
    }

    /// Reads `WITH (...)`/`SET (...)` options: `ttl` and `partition`; any other key is refused
    /// by name.
    pub fn from_options(options: &[(String, String)]) -> Result<StorageSettings> {
        let mut s = StorageSettings::default();
        for (k, v) in options {
            match k.to_ascii_lowercase().as_str() {
                "ttl" | "retention" => s.ttl = Some(parse_ttl(v)?),
                "partition" | "partition_interval" => s.partition = Some(parse_partition(v)?),
                "rollups" => {
                    s.rollups = Some(RollupList::parse(v).map_err(|reason| {
                        StorageError::InvalidSetting {
                            key: "rollups".into(),
                            reason,
                        }
                    })?)
                }
                _ => {
                    return Err(StorageError::InvalidSetting {
                        key: k.clone(),
                        reason: "unknown option (known: ttl, partition, rollups)".into(),
                    });
                }
            }
        }
        Ok(s)
    }
}

/// The server-wide defaults below every database's and table's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Defaults {
    pub ttl: Setting,
    pub partition: Setting,
    pub rollups: RollupList,
}

/// What a table's settings resolve to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Effective {
    /// Retention in ns; `None`: forever.
    pub ttl_ns: Option<i64>,
    /// Fixed partition width in ns; `None`: chosen from the data rate.
    pub partition_ns: Option<i64>,
    /// Declared rollups (empty: none).
    pub rollups: RollupList,
}

/// The table's own settings over its database's over the defaults.
pub fn resolve(table: StorageSettings, db: StorageSettings, d: Defaults) -> Effective {
    let ttl = table.ttl.or(db.ttl).unwrap_or(d.ttl);
    let partition = table.partition.or(db.partition).unwrap_or(d.partition);
    Effective {
        ttl_ns: ttl.ns(),
        partition_ns: partition.ns(),
        rollups: table.rollups.or(db.rollups).unwrap_or(d.rollups),
    }
}

/// A retention: `forever` (also `INF`, `none`, `0`, as InfluxDB writes it) or a duration of at
/// least a minute.
pub fn parse_ttl(v: &str) -> Result<Setting> {
    let t = v.trim();
    if ["forever", "inf", "infinite", "none", "0", "0s"]
        .iter()
        .any(|w| t.eq_ignore_ascii_case(w))
    {
        return Ok(Setting::Unbounded);
    }
    let ns = parse_duration_ns(t).map_err(|reason| bad("ttl", v, reason))?;
    if ns < MIN_TTL_NS {
        return Err(bad(
            "ttl",
            v,
            "shorter than the shortest retention, 1m".into(),
        ));
    }
    Ok(Setting::Ns(ns))
}

/// A partition width: `auto` or a duration from a minute to 100 years.
pub fn parse_partition(v: &str) -> Result<Setting> {
    let t = v.trim();
    if t.eq_ignore_ascii_case("auto") {
        return Ok(Setting::Unbounded);
    }
    let ns = parse_duration_ns(t).map_err(|reason| bad("partition", v, reason))?;
    if !(MIN_PARTITION_NS..=MAX_PARTITION_NS).contains(&ns) {
        return Err(bad("partition", v, "not between 1m and 100y".into()));
    }
    Ok(Setting::Ns(ns))
}

fn bad(key: &str, v: &str, reason: String) -> StorageError {
    StorageError::InvalidSetting {
        key: key.into(),
        reason: format!("{:?}: {reason}", v.chars().take(64).collect::<String>()),
    }
}

/// A duration such as `30d`, `1h30m` or `500ms`, in ns.
pub fn parse_duration_ns(v: &str) -> std::result::Result<i64, String> {
    let mut rest = v.trim();
    if rest.is_empty() {
        return Err("an empty duration".into());
    }
    let mut total: i64 = 0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 {
            return Err("expected a number with a unit, such as 30d or 12h".into());
        }
        let n: i64 = rest[..digits]
            .parse()
            .map_err(|_| "the number is too large".to_string())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit = rest[..unit_len].trim().to_ascii_lowercase();
        rest = &rest[unit_len..];
        let mult: i64 = match unit.as_str() {
            "ns" => 1,
            "us" | "µs" => 1_000,
            "ms" => 1_000_000,
            "s" | "sec" | "secs" | "second" | "seconds" => 1_000_000_000,
            "m" | "min" | "mins" | "minute" | "minutes" => 60_000_000_000,
            "h" | "hour" | "hours" => HOUR_NS,
            "d" | "day" | "days" => DAY_NS,
            "w" | "week" | "weeks" => 7 * DAY_NS,
            "y" | "year" | "years" => 365 * DAY_NS,
            "" => return Err("a number needs a unit (ns, us, ms, s, m, h, d, w, y)".into()),
            u => return Err(format!("unknown unit {u:?} (ns, us, ms, s, m, h, d, w, y)")),
        };
        total = n
            .checked_mul(mult)
            .and_then(|x| total.checked_add(x))
            .ok_or("the duration is too long")?;
    }
    Ok(total)
}

/// A duration as users write it: the largest whole unit (`30d`, `12h`, `90m`), or `forever`
/// / `auto` for an unbounded setting.
pub fn format_setting(s: Setting, unbounded: &str) -> String {
    match s {
        Setting::Unbounded => unbounded.to_string(),
        Setting::Ns(n) => format_duration_ns(n),
    }
}

/// An instant in ns since the epoch as messages and EXPLAIN show it: `2026-10-27 00:00:00 UTC`
/// (`<n> ns` outside chrono's range).
pub fn format_time_ns(n: i64) -> String {
    arrow::temporal_conversions::timestamp_ns_to_datetime(n)
        .map_or_else(|| format!("{n} ns"), |t| format!("{t} UTC"))
}

/// `n` ns in the largest unit that divides it.
pub fn format_duration_ns(n: i64) -> String {
    const UNITS: [(i64, &str); 8] = [
        (7 * DAY_NS, "w"),
        (DAY_NS, "d"),
        (HOUR_NS, "h"),
        (60_000_000_000, "m"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
        (1, "ns"),
    ];
    for (u, name) in UNITS {
        if n != 0 && n % u == 0 {
            return format!("{}{name}", n / u);
        }
    }
    "0s".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_and_print() {
        let ok = [
            ("30d", 30 * DAY_NS),
            ("1h30m", HOUR_NS + 30 * 60_000_000_000),
            ("2w", 14 * DAY_NS),
            ("1y", 365 * DAY_NS),
            (" 12h ", 12 * HOUR_NS),
            ("500ms", 500_000_000),
        ];
        for (text, ns) in ok {
            assert_eq!(parse_duration_ns(text), Ok(ns), "{text}");
        }
        for bad in [
            "",
            "d",
            "30",
            "30 parsecs",
            "-5d",
            "99999999999999999999d",
            "1d-",
        ] {
            assert!(parse_duration_ns(bad).is_err(), "{bad:?} should be refused");
        }
        assert_eq!(format_duration_ns(30 * DAY_NS), "30d");
        assert_eq!(format_duration_ns(14 * DAY_NS), "2w");
        assert_eq!(format_duration_ns(90 * 60_000_000_000), "90m");
    }

    #[test]
    fn settings_parse_with_named_refusals() {
        assert_eq!(parse_ttl("forever").unwrap(), Setting::Unbounded);
        assert_eq!(parse_ttl("INF").unwrap(), Setting::Unbounded);
        assert_eq!(parse_ttl("0").unwrap(), Setting::Unbounded);
        assert_eq!(parse_ttl("7d").unwrap(), Setting::Ns(7 * DAY_NS));
        assert_eq!(parse_partition("auto").unwrap(), Setting::Unbounded);
        for (text, word) in [("10s", "1m"), ("soon", "unit")] {
            let e = parse_ttl(text).unwrap_err().to_string();
            assert!(e.contains("ttl") && e.contains(word), "{e}");
        }
        let e = parse_partition("200y").unwrap_err().to_string();
        assert!(e.contains("partition") && e.contains("100y"), "{e}");
        let e = StorageSettings::from_options(&[("colour".into(), "red".into())])
            .unwrap_err()
            .to_string();
        assert!(e.contains("colour") && e.contains("ttl"), "{e}");
    }

    #[test]
    fn a_table_setting_overrides_its_database_and_the_default() {
        let d = Defaults {
            ttl: Setting::Unbounded,
            partition: Setting::Unbounded,
            rollups: RollupList::NONE,
        };
        let db = StorageSettings {
            ttl: Some(Setting::Ns(DAY_NS)),
            partition: None,
            rollups: None,
        };
        let table = StorageSettings {
            ttl: Some(Setting::Ns(HOUR_NS)),
            partition: Some(Setting::Ns(7 * DAY_NS)),
            rollups: None,
        };
        // (name, table, database, expected)
        let cases = [
            (
                "defaults only",
                StorageSettings::default(),
                StorageSettings::default(),
                (None, None),
            ),
            (
                "database ttl",
                StorageSettings::default(),
                db,
                (Some(DAY_NS), None),
            ),
            (
                "table over database",
                table,
                db,
                (Some(HOUR_NS), Some(7 * DAY_NS)),
            ),
            (
                "table forever over database",
                StorageSettings {
                    ttl: Some(Setting::Unbounded),
                    partition: None,
                    rollups: None,
                },
                db,
                (None, None),
            ),
        ];
        for (name, t, dbs, (ttl, part)) in cases {
            let e = resolve(t, dbs, d);
            assert_eq!((e.ttl_ns, e.partition_ns), (ttl, part), "{name}");
        }
        let server = Defaults {
            ttl: Setting::Ns(30 * DAY_NS),
            partition: Setting::Ns(DAY_NS),
            rollups: RollupList::NONE,
        };
        let e = resolve(
            StorageSettings::default(),
            StorageSettings::default(),
            server,
        );
        assert_eq!(
            (e.ttl_ns, e.partition_ns),
            (Some(30 * DAY_NS), Some(DAY_NS))
        );
    }
}
