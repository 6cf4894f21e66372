//! A dense table's write-ahead log and its write-behind buffer: how a write becomes durable
//! and reaches its slots.
//!
//! A write runs on the caller's thread under the table's log lock: it takes a sequence
//! number, appends one record ([`super::record`]: whole slot images, or delete ranges) and
//! commits it (fsync per the engine's WAL policy), then applies it. A put's images go to the
//! write-behind buffer ([`Pending`], at most `pending_max` slots), which is written to the
//! block files, one positioned write per run of adjacent slots, when it fills, before any
//! range read, latest read or delete, and at a checkpoint; a point read looks in it first. A
//! delete is applied at once (holes punched, whole blocks removed).
//!
//! A checkpoint (every `checkpoint_bytes` logged, on flush and on close) writes the buffer,
//! syncs every block file and directory written since the last one, then truncates the log:
//! a record leaves the log only once its slots are durable. Opening the table replays the
//! log in order — every image written again, so a slot torn by a crash gets its new value —
//! and checkpoints.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use tempora_model::SeqNo;
use tempora_wal::{FsLogStore, Wal, WalOptions};

use super::ops::Dirty;
use super::record::{self, DenseOp, SeriesPut};
use super::table::DenseTable;
use crate::error::{Result, StorageError, io_err};

/// How a dense table logs and buffers its writes.
#[derive(Debug, Clone)]
pub struct LogConfig {
    pub wal: WalOptions,
    /// Most slot images waiting in the write-behind buffer.
    pub pending_max: usize,
    /// Bytes logged between checkpoints.
    pub checkpoint_bytes: usize,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            wal: WalOptions::default(),
            pending_max: 65_536,
            checkpoint_bytes: 64 << 20,
        }
    }
}

/// Writes of more rows than this skip the buffer.
const DIRECT_ROWS: usize = 256;

/// Slot images logged but not yet written, by (series key, time).
pub(crate) type Pending = HashMap<(Bytes, i64), Vec<u8>>;

/// The log lock's state.
pub(crate) struct LogState {
    wal: Wal,
    pub pending: Pending,
    pub dirty: Dirty,
    logged: usize,
    config: LogConfig,
    /// The record being encoded (kept to reuse its allocation).
    scratch: Vec<u8>,
}

/// The log directory of the table whose files are in `dir`.
pub(crate) fn log_dir(dir: &Path) -> PathBuf {
    dir.with_extension("wal")
}

impl LogState {
    /// Opens the log of the table in `dir`.
    pub fn open(dir: &Path, config: LogConfig) -> Result<LogState> {
        let ldir = log_dir(dir);
        // A log `tempora repair` is swapping: opening now could miss its records.
        for suffix in [crate::check::REPAIRING, crate::check::DAMAGED] {
            let mut aside = ldir.clone().into_os_string();
            aside.push(suffix);
            if Path::new(&aside).exists() {
                return Err(crate::error::StorageError::Corrupt {
                    path: Path::new(&aside).display().to_string(),
                    reason: "a repair of this log was interrupted: run `tempora repair` again"
                        .into(),
                });
            }
        }
        let store = FsLogStore::new(&ldir)
            .map_err(|e| io_err("open dense log", ldir.display().to_string(), e))?;
        let wal = Wal::open(Arc::new(store), config.wal.clone())?;
        Ok(LogState {
            wal,
            pending: Pending::new(),
            dirty: Dirty::default(),
            logged: 0,
            config,
            scratch: Vec::new(),
        })
    }
}

impl DenseTable {
    /// Replays the log (at open): every record applied again in order, then a checkpoint.
    /// Returns the newest sequence number it held.
    pub(crate) fn replay_log(&self) -> Result<Option<SeqNo>> {
        let mut log = self.log.lock();
        let slot_len = self.spec.slot_len();
        let mut dirty = Dirty::default();
        let mut records = 0u64;
        log.wal.replay(SeqNo(0), 1, |seq, payload| -> Result<()> {
            let (_, len, op) = record::decode(payload)?;
            if len != slot_len {
                return Err(StorageError::Shared(format!(
                    "dense log record {} holds {len}-byte slots; the table's are {slot_len}",
                    seq.0
                )));
            }
            match super::ops::apply_op(self, &op, &mut dirty) {
                Ok(_) => records += 1,
                // A damaged block file does not stop the table: its record cannot be applied
                // (reads of that block name the damage), every other one is.
                Err(e @ StorageError::Corrupt { .. }) => {
                    tracing::error!(seq = seq.0, error = %e, "dense log record not applied");
                }
                Err(e) => return Err(e),
            }
            Ok(())
        })?;
        if records > 0 {
            tracing::info!(records, dir = %self.dir().display(), "replayed a dense table's log");
        }
        log.dirty = dirty;
        let last = log.wal.last_seq();
        self.checkpoint_locked(&mut log)?;
        Ok(last)
    }

    /// Logs and applies `op`, numbered by `seq` (called under nothing; takes the log lock).
    /// Returns the points a delete removed.
    pub fn log_op(&self, seq: impl FnOnce() -> SeqNo, op: DenseOp) -> Result<u64> {
        let mut log = self.log.lock();
        self.log_locked(&mut log, seq, op)
    }

