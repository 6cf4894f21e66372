//! The catalog: what exists (databases, tables, and each table's regions) and the manifest
//! that records it durably.
//!
//! `Catalog` is the one handle to that state: the databases and tables by name, the manifest
//! (the commit point of every change to what exists, and of every flush, compaction and
//! delete), and the write sequence counter. A `Table` holds its schema and its regions; a
//! `Region` holds one time partition × series-hash bucket of a table: memtable, files,
//! tombstones, series index and last-value cache.
//!
//! Naming ([`names`], public): table `t` of database `db` is the engine table `db.t`. A
//! database exists when it was created (a `CreateDatabase` edit) or while it holds a table.
//!
//! Invariants:
//! - A change to the set of databases or tables is committed in the manifest before it is
//!   visible in memory; a failed commit changes nothing in memory. Each change is one commit:
//!   a declared table's `CreateTable` and `SetSchema` together, a dropped database's
//!   `DropTable`s and `DropDatabase` together, so a crash leaves all of it or none.
//! - Lock order: the tables map, then the databases set, then the manifest. Nothing that
//!   holds the manifest takes either.
//! - `max_tables` and `max_databases` bound what exists; a database that a write creates
//!   implicitly (with its first table) counts too.
//! - Sequence numbers only grow. At start they continue above every sequence the manifest
//!   names (files, tombstones, `seq_floor`) and every record replayed from the WAL.

mod databases;
pub mod models;
pub mod names;
pub mod partitions;
pub(crate) mod region;
pub mod rollups;
pub mod settings;
pub(crate) mod table;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::{Mutex, MutexGuard, RwLock};
use tempora_model::{SeqNo, TableId, TableSchema};

use crate::error::{Result, StorageError};
use crate::files::manifest::{Edit, Manifest};

pub use names::{qualified, split, user_message, validate_database};
pub(crate) use region::{FileHandle, Region, RegionIo, RegionSnapshot};
pub(crate) use table::{Layout, Table};

use settings::{Defaults, Effective, StorageSettings};

/// Tables and databases by name, the manifest, and the write sequence.
pub(crate) struct Catalog {
    tables: RwLock<HashMap<String, Arc<Table>>>,
    /// Databases created explicitly (those holding tables exist too).
    databases: RwLock<BTreeSet<String>>,
    /// Settings of the databases that have any.
    db_settings: RwLock<HashMap<String, StorageSettings>>,
    /// The server's defaults under every database's settings.
    defaults: Defaults,
    manifest: Mutex<Manifest>,
    seq: AtomicU64,
    max_tables: usize,
    max_databases: usize,
    /// Where dense tables keep their files and what they share (`None`: no local disk, no
    /// dense tables).
    dense: Option<Arc<crate::dense::DenseShared>>,
}

impl Catalog {
    /// A catalog over a recovered manifest, with no table loaded yet ([`Catalog::restore`]).
    pub fn new(
        manifest: Manifest,
        max_tables: usize,
        max_databases: usize,
        defaults: Defaults,
    ) -> Self {
        let db_settings = manifest
            .state()
            .database_settings
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        Self {
            tables: RwLock::new(HashMap::new()),
            databases: RwLock::new(manifest.state().databases.clone()),
            db_settings: RwLock::new(db_settings),
            defaults,
            manifest: Mutex::new(manifest),
            seq: AtomicU64::new(0),
            max_tables,
            max_databases,
            dense: None,
        }
    }

    /// Keeps dense tables as `shared` says.
    pub fn with_dense(mut self, shared: Option<crate::dense::DenseShared>) -> Self {
        self.dense = shared.map(Arc::new);
        self
    }

