//! A dense write's write-ahead-log record: the whole new slot images, so replaying a record
//! sets each slot to exactly the value it was given (a torn slot becomes the new value), and
//! replaying a record twice changes nothing.
//!
//! Little-endian: the table id with [`DENSE_FLAG`] set (u32), the op (u8), the slot length
//! (u32), then
//! - op 1, put: series count (u32); per series the key length (u32), the key, the row count
//!   (u32), the times (i64 each), then the slot images (slot length each);
//! - op 2, delete: range count (u32); per range the key length (u32), the key, from and to
//!   (i64, `[from, to)`).

use bytes::Bytes;
use tempora_model::TableId;

use crate::error::{Result, StorageError};

/// Set in the table id of a dense record (both top bits: no region record has them).
pub const DENSE_FLAG: u32 = 3 << 30;

/// One series' rows of a put: times and their slot images, in write order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SeriesPut {
    pub key: Bytes,
    pub times: Vec<i64>,
    /// `times.len()` slot images, each `slot_len` bytes.
    pub slots: Vec<u8>,
}

/// What a dense record does.
#[derive(Debug, Clone, PartialEq)]
pub enum DenseOp {
    Put(Vec<SeriesPut>),
    /// Each series' `[from, to)` made never written.
    Delete(Vec<(Bytes, i64, i64)>),
}

/// Whether a WAL payload is a dense record.
pub fn is_dense(payload: &[u8]) -> bool {
    payload.len() >= 4
        && u32::from_le_bytes(payload[..4].try_into().expect("4 bytes")) & DENSE_FLAG == DENSE_FLAG
}

pub fn encode(table: TableId, op: &DenseOp, slot_len: usize, out: &mut Vec<u8>) {
    debug_assert!(table.0 & DENSE_FLAG == 0, "table ids stay below 2^30");
    out.extend_from_slice(&(table.0 | DENSE_FLAG).to_le_bytes());
    let key = |out: &mut Vec<u8>, k: &[u8]| {
        out.extend_from_slice(&(k.len() as u32).to_le_bytes());
        out.extend_from_slice(k);
    };
    match op {
        DenseOp::Put(series) => {
            out.push(1);
            out.extend_from_slice(&(slot_len as u32).to_le_bytes());
            out.extend_from_slice(&(series.len() as u32).to_le_bytes());
            for s in series {
                debug_assert_eq!(s.slots.len(), s.times.len() * slot_len);
                key(out, &s.key);
                out.extend_from_slice(&(s.times.len() as u32).to_le_bytes());
                for t in &s.times {
                    out.extend_from_slice(&t.to_le_bytes());
                }
                out.extend_from_slice(&s.slots);
            }
        }
        DenseOp::Delete(ranges) => {
            out.push(2);
            out.extend_from_slice(&(slot_len as u32).to_le_bytes());
            out.extend_from_slice(&(ranges.len() as u32).to_le_bytes());
            for (k, from, to) in ranges {
                key(out, k);
                out.extend_from_slice(&from.to_le_bytes());
                out.extend_from_slice(&to.to_le_bytes());
            }
        }
    }
}

struct Cursor<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.buf.len());
        let Some(end) = end else {
            return Err(bad(self.at, "dense record cut short"));
        };
        let s = &self.buf[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4")))
    }
    fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_le_bytes(self.take(8)?.try_into().expect("8")))
    }
    fn key(&mut self) -> Result<Bytes> {
        let n = self.u32()? as usize;
        Ok(Bytes::copy_from_slice(self.take(n)?))
    }
}

fn bad(offset: usize, reason: &'static str) -> StorageError {
    StorageError::Model(tempora_model::ModelError::CorruptBatch { offset, reason })
}

/// Reads a dense record: its table, slot length and op.
pub fn decode(payload: &[u8]) -> Result<(TableId, usize, DenseOp)> {
    let mut c = Cursor {
        buf: payload,
        at: 0,
    };
    let table = TableId(c.u32()? & !DENSE_FLAG);
    let op = c.take(1)?[0];
    let slot_len = c.u32()? as usize;
    let n = c.u32()? as usize;
    let op = match op {
        1 => {
            let mut series = Vec::with_capacity(n.min(1024));
            for _ in 0..n {
                let key = c.key()?;
                let rows = c.u32()? as usize;
                let mut times = Vec::with_capacity(rows.min(1 << 16));
                for _ in 0..rows {
                    times.push(c.i64()?);
                }
                let len = rows
                    .checked_mul(slot_len)
                    .ok_or_else(|| bad(c.at, "dense record row count overflows"))?;
                let slots = c.take(len)?.to_vec();
                series.push(SeriesPut { key, times, slots });
            }
            DenseOp::Put(series)
        }
        2 => {
            let mut ranges = Vec::with_capacity(n.min(1024));
            for _ in 0..n {
                let key = c.key()?;
                ranges.push((key, c.i64()?, c.i64()?));
            }
            DenseOp::Delete(ranges)
        }
        _ => return Err(bad(4, "dense record with an unknown op")),
    };
    if c.at != payload.len() {
        return Err(bad(c.at, "dense record with trailing bytes"));
    }
    Ok((table, slot_len, op))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_damage_is_named() {
        let put = DenseOp::Put(vec![SeriesPut {
            key: Bytes::from_static(b"host\0a\0"),
            times: vec![1, 2],
            slots: vec![7; 6],
        }]);
        let del = DenseOp::Delete(vec![(Bytes::from_static(b"k"), -5, 9)]);
        for op in [put, del] {
            let mut buf = Vec::new();
            encode(TableId(12), &op, 3, &mut buf);
            assert!(is_dense(&buf));
            assert_eq!(decode(&buf).unwrap(), (TableId(12), 3, op.clone()));
            for cut in [1, 5, 9, buf.len() - 1] {
                let e = decode(&buf[..cut]).unwrap_err().to_string();
                assert!(e.contains("cut short"), "cut at {cut}: {e}");
            }
            let mut long = buf.clone();
            long.push(0);
            assert!(decode(&long).unwrap_err().to_string().contains("trailing"));
        }
        let mut region = Vec::new();
        region.extend_from_slice(&(12u32 | (1 << 31)).to_le_bytes());
        assert!(!is_dense(&region), "a region record is not dense");
    }
}
