//! Parsing one logical line into tokens.
//!
//! [`parse_line`] is generic over how names are kept: [`Borrowed`] (slices of the input; a
//! name with a backslash makes it give up with [`Fail::Escaped`]) or [`Unescaped`] (such names
//! are copied and unescaped). Tokens are found 8 bytes at a time (SWAR) with a byte loop for
//! the last few bytes of a line; tokens are short, so this beats calling `memchr` per token.
//! Field keys are checked for duplicates with a 64-bit filter, so the common case (all
//! distinct) costs no string compares.

use std::borrow::Cow;

use tempora_model::{FieldValue, validate_name};

use crate::error::{Error, snippet};
use crate::number::{IntError, ScalarError, parse_i64, parse_scalar};
use crate::split::closing_quote;

/// Bytes that end a token: a lookup table for the tail of a line and, for the 8-bytes-at-a-time
/// scan, each byte repeated in every lane of a word.
struct Stops<const N: usize> {
    table: [bool; 256],
    pattern: [u64; N],
}

const fn stops<const N: usize>(bytes: [u8; N]) -> Stops<N> {
    let mut table = [false; 256];
    let mut pattern = [0; N];
    let mut i = 0;
    while i < N {
        table[bytes[i] as usize] = true;
        pattern[i] = bytes[i] as u64 * 0x0101_0101_0101_0101;
        i += 1;
    }
    Stops { table, pattern }
}

/// The lowest set bit marks the first zero byte of `x` (higher bits can be false positives,
/// which never matter because callers only look at the lowest).
#[inline(always)]
fn zero_bytes(x: u64) -> u64 {
    x.wrapping_sub(0x0101_0101_0101_0101) & !x & 0x8080_8080_8080_8080
}

/// Measurement: ends at `,` or space.
static MEASUREMENT: Stops<3> = stops(*b", \\");
/// Tag keys, tag values and field keys: end at `,`, `=` or space.
static KEY: Stops<4> = stops(*b",= \\");
/// Unquoted field values and the timestamp: end at `,` or space.
static VALUE: Stops<2> = stops(*b", ");

/// Characters a backslash escapes in a measurement (besides the backslash itself).
const MEASUREMENT_ESCAPES: &[u8] = b", ";
/// Characters a backslash escapes in tag keys, tag values and field keys.
const KEY_ESCAPES: &[u8] = b",= ";
/// Characters a backslash escapes in a string field value.
const STRING_ESCAPES: &[u8] = b"\"";

/// How a line's names are materialised.
pub(crate) trait Names<'a> {
    type Name: AsRef<str> + Default;
    /// Converts a name as written; `escaped` says whether it holds a backslash. `None` asks
    /// the caller to parse the line again with [`Unescaped`].
    fn name(raw: &'a str, escaped: bool, escapes: &[u8]) -> Option<Self::Name>;
}

/// The fast path: names borrowed from the input; a line with an escape in a name is handed to
/// [`Unescaped`].
pub(crate) struct Borrowed;

