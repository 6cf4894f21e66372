//! Series key encoding: the canonical, memcomparable bytes of a tag set.
//!
//! Format: for each tag in ascending key order, the escaped key then the escaped value.
//! A string is escaped by writing `0x00` as `0x00 0xFF` and ending it with `0x00 0x00`, so the
//! byte order of two encodings equals the order of their (key, value) sequences, and any byte
//! string round-trips. An empty tag set encodes as zero bytes.

use std::borrow::Cow;

use crate::error::{ModelError, Result};

/// The encoded key of a series (see the module docs for the format).
pub type SeriesKey = Vec<u8>;

/// Encodes a tag set. Tags need not be sorted; duplicate keys are an error.
pub fn encode_series_key(tags: &[(&str, &str)], out: &mut Vec<u8>) -> Result<()> {
    encode_series_key_with(tags, out, &mut Vec::new())
}

/// [`encode_series_key`] with a caller-owned scratch vector, so hot loops do not allocate.
pub fn encode_series_key_with(
    tags: &[(&str, &str)],
    out: &mut Vec<u8>,
    order: &mut Vec<usize>,
) -> Result<()> {
    order.clear();
    order.extend(0..tags.len());
    order.sort_unstable_by(|&a, &b| tags[a].0.cmp(tags[b].0));
    for pair in order.windows(2) {
        if tags[pair[0]].0 == tags[pair[1]].0 {
            return Err(ModelError::DuplicateTag {
                key: tags[pair[0]].0.to_string(),
            });
        }
    }
    for &i in order.iter() {
        escape(tags[i].0.as_bytes(), out);
        escape(tags[i].1.as_bytes(), out);
    }
    Ok(())
}

fn escape(s: &[u8], out: &mut Vec<u8>) {
    out.reserve(s.len() + 2);
    if s.contains(&0) {
        for &b in s {
            out.push(b);
            if b == 0 {
                out.push(0xFF);
            }
        }
    } else {
        out.extend_from_slice(s);
    }
    out.extend_from_slice(&[0, 0]);
}

/// Decodes a series key into (key, value) pairs in key order.
pub fn decode_series_key(key: &[u8]) -> Result<Vec<(String, String)>> {
    let mut tags = Vec::new();
    let mut pos = 0;
    while pos < key.len() {
        let (k, v) = next_tag(key, &mut pos)?;
        tags.push((k.into_owned(), v.into_owned()));
    }
    Ok(tags)
}

/// Calls `f(key, value)` for each tag of an encoded key, in key order, allocating only for a
/// string that holds an escaped NUL.
pub fn for_each_tag(key: &[u8], mut f: impl FnMut(&str, &str)) -> Result<()> {
    if let Ok(text) = std::str::from_utf8(key) {
        // UTF-8 holds no 0xFF byte, so no NUL is escaped: every NUL starts a terminator, and
        // the strings between are valid as they are (checked once, not string by string).
        let mut rest = text;
        while !rest.is_empty() {
            let Some((k, after)) = split_terminated(rest) else {
                break;
            };
            let Some((v, after)) = split_terminated(after) else {
                break;
            };
            f(k, v);
            rest = after;
        }
        if rest.is_empty() {
            return Ok(());
        }
        // A malformed key: the byte-by-byte walk names the error and where (it calls `f` for
        // no tag, as `f` has seen the well-formed ones before it).
        let mut pos = key.len() - rest.len();
        loop {
            next_tag(key, &mut pos)?;
        }
    }
    let mut pos = 0;
    while pos < key.len() {
        let (k, v) = next_tag(key, &mut pos)?;
        f(&k, &v);
    }
    Ok(())
}

/// A string ended by `\0\0` at the start of `s`, and what follows it; `None` when `s` holds
/// no such string.
fn split_terminated(s: &str) -> Option<(&str, &str)> {
    let nul = s.find('\0')?;
    let after = s[nul..].strip_prefix("\0\0")?;
    Some((&s[..nul], after))
}