    fn log_locked(
        &self,
        log: &mut LogState,
        seq: impl FnOnce() -> SeqNo,
        op: DenseOp,
    ) -> Result<u64> {
        self.check_not_cold(&op)?;
        let mut buf = std::mem::take(&mut log.scratch);
        buf.clear();
        let seq = seq();
        record::encode(self.table_id, &op, self.spec.slot_len(), &mut buf);
        let logged = log.wal.append(seq, &buf).and_then(|_| log.wal.commit());
        log.logged += buf.len();
        log.scratch = buf;
        logged?;
        let removed = match op {
            DenseOp::Put(series)
                if series.iter().map(|p| p.times.len()).sum::<usize>() > DIRECT_ROWS =>
            {
                // A bulk write goes straight to the files (after older buffered writes).
                self.write_pending(log)?;
                for p in &series {
                    self.apply_put(p, &mut log.dirty)?;
                }
                0
            }
            DenseOp::Put(series) => {
                let len = self.spec.slot_len();
                for p in series {
                    for (i, t) in p.times.iter().enumerate() {
                        let img = p.slots[i * len..(i + 1) * len].to_vec();
                        log.pending.insert((p.key.clone(), *t), img);
                    }
                }
                if log.pending.len() >= log.config.pending_max {
                    self.write_pending(log)?;
                }
                0
            }
            DenseOp::Delete(ranges) if self.buffered_delete(&ranges) => {
                // A few points: each written slot becomes a zero image in the buffer.
                let mut n = 0;
                for (key, from, to) in ranges {
                    n += self.buffer_holes(log, key, from, to)?;
                }
                n
            }
            DenseOp::Delete(ranges) => {
                self.write_pending(log)?;
                let mut n = 0;
                let mut dirty = std::mem::take(&mut log.dirty);
                let mut result = Ok(());
                for (key, from, to) in &ranges {
                    match self.apply_delete(key, *from, *to, &mut dirty) {
                        Ok(k) => n += k,
                        Err(e) => {
                            result = Err(e);
                            break;
                        }
                    }
                }
                // The files written so far stay listed for the next checkpoint's sync.
                log.dirty = dirty;
                result?;
                n
            }
        };
        // Checkpoint by bytes logged, or before the files kept for the next sync hold too many
        // descriptors.
        if log.logged >= log.config.checkpoint_bytes || log.dirty.len() >= self.max_open() / 2 {
            self.checkpoint_locked(log)?;
        }
        Ok(removed)
    }

    /// Writes the buffered images to their slots.
    pub(crate) fn write_pending(&self, log: &mut LogState) -> Result<()> {
        if log.pending.is_empty() {
            return Ok(());
        }
        // Images leave the buffer only once written: a failed write (a full disk) keeps the
        // rest buffered for the next attempt, and the log keeps them all.
        let mut by_series: HashMap<Bytes, Vec<(i64, &[u8])>> = HashMap::new();
        for ((key, t), img) in &log.pending {
            by_series.entry(key.clone()).or_default().push((*t, img));
        }
        let mut written: Vec<Bytes> = Vec::new();
        let mut result = Ok(());
        for (key, mut rows) in by_series {
            rows.sort_unstable_by_key(|(t, _)| *t);
            let mut put = SeriesPut {
                key,
                times: Vec::with_capacity(rows.len()),
                slots: Vec::with_capacity(rows.len() * self.spec.slot_len()),
            };
            for (t, img) in rows {
                put.times.push(t);
                put.slots.extend_from_slice(img);
            }
            if let Err(e) = self.apply_put(&put, &mut log.dirty) {
                result = Err(e);
                break;
            }
            written.push(put.key);
        }
        if result.is_ok() {
            log.pending.clear();
        } else {
            let done: std::collections::HashSet<Bytes> = written.into_iter().collect();
            log.pending.retain(|(k, _), _| !done.contains(k));
        }
        result
    }

    /// Writes the buffer (before a read that looks at the block files only).
    pub fn flush_pending(&self) -> Result<()> {
        let mut log = self.log.lock();
        self.write_pending(&mut log)
    }

    /// The buffered image of `key` at `t`, if a write of it waits in the buffer.
    pub(crate) fn pending_image(&self, key: &[u8], t: i64) -> Option<Vec<u8>> {
        let log = self.log.lock();
        if log.pending.is_empty() {
            return None;
        }
        log.pending.get(&(Bytes::copy_from_slice(key), t)).cloned()
    }

    /// Writes the buffer, makes every write durable and truncates the log.
    pub fn checkpoint(&self) -> Result<()> {
        let mut log = self.log.lock();
        self.checkpoint_locked(&mut log)
    }

