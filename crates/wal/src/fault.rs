//! A [`LogStore`] wrapper that injects failures, for tests.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use crate::store::{LogFile, LogStore};

const NEVER: u64 = u64::MAX;

#[derive(Debug)]
struct FaultState {
    ops: AtomicU64,
    fail_after: AtomicU64,
    fail_once: AtomicU64,
    disk_full: AtomicBool,
    injected: AtomicU64,
    /// While true, appends wait (a stalled disk).
    held: Mutex<bool>,
    released: Condvar,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    /// Writes data: fails while the disk is full.
    Write,
    /// Frees or reads: unaffected by a full disk.
    Other,
}

impl FaultState {
    /// Waits while appends are held.
    fn wait_released(&self) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        while *held {
            held = self.released.wait(held).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Counts one operation and says whether it must fail.
    fn admit(&self, op: Op) -> io::Result<()> {
        let n = self.ops.fetch_add(1, Ordering::SeqCst) + 1;
        if n > self.fail_after.load(Ordering::SeqCst) {
            self.injected.fetch_add(1, Ordering::SeqCst);
            return Err(io::Error::other(format!("injected crash at operation {n}")));
        }
        if n == self.fail_once.load(Ordering::SeqCst) {
            self.injected.fetch_add(1, Ordering::SeqCst);
            return Err(io::Error::other(format!(
                "injected failure of operation {n}"
            )));
        }
        if op == Op::Write && self.disk_full.load(Ordering::SeqCst) {
            self.injected.fetch_add(1, Ordering::SeqCst);
            return Err(io::Error::from_raw_os_error(28));
        }
        Ok(())
    }
}

/// Wraps a store; counts every I/O operation (store methods, file appends and syncs; not
/// `len`) and fails them on demand:
/// - [`FaultLogStore::fail_after`]: every operation numbered above `k` fails (a crash),
/// - [`FaultLogStore::fail_once_at`]: operation number `k` fails, the rest work (a glitch),
/// - [`FaultLogStore::set_disk_full`]: creates, appends and syncs fail with ENOSPC
///   (`io::ErrorKind::StorageFull`, raw os error 28) until switched off;
/// - [`FaultLogStore::set_held`]: appends wait until switched off (a stalled disk).
///
/// A failing append first writes half of its buffer to the inner file, like a torn write.
pub struct FaultLogStore {
    inner: Arc<dyn LogStore>,
    state: Arc<FaultState>,
}

impl FaultLogStore {
    pub fn new(inner: Arc<dyn LogStore>) -> FaultLogStore {
        FaultLogStore {
            inner,
            state: Arc::new(FaultState {
                ops: AtomicU64::new(0),
                fail_after: AtomicU64::new(NEVER),
                fail_once: AtomicU64::new(NEVER),
                disk_full: AtomicBool::new(false),
                injected: AtomicU64::new(0),
                held: Mutex::new(false),
                released: Condvar::new(),
            }),
        }
    }

    /// Operations performed so far (the first is number 1).
    pub fn ops(&self) -> u64 {
        self.state.ops.load(Ordering::SeqCst)
    }

    /// Makes every operation numbered above `k` fail, until [`FaultLogStore::clear`].
    pub fn fail_after(&self, k: u64) {
        self.state.fail_after.store(k, Ordering::SeqCst);
    }

    /// Makes operation number `k` (only) fail, until [`FaultLogStore::clear`].
    pub fn fail_once_at(&self, k: u64) {
        self.state.fail_once.store(k, Ordering::SeqCst);
    }

    /// Switches the disk-full condition on or off.
    pub fn set_disk_full(&self, on: bool) {
        self.state.disk_full.store(on, Ordering::SeqCst);
    }

    /// Holds appends (they wait, like writes to a stalled disk) until switched off.
    pub fn set_held(&self, on: bool) {
        *self.state.held.lock().unwrap_or_else(|e| e.into_inner()) = on;
        if !on {
            self.state.released.notify_all();
        }
    }

