//! A table: its schema, its settings, its partitions and its regions.
//!
//! Invariants: the schema only grows, under `schema` (the write path's lock); readers see an
//! immutable copy through `published`. Partitions ([`Span`]s) never overlap: a new one is
//! made under the `spans` write lock by [`partitions::place`]. Regions are created on first
//! write and keyed by (partition start, bucket). `effective` is the table's settings resolved
//! against its database's and the server's; the catalog keeps it current.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use tempora_model::{FieldType, RowBatch, RowRejection, TableId, TableSchema};

use crate::catalog::partitions::{self, RateEstimate, Span};
use crate::catalog::region::Region;
use crate::catalog::settings::{Effective, StorageSettings};

/// How new partitions are sized when the settings leave it to the engine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Layout {
    /// Width before any rate was measured (and the fixed width when `auto_width` is off).
    pub default_ns: i64,
    pub auto_width: bool,
    /// Most buckets of a partition (and the fixed count when `auto_buckets` is off).
    pub max_buckets: u32,
    pub auto_buckets: bool,
}

pub struct Table {
    pub name: String,
    pub id: TableId,
    schema: Mutex<TableSchema>,
    published: RwLock<Arc<TableSchema>>,
    pub regions: RwLock<HashMap<(i64, u32), Arc<Region>>>,
    /// The table's partitions by start.
    spans: RwLock<BTreeMap<i64, Span>>,
    /// The table's own settings (unset ones inherit).
    settings: Mutex<StorageSettings>,
    effective: RwLock<Effective>,
    rate: Mutex<RateEstimate>,
    /// A dense table's files (set once, when it is created or loaded).
    dense: std::sync::OnceLock<Arc<crate::dense::DenseTable>>,
}

impl Table {
    pub fn new(
        name: &str,
        id: TableId,
        schema: TableSchema,
        settings: StorageSettings,
        effective: Effective,
    ) -> Self {
        Self {
            name: name.to_string(),
            id,
            published: RwLock::new(Arc::new(schema.clone())),
            schema: Mutex::new(schema),
            regions: RwLock::new(HashMap::new()),
            spans: RwLock::new(BTreeMap::new()),
            settings: Mutex::new(settings),
            effective: RwLock::new(effective),
            rate: Mutex::new(RateEstimate::default()),
            dense: std::sync::OnceLock::new(),
        }
    }

    /// A dense table's files; `None` for a table of the ordinary layout.
    pub fn dense(&self) -> Option<&Arc<crate::dense::DenseTable>> {
        self.dense.get()
    }

    /// Makes the table dense (once, before it is used).
    pub fn set_dense(&self, d: Arc<crate::dense::DenseTable>) {
        let set = self.dense.set(d).is_ok();
        debug_assert!(set, "a table is made dense once");
    }

    /// Adds the tag names of `names` the schema lacks (a dense table's schema grows by tags
    /// only); refuses a name that is a field, or more than `max_columns` columns. Returns
    /// whether the schema changed.
    pub fn grow_tags(&self, names: &[String], max_columns: usize) -> Result<bool, String> {
        let known = self.schema();
        if names
            .iter()
            .all(|n| known.kind(n) == Some(tempora_model::ColumnKind::Tag))
        {
            return Ok(false);
        }
        let mut schema = self.schema.lock();
        let mut cols = schema.columns().to_vec();
        let before = cols.len();
        for n in names {
            match schema.kind(n) {
                Some(tempora_model::ColumnKind::Tag) => {}
                Some(_) => {
                    return Err(format!(
                        "tag {n:?} is already a field of table {:?}",
                        self.name
                    ));
                }
                None => cols.push((n.clone(), tempora_model::ColumnKind::Tag)),
            }
        }
        if cols.len() == before {
            return Ok(false);
        }
        if cols.len() > max_columns {
            return Err(format!(
                "table {:?} would exceed the limit of {max_columns} columns",
                self.name
            ));
        }
        *schema = TableSchema::with_columns(&schema.name, cols);
        *self.published.write() = Arc::new(schema.clone());
        Ok(true)
    }

    /// The table's own settings.
    pub fn settings(&self) -> StorageSettings {
        *self.settings.lock()
    }

