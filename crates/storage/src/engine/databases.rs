//! Databases and declared tables: the engine's catalog API (see [`crate::catalog`]).
//!
//! Engine table names are `db.table` ([`crate::catalog::qualified`]); database names are
//! checked by [`crate::catalog::validate_database`].

use tempora_model::TableSchema;

use super::Engine;
use crate::error::Result;

impl Engine {
    /// Creates database `name` (recorded in the manifest, so it survives a restart empty);
    /// returns whether it is new (`false` when it was created before or holds tables, which
    /// records it too). Refused: an invalid name ([`crate::StorageError::InvalidDatabase`]),
    /// more than `max_databases` ([`crate::StorageError::TooManyDatabases`]).
    pub fn create_database(&self, name: &str) -> Result<bool> {
        self.catalog.create_database(name)
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
        let max_columns = self.opts.max_columns;
        self.catalog
            .create_table(name, schema, if_not_exists, max_columns)
    }
}
