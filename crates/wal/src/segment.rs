//! Segment naming and validation: what is a complete segment, what is a torn tail, what is
//! corruption. Pure functions over bytes; the I/O lives in `wal.rs` and `replay.rs`.

use crate::error::WalError;
use crate::frame::{self, FRAME_HEADER_LEN, Frame, HEADER_LEN, HeaderError, SegmentHeader};

/// File name suffix of segments.
pub(crate) const SUFFIX: &str = ".wal";
const NAME_DIGITS: usize = 20;
/// Most bytes the forward scan after a bad frame checksums before giving up (and reporting
/// corruption rather than risk skipping a valid record).
pub(crate) const SCAN_BUDGET_BYTES: u64 = 4 << 30;

/// The file name of the segment whose first record has `first_seq`.
pub(crate) fn segment_name(first_seq: u64) -> String {
    format!("{first_seq:0width$}{SUFFIX}", width = NAME_DIGITS)
}

/// The first seq a segment file name encodes, or `None` if `name` is not a segment.
pub(crate) fn parse_name(name: &str) -> Option<u64> {
    let digits = name.strip_suffix(SUFFIX)?;
    if digits.len() != NAME_DIGITS || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// What the log knows about one valid segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SegmentMeta {
    pub name: String,
    pub first_seq: u64,
    /// The previous segment's last seq, as recorded in the header.
    pub prev_last: Option<u64>,
    /// Seq of the last record (every known segment holds at least one).
    pub last_seq: u64,
    pub count: u64,
    /// Bytes of valid data: header, records and the seal if sealed.
    pub len: u64,
    pub sealed: bool,
}

/// How the last segment recovered.
#[derive(Debug)]
pub(crate) enum LastSegment {
    /// No valid record (0-byte, header-torn or header-only file): remove it.
    Empty { reason: String },
    /// Valid records; if `torn` names an offset, the file must be cut back to `meta.len`.
    Valid {
        meta: SegmentMeta,
        torn: Option<(u64, String)>,
    },
}

/// Where and why a frame walk stopped early.
struct Stop {
    offset: usize,
    reason: String,
    /// The frame checks out but breaks an invariant: never a torn write.
    definite: bool,
}

struct Walk {
    end: usize,
    count: u64,
    last_seq: Option<u64>,
    sealed: bool,
    stop: Option<Stop>,
}

/// Walks the frames after the header until the end or the first bad frame, reporting each
/// record as `(seq, payload_offset, payload_len)`.
fn walk(
    data: &[u8],
    first_seq: u64,
    max_len: usize,
    on_record: &mut dyn FnMut(u64, usize, usize),
) -> Walk {
    let mut w = Walk {
        end: HEADER_LEN,
        count: 0,
        last_seq: None,
        sealed: false,
        stop: None,
    };
    let stop = |offset, reason: String, definite| {
        Some(Stop {
            offset,
            reason,
            definite,
        })
    };
    while w.end < data.len() {
        let pos = w.end;
        if w.sealed {
            w.stop = stop(pos, "data after the seal".into(), true);
            break;
        }
        match frame::decode_frame(&data[pos..], max_len) {
            Err(e) => {
                w.stop = stop(pos, e.reason(), false);
                break;
            }
            Ok(Frame::Record { seq, payload }) => {
                let bad = match w.last_seq {
                    None if seq != first_seq => Some(format!(
                        "first record has seq {seq}, the segment header says {first_seq}"
                    )),
                    Some(last) if seq <= last => Some(format!(
                        "record seq {seq} is not greater than the previous {last}"
                    )),
                    _ => None,
                };
                if let Some(reason) = bad {
                    w.stop = stop(pos, reason, true);
                    break;
                }
                on_record(seq, pos + FRAME_HEADER_LEN, payload.len());
                w.count += 1;
                w.last_seq = Some(seq);
                w.end += FRAME_HEADER_LEN + payload.len();
            }
            Ok(Frame::Seal { last_seq, count }) => {
                if w.last_seq != Some(last_seq) || w.count != count {
                    let reason = format!(
                        "seal says {count} records up to seq {last_seq}, the segment holds {} up to {:?}",
                        w.count, w.last_seq
                    );
                    w.stop = stop(pos, reason, true);
                    break;
                }
                w.sealed = true;
                w.end += frame::SEAL_LEN;
            }
        }
    }
    w
}

