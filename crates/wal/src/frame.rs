//! Byte framing of a segment: the segment header and the frames after it.
//!
//! This module knows nothing about what a record's payload means, nor about recovery policy;
//! it only encodes and decodes bytes (see `docs/format/wal.md`). All integers are little-endian.
//!
//! ```text
//! header (32 bytes): magic "TMPRWAL\0" | u16 version=1 | u16 flags | u64 first_seq
//!                    | u64 prev_last_seq | u32 crc32c(bytes 0..28)
//!                    flags bit 0: prev_last_seq is present; other bits must be 0
//! record frame:      u32 len | u32 crc32c(len ++ seq ++ payload) | u64 seq | payload[len]
//! seal frame:        u32 0xFFFF_FFFF | u32 crc32c(0xFFFF_FFFF ++ last_seq ++ count) | u64 last_seq | u64 count
//! ```

/// First eight bytes of every segment.
pub const MAGIC: [u8; 8] = *b"TMPRWAL\0";
/// Format version written by this build, the only one it reads.
pub const VERSION: u16 = 1;
/// Length of the segment header.
pub const HEADER_LEN: usize = 32;
/// Header flag: the header records the last seq of the previous segment.
pub const FLAG_HAS_PREV: u16 = 1;
/// Length of a frame's fixed part (length, checksum, seq).
pub const FRAME_HEADER_LEN: usize = 16;
/// Length field value that marks the seal frame instead of a record.
pub const SEAL_MARK: u32 = u32::MAX;
/// Length of the seal frame.
pub const SEAL_LEN: usize = FRAME_HEADER_LEN + 8;

/// Why a segment header does not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderError {
    /// Fewer than [`HEADER_LEN`] bytes.
    Short,
    BadMagic,
    BadChecksum,
    /// Checksum valid, but the version is not [`VERSION`].
    UnsupportedVersion(u16),
    /// Checksum valid, but reserved flags are set.
    BadFlags(u16),
}

impl HeaderError {
    pub fn reason(self) -> String {
        match self {
            HeaderError::Short => "segment shorter than its header".into(),
            HeaderError::BadMagic => "bad segment magic".into(),
            HeaderError::BadChecksum => "segment header checksum mismatch".into(),
            HeaderError::UnsupportedVersion(v) => format!("unsupported version {v}"),
            HeaderError::BadFlags(f) => format!("reserved header flags set: {f:#06x}"),
        }
    }
}

/// What a segment header records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegmentHeader {
    /// Seq of the segment's first record (also its file name).
    pub first_seq: u64,
    /// Seq of the last record of the segment before this one, when one existed at creation.
    pub prev_last_seq: Option<u64>,
}

/// Encodes a segment header.
pub fn encode_header(h: SegmentHeader) -> [u8; HEADER_LEN] {
    let mut b = [0u8; HEADER_LEN];
    let flags = if h.prev_last_seq.is_some() {
        FLAG_HAS_PREV
    } else {
        0
    };
    b[0..8].copy_from_slice(&MAGIC);
    b[8..10].copy_from_slice(&VERSION.to_le_bytes());
    b[10..12].copy_from_slice(&flags.to_le_bytes());
    b[12..20].copy_from_slice(&h.first_seq.to_le_bytes());
    b[20..28].copy_from_slice(&h.prev_last_seq.unwrap_or(0).to_le_bytes());
    let crc = crc32c::crc32c(&b[0..28]);
    b[28..32].copy_from_slice(&crc.to_le_bytes());
    b
}

