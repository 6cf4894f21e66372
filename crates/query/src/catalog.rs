//! Databases as DataFusion catalogs, their tables as providers over the engine.
//!
//! The set of databases is the union of those created explicitly (kept in a small JSON file,
//! `databases.json`, so an empty database survives a restart) and those that hold tables.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{CatalogProvider, CatalogProviderList, SchemaProvider, TableProvider};
use datafusion::error::{DataFusionError, Result as DfResult};
use parking_lot::RwLock;
use tempora_storage::Engine;

use crate::error::{QueryError, Result};
use crate::table::TemporaTable;
use crate::{SCHEMA, engine_table, split_engine_table, validate_database};

/// The databases of one engine.
pub struct Databases {
    engine: Arc<Engine>,
    created: RwLock<BTreeSet<String>>,
    file: Option<PathBuf>,
}

impl Databases {
    /// Loads the created databases from `file` (if given and present).
    pub fn open(engine: Arc<Engine>, file: Option<PathBuf>) -> Result<Self> {
        let created = match &file {
            Some(f) if f.exists() => {
                let text = std::fs::read_to_string(f)
                    .map_err(|e| QueryError::Sql(format!("reading {}: {e}", f.display())))?;
                serde_json_lite::parse_names(&text)
                    .map_err(|e| QueryError::Sql(format!("{} is damaged: {e}", f.display())))?
            }
            _ => BTreeSet::new(),
        };
        Ok(Self {
            engine,
            created: RwLock::new(created),
            file,
        })
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// Every database, sorted.
    pub fn list(&self) -> Vec<String> {
        let mut all = self.created.read().clone();
        for t in self.engine.tables() {
            if let Some((db, _)) = split_engine_table(&t) {
                all.insert(db.to_string());
            }
        }
        all.into_iter().collect()
    }

    pub fn exists(&self, db: &str) -> bool {
        self.created.read().contains(db) || !self.tables(db).is_empty()
    }

    /// Table names (without the database) of `db`, sorted.
    pub fn tables(&self, db: &str) -> Vec<String> {
        let mut v: Vec<String> = self
            .engine
            .tables()
            .iter()
            .filter_map(|t| split_engine_table(t))
            .filter(|(d, _)| *d == db)
            .map(|(_, t)| t.to_string())
            .collect();
        v.sort();
        v
    }

    /// Creates a database (idempotent, as InfluxDB's `CREATE DATABASE` is).
    pub fn create(&self, db: &str) -> Result<()> {
        validate_database(db)?;
        let mut created = self.created.write();
        if created.insert(db.to_string()) {
            self.save(&created)?;
        }
        Ok(())
    }

    /// Drops a database and every table in it; returns whether it existed.
    pub fn drop_database(&self, db: &str) -> Result<bool> {
        let existed = self.exists(db);
        for t in self.tables(db) {
            self.engine.drop_table(&engine_table(db, &t))?;
        }
        let mut created = self.created.write();
        if created.remove(db) {
            self.save(&created)?;
        }
        Ok(existed)
    }

    fn save(&self, names: &BTreeSet<String>) -> Result<()> {
        let Some(f) = &self.file else { return Ok(()) };
        let tmp = f.with_extension("json.tmp");
        let io = |e: std::io::Error| QueryError::Sql(format!("writing {}: {e}", f.display()));
        std::fs::write(&tmp, serde_json_lite::names_to_json(names)).map_err(io)?;
        std::fs::File::open(&tmp)
            .and_then(|h| h.sync_all())
            .map_err(io)?;
        std::fs::rename(&tmp, f).map_err(io)?;
        Ok(())
    }
}

/// A tiny JSON array-of-strings codec, so this crate needs no JSON dependency.
mod serde_json_lite {
    use std::collections::BTreeSet;

    pub fn names_to_json(names: &BTreeSet<String>) -> String {
        let quoted: Vec<String> = names.iter().map(|n| format!("{n:?}")).collect();
        format!("[{}]\n", quoted.join(","))
    }

    /// Parses what `names_to_json` writes (names are validated, so they hold no quotes or
    /// backslashes that `{:?}` would escape).
    pub fn parse_names(text: &str) -> Result<BTreeSet<String>, String> {
        let inner = text
            .trim()
            .strip_prefix('[')
            .and_then(|t| t.strip_suffix(']'))
            .ok_or("expected a JSON array")?;
        inner
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| {
                s.strip_prefix('"')
                    .and_then(|s| s.strip_suffix('"'))
                    .map(str::to_string)
                    .ok_or_else(|| format!("expected a string, found {s}"))
            })
            .collect()
    }
}

