//! A dense table on local disk: a directory per series, a sparse block file per series and
//! block, and the open files kept within a limit.
//!
//! ```text
//! {root}/{table id}/{series}/key            the series key (memcomparable tags)
//! {root}/{table id}/{series}/{block}.tdns   block files (docs/format/dense-files.md)
//! ```
//!
//! `{series}` is the key's 64-bit hash in hex (the next free value when two keys collide, so
//! the `key` file decides); `{block}` is the block start with its sign bit flipped, in hex, so
//! names sort by time.
//!
//! Invariants:
//! - Writes here are applied only after their WAL record is committed; files and directories
//!   made since the last [`DenseTable::sync_dirs`] are listed until it runs, and the worker
//!   syncs them (and the files it wrote) before it truncates its WAL.
//! - At most `max_open` block files are open; an evicted file is reopened on next use.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::{Mutex, RwLock};
use tempora_index::Matcher;

use super::file::BlockFile;
use super::layout::block_start;
use super::spec::DenseSpec;
use crate::error::{Result, StorageError, io_err};

const KEY_FILE: &str = "key";
const BLOCK_EXT: &str = "tdns";

/// One series of a dense table: its key and the blocks that have a file.
#[derive(Debug)]
pub struct DenseSeries {
    pub key: Bytes,
    dir: PathBuf,
    blocks: RwLock<BTreeSet<i64>>,
}

impl DenseSeries {
    /// Block starts that have a file, oldest first.
    pub fn blocks(&self) -> Vec<i64> {
        self.blocks.read().iter().copied().collect()
    }

    /// Block starts with a file overlapping `[from, to)`, for blocks of `block_ns`.
    pub fn blocks_in(&self, from: i64, to: i64, block_ns: i64) -> Vec<i64> {
        let lo = block_start(from, block_ns);
        self.blocks.read().range(lo..to).copied().collect()
    }

    fn path(&self, block: i64) -> PathBuf {
        self.dir.join(block_name(block))
    }
}

fn block_name(block: i64) -> String {
    format!("{:016x}.{BLOCK_EXT}", (block as u64) ^ (1 << 63))
}

fn parse_block_name(name: &str) -> Option<i64> {
    let hex = name.strip_suffix(&format!(".{BLOCK_EXT}"))?;
    let v = u64::from_str_radix(hex, 16).ok()?;
    Some((v ^ (1 << 63)) as i64)
}

/// Open block files by path, the oldest opened evicted first.
struct OpenFiles {
    map: HashMap<PathBuf, Arc<BlockFile>>,
    order: VecDeque<PathBuf>,
}

/// A dense table's files.
pub struct DenseTable {
    pub spec: DenseSpec,
    dir: PathBuf,
    series: RwLock<BTreeMap<Bytes, Arc<DenseSeries>>>,
    open: Mutex<OpenFiles>,
    max_open: usize,
    /// Directories whose entries changed since the last sync.
    new_entries: Mutex<BTreeSet<PathBuf>>,
}

impl std::fmt::Debug for DenseTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DenseTable")
            .field("dir", &self.dir)
            .finish()
    }
}

impl DenseTable {
    /// Opens (creating) the table's directory and lists its series and blocks.
    pub fn open(dir: &Path, spec: DenseSpec, max_open: usize) -> Result<DenseTable> {
        let io = |what, e| io_err(what, dir.display().to_string(), e);
        std::fs::create_dir_all(dir).map_err(|e| io("create dense table directory", e))?;
        let mut series = BTreeMap::new();
        for entry in std::fs::read_dir(dir).map_err(|e| io("list dense table", e))? {
            let entry = entry.map_err(|e| io("list dense table", e))?;
            let sdir = entry.path();
            let Ok(key) = std::fs::read(sdir.join(KEY_FILE)) else {
                tracing::warn!(dir = %sdir.display(), "dense series directory without a key; ignored");
                continue;
            };
            let mut blocks = BTreeSet::new();
            for b in std::fs::read_dir(&sdir).map_err(|e| io("list dense series", e))? {
                let name = b.map_err(|e| io("list dense series", e))?.file_name();
                if let Some(start) = name.to_str().and_then(parse_block_name) {
                    blocks.insert(start);
                }
            }
            let key = Bytes::from(key);
            let s = DenseSeries {
                key: key.clone(),
                dir: sdir,
                blocks: RwLock::new(blocks),
            };
            series.insert(key, Arc::new(s));
        }
        Ok(DenseTable {
            spec,
            dir: dir.to_path_buf(),
            series: RwLock::new(series),
            open: Mutex::new(OpenFiles {
                map: HashMap::new(),
                order: VecDeque::new(),
            }),
            max_open: max_open.max(1),
            new_entries: Mutex::new(BTreeSet::new()),
        })
    }

    /// The series of `key`, if it was ever written.
    pub fn series(&self, key: &[u8]) -> Option<Arc<DenseSeries>> {
        self.series.read().get(key).cloned()
    }

    /// Every series the matcher selects, sorted by key.
    pub fn select(&self, m: &Matcher) -> Vec<Arc<DenseSeries>> {
        self.series
            .read()
            .values()
            .filter(|s| matches(m, &s.key))
            .cloned()
            .collect()
    }

    /// Number of series.
    pub fn series_count(&self) -> usize {
        self.series.read().len()
    }

