//! Persistence: round trips, and a corruption table where every damaged input is a named
//! error with an offset (and never a panic).

mod common;

use common::key;
use proptest::prelude::*;
use tempora_index::{HEADER_LEN, IndexError, IndexLimits, Matcher, SeriesId, SeriesIndex};

fn small_index() -> SeriesIndex {
    let mut idx = SeriesIndex::new(IndexLimits::default());
    for tags in [
        vec![("host", "a"), ("dc", "east")],
        vec![("host", "b")],
        vec![],
        vec![("host", "x\0y"), ("os", "")],
    ] {
        idx.get_or_insert(&key(&tags)).unwrap();
    }
    idx
}

fn assert_same(a: &SeriesIndex, b: &SeriesIndex) {
    assert_eq!(a.len(), b.len());
    for i in 0..a.len() as u32 {
        let k = a.key(SeriesId(i)).unwrap();
        assert_eq!(b.key(SeriesId(i)), Some(k));
        assert_eq!(b.get(k), Some(SeriesId(i)));
    }
    assert_eq!(a.tag_keys(), b.tag_keys());
    for k in a.tag_keys() {
        assert_eq!(a.tag_values(k), b.tag_values(k));
        for v in a.tag_values(k) {
            let m = Matcher::eq(k, v);
            assert_eq!(a.select(&m), b.select(&m));
        }
    }
}

/// Rewrites the trailing CRC so that a deliberately hostile body passes the checksum.
fn reseal(mut bytes: Vec<u8>) -> Vec<u8> {
    let n = bytes.len() - 4;
    let crc = crc32c::crc32c(&bytes[..n]);
    bytes[n..].copy_from_slice(&crc.to_le_bytes());
    bytes
}

fn with(mut bytes: Vec<u8>, at: usize, patch: &[u8]) -> Vec<u8> {
    bytes[at..at + patch.len()].copy_from_slice(patch);
    bytes
}

#[test]
fn round_trip_small_and_empty() {
    for idx in [small_index(), SeriesIndex::default()] {
        let bytes = idx.encode();
        let back = SeriesIndex::decode(&bytes, IndexLimits::default()).unwrap();
        assert_same(&idx, &back);
        assert_eq!(back.encode(), bytes);
    }
}

#[test]
fn every_truncation_is_an_error() {
    let bytes = small_index().encode();
    for cut in 0..bytes.len() {
        let err = SeriesIndex::decode(&bytes[..cut], IndexLimits::default()).unwrap_err();
        assert!(err.offset().is_some(), "cut {cut}: {err}");
    }
    let mut long = bytes.clone();
    long.push(0);
    assert!(SeriesIndex::decode(&long, IndexLimits::default()).is_err());
}

#[test]
fn every_bit_flip_is_an_error() {
    let bytes = small_index().encode();
    for i in 0..bytes.len() {
        for bit in 0..8 {
            let mut b = bytes.clone();
            b[i] ^= 1 << bit;
            let err = SeriesIndex::decode(&b, IndexLimits::default()).unwrap_err();
            assert!(err.offset().is_some(), "byte {i} bit {bit}: {err}");
        }
    }
}

fn corrupt(offset: usize, reason: &'static str) -> IndexError {
    IndexError::Corrupt { offset, reason }
}

/// An index whose body is a copy of its first entry twice (4-byte length + 6-byte key each).
fn duplicate_keys() -> Vec<u8> {
    let mut idx = SeriesIndex::default();
    idx.get_or_insert(&key(&[("h", "1")])).unwrap();
    idx.get_or_insert(&key(&[("h", "2")])).unwrap();
    let b = idx.encode();
    let first = b[HEADER_LEN..HEADER_LEN + 10].to_vec();
    reseal(with(b, HEADER_LEN + 10, &first))
}

/// (name, input, max_series, expected error).
#[rustfmt::skip]
fn corruption_cases() -> Vec<(&'static str, Vec<u8>, usize, IndexError)> {
    let good = small_index().encode();
    let first_entry_end = HEADER_LEN + 4 + key(&[("host", "a"), ("dc", "east")]).len();
    let body_end = good.len() - 4;
    let g = || good.clone();
    vec![
        ("empty", vec![], 100, corrupt(0, "truncated header")),
        ("short header", g()[..10].to_vec(), 100, corrupt(10, "truncated header")),
        ("bad magic", with(g(), 0, b"NOPE"), 100, IndexError::BadMagic { offset: 0, found: 0x4e4f5045 }),
        ("bad version", with(g(), 4, &9u16.to_le_bytes()), 100, IndexError::UnsupportedVersion { offset: 4, version: 9 }),
        ("bad flags", with(g(), 6, &1u16.to_le_bytes()), 100, corrupt(6, "unknown flags")),
        ("huge body len", with(g(), 12, &u64::MAX.to_le_bytes()), 100, corrupt(12, "body length does not match the input size (torn or truncated)")),
        ("torn tail", g()[..good.len() - 1].to_vec(), 100, corrupt(12, "body length does not match the input size (torn or truncated)")),
        ("flipped crc", with(g(), body_end, &[good[body_end] ^ 1]), 100, IndexError::ChecksumMismatch { offset: body_end, stored: crc_at(&good, body_end) ^ 1, computed: crc_at(&good, body_end) }),
        ("hostile count", reseal(with(g(), 8, &u32::MAX.to_le_bytes())), 100, corrupt(8, "series count larger than the body can hold")),
        ("count too small", reseal(with(g(), 8, &1u32.to_le_bytes())), 100, corrupt(first_entry_end, "trailing bytes after the last key")),
        ("hostile key len", reseal(with(g(), HEADER_LEN, &u32::MAX.to_le_bytes())), 100, corrupt(HEADER_LEN, "key length past the end of the body")),
        ("undecodable key", reseal(with(g(), HEADER_LEN + 4, &[0, 7])), 100, corrupt(HEADER_LEN + 4, "series key does not decode to a canonical tag set")),
        ("duplicate key", duplicate_keys(), 100, corrupt(HEADER_LEN + 14, "duplicate series key")),
        ("over max_series", g(), 3, IndexError::TooManySeries { limit: 3 }),
    ]
}

fn crc_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

#[test]
fn corruption_table() {
    for (name, bytes, max_series, want) in corruption_cases() {
        let err = SeriesIndex::decode(&bytes, IndexLimits { max_series }).unwrap_err();
        assert_eq!(err, want, "{name}");
        if let Some(offset) = err.offset() {
            assert!(
                err.to_string().contains(&format!("byte {offset}")),
                "{name}: {err}"
            );
        }
    }
}

proptest! {
    #[test]
    fn round_trip(series in prop::collection::vec(
        prop::collection::btree_map("[a-c\\x00]{0,3}", "[a-c\\x00é]{0,3}", 0..4), 0..30)) {
        let mut idx = SeriesIndex::default();
        for tags in &series {
            let pairs: Vec<(&str, &str)> = tags.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            idx.get_or_insert(&key(&pairs)).unwrap();
        }
        let bytes = idx.encode();
        let back = SeriesIndex::decode(&bytes, IndexLimits::default()).unwrap();
        assert_same(&idx, &back);
        prop_assert_eq!(back.encode(), bytes);
    }
}
