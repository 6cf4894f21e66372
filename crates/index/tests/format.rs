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
    for bytes in [small_index().encode(), small_index().encode_uncompressed()] {
        truncations_fail(bytes);
    }
}

fn truncations_fail(bytes: Vec<u8>) {
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
    for bytes in [small_index().encode(), small_index().encode_uncompressed()] {
        bit_flips_fail(bytes);
    }
}

fn bit_flips_fail(bytes: Vec<u8>) {
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
    let b = idx.encode_uncompressed();
    let first = b[HEADER_LEN..HEADER_LEN + 10].to_vec();
    reseal(with(b, HEADER_LEN + 10, &first))
}

/// (name, input, max_series, expected error).
#[rustfmt::skip]
fn corruption_cases() -> Vec<(&'static str, Vec<u8>, usize, IndexError)> {
    // Entry-level damage is laid out in the uncompressed version (1); version 2 below.
    let good = small_index().encode_uncompressed();
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

/// A version-2 file around any body (resealed), claiming `count` series.
fn v2_with_body(body: &[u8], count: u32) -> Vec<u8> {
    let mut out = b"TPIX".to_vec();
    out.extend_from_slice(&2u16.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(body);
    out.extend_from_slice(&[0; 4]);
    reseal(out)
}

fn entries(keys: &[Vec<u8>]) -> Vec<u8> {
    let mut raw = Vec::new();
    for k in keys {
        raw.extend_from_slice(&(k.len() as u32).to_le_bytes());
        raw.extend_from_slice(k);
    }
    raw
}

#[test]
fn version_2_is_compressed_and_version_1_still_reads() {
    let mut idx = SeriesIndex::default();
    for h in 0..2000 {
        let host = format!("host_{h}");
        let rack = format!("{}", h % 100);
        idx.get_or_insert(&key(&[
            ("hostname", &host),
            ("region", "eu-west-1"),
            ("rack", &rack),
        ]))
        .unwrap();
    }
    let (v2, v1) = (idx.encode(), idx.encode_uncompressed());
    assert_eq!(&v2[4..6], &2u16.to_le_bytes());
    assert_eq!(&v1[4..6], &1u16.to_le_bytes());
    assert!(
        v2.len() * 4 < v1.len(),
        "v2 {} bytes, v1 {}",
        v2.len(),
        v1.len()
    );
    for bytes in [&v2, &v1] {
        let back = SeriesIndex::decode(bytes, IndexLimits::default()).unwrap();
        assert_same(&idx, &back);
        assert_eq!(back.encode(), v2, "re-encoding writes version 2");
    }
}

/// (name, input, expected error) for hostile version-2 bodies whose checksum is right.
#[test]
fn version_2_corruption_table() {
    let a = key(&[("host", "a")]);
    let b = key(&[("host", "b")]);
    let z = |raw: &[u8]| zstd::bulk::compress(raw, 3).unwrap();
    // A key that claims 16 MiB - 1 bytes of zeros: it compresses to a few hundred bytes and
    // would expand past the bound before it ends.
    let mut bomb = ((16u32 << 20) - 1).to_le_bytes().to_vec();
    bomb.resize(16 << 20, 0);
    let mut too_long = ((16u32 << 20) + 1).to_le_bytes().to_vec();
    too_long.extend_from_slice(&[0; 64]);
    let cases: Vec<(&str, Vec<u8>, IndexError)> = vec![
        (
            "not zstd",
            v2_with_body(b"garbage!", 1),
            corrupt(HEADER_LEN, "zstd body does not decompress"),
        ),
        (
            "empty body",
            v2_with_body(&[], 1),
            corrupt(HEADER_LEN, "zstd body does not decompress"),
        ),
        (
            "fewer keys than counted",
            v2_with_body(&z(&entries(std::slice::from_ref(&a))), 2),
            corrupt(HEADER_LEN + 4 + a.len(), "truncated key length"),
        ),
        (
            // A tiny file claiming millions of series: refused at its end, after
            // preallocating only what the expansion bound allows.
            "hostile count",
            v2_with_body(&z(&entries(std::slice::from_ref(&a))), 5_000_000),
            corrupt(HEADER_LEN + 4 + a.len(), "truncated key length"),
        ),
        (
            "more keys than counted",
            v2_with_body(&z(&entries(&[a.clone(), b.clone()])), 1),
            corrupt(
                HEADER_LEN + 4 + a.len(),
                "trailing bytes after the last key",
            ),
        ),
        (
            "duplicate key",
            v2_with_body(&z(&entries(&[a.clone(), a.clone()])), 2),
            corrupt(HEADER_LEN + 8 + a.len(), "duplicate series key"),
        ),
        (
            "undecodable key",
            v2_with_body(&z(&entries(&[vec![0, 7]])), 1),
            corrupt(
                HEADER_LEN + 4,
                "series key does not decode to a canonical tag set",
            ),
        ),
        (
            "key longer than its body",
            v2_with_body(&z(&[9, 0, 0, 0, 1]), 1),
            corrupt(HEADER_LEN, "key length past the end of the body"),
        ),
        (
            "key over MAX_KEY_LEN",
            v2_with_body(&z(&too_long), 1),
            corrupt(HEADER_LEN, "key length past the end of the body"),
        ),
        (
            "decompression bomb",
            v2_with_body(&z(&bomb), 1),
            corrupt(HEADER_LEN, "zstd body expands past its bound"),
        ),
    ];
    for (name, bytes, want) in cases {
        let err = SeriesIndex::decode(&bytes, IndexLimits::default()).unwrap_err();
        assert_eq!(err, want, "{name}");
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
