//! A dense table on local disk: a directory per series, a sparse block file per series and
//! block, and the open files kept within a limit.
//!
//! ```text
//! {root}/{table id}/{series}/key            the series key (memcomparable tags)
//! {root}/{table id}/{series}/{block}.tdns   block files (docs/format/dense-files.md)
//! {root}/{table id}.wal/                    the table's write-ahead log (super::log)
//! ```
//!
//! `{series}` is the key's 64-bit hash in hex (the next free value when two keys collide, so
//! the `key` file decides); `{block}` is the block start with its sign bit flipped, in hex, so
//! names sort by time.
//!
//! Invariants:
//! - Writes here are applied only after their log record is committed; directories whose
//!   entries changed since the last [`DenseTable::sync_dirs`] are listed until it runs, and a
//!   checkpoint syncs them (and the files written) before it truncates the log.
//! - At most `max_open` block files are open across every dense table of the engine; an
//!   evicted file is reopened on next use.

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
    /// Unique in the engine: names the series' open files in the shared cache.
    uid: u64,
    dir: PathBuf,
    /// Blocks with a (hot) block file.
    blocks: RwLock<BTreeSet<i64>>,
    /// Blocks converted to cold files ([`super::cold`]).
    cold: RwLock<BTreeSet<i64>>,
}

impl DenseSeries {
    /// Block starts that have a file (hot or cold), oldest first.
    pub fn blocks(&self) -> Vec<i64> {
        let mut v: Vec<i64> = self.blocks.read().iter().copied().collect();
        v.extend(self.cold.read().iter().copied());
        v.sort_unstable();
        v
    }

    /// Block starts with a file (hot or cold) overlapping `[from, to)`, for blocks of
    /// `block_ns`.
    pub fn blocks_in(&self, from: i64, to: i64, block_ns: i64) -> Vec<i64> {
        let lo = block_start(from, block_ns);
        let mut v: Vec<i64> = self.blocks.read().range(lo..to).copied().collect();
        v.extend(self.cold.read().range(lo..to).copied());
        v.sort_unstable();
        v
    }

    /// How many blocks have a file (hot or cold).
    pub fn block_count(&self) -> usize {
        self.blocks.read().len() + self.cold.read().len()
    }

    /// Whether `block` was converted to a cold file.
    pub fn is_cold(&self, block: i64) -> bool {
        self.cold.read().contains(&block)
    }

    pub(crate) fn set_cold(&self, block: i64) {
        self.cold.write().insert(block);
    }

    pub(crate) fn unset_cold(&self, block: i64) {
        self.cold.write().remove(&block);
    }

    fn path(&self, block: i64) -> PathBuf {
        self.dir.join(block_name(block, BLOCK_EXT))
    }

    /// The cold file of `block`.
    pub(crate) fn cold_path(&self, block: i64) -> PathBuf {
        self.dir.join(block_name(block, COLD_EXT))
    }
}

const COLD_EXT: &str = "parquet";

fn block_name(block: i64, ext: &str) -> String {
    format!("{:016x}.{ext}", (block as u64) ^ (1 << 63))
}

fn parse_block_name(name: &str, ext: &str) -> Option<i64> {
    let hex = name.strip_suffix(&format!(".{ext}"))?;
    let v = u64::from_str_radix(hex, 16).ok()?;
    Some((v ^ (1 << 63)) as i64)
}

/// The hot and cold blocks in a series directory. A block with both files was being
/// converted: the cold file is complete (renamed only once synced), so the hot one goes; an
/// unfinished cold file (`.parquet.tmp`) goes too.
fn list_series(sdir: &Path) -> Result<(BTreeSet<i64>, BTreeSet<i64>)> {
    let io = |e| io_err("list dense series", sdir.display().to_string(), e);
    let (mut hot, mut cold) = (BTreeSet::new(), BTreeSet::new());
    for b in std::fs::read_dir(sdir).map_err(io)? {
        let name = b.map_err(io)?.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(start) = parse_block_name(name, BLOCK_EXT) {
            hot.insert(start);
        } else if let Some(start) = parse_block_name(name, COLD_EXT) {
            cold.insert(start);
        } else if name.ends_with(".parquet.tmp") {
            let _ = std::fs::remove_file(sdir.join(name));
        }
    }
    for b in hot.intersection(&cold).copied().collect::<Vec<_>>() {
        let p = sdir.join(block_name(b, BLOCK_EXT));
        std::fs::remove_file(&p)
            .map_err(|e| io_err("remove converted block", p.display().to_string(), e))?;
        hot.remove(&b);
    }
    Ok((hot, cold))
}

