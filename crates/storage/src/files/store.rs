//! [`FileStore`]: the synchronous shell around `object_store` through which every data,
//! index and manifest file is read and written.
//!
//! Invariants:
//! - `put` is atomic (the object store writes a temporary name and renames) and, on local
//!   disk, durable before it returns: the file and its directory are fsynced. Callers record a
//!   file in the manifest only after its `put` returned.
//! - A path is the same string everywhere: `list` gives back the paths `put` was given. The
//!   object store percent-encodes some bytes of each part in its keys and file names (`%`,
//!   `~`, brackets, …); the file fsynced is the one the store wrote, and listed keys are
//!   decoded once.
//! - A [`FaultPlan`] can make every operation after the k-th fail (a crash at I/O k) or make
//!   writes fail with ENOSPC (disk full), so tests can enumerate crash points.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use bytes::Bytes;
use futures::TryStreamExt;
use futures::executor::block_on;
use object_store::local::LocalFileSystem;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

use crate::error::{Result, StorageError, io_err};

/// Faults to inject into a [`FileStore`].
#[derive(Debug)]
pub struct FaultPlan {
    ops: AtomicU64,
    crash_after: AtomicU64,
    disk_full: AtomicBool,
}

impl Default for FaultPlan {
    fn default() -> Self {
        Self {
            ops: AtomicU64::new(0),
            crash_after: AtomicU64::new(u64::MAX),
            disk_full: AtomicBool::new(false),
        }
    }
}

impl FaultPlan {
    /// Every operation after the first `k` fails, as if the process died at I/O number k.
    pub fn crash_after(&self, k: u64) {
        self.crash_after.store(k, Ordering::SeqCst);
    }
    pub fn set_disk_full(&self, full: bool) {
        self.disk_full.store(full, Ordering::SeqCst);
    }
    /// Operations attempted so far.
    pub fn ops(&self) -> u64 {
        self.ops.load(Ordering::SeqCst)
    }
    fn check(&self, op: &'static str, write: bool) -> Result<()> {
        let n = self.ops.fetch_add(1, Ordering::SeqCst) + 1;
        if n > self.crash_after.load(Ordering::SeqCst) {
            return Err(StorageError::Injected(format!(
                "crashed before i/o {n} ({op})"
            )));
        }
        if write && self.disk_full.load(Ordering::SeqCst) {
            return Err(StorageError::DiskFull { op });
        }
        Ok(())
    }
}

/// A store of whole files addressed by `/`-separated paths.
#[derive(Debug, Clone)]
pub struct FileStore {
    inner: Arc<dyn ObjectStore>,
    /// `inner` itself when the files are on local disk (to fsync what it wrote).
    local: Option<Arc<LocalFileSystem>>,
    faults: Option<Arc<FaultPlan>>,
}

fn os_err(op: &'static str, path: &str, e: object_store::Error) -> StorageError {
    if let object_store::Error::Generic { source, .. } = &e
        && let Some(io) = source.downcast_ref::<std::io::Error>()
        && (io.raw_os_error() == Some(28) || io.kind() == std::io::ErrorKind::StorageFull)
    {
        return StorageError::DiskFull { op };
    }
    StorageError::ObjectStore {
        op,
        path: path.to_string(),
        source: e,
    }
}

impl FileStore {
    /// Files under a local directory (created if missing).
    pub fn local(root: impl Into<PathBuf>) -> Result<Self> {
        let root = root.into();
        std::fs::create_dir_all(&root)
            .map_err(|e| io_err("create dir", root.display().to_string(), e))?;
        let fs = LocalFileSystem::new_with_prefix(&root)
            .map_err(|e| os_err("open", &root.display().to_string(), e))?;
        let fs = Arc::new(fs);
        Ok(Self {
            inner: fs.clone(),
            local: Some(fs),
            faults: None,
        })
    }

    /// Files in memory (tests).
    pub fn memory() -> Self {
        Self::new(Arc::new(object_store::memory::InMemory::new()))
    }

    /// Any object store (S3-compatible, in-memory, …).
    pub fn new(inner: Arc<dyn ObjectStore>) -> Self {
        Self {
            inner,
            local: None,
            faults: None,
        }
    }

    /// The same files, with faults injected by `plan`.
    pub fn with_faults(&self, plan: Arc<FaultPlan>) -> Self {
        Self {
            faults: Some(plan),
            ..self.clone()
        }
    }

    fn check(&self, op: &'static str, write: bool) -> Result<()> {
        match &self.faults {
            Some(f) => f.check(op, write),
            None => Ok(()),
        }
    }