impl<'a> Names<'a> for Borrowed {
    type Name = &'a str;
    #[inline(always)]
    fn name(raw: &'a str, escaped: bool, _: &[u8]) -> Option<&'a str> {
        (!escaped).then_some(raw)
    }
}

/// The slow path: names with escapes are copied and unescaped.
pub(crate) struct Unescaped;

impl<'a> Names<'a> for Unescaped {
    type Name = Cow<'a, str>;
    fn name(raw: &'a str, escaped: bool, escapes: &[u8]) -> Option<Cow<'a, str>> {
        Some(if escaped {
            Cow::Owned(unescape(raw, escapes))
        } else {
            Cow::Borrowed(raw)
        })
    }
}

/// Why [`parse_line`] gave up.
#[derive(Debug)]
pub(crate) enum Fail {
    /// A name holds an escape: parse again with [`Unescaped`].
    Escaped,
    /// The line is invalid (boxed to keep results small on the hot path).
    Bad(Box<Error>),
}

impl From<Error> for Fail {
    #[cold]
    fn from(e: Error) -> Self {
        Fail::Bad(Box::new(e))
    }
}

/// One parsed line; the vectors are reused from line to line.
pub(crate) struct Line<'a, M: Names<'a>> {
    /// The measurement as written (escapes included), for cheap same-table checks.
    pub raw_measurement: &'a str,
    pub measurement: M::Name,
    pub tags: Vec<(M::Name, M::Name)>,
    /// 0-based byte offset of each tag key, for error messages.
    pub tag_offsets: Vec<usize>,
    pub fields: Vec<(M::Name, FieldValue)>,
    /// Time in nanoseconds, if the line had a timestamp.
    pub time: Option<i64>,
}

impl<'a, M: Names<'a>> Default for Line<'a, M> {
    fn default() -> Self {
        Self {
            raw_measurement: "",
            measurement: M::Name::default(),
            tags: Vec::new(),
            tag_offsets: Vec::new(),
            fields: Vec::new(),
            time: None,
        }
    }
}

/// A cursor over one line.
struct Cursor<'a> {
    s: &'a str,
    b: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    #[inline(always)]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.pos).copied()
    }

    /// Index of the first byte at or after `i` in `stop` (or the line's length). Eight bytes
    /// at a time: tokens are short, so most end within the first word, and that branch is
    /// well predicted, unlike a byte loop's exit.
    #[inline(always)]
    fn scan<const N: usize>(&self, mut i: usize, stop: &Stops<N>) -> usize {
        let pats = stop.pattern;
        while let Some(word) = self.b.get(i..i + 8) {
            let w = u64::from_le_bytes(word.try_into().expect("8 bytes"));
            let mut m = 0;
            for p in pats {
                m |= zero_bytes(w ^ p);
            }
            if m != 0 {
                return i + (m.trailing_zeros() / 8) as usize;
            }
            i += 8;
        }
        while i < self.b.len() && !stop.table[self.b[i] as usize] {
            i += 1;
        }
        i
    }

    /// Reads a name up to an unescaped stop byte.
    #[inline(always)]
    fn name<M: Names<'a>, const N: usize>(
        &mut self,
        stop: &Stops<N>,
        escapes: &[u8],
    ) -> Result<M::Name, Fail> {
        let start = self.pos;
        let mut i = self.scan(start, stop);
        let escaped = self.b.get(i) == Some(&b'\\');
        while self.b.get(i) == Some(&b'\\') {
            if i + 1 >= self.b.len() {
                return Err(Error::EscapeAtEnd { col: i + 1 }.into());
            }
            i = self.scan(i + 2, stop);
        }
        self.pos = i;
        M::name(&self.s[start..i], escaped, escapes).ok_or(Fail::Escaped)
    }

    #[inline(always)]
    fn skip_spaces(&mut self) {
        while self.peek() == Some(b' ') {
            self.pos += 1;
        }
    }
}

/// Removes the backslash of each `\c` where `c` is a backslash or in `escapes`; other
/// backslashes are literal.
fn unescape(s: &str, escapes: &[u8]) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let (mut last, mut i) = (0, 0);
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() && (b[i + 1] == b'\\' || escapes.contains(&b[i + 1])) {
            out.push_str(&s[last..i]);
            last = i + 1;
            i += 2;
        } else {
            i += 1;
        }
    }
    out.push_str(&s[last..]);
    out
}

/// Checks a tag or field key with the model's rules, for a positioned error.
/// `RowBatchBuilder::push` checks names again, so skipping names that obviously pass (not
/// 4 bytes long like `time`, not starting with `_` like `__x`, short) loses nothing.
#[inline(always)]
fn check_name(what: &'static str, name: &str, offset: usize) -> Result<(), Error> {
    let b = name.as_bytes();
    if b.len() != 4 && b.len() <= 64 && b.first().is_some_and(|&c| c != b'_') {
        return Ok(());
    }
    validate_name(name).map_err(|e| name_error(what, e, offset))
}

/// Turns a model name error into a positioned one.
pub(crate) fn name_error(what: &'static str, e: tempora_model::ModelError, offset: usize) -> Error {
    match e {
        tempora_model::ModelError::InvalidName { name, reason } => Error::InvalidName {
            what,
            name,
            reason,
            col: offset + 1,
        },
        other => Error::Model(other),
    }
}