/// Decodes the segment header at the start of `buf`.
pub fn decode_header(buf: &[u8]) -> Result<SegmentHeader, HeaderError> {
    if buf.len() < HEADER_LEN {
        return Err(HeaderError::Short);
    }
    if buf[0..8] != MAGIC {
        return Err(HeaderError::BadMagic);
    }
    if crc32c::crc32c(&buf[0..28]) != u32_at(buf, 28) {
        return Err(HeaderError::BadChecksum);
    }
    let version = u16::from_le_bytes([buf[8], buf[9]]);
    if version != VERSION {
        return Err(HeaderError::UnsupportedVersion(version));
    }
    let flags = u16::from_le_bytes([buf[10], buf[11]]);
    if flags & !FLAG_HAS_PREV != 0 {
        return Err(HeaderError::BadFlags(flags));
    }
    let prev = u64_at(buf, 20);
    if flags & FLAG_HAS_PREV == 0 && prev != 0 {
        return Err(HeaderError::BadFlags(flags));
    }
    Ok(SegmentHeader {
        first_seq: u64_at(buf, 12),
        prev_last_seq: (flags & FLAG_HAS_PREV != 0).then_some(prev),
    })
}

/// One decoded frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame<'a> {
    Record {
        seq: u64,
        payload: &'a [u8],
    },
    /// Closes a segment: no frame may follow it.
    Seal {
        last_seq: u64,
        count: u64,
    },
}

/// Why the bytes at some offset are not a valid frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameError {
    /// The frame runs past the end of the data.
    Truncated {
        have: usize,
        need: usize,
    },
    /// The length field exceeds the record size limit.
    TooLong {
        len: u32,
        limit: usize,
    },
    BadChecksum,
}

impl FrameError {
    pub fn reason(self) -> String {
        match self {
            FrameError::Truncated { have, need } => {
                format!("truncated frame: {have} bytes left, frame needs {need}")
            }
            FrameError::TooLong { len, limit } => {
                format!("implausible record length {len} (limit {limit})")
            }
            FrameError::BadChecksum => "frame checksum mismatch".into(),
        }
    }
}

/// Appends a record frame to `out`.
pub fn encode_record(out: &mut Vec<u8>, seq: u64, payload: &[u8]) {
    let len = u32::try_from(payload.len()).expect("record length checked by the caller");
    assert!(
        len != SEAL_MARK,
        "record length collides with the seal mark"
    );
    let start = out.len();
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&seq.to_le_bytes());
    out.extend_from_slice(payload);
    let crc = frame_crc(&out[start..]);
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

/// Encodes the seal frame of a segment holding `count` records, the last with `last_seq`.
pub fn encode_seal(last_seq: u64, count: u64) -> [u8; SEAL_LEN] {
    let mut s = [0u8; SEAL_LEN];
    s[0..4].copy_from_slice(&SEAL_MARK.to_le_bytes());
    s[8..16].copy_from_slice(&last_seq.to_le_bytes());
    s[16..24].copy_from_slice(&count.to_le_bytes());
    let crc = frame_crc(&s);
    s[4..8].copy_from_slice(&crc.to_le_bytes());
    s
}

/// Decodes the frame at the start of `buf`. Never reads or allocates based on a length field
/// before checking it against `max_len` and the bytes present.
pub fn decode_frame(buf: &[u8], max_len: usize) -> Result<Frame<'_>, FrameError> {
    let need = frame_extent(buf, max_len)?;
    let len = u32_at(buf, 0);
    if frame_crc(&buf[..need]) != u32_at(buf, 4) {
        return Err(FrameError::BadChecksum);
    }
    let seq = u64_at(buf, 8);
    Ok(if len == SEAL_MARK {
        Frame::Seal {
            last_seq: seq,
            count: u64_at(buf, 16),
        }
    } else {
        Frame::Record {
            seq,
            payload: &buf[FRAME_HEADER_LEN..need],
        }
    })
}

/// The encoded length of the frame at the start of `buf`, judged from its length field alone
/// (no checksum): fails if the field is implausible or the frame runs past `buf`.
pub fn frame_extent(buf: &[u8], max_len: usize) -> Result<usize, FrameError> {
    if buf.len() < FRAME_HEADER_LEN {
        return Err(FrameError::Truncated {
            have: buf.len(),
            need: FRAME_HEADER_LEN,
        });
    }
    let len = u32_at(buf, 0);
    let body = if len == SEAL_MARK {
        8
    } else if len as usize > max_len {
        return Err(FrameError::TooLong {
            len,
            limit: max_len,
        });
    } else {
        len as usize
    };
    let need = FRAME_HEADER_LEN + body;
    if buf.len() < need {
        return Err(FrameError::Truncated {
            have: buf.len(),
            need,
        });
    }
    Ok(need)
}

