//! Retention and drops: expired partitions, tables, databases.
//!
//! A partition [start, end) expires once its end is at or before now − ttl. Its regions are
//! removed from the manifest in one edit (the commit point), then from memory; their files are
//! deleted when the last reader lets go. Writes older than the cutoff are refused at the door,
//! and WAL replay skips records of expired partitions. Dropping a table is one manifest edit,
//! dropping a database one commit of a `DropTable` per table and its `DropDatabase`; then the
//! same release of the regions.
//!
//! Rollups with a retention of their own (`rollups = '1m:30d,1h:365d'`) expire apart from the
//! raw rows ([`fate`]): a resolution without one goes with the raw rows. When a region's raw
//! rows expire while some of its rollups do not, one `Compact` edit replaces each file's entry
//! by the same id marked `raw_expired`, naming only the rollups that remain; the handles move
//! from `files` to `rollup_only` and the superseded ones delete, on last drop, only the paths
//! the new entries no longer name. A region with rows not yet flushed waits for its flush (their
//! rollups are not written yet), one with tombstones for the compaction that applies them.
//! When the last rollup expires the region is dropped.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use crate::catalog::region::FileHandle;
use crate::catalog::{Catalog, Region, Table};
use crate::clock::Clock;
use crate::error::Result;
use crate::files::manifest::{Edit, FileMeta};
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
    /// Drops expired partitions and expired rollups; returns the number of regions dropped.
    pub fn enforce_retention(&self) -> Result<usize> {
        let mut dropped = 0;
        let now = self.clock.now_ns();
        for table in self.catalog.tables() {
            let raw_cutoff = table.retention_cutoff(now);
            if let Some(d) = table.dense() {
                // Whole block files past retention go; a dense table keeps no rollups. One
                // table's failure (a damaged block) does not stop the others'.
                if let Some(cutoff) = raw_cutoff {
                    match d.drop_blocks_before(cutoff) {
                        Ok(n) => dropped += n,
                        Err(e) => {
                            tracing::warn!(table = %table.name, error = %e, "dense retention failed")
                        }
                    }
                }
                if let Some(after) = d.spec.cold_after_ns {
                    match d.convert_cold(now.saturating_sub(after)) {
                        Ok(0) => {}
                        Ok(n) => {
                            tracing::info!(table = %table.name, blocks = n, "dense blocks converted to cold files")
                        }
                        Err(e) => {
                            tracing::warn!(table = %table.name, error = %e, "dense cold conversion failed")
                        }
                    }
                }
                continue;
            }
            let rollups: Vec<(i64, Option<i64>)> = table
                .effective()
                .rollups
                .specs()
                .iter()
                .map(|s| (s.resolution_ns, s.ttl.ns().map(|t| now.saturating_sub(t))))
                .collect();
            let mut expired = Vec::new();
            for r in table.all_regions() {
                match fate(r.key.end, raw_cutoff, &rollups) {
                    Fate::Keep => {}
                    Fate::Drop => expired.push(r),
                    Fate::DropRollups(gone) => self.drop_rollups(&r, &gone)?,
                    Fate::RollupsOnly { keep } => self.keep_rollups_only(&r, &keep)?,
                }
            }
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

    /// Removes the rollups of resolutions `gone` from every file of `region` (raw rows stay).
    fn drop_rollups(&self, region: &Arc<Region>, gone: &[i64]) -> Result<()> {
        let keep = |res: i64| !gone.contains(&res);
        self.rewrite_entries(region, false, &keep)
    }

    /// Turns `region`'s files into their rollups at `keep` (their raw rows expired); waits
    /// while the region holds rows not flushed yet (no rollups of them exist) or tombstones
    /// compaction has not applied (its rollups still count the rows they hide).
    fn keep_rollups_only(&self, region: &Arc<Region>, keep: &[i64]) -> Result<()> {
        let unflushed = !region.active.lock().is_empty() || !region.frozen.read().is_empty();
        if unflushed || !region.tombstones.read().is_empty() {
            return Ok(());
        }
        let keep = |res: i64| keep.contains(&res);
        self.rewrite_entries(region, true, &keep)
    }

    /// Replaces the entries of `region`'s files (and of its rollup-only files) that change:
    /// rollups `keep` refuses leave, and with `raw_gone` the raw rows too. One manifest edit,
    /// then the handles; a file left with nothing goes.
    fn rewrite_entries(
        &self,
        region: &Arc<Region>,
        raw_gone: bool,
        keep: &dyn Fn(i64) -> bool,
    ) -> Result<()> {
        // A snapshot: flushes may add files meanwhile (never to a region whose raw rows
        // expired); only compaction and retention remove any, one after the other on the
        // maintenance thread.
        let held: Vec<Arc<FileHandle>> = {
            let (files, only) = (region.files.read(), region.rollup_only.read());
            files.iter().chain(only.iter()).cloned().collect()
        };
        let mut removed = Vec::new();
        let mut added: Vec<FileMeta> = Vec::new();
        let mut changed: Vec<(Arc<FileHandle>, Option<FileMeta>)> = Vec::new();
        for f in &held {
            let m = &f.meta;
            let expire_raw = raw_gone && !m.raw_expired;
            if !expire_raw && m.rollups.iter().all(|r| keep(r.resolution_ns)) {
                continue;
            }
            let mut next = m.clone();
            next.rollups.retain(|r| keep(r.resolution_ns));
            if expire_raw {
                next.raw_expired = true;
                next.last_rows = None;
            }
            removed.push(m.id);
            let next = (!next.raw_expired || !next.rollups.is_empty()).then_some(next);
            added.extend(next.clone());
            changed.push((f.clone(), next));
        }
        if changed.is_empty() {
            return Ok(());
        }
        self.catalog.commit(vec![Edit::Compact {
            region: region.key,
            added,
            removed,
        }])?;
        let store = region.store().clone();
        let (mut files, mut only) = (region.files.write(), region.rollup_only.write());
        for (old, next) in changed {
            files.retain(|f| f.meta.id != old.meta.id);
            only.retain(|f| f.meta.id != old.meta.id);
            match next {
                Some(m) => {
                    old.mark_superseded(&m);
                    let h = FileHandle::new(m, store.clone());
                    if h.meta.raw_expired {
                        only.push(h);
                    } else {
                        files.push(h);
                    }
                }
                None => old.mark_obsolete(),
            }
        }
        Ok(())
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
        if let Some(d) = table.dense()
            && self
                .catalog
                .find(&table.name)
                .is_none_or(|t| t.id != table.id)
        {
            // The table itself was dropped: its block files go with it.
            if let Err(e) = d.remove_all() {
                tracing::warn!(table = %table.name, error = %e, "removing a dropped dense table's files failed");
            }
        }
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
            let only = std::mem::take(&mut *r.rollup_only.write());
            self.metrics.files_expired.add(files.len() as u64);
            for f in files.into_iter().chain(only) {
                f.mark_obsolete();
            }
            self.placement.release(&r);
        }
        drop(regions);
        table.retain_spans();
    }
}

