//! The manifest: which databases, tables, regions and files make up the engine's data.
//!
//! A log of edit files plus checkpoints (format: `docs/format/manifest.md`). Each commit writes
//! one edit file `manifest/{version:020}.edit` atomically and durably; that put is the commit
//! point. Every `checkpoint_every` versions the whole state is written to
//! `manifest/{version:020}.ckpt` and older edits and checkpoints are deleted.
//!
//! Invariants:
//! - Recovery loads the newest checkpoint and applies every later edit in version order; a
//!   missing version in the middle, a bad magic, version or checksum is a named error.
//! - A crash leaves either the previous or the new version, never a mix (edits are atomic puts).
//! - Data files are put before the edit that names them, and deleted only after the edit that
//!   drops them; files no version names are orphans, removed by [`Manifest::remove_orphans`].

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use tempora_model::{TableId, TableSchema};

use crate::catalog::models::ModelRecord;
use crate::catalog::settings::{Setting, StorageSettings};
use crate::error::{Result, StorageError};
use crate::files::store::FileStore;
use crate::maintenance::tombstone::Tombstone;

const MAGIC: &[u8; 8] = b"TMPRMAN\0";
const FORMAT_VERSION: u16 = 1;
const HEADER_LEN: usize = 8 + 2 + 4 + 4;
const DIR: &str = "manifest";

/// Region address: table × time partition (a span of time and its bucket count) × series-hash
/// bucket.
///
/// Format version 1 files written before partitions were sized to the data hold the
/// partition's index in `partition` (its start divided by the engine's one width) and no
/// `end` or `buckets`; [`RegionKey::upgrade`] turns them into spans as they are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RegionKey {
    pub table: TableId,
    /// Partition start, ns (inclusive).
    #[serde(alias = "partition")]
    pub start: i64,
    /// Partition end, ns (exclusive).
    #[serde(default)]
    pub end: i64,
    pub bucket: u32,
    /// Buckets of the partition; 0 only in a key read from an older file, before `upgrade`.
    #[serde(default)]
    pub buckets: u32,
}

/// The one partition width and bucket count of data written before partitions were sized to
/// the data: how older manifests and WAL records are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LegacyLayout {
    pub partition_ns: i64,
    pub buckets: u32,
}

impl Default for LegacyLayout {
    fn default() -> Self {
        Self {
            partition_ns: crate::options::DAY_NS,
            buckets: 4,
        }
    }
}

impl RegionKey {
    /// The key of a partition index in the legacy layout.
    pub fn legacy(table: TableId, partition: i64, bucket: u32, l: LegacyLayout) -> RegionKey {
        let start = partition.saturating_mul(l.partition_ns);
        RegionKey {
            table,
            start,
            end: start.saturating_add(l.partition_ns),
            bucket,
            buckets: l.buckets,
        }
    }

    /// Turns a key read from an older file (`buckets == 0`) into its span.
    pub fn upgrade(&mut self, l: LegacyLayout) {
        if self.buckets == 0 {
            *self = RegionKey::legacy(self.table, self.start, self.bucket, l);
        }
    }

    /// The partition's span.
    pub fn span(&self) -> crate::catalog::partitions::Span {
        crate::catalog::partitions::Span {
            start: self.start,
            end: self.end,
            buckets: self.buckets,
        }
    }

    /// Directory of the region's files.
    pub fn dir(&self) -> String {
        format!(
            "data/t{}/p{}_{}/b{}",
            self.table.0, self.start, self.end, self.bucket
        )
    }
    fn name(&self) -> String {
        format!(
            "{}/{}/{}/{}/{}",
            self.table.0, self.start, self.end, self.bucket, self.buckets
        )
    }
}

