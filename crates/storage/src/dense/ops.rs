//! Applying dense records to block files, and reading slots back: the operations behind
//! writes, deletes, point and range reads and latest values.
//!
//! A put writes each row's slot image at its computed offset, one positioned write per run of
//! consecutive slots in one block. A delete punches its slot range out of each block it
//! touches, or removes a block file it covers whole. Reads visit only the data extents the
//! file system reports (`SEEK_DATA`/`SEEK_HOLE`), in slot order, and check each slot's
//! checksum.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use super::file::BlockFile;
use super::layout::{block_start, slot_index};
use super::record::SeriesPut;
use super::slot::{self, Slot};
use super::table::{DenseSeries, DenseTable};
use crate::error::Result;

/// Block files written since the last sync: what a checkpoint syncs before it truncates the
/// log (the table syncs its new directory entries itself).
#[derive(Default)]
pub struct Dirty {
    files: HashMap<PathBuf, Arc<BlockFile>>,
}

impl Dirty {
    /// Files listed (each holds a descriptor until the sync).
    pub fn len(&self) -> usize {
        self.files.len()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    fn note(&mut self, f: &Arc<BlockFile>) {
        self.files
            .entry(f.path().to_path_buf())
            .or_insert_with(|| f.clone());
    }

    /// Makes every write noted durable.
    pub fn sync(&mut self) -> Result<()> {
        for f in self.files.values() {
            f.sync()?;
        }
        *self = Dirty::default();
        Ok(())
    }
}

/// The first slot at or after `t` in the block starting at `b`.
fn slot_at_or_after(t: i64, b: i64, interval: i64) -> u64 {
    ((t.max(b) - b) as u64).div_ceil(interval as u64)
}

impl DenseTable {
    /// Slots per block.
    pub fn slots_per_block(&self) -> u64 {
        (self.spec.block_ns / self.spec.interval_ns) as u64
    }

    /// Writes one series' rows (times on the grid, checked before the WAL).
    pub fn apply_put(&self, p: &SeriesPut, dirty: &mut Dirty) -> Result<()> {
        let s = self.series_or_create(&p.key)?;
        let len = self.spec.slot_len();
        let (interval, block_ns) = (self.spec.interval_ns, self.spec.block_ns);
        let mut i = 0;
        while i < p.times.len() {
            let b = block_start(p.times[i], block_ns);
            let first = slot_index(p.times[i], b, block_ns, interval)?;
            let mut j = i + 1;
            while j < p.times.len()
                && p.times[j] == p.times[j - 1].saturating_add(interval)
                && block_start(p.times[j], block_ns) == b
            {
                j += 1;
            }
            let file = self.file(&s, b, true)?.expect("created");
            file.write_encoded(first, &p.slots[i * len..j * len])?;
            dirty.note(&file);
            i = j;
        }
        Ok(())
    }

    /// Makes `[from, to)` of the series `key` never written; returns the points it removed.
    pub fn apply_delete(&self, key: &[u8], from: i64, to: i64, dirty: &mut Dirty) -> Result<u64> {
        let Some(s) = self.series(key) else {
            return Ok(0);
        };
        let (interval, block_ns) = (self.spec.interval_ns, self.spec.block_ns);
        let per_block = self.slots_per_block();
        let mut removed = 0;
        for b in s.blocks_in(from, to, block_ns) {
            let lo = slot_at_or_after(from, b, interval);
            let hi = slot_at_or_after(to.min(b.saturating_add(block_ns)), b, interval);
            if lo >= hi {
                continue;
            }
            if s.is_cold(b) {
                // Checked before the record was logged: the range covers the block.
                removed += self.read_cold(&s, b)?.times.len() as u64;
                self.remove_cold(&s, b)?;
                continue;
            }
            let Some(file) = self.file(&s, b, false)? else {
                continue;
            };
            removed += count_written(&file, lo..hi)?;
            if lo == 0 && hi >= per_block {
                self.remove_block(&s, b)?;
            } else {
                file.punch(lo..hi)?;
                dirty.note(&file);
            }
        }
        Ok(removed)
    }

    /// The slot of `key` at `t` (a write still in the write-behind buffer included).
    pub fn get(&self, key: &[u8], t: i64) -> Result<Slot> {
        let b = block_start(t, self.spec.block_ns);
        slot_index(t, b, self.spec.block_ns, self.spec.interval_ns)?; // on the grid
        if let Some(img) = self.pending_image(key, t) {
            return slot::decode(&self.spec.fields, &img)
                .map_err(|e| crate::error::StorageError::Shared(e.to_string()));
        }
        match self.read_slot(key, t) {
            // A slot being rewritten in place can read torn: read it again with writers
            // held off before calling it damaged.
            Err(crate::error::StorageError::Corrupt { .. }) => {
                let _writers = self.log.lock();
                self.read_slot(key, t)
            }
            other => other,
        }
    }

    /// The slot of `key` at `t` in its block file (the write-behind buffer not looked at).
    pub(crate) fn read_slot(&self, key: &[u8], t: i64) -> Result<Slot> {
        let b = block_start(t, self.spec.block_ns);
        let i = slot_index(t, b, self.spec.block_ns, self.spec.interval_ns)?;
        let Some(s) = self.series(key) else {
            return Ok(Slot::Hole);
        };
        if s.is_cold(b) {
            let rows = self.read_cold(&s, b)?;
            return Ok(match rows.times.binary_search(&t) {
                Ok(at) => Slot::Row(rows.values(at)),
                Err(_) => Slot::Hole,
            });
        }
        match self.file(&s, b, false)? {
            Some(f) => f.read(i),
            None => Ok(Slot::Hole),
        }
    }

