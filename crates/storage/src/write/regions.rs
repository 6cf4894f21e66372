//! Region creation and placement: a region is created on the first write to its (partition,
//! bucket) and placed on the worker the frequency balancer picks ([`super::placement`]).
//!
//! Invariants:
//! - A region is created once per (table, partition, bucket): under the table's region map
//!   lock, checked again after taking it. Its partition is recorded in the table first.
//! - A region keeps its worker while the engine runs; only start-up moves one (to the worker
//!   whose WAL holds its unflushed records), together with its memtable bytes and its load.
//! - Every placed region is bound in the balancer until it is released (dropped).

use std::sync::Arc;

use parking_lot::Mutex;
use tempora_index::SeriesIndex;

use crate::catalog::partitions::Span;
use crate::catalog::{Region, RegionIo, Table};
use crate::files::manifest::RegionKey;
use crate::write::budget::Budget;
use crate::write::placement::FrequencyBalancer;

/// Interval assumed for a source never measured (1 s).
const DEFAULT_INTERVAL_NS: f64 = 1e9;

/// Places regions on workers and gives them what they need to load their index.
pub(crate) struct Placement {
    balancer: Mutex<FrequencyBalancer>,
    io: RegionIo,
}

impl Placement {
    pub fn new(workers: usize, io: RegionIo) -> Self {
        Self {
            balancer: Mutex::new(FrequencyBalancer::new(workers)),
            io,
        }
    }

    /// The store, series cache and index limits regions are made with.
    pub fn io(&self) -> &RegionIo {
        &self.io
    }

    /// The region of bucket `bucket` of partition `span`, created on first use and placed on
    /// the worker the frequency balancer picks, using the write interval measured for the
    /// same bucket in the partition ending where this one starts.
    pub fn region_or_create(&self, table: &Table, span: Span, bucket: u32) -> Arc<Region> {
        assert!(bucket < span.buckets, "bucket {bucket} of {span:?}");
        if let Some(r) = table.region(span.start, bucket) {
            return r;
        }
        table.add_span(span);
        let previous = table.span_ending_at(span.start);
        let mut regions = table.regions.write();
        if let Some(r) = regions.get(&(span.start, bucket)) {
            return r.clone();
        }
        let interval = previous
            .and_then(|p| regions.get(&(p.start, bucket)))
            .and_then(|prev| prev.meter.lock().interval_ns())
            .unwrap_or(DEFAULT_INTERVAL_NS);
        let worker = self.balancer.lock().assign(interval);
        let key = RegionKey {
            table: table.id,
            start: span.start,
            end: span.end,
            bucket,
            buckets: span.buckets,
        };
        let index = SeriesIndex::new(self.io.limits);
        let r = Arc::new(Region::new(
            key,
            worker,
            interval,
            Some(index),
            None,
            self.io.clone(),
        ));
        regions.insert((span.start, bucket), r.clone());
        r
    }

    /// A region the manifest names, placed as a source never measured (start-up). Its index
    /// is `persisted` (path, series count) when a flush wrote one, else new and empty.
    pub fn restore(&self, key: RegionKey, persisted: Option<(String, usize)>) -> Region {
        let index = persisted
            .is_none()
            .then(|| SeriesIndex::new(self.io.limits));
        let worker = self.balancer.lock().assign(DEFAULT_INTERVAL_NS);
        Region::new(
            key,
            worker,
            DEFAULT_INTERVAL_NS,
            index,
            persisted,
            self.io.clone(),
        )
    }

    /// Moves a region to worker `w` with its memtable bytes (start-up only).
    pub fn move_region(&self, region: &Region, w: usize, budget: &Budget) {
        let old = region.worker();
        let bytes = region.active.lock().bytes()
            + region.frozen.read().iter().map(|p| p.bytes).sum::<usize>();
        budget.sub(old, bytes);
        budget.add(w, bytes);
        let mut b = self.balancer.lock();
        b.unbind(old, region.placed_interval_ns);
        b.bind(w, region.placed_interval_ns);
        region.set_worker(w);
    }

    /// Removes a dropped region's load from its worker.
    pub fn release(&self, region: &Region) {
        self.balancer
            .lock()
            .unbind(region.worker(), region.placed_interval_ns);
    }
}
