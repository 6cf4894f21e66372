//! Per-query limits: a memory cap inside the server-wide pool, a timeout, a row cap.
//!
//! Every query runs with its own [`QueryPool`], which charges each allocation both to the
//! query (at most its limit) and to the server's pool (shared by all queries), so one large
//! query fails alone with a message naming its limit, and many queries together cannot
//! exceed the server's budget. A client may lower its limits per query or per connection
//! (HTTP parameters, PostgreSQL `SET statement_timeout` / `SET tempora.query_memory_limit`),
//! never raise them above the server's.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::memory_pool::{
    MemoryConsumer, MemoryLimit, MemoryPool, MemoryReservation,
};

/// What a client asked of one query, or set for its session; `None` takes the server's value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct QueryOptions {
    pub timeout: Option<Duration>,
    pub memory_bytes: Option<usize>,
    /// Rows a collected result may have; more is an error, not a silent cut.
    pub max_rows: Option<usize>,
    /// `tempora.operators`: Tempora's plan operators for the monitoring shapes.
    pub operators: Option<bool>,
    /// `tempora.last_value_cache`: latest values from the last-value cache.
    pub last_value_cache: Option<bool>,
    /// `tempora.rollups`: bucketed aggregates from the tables' rollups.
    pub rollups: Option<bool>,
}

impl QueryOptions {
    /// Applies `SET` / `RESET` of a Tempora setting.
    pub fn apply(&mut self, set: &crate::sql::SetVariable) -> crate::Result<()> {
        use crate::sql::set::{Setting, parse_bool};
        let bad =
            |e: String| crate::QueryError::InvalidParameter(format!("{}: {e}", set.setting.name()));
        let v = set.value.as_deref();
        match set.setting {
            Setting::StatementTimeout => {
                self.timeout = v.map(parse_duration).transpose().map_err(bad)?.flatten();
            }
            Setting::QueryMemoryLimit => {
                self.memory_bytes = v.map(parse_bytes).transpose().map_err(bad)?.flatten();
            }
            Setting::Operators => {
                self.operators = v.map(|v| parse_bool(set.setting, v)).transpose()?;
            }
            Setting::LastValueCache => {
                self.last_value_cache = v.map(|v| parse_bool(set.setting, v)).transpose()?;
            }
            Setting::Rollups => {
                self.rollups = v.map(|v| parse_bool(set.setting, v)).transpose()?;
            }
        }
        Ok(())
    }
}

/// The query's share of the server's pool.
#[derive(Debug)]
pub struct QueryPool {
    server: Arc<dyn MemoryPool>,
    limit: usize,
    used: AtomicUsize,
}

impl QueryPool {
    pub fn new(server: Arc<dyn MemoryPool>, limit: usize) -> Self {
        Self {
            server,
            limit,
            used: AtomicUsize::new(0),
        }
    }
}

impl std::fmt::Display for QueryPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "query pool: {} of {} bytes",
            self.used.load(Ordering::SeqCst),
            self.limit
        )
    }
}

impl MemoryPool for QueryPool {
    fn name(&self) -> &str {
        "tempora-query"
    }
    fn register(&self, consumer: &MemoryConsumer) {
        self.server.register(consumer)
    }
    fn unregister(&self, consumer: &MemoryConsumer) {
        self.server.unregister(consumer)
    }
    fn grow(&self, reservation: &MemoryReservation, additional: usize) {
        self.used.fetch_add(additional, Ordering::SeqCst);
        self.server.grow(reservation, additional)
    }
    fn shrink(&self, reservation: &MemoryReservation, shrink: usize) {
        let before = self.used.fetch_sub(shrink, Ordering::SeqCst);
        debug_assert!(before >= shrink, "query pool shrinks below zero");
        self.server.shrink(reservation, shrink)
    }
    fn try_grow(&self, reservation: &MemoryReservation, additional: usize) -> DfResult<()> {
        let before = self.used.fetch_add(additional, Ordering::SeqCst);
        if before.saturating_add(additional) > self.limit {
            self.used.fetch_sub(additional, Ordering::SeqCst);
            return Err(DataFusionError::ResourcesExhausted(format!(
                "the query needs more than its memory limit of {} bytes ({} held, {} more \
                 asked by {}); narrow the time range or the series, aggregate more, or raise \
                 query_memory_limit_bytes",
                self.limit,
                before,
                additional,
                reservation.consumer().name()
            )));
        }
        if let Err(e) = self.server.try_grow(reservation, additional) {
            self.used.fetch_sub(additional, Ordering::SeqCst);
            return Err(DataFusionError::ResourcesExhausted(format!(
                "the server's query memory pool (query_memory_bytes) is full; retry when other \
                 queries finish: {}",
                e.find_root()
            )));
        }
        Ok(())
    }
    fn reserved(&self) -> usize {
        self.used.load(Ordering::SeqCst)
    }
    fn memory_limit(&self) -> MemoryLimit {
        MemoryLimit::Finite(self.limit)
    }
}