    fn checkpoint_locked(&self, log: &mut LogState) -> Result<()> {
        self.write_pending(log)?;
        if log.config.wal.sync == tempora_wal::SyncPolicy::None {
            // The log itself is never fsynced: the files need not be either (what a power
            // cut may lose is the same).
            log.dirty = Dirty::default();
            self.forget_new_entries();
        } else {
            log.dirty.sync()?;
            self.sync_dirs()?;
        }
        if let Some(last) = log.wal.last_seq() {
            // Every record is in durable slots: the whole log goes (the next write starts a
            // new segment), so a reopen replays nothing already applied.
            log.wal.remove_all_before(last.next())?;
        }
        log.logged = 0;
        Ok(())
    }
}

impl DenseTable {
    /// Sets fields of the point of `key` at `t` in place: read, changed and logged as a whole
    /// image under the log lock (so concurrent updates of one table apply one at a time).
    /// Returns false, changing nothing, when the point does not exist.
    pub fn log_update(
        &self,
        seq: impl FnOnce() -> SeqNo,
        key: &[u8],
        t: i64,
        set: &[(usize, tempora_model::FieldValue)],
    ) -> Result<bool> {
        use super::slot::{self, Slot};
        let mut log = self.log.lock();
        let current = match log.pending.get(&(Bytes::copy_from_slice(key), t)) {
            Some(img) => slot::decode(&self.spec.fields, img)
                .map_err(|e| StorageError::Shared(e.to_string()))?,
            None => self.read_slot(key, t)?,
        };
        let Slot::Row(mut values) = current else {
            return Ok(false);
        };
        for (i, v) in set {
            values[*i] = Some(v.clone());
        }
        let mut put = SeriesPut {
            key: Bytes::copy_from_slice(key),
            times: vec![t],
            slots: Vec::with_capacity(self.spec.slot_len()),
        };
        slot::encode_with(&self.spec.fields, |i| values[i].as_ref(), &mut put.slots)
            .map_err(|e| StorageError::Shared(e.to_string()))?;
        self.log_locked(&mut log, seq, DenseOp::Put(vec![put]))?;
        Ok(true)
    }
}

impl DenseTable {
    /// Refuses an op that would change cold points (before the log sees it): a put before
    /// the cold watermark, a delete covering part of a cold block.
    fn check_not_cold(&self, op: &DenseOp) -> Result<()> {
        let cold = self.cold_before();
        if cold == i64::MIN {
            return Ok(());
        }
        let refuse = |what: String| {
            Err(StorageError::Shared(format!(
                "{what}: points before {} are in cold blocks of the columnar layout, read-only \
                 (a delete may remove whole cold blocks)",
                crate::catalog::settings::format_time_ns(cold)
            )))
        };
        match op {
            DenseOp::Put(series) => {
                if let Some(t) = series
                    .iter()
                    .flat_map(|p| p.times.iter())
                    .find(|t| **t < cold)
                {
                    return refuse(format!("a write at {t}"));
                }
            }
            DenseOp::Delete(ranges) => {
                let block_ns = self.spec.block_ns;
                for (key, from, to) in ranges {
                    let Some(s) = self.series(key) else { continue };
                    for b in s.blocks_in(*from, *to, block_ns) {
                        let whole = *from <= b && *to >= b.saturating_add(block_ns);
                        if s.is_cold(b) && !whole {
                            return refuse(format!("a delete of [{from}, {to})"));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Checkpoints and returns the log lock held: no write runs until it is dropped.
    pub(crate) fn checkpoint_and_hold(&self) -> Result<parking_lot::MutexGuard<'_, LogState>> {
        let mut log = self.log.lock();
        self.checkpoint_locked(&mut log)?;
        Ok(log)
    }
}

/// Deletes of at most this many slots (in all) go through the write-behind buffer.
const BUFFERED_DELETE_SLOTS: i64 = 64;

impl DenseTable {
    /// Whether a delete is small enough to buffer: few slots, none of them cold.
    fn buffered_delete(&self, ranges: &[(Bytes, i64, i64)]) -> bool {
        let slots: i64 = ranges
            .iter()
            .map(|(_, f, t)| (t.saturating_sub(*f) / self.spec.interval_ns).saturating_add(1))
            .fold(0i64, |a, b| a.saturating_add(b));
        slots <= BUFFERED_DELETE_SLOTS && ranges.iter().all(|(_, f, _)| *f >= self.cold_before())
    }

    /// Buffers a zero image (a hole) for every written slot of `key` in `[from, to)`;
    /// returns how many.
    fn buffer_holes(&self, log: &mut LogState, key: Bytes, from: i64, to: i64) -> Result<u64> {
        let interval = self.spec.interval_ns;
        let first = from.saturating_add((interval - from.rem_euclid(interval)) % interval);
        let zero = vec![0u8; self.spec.slot_len()];
        let mut n = 0;
        let mut t = first;
        while t < to {
            let written = match log.pending.get(&(key.clone(), t)) {
                Some(img) => !super::slot::is_hole(img),
                // A damaged slot counts as written: deleting it is how it is cleared.
                None => !matches!(self.read_slot(&key, t), Ok(super::slot::Slot::Hole)),
            };
            if written {
                log.pending.insert((key.clone(), t), zero.clone());
                n += 1;
            }
            t = t.saturating_add(interval);
        }
        Ok(n)
    }
}