    /// Writes a whole file atomically and durably.
    pub fn put(&self, path: &str, bytes: Bytes) -> Result<()> {
        self.check("put", true)?;
        let location = Path::from(path);
        block_on(self.inner.put(&location, PutPayload::from(bytes)))
            .map_err(|e| os_err("put", path, e))?;
        if let Some(local) = &self.local {
            // The file the store wrote: its name has the store's encoding of the path.
            let full = local
                .path_to_filesystem(&location)
                .map_err(|e| os_err("fsync", path, e))?;
            let sync = |p: &std::path::Path| std::fs::File::open(p).and_then(|f| f.sync_all());
            sync(&full).map_err(|e| io_err("fsync", path, e))?;
            if let Some(dir) = full.parent() {
                sync(dir).map_err(|e| io_err("fsync dir", path, e))?;
            }
        }
        Ok(())
    }

    pub fn get(&self, path: &str) -> Result<Bytes> {
        self.check("get", false)?;
        block_on(async { self.inner.get(&Path::from(path)).await?.bytes().await })
            .map_err(|e| os_err("get", path, e))
    }

    pub fn get_range(&self, path: &str, range: std::ops::Range<u64>) -> Result<Bytes> {
        self.check("get range", false)?;
        block_on(self.inner.get_range(&Path::from(path), range))
            .map_err(|e| os_err("get range", path, e))
    }

    pub fn size(&self, path: &str) -> Result<u64> {
        self.check("head", false)?;
        Ok(block_on(self.inner.head(&Path::from(path)))
            .map_err(|e| os_err("head", path, e))?
            .size)
    }

    /// Every file below `prefix`, with its size.
    pub fn list(&self, prefix: &str) -> Result<Vec<(String, u64)>> {
        self.check("list", false)?;
        let p = Path::from(prefix);
        let metas: Vec<object_store::ObjectMeta> =
            block_on(self.inner.list(Some(&p)).try_collect())
                .map_err(|e| os_err("list", prefix, e))?;
        let mut out: Vec<(String, u64)> = metas
            .into_iter()
            .map(|m| (unescape(m.location.as_ref()), m.size))
            .collect();
        out.sort();
        Ok(out)
    }

    /// Deletes a file; a missing file is not an error.
    pub fn delete(&self, path: &str) -> Result<()> {
        self.check("delete", true)?;
        match block_on(self.inner.delete(&Path::from(path))) {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(os_err("delete", path, e)),
        }
    }
}

/// A listed key as the path it was put under: the object store writes each byte of
/// its encoded set as `%XX` (a `%` itself as `%25`), so one decoding gives the path back.
/// A key that does not decode to UTF-8 is returned as it is.
fn unescape(key: &str) -> String {
    match percent_encoding::percent_decode_str(key).decode_utf8() {
        Ok(path) => path.into_owned(),
        Err(_) => key.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names with bytes the object store encodes (a model file's mapped name has `%` and
    /// `~`): put durably (the fsync finds the file), listed back as put, read back.
    #[test]
    fn paths_with_encoded_bytes_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let local = FileStore::local(dir.path()).unwrap();
        let names = [
            "models/db.a%2Fb.00000000000000000001.tmdl",
            "models/db.long~00ff.00000000000000000002.tmdl",
            "models/db.plain.00000000000000000003.tmdl",
        ];
        for store in [local, FileStore::memory()] {
            for (i, n) in names.iter().enumerate() {
                store.put(n, Bytes::from(vec![i as u8; 3])).unwrap();
            }
            let listed: Vec<String> = store
                .list("models")
                .unwrap()
                .into_iter()
                .map(|(p, _)| p)
                .collect();
            assert_eq!(listed, names);
            for (i, n) in names.iter().enumerate() {
                assert_eq!(store.get(n).unwrap().as_ref(), [i as u8; 3], "{n}");
                store.delete(n).unwrap();
            }
            assert!(store.list("models").unwrap().is_empty());
        }
    }

    #[test]
    fn unescape_cases() {
        for (key, want) in [
            ("a/b", "a/b"),
            ("m/x%252Fy", "m/x%2Fy"),
            ("m/a%7Eb", "m/a~b"),
            ("trailing%", "trailing%"),
            ("short%2", "short%2"),
            ("not%zzhex", "not%zzhex"),
            ("%C3%A9", "é"),
            ("%FF", "%FF"),
        ] {
            assert_eq!(unescape(key), want, "{key}");
        }
    }
}