/// One data file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileMeta {
    pub id: u64,
    pub path: String,
    pub rows: u64,
    pub size: u64,
    pub min_time: i64,
    pub max_time: i64,
    pub max_seq: u64,
    /// Oldest write in the file (0 in files written before it was recorded).
    #[serde(default)]
    pub min_seq: u64,
    /// The newest tombstone already applied to the file's rows (0: none).
    #[serde(default)]
    pub purged_seq: u64,
    /// The file's newest row of each series, written beside it as a data file of its own
    /// (`<id>.last`, Parquet in the data files' format, named so that a `*.parquet` glob over
    /// the data directory sees each row once), from which the last-value cache is filled after a restart
    /// instead of from the whole file. None: not written (few rows per series, or a file
    /// from before it existed); the file itself is read then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_rows: Option<String>,
    /// The file's smallest and largest series key, in hex (None: files written before it was
    /// recorded, taken to hold every key). Compaction keeps files whose key ranges do not
    /// overlap side by side in one window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_range: Option<[String; 2]>,
    /// The rollups of the file's rows, one file per resolution (`<id>.r<resolution_ns>`,
    /// docs/format/rollup-files.md), put before the edit that names them and deleted with
    /// the data file (or when their own retention passes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rollups: Vec<RollupFile>,
    /// The data file was dropped by retention while its rollups outlive it: `path` and
    /// `last_rows` name nothing, and the rows' time range is answered from `rollups` only.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub raw_expired: bool,
    /// CRC-32C of the data file's bytes, checked by `tempora check` (None: files written
    /// before it was recorded; added within format version 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crc32c: Option<u32>,
}

/// One rollup file of a data file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RollupFile {
    pub resolution_ns: i64,
    pub path: String,
    pub rows: u64,
    pub size: u64,
}

impl FileMeta {
    /// Every path the entry names: the data file and its last rows (unless the raw rows
    /// expired), and its rollups.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        let raw = (!self.raw_expired).then_some(self.path.as_str());
        let last = self.last_rows.as_deref().filter(|_| !self.raw_expired);
        let rollups = self.rollups.iter().map(|r| r.path.as_str());
        raw.into_iter().chain(last).chain(rollups)
    }

    /// The key range of a file whose keys run from `min` to `max`.
    pub fn key_range_of(min: &[u8], max: &[u8]) -> Option<[String; 2]> {
        Some([hex::encode(min), hex::encode(max)])
    }

    /// The file's smallest and largest key; `None` when unknown (or not hex: a damaged entry
    /// is taken to hold every key, which is always safe).
    pub fn keys(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        let [min, max] = self.key_range.as_ref()?;
        Some((hex::decode(min).ok()?, hex::decode(max).ok()?))
    }
}

/// One table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableMeta {
    pub id: TableId,
    pub schema: TableSchema,
    /// Retention written by format version 1 before settings existed; read into
    /// `settings.ttl` and no longer written.
    #[serde(default, skip_serializing)]
    pub ttl_ns: Option<i64>,
    /// The table's own retention and partition settings (unset ones inherit).
    #[serde(default)]
    pub settings: StorageSettings,
    /// A dense table's layout (issue 25; added within format version 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dense: Option<crate::dense::DenseSpec>,
}

/// One region's persisted state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegionMeta {
    pub key: RegionKey,
    /// Every write with a sequence number at or below this is in the files.
    pub flushed_seq: u64,
    pub files: BTreeMap<u64, FileMeta>,
    /// The persisted series index of the region, written with its latest flush.
    pub index_path: Option<String>,
    /// Deletes not yet compacted away, oldest first.
    #[serde(default)]
    pub tombstones: Vec<Tombstone>,
}

