//! An in-memory [`LogStore`] that models power cuts.

use std::collections::BTreeMap;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use crate::store::{LogFile, LogStore};

#[derive(Debug, Default)]
struct MemFile {
    data: Vec<u8>,
    /// Bytes of `data` that survive a crash.
    synced: usize,
}

type FileRef = Arc<Mutex<MemFile>>;

/// Files in memory. Directory operations (create, remove, truncate) are durable at once;
/// appended bytes are durable only once synced. [`MemLogStore::crash`] drops every unsynced
/// byte, like a power cut; handles opened before a crash fail afterwards.
#[derive(Debug, Default)]
pub struct MemLogStore {
    files: Mutex<BTreeMap<String, FileRef>>,
    epoch: Arc<AtomicU64>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn not_found(name: &str) -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, format!("no file {name:?}"))
}

impl MemLogStore {
    pub fn new() -> MemLogStore {
        MemLogStore::default()
    }

    /// A power cut: every file loses its unsynced bytes and open handles stop working.
    pub fn crash(&self) {
        self.crash_keeping(|_, _| 0);
    }

    /// A power cut in which each file keeps a seeded-random prefix of its unsynced bytes
    /// (a torn write at an arbitrary byte).
    pub fn crash_partial(&self, seed: u64) {
        let mut state = seed;
        self.crash_keeping(|_, unsynced| {
            state = splitmix64(state);
            (state % (unsynced as u64 + 1)) as usize
        });
    }

    /// A power cut where `keep(name, unsynced_len)` says how many unsynced bytes survive.
    pub fn crash_keeping(&self, mut keep: impl FnMut(&str, usize) -> usize) {
        self.epoch.fetch_add(1, Ordering::SeqCst);
        for (name, f) in lock(&self.files).iter() {
            let mut f = lock(f);
            let unsynced = f.data.len() - f.synced;
            let kept = f.synced + keep(name, unsynced).min(unsynced);
            f.data.truncate(kept);
            f.synced = kept;
        }
    }

    /// The current bytes of a file, synced or not.
    pub fn get(&self, name: &str) -> Option<Vec<u8>> {
        lock(&self.files).get(name).map(|f| lock(f).data.clone())
    }

    /// Replaces a file's bytes, all durable (for injecting damage in tests).
    pub fn put(&self, name: &str, data: Vec<u8>) {
        let synced = data.len();
        let f = MemFile { data, synced };
        lock(&self.files).insert(name.to_string(), Arc::new(Mutex::new(f)));
    }

    /// Bytes of a file that would survive a crash now.
    pub fn synced_len(&self, name: &str) -> Option<usize> {
        lock(&self.files).get(name).map(|f| lock(f).synced)
    }

    fn file(&self, name: &str) -> io::Result<FileRef> {
        lock(&self.files)
            .get(name)
            .cloned()
            .ok_or_else(|| not_found(name))
    }

    fn handle(&self, file: FileRef) -> Box<dyn LogFile> {
        Box::new(MemLogFile {
            file,
            epoch: self.epoch.clone(),
            opened_in: self.epoch.load(Ordering::SeqCst),
        })
    }
}

impl LogStore for MemLogStore {
    fn list(&self) -> io::Result<Vec<String>> {
        Ok(lock(&self.files).keys().cloned().collect())
    }

    fn create(&self, name: &str) -> io::Result<Box<dyn LogFile>> {
        let f: FileRef = Arc::default();
        lock(&self.files).insert(name.to_string(), f.clone());
        Ok(self.handle(f))
    }

    fn open_append(&self, name: &str) -> io::Result<Box<dyn LogFile>> {
        let f = self.file(name)?;
        Ok(self.handle(f))
    }

    fn read(&self, name: &str) -> io::Result<Vec<u8>> {
        let f = self.file(name)?;
        let data = lock(&f).data.clone();
        Ok(data)
    }

    fn truncate(&self, name: &str, len: u64) -> io::Result<()> {
        let f = self.file(name)?;
        let mut f = lock(&f);
        let len = usize::try_from(len).map_err(io::Error::other)?;
        f.data.resize(len, 0);
        f.synced = f.synced.min(len);
        Ok(())
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        match lock(&self.files).remove(name) {
            Some(_) => Ok(()),
            None => Err(not_found(name)),
        }
    }
}

struct MemLogFile {
    file: FileRef,
    epoch: Arc<AtomicU64>,
    opened_in: u64,
}

impl MemLogFile {
    fn check(&self) -> io::Result<()> {
        if self.epoch.load(Ordering::SeqCst) != self.opened_in {
            return Err(io::Error::other("file handle opened before a crash"));
        }
        Ok(())
    }
}

impl LogFile for MemLogFile {
    fn append(&mut self, buf: &[u8]) -> io::Result<()> {
        self.check()?;
        lock(&self.file).data.extend_from_slice(buf);
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        self.check()?;
        let mut f = lock(&self.file);
        f.synced = f.data.len();
        Ok(())
    }

    fn len(&self) -> u64 {
        lock(&self.file).data.len() as u64
    }
}

/// A tiny seeded generator (SplitMix64), enough for fault injection.
pub(crate) fn splitmix64(state: u64) -> u64 {
    let mut z = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crash_drops_unsynced_bytes() {
        let s = MemLogStore::new();
        let mut f = s.create("a").unwrap();
        f.append(b"abc").unwrap();
        f.sync().unwrap();
        f.append(b"def").unwrap();
        assert_eq!(s.read("a").unwrap(), b"abcdef");
        s.crash();
        assert_eq!(s.read("a").unwrap(), b"abc");
        assert!(f.append(b"x").is_err(), "stale handle");
        let mut f = s.open_append("a").unwrap();
        f.append(b"xyz").unwrap();
        s.truncate("a", 4).unwrap();
        s.crash();
        assert_eq!(s.read("a").unwrap(), b"abc");
        s.crash_keeping(|_, _| 0);
        assert_eq!(s.synced_len("a"), Some(3));
    }

    #[test]
    fn partial_crash_keeps_a_prefix() {
        for seed in 0..20 {
            let s = MemLogStore::new();
            let mut f = s.create("a").unwrap();
            f.append(b"abc").unwrap();
            f.sync().unwrap();
            f.append(b"defgh").unwrap();
            s.crash_partial(seed);
            let got = s.read("a").unwrap();
            assert!(got.len() >= 3 && b"abcdefgh".starts_with(&got), "{seed}");
        }
    }
}
