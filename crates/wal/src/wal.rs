//! The write-ahead log: open/recover, append, group commit, truncation.

use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tempora_model::SeqNo;
use tracing::{debug, info, warn};

use crate::error::WalError;
use crate::frame::{self, HEADER_LEN, SEAL_LEN, SegmentHeader};
use crate::pipeline;
use crate::segment::{self, LastSegment, SegmentMeta};
use crate::store::{LogFile, LogStore};

/// Largest allowed `WalOptions::max_record_size`.
pub const MAX_RECORD_SIZE_LIMIT: usize = 1 << 30;

/// When `commit` makes data durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyncPolicy {
    /// `commit` fsyncs before returning: a committed record survives a power cut.
    #[default]
    Sync,
    /// `commit` fsyncs when at least this long passed since the last fsync; a power cut may
    /// lose the records committed since.
    Interval(Duration),
    /// Never fsync except when sealing a full segment (and in [`Wal::sync`]).
    None,
}

/// Options of a [`Wal`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalOptions {
    /// Segment size at which the log rolls to a new segment (a single commit larger than
    /// this still goes into one segment).
    pub segment_size: u64,
    /// Largest record payload. Must also cover every record already in the log.
    pub max_record_size: usize,
    pub sync: SyncPolicy,
}

impl Default for WalOptions {
    fn default() -> Self {
        WalOptions {
            segment_size: 64 << 20,
            max_record_size: 64 << 20,
            sync: SyncPolicy::Sync,
        }
    }
}

impl WalOptions {
    fn validate(&self) -> Result<(), WalError> {
        if self.segment_size == 0 {
            return Err(WalError::InvalidOptions("segment_size must be positive"));
        }
        if self.max_record_size > MAX_RECORD_SIZE_LIMIT {
            return Err(WalError::InvalidOptions("max_record_size is above 1 GiB"));
        }
        Ok(())
    }
}

/// Counters of one [`Wal`] since it was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WalStats {
    /// Bytes written to segments (headers, frames, seals).
    pub bytes_written: u64,
    /// fsyncs of segment files.
    pub syncs: u64,
    /// Successful commits that wrote records.
    pub commits: u64,
    /// Records committed.
    pub records: u64,
    /// Commits that failed (and were rolled back).
    pub failed_commits: u64,
    /// Segments in the log now.
    pub segments: usize,
    /// Valid bytes in the log now.
    pub log_bytes: u64,
}

/// A segmented write-ahead log. See the crate docs for the invariants.
pub struct Wal {
    pub(crate) store: Arc<dyn LogStore>,
    pub(crate) opts: WalOptions,
    /// Every segment of the log, oldest first. All but the last are sealed.
    pub(crate) segments: Vec<SegmentMeta>,
    /// Append handle on the last segment when it is not sealed.
    active: Option<Box<dyn LogFile>>,
    /// Encoded frames appended since the last commit.
    buf: Vec<u8>,
    buf_first: Option<SeqNo>,
    buf_count: u64,
    committed_last: Option<SeqNo>,
    appended_last: Option<SeqNo>,
    /// A segment created by a commit that has not completed.
    pending_new: Option<String>,
    /// Files may hold bytes beyond the committed state: cut them before writing again.
    needs_repair: bool,
    unsynced: bool,
    last_sync: Instant,
    stats: WalStats,
}

fn open_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().min(4))
}

impl Wal {
    /// Opens/recovers the log in `store`: validates all segments, cuts a torn tail (logging a
    /// warning), or fails with a named error ([`WalError::Corrupt`] etc.).
    pub fn open(store: Arc<dyn LogStore>, opts: WalOptions) -> Result<Wal, WalError> {
        opts.validate()?;
        let names = store.list().map_err(|e| WalError::io("listing", "", e))?;
        let mut names: Vec<(u64, String)> = names
            .into_iter()
            .filter_map(|n| segment::parse_name(&n).map(|seq| (seq, n)))
            .collect();
        names.sort();
        let last = names.pop();
        let mut segments = check_sealed(&store, &names, opts.max_record_size)?;
        if let Some((seq, name)) = last
            && let Some(meta) = recover_last(&store, &segments, seq, &name, &opts)?
        {
            segments.push(meta);
        }
        let active = match segments.last() {
            Some(m) if !m.sealed => {
                let f = store
                    .open_append(&m.name)
                    .map_err(|e| WalError::io("opening", &m.name, e))?;
                if f.len() != m.len {
                    let reason = format!("file is {} bytes after recovery", f.len());
                    return Err(WalError::corrupt(&m.name, m.len, reason));
                }
                Some(f)
            }
            _ => None,
        };
        let last_seq = segments.last().map(|m| SeqNo(m.last_seq));
        let unsynced = active.is_some();
        info!(
            segments = segments.len(),
            last_seq = ?last_seq,
            "opened write-ahead log"
        );
        Ok(Wal {
            store,
            opts,
            segments,
            active,
            buf: Vec::new(),
            buf_first: None,
            buf_count: 0,
            committed_last: last_seq,
            appended_last: last_seq,
            pending_new: None,
            needs_repair: false,
            // What an earlier process wrote may still sit in the page cache only.
            unsynced,
            last_sync: Instant::now(),
            stats: WalStats::default(),
        })
    }

