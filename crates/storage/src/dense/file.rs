//! A dense block file on local disk: the thin I/O shell around [`super::layout`],
//! [`super::header`] and [`super::slot`]. A slot is one positioned read or write; the file is
//! sparse, so slots never written cost no disk, and a scan asks the file system where data is
//! (`SEEK_DATA` / `SEEK_HOLE`) instead of reading zeros.
//!
//! Invariants:
//! - The header is written once, when the file is created; every later write is one slot.
//! - A deleted point's slot is punched out (`FALLOC_FL_PUNCH_HOLE`, zeros where the file system
//!   cannot), so it reads as never written and frees its disk.
//! - Durability is the caller's: [`BlockFile::sync`] makes the writes so far durable; until
//!   then the write-ahead log holds them.
//! - Reads go through a shared read-only mapping of the whole block (the file is extended,
//!   sparsely, to its full length when opened, so no read is past its end); writes and hole
//!   punches are positioned calls on the descriptor, which the mapping sees at once. Nothing
//!   shortens a block file while it is mapped.

use std::fs::{File, OpenOptions};
use std::ops::Range;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use tempora_model::FieldValue;

use super::header::{self, Header};
use super::layout::{data_start, slot_len};
use super::slot::{self, Slot, SlotError};
use crate::error::{Result, StorageError, io_err};

/// Deletes of fewer bytes write zeros instead of punching a hole (two pages).
const PUNCH_MIN: u64 = 8192;

/// An open block file.
#[derive(Debug)]
pub struct BlockFile {
    path: PathBuf,
    file: File,
    map: memmap2::Mmap,
    pub header: Header,
    data_start: u64,
    slot_len: u64,
}

fn corrupt(path: &Path, reason: impl std::fmt::Display) -> StorageError {
    StorageError::Corrupt {
        path: path.display().to_string(),
        reason: reason.to_string(),
    }
}

