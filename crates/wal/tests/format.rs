//! The on-disk format as documented in docs/format/wal.md, checked with an independent
//! encoder: what the log writes is byte-identical to it, and logs built by hand open as
//! documented.

mod common;

use common::*;
use tempora_wal::{SeqNo, SyncPolicy, Wal, WalError, WalOptions};

fn opts(segment_size: u64) -> WalOptions {
    WalOptions {
        segment_size,
        max_record_size: 1024,
        sync: SyncPolicy::Sync,
    }
}

#[test]
fn written_bytes_match_the_documented_format() {
    let b = Backend::mem();
    let mut wal = Wal::open(b.store(), opts(80)).unwrap();
    for (seq, p) in [(7u64, &b"a"[..]), (9, b"bc"), (12, b"")] {
        wal.append(SeqNo(seq), p).unwrap();
        wal.commit().unwrap();
    }
    assert_eq!(
        b.segments(),
        vec![enc::name(7), enc::name(9), enc::name(12)]
    );
    let want = [
        enc::segment(None, &[(7, b"a")], true),
        enc::segment(Some(7), &[(9, b"bc")], true),
        enc::segment(Some(9), &[(12, b"")], false),
    ];
    for (name, want) in b.segments().iter().zip(want) {
        assert_eq!(b.get(name).unwrap(), want, "{name}");
    }
    // Pinned bytes of the first segment: a format change must be deliberate.
    let hex: String = b
        .get(&enc::name(7))
        .unwrap()
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect();
    assert_eq!(hex, PINNED_FIRST_SEGMENT);
}

const PINNED_FIRST_SEGMENT: &str = concat!(
    "544d505257414c000100000007000000000000000000000000000000efd80f19",
    "01000000fa4344d8070000000000000061",
    "ffffffffc04e3f6307000000000000000100000000000000",
);

#[test]
fn hand_built_logs_open_as_documented() {
    let a: &[u8] = b"alpha";
    for (case, files, want) in hand_built_cases(a) {
        let b = Backend::mem();
        for (n, d) in files {
            b.put(&n, d);
        }
        match (open_records(b.store(), &opts(1 << 20)), want) {
            (Ok(got), Ok(seqs)) => {
                assert_eq!(got.iter().map(|r| r.0).collect::<Vec<_>>(), seqs, "{case}");
                assert!(got.iter().all(|r| r.1 == a), "{case}");
            }
            (
                Err(WalError::Corrupt {
                    segment,
                    offset,
                    reason,
                }),
                Err(w),
            ) => {
                assert_eq!((segment, offset), w, "{case}: {reason}");
            }
            (got, want) => panic!("{case}: got {:?}, want {want:?}", got.map(|r| r.len())),
        }
    }
}

type Files = Vec<(String, Vec<u8>)>;
type Want = Result<Vec<u64>, (String, u64)>;

/// Named logs built with the independent encoder, and the records (or the corrupt segment
/// and offset) that opening them must give.
fn hand_built_cases(a: &[u8]) -> Vec<(&'static str, Files, Want)> {
    vec![
        (
            "three segments",
            vec![
                (enc::name(1), enc::segment(None, &[(1, a), (2, a)], true)),
                (enc::name(5), enc::segment(Some(2), &[(5, a)], true)),
                (
                    enc::name(6),
                    enc::segment(Some(5), &[(6, a), (9, a)], false),
                ),
            ],
            Ok(vec![1, 2, 5, 6, 9]),
        ),
        (
            "first segment after truncation names a predecessor",
            vec![(enc::name(5), enc::segment(Some(2), &[(5, a)], false))],
            Ok(vec![5]),
        ),
        (
            "seq repeats across segments",
            vec![
                (enc::name(1), enc::segment(None, &[(1, a), (2, a)], true)),
                (enc::name(2), enc::segment(Some(2), &[(2, a)], false)),
            ],
            Err((enc::name(2), HEADER_LEN as u64)),
        ),
        (
            "predecessor mismatch",
            vec![
                (enc::name(1), enc::segment(None, &[(1, a)], true)),
                (enc::name(3), enc::segment(Some(2), &[(3, a)], false)),
            ],
            Err((enc::name(3), 0)),
        ),
        (
            "seq falls inside a segment",
            vec![(
                enc::name(4),
                enc::segment(None, &[(4, a), (6, a), (5, a)], false),
            )],
            Err((enc::name(4), (HEADER_LEN + 2 * 21) as u64)),
        ),
        (
            "file name disagrees with the header",
            vec![(enc::name(3), enc::segment(None, &[(4, a)], false))],
            Err((enc::name(3), 0)),
        ),
        (
            "older segment without a seal",
            vec![
                (enc::name(1), enc::segment(None, &[(1, a)], false)),
                (enc::name(2), enc::segment(Some(1), &[(2, a)], false)),
            ],
            Err((enc::name(1), (HEADER_LEN + 21) as u64)),
        ),
        (
            "seal count disagrees",
            vec![(
                enc::name(1),
                [
                    enc::segment(None, &[(1, a), (2, a)], false),
                    enc::seal(2, 3),
                ]
                .concat(),
            )],
            Err((enc::name(1), (HEADER_LEN + 42) as u64)),
        ),
    ]
}

#[test]
fn unsupported_version_is_named() {
    let b = Backend::mem();
    let mut seg = enc::segment(None, &[(1, b"x")], false);
    seg[8] = 2;
    let crc = crc32c::crc32c(&seg[..28]);
    seg[28..32].copy_from_slice(&crc.to_le_bytes());
    b.put(&enc::name(1), seg);
    let r = Wal::open(b.store(), opts(1 << 20));
    assert!(
        matches!(r, Err(WalError::UnsupportedVersion { version: 2, .. })),
        "{:?}",
        r.err()
    );
}

#[test]
fn hostile_lengths_do_not_allocate() {
    // Length fields claiming up to 4 GiB in an older and in the last segment: rejected by
    // the size limit, never allocated.
    for len in [1025u32, 1 << 30, u32::MAX - 1] {
        let b = Backend::mem();
        let mut older = enc::segment(None, &[(1, b"x")], true);
        older[HEADER_LEN..HEADER_LEN + 4].copy_from_slice(&len.to_le_bytes());
        b.put(&enc::name(1), older);
        b.put(&enc::name(2), enc::segment(Some(1), &[(2, b"y")], false));
        let r = open_records(b.store(), &opts(1 << 20));
        assert!(
            matches!(&r, Err(WalError::Corrupt { segment, offset, .. }) if *segment == enc::name(1) && *offset == HEADER_LEN as u64),
            "len {len}: {:?}",
            r.map(|x| x.len())
        );
        b.remove(&enc::name(1));
        let mut last = enc::segment(Some(1), &[(2, b"y"), (3, b"z")], false);
        let at = HEADER_LEN + 17;
        last[at..at + 4].copy_from_slice(&len.to_le_bytes());
        b.put(&enc::name(2), last);
        let got = open_records(b.store(), &opts(1 << 20)).unwrap();
        assert_eq!(got, vec![(2, b"y".to_vec())], "len {len}: torn tail");
    }
}
