//! The index crate's one error type.

use tempora_model::ModelError;

/// Errors raised by the series index, its matchers and its persistence format.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum IndexError {
    /// A series key handed to [`crate::SeriesIndex::get_or_insert`] does not decode.
    #[error("invalid series key: {0}")]
    CorruptKey(#[from] ModelError),
    /// A series key decodes but is not canonical (tag keys unsorted or repeated).
    #[error("invalid series key: tag key {key:?} is out of order or repeated")]
    NonCanonicalKey { key: String },
    /// The index already holds `limit` series.
    #[error("series limit reached: the index already holds {limit} series")]
    TooManySeries { limit: usize },
    /// A series key longer than `u32::MAX` bytes.
    #[error("series key of {len} bytes is too long")]
    KeyTooLong { len: usize },
    /// A regex matcher failed to compile or exceeds the size limit.
    #[error("invalid regex {pattern:?} for tag {tag:?}: {reason}")]
    BadRegex {
        tag: String,
        pattern: String,
        reason: String,
    },
    /// A persisted index does not start with the index magic number.
    #[error("corrupt index at byte {offset}: bad magic number {found:#010x}")]
    BadMagic { offset: usize, found: u32 },
    /// A persisted index has a format version this build cannot read.
    #[error("corrupt index at byte {offset}: unsupported format version {version}")]
    UnsupportedVersion { offset: usize, version: u16 },
    /// The stored checksum does not match the bytes it covers.
    #[error(
        "corrupt index at byte {offset}: checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"
    )]
    ChecksumMismatch {
        offset: usize,
        stored: u32,
        computed: u32,
    },
    /// Any other damage to a persisted index (truncation, bad lengths, hostile counts, bad keys).
    #[error("corrupt index at byte {offset}: {reason}")]
    Corrupt { offset: usize, reason: &'static str },
}

impl IndexError {
    /// The byte offset of a persistence error, `None` for other errors.
    pub fn offset(&self) -> Option<usize> {
        match self {
            IndexError::BadMagic { offset, .. }
            | IndexError::UnsupportedVersion { offset, .. }
            | IndexError::ChecksumMismatch { offset, .. }
            | IndexError::Corrupt { offset, .. } => Some(*offset),
            _ => None,
        }
    }
}