impl BlockFile {
    /// Creates the block file at `path` with `header` (it must not exist).
    pub fn create(path: &Path, header: Header) -> Result<BlockFile> {
        let p = path.display().to_string();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| io_err("create dense block", p.clone(), e))?;
        file.write_all_at(&header::encode(&header), 0)
            .map_err(|e| io_err("write dense header", p, e))?;
        Self::with(path, file, header, false)
    }

    /// Opens the block file at `path`, checking its header.
    pub fn open(path: &Path) -> Result<BlockFile> {
        let p = path.display().to_string();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| io_err("open dense block", p.clone(), e))?;
        // One page holds the header of any table with fewer than about 200 fields; a longer
        // field list is read whole (at most 64 KiB).
        let mut header = None;
        for len in [super::layout::HEADER_ALIGN, 64 * 1024] {
            let mut buf = vec![0u8; len];
            let n = read_upto(&file, &mut buf, 0)
                .map_err(|e| io_err("read dense header", p.clone(), e))?;
            let decoded = header::decode(&buf[..n]);
            let cut = matches!(&decoded, Err(e) if e.0.contains("cut short"));
            if !cut || n < len || len == 64 * 1024 {
                header = Some(decoded.map_err(|e| corrupt(path, e))?);
                break;
            }
        }
        let header = header.expect("the loop ends with a header or an error");
        Self::with(path, file, header, true)
    }

    /// The open file: extended (sparsely) to the block's full length and mapped; with
    /// `populate`, the pages holding data are mapped now.
    fn with(path: &Path, file: File, header: Header, populate: bool) -> Result<BlockFile> {
        let p = || path.display().to_string();
        let data_start = data_start(&header.fields) as u64;
        let slot_len = slot_len(&header.fields) as u64;
        let slots = (header.block_ns / header.interval_ns) as u64;
        let full = data_start + slots * slot_len;
        let len = file
            .metadata()
            .map_err(|e| io_err("stat dense block", p(), e))?
            .len();
        if len < full {
            file.set_len(full)
                .map_err(|e| io_err("extend dense block", p(), e))?;
        }
        // SAFETY: the mapping is read-only and shared; the engine never shortens a block
        // file (deletes punch holes, which read as zeros), so every mapped byte stays backed.
        let map = unsafe { memmap2::MmapOptions::new().len(full as usize).map(&file) }
            .map_err(|e| io_err("map dense block", p(), e))?;
        // A point read faults in its page only: read-ahead would fill the page cache with the
        // zeros of the holes around it.
        let _ = map.advise(memmap2::Advice::Random);
        let f = BlockFile {
            path: path.to_path_buf(),
            file,
            map,
            header,
            data_start,
            slot_len,
        };
        if populate {
            f.populate();
        }
        Ok(f)
    }

    /// Maps the pages of the file's data extents now (the page cache holds them or reads
    /// them), so point reads of written slots take no page fault; holes stay unmapped and
    /// cost nothing. Best effort: a kernel without `MADV_POPULATE_READ` faults on first read.
    fn populate(&self) {
        let slots = (self.header.block_ns / self.header.interval_ns) as u64;
        let Ok(extents) = self.data_slots(0..slots) else {
            return;
        };
        const PAGE: usize = 4096;
        for r in extents {
            let start = (self.offset(r.start) as usize) / PAGE * PAGE;
            let end = (self.offset(r.end) as usize).min(self.map.len());
            if end > start {
                let _ = self
                    .map
                    .advise_range(memmap2::Advice::PopulateRead, start, end - start);
            }
        }
    }

    fn offset(&self, i: u64) -> u64 {
        self.data_start + i * self.slot_len
    }

    /// Writes slot `i` with `values` (one per field, None for NULL).
    pub fn write(&self, i: u64, values: &[Option<FieldValue>]) -> Result<()> {
        let bytes = slot::encode(&self.header.fields, values)
            .map_err(|e| StorageError::Shared(e.to_string()))?;
        self.file
            .write_all_at(&bytes, self.offset(i))
            .map_err(|e| io_err("write dense slot", self.path.display().to_string(), e))
    }

    /// The bytes of slots `range` (zeros for holes), straight from the mapping.
    pub fn slots(&self, range: Range<u64>) -> &[u8] {
        let end = (self.offset(range.end) as usize).min(self.map.len());
        let start = (self.offset(range.start) as usize).min(end);
        &self.map[start..end]
    }

    /// Reads slot `i` (a hole past the block too) from the mapping: no system call.
    pub fn read(&self, i: u64) -> Result<Slot> {
        let img = self.slots(i..i + 1);
        if img.len() < self.slot_len as usize {
            return Ok(Slot::Hole);
        }
        slot::decode(&self.header.fields, img)
            .map_err(|e: SlotError| corrupt(&self.path, format!("slot {i}: {e}")))
    }

    /// Writes encoded slots (whole slots, as [`slot::encode`] makes them) from slot `first` on:
    /// one positioned write however many slots follow each other.
    pub fn write_encoded(&self, first: u64, bytes: &[u8]) -> Result<()> {
        debug_assert_eq!(bytes.len() as u64 % self.slot_len, 0);
        self.file
            .write_all_at(bytes, self.offset(first))
            .map_err(|e| io_err("write dense slot", self.path.display().to_string(), e))
    }

    /// Reads slots `range` into `buf` (holes and the part past the block as zeros) with one
    /// positioned read (a scan reads data extents only; the kernel reads ahead along them).
    pub fn read_encoded(&self, range: Range<u64>, buf: &mut Vec<u8>) -> Result<()> {
        buf.clear();
        buf.resize(((range.end - range.start) * self.slot_len) as usize, 0);
        let n = read_upto(&self.file, buf, self.offset(range.start))
            .map_err(|e| io_err("read dense slots", self.path.display().to_string(), e))?;
        buf[n..].fill(0);
        Ok(())
    }

    /// Bytes of one slot.
    pub fn slot_len(&self) -> usize {
        self.slot_len as usize
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The named corruption error of slot `i` of this file.
    pub fn slot_error(&self, i: u64, e: SlotError) -> StorageError {
        corrupt(&self.path, format!("slot {i}: {e}"))
    }

    /// Makes slot `i` never written, freeing its disk where the file system can.
    pub fn delete(&self, i: u64) -> Result<()> {
        self.punch(i..i + 1)
    }

    /// Makes slots `range` never written: zeros written over a few slots (a hole punched
    /// into a mapped file costs an unmapping of its pages), a hole punched over more, which
    /// frees their disk.
    pub fn punch(&self, range: Range<u64>) -> Result<()> {
        if range.is_empty() {
            return Ok(());
        }
        let (off, len) = (
            self.offset(range.start),
            (range.end - range.start) * self.slot_len,
        );
        if len < PUNCH_MIN {
            return self
                .file
                .write_all_at(&vec![0u8; len as usize], off)
                .map_err(|e| io_err("delete dense slot", self.path.display().to_string(), e));
        }
        // SAFETY: fallocate on an open descriptor with valid offsets has no memory effects.
        let punched = unsafe {
            libc::fallocate(
                self.file.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                off as libc::off_t,
                len as libc::off_t,
            )
        } == 0;
        if punched {
            return Ok(());
        }
        self.file
            .write_all_at(&vec![0u8; len as usize], off)
            .map_err(|e| io_err("delete dense slot", self.path.display().to_string(), e))
    }

    /// The slots in `range` that hold data as far as the file system knows (whole data
    /// extents; holes inside an extent read as holes).
    pub fn data_slots(&self, range: Range<u64>) -> Result<Vec<Range<u64>>> {
        let mut out = Vec::new();
        let end = self.offset(range.end);
        let mut at = self.offset(range.start);
        let fd = self.file.as_raw_fd();
        while at < end {
            // SAFETY: lseek on an open descriptor.
            let data = unsafe { libc::lseek(fd, at as libc::off_t, libc::SEEK_DATA) };
            if data < 0 {
                break; // ENXIO: no data past `at`.
            }
            // SAFETY: as above.
            let hole = unsafe { libc::lseek(fd, data, libc::SEEK_HOLE) };
            let (data, hole) = (data as u64, (hole.max(data) as u64).min(end));
            if data >= end {
                break;
            }
            let first = (data.saturating_sub(self.data_start)) / self.slot_len;
            let last = (hole - self.data_start).div_ceil(self.slot_len);
            out.push(first.max(range.start)..last.min(range.end));
            at = hole.max(data + 1);
        }
        Ok(out)
    }

    /// Makes every write so far durable.
    pub fn sync(&self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|e| io_err("sync dense block", self.path.display().to_string(), e))
    }
}

