//! Databases as DataFusion catalogs, their tables as providers over the engine.
//!
//! The storage engine keeps the databases (`Engine::create_database`, recorded in its
//! manifest): those created explicitly, so an empty database survives a restart, and those
//! that hold tables. [`Databases`] is this crate's view of them. A `databases.json` written by
//! an older Tempora is imported once and renamed `databases.json.migrated`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::catalog::{CatalogProvider, CatalogProviderList, SchemaProvider, TableProvider};
use datafusion::error::{DataFusionError, Result as DfResult};
use parking_lot::RwLock;
use tempora_storage::catalog::settings::StorageSettings;
use tempora_storage::catalog::{qualified as engine_table, split as split_engine_table};
use tempora_storage::{Engine, StorageError};

use crate::SCHEMA;
use crate::error::{QueryError, Result};
use crate::table::TemporaTable;

/// The databases of one engine.
pub struct Databases {
    engine: Arc<Engine>,
}

impl Databases {
    /// The databases of `engine`. `legacy_file` is where an older Tempora kept the created
    /// databases (`databases.json`): when it exists its names are created in the engine and
    /// it is renamed `databases.json.migrated`, so the import runs once (an interrupted one
    /// runs again; creating is idempotent).
    pub fn open(engine: Arc<Engine>, legacy_file: Option<PathBuf>) -> Result<Self> {
        let dbs = Self { engine };
        if let Some(f) = legacy_file.filter(|f| f.exists()) {
            dbs.migrate(&f)?;
        }
        Ok(dbs)
    }

    /// Imports the names of a legacy `databases.json`, then renames it.
    fn migrate(&self, file: &Path) -> Result<()> {
        let text = std::fs::read_to_string(file)
            .map_err(|e| QueryError::Sql(format!("reading {}: {e}", file.display())))?;
        let names = serde_json_lite::parse_names(&text)
            .map_err(|e| QueryError::Sql(format!("{} is damaged: {e}", file.display())))?;
        for name in &names {
            self.create(name)?;
        }
        let done = file.with_extension("json.migrated");
        std::fs::rename(file, &done).map_err(|e| {
            QueryError::Sql(format!(
                "renaming {} to {}: {e}",
                file.display(),
                done.display()
            ))
        })?;
        tracing::info!(file = %file.display(), databases = names.len(),
            "imported the databases of a legacy databases.json into the storage engine");
        Ok(())
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// Every database, sorted.
    pub fn list(&self) -> Vec<String> {
        self.engine.databases()
    }

    pub fn exists(&self, db: &str) -> bool {
        self.engine.database_exists(db)
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
        self.create_with(db, StorageSettings::default())
    }

    /// Creates a database with settings for its tables (`ttl`, `partition`); one that exists
    /// keeps its own.
    pub fn create_with(&self, db: &str, settings: StorageSettings) -> Result<()> {
        self.engine
            .create_database_with(db, settings)
            .map_err(database_error)?;
        Ok(())
    }

    /// Drops a database and every table in it (one engine commit); returns whether it
    /// existed.
    pub fn drop_database(&self, db: &str) -> Result<bool> {
        self.engine.drop_database(db).map_err(database_error)
    }
}

/// The engine's database errors as this crate names them.
fn database_error(e: StorageError) -> QueryError {
    match e {
        StorageError::InvalidDatabase { name, reason } => {
            QueryError::InvalidDatabase { name, reason }
        }
        StorageError::DatabaseNotFound(name) => QueryError::DatabaseNotFound(name),
        e => QueryError::Storage(e),
    }
}

/// Reads the array of strings an older Tempora wrote as `databases.json`.
mod serde_json_lite {
    use std::collections::BTreeSet;

    /// Parses what older versions wrote (names were validated, so they hold no quotes or
    /// backslashes that `{:?}` would have escaped).
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

#[cfg(test)]
mod tests {
    use super::*;
    use tempora_storage::{EngineIo, EngineOptions};

    fn engine_at(dir: &Path) -> Arc<Engine> {
        let io = EngineIo::local(dir.join("db")).unwrap();
        Arc::new(Engine::open(EngineOptions::default(), io).unwrap())
    }

    #[test]
    fn a_legacy_databases_file_is_imported_once_into_the_engine() {
        let dir = tempfile::tempdir().unwrap();
        let legacy = dir.path().join("databases.json");
        std::fs::write(&legacy, "[\"empty\",\"metrics\"]\n").unwrap();
        let dbs = Databases::open(engine_at(dir.path()), Some(legacy.clone())).unwrap();
        assert_eq!(dbs.list(), vec!["empty", "metrics"]);
        assert!(!legacy.exists(), "the legacy file is renamed");
        let migrated = dir.path().join("databases.json.migrated");
        assert!(migrated.exists());
        drop(dbs);
        // After a restart the names come from the engine's manifest, not from a file.
        std::fs::remove_file(&migrated).unwrap();
        let dbs = Databases::open(engine_at(dir.path()), Some(legacy.clone())).unwrap();
        assert_eq!(dbs.list(), vec!["empty", "metrics"]);
        assert!(dbs.exists("empty") && dbs.tables("empty").is_empty());
        assert!(dbs.drop_database("empty").unwrap());
        assert_eq!(dbs.list(), vec!["metrics"]);
        assert!(!legacy.exists(), "nothing writes the legacy file again");
    }

    #[test]
    fn a_damaged_legacy_file_is_named_and_left_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let legacy = dir.path().join("databases.json");
        std::fs::write(&legacy, "{\"not\": \"a list\"}").unwrap();
        let err =
            Databases::open(engine_at(dir.path()), Some(legacy.clone())).expect_err("refused");
        let text = err.to_string();
        assert!(text.contains("databases.json is damaged"), "{text}");
        assert!(legacy.exists(), "kept for the operator to look at");
    }

    #[test]
    fn database_name_errors_keep_their_sql_form() {
        let dir = tempfile::tempdir().unwrap();
        let dbs = Databases::open(engine_at(dir.path()), None).unwrap();
        for (name, why) in [("a.b", "must not contain '.'"), ("", "empty")] {
            let err = dbs.create(name).unwrap_err();
            assert!(matches!(err, QueryError::InvalidDatabase { .. }), "{err}");
            assert_eq!((err.http_status(), err.sqlstate()), (400, "42602"));
            assert!(err.to_string().contains(why), "{err}");
        }
        assert!(dbs.list().is_empty());
    }
}
