//! Persistence of a [`SeriesIndex`]: see `docs/format/index.md`.
//!
//! Only the forward keys are stored, in id order; decode re-inserts them, which re-assigns the
//! same dense ids and rebuilds the inverted index.
//!
//! ```text
//! 0   magic        4 bytes  "TPIX"
//! 4   version      u16      2 (written); 1 and 2 are read
//! 6   flags        u16      0
//! 8   series_count u32
//! 12  body_len     u64
//! 20  body         version 1: series_count × (u32 key_len, key bytes), in id order
//!                  version 2: that, compressed as one zstd frame
//! 20+body_len      crc32c   u32 over bytes [0, 20 + body_len)
//! ```
//!
//! A version-2 body is decoded as a stream, entry by entry, so memory follows the keys, and
//! the decompressed size is bounded twice: no key over [`MAX_KEY_LEN`] bytes, no body over
//! [`MAX_EXPANSION`] times its compressed size (plus 64 KiB).

use tracing::debug;

use crate::error::IndexError;
use crate::series::{IndexLimits, SeriesIndex};

/// First four bytes of an encoded index.
pub const INDEX_MAGIC: [u8; 4] = *b"TPIX";
/// The format version this build writes (it reads this one and version 1).
pub const INDEX_FORMAT_VERSION: u16 = 2;
/// The uncompressed version, still read.
const VERSION_UNCOMPRESSED: u16 = 1;
/// zstd level of version-2 bodies.
const ZSTD_LEVEL: i32 = 3;
/// Longest series key a version-2 body may hold (an allocation bound: keys come from lines,
/// which the server limits far below this).
pub const MAX_KEY_LEN: usize = 16 << 20;
/// Most a version-2 body may expand: decompressed bytes ≤ this × compressed bytes + 64 KiB.
pub const MAX_EXPANSION: u64 = 1024;
/// Bytes before the body.
pub const HEADER_LEN: usize = 20;
const TRAILER_LEN: usize = 4;
/// Smallest encoded size of one series (its length prefix).
const MIN_ENTRY_LEN: usize = 4;

const PAST_END: &str = "entry past the end of the body";

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
    /// Serializes the index in the current version (see the module docs).
    pub fn encode(&self) -> Vec<u8> {
        let raw = self.raw_body();
        let body = zstd::bulk::compress(&raw, ZSTD_LEVEL).expect("zstd compresses to memory");
        self.envelope(INDEX_FORMAT_VERSION, &body)
    }

    /// Serializes the index in version 1 (uncompressed body), which readers still accept.
    pub fn encode_uncompressed(&self) -> Vec<u8> {
        self.envelope(VERSION_UNCOMPRESSED, &self.raw_body())
    }

    /// `series_count × (u32 key_len, key)`, in id order.
    fn raw_body(&self) -> Vec<u8> {
        let mut body = Vec::with_capacity(self.key_bytes() + self.len() * MIN_ENTRY_LEN);
        for key in self.keys() {
            body.extend_from_slice(&(key.len() as u32).to_le_bytes());
            body.extend_from_slice(key);
        }
        body
    }

    fn envelope(&self, version: u16, body: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN + body.len() + TRAILER_LEN);
        out.extend_from_slice(&INDEX_MAGIC);
        out.extend_from_slice(&version.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(&(self.len() as u32).to_le_bytes());
        out.extend_from_slice(&(body.len() as u64).to_le_bytes());
        out.extend_from_slice(body);
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
        let (version, count) = check_envelope(bytes)?;
        let body = &bytes[HEADER_LEN..bytes.len() - TRAILER_LEN];
        if version == VERSION_UNCOMPRESSED && count > body.len() / MIN_ENTRY_LEN {
            return Err(corrupt(8, "series count larger than the body can hold"));
        }
        if count > limits.max_series {
            return Err(IndexError::TooManySeries {
                limit: limits.max_series,
            });
        }
        let index = if version == VERSION_UNCOMPRESSED {
            let mut plain: Entries<'_, std::io::Empty> = Entries::Plain { body, pos: 0 };
            decode_entries(&mut plain, count, count, limits)?
        } else {
            let decoder = zstd::stream::read::Decoder::with_buffer(body)
                .map_err(|_| corrupt(HEADER_LEN, "not a zstd frame"))?;
            let limit = MAX_EXPANSION * body.len() as u64 + (64 << 10);
            let mut entries = Entries::Zstd {
                reader: std::io::Read::take(decoder, limit + 1),
                pos: 0,
                limit,
            };
            // The count is not checked against the body here (entries are smaller than 4
            // bytes once compressed): preallocate no more than the expansion bound could hold.
            let reserve = count.min(usize::try_from(limit).unwrap_or(usize::MAX) / MIN_ENTRY_LEN);
            decode_entries(&mut entries, count, reserve, limits)?
        };
        debug!(
            series = count,
            bytes = bytes.len(),
            version,
            "decoded series index"
        );
        Ok(index)
    }
}

