//! Parallel replay: segments are read and checksummed on worker threads while the caller's
//! function consumes records in seq order.

use tempora_model::SeqNo;

use crate::error::WalError;
use crate::pipeline;
use crate::segment::{self, SegmentMeta};
use crate::store::LogStore;
use crate::wal::Wal;

/// One segment read and verified: its bytes and `(seq, payload offset, payload len)` per record.
struct Loaded {
    data: Vec<u8>,
    records: Vec<(u64, usize, usize)>,
}

impl Wal {
    /// Calls `f(seq, payload)` for every committed record with `seq >= from`, in seq order.
    /// Segments are read and verified (checksums, seq order, and that they still match what
    /// `open` recovered) on `threads` worker threads (at least one) while `f` runs on the
    /// calling thread; at most `2 * threads` segments are in memory at once. Records buffered
    /// but not committed are not replayed. The first error (a [`WalError`] converted into
    /// `E`, or one returned by `f`) stops the replay and is returned.
    pub fn replay<E, F>(&self, from: SeqNo, threads: usize, mut f: F) -> Result<(), E>
    where
        E: From<WalError>,
        F: FnMut(SeqNo, &[u8]) -> Result<(), E>,
    {
        let start = self.segments.partition_point(|m| m.last_seq < from.0);
        let segs = &self.segments[start..];
        let store = &*self.store;
        let max_len = self.opts.max_record_size;
        let threads = threads.max(1);
        let load = |i: usize| load_segment(store, &segs[i], max_len);
        pipeline::ordered(segs.len(), threads, threads * 2, load, |_, loaded| {
            let loaded = loaded?;
            for &(seq, at, len) in &loaded.records {
                if seq >= from.0 {
                    f(SeqNo(seq), &loaded.data[at..at + len])?;
                }
            }
            Ok(())
        })
    }
}

fn load_segment(
    store: &dyn LogStore,
    meta: &SegmentMeta,
    max_len: usize,
) -> Result<Loaded, WalError> {
    let name = &meta.name;
    let data = store
        .read(name)
        .map_err(|e| WalError::io("reading", name, e))?;
    let Some(valid) = usize::try_from(meta.len).ok().and_then(|n| data.get(..n)) else {
        let reason = format!(
            "segment shrank to {} bytes since the log was opened",
            data.len()
        );
        return Err(WalError::corrupt(name, data.len() as u64, reason));
    };
    let mut records = Vec::with_capacity(meta.count as usize);
    let mut push = |seq, at, len| records.push((seq, at, len));
    let got =
        segment::check_complete(name, meta.first_seq, valid, max_len, meta.sealed, &mut push)?;
    if got != *meta {
        let reason = "segment changed since the log was opened";
        return Err(WalError::corrupt(name, 0, reason));
    }
    Ok(Loaded { data, records })
}
