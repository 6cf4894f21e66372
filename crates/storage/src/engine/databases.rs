//! Databases and declared tables: the engine's catalog API (see [`crate::catalog`]).
//!
//! Engine table names are `db.table` ([`crate::catalog::qualified`]); database names are
//! checked by [`crate::catalog::validate_database`].

use tempora_model::TableSchema;

use super::Engine;
use crate::catalog::partitions::Span;
use crate::catalog::settings::{Effective, StorageSettings};
use crate::error::Result;

impl Engine {
    /// Creates database `name` (recorded in the manifest, so it survives a restart empty);
    /// returns whether it is new (`false` when it was created before or holds tables, which
    /// records it too). Refused: an invalid name ([`crate::StorageError::InvalidDatabase`]),
    /// more than `max_databases` ([`crate::StorageError::TooManyDatabases`]).
    pub fn create_database(&self, name: &str) -> Result<bool> {
        self.catalog
            .create_database(name, StorageSettings::default())
    }

    /// [`Engine::create_database`] with settings (`ttl`, `partition`) for its tables, in the
    /// same manifest commit. A database that existed keeps its settings.
    pub fn create_database_with(&self, name: &str, settings: StorageSettings) -> Result<bool> {
        self.catalog.create_database(name, settings)
    }

    /// Puts the settings `change` holds over database `name`'s (others keep their value);
    /// its tables' retention and width of new partitions follow at once. Returns the
    /// database's settings now.
    pub fn set_database_settings(
        &self,
        name: &str,
        change: StorageSettings,
    ) -> Result<StorageSettings> {
        self.catalog.set_database_settings(name, change)
    }

    /// Database `name`'s own settings and what a table without settings of its own gets.
    pub fn database_settings(&self, name: &str) -> (StorageSettings, Effective) {
        let own = self.catalog.database_settings(name);
        let probe = crate::catalog::qualified(name, "_");
        (
            own,
            self.catalog
                .effective_for(&probe, StorageSettings::default()),
        )
    }

    /// Puts the settings `change` holds over table `name`'s; returns its settings now. A new
    /// width applies to partitions made from now on.
    pub fn set_table_settings(
        &self,
        name: &str,
        change: StorageSettings,
    ) -> Result<StorageSettings> {
        self.catalog.set_table_settings(name, change)
    }

    /// Table `name`'s own settings, the settings in force, and the width its next partition
    /// would get; `None` when there is no such table.
    pub fn table_settings(&self, name: &str) -> Option<(StorageSettings, Effective, i64)> {
        let t = self.catalog.find(name)?;
        Some((
            t.settings(),
            t.effective(),
            t.new_width(&self.opts.layout()),
        ))
    }

    /// Table `name`'s declared rollups in force (its own, its database's or the server's), as
    /// a query plans them: without the partition width [`Engine::table_settings`] computes.
    pub fn table_rollups(&self, name: &str) -> Option<crate::catalog::rollups::RollupList> {
        Some(self.catalog.find(name)?.effective().rollups)
    }

    /// Table `name`'s rollups as a query plans them ([`crate::rollup::view::RollupView`]):
    /// the declaration in force, raw rows per state of each resolution over the files held
    /// now, and where raw rows expired.
    pub fn rollup_view(&self, name: &str) -> Option<crate::rollup::view::RollupView> {
        let t = self.catalog.find(name)?;
        let resolutions = t.effective().rollups.resolutions();
        let mut counts = vec![(0u64, 0u64); resolutions.len()];
        let mut raw_expired_until: Option<i64> = None;
        let mut expired_resolutions: Vec<i64> = Vec::new();
        for region in t.all_regions() {
            for f in region.rollup_only.read().iter() {
                raw_expired_until = raw_expired_until.max(Some(region.key.end));
                expired_resolutions.extend(f.meta.rollups.iter().map(|r| r.resolution_ns));
            }
            for f in region.files.read().iter() {
                for r in &f.meta.rollups {
                    if let Some(i) = resolutions.iter().position(|&x| x == r.resolution_ns) {
                        counts[i].0 += f.meta.rows;
                        counts[i].1 += r.rows;
                    }
                }
            }
        }
        expired_resolutions.sort_unstable();
        expired_resolutions.dedup();
        Some(crate::rollup::view::RollupView {
            expired_resolutions,
            resolutions,
            counts,
            raw_expired_until,
            min_rows_per_state: self.opts.rollup_min_rows_per_state,
        })
    }