/// Where the entries of a body come from; `pos` counts bytes of the uncompressed body, and
/// error offsets are `HEADER_LEN + pos` (in version 2, an offset in the decompressed body).
enum Entries<'a, R> {
    Plain { body: &'a [u8], pos: usize },
    Zstd { reader: R, pos: usize, limit: u64 },
}

impl<R: std::io::Read> Entries<'_, R> {
    fn pos(&self) -> usize {
        match self {
            Entries::Plain { pos, .. } | Entries::Zstd { pos, .. } => *pos,
        }
    }

    /// The next `n` bytes, or `None` at a clean end of the body (no byte left).
    fn next(&mut self, n: usize, out: &mut Vec<u8>) -> Result<Option<()>, IndexError> {
        out.clear();
        match self {
            Entries::Plain { body, pos } => {
                if *pos == body.len() {
                    return Ok(None);
                }
                let Some(b) = body.get(*pos..*pos + n) else {
                    return Err(corrupt(HEADER_LEN + *pos, PAST_END));
                };
                out.extend_from_slice(b);
                *pos += n;
            }
            Entries::Zstd { reader, pos, limit } => {
                let got = std::io::Read::read_to_end(
                    &mut std::io::Read::take(&mut *reader, n as u64),
                    out,
                )
                .map_err(|_| corrupt(HEADER_LEN, "zstd body does not decompress"))?;
                if got == 0 && n > 0 {
                    return Ok(None);
                }
                if (*pos + got) as u64 > *limit {
                    return Err(corrupt(HEADER_LEN, "zstd body expands past its bound"));
                }
                if got < n {
                    return Err(corrupt(HEADER_LEN + *pos, PAST_END));
                }
                *pos += n;
            }
        }
        Ok(Some(()))
    }
}

/// Reads `count` entries into a new index, preallocated for `reserve` of them.
fn decode_entries<R: std::io::Read>(
    entries: &mut Entries<'_, R>,
    count: usize,
    reserve: usize,
    limits: IndexLimits,
) -> Result<SeriesIndex, IndexError> {
    let mut index = SeriesIndex::new(limits);
    index.reserve(reserve);
    let (mut len_buf, mut key) = (Vec::with_capacity(4), Vec::new());
    for i in 0..count {
        let at = entries.pos();
        match entries.next(MIN_ENTRY_LEN, &mut len_buf) {
            Ok(Some(())) => {}
            Ok(None)
            | Err(IndexError::Corrupt {
                reason: PAST_END, ..
            }) => {
                return Err(corrupt(HEADER_LEN + at, "truncated key length"));
            }
            Err(e) => return Err(e),
        }
        let len = u32_at(&len_buf, 0) as usize;
        if len > MAX_KEY_LEN {
            return Err(corrupt(
                HEADER_LEN + at,
                "key length past the end of the body",
            ));
        }
        let start = HEADER_LEN + entries.pos();
        match entries.next(len, &mut key) {
            Ok(Some(())) => {}
            Ok(None) if len == 0 => key.clear(),
            Ok(None)
            | Err(IndexError::Corrupt {
                reason: PAST_END, ..
            }) => {
                return Err(corrupt(
                    HEADER_LEN + at,
                    "key length past the end of the body",
                ));
            }
            Err(e) => return Err(e),
        }
        match index.get_or_insert(&key) {
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
    }
    let at = entries.pos();
    if entries.next(1, &mut key)?.is_some() {
        return Err(corrupt(
            HEADER_LEN + at,
            "trailing bytes after the last key",
        ));
    }
    Ok(index)
}

/// Checks magic, version, flags, length and checksum; returns the version and series count.
fn check_envelope(bytes: &[u8]) -> Result<(u16, usize), IndexError> {
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
    if version != INDEX_FORMAT_VERSION && version != VERSION_UNCOMPRESSED {
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
    Ok((version, u32_at(bytes, 8) as usize))
}