/// Parses `s` (one logical line without its line ending) starting at byte `start` into
/// `out`. `scale` converts the timestamp to nanoseconds (`precision` names it in errors).
pub(crate) fn parse_line<'a, M: Names<'a>>(
    s: &'a str,
    start: usize,
    scale: i64,
    precision: &'static str,
    out: &mut Line<'a, M>,
) -> Result<(), Fail> {
    out.tags.clear();
    out.tag_offsets.clear();
    out.fields.clear();
    out.time = None;
    let mut c = Cursor {
        s,
        b: s.as_bytes(),
        pos: start,
    };
    out.measurement = c.name::<M, 3>(&MEASUREMENT, MEASUREMENT_ESCAPES)?;
    if out.measurement.as_ref().is_empty() {
        return Err(Error::MissingMeasurement { col: start + 1 }.into());
    }
    out.raw_measurement = &s[start..c.pos];
    while c.peek() == Some(b',') {
        c.pos += 1;
        parse_tag(&mut c, out)?;
    }
    // A tag value or measurement stops only at ',' (handled above), '=' (an error in
    // parse_tag), a space or the end.
    c.skip_spaces();
    if c.peek().is_none() {
        return Err(Error::MissingFields { col: c.pos + 1 }.into());
    }
    let mut filter = 0u64;
    loop {
        parse_field(&mut c, out, &mut filter)?;
        match c.peek() {
            None => return Ok(()),
            Some(b',') => c.pos += 1,
            Some(b' ') => break,
            Some(_) => return Err(trailing(&c, "field value").into()),
        }
    }
    c.skip_spaces();
    if c.peek().is_none() {
        return Ok(());
    }
    out.time = Some(parse_time(&mut c, scale, precision)?);
    c.skip_spaces();
    if c.peek().is_some() {
        return Err(trailing(&c, "timestamp").into());
    }
    Ok(())
}

/// The error for unexpected bytes at the cursor.
#[cold]
fn trailing(c: &Cursor<'_>, after: &'static str) -> Error {
    // Report up to the next blank or comma (both ASCII, so the slice is on char boundaries).
    let end = c.scan(c.pos + 1, &VALUE);
    Error::Trailing {
        found: snippet(&c.s[c.pos..end]),
        after,
        col: c.pos + 1,
    }
}

/// Parses `key=value` after a `,` in the tag section.
#[inline(always)]
fn parse_tag<'a, M: Names<'a>>(c: &mut Cursor<'a>, out: &mut Line<'a, M>) -> Result<(), Fail> {
    let key_at = c.pos;
    let key = c.name::<M, 4>(&KEY, KEY_ESCAPES)?;
    let k = key.as_ref();
    if k.is_empty() {
        let col = key_at + 1;
        return Err(Error::EmptyKey {
            what: "tag key",
            col,
        }
        .into());
    }
    if c.peek() != Some(b'=') {
        return Err(missing_equals("tag key", k, c.pos));
    }
    c.pos += 1;
    let value_at = c.pos;
    let value = c.name::<M, 4>(&KEY, KEY_ESCAPES)?;
    if value.as_ref().is_empty() {
        let key = snippet(k);
        return Err(Error::MissingTagValue {
            key,
            col: value_at + 1,
        }
        .into());
    }
    if c.peek() == Some(b'=') {
        let key = snippet(k);
        return Err(Error::EqualsInTagValue {
            key,
            col: c.pos + 1,
        }
        .into());
    }
    check_name("tag key", k, key_at)?;
    out.tags.push((key, value));
    out.tag_offsets.push(key_at);
    Ok(())
}

#[cold]
fn missing_equals(what: &'static str, name: &str, at: usize) -> Fail {
    let name = snippet(name);
    Error::MissingEquals {
        what,
        name,
        col: at + 1,
    }
    .into()
}