/// The whole state at one version.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ManifestState {
    pub version: u64,
    pub next_file_id: u64,
    pub next_table_id: u32,
    pub tables: BTreeMap<String, TableMeta>,
    pub regions: BTreeMap<String, RegionMeta>,
    /// The newest sequence number a delete took: the engine's counter starts above it even
    /// after the tombstone is compacted away.
    #[serde(default)]
    pub seq_floor: u64,
    /// Databases created explicitly (a database also exists while it holds a table). Added
    /// within format version 1: an older state reads as none.
    #[serde(default)]
    pub databases: BTreeSet<String>,
    /// Settings of databases that have any (added within format version 1).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub database_settings: BTreeMap<String, StorageSettings>,
    /// Models by name (`db.model`), added within format version 1.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub models: BTreeMap<String, ModelRecord>,
}

/// A change to the state; a commit applies a list of them atomically.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Edit {
    CreateTable {
        name: String,
        id: TableId,
    },
    SetSchema {
        name: String,
        schema: TableSchema,
    },
    /// Retention of a table, as format version 1 wrote it before settings existed.
    SetTtl {
        name: String,
        ttl_ns: Option<i64>,
    },
    /// A table's settings, replacing what it had (added within format version 1).
    SetTableSettings {
        name: String,
        settings: StorageSettings,
    },
    /// A database's settings, replacing what it had; the database counts as created
    /// (added within format version 1).
    SetDatabaseSettings {
        name: String,
        settings: StorageSettings,
    },
    DropTable {
        name: String,
    },
    /// A flush: new files, a new index, and the region's flushed sequence.
    Flush {
        region: RegionKey,
        files: Vec<FileMeta>,
        flushed_seq: u64,
        index_path: Option<String>,
    },
    /// A compaction: files replaced by others.
    Compact {
        region: RegionKey,
        added: Vec<FileMeta>,
        removed: Vec<u64>,
    },
    DropRegion {
        region: RegionKey,
    },
    /// A delete's tombstone in one region.
    AddTombstone {
        region: RegionKey,
        tombstone: Tombstone,
    },
    /// Tombstones every file of the region has been purged of, by sequence number.
    DropTombstones {
        region: RegionKey,
        seqs: Vec<u64>,
    },
    /// A database created explicitly (added within format version 1).
    CreateDatabase {
        name: String,
    },
    /// Removes a database's record only; its tables go by `DropTable` edits in the same
    /// commit (added within format version 1).
    DropDatabase {
        name: String,
    },
    /// A model's record, replacing what it had (added within format version 1).
    PutModel {
        name: String,
        record: ModelRecord,
    },
    /// Removes a model's record (added within format version 1).
    DropModel {
        name: String,
    },
    /// Makes a table dense (committed with its `CreateTable`; added within format version 1).
    SetDense {
        name: String,
        spec: crate::dense::DenseSpec,
    },
}

impl Edit {
    /// Upgrades the region key an older edit names ([`RegionKey::upgrade`]).
    fn upgrade(&mut self, l: LegacyLayout) {
        match self {
            Edit::Flush { region, .. }
            | Edit::Compact { region, .. }
            | Edit::DropRegion { region }
            | Edit::AddTombstone { region, .. }
            | Edit::DropTombstones { region, .. } => region.upgrade(l),
            _ => {}
        }
    }
}

impl ManifestState {
    fn apply(&mut self, e: &Edit) {
        match e {
            Edit::CreateTable { .. }
            | Edit::SetSchema { .. }
            | Edit::SetTtl { .. }
            | Edit::SetTableSettings { .. }
            | Edit::SetDense { .. }
            | Edit::DropTable { .. } => self.apply_table(e),
            Edit::CreateDatabase { name } => {
                self.databases.insert(name.clone());
            }
            Edit::SetDatabaseSettings { name, settings } => {
                self.databases.insert(name.clone());
                self.database_settings.insert(name.clone(), *settings);
            }
            Edit::DropDatabase { name } => {
                self.databases.remove(name);
                self.database_settings.remove(name);
                self.models
                    .retain(|m, _| crate::catalog::names::split(m).is_none_or(|(d, _)| d != name));
            }
            Edit::PutModel { name, record } => {
                self.models.insert(name.clone(), record.clone());
            }
            Edit::DropModel { name } => {
                self.models.remove(name);
            }
            Edit::Flush { .. }
            | Edit::Compact { .. }
            | Edit::DropRegion { .. }
            | Edit::AddTombstone { .. }
            | Edit::DropTombstones { .. } => self.apply_region(e),
        }
    }

