//! The dense layout's arithmetic (issue 25, XStore): where a point of a fixed-interval series
//! lives in its block file, computed from its timestamp — no index. Pure functions over
//! values; the file I/O wraps them.
//!
//! A block file holds one series' points of one block (`[block_start, block_start +
//! block_ns)`): a header ([`Header`], [`HEADER_LEN`] bytes plus its field list, padded to
//! [`HEADER_ALIGN`]) then one slot per interval step. Slot `i` holds the point at
//! `block_start + i × interval` at byte `data_start + i × slot_len`. A slot is a CRC-32C of the
//! rest (u32), presence bits (one per field, then one always set), then each field at its fixed width; an
//! all-zero slot (a hole the file system never wrote) reads as never written.
//!
//! Invariants:
//! - A timestamp off the grid (`(ts - block_start) % interval != 0`) or outside the block is an
//!   error naming the grid, never a rounded slot.
//! - A slot decodes only when its checksum matches (a torn write is detected, not read).

use tempora_model::FieldType;

/// Magic number of a dense block file.
pub const MAGIC: &[u8; 8] = b"TMPRDNS\0";
/// Format version of the block file.
pub const FORMAT_VERSION: u16 = 1;
/// Fixed part of the header: magic, version, field count, interval, block start, block
/// length, slot length, header CRC.
pub const HEADER_LEN: usize = 8 + 2 + 2 + 8 + 8 + 8 + 4 + 4;
/// The data starts at a multiple of this (a page), so slots of a page share no header bytes.
pub const HEADER_ALIGN: usize = 4096;
/// Longest declared string field (bytes).
pub const MAX_STRING: usize = 4096;

/// A field of a dense table: its name, type and width in a slot.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DenseField {
    pub name: String,
    pub ty: FieldType,
    /// Strings: the declared maximum length in bytes (a slot stores a u16 length then the
    /// bytes); other types: 8 (1 for booleans).
    pub max_len: usize,
}

impl DenseField {
    /// Bytes the field takes in a slot.
    pub fn width(&self) -> usize {
        match self.ty {
            FieldType::F64 | FieldType::I64 | FieldType::U64 => 8,
            FieldType::Bool => 1,
            FieldType::Str => 2 + self.max_len,
        }
    }
}

/// What can be wrong with a point's place.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    #[error(
        "timestamp {ts} is not on the table's grid: every {interval_ns} ns from {origin} (the nearest are {below} and {above})"
    )]
    OffGrid {
        ts: i64,
        interval_ns: i64,
        origin: i64,
        below: i64,
        above: i64,
    },
    #[error("timestamp {ts} is outside block [{start}, {end})")]
    OutsideBlock { ts: i64, start: i64, end: i64 },
}

/// The block a timestamp falls in: its start, a multiple of `block_ns` from the epoch.
pub fn block_start(ts: i64, block_ns: i64) -> i64 {
    assert!(block_ns > 0);
    // Saturating: near i64::MIN (an unbounded range) the block would start before it.
    ts.saturating_sub(ts.rem_euclid(block_ns))
}

/// The slot of `ts` in the block starting at `start`.
pub fn slot_index(
    ts: i64,
    start: i64,
    block_ns: i64,
    interval_ns: i64,
) -> Result<u64, LayoutError> {
    assert!(interval_ns > 0 && block_ns > 0 && block_ns % interval_ns == 0);
    let end = start.saturating_add(block_ns);
    if ts < start || ts >= end {
        return Err(LayoutError::OutsideBlock { ts, start, end });
    }
    let off = ts - start;
    if off % interval_ns != 0 {
        let below = ts - off % interval_ns;
        return Err(LayoutError::OffGrid {
            ts,
            interval_ns,
            origin: 0,
            below,
            above: below + interval_ns,
        });
    }
    Ok((off / interval_ns) as u64)
}

/// Bytes of a slot's presence bits: one per field and the written bit.
pub fn presence_bytes(fields: &[DenseField]) -> usize {
    (fields.len() + 1).div_ceil(8)
}

/// Bytes of a slot for `fields`: checksum, presence bits, the fields.
pub fn slot_len(fields: &[DenseField]) -> usize {
    4 + presence_bytes(fields) + fields.iter().map(DenseField::width).sum::<usize>()
}

/// Where the slots start, for `fields`.
pub fn data_start(fields: &[DenseField]) -> usize {
    let list: usize = fields.iter().map(|f| 2 + f.name.len() + 1 + 2).sum();
    (HEADER_LEN + list).div_ceil(HEADER_ALIGN) * HEADER_ALIGN
}

/// The byte offset of slot `i`.
pub fn slot_offset(fields: &[DenseField], i: u64) -> u64 {
    data_start(fields) as u64 + i * slot_len(fields) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;
    const DAY: i64 = 86_400 * S;

    fn fields() -> Vec<DenseField> {
        vec![
            DenseField {
                name: "kwh".into(),
                ty: FieldType::F64,
                max_len: 0,
            },
            DenseField {
                name: "ok".into(),
                ty: FieldType::Bool,
                max_len: 0,
            },
            DenseField {
                name: "note".into(),
                ty: FieldType::Str,
                max_len: 10,
            },
        ]
    }

    #[test]
    fn slots_are_computed_from_the_timestamp() {
        let start = block_start(3 * DAY + 5 * S, DAY);
        assert_eq!(start, 3 * DAY);
        assert_eq!(block_start(-1, DAY), -DAY, "before the epoch rounds down");
        assert_eq!(slot_index(3 * DAY, start, DAY, S), Ok(0));
        assert_eq!(slot_index(3 * DAY + 86_399 * S, start, DAY, S), Ok(86_399));
        let f = fields();
        assert_eq!(slot_len(&f), 4 + 1 + 8 + 1 + 12);
        assert_eq!(data_start(&f), 4096);
        assert_eq!(slot_offset(&f, 2), 4096 + 2 * 26);
    }

    #[test]
    fn off_grid_and_outside_are_errors_naming_the_grid() {
        let e = slot_index(3 * DAY + S / 2, 3 * DAY, DAY, S).unwrap_err();
        assert_eq!(
            e,
            LayoutError::OffGrid {
                ts: 3 * DAY + S / 2,
                interval_ns: S,
                origin: 0,
                below: 3 * DAY,
                above: 3 * DAY + S
            }
        );
        assert!(e.to_string().contains("every 1000000000 ns"), "{e}");
        assert!(matches!(
            slot_index(4 * DAY, 3 * DAY, DAY, S),
            Err(LayoutError::OutsideBlock { .. })
        ));
    }
}