/// Every database as a catalog.
#[derive(Clone)]
pub struct TemporaCatalogList {
    pub dbs: Arc<Databases>,
    /// Catalogs registered by others (none by default).
    extra: Arc<RwLock<std::collections::HashMap<String, Arc<dyn CatalogProvider>>>>,
    /// One catalog object per database, so schemas registered on it (`pg_catalog`) stay.
    made: Arc<RwLock<std::collections::HashMap<String, Arc<DbCatalog>>>>,
}

impl std::fmt::Debug for TemporaCatalogList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemporaCatalogList").finish()
    }
}

impl TemporaCatalogList {
    pub fn new(dbs: Arc<Databases>) -> Self {
        Self {
            dbs,
            extra: Default::default(),
            made: Default::default(),
        }
    }
}

impl CatalogProviderList for TemporaCatalogList {
    fn register_catalog(
        &self,
        name: String,
        catalog: Arc<dyn CatalogProvider>,
    ) -> Option<Arc<dyn CatalogProvider>> {
        self.extra.write().insert(name, catalog)
    }
    fn catalog_names(&self) -> Vec<String> {
        let mut v = self.dbs.list();
        v.extend(self.extra.read().keys().cloned());
        v
    }
    fn catalog(&self, name: &str) -> Option<Arc<dyn CatalogProvider>> {
        if let Some(c) = self.extra.read().get(name) {
            return Some(c.clone());
        }
        if let Some(c) = self.made.read().get(name) {
            return Some(c.clone());
        }
        if !self.dbs.exists(name) {
            return None;
        }
        let c = Arc::new(DbCatalog {
            dbs: self.dbs.clone(),
            db: name.to_string(),
            extra: Default::default(),
        });
        Some(
            self.made
                .write()
                .entry(name.to_string())
                .or_insert(c)
                .clone(),
        )
    }
}

/// One database: the `public` schema plus any schema DataFusion registers (`pg_catalog`,
/// `information_schema`).
#[derive(Debug)]
pub struct DbCatalog {
    dbs: Arc<Databases>,
    db: String,
    extra: RwLock<std::collections::HashMap<String, Arc<dyn SchemaProvider>>>,
}

impl std::fmt::Debug for Databases {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Databases").finish()
    }
}

impl CatalogProvider for DbCatalog {
    fn schema_names(&self) -> Vec<String> {
        let mut v = vec![SCHEMA.to_string()];
        v.extend(self.extra.read().keys().cloned());
        v
    }
    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        if name == SCHEMA {
            return Some(Arc::new(DbSchema {
                dbs: self.dbs.clone(),
                db: self.db.clone(),
            }));
        }
        self.extra.read().get(name).cloned()
    }
    fn register_schema(
        &self,
        name: &str,
        schema: Arc<dyn SchemaProvider>,
    ) -> DfResult<Option<Arc<dyn SchemaProvider>>> {
        Ok(self.extra.write().insert(name.to_string(), schema))
    }
}

/// The tables of one database.
#[derive(Debug)]
pub struct DbSchema {
    dbs: Arc<Databases>,
    db: String,
}

#[async_trait]
impl SchemaProvider for DbSchema {
    fn table_names(&self) -> Vec<String> {
        self.dbs.tables(&self.db)
    }
    async fn table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        let full = engine_table(&self.db, name);
        Ok(self.dbs.engine().schema(&full).map(|schema| {
            Arc::new(TemporaTable::new(self.dbs.engine().clone(), full, &schema)) as _
        }))
    }
    fn table_exist(&self, name: &str) -> bool {
        self.dbs
            .engine()
            .schema(&engine_table(&self.db, name))
            .is_some()
    }
    fn deregister_table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        let full = engine_table(&self.db, name);
        let Some(schema) = self.dbs.engine().schema(&full) else {
            return Ok(None);
        };
        let table = TemporaTable::new(self.dbs.engine().clone(), full.clone(), &schema);
        self.dbs
            .engine()
            .drop_table(&full)
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        Ok(Some(Arc::new(table)))
    }
}