    /// Buffers one record; `seq` must be strictly greater than the previous record's (the
    /// last buffered one, else the last committed one). Nothing is written before `commit`.
    pub fn append(&mut self, seq: SeqNo, payload: &[u8]) -> Result<(), WalError> {
        let limit = self.opts.max_record_size;
        if payload.len() > limit {
            return Err(WalError::RecordTooLarge {
                size: payload.len(),
                limit,
            });
        }
        if let Some(last) = self.appended_last
            && seq <= last
        {
            return Err(WalError::SeqNotIncreasing { seq, last });
        }
        self.buf_first.get_or_insert(seq);
        frame::encode_record(&mut self.buf, seq.0, payload);
        self.buf_count += 1;
        self.appended_last = Some(seq);
        Ok(())
    }

    /// Writes the buffered records (one write; many appends + one commit = group commit) and
    /// fsyncs per [`SyncPolicy`]. On any failure the buffered records are dropped, the files
    /// are cut back to the last committed state (no partial record stays behind; retried at
    /// the next commit if the cut fails too), `last_seq` stays at the last committed record,
    /// and the error is returned. Later appends and commits work once the fault clears.
    pub fn commit(&mut self) -> Result<(), WalError> {
        let result = self.try_commit();
        if result.is_err() {
            self.stats.failed_commits += 1;
            self.buf.clear();
            self.buf_first = None;
            self.buf_count = 0;
            self.appended_last = self.committed_last;
            if self.needs_repair
                && let Err(e) = self.repair()
            {
                warn!(error = %e, "wal rollback failed; retrying at the next commit");
            }
        }
        result
    }

    fn try_commit(&mut self) -> Result<(), WalError> {
        if self.needs_repair {
            self.repair()?;
        }
        let (Some(first), Some(last)) = (self.buf_first, self.appended_last) else {
            return if self.sync_due() { self.sync() } else { Ok(()) };
        };
        let batch = self.buf.len() as u64;
        let roll = match (&self.active, self.segments.last()) {
            (Some(_), Some(m)) => m.len + batch + SEAL_LEN as u64 > self.opts.segment_size,
            _ => true,
        };
        let mut file = if roll {
            self.roll(first)?
        } else {
            self.active.take().expect("checked above")
        };
        self.needs_repair = true;
        let seg_name = (self.pending_new.clone())
            .or_else(|| self.segments.last().map(|m| m.name.clone()))
            .unwrap_or_default();
        file.append(&self.buf)
            .map_err(|e| WalError::io("appending to", &seg_name, e))?;
        self.stats.bytes_written += batch;
        self.unsynced = true;
        if self.sync_due() {
            file.sync()
                .map_err(|e| WalError::io("syncing", &seg_name, e))?;
            self.synced();
        }
        // Committed: record it.
        match self.pending_new.take() {
            Some(name) => self.segments.push(SegmentMeta {
                name,
                first_seq: first.0,
                prev_last: self.segments.last().map(|m| m.last_seq),
                last_seq: last.0,
                count: self.buf_count,
                len: HEADER_LEN as u64 + batch,
                sealed: false,
            }),
            None => {
                let m = self.segments.last_mut().expect("active segment");
                m.last_seq = last.0;
                m.count += self.buf_count;
                m.len += batch;
            }
        }
        debug_assert_eq!(Some(file.len()), self.segments.last().map(|m| m.len));
        self.active = Some(file);
        self.needs_repair = false;
        self.committed_last = Some(last);
        self.stats.commits += 1;
        self.stats.records += self.buf_count;
        self.buf.clear();
        self.buf_first = None;
        self.buf_count = 0;
        Ok(())
    }

