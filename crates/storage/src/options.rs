//! Engine options: every queue, buffer and budget has a named limit here.

use std::time::Duration;

pub use tempora_wal::SyncPolicy;

/// Options of one storage engine.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Number of region worker threads (each owns a set of regions and one WAL).
    pub workers: usize,
    /// Capacity of each worker's write queue, in requests.
    pub worker_queue_capacity: usize,
    /// Most write requests a worker drains into one WAL commit.
    pub max_requests_per_commit: usize,
    /// Width of a new time partition in nanoseconds before a table's data rate is measured,
    /// and always when `partition_auto` is off (regions are partition × bucket).
    pub partition_ns: i64,
    /// Size new partitions from the measured data rate (`catalog::partitions`), unless a
    /// table's or database's `partition` setting fixes it.
    pub partition_auto: bool,
    /// Most series-hash buckets of a partition (all of them when `buckets_auto` is off).
    pub buckets: u32,
    /// Give a new partition one bucket per 25 series of the table, up to `buckets`.
    pub buckets_auto: bool,
    /// Retention of tables whose own and database's settings name none (`None`: forever).
    pub default_ttl_ns: Option<i64>,
    /// Rollups of tables whose own and database's settings declare none.
    pub default_rollups: crate::catalog::rollups::RollupList,
    /// Fewest raw rows per state at which a query reads a rollup where raw rows exist
    /// (`crate::rollup::view`; 0 reads every rollup that fits).
    pub rollup_min_rows_per_state: u32,
    /// WAL durability.
    pub wal_sync: SyncPolicy,
    /// WAL segment size in bytes.
    pub wal_segment_bytes: u64,
    /// Memtable bytes (all regions) at which a worker flushes its regions.
    pub flush_threshold_bytes: usize,
    /// Memtable bytes (all regions) at which writes stall, waiting for flushes.
    pub write_stall_bytes: usize,
    /// How long a stalled write waits before failing with `MemoryBudget`.
    pub write_stall_timeout: Duration,
    /// Rows per Parquet row group: the unit a read for a few series decodes (row groups are
    /// skipped by their key and time ranges).
    pub row_group_rows: usize,
    /// zstd level for data files.
    pub zstd_level: i32,
    /// Files in one compaction window that trigger a compaction.
    pub compaction_trigger_files: usize,
    /// Width of a compaction window in nanoseconds (must divide `partition_ns`).
    pub compaction_window_ns: i64,
    /// Rows one compaction holds decoded at once (bytes): a larger region is compacted in key
    /// slices (`maintenance::slices`).
    pub compaction_memory_bytes: usize,
    /// A compaction's output file is closed and the next begun past this size (bytes).
    pub compaction_target_file_bytes: usize,
    /// Most tables in one engine.
    pub max_tables: usize,
    /// Most databases in one engine (created ones and those holding tables).
    pub max_databases: usize,
    /// Most columns in one table.
    pub max_columns: usize,
    /// Most series in one region index.
    pub max_series_per_region: usize,
    /// Most rows in one write request.
    pub max_rows_per_request: usize,
    /// Most block files the dense tables keep open, all together (more are reopened on use).
    pub max_open_dense_files: usize,
    /// Most slot images a dense table buffers before writing them in place.
    pub dense_pending_slots: usize,
    /// Bytes a dense table logs between checkpoints (its log is truncated at each).
    pub dense_checkpoint_bytes: usize,
    /// Manifest edits between checkpoints.
    pub manifest_checkpoint_every: u64,
    /// Threads used to replay the WAL on start.
    pub replay_threads: usize,
    /// How often the maintenance thread runs retention and compaction.
    pub maintenance_interval: Duration,
    /// Memory for loaded region indexes; clean indexes of cold regions past it are evicted
    /// and reloaded from their files on demand (the series cache).
    pub index_cache_bytes: usize,
    /// Memory for recently read data files and their decoded footers (the data-file cache,
    /// `crate::read::sst_cache`); 0 reads every file from storage each time.
    pub sst_cache_bytes: usize,
    /// Memory for decoded column chunks of data files that queries read (the decoded-column
    /// cache, `crate::read::decoded_cache`); 0 decodes every read.
    pub decoded_cache_bytes: usize,
    /// After opening, a background thread reads the newest data into the caches until the
    /// decoded-column cache holds this percentage of its budget (`crate::read::prewarm`); 0: off.
    pub prewarm_percent: u8,
}

