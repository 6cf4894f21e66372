//! A forgiving read of a whole log for `tempora check` and `tempora repair`: every valid
//! record, and every damaged byte range with the frame that follows it.
//!
//! [`Wal::open`](crate::Wal) stops at the first damage (it must never skip a record silently);
//! this scan goes on past it: after a bad frame it looks for the next frame whose checksum
//! verifies and whose seq is above the last good one (the search `Wal::open` uses to tell a
//! torn tail from damage in the middle), and resumes there. A damaged header does not hide
//! the frames after it.
//!
//! Invariants:
//! - Pure over bytes (the caller reads the segments); no input makes it panic or allocate
//!   beyond the records it returns.
//! - Records come out in log order with strictly increasing seqs; a frame whose checksum
//!   verifies but whose seq does not increase is reported as damage, never returned.
//! - [`LogScan::refuses_open`] is true exactly when `Wal::open` fails with `Corrupt` on the same
//!   segments (tested over the damage table), and its first fatal damage names the same
//!   segment and offset.

use std::ops::Range;

use crate::frame::{self, FRAME_HEADER_LEN, Frame, HEADER_LEN, HeaderError};
use crate::segment::{self, SCAN_BUDGET_BYTES, find_valid_frame};

/// One valid record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScannedRecord {
    pub segment: String,
    /// Offset of the record's frame in its segment.
    pub offset: u64,
    pub seq: u64,
    pub payload: Vec<u8>,
}

/// One damaged byte range of a segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    pub segment: String,
    /// The damaged bytes: `[start, end)`.
    pub start: u64,
    pub end: u64,
    pub reason: String,
    /// The next valid frame after the damage in this segment: (offset, seq; for a seal its
    /// last seq).
    pub next: Option<(u64, u64)>,
    /// A torn tail of the last segment: `Wal::open` cuts it itself (an unfinished write, not
    /// damage an operator must act on).
    pub torn_tail: bool,
    /// The damaged range may have held records (false for a damaged header or seal whose
    /// frames all verify, and for bytes after a seal).
    pub may_hold_records: bool,
}

/// A log read past its damage.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogScan {
    /// Valid records in log order, and after each damage's position, the damage.
    pub items: Vec<Item>,
}

/// A record or a damaged range, in log order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    Record(ScannedRecord),
    Damage(Damage),
}

impl LogScan {
    pub fn records(&self) -> impl Iterator<Item = &ScannedRecord> {
        self.items.iter().filter_map(|i| match i {
            Item::Record(r) => Some(r),
            Item::Damage(_) => None,
        })
    }

    pub fn damage(&self) -> impl Iterator<Item = &Damage> {
        self.items.iter().filter_map(|i| match i {
            Item::Damage(d) => Some(d),
            Item::Record(_) => None,
        })
    }

    /// Whether `Wal::open` refuses this log (damage other than a torn tail).
    pub fn refuses_open(&self) -> bool {
        self.damage().any(|d| !d.torn_tail)
    }
}

/// Scans the segments of one log, given as (file name, bytes); names that are not segment
/// names are ignored, the rest are read in seq order.
pub fn scan_log(files: &[(String, Vec<u8>)], max_record_size: usize) -> LogScan {
    let mut segs: Vec<(u64, &String, &Vec<u8>)> = files
        .iter()
        .filter_map(|(n, d)| segment::parse_name(n).map(|s| (s, n, d)))
        .collect();
    segs.sort();
    let mut scan = LogScan::default();
    let mut last: Option<u64> = None;
    let mut prev_name: Option<&String> = None;
    for (i, (name_seq, name, data)) in segs.iter().enumerate() {
        let is_last = i + 1 == segs.len();
        let s = Segment {
            name,
            data,
            max_len: max_record_size,
            is_last,
        };
        let before = scan.items.len();
        let last_before = last;
        // A damaged end of the previous segment already explains a header that names a
        // later predecessor seq.
        let prev_damaged = matches!(scan.items.last(), Some(Item::Damage(d)) if d.may_hold_records);
        s.scan(*name_seq, &mut last, &mut scan.items);
        if let Some(p) = prev_name
            && !prev_damaged
        {
            follows(p, name, data, last_before, &mut scan.items, before);
        }
        prev_name = Some(name);
    }
    scan
}

/// A segment must name its predecessor's last seq in its header (a missing segment shows
/// here); the damage is inserted before the segment's own items.
fn follows(
    prev: &str,
    name: &str,
    data: &[u8],
    prev_last: Option<u64>,
    items: &mut Vec<Item>,
    at: usize,
) {
    let Ok(h) = frame::decode_header(data) else {
        return; // reported as header damage
    };
    if h.prev_last_seq == prev_last || prev_last.is_none() {
        return;
    }
    let reason = format!(
        "the header says the previous segment ends at seq {:?}, but {prev} ends at {prev_last:?}: a segment is missing",
        h.prev_last_seq
    );
    let d = Damage {
        segment: name.to_string(),
        start: 0,
        end: 0,
        reason,
        next: None,
        torn_tail: false,
        may_hold_records: true,
    };
    items.insert(at, Item::Damage(d));
}

struct Segment<'a> {
    name: &'a str,
    data: &'a [u8],
    max_len: usize,
    is_last: bool,
}

