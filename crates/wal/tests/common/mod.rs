//! Shared test helpers: backends, a reference model, and an independent reader of the
//! documented segment layout (docs/format/wal.md), so tests do not trust the code under test
//! to tell them where frames are.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

use tempora_wal::{FsLogStore, LogStore, MemLogStore, SeqNo, Wal, WalError, WalOptions};

pub const HEADER_LEN: usize = 32;
pub const FRAME_HEADER_LEN: usize = 16;
pub const SEAL_LEN: usize = 24;
pub const SEAL_MARK: u32 = u32::MAX;

pub type Records = Vec<(u64, Vec<u8>)>;

/// A store plus raw access to its files, for injecting damage.
pub enum Backend {
    Mem(Arc<MemLogStore>),
    Fs(tempfile::TempDir, Arc<FsLogStore>),
}

impl Backend {
    pub fn mem() -> Backend {
        Backend::Mem(Arc::new(MemLogStore::new()))
    }

    pub fn fs() -> Backend {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(FsLogStore::new(dir.path()).unwrap());
        Backend::Fs(dir, store)
    }

    pub fn both() -> [(&'static str, Backend); 2] {
        [("mem", Backend::mem()), ("fs", Backend::fs())]
    }

    pub fn store(&self) -> Arc<dyn LogStore> {
        match self {
            Backend::Mem(m) => m.clone(),
            Backend::Fs(_, s) => s.clone(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        match self {
            Backend::Fs(dir, _) => dir.path().join(name),
            Backend::Mem(_) => unreachable!(),
        }
    }

    pub fn get(&self, name: &str) -> Option<Vec<u8>> {
        match self {
            Backend::Mem(m) => m.get(name),
            Backend::Fs(..) => std::fs::read(self.path(name)).ok(),
        }
    }

    pub fn put(&self, name: &str, data: Vec<u8>) {
        match self {
            Backend::Mem(m) => m.put(name, data),
            Backend::Fs(..) => std::fs::write(self.path(name), data).unwrap(),
        }
    }

    /// Removes a file (without the store's directory fsync: test-only speed).
    pub fn remove(&self, name: &str) {
        match self {
            Backend::Mem(m) => m.remove(name).unwrap(),
            Backend::Fs(..) => std::fs::remove_file(self.path(name)).unwrap(),
        }
    }

    /// Segment file names, sorted.
    pub fn segments(&self) -> Vec<String> {
        let mut names: Vec<String> = (self.store().list().unwrap().into_iter())
            .filter(|n| n.ends_with(".wal"))
            .collect();
        names.sort();
        names
    }

    /// Snapshot of every file, to restore after a damage case.
    pub fn snapshot(&self) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        for n in self.store().list().unwrap() {
            out.push((n.clone(), self.get(&n).unwrap()));
        }
        out
    }

    pub fn restore(&self, snap: &[(String, Vec<u8>)]) {
        for n in self.store().list().unwrap() {
            self.remove(&n);
        }
        for (n, d) in snap {
            self.put(n, d.clone());
        }
    }
}

/// Deterministic payload for a seq: varied lengths and contents.
pub fn payload(seq: u64, max: usize) -> Vec<u8> {
    let len = (splitmix(seq) % (max as u64 + 1)) as usize;
    (0..len)
        .map(|i| (seq as usize * 31 + i * 7) as u8)
        .collect()
}

pub fn splitmix(state: u64) -> u64 {
    let mut z = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A seeded generator.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = splitmix(self.0);
        self.0
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Every record of the log, via `replay` on `threads` threads.
pub fn replay_all(wal: &Wal, threads: usize) -> Result<Records, WalError> {
    replay_from(wal, 0, threads)
}

pub fn replay_from(wal: &Wal, from: u64, threads: usize) -> Result<Records, WalError> {
    let mut out = Vec::new();
    wal.replay(SeqNo(from), threads, |seq, p| {
        out.push((seq.0, p.to_vec()));
        Ok::<(), WalError>(())
    })?;
    Ok(out)
}

/// Opens the log and replays it.
pub fn open_records(store: Arc<dyn LogStore>, opts: &WalOptions) -> Result<Records, WalError> {
    let wal = Wal::open(store, opts.clone())?;
    let recs = replay_all(&wal, 2)?;
    assert_eq!(
        wal.last_seq().map(|s| s.0),
        recs.last().map(|r| r.0),
        "last_seq"
    );
    Ok(recs)
}

/// Appends `records`, committing every `group` records.
pub fn write(wal: &mut Wal, records: &[(u64, Vec<u8>)], group: usize) {
    for chunk in records.chunks(group.max(1)) {
        for (seq, p) in chunk {
            wal.append(SeqNo(*seq), p).unwrap();
        }
        wal.commit().unwrap();
    }
}

/// Records with seqs `first, first + step, ...`.
pub fn make_records(first: u64, n: usize, step: u64, max_payload: usize) -> Records {
    (0..n as u64)
        .map(|i| {
            let seq = first + i * step;
            (seq, payload(seq, max_payload))
        })
        .collect()
}

/// One part of a segment file, per the documented layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Header,
    Record { seq: u64 },
    Seal,
}

/// The units of an intact segment as `(start, end, unit)`, read per docs/format/wal.md.
pub fn layout(data: &[u8]) -> Vec<(usize, usize, Unit)> {
    assert_eq!(&data[..8], b"TMPRWAL\0", "magic");
    let mut out = vec![(0, HEADER_LEN, Unit::Header)];
    let mut pos = HEADER_LEN;
    while pos < data.len() {
        let len = u32::from_le_bytes(data[pos..pos + 4].try_into().unwrap());
        let seq = u64::from_le_bytes(data[pos + 8..pos + 16].try_into().unwrap());
        let (end, unit) = if len == SEAL_MARK {
            (pos + SEAL_LEN, Unit::Seal)
        } else {
            (pos + FRAME_HEADER_LEN + len as usize, Unit::Record { seq })
        };
        assert!(end <= data.len(), "frame runs past the end");
        out.push((pos, end, unit));
        pos = end;
    }
    out
}

/// Start of the unit containing byte `b`.
pub fn unit_start(units: &[(usize, usize, Unit)], b: usize) -> usize {
    units
        .iter()
        .find(|u| u.0 <= b && b < u.1)
        .expect("byte inside the file")
        .0
}

/// Independent encoders of the documented format.
pub mod enc {
    pub fn header(first_seq: u64, prev_last_seq: Option<u64>) -> Vec<u8> {
        let mut b = b"TMPRWAL\0".to_vec();
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&(prev_last_seq.is_some() as u16).to_le_bytes());
        b.extend_from_slice(&first_seq.to_le_bytes());
        b.extend_from_slice(&prev_last_seq.unwrap_or(0).to_le_bytes());
        let crc = crc32c::crc32c(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        b
    }

    fn frame(len: u32, seq: u64, body: &[u8]) -> Vec<u8> {
        let mut covered = len.to_le_bytes().to_vec();
        covered.extend_from_slice(&seq.to_le_bytes());
        covered.extend_from_slice(body);
        let mut b = len.to_le_bytes().to_vec();
        b.extend_from_slice(&crc32c::crc32c(&covered).to_le_bytes());
        b.extend_from_slice(&seq.to_le_bytes());
        b.extend_from_slice(body);
        b
    }

    pub fn record(seq: u64, payload: &[u8]) -> Vec<u8> {
        frame(payload.len() as u32, seq, payload)
    }

    pub fn seal(last_seq: u64, count: u64) -> Vec<u8> {
        frame(u32::MAX, last_seq, &count.to_le_bytes())
    }

    /// A whole segment: header, records, and a seal if `sealed`.
    pub fn segment(prev: Option<u64>, recs: &[(u64, &[u8])], sealed: bool) -> Vec<u8> {
        let mut b = header(recs[0].0, prev);
        for (seq, p) in recs {
            b.extend(record(*seq, p));
        }
        if sealed {
            b.extend(seal(recs.last().unwrap().0, recs.len() as u64));
        }
        b
    }

    pub fn name(first_seq: u64) -> String {
        format!("{first_seq:020}.wal")
    }
}