/// The tag at `pos` (its key, then its value), each borrowed from `key` when it holds no
/// escaped NUL.
fn next_tag<'a>(key: &'a [u8], pos: &mut usize) -> Result<(Cow<'a, str>, Cow<'a, str>)> {
    let k = unescape_borrowed(key, pos)?;
    if *pos >= key.len() {
        return Err(ModelError::CorruptKey {
            offset: *pos,
            reason: "tag key without a value",
        });
    }
    Ok((k, unescape_borrowed(key, pos)?))
}

/// The string at `pos`: borrowed when its first NUL is its terminator, otherwise (an escape,
/// or a corrupt key) read byte by byte by [`unescape`], which reports the same errors.
fn unescape_borrowed<'a>(key: &'a [u8], pos: &mut usize) -> Result<Cow<'a, str>> {
    let start = *pos;
    if let Some(nul) = key[start..].iter().position(|&b| b == 0).map(|i| start + i)
        && key.get(nul + 1) == Some(&0)
    {
        let s = std::str::from_utf8(&key[start..nul]).map_err(|_| ModelError::CorruptKey {
            offset: start,
            reason: "tag is not UTF-8",
        })?;
        *pos = nul + 2;
        return Ok(Cow::Borrowed(s));
    }
    unescape(key, pos).map(Cow::Owned)
}

fn unescape(key: &[u8], pos: &mut usize) -> Result<String> {
    let start = *pos;
    let mut s = Vec::new();
    loop {
        let Some(&b) = key.get(*pos) else {
            return Err(ModelError::CorruptKey {
                offset: *pos,
                reason: "unterminated string",
            });
        };
        *pos += 1;
        if b != 0 {
            s.push(b);
            continue;
        }
        match key.get(*pos) {
            Some(0) => {
                *pos += 1;
                break;
            }
            Some(0xFF) => {
                *pos += 1;
                s.push(0);
            }
            _ => {
                return Err(ModelError::CorruptKey {
                    offset: *pos,
                    reason: "bad escape after NUL",
                });
            }
        }
    }
    String::from_utf8(s).map_err(|_| ModelError::CorruptKey {
        offset: start,
        reason: "tag is not UTF-8",
    })
}

