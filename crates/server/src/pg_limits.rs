//! Limits and cancellation on the PostgreSQL port.
//!
//! - A connection's limits and settings: `SET statement_timeout = '5s'`,
//!   `SET tempora.query_memory_limit = '64MB'` (both only lower the server's limits),
//!   `SET tempora.operators = off`: read by the query service's grammar, kept in the
//!   connection's metadata ([`store_options`], [`options`]).
//! - Cancellation: a client's CancelRequest (psql's Ctrl-C, psycopg's `cancel()`, JDBC's
//!   `Statement.cancel()`) names the connection by its process id and secret key; the
//!   registry maps that pair to the connection's running query, which then ends with
//!   SQLSTATE 57014.
//! - Both the planning and the streaming of rows are covered: pgwire sends a result's rows
//!   after the handler returns, so the row stream itself is wrapped ([`guard_rows`]).

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use datafusion_postgres::pgwire;
use futures::StreamExt;
use parking_lot::Mutex;
use pgwire::api::ClientInfo;
use pgwire::api::cancel::CancelHandler;
use pgwire::api::results::{Response, SendableRowStream};
use pgwire::error::{ErrorInfo, PgWireError};
use pgwire::messages::cancel::CancelRequest;
use tempora_query::QueryOptions;
use tokio::sync::Notify;

use crate::state::{QueryGauges, RunningQuery};

/// The metadata key of `SET tempora.query_memory_limit`.
const MEMORY_KEY: &str = "tempora.query_memory_limit";
/// Where datafusion-postgres keeps `SET statement_timeout` (milliseconds).
const TIMEOUT_KEY: &str = "statement_timeout_ms";

type Key = (i32, Bytes);

/// Connections that have run a query, by (process id, secret key).
#[derive(Default)]
pub struct CancelRegistry {
    conns: Mutex<HashMap<Key, Weak<ConnCancel>>>,
}

/// One connection's cancel signal; removed from the registry when the connection ends.
pub struct ConnCancel {
    key: Key,
    registry: Weak<CancelRegistry>,
    /// The signal of the query running now (or of the last one).
    current: Mutex<Arc<Notify>>,
}

impl Drop for ConnCancel {
    fn drop(&mut self) {
        if let Some(r) = self.registry.upgrade() {
            r.conns.lock().remove(&self.key);
        }
    }
}

impl CancelRegistry {
    /// A fresh cancel signal for the query `client` starts now.
    pub fn start_query<C: ClientInfo + ?Sized>(self: &Arc<Self>, client: &C) -> Arc<Notify> {
        let (pid, secret) = client.pid_and_secret_key();
        let key = (pid, secret.to_bytes());
        let conn = client
            .session_extensions()
            .get_or_insert_with(|| ConnCancel {
                key: key.clone(),
                registry: Arc::downgrade(self),
                current: Mutex::new(Arc::new(Notify::new())),
            });
        self.conns.lock().insert(key, Arc::downgrade(&conn));
        let signal = Arc::new(Notify::new());
        *conn.current.lock() = signal.clone();
        signal
    }

    /// Signals the running query of the connection `key` names; false when none matches.
    pub fn cancel(&self, pid: i32, secret: Bytes) -> bool {
        let conn = self
            .conns
            .lock()
            .get(&(pid, secret))
            .and_then(Weak::upgrade);
        match conn {
            Some(c) => {
                // A stored permit: the query sees it even if it is not waiting right now.
                c.current.lock().notify_one();
                true
            }
            None => false,
        }
    }
}

/// Hands CancelRequests to the registry.
pub struct Canceller(pub Arc<CancelRegistry>);

#[async_trait]
impl CancelHandler for Canceller {
    async fn on_cancel_request(&self, req: CancelRequest) {
        let found = self.0.cancel(req.pid, req.secret_key.to_bytes());
        tracing::debug!(pid = req.pid, found, "postgres cancel request");
    }
}

fn canceled(why: &str) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        "ERROR".into(),
        "57014".into(),
        format!("canceling statement due to {why}"),
    )))
}

/// Why a query stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Timeout(Duration),
    Cancel,
}

impl Stop {
    pub fn error(self) -> PgWireError {
        match self {
            Stop::Timeout(d) => canceled(&format!("statement timeout ({d:?})")),
            Stop::Cancel => canceled("user request"),
        }
    }
}

/// Waits for the deadline or the cancel signal, whichever comes first.
pub async fn stopped(deadline: tokio::time::Instant, timeout: Duration, cancel: &Notify) -> Stop {
    tokio::select! {
        _ = cancel.notified() => Stop::Cancel,
        _ = tokio::time::sleep_until(deadline) => Stop::Timeout(timeout),
    }
}