    /// Seals the active segment and creates the next one, named by `first`.
    fn roll(&mut self, first: SeqNo) -> Result<Box<dyn LogFile>, WalError> {
        self.seal_active()?;
        let name = segment::segment_name(first.0);
        self.needs_repair = true;
        self.pending_new = Some(name.clone());
        let mut file = self
            .store
            .create(&name)
            .map_err(|e| WalError::io("creating", &name, e))?;
        let header = SegmentHeader {
            first_seq: first.0,
            prev_last_seq: self.segments.last().map(|m| m.last_seq),
        };
        file.append(&frame::encode_header(header))
            .map_err(|e| WalError::io("writing the header of", &name, e))?;
        self.stats.bytes_written += HEADER_LEN as u64;
        debug!(segment = %name, "rolled to a new wal segment");
        Ok(file)
    }

    /// Appends the seal to the active segment and fsyncs it: from then on it is complete.
    fn seal_active(&mut self) -> Result<(), WalError> {
        let Some(mut file) = self.active.take() else {
            return Ok(());
        };
        self.needs_repair = true;
        let m = self
            .segments
            .last_mut()
            .expect("active segment has metadata");
        let seal = frame::encode_seal(m.last_seq, m.count);
        file.append(&seal)
            .map_err(|e| WalError::io("sealing", &m.name, e))?;
        file.sync()
            .map_err(|e| WalError::io("syncing", &m.name, e))?;
        m.len += SEAL_LEN as u64;
        m.sealed = true;
        self.stats.bytes_written += SEAL_LEN as u64;
        self.synced();
        Ok(())
    }

    /// Cuts the files back to the committed state after a failed commit.
    fn repair(&mut self) -> Result<(), WalError> {
        self.active = None;
        if let Some(name) = &self.pending_new {
            match self.store.remove(name) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(WalError::io("removing", name, e)),
            }
            self.pending_new = None;
        }
        if let Some(m) = self.segments.last() {
            self.store
                .truncate(&m.name, m.len)
                .map_err(|e| WalError::io("truncating", &m.name, e))?;
            if !m.sealed {
                let f = self
                    .store
                    .open_append(&m.name)
                    .map_err(|e| WalError::io("opening", &m.name, e))?;
                self.active = Some(f);
            }
        }
        self.needs_repair = false;
        info!("wal rolled back to the last committed record");
        Ok(())
    }

    fn sync_due(&self) -> bool {
        match self.opts.sync {
            SyncPolicy::Sync => true,
            SyncPolicy::Interval(d) => self.unsynced && self.last_sync.elapsed() >= d,
            SyncPolicy::None => false,
        }
    }

    fn synced(&mut self) {
        self.stats.syncs += 1;
        self.unsynced = false;
        self.last_sync = Instant::now();
    }

    /// Fsyncs committed records not yet synced (call on shutdown with `Interval`/`None`).
    pub fn sync(&mut self) -> Result<(), WalError> {
        if !self.unsynced {
            return Ok(());
        }
        if self.needs_repair {
            // Reopens the handle on the last segment (a sealed one was synced when sealed).
            self.repair()?;
        }
        if let (Some(f), Some(m)) = (self.active.as_mut(), self.segments.last()) {
            f.sync().map_err(|e| WalError::io("syncing", &m.name, e))?;
        }
        self.synced();
        Ok(())
    }

    /// Highest committed seq in the log (after open: the last recovered record).
    pub fn last_seq(&self) -> Option<SeqNo> {
        self.committed_last
    }

    /// Deletes whole segments whose records all have a seq below `seq`, oldest first; never
    /// the last segment, so `last_seq` survives a reopen.
    pub fn truncate_before(&mut self, seq: SeqNo) -> Result<(), WalError> {
        let candidates = self.segments.len().saturating_sub(1);
        let mut removed = 0;
        let mut result = Ok(());
        for m in &self.segments[..candidates] {
            if m.last_seq >= seq.0 {
                break;
            }
            match self.store.remove(&m.name) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    result = Err(WalError::io("removing", &m.name, e));
                    break;
                }
            }
            removed += 1;
        }
        if removed > 0 {
            debug!(removed, before = seq.0, "removed old wal segments");
        }
        self.segments.drain(..removed);
        result
    }

    /// Deletes every segment, the last one too, when every committed record has a seq below
    /// `seq` and nothing is buffered (after a clean shutdown's final flush: no log bytes stay
    /// behind). Oldest first, so a crash part way leaves a suffix of the log, as
    /// [`Self::truncate_before`] does. The next commit starts a new segment. Returns whether
    /// the log was emptied.
    pub fn remove_all_before(&mut self, seq: SeqNo) -> Result<bool, WalError> {
        let flushed = self.committed_last.is_none_or(|last| last < seq);
        if !flushed || self.buf_count > 0 || self.needs_repair {
            return Ok(false);
        }
        self.active = None;
        while let Some(m) = self.segments.first() {
            match self.store.remove(&m.name) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(WalError::io("removing", &m.name, e)),
            }
            self.segments.remove(0);
        }
        debug!(before = seq.0, "removed every wal segment");
        Ok(true)
    }

    /// Counters since open, plus the current segment count and size.
    pub fn stats(&self) -> WalStats {
        WalStats {
            segments: self.segments.len(),
            log_bytes: self.segments.iter().map(|m| m.len).sum(),
            ..self.stats
        }
    }
}

