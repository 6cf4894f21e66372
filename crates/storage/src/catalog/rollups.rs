//! Rollup declarations (issue 23): the resolutions a table's data is pre-aggregated at, each
//! with an optional retention of its own, as users write them: `'1m,1h'`,
//! `'1m:30d,1h:365d'`, `'none'`.
//!
//! Invariants of a parsed list (checked by [`parse_rollups`]): at most [`MAX_ROLLUPS`]
//! resolutions, each at least [`MIN_RESOLUTION_NS`], strictly ascending, each a whole multiple
//! of the one before (a coarser rollup is computed from the finer one; buckets align from the
//! epoch), and a retention, when given, at least its resolution.
//!
//! Pure: parsing and printing, and [`RollupList`], the fixed-size value settings hold (they
//! are `Copy`; the manifest stores the text).

use super::settings::{Setting, format_duration_ns, parse_duration_ns};

/// Most resolutions one table or database declares.
pub const MAX_ROLLUPS: usize = 8;
/// Finest resolution accepted (finer buckets save little over the raw rows).
pub const MIN_RESOLUTION_NS: i64 = 1_000_000_000;

/// One declared resolution and how long its rollup is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RollupSpec {
    pub resolution_ns: i64,
    /// `Unbounded`: kept as long as the table (or forever).
    pub ttl: Setting,
}

/// A parsed rollup list as a `Copy` value (at most [`MAX_ROLLUPS`] entries).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RollupList {
    len: u8,
    specs: [RollupSpec; MAX_ROLLUPS],
}

impl RollupList {
    pub const NONE: RollupList = RollupList {
        len: 0,
        specs: [RollupSpec {
            resolution_ns: 0,
            ttl: Setting::Unbounded,
        }; MAX_ROLLUPS],
    };

    /// Parses a list ([`parse_rollups`]).
    pub fn parse(v: &str) -> Result<RollupList, String> {
        let specs = parse_rollups(v)?;
        let mut out = RollupList::NONE;
        out.specs[..specs.len()].copy_from_slice(&specs);
        out.len = specs.len() as u8;
        Ok(out)
    }

    pub fn specs(&self) -> &[RollupSpec] {
        &self.specs[..self.len as usize]
    }

    /// The resolutions, finest first.
    pub fn resolutions(&self) -> Vec<i64> {
        self.specs().iter().map(|s| s.resolution_ns).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl std::fmt::Display for RollupList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&format_rollups(self.specs()))
    }
}

impl serde::Serialize for RollupList {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> serde::Deserialize<'de> for RollupList {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        RollupList::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Parses a rollup list; `none` or an empty text declares none. The error says which entry
/// is wrong and why.
pub fn parse_rollups(v: &str) -> Result<Vec<RollupSpec>, String> {
    let v = v.trim();
    if v.is_empty() || v.eq_ignore_ascii_case("none") {
        return Ok(Vec::new());
    }
    let mut out: Vec<RollupSpec> = Vec::new();
    for entry in v.split(',').map(str::trim) {
        let (res, ttl) = match entry.split_once(':') {
            Some((r, t)) => (r.trim(), Some(t.trim())),
            None => (entry, None),
        };
        let bad = |why: String| format!("rollup {entry:?}: {why}");
        let resolution_ns = parse_duration_ns(res).map_err(bad)?;
        if resolution_ns < MIN_RESOLUTION_NS {
            return Err(bad("a resolution is at least 1s".into()));
        }
        let ttl = match ttl {
            None => Setting::Unbounded,
            Some(t) if t.eq_ignore_ascii_case("forever") || t.eq_ignore_ascii_case("inf") => {
                Setting::Unbounded
            }
            Some(t) => {
                let ns = parse_duration_ns(t).map_err(bad)?;
                if ns < resolution_ns {
                    return Err(bad(format!(
                        "its retention {t} is shorter than its resolution {res}"
                    )));
                }
                Setting::Ns(ns)
            }
        };
        if let Some(prev) = out.last() {
            if resolution_ns <= prev.resolution_ns {
                return Err(bad("resolutions go from finest to coarsest".into()));
            }
            if resolution_ns % prev.resolution_ns != 0 {
                return Err(bad(format!(
                    "{res} is not a whole multiple of {}",
                    format_duration_ns(prev.resolution_ns)
                )));
            }
        }
        out.push(RollupSpec { resolution_ns, ttl });
        if out.len() > MAX_ROLLUPS {
            return Err(format!("at most {MAX_ROLLUPS} rollup resolutions"));
        }
    }
    Ok(out)
}

/// The list as [`parse_rollups`] reads it back (`none` when empty).
pub fn format_rollups(specs: &[RollupSpec]) -> String {
    if specs.is_empty() {
        return "none".into();
    }
    specs
        .iter()
        .map(|s| match s.ttl {
            Setting::Unbounded => format_duration_ns(s.resolution_ns),
            Setting::Ns(t) => format!(
                "{}:{}",
                format_duration_ns(s.resolution_ns),
                format_duration_ns(t)
            ),
        })
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    fn spec(res: i64, ttl: Option<i64>) -> RollupSpec {
        RollupSpec {
            resolution_ns: res,
            ttl: ttl.map_or(Setting::Unbounded, Setting::Ns),
        }
    }

    #[test]
    fn lists_parse_as_users_write_them() {
        let day = 86_400 * S;
        for (text, want) in [
            ("none", vec![]),
            ("", vec![]),
            ("1m", vec![spec(60 * S, None)]),
            ("1m,1h", vec![spec(60 * S, None), spec(3600 * S, None)]),
            (
                " 1m:30d , 1h:365d ,1d:forever",
                vec![
                    spec(60 * S, Some(30 * day)),
                    spec(3600 * S, Some(365 * day)),
                    spec(day, None),
                ],
            ),
            (
                "10s,1m,5m",
                vec![spec(10 * S, None), spec(60 * S, None), spec(300 * S, None)],
            ),
        ] {
            assert_eq!(parse_rollups(text), Ok(want.clone()), "{text:?}");
            assert_eq!(
                parse_rollups(&format_rollups(&want)),
                Ok(want),
                "{text:?} printed"
            );
        }
    }

    #[test]
    fn bad_lists_name_the_entry_and_the_reason() {
        for (text, words) in [
            ("1h,1m", vec!["\"1m\"", "finest to coarsest"]),
            ("1m,1m", vec!["finest to coarsest"]),
            ("1m,90s", vec!["\"90s\"", "not a whole multiple of 1m"]),
            ("500ms", vec!["at least 1s"]),
            ("1h:30m", vec!["shorter than its resolution"]),
            ("fast", vec!["\"fast\""]),
            ("1m:", vec!["\"1m:\""]),
            ("1s,2s,4s,8s,16s,32s,64s,128s,256s", vec!["at most 8"]),
        ] {
            let e = parse_rollups(text).unwrap_err();
            for w in words {
                assert!(e.contains(w), "{text:?}: {e:?} lacks {w:?}");
            }
        }
    }
}