/// Open block files by (series uid, block start), the oldest opened evicted first.
struct OpenFiles {
    map: HashMap<(u64, i64), Arc<BlockFile>>,
    order: VecDeque<(u64, i64)>,
}

/// What the dense tables of an engine share: where they live, the open block files (one
/// limit for all of them) and how they log.
pub struct DenseShared {
    pub root: PathBuf,
    open: Mutex<OpenFiles>,
    next_uid: std::sync::atomic::AtomicU64,
    pub max_open: usize,
    pub log: super::log::LogConfig,
}

/// Half the process's descriptor limit: what the dense tables may keep open.
fn descriptor_budget() -> usize {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given.
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) } == 0;
    match ok {
        true => (r.rlim_cur / 2).max(16) as usize,
        false => 512,
    }
}

impl DenseShared {
    /// `max_open` is clamped to half the process's descriptor limit.
    pub fn new(root: PathBuf, max_open: usize, log: super::log::LogConfig) -> DenseShared {
        let max_open = max_open.min(descriptor_budget());
        DenseShared {
            root,
            open: Mutex::new(OpenFiles {
                map: HashMap::new(),
                order: VecDeque::new(),
            }),
            next_uid: std::sync::atomic::AtomicU64::new(0),
            max_open: max_open.max(1),
            log,
        }
    }

    fn uid(&self) -> u64 {
        self.next_uid
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    }
}

/// A dense table's files.
pub struct DenseTable {
    pub spec: DenseSpec,
    pub table_id: tempora_model::TableId,
    dir: PathBuf,
    series: RwLock<BTreeMap<Bytes, Arc<DenseSeries>>>,
    shared: Arc<DenseShared>,
    /// Directories whose entries changed since the last sync.
    new_entries: Mutex<BTreeSet<PathBuf>>,
    /// The write path: log, write-behind buffer, files to sync ([`super::log`]).
    pub(crate) log: Mutex<super::log::LogState>,
    /// Points before this are in cold (read-only) files: the newest converted block's end.
    cold_before: std::sync::atomic::AtomicI64,
}

impl std::fmt::Debug for DenseTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DenseTable")
            .field("dir", &self.dir)
            .finish()
    }
}

impl DenseTable {
    /// Opens (creating) table `table_id`'s directory, lists its series and blocks and replays
    /// its log; returns the table and the newest sequence number the log held.
    pub fn open(
        shared: &Arc<DenseShared>,
        table_id: tempora_model::TableId,
        spec: DenseSpec,
    ) -> Result<(Arc<DenseTable>, Option<tempora_model::SeqNo>)> {
        let dir = shared.root.join(table_id.0.to_string());
        let dir = dir.as_path();
        let io = |what, e| io_err(what, dir.display().to_string(), e);
        std::fs::create_dir_all(dir).map_err(|e| io("create dense table directory", e))?;
        let mut series = BTreeMap::new();
        let mut cold_before = i64::MIN;
        for entry in std::fs::read_dir(dir).map_err(|e| io("list dense table", e))? {
            let entry = entry.map_err(|e| io("list dense table", e))?;
            let sdir = entry.path();
            let Ok(key) = std::fs::read(sdir.join(KEY_FILE)) else {
                tracing::warn!(dir = %sdir.display(), "dense series directory without a key; ignored");
                continue;
            };
            let (blocks, cold) = list_series(&sdir)?;
            if let Some(&newest) = cold.iter().next_back() {
                cold_before = cold_before.max(newest.saturating_add(spec.block_ns));
            }
            let key = Bytes::from(key);
            let s = DenseSeries {
                key: key.clone(),
                uid: shared.uid(),
                dir: sdir,
                blocks: RwLock::new(blocks),
                cold: RwLock::new(cold),
            };
            series.insert(key, Arc::new(s));
        }
        let log = super::log::LogState::open(dir, shared.log.clone())?;
        let t = Arc::new(DenseTable {
            spec,
            table_id,
            dir: dir.to_path_buf(),
            series: RwLock::new(series),
            shared: shared.clone(),
            new_entries: Mutex::new(BTreeSet::new()),
            log: Mutex::new(log),
            cold_before: std::sync::atomic::AtomicI64::new(cold_before),
        });
        let last = t.replay_log()?;
        Ok((t, last))
    }