    /// Applies an edit of a table's entry.
    fn apply_table(&mut self, e: &Edit) {
        match e {
            Edit::CreateTable { name, id } => {
                self.next_table_id = self.next_table_id.max(id.0 + 1);
                self.tables.insert(
                    name.clone(),
                    TableMeta {
                        id: *id,
                        schema: TableSchema::new(name),
                        ttl_ns: None,
                        settings: StorageSettings::default(),
                        dense: None,
                    },
                );
            }
            Edit::SetSchema { name, schema } => {
                if let Some(t) = self.tables.get_mut(name) {
                    t.schema = schema.clone();
                    t.schema.reindex();
                }
            }
            Edit::SetTtl { name, ttl_ns } => {
                if let Some(t) = self.tables.get_mut(name) {
                    t.settings.ttl = Some(ttl_ns.map_or(Setting::Unbounded, Setting::Ns));
                }
            }
            Edit::SetTableSettings { name, settings } => {
                if let Some(t) = self.tables.get_mut(name) {
                    t.settings = *settings;
                }
            }
            Edit::SetDense { name, spec } => {
                if let Some(t) = self.tables.get_mut(name) {
                    t.dense = Some(spec.clone());
                }
            }
            Edit::DropTable { name } => {
                if let Some(t) = self.tables.remove(name) {
                    self.regions.retain(|_, r| r.key.table != t.id);
                }
            }
            _ => unreachable!("not a table edit"),
        }
    }

    /// Applies an edit of a region's entry.
    fn apply_region(&mut self, e: &Edit) {
        match e {
            Edit::Flush {
                region,
                files,
                flushed_seq,
                index_path,
            } => {
                let r = self.region_mut(*region);
                r.flushed_seq = r.flushed_seq.max(*flushed_seq);
                for f in files {
                    r.files.insert(f.id, f.clone());
                }
                if index_path.is_some() {
                    r.index_path = index_path.clone();
                }
                self.bump_file_ids(files);
            }
            Edit::Compact {
                region,
                added,
                removed,
            } => {
                let r = self.region_mut(*region);
                for id in removed {
                    r.files.remove(id);
                }
                for f in added {
                    r.files.insert(f.id, f.clone());
                }
                self.bump_file_ids(added);
            }
            Edit::DropRegion { region } => {
                self.regions.remove(&region.name());
            }
            Edit::AddTombstone { region, tombstone } => {
                self.seq_floor = self.seq_floor.max(tombstone.seq);
                self.region_mut(*region).tombstones.push(tombstone.clone());
            }
            Edit::DropTombstones { region, seqs } => {
                if let Some(r) = self.regions.get_mut(&region.name()) {
                    r.tombstones.retain(|t| !seqs.contains(&t.seq));
                }
            }
            _ => unreachable!("not a region edit"),
        }
    }

    /// Reads what format version 1 wrote before partitions were sized to the data and
    /// settings existed: region keys become spans, a table's `ttl_ns` its ttl setting.
    fn upgrade(&mut self, l: LegacyLayout) {
        let regions = std::mem::take(&mut self.regions);
        for (_, mut r) in regions {
            r.key.upgrade(l);
            self.regions.insert(r.key.name(), r);
        }
        for t in self.tables.values_mut() {
            if let Some(ttl) = t.ttl_ns.take()
                && t.settings.ttl.is_none()
            {
                t.settings.ttl = Some(Setting::Ns(ttl));
            }
        }
    }

    fn bump_file_ids(&mut self, files: &[FileMeta]) {
        for f in files {
            self.next_file_id = self.next_file_id.max(f.id + 1);
        }
    }

