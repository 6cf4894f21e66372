//! Persistence of a [`SeriesIndex`]: see `docs/format/index.md`.
//!
//! Only the forward keys are stored, in id order; decode re-inserts them, which re-assigns the
//! same dense ids and rebuilds the inverted index.
//!
//! ```text
//! 0   magic        4 bytes  "TPIX"
//! 4   version      u16      1
//! 6   flags        u16      0
//! 8   series_count u32
//! 12  body_len     u64
//! 20  body         series_count × (u32 key_len, key bytes), in id order
//! 20+body_len      crc32c   u32 over bytes [0, 20 + body_len)
//! ```

use tracing::debug;

use crate::error::IndexError;
use crate::series::{IndexLimits, SeriesIndex};

/// First four bytes of an encoded index.
pub const INDEX_MAGIC: [u8; 4] = *b"TPIX";
/// The format version this build writes and reads.
pub const INDEX_FORMAT_VERSION: u16 = 1;
/// Bytes before the body.
pub const HEADER_LEN: usize = 20;
const TRAILER_LEN: usize = 4;
/// Smallest encoded size of one series (its length prefix).
const MIN_ENTRY_LEN: usize = 4;

fn corrupt(offset: usize, reason: &'static str) -> IndexError {
    IndexError::Corrupt { offset, reason }
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl SeriesIndex {
    /// Serializes the index (see the module docs).
    pub fn encode(&self) -> Vec<u8> {
        let body_len = self.key_bytes() + self.len() * MIN_ENTRY_LEN;
        let mut out = Vec::with_capacity(HEADER_LEN + body_len + TRAILER_LEN);
        out.extend_from_slice(&INDEX_MAGIC);
        out.extend_from_slice(&INDEX_FORMAT_VERSION.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(&(self.len() as u32).to_le_bytes());
        out.extend_from_slice(&(body_len as u64).to_le_bytes());
        for key in self.keys() {
            out.extend_from_slice(&(key.len() as u32).to_le_bytes());
            out.extend_from_slice(key);
        }
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// The series count an encoded index declares in its header (`HEADER_LEN` bytes suffice),
    /// after checking the magic number and version. The body is not verified here.
    pub fn peek_series_count(header: &[u8]) -> Result<usize, IndexError> {
        if header.len() < HEADER_LEN {
            return Err(corrupt(header.len(), "truncated header"));
        }
        if header[..4] != INDEX_MAGIC[..] {
            return Err(IndexError::BadMagic {
                offset: 0,
                found: u32::from_be_bytes([header[0], header[1], header[2], header[3]]),
            });
        }
        Ok(u32_at(header, 8) as usize)
    }

    /// Deserializes an index written by [`SeriesIndex::encode`]. Torn, truncated or corrupt
    /// input is an error naming the byte offset; it never panics, and allocation is bounded by
    /// the input size.
    pub fn decode(bytes: &[u8], limits: IndexLimits) -> Result<Self, IndexError> {
        let count = check_envelope(bytes)?;
        let body_end = bytes.len() - TRAILER_LEN;
        if count > (body_end - HEADER_LEN) / MIN_ENTRY_LEN {
            return Err(corrupt(8, "series count larger than the body can hold"));
        }
        if count > limits.max_series {
            return Err(IndexError::TooManySeries {
                limit: limits.max_series,
            });
        }
        let mut index = SeriesIndex::new(limits);
        index.reserve(count);
        let mut pos = HEADER_LEN;
        for i in 0..count {
            if body_end - pos < MIN_ENTRY_LEN {
                return Err(corrupt(pos, "truncated key length"));
            }
            let len = u32_at(bytes, pos) as usize;
            let start = pos + MIN_ENTRY_LEN;
            if len > body_end - start {
                return Err(corrupt(pos, "key length past the end of the body"));
            }
            let key = &bytes[start..start + len];
            match index.get_or_insert(key) {
                Ok((id, true)) if id.0 as usize == i => {}
                Ok(_) => return Err(corrupt(start, "duplicate series key")),
                Err(IndexError::CorruptKey(_) | IndexError::NonCanonicalKey { .. }) => {
                    return Err(corrupt(
                        start,
                        "series key does not decode to a canonical tag set",
                    ));
                }
                Err(e) => return Err(e),
            }
            pos = start + len;
        }
        if pos != body_end {
            return Err(corrupt(pos, "trailing bytes after the last key"));
        }
        debug!(series = count, bytes = bytes.len(), "decoded series index");
        Ok(index)
    }
}

/// Checks magic, version, flags, length and checksum; returns the series count.
fn check_envelope(bytes: &[u8]) -> Result<usize, IndexError> {
    if bytes.len() >= 4 && bytes[..4] != INDEX_MAGIC {
        return Err(IndexError::BadMagic {
            offset: 0,
            found: u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
        });
    }
    if bytes.len() < HEADER_LEN + TRAILER_LEN {
        return Err(corrupt(bytes.len(), "truncated header"));
    }
    let version = u16_at(bytes, 4);
    if version != INDEX_FORMAT_VERSION {
        return Err(IndexError::UnsupportedVersion { offset: 4, version });
    }
    if u16_at(bytes, 6) != 0 {
        return Err(corrupt(6, "unknown flags"));
    }
    let body_len = u64::from_le_bytes(bytes[12..20].try_into().unwrap_or_default());
    let want = (HEADER_LEN + TRAILER_LEN) as u64;
    if want.checked_add(body_len) != Some(bytes.len() as u64) {
        return Err(corrupt(
            12,
            "body length does not match the input size (torn or truncated)",
        ));
    }
    let body_end = bytes.len() - TRAILER_LEN;
    let stored = u32_at(bytes, body_end);
    let computed = crc32c::crc32c(&bytes[..body_end]);
    if stored != computed {
        return Err(IndexError::ChecksumMismatch {
            offset: body_end,
            stored,
            computed,
        });
    }
    Ok(u32_at(bytes, 8) as usize)
}
