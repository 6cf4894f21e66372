//! What request handlers share. The HTTP port answers before the engine has replayed its
//! log: until then `ready()` is `ServerError::Starting` (503) and `/health` says so.

use std::sync::atomic::{AtomicU64, Ordering};
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

/// Server-level counters exported at `/metrics`.
#[derive(Default)]
pub struct ServerMetrics {
    pub ingest_bytes: Counter,
    pub ingest_rows: Counter,
    pub queries: Counter,
    pub query_errors: Counter,
    /// Sum of query latencies in microseconds.
    pub query_micros: Counter,
}

pub struct AppState {
    pub config: Arc<Config>,
    pub inner: OnceLock<Arc<Inner>>,
    pub metrics: ServerMetrics,
}

impl AppState {
    pub fn ready(&self) -> Result<&Arc<Inner>, ServerError> {
        self.inner.get().ok_or(ServerError::Starting)
    }
}
