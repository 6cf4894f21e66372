//! The crate's one error type.

use std::io;

use tempora_model::SeqNo;

/// Errors of the write-ahead log.
#[derive(Debug, thiserror::Error)]
pub enum WalError {
    /// The log is damaged in a way recovery must not paper over: a bad frame in an older
    /// segment, a bad frame in the last segment that a valid record follows, a bad segment
    /// header, or sequence numbers that do not strictly increase. `offset` is the byte offset
    /// (in `segment`) of the header or frame that is bad.
    #[error("wal segment {segment} is corrupt at offset {offset}: {reason}")]
    Corrupt {
        segment: String,
        offset: u64,
        reason: String,
    },
    /// A segment header with a valid checksum names a format version this build cannot read.
    #[error("wal segment {segment} has unsupported format version {version}")]
    UnsupportedVersion { segment: String, version: u16 },
    /// The disk is full (ENOSPC). The failed commit was rolled back; retry once space returns.
    #[error("disk full while {op} wal segment {segment}: {source}")]
    DiskFull {
        op: &'static str,
        segment: String,
        source: io::Error,
    },
    /// Any other I/O failure.
    #[error("i/o error while {op} wal segment {segment}: {source}")]
    Io {
        op: &'static str,
        segment: String,
        source: io::Error,
    },
    /// `append` was given a payload above `WalOptions::max_record_size`.
    #[error("wal record of {size} bytes exceeds the limit of {limit} bytes")]
    RecordTooLarge { size: usize, limit: usize },
    /// `append` was given a sequence number not above the previous record's.
    #[error("wal sequence number {seq:?} is not greater than the previous {last:?}")]
    SeqNotIncreasing { seq: SeqNo, last: SeqNo },
    /// `WalOptions` violate a limit.
    #[error("invalid wal options: {0}")]
    InvalidOptions(&'static str),
}

impl WalError {
    /// Wraps an I/O error, mapping ENOSPC to [`WalError::DiskFull`].
    pub(crate) fn io(op: &'static str, segment: &str, source: io::Error) -> WalError {
        let segment = segment.to_string();
        if source.kind() == io::ErrorKind::StorageFull || source.raw_os_error() == Some(28) {
            WalError::DiskFull {
                op,
                segment,
                source,
            }
        } else {
            WalError::Io {
                op,
                segment,
                source,
            }
        }
    }

    pub(crate) fn corrupt(segment: &str, offset: u64, reason: impl Into<String>) -> WalError {
        WalError::Corrupt {
            segment: segment.to_string(),
            offset,
            reason: reason.into(),
        }
    }

    /// Whether this error is a disk-full condition (retrying later can succeed).
    pub fn is_disk_full(&self) -> bool {
        matches!(self, WalError::DiskFull { .. })
    }
}