    /// Visits the written slots of `series` in `[from, to)` in time order, with their
    /// checked images.
    pub fn read_range(
        &self,
        s: &DenseSeries,
        (from, to): (i64, i64),
        visit: &mut dyn FnMut(i64, &[u8]) -> Result<()>,
    ) -> Result<()> {
        self.flush_pending()?;
        self.read_blocks(s, (from, to), visit)
    }

    /// [`DenseTable::read_range`] without writing the buffer first (its caller holds the log
    /// lock, or wrote it).
    pub(crate) fn read_blocks(
        &self,
        s: &DenseSeries,
        (from, to): (i64, i64),
        visit: &mut dyn FnMut(i64, &[u8]) -> Result<()>,
    ) -> Result<()> {
        let (interval, block_ns) = (self.spec.interval_ns, self.spec.block_ns);
        let mut buf = Vec::new();
        for b in s.blocks_in(from, to, block_ns) {
            if s.is_cold(b) {
                let rows = self.read_cold(s, b)?;
                let lo = rows.times.partition_point(|&t| t < from);
                let hi = rows.times.partition_point(|&t| t < to);
                for i in lo..hi {
                    visit(rows.times[i], &rows.image(self, i)?)?;
                }
                continue;
            }
            let lo = slot_at_or_after(from, b, interval);
            let hi = slot_at_or_after(to.min(b.saturating_add(block_ns)), b, interval);
            if lo >= hi {
                continue;
            }
            let Some(f) = self.file(s, b, false)? else {
                continue;
            };
            let len = f.slot_len();
            for extent in f.data_slots(lo..hi)? {
                let mut at = extent.start;
                while at < extent.end {
                    let end = extent.end.min(at + CHUNK_SLOTS);
                    f.read_encoded(at..end, &mut buf)?;
                    for (k, img) in buf.chunks_exact(len).enumerate() {
                        let i = at + k as u64;
                        if slot::is_hole(img) {
                            continue;
                        }
                        slot::check(img).map_err(|e| f.slot_error(i, e))?;
                        visit(b + i as i64 * interval, img)?;
                    }
                    at = end;
                }
            }
        }
        Ok(())
    }

    /// The newest written slot of `series`: its time and image.
    pub fn latest(&self, s: &DenseSeries) -> Result<Option<(i64, Vec<u8>)>> {
        self.flush_pending()?;
        let interval = self.spec.interval_ns;
        let mut buf = Vec::new();
        for b in s.blocks().into_iter().rev() {
            if s.is_cold(b) {
                let rows = self.read_cold(s, b)?;
                if let Some(i) = rows.times.len().checked_sub(1) {
                    return Ok(Some((rows.times[i], rows.image(self, i)?)));
                }
                continue;
            }
            let Some(f) = self.file(s, b, false)? else {
                continue;
            };
            let len = f.slot_len();
            for extent in f.data_slots(0..self.slots_per_block())?.into_iter().rev() {
                let mut end = extent.end;
                while end > extent.start {
                    let at = end.saturating_sub(CHUNK_SLOTS).max(extent.start);
                    f.read_encoded(at..end, &mut buf)?;
                    for (k, img) in buf.chunks_exact(len).enumerate().rev() {
                        if slot::is_hole(img) {
                            continue;
                        }
                        let i = at + k as u64;
                        slot::check(img).map_err(|e| f.slot_error(i, e))?;
                        return Ok(Some((b + i as i64 * interval, img.to_vec())));
                    }
                    end = at;
                }
            }
        }
        Ok(None)
    }
}

/// Slots read at once by a scan.
const CHUNK_SLOTS: u64 = 4096;

/// Slots few enough to read at once rather than ask the file system where data is.
const SMALL_RANGE: u64 = 64;

/// Written slots of `range` in `f`.
fn count_written(f: &BlockFile, range: std::ops::Range<u64>) -> Result<u64> {
    let mut n = 0;
    let mut buf = Vec::new();
    if range.end - range.start == 1 {
        // A damaged slot counts as written: deleting it is how it is cleared.
        return Ok(u64::from(!matches!(f.read(range.start), Ok(Slot::Hole))));
    }
    let extents = match range.end - range.start <= SMALL_RANGE {
        true => vec![range],
        false => f.data_slots(range)?,
    };
    for extent in extents {
        let mut at = extent.start;
        while at < extent.end {
            let end = extent.end.min(at + CHUNK_SLOTS);
            f.read_encoded(at..end, &mut buf)?;
            n += buf
                .chunks_exact(f.slot_len())
                .filter(|img| !slot::is_hole(img))
                .count() as u64;
            at = end;
        }
    }
    Ok(n)
}

/// Applies a record's op to `table` directly (replay); returns the points a delete removed.
pub fn apply_op(table: &DenseTable, op: &super::record::DenseOp, dirty: &mut Dirty) -> Result<u64> {
    match op {
        super::record::DenseOp::Put(series) => {
            for p in series {
                table.apply_put(p, dirty)?;
            }
            Ok(0)
        }
        super::record::DenseOp::Delete(ranges) => {
            let mut n = 0;
            for (key, from, to) in ranges {
                n += table.apply_delete(key, *from, *to, dirty)?;
            }
            Ok(n)
        }
    }
}
