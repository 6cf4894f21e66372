//! What request handlers share. The HTTP port answers before the engine has replayed its
//! log: until then `ready()` is `ServerError::Starting` (503) and `/health` says so.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use tempora_gate::Gate;
use tempora_query::QueryService;
use tempora_storage::Engine;

use crate::config::Config;
use crate::error::ServerError;

/// The parts that exist once the engine is open.
pub struct Inner {
    pub engine: Arc<Engine>,
    pub gate: Arc<Gate>,
    pub query: Arc<QueryService>,
    pub ingest_buffer: IngestBuffer,
}

/// The ingest buffers' share of the memory budget (`ingest_buffer_bytes`): a write holds room
/// for its body and the rows parsed from it ([`PARSED_PER_BODY_BYTE`] bytes per body byte) from
/// the moment its body is read until the engine has its rows; writes wait while it is full. A
/// body larger than the whole buffer waits for all of it, so it runs alone.
pub struct IngestBuffer {
    room: Arc<tokio::sync::Semaphore>,
    kib: u32,
}

/// Bytes a write holds per byte of its body: the body itself and its parsed rows.
pub const PARSED_PER_BODY_BYTE: usize = 3;

impl IngestBuffer {
    pub fn new(bytes: usize) -> Self {
        let kib = (bytes / 1024).clamp(1, u32::MAX as usize) as u32;
        Self {
            room: Arc::new(tokio::sync::Semaphore::new(kib as usize)),
            kib,
        }
    }

    /// Waits for room for a body of `len` bytes; the room is given back when the permit drops.
    pub async fn hold(&self, len: usize) -> tokio::sync::OwnedSemaphorePermit {
        self.room
            .clone()
            .acquire_many_owned(kib_for(len, self.kib))
            .await
            .expect("the ingest buffer is never closed")
    }

    /// Bytes held by writes now.
    pub fn held_bytes(&self) -> usize {
        (self.kib as usize - self.room.available_permits()) * 1024
    }
}

/// KiB a body of `len` bytes holds out of `total`: at least one, at most all.
fn kib_for(len: usize, total: u32) -> u32 {
    let kib = len.saturating_mul(PARSED_PER_BODY_BYTE).div_ceil(1024);
    kib.clamp(1, total as usize) as u32
}

/// Wall-clock now in nanoseconds (stamps rows written without a time).
pub fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

#[derive(Default)]
pub struct Counter(AtomicU64);

impl Counter {
    pub fn inc_by(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Upper bounds of the latency histogram's buckets, in seconds (Prometheus' `le`).
pub const LATENCY_BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 60.0,
];

/// A latency histogram with fixed buckets; lock-free, cumulative only when exported.
#[derive(Default)]
pub struct Histogram {
    /// Observations per bucket (not cumulative); the last slot is above every bound.
    buckets: [Counter; LATENCY_BUCKETS.len() + 1],
    sum_micros: Counter,
}

impl Histogram {
    pub fn observe(&self, d: std::time::Duration) {
        let secs = d.as_secs_f64();
        let i = LATENCY_BUCKETS
            .iter()
            .position(|&b| secs <= b)
            .unwrap_or(LATENCY_BUCKETS.len());
        self.buckets[i].inc_by(1);
        self.sum_micros.inc_by(d.as_micros() as u64);
    }

    /// Observations so far.
    pub fn count(&self) -> u64 {
        self.buckets.iter().map(Counter::get).sum()
    }

    /// (upper bound, cumulative count) per bucket, ending with `+Inf`; the sum in seconds;
    /// the count.
    pub fn snapshot(&self) -> (Vec<(f64, u64)>, f64, u64) {
        let mut acc = 0;
        let mut out = Vec::with_capacity(self.buckets.len());
        for (i, b) in self.buckets.iter().enumerate() {
            acc += b.get();
            out.push((
                LATENCY_BUCKETS.get(i).copied().unwrap_or(f64::INFINITY),
                acc,
            ));
        }
        // The count is the buckets' total, so `_count` always equals the `+Inf` bucket.
        (out, self.sum_micros.get() as f64 / 1e6, acc)
    }
}

/// Queries running now, and those stopped early, by reason.
#[derive(Default)]
pub struct QueryGauges {
    running: AtomicU64,
    /// Stopped at their timeout.
    pub timed_out: Counter,
    /// Stopped by a PostgreSQL cancel request, or because an HTTP client went away.
    pub cancelled: Counter,
}

impl QueryGauges {
    pub fn running(&self) -> u64 {
        self.running.load(Ordering::SeqCst)
    }

    /// Counts a query as running until the guard drops; a guard dropped before
    /// [`RunningQuery::finish`] counts as cancelled (its future was dropped).
    pub fn start(self: &Arc<Self>) -> RunningQuery {
        self.running.fetch_add(1, Ordering::SeqCst);
        RunningQuery {
            gauges: self.clone(),
            finished: AtomicBool::new(false),
        }
    }
}

