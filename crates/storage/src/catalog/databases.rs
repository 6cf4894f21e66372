//! Databases and declared tables: what `CREATE DATABASE`, `DROP DATABASE` and `CREATE TABLE`
//! do to the catalog.
//!
//! Invariants (beyond the catalog's):
//! - A database exists when it was created or while it holds a table; `databases()` lists
//!   both kinds. Creating one that only holds tables records it, so it outlives its tables.
//! - The tables map is held across a database drop's commit, so no table of the database can
//!   be created between choosing what to drop and committing the drop.
//! - A declared table needs its database to exist; the catalog never creates one implicitly
//!   for a declaration (the caller decides).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use tempora_model::{ModelError, TableId, TableSchema, validate_name};

use super::names::{split, validate_database};
use super::settings::StorageSettings;
use super::{Catalog, Table};
use crate::error::{Result, StorageError};
use crate::files::manifest::Edit;

type Tables = HashMap<String, Arc<Table>>;

/// Whether a table of `db` is among `tables`.
fn holds_tables(tables: &Tables, db: &str) -> bool {
    tables
        .keys()
        .any(|t| split(t).is_some_and(|(d, _)| d == db))
}

/// Every database: those created and those holding a table.
fn all_databases(tables: &Tables, created: &BTreeSet<String>) -> BTreeSet<String> {
    let mut all = created.clone();
    all.extend(
        tables
            .keys()
            .filter_map(|t| split(t))
            .map(|(d, _)| d.to_string()),
    );
    all
}

impl Catalog {
    /// Every database, sorted.
    pub fn databases(&self) -> Vec<String> {
        let tables = self.tables.read();
        all_databases(&tables, &self.databases.read())
            .into_iter()
            .collect()
    }

    /// Whether database `name` exists (created, or holding a table).
    pub fn database_exists(&self, name: &str) -> bool {
        let tables = self.tables.read();
        self.databases.read().contains(name) || holds_tables(&tables, name)
    }

    /// Refuses a table `name` whose database does not exist yet when `max_databases` exist
    /// already (`tables` is the locked map).
    pub(super) fn check_new_database(&self, tables: &Tables, name: &str) -> Result<()> {
        let Some((db, _)) = split(name) else {
            return Ok(());
        };
        let created = self.databases.read();
        if created.contains(db) || holds_tables(tables, db) {
            return Ok(());
        }
        if all_databases(tables, &created).len() >= self.max_databases {
            return Err(StorageError::TooManyDatabases(self.max_databases));
        }
        Ok(())
    }

    /// Records database `name` with `settings`; returns whether it did not exist before
    /// (neither created nor holding a table). One that was created keeps its settings.
    pub fn create_database(&self, name: &str, settings: StorageSettings) -> Result<bool> {
        validate_database(name)?;
        if self.databases.read().contains(name) {
            return Ok(false);
        }
        let tables = self.tables.read();
        let mut created = self.databases.write();
        if created.contains(name) {
            return Ok(false);
        }
        let held = holds_tables(&tables, name);
        if !held && all_databases(&tables, &created).len() >= self.max_databases {
            return Err(StorageError::TooManyDatabases(self.max_databases));
        }
        let mut edits = vec![Edit::CreateDatabase {
            name: name.to_string(),
        }];
        if settings != StorageSettings::default() {
            edits.push(Edit::SetDatabaseSettings {
                name: name.to_string(),
                settings,
            });
        }
        self.manifest.lock().commit(edits)?;
        created.insert(name.to_string());
        if settings != StorageSettings::default() {
            self.db_settings.write().insert(name.to_string(), settings);
            self.resolve_tables_of(&tables, name);
        }
        Ok(!held)
    }

    /// Drops database `name` and every table in it in one manifest commit; returns the tables
    /// dropped (their regions are still in memory: the caller releases them), or `None` when
    /// the database did not exist.
    pub fn drop_database(&self, name: &str) -> Result<Option<Vec<Arc<Table>>>> {
        validate_database(name)?;
        let mut tables = self.tables.write();
        let mut created = self.databases.write();
        let mut doomed: Vec<String> = tables
            .keys()
            .filter(|t| split(t).is_some_and(|(d, _)| d == name))
            .cloned()
            .collect();
        if doomed.is_empty() && !created.contains(name) {
            return Ok(None);
        }
        doomed.sort();
        let mut edits: Vec<Edit> = doomed
            .iter()
            .map(|t| Edit::DropTable { name: t.clone() })
            .collect();
        edits.push(Edit::DropDatabase {
            name: name.to_string(),
        });
        self.manifest.lock().commit(edits)?;
        created.remove(name);
        self.db_settings.write().remove(name);
        Ok(Some(
            doomed.iter().filter_map(|t| tables.remove(t)).collect(),
        ))
    }