    /// Switches every fault off.
    pub fn clear(&self) {
        self.fail_after(NEVER);
        self.fail_once_at(NEVER);
        self.set_disk_full(false);
        self.set_held(false);
    }

    /// Number of failures injected so far.
    pub fn injected(&self) -> u64 {
        self.state.injected.load(Ordering::SeqCst)
    }

    fn wrap(&self, file: Box<dyn LogFile>) -> Box<dyn LogFile> {
        Box::new(FaultLogFile {
            inner: file,
            state: self.state.clone(),
        })
    }
}

impl LogStore for FaultLogStore {
    fn list(&self) -> io::Result<Vec<String>> {
        self.state.admit(Op::Other)?;
        self.inner.list()
    }

    fn create(&self, name: &str) -> io::Result<Box<dyn LogFile>> {
        self.state.admit(Op::Write)?;
        Ok(self.wrap(self.inner.create(name)?))
    }

    fn open_append(&self, name: &str) -> io::Result<Box<dyn LogFile>> {
        self.state.admit(Op::Other)?;
        Ok(self.wrap(self.inner.open_append(name)?))
    }

    fn read(&self, name: &str) -> io::Result<Vec<u8>> {
        self.state.admit(Op::Other)?;
        self.inner.read(name)
    }

    fn truncate(&self, name: &str, len: u64) -> io::Result<()> {
        self.state.admit(Op::Other)?;
        self.inner.truncate(name, len)
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        self.state.admit(Op::Other)?;
        self.inner.remove(name)
    }
}

struct FaultLogFile {
    inner: Box<dyn LogFile>,
    state: Arc<FaultState>,
}

impl LogFile for FaultLogFile {
    fn append(&mut self, buf: &[u8]) -> io::Result<()> {
        self.state.wait_released();
        if let Err(e) = self.state.admit(Op::Write) {
            // A torn write: half the buffer lands (ignoring errors of that half).
            let _ = self.inner.append(&buf[..buf.len() / 2]);
            return Err(e);
        }
        self.inner.append(buf)
    }

    fn sync(&mut self) -> io::Result<()> {
        self.state.admit(Op::Write)?;
        self.inner.sync()
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemLogStore;

    #[test]
    fn injects_crash_and_disk_full() {
        let mem = Arc::new(MemLogStore::new());
        let f = FaultLogStore::new(mem.clone());
        let mut file = f.create("a").unwrap();
        file.append(b"abcd").unwrap();
        assert_eq!(f.ops(), 2);
        f.set_disk_full(true);
        let e = file.append(b"efgh").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::StorageFull);
        assert_eq!(e.raw_os_error(), Some(28));
        assert_eq!(mem.get("a").unwrap(), b"abcdef", "torn half write");
        assert_eq!(file.sync().unwrap_err().kind(), io::ErrorKind::StorageFull);
        f.truncate("a", 4).unwrap();
        f.clear();
        file.sync().unwrap();
        f.fail_after(f.ops());
        assert!(f.list().is_err());
        assert!(f.read("a").is_err());
        assert_eq!(f.injected(), 4);
        f.clear();
        assert_eq!(f.read("a").unwrap(), b"abcd");
        f.fail_once_at(f.ops() + 2);
        assert!(f.list().is_ok());
        assert!(f.list().is_err());
        assert!(f.list().is_ok());
    }

    #[test]
    fn held_appends_wait_for_release() {
        let f = Arc::new(FaultLogStore::new(Arc::new(MemLogStore::new())));
        let mut file = f.create("a").unwrap();
        f.set_held(true);
        let (tx, rx) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || {
            file.append(b"x").unwrap();
            tx.send(()).unwrap();
        });
        assert!(
            rx.recv_timeout(std::time::Duration::from_millis(50))
                .is_err(),
            "the append waits while held"
        );
        f.set_held(false);
        rx.recv().unwrap();
        t.join().unwrap();
        assert_eq!(f.read("a").unwrap(), b"x");
    }
}
