//! A table: its schema and its regions.
//!
//! Invariants: the schema only grows, under `schema` (the write path's lock); readers see an
//! immutable copy through `published`. Regions are created on first write and keyed by
//! (partition, bucket).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use parking_lot::{Mutex, RwLock};
use tempora_model::{FieldType, RowBatch, RowRejection, TableId, TableSchema};

use crate::catalog::region::Region;

pub struct Table {
    pub name: String,
    pub id: TableId,
    schema: Mutex<TableSchema>,
    published: RwLock<Arc<TableSchema>>,
    pub regions: RwLock<HashMap<(i64, u32), Arc<Region>>>,
    /// Retention in ns; 0 means keep forever.
    ttl_ns: AtomicI64,
}

impl Table {
    pub fn new(name: &str, id: TableId, schema: TableSchema, ttl_ns: Option<i64>) -> Self {
        Self {
            name: name.to_string(),
            id,
            published: RwLock::new(Arc::new(schema.clone())),
            schema: Mutex::new(schema),
            regions: RwLock::new(HashMap::new()),
            ttl_ns: AtomicI64::new(ttl_ns.unwrap_or(0)),
        }
    }

    /// The current schema (immutable snapshot).
    pub fn schema(&self) -> Arc<TableSchema> {
        self.published.read().clone()
    }

    pub fn ttl_ns(&self) -> Option<i64> {
        Some(self.ttl_ns.load(Ordering::SeqCst)).filter(|&t| t > 0)
    }

    pub fn set_ttl_ns(&self, ttl: Option<i64>) {
        self.ttl_ns.store(ttl.unwrap_or(0), Ordering::SeqCst);
    }

    /// Oldest timestamp the table still accepts at `now_ns`, by its retention.
    pub fn retention_cutoff(&self, now_ns: i64) -> Option<i64> {
        self.ttl_ns().map(|ttl| now_ns.saturating_sub(ttl))
    }

    /// Checks rows against the schema, growing it; returns the rejections and, for each batch
    /// field, its table field ordinal and type (`usize::MAX` for fields of rejected rows only).
    pub fn check(
        &self,
        batch: &RowBatch,
        max_columns: usize,
    ) -> (Vec<RowRejection>, Vec<(usize, FieldType)>) {
        let mut schema = self.schema.lock();
        let before = schema.columns().len();
        let rejected = schema.check_and_grow(batch, max_columns);
        let ordinals: HashMap<&str, (usize, FieldType)> = schema
            .fields()
            .enumerate()
            .map(|(i, (n, t))| (n, (i, t)))
            .collect();
        let map = batch
            .field_names()
            .iter()
            .map(|n| {
                ordinals
                    .get(n.as_str())
                    .copied()
                    .unwrap_or((usize::MAX, FieldType::F64))
            })
            .collect();
        if schema.columns().len() != before {
            *self.published.write() = Arc::new(schema.clone());
        }
        (rejected, map)
    }

    /// Field names by ordinal.
    pub fn field_names(&self) -> Vec<String> {
        self.schema().fields().map(|(n, _)| n.to_string()).collect()
    }

    /// Fields by ordinal with their types.
    pub fn fields(&self) -> Vec<(String, FieldType)> {
        self.schema()
            .fields()
            .map(|(n, t)| (n.to_string(), t))
            .collect()
    }

    pub fn tags(&self) -> Vec<String> {
        self.schema().tags().map(str::to_string).collect()
    }

    pub fn region(&self, partition: i64, bucket: u32) -> Option<Arc<Region>> {
        self.regions.read().get(&(partition, bucket)).cloned()
    }

    pub fn all_regions(&self) -> Vec<Arc<Region>> {
        let mut v: Vec<Arc<Region>> = self.regions.read().values().cloned().collect();
        v.sort_by_key(|r| r.key);
        v
    }
}
