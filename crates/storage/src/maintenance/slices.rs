//! Compaction in key slices: the memory a compaction holds stays within
//! `compaction_memory_bytes` however large the region.
//!
//! A compaction decodes its inputs, merges them and encodes the result; all three are held at
//! once. When that would exceed the limit, the region's series keys (sorted) are cut into
//! slices of consecutive keys, and each slice is read (only the row groups holding its keys),
//! merged and written on its own: one file per slice and window, each with the key range it
//! covers, so the files of a window do not overlap by key and the picker leaves them be.
//!
//! Invariants: the slices cover every key exactly once, in order; each holds at least one key;
//! a region that fits is one slice (compacted exactly as without slicing).
//!
//! Pure: [`key_slices`] is a function of counts.

use std::ops::Range;

/// Copies of a slice's rows held at once: the decoded inputs, the merged run, and the split
/// and encoded output.
pub const COPIES_HELD: usize = 3;

/// Bytes a decoded row takes in a run: rank (4), time (8), seq (8) and 8 per field, plus the
/// validity bits.
pub fn row_bytes(fields: usize) -> usize {
    4 + 8 + 8 + 9 * fields
}

/// Cuts `keys` series (sorted) holding `rows` rows of `row_bytes` each into consecutive slices
/// whose rows, held [`COPIES_HELD`] times, fit in `memory` bytes (assuming rows spread evenly
/// over the keys). One slice when everything fits.
pub fn key_slices(keys: usize, rows: u64, row_bytes: usize, memory: usize) -> Vec<Range<usize>> {
    if keys == 0 {
        return Vec::new();
    }
    let need = (rows as u128) * (row_bytes as u128) * COPIES_HELD as u128;
    if need <= memory as u128 {
        return std::iter::once(0..keys).collect();
    }
    let rows_per_key = (rows as u128).div_ceil(keys as u128).max(1);
    let per_slice = (memory as u128 / (rows_per_key * row_bytes as u128 * COPIES_HELD as u128))
        .clamp(1, keys as u128) as usize;
    let out: Vec<Range<usize>> = (0..keys)
        .step_by(per_slice)
        .map(|s| s..(s + per_slice).min(keys))
        .collect();
    debug_assert_eq!(out.last().map(|r| r.end), Some(keys));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_cover_every_key_once_within_memory() {
        for (name, keys, rows, memory, want) in [
            ("no keys", 0, 0, 1000, vec![]),
            (
                "fits: one slice",
                10,
                100,
                100 * 10 * 3,
                std::iter::once(0..10).collect(),
            ),
            (
                "twice too big: two slices",
                10,
                100,
                100 * 10 * 3 / 2,
                vec![0..5, 5..10],
            ),
            (
                "uneven: the last slice is short",
                10,
                100,
                4 * 10 * 10 * 3,
                vec![0..4, 4..8, 8..10],
            ),
            (
                "one key larger than memory: one key per slice",
                3,
                3_000,
                10,
                vec![0..1, 1..2, 2..3],
            ),
        ] {
            assert_eq!(key_slices(keys, rows, 10, memory), want, "{name}");
        }
    }

    #[test]
    fn a_day_of_a_thousand_hosts_in_a_hundred_mib() {
        // 1,000 series x 8,640 rows x 10 fields: 8.6 M rows of 110 bytes.
        let s = key_slices(1000, 8_640_000, row_bytes(10), 100 << 20);
        assert!(s.len() > 1 && s.len() < 100, "{}", s.len());
        let per_slice_rows = (s[0].end - s[0].start) as u64 * 8_640;
        assert!(per_slice_rows * row_bytes(10) as u64 * 3 <= 100 << 20);
        assert_eq!(s.iter().map(|r| r.len()).sum::<usize>(), 1000);
    }
}