/// A duration as PostgreSQL's `statement_timeout` takes it: a number of milliseconds, or a
/// number with a unit (`ms`, `s`, `min`, `h`, `d`). `0` means no client limit (`None`).
pub fn parse_duration(v: &str) -> Result<Option<Duration>, String> {
    let v = v.trim().trim_matches('\'');
    let split = v
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(v.len());
    let (num, unit) = (v[..split].trim(), v[split..].trim());
    let n: f64 = num
        .parse()
        .map_err(|_| format!("{v:?} is not a duration (e.g. 500ms, 5s, 2min)"))?;
    let ms = match unit.to_ascii_lowercase().as_str() {
        "" | "ms" => n,
        "s" | "sec" | "secs" => n * 1e3,
        "min" | "m" | "mins" => n * 60e3,
        "h" => n * 3_600e3,
        "d" => n * 86_400e3,
        u => return Err(format!("unknown duration unit {u:?} in {v:?}")),
    };
    if !(0.0..=1e15).contains(&ms) {
        return Err(format!("{v:?} is out of range"));
    }
    Ok((ms > 0.0).then(|| Duration::from_micros((ms * 1e3) as u64)))
}

/// A byte size: a number, optionally with `kB`, `MB`, `GB`, `TB` (powers of 1024, as PostgreSQL's
/// memory settings; `KiB`, `MiB`, `GiB`, `TiB` say the same). `0` means no client limit (`None`).
pub fn parse_bytes(v: &str) -> Result<Option<usize>, String> {
    let v = v.trim().trim_matches('\'');
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (num, unit) = (&v[..split], v[split..].trim());
    let n: u64 = num
        .parse()
        .map_err(|_| format!("{v:?} is not a size (e.g. 64MB)"))?;
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kb" | "k" | "kib" => 1 << 10,
        "mb" | "m" | "mib" => 1 << 20,
        "gb" | "g" | "gib" => 1 << 30,
        "tb" | "t" | "tib" => 1 << 40,
        u => return Err(format!("unknown size unit {u:?} in {v:?}")),
    };
    let bytes = n
        .checked_mul(mult)
        .ok_or_else(|| format!("{v:?} is out of range"))?;
    Ok((bytes > 0).then_some(bytes as usize))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::execution::memory_pool::GreedyMemoryPool;

    #[test]
    fn durations_and_sizes() {
        let d = |ms: u64| Ok(Some(Duration::from_millis(ms)));
        for (text, want) in [
            ("500", d(500)),
            ("500ms", d(500)),
            ("'5s'", d(5_000)),
            ("1.5s", d(1_500)),
            ("2min", d(120_000)),
            ("1h", d(3_600_000)),
            ("0", Ok(None)),
        ] {
            assert_eq!(parse_duration(text), want, "{text}");
        }
        for bad in ["", "fast", "5 parsecs", "-1s", "1e99"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        for (text, want) in [
            ("1024", Some(1024)),
            ("64MB", Some(64 << 20)),
            ("'1GB'", Some(1 << 30)),
            ("8kB", Some(8 << 10)),
            ("1GiB", Some(1 << 30)),
            ("512 MiB", Some(512 << 20)),
            ("0", None),
        ] {
            assert_eq!(parse_bytes(text), Ok(want), "{text}");
        }
        for bad in ["", "lots", "5 parsecs", "-1", "99999999999TB"] {
            assert!(parse_bytes(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_query_fails_at_its_own_limit_and_at_the_servers() {
        let server: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(1000));
        let a: Arc<dyn MemoryPool> = Arc::new(QueryPool::new(server.clone(), 600));
        let b: Arc<dyn MemoryPool> = Arc::new(QueryPool::new(server.clone(), 600));
        let ra = MemoryConsumer::new("a").register(&a);
        let rb = MemoryConsumer::new("b").register(&b);
        ra.try_grow(500).unwrap();
        let own = ra.try_grow(200).unwrap_err().to_string();
        assert!(own.contains("memory limit of 600 bytes"), "{own}");
        // Query b is under its own limit but the server's pool has 500 left.
        let shared = rb.try_grow(501).unwrap_err().to_string();
        assert!(shared.contains("query_memory_bytes"), "{shared}");
        rb.try_grow(500).unwrap();
        assert_eq!(server.reserved(), 1000);
        // Freeing returns memory to both.
        ra.free();
        assert_eq!((a.reserved(), server.reserved()), (0, 500));
        drop(rb);
        assert_eq!(server.reserved(), 0);
    }
}