/// A stable 64-bit hash of an encoded key (xxh3; never changes between versions, because it
/// places series in hash buckets on disk).
pub fn series_hash(key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn enc(tags: &[(&str, &str)]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_series_key(tags, &mut out).unwrap();
        out
    }

    #[test]
    fn named_cases() {
        type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a [u8]);
        let cases: &[Case] = &[
            ("empty", &[], b""),
            ("one", &[("a", "b")], b"a\0\0b\0\0"),
            (
                "sorted",
                &[("b", "2"), ("a", "1")],
                b"a\x00\x001\x00\x00b\x00\x002\x00\x00",
            ),
            ("empty value", &[("a", "")], b"a\0\0\0\0"),
            ("nul inside", &[("a", "x\0y")], b"a\0\0x\0\xFFy\0\0"),
        ];
        for (name, tags, want) in cases {
            let got = enc(tags);
            assert_eq!(got, *want, "{name}");
            let back = decode_series_key(&got).unwrap();
            let mut visited = Vec::new();
            for_each_tag(&got, |k, v| visited.push((k.to_string(), v.to_string()))).unwrap();
            assert_eq!(visited, back, "{name}: for_each_tag");
            let mut sorted: Vec<(String, String)> = tags
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            sorted.sort();
            assert_eq!(back, sorted, "{name}");
        }
    }

    #[test]
    fn duplicate_key_rejected() {
        let mut out = Vec::new();
        let err = encode_series_key(&[("a", "1"), ("a", "2")], &mut out).unwrap_err();
        assert_eq!(err, ModelError::DuplicateTag { key: "a".into() });
    }

    #[test]
    fn corrupt_keys_are_errors() {
        let cases: &[(&str, &[u8])] = &[
            ("unterminated", b"abc"),
            ("key only", b"a\0\0"),
            ("bad escape", b"a\0\x01"),
            ("not utf8", b"\xFF\0\0a\0\0"),
        ];
        for (name, bytes) in cases {
            assert!(decode_series_key(bytes).is_err(), "{name}");
        }
        // Where and why, whichever path (borrowed or byte by byte) reads the string.
        let corrupt = |offset, reason| Err(ModelError::CorruptKey { offset, reason });
        let exact: &[(&str, &[u8], Result<()>)] = &[
            ("no terminator", b"abc", corrupt(3, "unterminated string")),
            (
                "key without value",
                b"a\0\0",
                corrupt(3, "tag key without a value"),
            ),
            ("bad escape", b"a\0\x01", corrupt(2, "bad escape after NUL")),
            (
                "not UTF-8",
                b"\xFF\0\0a\0\0",
                corrupt(0, "tag is not UTF-8"),
            ),
            (
                "escaped, not UTF-8",
                b"a\0\0\xFF\0\xFF\0\0",
                corrupt(3, "tag is not UTF-8"),
            ),
            (
                "escape then no terminator",
                b"a\0\xFF",
                corrupt(3, "unterminated string"),
            ),
            (
                "a good tag, then no terminator",
                b"h\0\0v\0\0abc",
                corrupt(9, "unterminated string"),
            ),
            (
                "a good tag, then a key alone",
                b"h\0\0v\0\0k\0\0",
                corrupt(9, "tag key without a value"),
            ),
            (
                "a NUL at the end",
                b"a\0",
                corrupt(2, "bad escape after NUL"),
            ),
        ];
        // The well-formed tags before the error are visited, once.
        let mut seen = Vec::new();
        let got = for_each_tag(b"h\0\0v\0\0abc", |k, v| seen.push(format!("{k}={v}")));
        assert!(got.is_err());
        assert_eq!(seen, ["h=v"]);
        for (name, bytes, want) in exact {
            assert_eq!(&decode_series_key(bytes).map(|_| ()), want, "{name}");
            assert_eq!(
                &for_each_tag(bytes, |_, _| ()),
                want,
                "{name}: for_each_tag"
            );
        }
    }

    #[test]
    fn tags_are_borrowed_unless_a_string_is_escaped() {
        let key = enc(&[("host", "h1"), ("nul", "x\0y")]);
        let mut pos = 0;
        let mut tags = Vec::new();
        while pos < key.len() {
            tags.push(next_tag(&key, &mut pos).unwrap());
        }
        let borrowed: Vec<(bool, bool)> = tags
            .iter()
            .map(|(k, v)| (matches!(k, Cow::Borrowed(_)), matches!(v, Cow::Borrowed(_))))
            .collect();
        assert_eq!(borrowed, [(true, true), (true, false)]);
        assert_eq!(tags[1].1, "x\0y");
    }

    proptest! {
        #[test]
        fn roundtrip_and_order(a in proptest::collection::btree_map("[a-c\\x00]{0,3}", "[a-c\\x00]{0,3}", 0..4),
                               b in proptest::collection::btree_map("[a-c\\x00]{0,3}", "[a-c\\x00]{0,3}", 0..4)) {
            let ta: Vec<(&str, &str)> = a.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let tb: Vec<(&str, &str)> = b.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let (ea, eb) = (enc(&ta), enc(&tb));
            let da = decode_series_key(&ea).unwrap();
            let want: Vec<(String, String)> = a.clone().into_iter().collect();
            prop_assert_eq!(&da, &want);
            // Memcomparable: byte order equals the order of the flattened (key, value) list.
            let fa: Vec<&str> = ta.iter().flat_map(|(k, v)| [*k, *v]).collect();
            let fb: Vec<&str> = tb.iter().flat_map(|(k, v)| [*k, *v]).collect();
            prop_assert_eq!(ea.cmp(&eb), fa.cmp(&fb));
        }
    }
}