fn header_error(name: &str, e: HeaderError) -> WalError {
    match e {
        HeaderError::UnsupportedVersion(version) => WalError::UnsupportedVersion {
            segment: name.to_string(),
            version,
        },
        e => WalError::corrupt(name, 0, e.reason()),
    }
}

/// Checks the header and that it matches the file name.
fn check_header(name: &str, name_seq: u64, data: &[u8]) -> Result<SegmentHeader, WalError> {
    let h = frame::decode_header(data).map_err(|e| header_error(name, e))?;
    if h.first_seq != name_seq {
        let reason = format!(
            "header first seq {} does not match the file name",
            h.first_seq
        );
        return Err(WalError::corrupt(name, 0, reason));
    }
    Ok(h)
}

/// Strictly validates a segment that must be complete: a good header, only valid frames up to
/// the last byte, at least one record, and a seal if `require_seal`.
pub(crate) fn check_complete(
    name: &str,
    name_seq: u64,
    data: &[u8],
    max_len: usize,
    require_seal: bool,
    on_record: &mut dyn FnMut(u64, usize, usize),
) -> Result<SegmentMeta, WalError> {
    let h = check_header(name, name_seq, data)?;
    let w = walk(data, name_seq, max_len, on_record);
    if let Some(stop) = w.stop {
        // Name the next valid frame, as the last segment's check does.
        let after = stop.offset + 1;
        let reason = match find_valid_frame(data, after, w.last_seq, max_len, SCAN_BUDGET_BYTES) {
            Ok(Some(q)) if !stop.definite => {
                format!("{}, and a valid frame follows at offset {q}", stop.reason)
            }
            _ => stop.reason,
        };
        return Err(WalError::corrupt(name, stop.offset as u64, reason));
    }
    let Some(last_seq) = w.last_seq else {
        return Err(WalError::corrupt(
            name,
            HEADER_LEN as u64,
            "segment holds no records",
        ));
    };
    if require_seal && !w.sealed {
        let reason = "segment is not sealed: it was cut short";
        return Err(WalError::corrupt(name, w.end as u64, reason));
    }
    Ok(segment_meta(name, name_seq, &h, &w, last_seq))
}

/// The metadata of a segment whose header `h` and frames `w` were checked.
fn segment_meta(
    name: &str,
    name_seq: u64,
    h: &SegmentHeader,
    w: &Walk,
    last_seq: u64,
) -> SegmentMeta {
    SegmentMeta {
        name: name.to_string(),
        first_seq: name_seq,
        prev_last: h.prev_last_seq,
        last_seq,
        count: w.count,
        len: w.end as u64,
        sealed: w.sealed,
    }
}

/// Recovers the last segment: a bad frame that no valid frame follows is a torn tail; one that
/// a valid frame (with a seq above the last good one) follows is corruption. `prev_last` is
/// the last seq of the previous segment.
pub(crate) fn recover_last(
    name: &str,
    name_seq: u64,
    data: &[u8],
    prev_last: Option<u64>,
    max_len: usize,
) -> Result<LastSegment, WalError> {
    if let Err(e) = frame::decode_header(data) {
        let torn = matches!(
            e,
            HeaderError::Short | HeaderError::BadMagic | HeaderError::BadChecksum
        );
        if !torn {
            return Err(header_error(name, e));
        }
        let from = HEADER_LEN.min(data.len());
        ensure_nothing_follows(name, data, 0, &e.reason(), from, prev_last, max_len)?;
        return Ok(LastSegment::Empty { reason: e.reason() });
    }
    let h = check_header(name, name_seq, data)?;
    let mut w = walk(data, name_seq, max_len, &mut |_, _, _| {});
    let torn = match w.stop.take() {
        None => None,
        Some(stop) if stop.definite => {
            return Err(WalError::corrupt(name, stop.offset as u64, stop.reason));
        }
        Some(stop) => {
            let after = w.last_seq.or(prev_last);
            let at = stop.offset;
            ensure_nothing_follows(name, data, at, &stop.reason, at + 1, after, max_len)?;
            Some((at as u64, stop.reason))
        }
    };
    let Some(last_seq) = w.last_seq else {
        let reason = torn.map_or("header only".into(), |(_, r)| r);
        return Ok(LastSegment::Empty { reason });
    };
    let meta = segment_meta(name, name_seq, &h, &w, last_seq);
    Ok(LastSegment::Valid { meta, torn })
}