    /// The settings of database `name` (unset ones come from the server's defaults).
    pub fn database_settings(&self, name: &str) -> StorageSettings {
        self.db_settings
            .read()
            .get(name)
            .copied()
            .unwrap_or_default()
    }

    /// Puts `change` over database `name`'s settings, durably, and re-resolves its tables';
    /// a database that only held tables is recorded as created. Returns the settings now.
    pub fn set_database_settings(
        &self,
        name: &str,
        change: StorageSettings,
    ) -> Result<StorageSettings> {
        validate_database(name)?;
        let tables = self.tables.read();
        let mut created = self.databases.write();
        if !created.contains(name) && !holds_tables(&tables, name) {
            return Err(StorageError::DatabaseNotFound(name.to_string()));
        }
        let merged = self.database_settings(name).merged(change);
        self.manifest
            .lock()
            .commit(vec![Edit::SetDatabaseSettings {
                name: name.to_string(),
                settings: merged,
            }])?;
        created.insert(name.to_string());
        self.db_settings.write().insert(name.to_string(), merged);
        self.resolve_tables_of(&tables, name);
        Ok(merged)
    }

    /// Resolves again the settings of every table of database `db` (`tables` is the locked
    /// map), after the database's changed.
    fn resolve_tables_of(&self, tables: &Tables, db: &str) {
        for (t, table) in tables.iter() {
            if split(t).is_some_and(|(d, _)| d == db) {
                let own = table.settings();
                table.set_settings(own, self.effective_for(t, own));
            }
        }
    }

    /// Declares table `name` with `schema` (its name replaced by `name`) and its own
    /// `settings` in one manifest commit; returns whether it was created. A table that exists
    /// is refused with [`StorageError::TableExists`], or left as it is when `if_not_exists`.
    pub fn create_table(
        &self,
        name: &str,
        mut schema: TableSchema,
        if_not_exists: bool,
        max_columns: usize,
        settings: StorageSettings,
        dense: Option<crate::dense::DenseSpec>,
    ) -> Result<bool> {
        check_declared(name, &schema, max_columns)?;
        let mut tables = self.tables.write();
        if tables.contains_key(name) {
            return match if_not_exists {
                true => Ok(false),
                false => Err(StorageError::TableExists(name.to_string())),
            };
        }
        if let Some((db, _)) = split(name)
            && !self.databases.read().contains(db)
            && !holds_tables(&tables, db)
        {
            return Err(StorageError::DatabaseNotFound(db.to_string()));
        }
        if tables.len() >= self.max_tables {
            return Err(StorageError::TooManyTables(self.max_tables));
        }
        schema.name = name.to_string();
        schema.reindex();
        let mut manifest = self.manifest.lock();
        let id = TableId(manifest.state().next_table_id);
        let mut edits = vec![
            Edit::CreateTable {
                name: name.to_string(),
                id,
            },
            Edit::SetSchema {
                name: name.to_string(),
                schema: schema.clone(),
            },
        ];
        if settings != StorageSettings::default() {
            edits.push(Edit::SetTableSettings {
                name: name.to_string(),
                settings,
            });
        }
        let effective = self.effective_for(name, settings);
        let table = Table::new(name, id, schema, settings, effective);
        if let Some(spec) = dense {
            // The directory first: a table whose files cannot be made is not created.
            table.set_dense(self.open_dense(&table, spec.clone())?);
            edits.push(Edit::SetDense {
                name: name.to_string(),
                spec,
            });
        }
        manifest.commit(edits)?;
        drop(manifest);
        tables.insert(name.to_string(), Arc::new(table));
        Ok(true)
    }
}

/// Checks a declared table's name (its database part as a database name) and columns (valid
/// names, each once, at most `max_columns`).
fn check_declared(name: &str, schema: &TableSchema, max_columns: usize) -> Result<()> {
    validate_name(name)?;
    if let Some((db, table)) = split(name) {
        validate_database(db)?;
        validate_name(table)?;
    }
    let mut seen = HashSet::new();
    for (column, _) in schema.columns() {
        validate_name(column)?;
        if !seen.insert(column.as_str()) {
            return Err(StorageError::Model(ModelError::InvalidName {
                name: column.chars().take(64).collect(),
                reason: "a column is declared twice",
            }));
        }
    }
    if schema.columns().len() > max_columns {
        return Err(StorageError::TooLarge {
            what: "columns in a table",
            size: schema.columns().len(),
            limit: max_columns,
        });
    }
    Ok(())
}