/// One running query (see [`QueryGauges::start`]).
pub struct RunningQuery {
    gauges: Arc<QueryGauges>,
    finished: AtomicBool,
}

impl RunningQuery {
    /// The query ended by itself (with rows or with an error), or its stops are counted
    /// where they happen.
    pub fn finish(&self) {
        self.finished.store(true, Ordering::SeqCst);
    }
}

impl Drop for RunningQuery {
    fn drop(&mut self) {
        self.gauges.running.fetch_sub(1, Ordering::SeqCst);
        if !self.finished.load(Ordering::SeqCst) {
            self.gauges.cancelled.inc_by(1);
        }
    }
}

/// Server-level counters exported at `/metrics`.
#[derive(Default)]
pub struct ServerMetrics {
    pub ingest_bytes: Counter,
    pub ingest_rows: Counter,
    pub query_errors: Counter,
    /// SQL latency over HTTP (its count is the number of statements).
    pub http_query_latency: Histogram,
    /// Statement latency over the PostgreSQL protocol.
    pub pg_query_latency: Arc<Histogram>,
    /// PromQL query latency (`/api/v1/query`, `/api/v1/query_range`).
    pub promql_latency: Histogram,
    pub queries: Arc<QueryGauges>,
}

pub struct AppState {
    pub config: Arc<Config>,
    /// Authentication and permissions (issue 26).
    pub access: Arc<crate::auth::Access>,
    pub inner: OnceLock<Arc<Inner>>,
    pub metrics: ServerMetrics,
}

impl AppState {
    pub fn ready(&self) -> Result<&Arc<Inner>, ServerError> {
        self.inner.get().ok_or(ServerError::Starting)
    }
}

/// Creates database `db` in the engine's catalog if it is not there (writes name their
/// database; InfluxDB creates it on first write). The write path needs no SQL for this.
/// The database a write names with `?db=` (the default database without it), created if it
/// does not exist.
pub async fn write_database(
    s: &AppState,
    p: &std::collections::HashMap<String, String>,
) -> Result<String, crate::error::ServerError> {
    let inner = s.ready()?;
    let db = p
        .get("db")
        .cloned()
        .unwrap_or_else(|| s.config.default_database.clone());
    ensure_database(&inner.engine, &db).await?;
    Ok(db)
}

pub async fn ensure_database(
    engine: &std::sync::Arc<tempora_storage::Engine>,
    db: &str,
) -> Result<(), crate::error::ServerError> {
    if engine.database_exists(db) {
        return Ok(());
    }
    let (engine, db) = (engine.clone(), db.to_string());
    tokio::task::spawn_blocking(move || engine.create_database(&db))
        .await
        .map_err(|e| crate::error::ServerError::Internal(e.to_string()))??;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn histogram_buckets_are_cumulative_and_bounds_inclusive() {
        let h = Histogram::default();
        for ms in [0, 1, 1, 7, 100_000] {
            h.observe(Duration::from_millis(ms));
        }
        let (b, sum, count) = h.snapshot();
        assert_eq!(count, 5);
        assert!((sum - 100.009).abs() < 1e-9, "{sum}");
        let at = |le: f64| b.iter().find(|x| x.0 == le).unwrap().1;
        assert_eq!(at(0.0005), 1);
        assert_eq!(at(0.001), 3, "1 ms falls in le=0.001");
        assert_eq!(at(0.005), 3);
        assert_eq!(at(0.01), 4);
        assert_eq!(at(60.0), 4);
        assert_eq!(b.last().unwrap(), &(f64::INFINITY, 5));
    }
}

#[cfg(test)]
mod ingest_buffer_tests {
    use super::*;

    #[test]
    fn a_body_holds_three_times_its_size_within_the_buffer() {
        for (name, len, total, want) in [
            ("empty body", 0, 100, 1),
            ("one byte", 1, 100, 1),
            ("10 KiB body", 10 << 10, 100, 30),
            ("larger than the buffer: all of it", 1 << 20, 100, 100),
        ] {
            assert_eq!(kib_for(len, total), want, "{name}");
        }
    }

    #[tokio::test]
    async fn writes_wait_while_the_buffer_is_full() {
        let b = IngestBuffer::new(30 << 10);
        let first = b.hold(10 << 10).await;
        assert_eq!(b.held_bytes(), 30 << 10);
        let waiting = b.hold(1);
        tokio::pin!(waiting);
        assert!(
            futures::poll!(&mut waiting).is_pending(),
            "a full buffer makes the next write wait"
        );
        drop(first);
        let _second = waiting.await;
        assert_eq!(b.held_bytes(), 1 << 10);
    }
}
