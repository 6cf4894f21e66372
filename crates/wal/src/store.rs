//! The storage the log writes to: a flat namespace of append-only files.
//!
//! [`FsLogStore`] is a directory on disk; [`crate::MemLogStore`] models a disk that loses
//! unsynced bytes on a crash; [`crate::FaultLogStore`] injects failures into another store.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// A flat set of named files. Every method is durable when it returns `Ok` unless noted.
pub trait LogStore: Send + Sync + 'static {
    /// Names of all files.
    fn list(&self) -> io::Result<Vec<String>>;
    /// Creates an empty file (replacing any file of that name) whose directory entry is
    /// durable. Its contents are durable only after [`LogFile::sync`].
    fn create(&self, name: &str) -> io::Result<Box<dyn LogFile>>;
    /// Opens an existing file for appending at its end.
    fn open_append(&self, name: &str) -> io::Result<Box<dyn LogFile>>;
    /// Reads a whole file.
    fn read(&self, name: &str) -> io::Result<Vec<u8>>;
    /// Cuts a file to `len` bytes, durably. Handles opened before must not be used afterwards.
    fn truncate(&self, name: &str, len: u64) -> io::Result<()>;
    /// Removes a file, durably. Removing a missing file is an error of kind `NotFound`.
    fn remove(&self, name: &str) -> io::Result<()>;
}

/// An open file that only grows.
pub trait LogFile: Send {
    /// Appends all of `buf`. On error an unknown prefix of `buf` may have been written.
    fn append(&mut self, buf: &[u8]) -> io::Result<()>;
    /// Makes everything appended so far durable.
    fn sync(&mut self) -> io::Result<()>;
    /// Current length in bytes, including unsynced appends.
    fn len(&self) -> u64;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A directory of log files.
#[derive(Debug, Clone)]
pub struct FsLogStore {
    dir: PathBuf,
}

impl FsLogStore {
    /// Uses `dir`, creating it if needed.
    pub fn new(dir: impl Into<PathBuf>) -> io::Result<FsLogStore> {
        let dir = dir.into();
        fs::create_dir_all(&dir)?;
        Ok(FsLogStore { dir })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, name: &str) -> io::Result<PathBuf> {
        let plain =
            !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0']);
        if !plain {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("bad log file name {name:?}"),
            ));
        }
        Ok(self.dir.join(name))
    }

    fn sync_dir(&self) -> io::Result<()> {
        File::open(&self.dir)?.sync_all()
    }
}

impl LogStore for FsLogStore {
    fn list(&self) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(&self.dir)? {
            let entry = entry?;
            if !entry.file_type()?.is_file() {
                continue;
            }
            if let Ok(name) = entry.file_name().into_string() {
                names.push(name);
            }
        }
        Ok(names)
    }

    fn create(&self, name: &str) -> io::Result<Box<dyn LogFile>> {
        let path = self.path(name)?;
        File::create(&path)?;
        self.sync_dir()?;
        self.open_append(name)
    }

    fn open_append(&self, name: &str) -> io::Result<Box<dyn LogFile>> {
        let file = OpenOptions::new().append(true).open(self.path(name)?)?;
        let len = file.metadata()?.len();
        Ok(Box::new(FsLogFile { file, len }))
    }

    fn read(&self, name: &str) -> io::Result<Vec<u8>> {
        fs::read(self.path(name)?)
    }

    fn truncate(&self, name: &str, len: u64) -> io::Result<()> {
        let file = OpenOptions::new().write(true).open(self.path(name)?)?;
        file.set_len(len)?;
        file.sync_all()
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        fs::remove_file(self.path(name)?)?;
        self.sync_dir()
    }
}

struct FsLogFile {
    file: File,
    len: u64,
}

impl LogFile for FsLogFile {
    fn append(&mut self, buf: &[u8]) -> io::Result<()> {
        match self.file.write_all(buf) {
            Ok(()) => {
                self.len += buf.len() as u64;
                Ok(())
            }
            Err(e) => {
                // Some prefix may have landed; re-read the real length.
                if let Ok(m) = self.file.metadata() {
                    self.len = m.len();
                }
                Err(e)
            }
        }
    }

    fn sync(&mut self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn len(&self) -> u64 {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fs_store_basics() {
        let dir = tempfile::tempdir().unwrap();
        let s = FsLogStore::new(dir.path().join("wal")).unwrap();
        let mut f = s.create("a.wal").unwrap();
        f.append(b"hello").unwrap();
        f.sync().unwrap();
        assert_eq!(f.len(), 5);
        drop(f);
        let mut f = s.open_append("a.wal").unwrap();
        assert_eq!(f.len(), 5);
        f.append(b" world").unwrap();
        assert_eq!(s.read("a.wal").unwrap(), b"hello world");
        s.truncate("a.wal", 3).unwrap();
        assert_eq!(s.read("a.wal").unwrap(), b"hel");
        assert_eq!(s.list().unwrap(), vec!["a.wal".to_string()]);
        s.remove("a.wal").unwrap();
        assert!(s.list().unwrap().is_empty());
        assert_eq!(
            s.remove("a.wal").unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
        for bad in ["", "..", "a/b", "."] {
            assert!(s.create(bad).is_err(), "{bad:?}");
        }
    }
}