    fn region_mut(&mut self, key: RegionKey) -> &mut RegionMeta {
        self.regions
            .entry(key.name())
            .or_insert_with(|| RegionMeta {
                key,
                flushed_seq: 0,
                files: BTreeMap::new(),
                index_path: None,
                tombstones: Vec::new(),
            })
    }

    pub fn region(&self, key: &RegionKey) -> Option<&RegionMeta> {
        self.regions.get(&key.name())
    }

    /// Every file path the state names.
    pub fn live_paths(&self) -> BTreeSet<String> {
        let mut s = BTreeSet::new();
        for r in self.regions.values() {
            for f in r.files.values() {
                s.extend(f.paths().map(str::to_string));
            }
            s.extend(r.index_path.clone());
        }
        s
    }
}

fn frame(body: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(HEADER_LEN + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&(body.len() as u32).to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(body).to_le_bytes());
    out.extend_from_slice(body);
    Bytes::from(out)
}

fn unframe<'a>(path: &str, data: &'a [u8]) -> Result<&'a [u8]> {
    let bad = |reason: String| StorageError::CorruptManifest {
        path: path.to_string(),
        reason,
    };
    if data.len() < HEADER_LEN {
        return Err(bad(format!(
            "{} bytes is shorter than the header",
            data.len()
        )));
    }
    if &data[..8] != MAGIC {
        return Err(bad("bad magic number".into()));
    }
    let version = u16::from_le_bytes([data[8], data[9]]);
    if version != FORMAT_VERSION {
        return Err(bad(format!("unsupported format version {version}")));
    }
    let len = u32::from_le_bytes(data[10..14].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_le_bytes(data[14..18].try_into().expect("4 bytes"));
    let body = &data[HEADER_LEN..];
    if body.len() != len {
        return Err(bad(format!(
            "body is {} bytes, header says {len}",
            body.len()
        )));
    }
    if crc32c::crc32c(body) != crc {
        return Err(bad("checksum mismatch".into()));
    }
    Ok(body)
}

fn decode<T: for<'de> Deserialize<'de>>(path: &str, data: &[u8]) -> Result<T> {
    serde_json::from_slice(unframe(path, data)?).map_err(|e| StorageError::CorruptManifest {
        path: path.to_string(),
        reason: format!("bad body: {e}"),
    })
}

/// The manifest of one engine.
pub struct Manifest {
    store: FileStore,
    state: ManifestState,
    checkpoint_every: u64,
    last_checkpoint: u64,
}

fn edit_path(v: u64) -> String {
    format!("{DIR}/{v:020}.edit")
}
fn ckpt_path(v: u64) -> String {
    format!("{DIR}/{v:020}.ckpt")
}

fn parse_version(path: &str, ext: &str) -> Option<u64> {
    path.strip_prefix(DIR)?
        .strip_prefix('/')?
        .strip_suffix(ext)?
        .parse()
        .ok()
}

impl Manifest {
    /// Recovers the newest complete version (older files read in the default legacy layout).
    pub fn open(store: FileStore, checkpoint_every: u64) -> Result<Manifest> {
        Self::open_with(store, checkpoint_every, LegacyLayout::default())
    }