pub const HOUR_NS: i64 = 3_600_000_000_000;
pub const DAY_NS: i64 = 24 * HOUR_NS;

impl Default for EngineOptions {
    fn default() -> Self {
        Self {
            workers: 2,
            worker_queue_capacity: 256,
            max_requests_per_commit: 64,
            partition_ns: DAY_NS,
            partition_auto: true,
            buckets: 4,
            buckets_auto: true,
            default_ttl_ns: None,
            default_rollups: crate::catalog::rollups::RollupList::NONE,
            rollup_min_rows_per_state: crate::rollup::view::DEFAULT_MIN_ROWS_PER_STATE,
            wal_sync: SyncPolicy::Sync,
            wal_segment_bytes: 64 << 20,
            flush_threshold_bytes: 512 << 20,
            write_stall_bytes: 1 << 30,
            write_stall_timeout: Duration::from_secs(10),
            row_group_rows: 16 * 1024,
            zstd_level: 3,
            compaction_trigger_files: 4,
            compaction_window_ns: 2 * HOUR_NS,
            compaction_memory_bytes: 1 << 30,
            compaction_target_file_bytes: 256 << 20,
            max_tables: 10_000,
            max_databases: 10_000,
            max_columns: 4_096,
            max_series_per_region: 10_000_000,
            max_rows_per_request: 1_000_000,
            max_open_dense_files: 8192,
            dense_pending_slots: 65_536,
            dense_checkpoint_bytes: 64 << 20,
            manifest_checkpoint_every: 64,
            replay_threads: 2,
            maintenance_interval: Duration::from_secs(60),
            index_cache_bytes: 1 << 30,
            sst_cache_bytes: 256 << 20,
            decoded_cache_bytes: 256 << 20,
            prewarm_percent: 0,
        }
    }
}

impl EngineOptions {
    /// Checks the invariants between options; a clear message names the bad option.
    pub fn validate(&self) -> Result<(), String> {
        let checks: [(bool, &str); 10] = [
            (self.workers >= 1, "workers must be at least 1"),
            (
                self.worker_queue_capacity >= 1,
                "worker_queue_capacity must be at least 1",
            ),
            (self.partition_ns > 0, "partition_ns must be positive"),
            (self.buckets >= 1, "buckets must be at least 1"),
            (
                self.compaction_window_ns > 0,
                "compaction_window_ns must be positive",
            ),
            (
                self.write_stall_bytes >= self.flush_threshold_bytes,
                "write_stall_bytes must be at least flush_threshold_bytes",
            ),
            (
                self.row_group_rows >= 1,
                "row_group_rows must be at least 1",
            ),
            (
                self.prewarm_percent <= 100,
                "prewarm_percent must be at most 100",
            ),
            (self.max_databases >= 1, "max_databases must be at least 1"),
            (
                self.default_ttl_ns
                    .is_none_or(|t| t >= crate::catalog::settings::MIN_TTL_NS),
                "default_ttl_ns must be at least a minute",
            ),
        ];
        match checks.iter().find(|(ok, _)| !ok) {
            Some((_, msg)) => Err(msg.to_string()),
            None => Ok(()),
        }
    }
}

impl EngineOptions {
    /// How new partitions are sized when no setting fixes it.
    pub(crate) fn layout(&self) -> crate::catalog::Layout {
        crate::catalog::Layout {
            default_ns: self.partition_ns,
            auto_width: self.partition_auto,
            max_buckets: self.buckets,
            auto_buckets: self.buckets_auto,
        }
    }

    /// The server's defaults under every database's settings.
    pub(crate) fn defaults(&self) -> crate::catalog::settings::Defaults {
        use crate::catalog::settings::Setting;
        crate::catalog::settings::Defaults {
            ttl: self.default_ttl_ns.map_or(Setting::Unbounded, Setting::Ns),
            partition: match self.partition_auto {
                true => Setting::Unbounded,
                false => Setting::Ns(self.partition_ns),
            },
            rollups: self.default_rollups,
        }
    }

    /// How data written before partitions were sized to the data is read: one-day partitions
    /// of four buckets, the only layout a server wrote then (whatever `partition_ns` says now).
    pub(crate) fn legacy_layout(&self) -> crate::files::manifest::LegacyLayout {
        crate::files::manifest::LegacyLayout::default()
    }
}
