//! [`Matcher`]: tag predicates, and their evaluation against a [`SeriesIndex`].
//!
//! Semantics are SQL's: a series that lacks tag `k` has NULL for `k`, so every comparison on
//! `k` (`Eq`, `NotEq`, `In`, `NotIn`, `Regex`, `NotRegex`) is unknown for it and never matches.
//! `NotEq("host", "a")` is "has `host` and it is not `a`". Only `Not` and `NotExists` reach
//! series without the tag: `Not(m)` is the plain complement of `m` among all series.

use regex::{Regex, RegexBuilder};
use roaring::RoaringBitmap;

use crate::error::IndexError;
use crate::series::SeriesIndex;

/// Largest compiled size (bytes) of a matcher regex; see [`RegexBuilder::size_limit`].
pub const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// A predicate over the tag set of a series.
#[derive(Debug, Clone)]
pub enum Matcher {
    /// Every series.
    All,
    /// Has tag `.0` equal to `.1`.
    Eq(String, String),
    /// Has tag `.0` and it differs from `.1`.
    NotEq(String, String),
    /// Has tag `.0` and it is one of `.1` (an empty list matches nothing).
    In(String, Vec<String>),
    /// Has tag `.0` and it is none of `.1`.
    NotIn(String, Vec<String>),
    /// Has tag `.0` and the regex matches somewhere in it (unanchored, like PostgreSQL `~`).
    /// Build it with [`Matcher::regex`] to get the size check.
    Regex(String, Regex),
    /// Has tag `.0` and the regex matches nowhere in it.
    NotRegex(String, Regex),
    /// Has tag `.0` (any value, including the empty string).
    Exists(String),
    /// Lacks tag `.0`.
    NotExists(String),
    /// All of them (an empty list matches every series).
    And(Vec<Matcher>),
    /// Any of them (an empty list matches nothing).
    Or(Vec<Matcher>),
    /// Complement among all series.
    Not(Box<Matcher>),
}

impl Matcher {
    /// Compiles `pattern` with the [`REGEX_SIZE_LIMIT`]; the error names the tag and pattern.
    pub fn compile_regex(tag: &str, pattern: &str) -> Result<Regex, IndexError> {
        RegexBuilder::new(pattern)
            .size_limit(REGEX_SIZE_LIMIT)
            .dfa_size_limit(REGEX_SIZE_LIMIT)
            .build()
            .map_err(|e| IndexError::BadRegex {
                tag: tag.chars().take(64).collect(),
                pattern: pattern.chars().take(256).collect(),
                reason: match e {
                    regex::Error::CompiledTooBig(limit) => {
                        format!("compiled regex exceeds the size limit of {limit} bytes")
                    }
                    other => other.to_string(),
                },
            })
    }

    /// `Regex(tag, pattern)` after a size-limited compile.
    pub fn regex(tag: impl Into<String>, pattern: &str) -> Result<Matcher, IndexError> {
        let tag = tag.into();
        let re = Self::compile_regex(&tag, pattern)?;
        Ok(Matcher::Regex(tag, re))
    }

    /// `NotRegex(tag, pattern)` after a size-limited compile.
    pub fn not_regex(tag: impl Into<String>, pattern: &str) -> Result<Matcher, IndexError> {
        let tag = tag.into();
        let re = Self::compile_regex(&tag, pattern)?;
        Ok(Matcher::NotRegex(tag, re))
    }

    pub fn eq(tag: impl Into<String>, value: impl Into<String>) -> Matcher {
        Matcher::Eq(tag.into(), value.into())
    }

    pub fn not_eq(tag: impl Into<String>, value: impl Into<String>) -> Matcher {
        Matcher::NotEq(tag.into(), value.into())
    }

    /// Evaluates the matcher on one tag set given as a lookup function (the reference model
    /// for [`SeriesIndex::select`]; also usable on a single decoded key).
    pub fn matches<'a>(&self, tag: &impl Fn(&str) -> Option<&'a str>) -> bool {
        match self {
            Matcher::All => true,
            Matcher::Eq(k, v) => tag(k) == Some(v.as_str()),
            Matcher::NotEq(k, v) => tag(k).is_some_and(|x| x != v),
            Matcher::In(k, vs) => tag(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            Matcher::NotIn(k, vs) => tag(k).is_some_and(|x| vs.iter().all(|v| v != x)),
            Matcher::Regex(k, re) => tag(k).is_some_and(|x| re.is_match(x)),
            Matcher::NotRegex(k, re) => tag(k).is_some_and(|x| !re.is_match(x)),
            Matcher::Exists(k) => tag(k).is_some(),
            Matcher::NotExists(k) => tag(k).is_none(),
            Matcher::And(ms) => ms.iter().all(|m| m.matches(tag)),
            Matcher::Or(ms) => ms.iter().any(|m| m.matches(tag)),
            Matcher::Not(m) => !m.matches(tag),
        }
    }
}

impl SeriesIndex {
    /// Ids of the series that match `m`.
    ///
    /// Value predicates (`Regex`, `In`, ...) scan the distinct values of their tag key, never
    /// the series; `Not*` forms subtract from the tag's presence bitmap.
    pub fn select(&self, m: &Matcher) -> RoaringBitmap {
        match m {
            Matcher::All => self.all(),
            Matcher::Eq(k, v) => self.tag(k).map(|t| t.eq(v)).unwrap_or_default(),
            Matcher::NotEq(k, v) => self.present_minus(k, |t| t.eq(v)),
            Matcher::In(k, vs) => self.tag(k).map(|t| in_list(t, vs)).unwrap_or_default(),
            Matcher::NotIn(k, vs) => self.present_minus(k, |t| in_list(t, vs)),
            Matcher::Regex(k, re) => self
                .tag(k)
                .map(|t| t.union_where(|v| re.is_match(v)))
                .unwrap_or_default(),
            Matcher::NotRegex(k, re) => self
                .tag(k)
                .map(|t| t.union_where(|v| !re.is_match(v)))
                .unwrap_or_default(),
            Matcher::Exists(k) => self.tag(k).map(|t| t.present().clone()).unwrap_or_default(),
            Matcher::NotExists(k) => match self.tag(k) {
                Some(t) => self.all() - t.present(),
                None => self.all(),
            },
            Matcher::And(ms) => self.select_and(ms),
            Matcher::Or(ms) => ms.iter().fold(RoaringBitmap::new(), |mut acc, m| {
                acc |= self.select(m);
                acc
            }),
            Matcher::Not(inner) => self.all() - self.select(inner),
        }
    }

    fn select_and(&self, ms: &[Matcher]) -> RoaringBitmap {
        let Some((first, rest)) = ms.split_first() else {
            return self.all();
        };
        let mut acc = self.select(first);
        for m in rest {
            if acc.is_empty() {
                break;
            }
            acc &= self.select(m);
        }
        acc
    }

    fn present_minus(
        &self,
        key: &str,
        f: impl FnOnce(&crate::tags::TagValues) -> RoaringBitmap,
    ) -> RoaringBitmap {
        match self.tag(key) {
            Some(t) => {
                let mut p = t.present().clone();
                p -= f(t);
                p
            }
            None => RoaringBitmap::new(),
        }
    }
}

fn in_list(t: &crate::tags::TagValues, vs: &[String]) -> RoaringBitmap {
    vs.iter().fold(RoaringBitmap::new(), |mut acc, v| {
        acc |= t.eq(v);
        acc
    })
}