    /// Recovers the newest complete version; keys written before partitions were sized to
    /// the data are read in layout `legacy`.
    pub fn open_with(
        store: FileStore,
        checkpoint_every: u64,
        legacy: LegacyLayout,
    ) -> Result<Manifest> {
        assert!(checkpoint_every >= 1);
        let files = store.list(DIR)?;
        let ckpt = files
            .iter()
            .filter_map(|(p, _)| parse_version(p, ".ckpt"))
            .max();
        let mut state = match ckpt {
            Some(v) => decode::<ManifestState>(&ckpt_path(v), &store.get(&ckpt_path(v))?)?,
            None => ManifestState::default(),
        };
        state.upgrade(legacy);
        for t in state.tables.values_mut() {
            t.schema.reindex();
        }
        let base = state.version;
        let mut edits: Vec<u64> = files
            .iter()
            .filter_map(|(p, _)| parse_version(p, ".edit"))
            .filter(|&v| v > base)
            .collect();
        edits.sort_unstable();
        for (i, v) in edits.iter().enumerate() {
            if *v != base + 1 + i as u64 {
                return Err(StorageError::CorruptManifest {
                    path: edit_path(base + 1 + i as u64),
                    reason: format!("edit missing before version {v}"),
                });
            }
            let path = edit_path(*v);
            let mut list: Vec<Edit> = decode(&path, &store.get(&path)?)?;
            for e in &mut list {
                e.upgrade(legacy);
                state.apply(e);
            }
            state.version = *v;
        }
        Ok(Manifest {
            store,
            last_checkpoint: base,
            state,
            checkpoint_every,
        })
    }

    pub fn state(&self) -> &ManifestState {
        &self.state
    }

    /// Allocates a file id (persisted by the edit that adds the file).
    pub fn next_file_id(&mut self) -> u64 {
        let id = self.state.next_file_id;
        self.state.next_file_id += 1;
        id
    }

    /// Commits edits atomically. On error the in-memory state is unchanged.
    pub fn commit(&mut self, edits: Vec<Edit>) -> Result<()> {
        let v = self.state.version + 1;
        let body = serde_json::to_vec(&edits).expect("edits serialise");
        self.store.put(&edit_path(v), frame(&body))?;
        for e in &edits {
            self.state.apply(e);
        }
        self.state.version = v;
        if v - self.last_checkpoint >= self.checkpoint_every
            && let Err(e) = self.checkpoint()
        {
            tracing::warn!(error = %e, "manifest checkpoint failed; edits are kept");
        }
        Ok(())
    }

    /// Writes the whole state and removes what it supersedes.
    pub fn checkpoint(&mut self) -> Result<()> {
        let v = self.state.version;
        let body = serde_json::to_vec(&self.state).expect("state serialises");
        self.store.put(&ckpt_path(v), frame(&body))?;
        self.last_checkpoint = v;
        for (p, _) in self.store.list(DIR)? {
            let old_edit = parse_version(&p, ".edit").is_some_and(|x| x <= v);
            let old_ckpt = parse_version(&p, ".ckpt").is_some_and(|x| x < v);
            if old_edit || old_ckpt {
                self.store.delete(&p)?;
            }
        }
        Ok(())
    }

    /// Deletes files under `data/` that no version names (left by a crash mid-flush or
    /// mid-compaction). Call only while nothing writes data files.
    pub fn remove_orphans(&self) -> Result<usize> {
        let live = self.state.live_paths();
        let mut removed = 0;
        for (p, _) in self.store.list("data")? {
            if !live.contains(&p) {
                tracing::info!(path = %p, "removing orphan file");
                self.store.delete(&p)?;
                removed += 1;
            }
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests;

/// Entry points for the fuzz targets (`fuzz/`).
#[doc(hidden)]
pub mod fuzzing {
    /// Decodes `data` as an edit file and as a checkpoint, as opening the manifest does.
    pub fn decode_both(data: &[u8]) {
        let _ = super::decode::<Vec<super::Edit>>("fuzz.edit", data);
        let _ = super::decode::<super::ManifestState>("fuzz.ckpt", data);
    }

    /// A valid framed edit list and checkpoint (of an empty engine): seeds for the fuzzers.
    pub fn samples() -> Vec<Vec<u8>> {
        let edits: Vec<super::Edit> = Vec::new();
        let state = super::ManifestState::default();
        vec![
            super::frame(&serde_json::to_vec(&edits).expect("edits serialize")).to_vec(),
            super::frame(&serde_json::to_vec(&state).expect("state serializes")).to_vec(),
        ]
    }
}
