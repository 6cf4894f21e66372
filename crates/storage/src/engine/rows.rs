//! Reading and deleting rows: the engine's entry points into [`crate::read`] and
//! [`crate::maintenance::delete`].

use arrow::array::RecordBatch;
use tempora_index::Matcher;

use super::Engine;
use crate::error::Result;
use crate::maintenance::delete::DeleteRequest;
use crate::read::{ScanPlan, ScanRequest};

impl Engine {
    /// Reads rows; one batch per region that has matching rows.
    pub fn scan(&self, table: &str, req: &ScanRequest) -> Result<Vec<RecordBatch>> {
        crate::read::scan::read_all(&self.plan_scan(table, req)?)
    }

    /// Chooses what a scan reads: the regions overlapping the time range, each one's
    /// snapshot, and the series its index selects. Nothing is read yet; [`ScanPlan::read`]
    /// reads one region, so a caller can stream region by region.
    pub fn plan_scan(&self, table: &str, req: &ScanRequest) -> Result<ScanPlan> {
        let table = self.catalog.table(table)?;
        crate::read::scan::plan(&self.reader, &table, req)
    }

    /// At most how many rows [`Engine::latest`] reads for `table` (its regions' cache slots),
    /// or `None` when the read would touch files: a region's cache must first be filled from
    /// them (after a restart or a delete), or its series index was evicted to its file. Also
    /// `None` when the table does not exist. (A caller that runs small reads inline uses this;
    /// an eviction or a delete between the check and the read still makes that read load.)
    pub fn latest_rows_bound(&self, table: &str) -> Option<usize> {
        crate::read::latest::latest_rows_bound(&*self.catalog.find(table)?)
    }

    /// The newest point of every selected series, answered from the last-value cache.
    pub fn latest(
        &self,
        table: &str,
        matcher: &Matcher,
        fields: Option<&Vec<String>>,
    ) -> Result<RecordBatch> {
        let table = self.catalog.table(table)?;
        crate::read::latest::latest(&self.reader, &table, matcher, fields)
    }

    /// Deletes the matching rows of `table`; returns how many (series, time) rows it hid
    /// (counted when it read them: a write racing the delete may be hidden uncounted).
    pub fn delete(&self, table: &str, req: &DeleteRequest) -> Result<u64> {
        let table = self.catalog.table(table)?;
        if let Some(dense) = table.dense() {
            return self.delete_dense(dense, req);
        }
        crate::maintenance::delete::delete(&self.catalog, &self.reader, &table, req)
    }
}