/// Parses one `key=value` in the field section. A repeated key replaces the earlier value;
/// `filter` has one bit per (length, last byte) hash of the keys seen, so distinct keys
/// rarely need a string compare.
#[inline(always)]
fn parse_field<'a, M: Names<'a>>(
    c: &mut Cursor<'a>,
    out: &mut Line<'a, M>,
    filter: &mut u64,
) -> Result<(), Fail> {
    let key_at = c.pos;
    let key = c.name::<M, 4>(&KEY, KEY_ESCAPES)?;
    let k = key.as_ref();
    let Some(&last) = k.as_bytes().last() else {
        let col = key_at + 1;
        return Err(Error::EmptyKey {
            what: "field key",
            col,
        }
        .into());
    };
    if c.peek() != Some(b'=') {
        return Err(missing_equals("field key", k, c.pos));
    }
    c.pos += 1;
    let value = parse_value(c, k)?;
    check_name("field key", k, key_at)?;
    let bit = 1u64 << ((k.len() + 7 * last as usize) & 63);
    if *filter & bit != 0
        && let Some(slot) = out.fields.iter_mut().find(|(f, _)| f.as_ref() == k)
    {
        slot.1 = value;
        return Ok(());
    }
    *filter |= bit;
    out.fields.push((key, value));
    Ok(())
}

/// Parses a field value at the cursor: a quoted string or a scalar.
#[inline(always)]
fn parse_value(c: &mut Cursor<'_>, key: &str) -> Result<FieldValue, Error> {
    let at = c.pos;
    match c.peek() {
        None | Some(b',') | Some(b' ') => Err(Error::MissingFieldValue {
            field: snippet(key),
            col: at + 1,
        }),
        Some(b'"') => {
            let Some(close) = closing_quote(c.b, at + 1) else {
                return Err(Error::UnterminatedString {
                    field: snippet(key),
                    col: at + 1,
                });
            };
            c.pos = close + 1;
            let raw = &c.s[at + 1..close];
            Ok(FieldValue::Str(if raw.contains('\\') {
                unescape(raw, STRING_ESCAPES)
            } else {
                raw.to_string()
            }))
        }
        Some(_) => {
            let end = c.scan(at, &VALUE);
            c.pos = end;
            parse_scalar(&c.b[at..end]).map_err(|e| scalar_error(e, &c.s[at..end], key, at))
        }
    }
}

#[cold]
fn scalar_error(e: ScalarError, value: &str, key: &str, at: usize) -> Error {
    match e {
        ScalarError::Invalid => Error::InvalidFieldValue {
            value: snippet(value),
            field: snippet(key),
            col: at + 1,
        },
        ScalarError::OutOfRange(kind) => Error::FieldOutOfRange {
            kind,
            value: snippet(value),
            field: snippet(key),
            col: at + 1,
        },
    }
}

/// Parses the timestamp at the cursor and scales it to nanoseconds.
#[inline(always)]
fn parse_time(c: &mut Cursor<'_>, scale: i64, precision: &'static str) -> Result<i64, Error> {
    let at = c.pos;
    let end = c.scan(at, &VALUE);
    c.pos = end;
    let tok = &c.b[at..end];
    let overflow = || Error::TimestampOverflow {
        value: snippet(&c.s[at..end]),
        precision,
        col: at + 1,
    };
    match parse_i64(tok) {
        Ok(t) => t.checked_mul(scale).ok_or_else(overflow),
        Err(IntError::Overflow) => Err(overflow()),
        Err(IntError::Invalid) => Err(Error::InvalidTimestamp {
            value: snippet(&c.s[at..end]),
            col: at + 1,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unescape_rules() {
        let cases = [
            ("none", "abc", KEY_ESCAPES, "abc"),
            ("comma", "a\\,b", KEY_ESCAPES, "a,b"),
            ("equals", "a\\=b", KEY_ESCAPES, "a=b"),
            ("space", "a\\ b", KEY_ESCAPES, "a b"),
            ("backslash", "a\\\\b", KEY_ESCAPES, "a\\b"),
            ("three backslashes", "a\\\\\\b", KEY_ESCAPES, "a\\\\b"),
            ("literal", "a\\b", KEY_ESCAPES, "a\\b"),
            (
                "equals in measurement",
                "a\\=b",
                MEASUREMENT_ESCAPES,
                "a\\=b",
            ),
            ("quote", "a\\\"b", STRING_ESCAPES, "a\"b"),
            ("literal in string", "a\\nb", STRING_ESCAPES, "a\\nb"),
            ("multibyte", "é\\ ü", KEY_ESCAPES, "é ü"),
        ];
        for (name, input, escapes, want) in cases {
            assert_eq!(unescape(input, escapes), want, "{name}");
        }
    }
}