impl Segment<'_> {
    fn damage(&self, r: Range<usize>, reason: String, next: Option<(u64, u64)>) -> Damage {
        Damage {
            segment: self.name.to_string(),
            start: r.start as u64,
            end: r.end as u64,
            reason,
            next,
            torn_tail: false,
            may_hold_records: true,
        }
    }

    /// Appends the segment's records and damage to `out`; `last` is the last good seq of
    /// the log so far.
    fn scan(&self, name_seq: u64, last: &mut Option<u64>, out: &mut Vec<Item>) {
        let data = self.data;
        self.check_header(name_seq, *last, out);
        let (mut pos, mut count, mut sealed) = (HEADER_LEN.min(data.len()), 0u64, false);
        while pos < data.len() {
            match frame::decode_frame(&data[pos..], self.max_len) {
                Ok(Frame::Record { seq, payload }) => {
                    let end = pos + FRAME_HEADER_LEN + payload.len();
                    if sealed || last.is_some_and(|l| seq <= l) {
                        let why = if sealed {
                            "data after the seal".to_string()
                        } else {
                            format!("record seq {seq} is not greater than the previous {last:?}")
                        };
                        let mut d = self.damage(pos..end, why, None);
                        d.may_hold_records = !sealed;
                        out.push(Item::Damage(d));
                    } else {
                        if count == 0 && seq != name_seq {
                            // The record verifies and is kept; the header and it disagree.
                            let why = format!(
                                "first record has seq {seq}, the segment header says {name_seq}"
                            );
                            let mut d = self.damage(pos..pos, why, None);
                            d.may_hold_records = false;
                            out.push(Item::Damage(d));
                        }
                        out.push(Item::Record(ScannedRecord {
                            segment: self.name.to_string(),
                            offset: pos as u64,
                            seq,
                            payload: payload.to_vec(),
                        }));
                        *last = Some(seq);
                        count += 1;
                    }
                    pos = end;
                }
                Ok(Frame::Seal { last_seq, count: c }) => {
                    if sealed || *last != Some(last_seq) || c != count {
                        let why = format!(
                            "seal says {c} records up to seq {last_seq}, the segment holds {count} up to {last:?}"
                        );
                        let mut d = self.damage(pos..pos + frame::SEAL_LEN, why, None);
                        // Records went missing only if the seal counts more than were read.
                        d.may_hold_records = c > count;
                        out.push(Item::Damage(d));
                    }
                    sealed = true;
                    pos += frame::SEAL_LEN;
                }
                Err(e) => pos = self.resync(pos, e.reason(), *last, sealed, out),
            }
        }
        if !self.is_last && !sealed {
            let why = "segment is not sealed: it was cut short".to_string();
            out.push(Item::Damage(self.damage(data.len()..data.len(), why, None)));
        }
    }

    /// Records header damage (the frames after it are still read).
    fn check_header(&self, name_seq: u64, last: Option<u64>, out: &mut Vec<Item>) {
        let reason = match frame::decode_header(self.data) {
            Ok(h) if h.first_seq == name_seq => return,
            Ok(h) => format!(
                "header first seq {} does not match the file name",
                h.first_seq
            ),
            Err(e) => e.reason(),
        };
        let torn_kinds = matches!(
            frame::decode_header(self.data),
            Err(HeaderError::Short | HeaderError::BadMagic | HeaderError::BadChecksum)
        );
        let end = HEADER_LEN.min(self.data.len());
        let mut d = self.damage(0..end, format!("segment header: {reason}"), None);
        // A last segment whose header was torn and that holds no valid frame is removed by
        // `Wal::open`; whether frames follow is known once they are read.
        d.torn_tail = self.is_last
            && torn_kinds
            && !matches!(
                find_valid_frame(self.data, end, last, self.max_len, SCAN_BUDGET_BYTES),
                Ok(Some(_)) | Err(_)
            );
        d.may_hold_records = false;
        out.push(Item::Damage(d));
    }

    /// Handles a bad frame at `pos`: records the damage up to the next valid frame and
    /// returns where to resume (the end of the data when none follows).
    fn resync(
        &self,
        pos: usize,
        reason: String,
        last: Option<u64>,
        sealed: bool,
        out: &mut Vec<Item>,
    ) -> usize {
        let data = self.data;
        match find_valid_frame(data, pos + 1, last, self.max_len, SCAN_BUDGET_BYTES) {
            Ok(Some(q)) => {
                let seq = u64::from_le_bytes(data[q + 8..q + 16].try_into().expect("8 bytes"));
                let mut d = self.damage(pos..q, reason, Some((q as u64, seq)));
                d.may_hold_records = !sealed;
                out.push(Item::Damage(d));
                q
            }
            Ok(None) => {
                let mut d = self.damage(pos..data.len(), reason, None);
                d.torn_tail = self.is_last && !sealed;
                d.may_hold_records = !sealed;
                out.push(Item::Damage(d));
                data.len()
            }
            Err(q) => {
                let why = format!(
                    "{reason}, and the {} bytes after offset {q} could not all be checked for valid frames",
                    data.len() - q
                );
                out.push(Item::Damage(self.damage(pos..data.len(), why, None)));
                data.len()
            }
        }
    }
}