    /// Sets the table's own settings and what they resolve to.
    pub fn set_settings(&self, settings: StorageSettings, effective: Effective) {
        *self.settings.lock() = settings;
        *self.effective.write() = effective;
    }

    /// The settings in force.
    pub fn effective(&self) -> Effective {
        *self.effective.read()
    }

    /// The partition a row at `t` goes to: the one holding `t`, or a new one sized by the
    /// settings or the measured rate, with buckets for `series` series.
    pub fn span_for(&self, t: i64, layout: &Layout, series: impl FnOnce() -> u64) -> Span {
        if let Some(s) = self.spans.read().range(..=t).next_back().map(|(_, s)| *s)
            && s.contains(t)
        {
            return s;
        }
        let width = self.new_width(layout);
        let buckets = match layout.auto_buckets {
            true => {
                let n = series().max(self.newest_partition_series());
                partitions::auto_buckets(n, layout.max_buckets)
            }
            false => layout.max_buckets,
        };
        let mut spans = self.spans.write();
        let s = partitions::place(&spans, t, width, buckets);
        spans.entry(s.start).or_insert(s);
        s
    }

    /// The width of a partition made now.
    pub fn new_width(&self, layout: &Layout) -> i64 {
        let e = self.effective();
        if let Some(w) = e.partition_ns {
            return w;
        }
        match (layout.auto_width, self.rate.lock().interval_ns()) {
            (true, Some(interval)) => partitions::auto_width(interval, e.ttl_ns),
            (true, None) => partitions::capped(layout.default_ns, e.ttl_ns),
            (false, _) => layout.default_ns,
        }
    }

    /// Records a partition that exists (start-up, replay). One that overlaps a partition
    /// already known is kept as it is: its rows were written there.
    pub fn add_span(&self, s: Span) {
        let mut spans = self.spans.write();
        if let Some(old) = spans.get(&s.start) {
            debug_assert_eq!(*old, s, "one partition per start");
            return;
        }
        let overlaps = spans
            .range(..s.end)
            .next_back()
            .is_some_and(|(_, o)| o.end > s.start);
        if overlaps {
            tracing::warn!(table = %self.name, ?s, "partition overlaps another");
        }
        spans.insert(s.start, s);
    }

    /// Forgets partitions none of whose regions remain (after a drop).
    pub fn retain_spans(&self) {
        let starts: std::collections::HashSet<i64> =
            self.regions.read().keys().map(|(s, _)| *s).collect();
        self.spans.write().retain(|s, _| starts.contains(s));
    }

    /// Series in the newest partition (summed over its buckets).
    fn newest_partition_series(&self) -> u64 {
        let Some(newest) = self.spans.read().keys().next_back().copied() else {
            return 0;
        };
        let regions = self.regions.read();
        let n: usize = regions
            .iter()
            .filter(|((s, _), _)| *s == newest)
            .map(|(_, r)| r.series_count())
            .sum();
        n as u64
    }

    /// The partition that ends where one starting at `start` begins, if any.
    pub fn span_ending_at(&self, start: i64) -> Option<Span> {
        let spans = self.spans.read();
        let prev = spans.range(..start).next_back().map(|(_, s)| *s)?;
        (prev.end == start).then_some(prev)
    }

    /// Every partition, oldest first.
    pub fn spans(&self) -> Vec<Span> {
        self.spans.read().values().copied().collect()
    }

    /// Learns the table's point spacing from a written batch (see [`partitions::batch_interval`]).
    pub fn observe_rate(&self, rows: usize, series: usize, span_ns: i64) {
        if let Some(i) = partitions::batch_interval(rows, series, span_ns) {
            self.rate.lock().observe(i);
        }
    }

    /// The current schema (immutable snapshot).
    pub fn schema(&self) -> Arc<TableSchema> {
        self.published.read().clone()
    }

    pub fn ttl_ns(&self) -> Option<i64> {
        self.effective().ttl_ns
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

    /// The region of the partition starting at `start`, bucket `bucket`.
    pub fn region(&self, start: i64, bucket: u32) -> Option<Arc<Region>> {
        self.regions.read().get(&(start, bucket)).cloned()
    }

    pub fn all_regions(&self) -> Vec<Arc<Region>> {
        let mut v: Vec<Arc<Region>> = self.regions.read().values().cloned().collect();
        v.sort_by_key(|r| r.key);
        v
    }
}