/// Validates every segment but the last (in parallel): each must be complete and sealed, and
/// seqs must increase across them.
fn check_sealed(
    store: &Arc<dyn LogStore>,
    names: &[(u64, String)],
    max_len: usize,
) -> Result<Vec<SegmentMeta>, WalError> {
    let mut metas: Vec<SegmentMeta> = Vec::with_capacity(names.len() + 1);
    let threads = open_threads();
    let load = |i: usize| {
        let (seq, name) = &names[i];
        let data = store
            .read(name)
            .map_err(|e| WalError::io("reading", name, e))?;
        segment::check_complete(name, *seq, &data, max_len, true, &mut |_, _, _| {})
    };
    pipeline::ordered(names.len(), threads, threads * 2, load, |_, meta| {
        let meta = meta?;
        check_follows(metas.last(), &meta)?;
        metas.push(meta);
        Ok(())
    })?;
    Ok(metas)
}

/// Seqs must increase from one segment to the next, and `next` must name `prev` as its
/// predecessor (so a missing segment in the middle is detected).
fn check_follows(prev: Option<&SegmentMeta>, next: &SegmentMeta) -> Result<(), WalError> {
    let Some(p) = prev else {
        return Ok(());
    };
    if next.first_seq <= p.last_seq {
        let reason = format!(
            "first seq {} is not greater than the last seq {} of segment {}",
            next.first_seq, p.last_seq, p.name
        );
        return Err(WalError::corrupt(&next.name, HEADER_LEN as u64, reason));
    }
    if next.prev_last != Some(p.last_seq) {
        let reason = format!(
            "the header says the previous segment ends at seq {:?}, but {} ends at {}: a segment is missing",
            next.prev_last, p.name, p.last_seq
        );
        return Err(WalError::corrupt(&next.name, 0, reason));
    }
    Ok(())
}

/// Recovers the last segment: cuts a torn tail or removes an empty segment.
fn recover_last(
    store: &Arc<dyn LogStore>,
    before: &[SegmentMeta],
    seq: u64,
    name: &str,
    opts: &WalOptions,
) -> Result<Option<SegmentMeta>, WalError> {
    let data = store
        .read(name)
        .map_err(|e| WalError::io("reading", name, e))?;
    let prev_last = before.last().map(|m| m.last_seq);
    match segment::recover_last(name, seq, &data, prev_last, opts.max_record_size)? {
        LastSegment::Empty { reason } => {
            warn!(segment = %name, %reason, bytes = data.len(), "removing a wal segment without records");
            store
                .remove(name)
                .map_err(|e| WalError::io("removing", name, e))?;
            Ok(None)
        }
        LastSegment::Valid { meta, torn } => {
            check_follows(before.last(), &meta)?;
            if let Some((offset, reason)) = torn {
                let cut = data.len() as u64 - offset;
                warn!(segment = %name, offset, cut_bytes = cut, %reason, "cutting a torn wal tail");
                store
                    .truncate(name, meta.len)
                    .map_err(|e| WalError::io("truncating", name, e))?;
            }
            Ok(Some(meta))
        }
    }
}