    /// Table `name`'s data files now: how many, and their bytes.
    pub fn table_files(&self, name: &str) -> Option<(u64, u64)> {
        let t = self.catalog.find(name)?;
        let (mut n, mut bytes) = (0u64, 0u64);
        for region in t.all_regions() {
            for f in region.files.read().iter() {
                n += 1;
                bytes += f.meta.size;
            }
        }
        Some((n, bytes))
    }

    /// Table `name`'s partitions, oldest first (empty when there is no such table).
    pub fn partitions(&self, name: &str) -> Vec<Span> {
        self.catalog
            .find(name)
            .map(|t| t.spans())
            .unwrap_or_default()
    }

    /// Drops database `name` and every table `name.*` in one manifest commit (a crash leaves
    /// all of it or none); returns whether it existed.
    pub fn drop_database(&self, name: &str) -> Result<bool> {
        self.dropper.drop_database(name)
    }

    /// Every database, sorted: those created and those holding tables.
    pub fn databases(&self) -> Vec<String> {
        self.catalog.databases()
    }

    /// Whether database `name` exists (created, or holding a table).
    pub fn database_exists(&self, name: &str) -> bool {
        self.catalog.database_exists(name)
    }

    /// Declares table `name` (`db.table`, or a name without `.` outside any database) with
    /// `schema`: `CreateTable` and `SetSchema` in one manifest commit. Returns whether it was
    /// created. Refused: a table that exists ([`crate::StorageError::TableExists`]) unless
    /// `if_not_exists` (then `Ok(false)`, the table unchanged), a database that does not exist
    /// ([`crate::StorageError::DatabaseNotFound`]), bad names or too many columns. Writes then
    /// grow the schema as for any table; a value of another type than declared is refused.
    pub fn create_table(
        &self,
        name: &str,
        schema: TableSchema,
        if_not_exists: bool,
    ) -> Result<bool> {
        self.create_table_with(name, schema, if_not_exists, StorageSettings::default())
    }

    /// [`Engine::create_table`] with the table's own settings, in the same manifest commit.
    pub fn create_table_with(
        &self,
        name: &str,
        schema: TableSchema,
        if_not_exists: bool,
        settings: StorageSettings,
    ) -> Result<bool> {
        let max_columns = self.opts.max_columns;
        self.catalog
            .create_table(name, schema, if_not_exists, max_columns, settings, None)
    }

    /// [`Engine::create_table_with`] for a dense table laid out by `spec` (its fields are the
    /// schema's fields, in order; its files need a local data directory).
    pub fn create_dense_table(
        &self,
        name: &str,
        schema: TableSchema,
        if_not_exists: bool,
        settings: StorageSettings,
        spec: crate::dense::DenseSpec,
    ) -> Result<bool> {
        let declared: Vec<(&str, tempora_model::FieldType)> = schema.fields().collect();
        let laid: Vec<(&str, tempora_model::FieldType)> = spec
            .fields
            .iter()
            .map(|f| (f.name.as_str(), f.ty))
            .collect();
        assert_eq!(declared, laid, "a dense table's fields are its schema's");
        let max_columns = self.opts.max_columns;
        self.catalog.create_table(
            name,
            schema,
            if_not_exists,
            max_columns,
            settings,
            Some(spec),
        )
    }

    /// A dense table's layout; `None` for a table of the ordinary layout or no table.
    pub fn dense_spec(&self, table: &str) -> Option<crate::dense::DenseSpec> {
        Some(self.catalog.find(table)?.dense()?.spec.clone())
    }
}