/// Reads into `buf` from `off` until it is full or the file ends; returns the bytes read.
fn read_upto(file: &File, buf: &mut [u8], off: u64) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read_at(&mut buf[n..], off + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use tempora_model::FieldType;

    use super::*;
    use crate::dense::layout::DenseField;

    const S: i64 = 1_000_000_000;

    fn header() -> Header {
        Header {
            interval_ns: S,
            block_start: 0,
            block_ns: 365 * 86_400 * S,
            fields: vec![
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
            ],
        }
    }

    #[test]
    fn slots_write_read_delete_and_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.dense");
        let f = BlockFile::create(&path, header()).unwrap();
        let row = vec![Some(FieldValue::F64(1.5)), None];
        f.write(7, &row).unwrap();
        assert_eq!(f.read(7).unwrap(), Slot::Row(row.clone()));
        assert_eq!(f.read(6).unwrap(), Slot::Hole);
        assert_eq!(f.read(1_000_000).unwrap(), Slot::Hole, "past the end");
        f.write(8, &[None, None]).unwrap();
        f.delete(7).unwrap();
        assert_eq!(f.read(7).unwrap(), Slot::Hole);
        assert_eq!(
            f.read(8).unwrap(),
            Slot::Row(vec![None, None]),
            "a written NULL row stays"
        );
        f.sync().unwrap();
        drop(f);
        let f = BlockFile::open(&path).unwrap();
        assert_eq!(f.header, header());
        assert_eq!(f.read(8).unwrap(), Slot::Row(vec![None, None]));
    }

    #[test]
    fn a_year_with_one_hour_written_occupies_about_that_hour() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.dense");
        let f = BlockFile::create(&path, header()).unwrap();
        let start = 200 * 86_400;
        for i in start..start + 3600 {
            f.write(
                i,
                &[
                    Some(FieldValue::F64(i as f64)),
                    Some(FieldValue::Bool(true)),
                ],
            )
            .unwrap();
        }
        f.sync().unwrap();
        let m = std::fs::metadata(&path).unwrap();
        let used = m.blocks() * 512;
        assert!(
            m.len() > 200 * 86_400 * 14,
            "apparent size spans the year up to the hour: {}",
            m.len()
        );
        assert!(
            used < 200 * 1024,
            "an hour of 14-byte slots (50 KB) and the header: {used} bytes used"
        );
        // A scan of the whole year finds only the written extent.
        let ranges = f.data_slots(0..365 * 86_400).unwrap();
        let total: u64 = ranges.iter().map(|r| r.end - r.start).sum();
        assert!(
            ranges
                .iter()
                .all(|r| r.start >= start - 300 && r.end <= start + 3600 + 300),
            "{ranges:?}"
        );
        assert!((3600..3600 + 600).contains(&total), "{total}");
    }

    #[test]
    fn a_damaged_header_or_slot_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.dense");
        let f = BlockFile::create(&path, header()).unwrap();
        f.write(3, &[Some(FieldValue::F64(2.0)), None]).unwrap();
        let off = f.offset(3);
        drop(f);
        let file = OpenOptions::new().write(true).open(&path).unwrap();
        file.write_all_at(&[0xFF], off + 6).unwrap();
        let f = BlockFile::open(&path).unwrap();
        let e = f.read(3).unwrap_err().to_string();
        assert!(
            e.contains("b.dense") && e.contains("slot 3") && e.contains("checksum"),
            "{e}"
        );
        file.write_all_at(b"X", 0).unwrap();
        let e = BlockFile::open(&path).unwrap_err().to_string();
        assert!(e.contains("b.dense") && e.contains("magic"), "{e}");
    }
}