/// What retention does to a region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fate {
    /// Nothing of it expired.
    Keep,
    /// Raw rows stay; the rollups of these resolutions expired.
    DropRollups(Vec<i64>),
    /// Raw rows expired; the rollups of `keep` remain.
    RollupsOnly { keep: Vec<i64> },
    /// Everything expired: the region goes.
    Drop,
}

/// The fate of a region ending at `end`, given the raw rows' cutoff (rows before it expired;
/// `None`: kept forever) and each declared resolution with its own cutoff (`None`: it goes
/// with the raw rows). Rollups of resolutions no longer declared go with the raw rows.
pub(crate) fn fate(end: i64, raw_cutoff: Option<i64>, rollups: &[(i64, Option<i64>)]) -> Fate {
    let gone = |cutoff: Option<i64>| cutoff.is_some_and(|c| end <= c);
    let raw_gone = gone(raw_cutoff);
    let expired = |own: Option<i64>| gone(own.or(raw_cutoff));
    let keep: Vec<i64> = rollups
        .iter()
        .filter(|(_, own)| !expired(*own))
        .map(|(r, _)| *r)
        .collect();
    match (raw_gone, keep.is_empty()) {
        (true, true) => Fate::Drop,
        (true, false) => Fate::RollupsOnly { keep },
        (false, _) => {
            let drop: Vec<i64> = rollups
                .iter()
                .filter(|(_, own)| own.is_some() && expired(*own))
                .map(|(r, _)| *r)
                .collect();
            if drop.is_empty() {
                Fate::Keep
            } else {
                Fate::DropRollups(drop)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: i64 = 60;
    const H: i64 = 3600;

    #[test]
    fn fates() {
        // (name, region end, raw cutoff, rollups with their own cutoffs, fate)
        type Case = (
            &'static str,
            i64,
            Option<i64>,
            Vec<(i64, Option<i64>)>,
            Fate,
        );
        let cases: Vec<Case> = vec![
            ("no retention", 100, None, vec![(M, None)], Fate::Keep),
            ("raw not yet expired", 100, Some(50), vec![], Fate::Keep),
            (
                "raw expired, no rollups",
                100,
                Some(100),
                vec![],
                Fate::Drop,
            ),
            (
                "rollups without a ttl go with the raw rows",
                100,
                Some(200),
                vec![(M, None), (H, None)],
                Fate::Drop,
            ),
            (
                "1h outlives the raw rows",
                100,
                Some(200),
                vec![(M, None), (H, Some(50))],
                Fate::RollupsOnly { keep: vec![H] },
            ),
            (
                "both outlive",
                100,
                Some(200),
                vec![(M, Some(90)), (H, Some(50))],
                Fate::RollupsOnly { keep: vec![M, H] },
            ),
            (
                "every rollup expired too",
                100,
                Some(300),
                vec![(M, Some(250)), (H, Some(100))],
                Fate::Drop,
            ),
            (
                "a short rollup ttl drops it before the raw rows",
                100,
                Some(50),
                vec![(M, Some(150)), (H, None)],
                Fate::DropRollups(vec![M]),
            ),
            (
                "rollup ttl with raw kept forever",
                100,
                None,
                vec![(M, Some(100)), (H, Some(10))],
                Fate::DropRollups(vec![M]),
            ),
        ];
        for (name, end, raw, rollups, want) in cases {
            assert_eq!(fate(end, raw, &rollups), want, "{name}");
        }
    }
}
