//! Tempora's write-ahead log: segmented, checksummed, with group commit, torn-tail recovery
//! and parallel replay. The byte format is specified in `docs/format/wal.md`.
//!
//! Invariants:
//! - **Records** are `(seq, payload)` with strictly increasing [`SeqNo`]s across the whole log.
//!   The payload is opaque here (`frame.rs` knows framing only).
//! - The log is a sequence of **segments** named by their first record's seq
//!   (`{seq:020}.wal`). Every segment starts with a checksummed header and holds at least one
//!   record. All but the last segment end with a **seal** frame (record count and last seq)
//!   and were fsynced before the next segment was created, so any damage in them, including
//!   being cut short at a frame boundary, is [`WalError::Corrupt`].
//! - Only the **last segment** can have a torn tail. On open, a bad frame (truncated, bad
//!   checksum, implausible length, zero fill) in it that no valid frame follows is cut off with
//!   a warning; if a valid frame with a higher seq follows, that is damage in the middle and
//!   open fails with `Corrupt { segment, offset, reason }`. Nothing is ever skipped silently.
//!   A last segment without any valid record (0 bytes, torn header) is removed.
//! - **Commit** writes all records appended since the last commit in one write and fsyncs per
//!   [`SyncPolicy`]. A commit that fails is rolled back: the files are cut to the last
//!   committed length, so no partial record stays in the middle of the log.
//! - Lengths read from disk are checked against `max_record_size` and the bytes present
//!   before use: hostile input cannot make the log allocate or read out of bounds.
//!
//! Storage goes through the small [`LogStore`] trait: [`FsLogStore`] (a directory),
//! [`MemLogStore`] (models power cuts) and [`FaultLogStore`] (injects crashes and ENOSPC).

mod error;
mod fault;
mod frame;
mod mem;
mod pipeline;
mod replay;
mod scan;
mod segment;
mod store;
mod wal;

pub use error::WalError;
pub use fault::FaultLogStore;
pub use mem::MemLogStore;
pub use scan::{Damage, Item, LogScan, ScannedRecord, scan_log};
pub use store::{FsLogStore, LogFile, LogStore};
pub use tempora_model::SeqNo;
pub use wal::{MAX_RECORD_SIZE_LIMIT, SyncPolicy, Wal, WalOptions, WalStats};

/// Entry points for the fuzz targets (`fuzz/`): the segment reader over arbitrary bytes.
#[doc(hidden)]
pub mod fuzzing {
    /// Reads `data` as a segment: its header, then frames until one fails, as replay does.
    pub fn read_segment(data: &[u8]) {
        if crate::frame::decode_header(data).is_err() {
            return;
        }
        let mut at = crate::frame::HEADER_LEN;
        while at < data.len() {
            let Ok(extent) = crate::frame::frame_extent(&data[at..], 1 << 20) else {
                return;
            };
            if crate::frame::decode_frame(&data[at..], 1 << 20).is_err() {
                return;
            }
            at += extent;
        }
    }

    /// A valid sealed segment of three records: a seed for the fuzzers.
    pub fn sample_segment() -> Vec<u8> {
        let mut out = crate::frame::encode_header(crate::frame::SegmentHeader {
            first_seq: 1,
            prev_last_seq: None,
        })
        .to_vec();
        for (seq, payload) in [(1u64, &b"first"[..]), (2, b""), (3, b"third record")] {
            crate::frame::encode_record(&mut out, seq, payload);
        }
        out.extend_from_slice(&crate::frame::encode_seal(3, 3));
        out
    }
}