    /// Removes the dense directories (and logs) of tables that are not dense tables of the
    /// catalog any more (a crash between dropping a table and removing its files); returns
    /// how many.
    pub fn remove_orphan_dense(&self) -> usize {
        let Some(shared) = &self.dense else {
            return 0;
        };
        let live: BTreeSet<String> = self
            .tables
            .read()
            .values()
            .filter(|t| t.dense().is_some())
            .map(|t| t.id.0.to_string())
            .collect();
        let Ok(entries) = std::fs::read_dir(&shared.root) else {
            return 0;
        };
        let mut n = 0;
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let id = name.strip_suffix(".wal").unwrap_or(&name);
            if id.parse::<u32>().is_err() || live.contains(id) {
                continue;
            }
            match std::fs::remove_dir_all(e.path()) {
                Ok(()) => n += 1,
                Err(err) => {
                    tracing::warn!(dir = %e.path().display(), error = %err, "removing an orphan dense directory failed")
                }
            }
        }
        n
    }

    /// Opens the files of dense table `t` laid out by `spec`.
    pub fn open_dense(
        &self,
        t: &Table,
        spec: crate::dense::DenseSpec,
    ) -> Result<Arc<crate::dense::DenseTable>> {
        let Some(shared) = &self.dense else {
            return Err(StorageError::Shared(format!(
                "table {:?} is dense, and dense tables need a data directory on local disk",
                t.name
            )));
        };
        let (table, last) = crate::dense::DenseTable::open(shared, t.id, spec)?;
        if let Some(seq) = last {
            self.observe_seq(seq);
        }
        Ok(table)
    }

    /// The manifest, locked (take the tables map first when both are needed).
    pub fn manifest(&self) -> MutexGuard<'_, Manifest> {
        self.manifest.lock()
    }

    /// Commits `edits` in one manifest version.
    pub fn commit(&self, edits: Vec<Edit>) -> Result<()> {
        self.manifest.lock().commit(edits)
    }

    /// Allocates a data or index file id.
    pub fn next_file_id(&self) -> u64 {
        self.manifest.lock().next_file_id()
    }

    /// Puts the tables the manifest names into the map (start-up only).
    pub fn restore(&self, tables: impl IntoIterator<Item = Arc<Table>>) {
        let mut map = self.tables.write();
        for t in tables {
            map.insert(t.name.clone(), t);
        }
    }

    /// Every table, by name.
    pub fn tables(&self) -> Vec<Arc<Table>> {
        let mut v: Vec<Arc<Table>> = self.tables.read().values().cloned().collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    /// The table called `name`, if any.
    pub fn find(&self, name: &str) -> Option<Arc<Table>> {
        self.tables.read().get(name).cloned()
    }

    /// The table called `name`, or [`StorageError::TableNotFound`].
    pub fn table(&self, name: &str) -> Result<Arc<Table>> {
        self.find(name)
            .ok_or_else(|| StorageError::TableNotFound(name.into()))
    }

    pub fn table_by_id(&self, id: TableId) -> Option<Arc<Table>> {
        self.tables.read().values().find(|t| t.id == id).cloned()
    }

    /// The table, created (durably) on first use.
    pub fn table_or_create(&self, name: &str) -> Result<Arc<Table>> {
        if let Some(t) = self.find(name) {
            return Ok(t);
        }
        let mut tables = self.tables.write();
        if let Some(t) = tables.get(name) {
            return Ok(t.clone());
        }
        if tables.len() >= self.max_tables {
            return Err(StorageError::TooManyTables(self.max_tables));
        }
        self.check_new_database(&tables, name)?;
        let mut manifest = self.manifest.lock();
        let id = TableId(manifest.state().next_table_id);
        manifest.commit(vec![Edit::CreateTable {
            name: name.to_string(),
            id,
        }])?;
        let own = StorageSettings::default();
        let effective = self.effective_for(name, own);
        let t = Arc::new(Table::new(name, id, TableSchema::new(name), own, effective));
        tables.insert(name.to_string(), t.clone());
        Ok(t)
    }

    /// What table `name`'s own settings `own` resolve to under its database's and the
    /// server's.
    pub fn effective_for(&self, name: &str, own: StorageSettings) -> Effective {
        let db = split(name)
            .and_then(|(d, _)| self.db_settings.read().get(d).copied())
            .unwrap_or_default();
        settings::resolve(own, db, self.defaults)
    }

    /// Puts `change` over table `name`'s settings, durably; returns the settings it has now.
    pub fn set_table_settings(
        &self,
        name: &str,
        change: StorageSettings,
    ) -> Result<StorageSettings> {
        let table = self.table(name)?;
        let _tables = self.tables.read();
        let merged = table.settings().merged(change);
        self.commit(vec![Edit::SetTableSettings {
            name: name.to_string(),
            settings: merged,
        }])?;
        table.set_settings(merged, self.effective_for(name, merged));
        Ok(merged)
    }

    /// Drops a table from the manifest, then from the map; returns it, or `None` when there
    /// was none. Its regions are still in memory: the caller releases them.
    pub fn drop_table(&self, name: &str) -> Result<Option<Arc<Table>>> {
        let Some(table) = self.find(name) else {
            return Ok(None);
        };
        self.commit(vec![Edit::DropTable {
            name: name.to_string(),
        }])?;
        self.tables.write().remove(name);
        Ok(Some(table))
    }

    /// Takes the next write sequence number.
    pub fn next_seq(&self) -> SeqNo {
        SeqNo(self.seq.fetch_add(1, Ordering::SeqCst) + 1)
    }

    /// The newest sequence number taken.
    pub fn seq_now(&self) -> u64 {
        self.seq.load(Ordering::SeqCst)
    }

    /// Makes later sequence numbers follow `s` (recovery).
    pub fn observe_seq(&self, s: SeqNo) {
        self.seq.fetch_max(s.0, Ordering::SeqCst);
    }
}