/// Checksum of an encoded frame: over the length field, then seq and body (skipping the
/// checksum field itself).
fn frame_crc(frame: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&frame[0..4]), &frame[8..])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_errors() {
        for prev_last_seq in [None, Some(0), Some(41)] {
            let h = SegmentHeader {
                first_seq: 42,
                prev_last_seq,
            };
            assert_eq!(decode_header(&encode_header(h)), Ok(h));
        }
        let h = encode_header(SegmentHeader {
            first_seq: 42,
            prev_last_seq: Some(7),
        });
        type Damage = Box<dyn Fn(&mut Vec<u8>)>;
        let cases: [(&str, Damage, HeaderError); 4] = [
            ("short", Box::new(|b| b.truncate(31)), HeaderError::Short),
            ("magic", Box::new(|b| b[0] ^= 1), HeaderError::BadMagic),
            (
                "seq bit",
                Box::new(|b| b[13] ^= 0x10),
                HeaderError::BadChecksum,
            ),
            (
                "crc bit",
                Box::new(|b| b[31] ^= 0x80),
                HeaderError::BadChecksum,
            ),
        ];
        for (name, damage, want) in cases {
            let mut b = h.to_vec();
            damage(&mut b);
            assert_eq!(decode_header(&b), Err(want), "{name}");
        }
        let resealed = |at: usize, v: u8| {
            let mut b = h;
            b[at] = v;
            let crc = crc32c::crc32c(&b[0..28]);
            b[28..32].copy_from_slice(&crc.to_le_bytes());
            decode_header(&b)
        };
        assert_eq!(resealed(8, 2), Err(HeaderError::UnsupportedVersion(2)));
        assert_eq!(resealed(10, 3), Err(HeaderError::BadFlags(3)));
        assert_eq!(
            resealed(10, 0),
            Err(HeaderError::BadFlags(0)),
            "prev without flag"
        );
    }

    #[test]
    fn frames_round_trip() {
        let mut buf = Vec::new();
        encode_record(&mut buf, 7, b"hello");
        encode_record(&mut buf, 8, b"");
        buf.extend_from_slice(&encode_seal(8, 2));
        let f1 = decode_frame(&buf, 100).unwrap();
        assert_eq!(
            f1,
            Frame::Record {
                seq: 7,
                payload: b"hello"
            }
        );
        let rest = &buf[FRAME_HEADER_LEN + 5..];
        let f2 = decode_frame(rest, 100).unwrap();
        assert_eq!(
            f2,
            Frame::Record {
                seq: 8,
                payload: b""
            }
        );
        let rest = &rest[FRAME_HEADER_LEN..];
        assert_eq!(
            decode_frame(rest, 100).unwrap(),
            Frame::Seal {
                last_seq: 8,
                count: 2
            }
        );
    }

    #[test]
    fn frame_errors() {
        let mut buf = Vec::new();
        encode_record(&mut buf, 7, b"hello");
        assert!(matches!(
            decode_frame(&buf[..20], 100),
            Err(FrameError::Truncated { have: 20, need: 21 })
        ));
        assert!(matches!(
            decode_frame(&buf[..3], 100),
            Err(FrameError::Truncated { .. })
        ));
        assert!(matches!(
            decode_frame(&buf, 4),
            Err(FrameError::TooLong { len: 5, limit: 4 })
        ));
        for bit in 0..buf.len() * 8 {
            let mut b = buf.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            assert!(decode_frame(&b, 100).is_err(), "bit {bit}");
        }
        assert!(decode_frame(&[0u8; 64], 100).is_err(), "zero fill");
        // Recovery skips all-zero windows without checksumming them; that is only sound
        // because an all-zero frame header never checks out.
        assert_ne!(frame_crc(&[0u8; FRAME_HEADER_LEN]), 0);
    }
}