    /// Most block files the engine's dense tables keep open.
    pub fn max_open(&self) -> usize {
        self.shared.max_open
    }

    /// The table's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Points before this time are in cold files, read-only (`i64::MIN`: none).
    pub fn cold_before(&self) -> i64 {
        self.cold_before.load(std::sync::atomic::Ordering::SeqCst)
    }

    pub(crate) fn raise_cold_watermark(&self, t: i64) {
        self.cold_before
            .fetch_max(t, std::sync::atomic::Ordering::SeqCst);
    }

    /// Removes the cold file of `series` at `block`.
    pub(crate) fn remove_cold(&self, s: &DenseSeries, block: i64) -> Result<()> {
        let path = s.cold_path(block);
        s.unset_cold(block);
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(io_err(
                    "remove cold dense block",
                    path.display().to_string(),
                    e,
                ));
            }
        }
        self.new_entries.lock().insert(s.dir.clone());
        Ok(())
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
            uid: self.shared.uid(),
            dir: sdir,
            blocks: RwLock::new(BTreeSet::new()),
            cold: RwLock::new(BTreeSet::new()),
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
        let id = (s.uid, block);
        if let Some(f) = self.shared.open.lock().map.get(&id) {
            return Ok(Some(f.clone()));
        }
        let path = s.path(block);
        let exists = s.blocks.read().contains(&block);
        let f = if exists {
            match BlockFile::open(&path) {
                Ok(f) => f,
                // Made just before a crash, its header never reached the disk: nothing was
                // written to it that the log does not hold, so it is made again.
                Err(e) if create && never_written(&path) => {
                    tracing::warn!(error = %e, "recreating a dense block whose header was lost");
                    let _ = std::fs::remove_file(&path);
                    BlockFile::create(&path, self.spec.header(block))?
                }
                Err(e) => return Err(e),
            }
        } else if create {
            let f = BlockFile::create(&path, self.spec.header(block))?;
            s.blocks.write().insert(block);
            self.new_entries.lock().insert(s.dir.clone());
            f
        } else {
            return Ok(None);
        };
        let f = Arc::new(f);
        let mut open = self.shared.open.lock();
        if let Some(existing) = open.map.get(&id) {
            return Ok(Some(existing.clone()));
        }
        while open.map.len() >= self.shared.max_open {
            let Some(old) = open.order.pop_front() else {
                break;
            };
            open.map.remove(&old);
        }
        open.map.insert(id, f.clone());
        open.order.push_back(id);
        Ok(Some(f))
    }

    /// Removes the block file of `series` at `block` (a delete covering the whole block, or
    /// retention).
    pub fn remove_block(&self, s: &DenseSeries, block: i64) -> Result<()> {
        let path = s.path(block);
        {
            let mut open = self.shared.open.lock();
            open.map.remove(&(s.uid, block));
            open.order.retain(|p| *p != (s.uid, block));
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

    /// Forgets the directories whose entries changed (when nothing is synced).
    pub(crate) fn forget_new_entries(&self) {
        self.new_entries.lock().clear();
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
        // Buffered writes first, so none of them recreates a block removed here.
        self.flush_pending()?;
        let mut n = 0;
        let all: Vec<_> = self.series.read().values().cloned().collect();
        for s in all {
            for b in s.blocks() {
                if b.saturating_add(self.spec.block_ns) <= cutoff {
                    match s.is_cold(b) {
                        true => self.remove_cold(&s, b)?,
                        false => self.remove_block(&s, b)?,
                    }
                    n += 1;
                }
            }
        }
        Ok(n)
    }

    /// Removes the table's whole directory (after the table was dropped).
    pub fn remove_all(&self) -> Result<()> {
        self.shared.open.lock().map.clear();
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

/// Whether the file at `path` has an all-zero header (created, never synced).
fn never_written(path: &Path) -> bool {
    use std::os::unix::fs::FileExt;
    let mut buf = [0u8; super::layout::HEADER_LEN];
    std::fs::File::open(path)
        .and_then(|f| f.read_at(&mut buf, 0))
        .is_ok_and(|_| buf.iter().all(|b| *b == 0))
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