    /// The series of `key`, made (directory and key file) on first use.
    pub fn series_or_create(&self, key: &[u8]) -> Result<Arc<DenseSeries>> {
        if let Some(s) = self.series(key) {
            return Ok(s);
        }
        let mut all = self.series.write();
        if let Some(s) = all.get(key) {
            return Ok(s.clone());
        }
        let taken: BTreeSet<&Path> = all.values().map(|s| s.dir.as_path()).collect();
        let mut h = tempora_model::series_hash(key);
        let sdir = loop {
            let d = self.dir.join(format!("{h:016x}"));
            if !taken.contains(d.as_path()) {
                break d;
            }
            h = h.wrapping_add(1);
        };
        let p = sdir.display().to_string();
        std::fs::create_dir_all(&sdir).map_err(|e| io_err("create dense series", p.clone(), e))?;
        let tmp = sdir.join("key.tmp");
        std::fs::write(&tmp, key).map_err(|e| io_err("write dense series key", p.clone(), e))?;
        sync_path(&tmp)?;
        std::fs::rename(&tmp, sdir.join(KEY_FILE))
            .map_err(|e| io_err("write dense series key", p, e))?;
        {
            let mut n = self.new_entries.lock();
            n.insert(sdir.clone());
            n.insert(self.dir.clone());
        }
        let s = Arc::new(DenseSeries {
            key: Bytes::copy_from_slice(key),
            dir: sdir,
            blocks: RwLock::new(BTreeSet::new()),
        });
        all.insert(s.key.clone(), s.clone());
        Ok(s)
    }

    /// The block file of `series` starting at `block`: `None` when it has none and `create`
    /// is false.
    pub fn file(
        &self,
        s: &DenseSeries,
        block: i64,
        create: bool,
    ) -> Result<Option<Arc<BlockFile>>> {
        let path = s.path(block);
        if let Some(f) = self.open.lock().map.get(&path) {
            return Ok(Some(f.clone()));
        }
        let exists = s.blocks.read().contains(&block);
        let f = if exists {
            BlockFile::open(&path)?
        } else if create {
            let f = BlockFile::create(&path, self.spec.header(block))?;
            s.blocks.write().insert(block);
            self.new_entries.lock().insert(s.dir.clone());
            f
        } else {
            return Ok(None);
        };
        let f = Arc::new(f);
        let mut open = self.open.lock();
        if let Some(existing) = open.map.get(&path) {
            return Ok(Some(existing.clone()));
        }
        while open.map.len() >= self.max_open {
            let Some(old) = open.order.pop_front() else {
                break;
            };
            open.map.remove(&old);
        }
        open.map.insert(path.clone(), f.clone());
        open.order.push_back(path);
        Ok(Some(f))
    }

    /// Removes the block file of `series` at `block` (a delete covering the whole block, or
    /// retention).
    pub fn remove_block(&self, s: &DenseSeries, block: i64) -> Result<()> {
        let path = s.path(block);
        {
            let mut open = self.open.lock();
            open.map.remove(&path);
            open.order.retain(|p| *p != path);
        }
        s.blocks.write().remove(&block);
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err("remove dense block", path.display().to_string(), e)),
        }
        self.new_entries.lock().insert(s.dir.clone());
        Ok(())
    }

    /// Makes the directory entries changed since the last call durable.
    pub fn sync_dirs(&self) -> Result<()> {
        let dirs = std::mem::take(&mut *self.new_entries.lock());
        for d in dirs {
            sync_path(&d)?;
        }
        Ok(())
    }

    /// Removes every block of every series that ends at or before `cutoff`; returns how
    /// many files went.
    pub fn drop_blocks_before(&self, cutoff: i64) -> Result<usize> {
        let mut n = 0;
        let all: Vec<_> = self.series.read().values().cloned().collect();
        for s in all {
            for b in s.blocks() {
                if b.saturating_add(self.spec.block_ns) <= cutoff {
                    self.remove_block(&s, b)?;
                    n += 1;
                }
            }
        }
        Ok(n)
    }

    /// Every block start of any series, oldest first.
    pub fn all_blocks(&self, series: &[Arc<DenseSeries>]) -> Vec<i64> {
        let mut out = BTreeSet::new();
        for s in series {
            out.extend(s.blocks.read().iter().copied());
        }
        out.into_iter().collect()
    }

    /// Removes the table's whole directory (after the table was dropped).
    pub fn remove_all(&self) -> Result<()> {
        self.open.lock().map.clear();
        match std::fs::remove_dir_all(&self.dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_err(
                "remove dense table",
                self.dir.display().to_string(),
                e,
            )),
        }
    }
}

/// Whether the series of `key` satisfies `m`.
pub fn matches(m: &Matcher, key: &[u8]) -> bool {
    if matches!(m, Matcher::All) {
        return true;
    }
    let mut tags: Vec<(String, String)> = Vec::new();
    let _ = tempora_model::for_each_tag(key, |k, v| tags.push((k.to_string(), v.to_string())));
    m.matches(&|k: &str| tags.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str()))
}

fn sync_path(p: &Path) -> Result<()> {
    let s = p.display().to_string();
    std::fs::File::open(p)
        .and_then(|f| f.sync_all())
        .map_err(|e| io_err("sync", s, e))
}

impl From<super::layout::LayoutError> for StorageError {
    fn from(e: super::layout::LayoutError) -> Self {
        StorageError::Shared(e.to_string())
    }
}