/// What a running query's row streams need to stop it: its deadline, its cancel signal,
/// and the gauges that count it.
#[derive(Clone)]
pub struct Guard {
    pub deadline: tokio::time::Instant,
    pub timeout: Duration,
    pub cancel: Arc<Notify>,
    pub gauges: Arc<QueryGauges>,
    /// Held until the last row stream of the query ends.
    pub running: Arc<RunningQuery>,
}

impl Guard {
    /// Waits until the query must stop, counts why, and returns the client's error.
    pub async fn stop(&self) -> PgWireError {
        let stop = stopped(self.deadline, self.timeout, &self.cancel).await;
        match stop {
            Stop::Timeout(_) => self.gauges.timed_out.inc_by(1),
            Stop::Cancel => self.gauges.cancelled.inc_by(1),
        }
        stop.error()
    }

    /// Ends `rows` with a 57014 error at the deadline or on cancel; dropping the inner
    /// stream stops the query's execution.
    pub fn rows(&self, rows: SendableRowStream) -> SendableRowStream {
        let st = (Some(rows), self.clone());
        futures::stream::unfold(st, |(mut rows, guard)| async move {
            let r = rows.as_mut()?;
            tokio::select! {
                biased;
                next = r.next() => next.map(|n| (n.map_err(sqlstate), (rows, guard))),
                e = guard.stop() => Some((Err(e), (None, guard))),
            }
        })
        .boxed()
    }

    /// Wraps the row stream of a response.
    pub fn response(&self, r: Response) -> Response {
        match r {
            Response::Query(mut q) => {
                let rows = std::mem::replace(&mut q.data_rows, futures::stream::empty().boxed());
                q.data_rows = self.rows(rows);
                Response::Query(q)
            }
            other => other,
        }
    }
}

/// Gives a DataFusion error passed through pgwire the SQLSTATE Tempora maps it to (pgwire
/// would send XX000 for all of them).
pub fn sqlstate(e: PgWireError) -> PgWireError {
    match e {
        PgWireError::ApiError(inner) => {
            match inner.downcast::<datafusion::error::DataFusionError>() {
                Ok(df) => {
                    let q = tempora_query::QueryError::DataFusion(*df);
                    PgWireError::UserError(Box::new(ErrorInfo::new(
                        "ERROR".into(),
                        q.sqlstate().into(),
                        q.to_string(),
                    )))
                }
                Err(other) => PgWireError::ApiError(other),
            }
        }
        other => other,
    }
}

/// The metadata keys of Tempora's boolean settings.
const OPERATORS_KEY: &str = "tempora.operators";
const LVC_KEY: &str = "tempora.last_value_cache";
const ROLLUPS_KEY: &str = "tempora.rollups";

/// The limits and settings the connection has set.
pub fn options<C: ClientInfo + ?Sized>(client: &C) -> QueryOptions {
    let md = client.metadata();
    let flag = |k: &str| md.get(k).map(|v| v == "on");
    QueryOptions {
        timeout: md
            .get(TIMEOUT_KEY)
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|&ms| ms > 0)
            .map(Duration::from_millis),
        memory_bytes: md.get(MEMORY_KEY).and_then(|v| v.parse().ok()),
        max_rows: None,
        operators: flag(OPERATORS_KEY),
        last_value_cache: flag(LVC_KEY),
        rollups: flag(ROLLUPS_KEY),
    }
}

/// Keeps a connection's settings after a `SET`, where [`options`] reads them (the timeout
/// where datafusion-postgres's `SHOW statement_timeout` reads it too).
pub fn store_options<C: ClientInfo + ?Sized>(client: &mut C, opts: &QueryOptions) {
    let md = client.metadata_mut();
    let mut put = |k: &str, v: Option<String>| match v {
        Some(v) => {
            md.insert(k.to_string(), v);
        }
        None => {
            md.remove(k);
        }
    };
    put(TIMEOUT_KEY, opts.timeout.map(|t| t.as_millis().to_string()));
    put(MEMORY_KEY, opts.memory_bytes.map(|b| b.to_string()));
    let flag = |b: Option<bool>| b.map(|b| if b { "on" } else { "off" }.to_string());
    put(OPERATORS_KEY, flag(opts.operators));
    put(LVC_KEY, flag(opts.last_value_cache));
    put(ROLLUPS_KEY, flag(opts.rollups));
}