/// Fails with `Corrupt` at `bad_at` if a valid frame starts anywhere in `data[from..]`.
fn ensure_nothing_follows(
    name: &str,
    data: &[u8],
    bad_at: usize,
    reason: &str,
    from: usize,
    after: Option<u64>,
    max_len: usize,
) -> Result<(), WalError> {
    let found = match find_valid_frame(data, from, after, max_len, SCAN_BUDGET_BYTES) {
        Ok(None) => return Ok(()),
        Ok(Some(q)) => format!("{reason}, and a valid frame follows at offset {q}"),
        Err(q) => format!(
            "{reason}, and the {} bytes after offset {q} could not all be checked for valid frames",
            data.len() - q
        ),
    };
    Err(WalError::corrupt(name, bad_at as u64, found))
}

/// The first offset at or after `from` where a frame with a valid checksum starts whose seq is
/// above `after` (a seal may equal it). `Err(offset)` if checksumming would exceed `budget`
/// bytes there.
pub(crate) fn find_valid_frame(
    data: &[u8],
    from: usize,
    after: Option<u64>,
    max_len: usize,
    mut budget: u64,
) -> Result<Option<usize>, usize> {
    let zeros = [0u8; FRAME_HEADER_LEN];
    for q in from..data.len().saturating_sub(FRAME_HEADER_LEN - 1) {
        let rest = &data[q..];
        // An all-zero frame header never checks out (tested in frame.rs): skip zero fill fast.
        if rest[..FRAME_HEADER_LEN] == zeros {
            continue;
        }
        let Ok(extent) = frame::frame_extent(rest, max_len) else {
            continue;
        };
        budget = match budget.checked_sub(extent as u64) {
            Some(b) => b,
            None => return Err(q),
        };
        let Ok(f) = frame::decode_frame(rest, max_len) else {
            continue;
        };
        let newer = match (f, after) {
            (_, None) => true,
            (Frame::Record { seq, .. }, Some(a)) => seq > a,
            (Frame::Seal { last_seq, .. }, Some(a)) => last_seq >= a,
        };
        if newer {
            return Ok(Some(q));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{encode_header, encode_record, encode_seal};

    const MAX: usize = 1 << 20;
    const H: usize = HEADER_LEN;

    /// Offset of the `k`th 8-byte-payload record in a test segment.
    fn at(k: u64) -> u64 {
        (H + 24 * k as usize) as u64
    }

    fn segment(first: u64, seqs: &[u64], seal: bool) -> Vec<u8> {
        let h = SegmentHeader {
            first_seq: first,
            prev_last_seq: None,
        };
        let mut b = encode_header(h).to_vec();
        for &s in seqs {
            encode_record(&mut b, s, &s.to_le_bytes());
        }
        if seal {
            b.extend_from_slice(&encode_seal(*seqs.last().unwrap(), seqs.len() as u64));
        }
        b
    }

    #[test]
    fn names() {
        assert_eq!(segment_name(42), "00000000000000000042.wal");
        assert_eq!(parse_name("00000000000000000042.wal"), Some(42));
        assert_eq!(parse_name(&segment_name(u64::MAX)), Some(u64::MAX));
        for bad in [
            "42.wal",
            "0000000000000000004x.wal",
            "00000000000000000042.tmp",
            "",
        ] {
            assert_eq!(parse_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn complete_segments() {
        let name = segment_name(5);
        let ok = segment(5, &[5, 6, 9], true);
        let meta = check_complete(&name, 5, &ok, MAX, true, &mut |_, _, _| {}).unwrap();
        assert_eq!((meta.first_seq, meta.last_seq, meta.count), (5, 9, 3));
        assert_eq!(meta.len, ok.len() as u64);
        let cases: [(&str, Vec<u8>, bool, u64); 6] = [
            ("unsealed", segment(5, &[5, 6], false), true, at(2)),
            ("empty", segment(5, &[], false), false, at(0)),
            ("seq repeats", segment(5, &[5, 5], false), false, at(1)),
            ("seq falls", segment(5, &[5, 7, 6], false), false, at(2)),
            ("first seq mismatch", segment(5, &[6], false), false, at(0)),
            ("header names other seq", segment(4, &[5], false), false, 0),
        ];
        for (case, data, seal, offset) in cases {
            match check_complete(&name, 5, &data, MAX, seal, &mut |_, _, _| {}) {
                Err(WalError::Corrupt { offset: o, .. }) => assert_eq!(o, offset, "{case}"),
                other => panic!("{case}: {other:?}"),
            }
        }
    }

    #[test]
    fn seal_must_match_and_end_the_segment() {
        let name = segment_name(1);
        let mut wrong = segment(1, &[1, 2], false);
        wrong.extend_from_slice(&encode_seal(2, 3));
        let mut after = segment(1, &[1, 2], true);
        encode_record(&mut after, 3, b"x");
        for (case, data, offset) in [("count", wrong, at(2)), ("after seal", after, at(3))] {
            let r = recover_last(&name, 1, &data, None, MAX);
            assert!(
                matches!(r, Err(WalError::Corrupt { offset: o, .. }) if o == offset),
                "{case}: {r:?}"
            );
        }
    }

    #[test]
    fn last_segment_tails() {
        let name = segment_name(1);
        let full = segment(1, &[1, 2, 3], false);
        let torn = recover_last(&name, 1, &full[..full.len() - 1], None, MAX).unwrap();
        assert!(
            matches!(torn, LastSegment::Valid { ref meta, torn: Some((o, _)) } if meta.count == 2 && o == at(2))
        );
        let mut mid = full.clone();
        mid[HEADER_LEN + 6] ^= 1;
        let r = recover_last(&name, 1, &mid, None, MAX);
        assert!(
            matches!(r, Err(WalError::Corrupt { offset: o, .. }) if o == at(0)),
            "{r:?}"
        );
        for len in [0, 10, HEADER_LEN - 1, HEADER_LEN, HEADER_LEN + 6] {
            let r = recover_last(&name, 1, &full[..len], None, MAX).unwrap();
            assert!(matches!(r, LastSegment::Empty { .. }), "len {len}");
        }
        let mut zero_header = full.clone();
        zero_header[..HEADER_LEN].fill(0);
        let r = recover_last(&name, 1, &zero_header, None, MAX);
        assert!(
            matches!(r, Err(WalError::Corrupt { offset: 0, .. })),
            "{r:?}"
        );
        let r = recover_last(&name, 1, &zero_header, Some(3), MAX).unwrap();
        assert!(matches!(r, LastSegment::Empty { .. }), "old frames only");
    }

    #[test]
    fn forward_scan() {
        let full = segment(1, &[1, 2, 3], false);
        type Want = Result<Option<usize>, usize>;
        let cases: [(&str, usize, Option<u64>, u64, Want); 5] = [
            ("finds next", H + 1, None, u64::MAX, Ok(Some(H + 24))),
            ("older seqs skipped", H + 1, Some(3), u64::MAX, Ok(None)),
            (
                "newer seq found",
                H + 1,
                Some(2),
                u64::MAX,
                Ok(Some(H + 48)),
            ),
            ("past the end", H + 73, None, u64::MAX, Ok(None)),
            ("budget", H + 1, None, 10, Err(H + 8)),
        ];
        for (case, from, after, budget, want) in cases {
            assert_eq!(
                find_valid_frame(&full, from, after, MAX, budget),
                want,
                "{case}"
            );
        }
        // Garbage whose length fields claim most of the buffer: bounded by the budget.
        let n = 1usize << 16;
        let mut garbage = vec![1u8; n];
        for q in (0..n).step_by(16) {
            let len = (n - q - FRAME_HEADER_LEN) as u32;
            garbage[q..q + 4].copy_from_slice(&len.to_le_bytes());
        }
        assert_eq!(find_valid_frame(&garbage, 0, None, MAX, 1 << 20), Err(256));
        assert_eq!(find_valid_frame(&garbage, 0, None, MAX, u64::MAX), Ok(None));
    }
}
