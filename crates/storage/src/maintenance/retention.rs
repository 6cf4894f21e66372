//! Retention and drops: expired partitions, tables, databases.
//!
//! A partition [start, end) expires once its end is at or before now − ttl. Its regions are
//! removed from the manifest in one edit (the commit point), then from memory; their files are
//! deleted when the last reader lets go. Writes older than the cutoff are refused at the door,
//! and WAL replay skips records of expired partitions. Dropping a table is one manifest edit,
//! dropping a database one commit of a `DropTable` per table and its `DropDatabase`; then the
//! same release of the regions.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::catalog::{Catalog, Region, Table};
use crate::clock::Clock;
use crate::error::Result;
use crate::files::manifest::Edit;
use crate::metrics::Metrics;
use crate::write::budget::Budget;
use crate::write::regions::Placement;

/// What dropping data needs: the catalog that commits the drop, and what a dropped region
/// gives back (memtable bytes, its worker's load); the clock says what has expired.
pub(crate) struct Dropper {
    pub catalog: Arc<Catalog>,
    pub budget: Arc<Budget>,
    pub placement: Arc<Placement>,
    pub metrics: Arc<Metrics>,
    pub clock: Arc<dyn Clock>,
}

impl Dropper {
    /// Drops expired partitions; returns the number of regions dropped.
    pub fn enforce_retention(&self) -> Result<usize> {
        let mut dropped = 0;
        for table in self.catalog.tables() {
            let Some(cutoff) = table.retention_cutoff(self.clock.now_ns()) else {
                continue;
            };
            let expired: Vec<_> = table
                .all_regions()
                .into_iter()
                .filter(|r| r.key.end <= cutoff)
                .collect();
            if expired.is_empty() {
                continue;
            }
            let edits = expired
                .iter()
                .map(|r| Edit::DropRegion { region: r.key })
                .collect();
            self.catalog.commit(edits)?;
            dropped += expired.len();
            self.release_regions(&table, expired);
        }
        Ok(dropped)
    }

    /// Drops a table: one manifest edit, then its regions leave memory and its files are
    /// deleted once unread. Returns whether the table existed.
    pub fn drop_table(&self, name: &str) -> Result<bool> {
        let Some(table) = self.catalog.drop_table(name)? else {
            return Ok(false);
        };
        self.release_regions(&table, table.all_regions());
        Ok(true)
    }

    /// Drops a database and every table in it (one manifest commit), then releases their
    /// regions. Returns whether the database existed.
    pub fn drop_database(&self, name: &str) -> Result<bool> {
        let Some(tables) = self.catalog.drop_database(name)? else {
            return Ok(false);
        };
        for table in tables {
            self.release_regions(&table, table.all_regions());
        }
        Ok(true)
    }

    /// Removes dropped regions from memory: refuses further writes to them, releases their
    /// memtables and marks their files for deletion once no reader holds them. The manifest
    /// edit that dropped them must be committed first.
    fn release_regions(&self, table: &Table, dropped: Vec<Arc<Region>>) {
        let names = table.field_names();
        let mut regions = table.regions.write();
        for r in dropped {
            r.dropped.store(true, Ordering::SeqCst);
            regions.remove(&(r.key.start, r.key.bucket));
            r.freeze(&names);
            let parts: Vec<_> = r.frozen.read().clone();
            let bytes = r.release_parts(&parts);
            self.budget.sub(r.worker(), bytes);
            let files = std::mem::take(&mut *r.files.write());
            self.metrics.files_expired.add(files.len() as u64);
            for f in files {
                f.mark_obsolete();
            }
            self.placement.release(&r);
        }
        drop(regions);
        table.retain_spans();
    }
}
