//! Retention: drop whole expired partitions of tables that have a TTL.
//!
//! A partition [p·P, (p+1)·P) expires once its end is at or before now − ttl. Its regions are
//! removed from the manifest in one edit (the commit point), then from memory; their files are
//! deleted when the last reader lets go. Writes older than the cutoff are refused at the door,
//! and WAL replay skips records of expired partitions.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::engine::Shared;
use crate::error::Result;
use crate::manifest::Edit;
use crate::region::Region;
use crate::table::Table;

/// Drops expired partitions; returns the number of regions dropped.
pub(crate) fn enforce(shared: &Shared) -> Result<usize> {
    let mut dropped = 0;
    for table in shared.all_tables() {
        let Some(cutoff) = shared.retention_cutoff(&table) else {
            continue;
        };
        let p = shared.opts.partition_ns;
        let expired: Vec<_> = table
            .all_regions()
            .into_iter()
            .filter(|r| (r.key.partition + 1).saturating_mul(p) <= cutoff)
            .collect();
        if expired.is_empty() {
            continue;
        }
        let edits = expired
            .iter()
            .map(|r| Edit::DropRegion { region: r.key })
            .collect();
        shared.manifest.lock().commit(edits)?;
        dropped += expired.len();
        release_regions(shared, &table, expired);
    }
    Ok(dropped)
}

/// Removes dropped regions from memory: refuses further writes to them, releases their
/// memtables and marks their files for deletion once no reader holds them. The manifest edit
/// that dropped them must be committed first.
fn release_regions(shared: &Shared, table: &Table, dropped: Vec<Arc<Region>>) {
    let names = table.field_names();
    let mut regions = table.regions.write();
    for r in dropped {
        r.dropped.store(true, Ordering::SeqCst);
        regions.remove(&(r.key.partition, r.key.bucket));
        r.freeze(&names);
        let parts: Vec<_> = r.frozen.read().clone();
        let bytes = r.release_parts(&parts);
        shared.sub_bytes(r.worker(), bytes);
        let files = std::mem::take(&mut *r.files.write());
        shared.metrics.files_expired.add(files.len() as u64);
        for f in files {
            f.mark_obsolete();
        }
        shared
            .balancer
            .lock()
            .unbind(r.worker(), r.placed_interval_ns);
    }
}

/// Drops a table: one manifest edit, then its regions leave memory and its files are deleted
/// once unread. Returns whether the table existed.
pub(crate) fn drop_table(shared: &Shared, name: &str) -> Result<bool> {
    let Some(table) = shared.tables.read().get(name).cloned() else {
        return Ok(false);
    };
    shared.manifest.lock().commit(vec![Edit::DropTable {
        name: name.to_string(),
    }])?;
    shared.tables.write().remove(name);
    release_regions(shared, &table, table.all_regions());
    Ok(true)
}
