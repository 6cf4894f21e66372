//! The query service: one DataFusion session per database, sharing one runtime (and so one
//! memory pool) across all of them.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use datafusion::execution::memory_pool::{FairSpillPool, MemoryPool};
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use futures::StreamExt;
use parking_lot::RwLock;

use crate::catalog::{Databases, TemporaCatalogList};
use crate::error::{QueryError, Result};
use crate::fast::FastQuery;
use crate::insert::{parse_simple_insert, write_all_or_fail};
use crate::limits::{QueryOptions, QueryPool};
use crate::{SCHEMA, engine_table};

/// Longest SQL text the fast path parses (longer texts go straight to DataFusion).
pub const FAST_PATH_MAX_SQL: usize = 64 * 1024;

/// Server-wide query limits.
#[derive(Debug, Clone)]
pub struct QueryLimits {
    /// Memory all running queries may hold together (bytes).
    pub memory_pool_bytes: usize,
    /// Memory one query may hold (bytes); a client may ask for less.
    pub query_memory_bytes: usize,
    /// Longest a query may run; a client may ask for less.
    pub timeout: Duration,
    /// Threads a query's plan is split over.
    pub target_partitions: usize,
    /// Answer latest-value queries from the last-value cache (see [`crate::latest_rule`]).
    pub last_value_cache: bool,
    /// Answer bucket aggregates by the fast path (see [`crate::fast`]) instead of DataFusion.
    pub fast_path: bool,
}

impl Default for QueryLimits {
    fn default() -> Self {
        Self {
            memory_pool_bytes: 2 << 30,
            query_memory_bytes: 1 << 30,
            timeout: Duration::from_secs(300),
            target_partitions: 2,
            last_value_cache: true,
            fast_path: true,
        }
    }
}

type ContextHook = Arc<dyn Fn(&SessionContext, &str) + Send + Sync>;

/// Runs SQL against the databases of one engine.
pub struct QueryService {
    pub dbs: Arc<Databases>,
    limits: QueryLimits,
    runtime: Arc<RuntimeEnv>,
    /// The server-wide pool every query's [`QueryPool`] draws from.
    pool: Arc<dyn MemoryPool>,
    contexts: RwLock<HashMap<String, Arc<SessionContext>>>,
    /// Recognised fast-path texts ([`crate::fast::memo`]).
    memo: parking_lot::Mutex<crate::fast::memo::Memo>,
    /// Called on each new session (the server installs `pg_catalog` here).
    hook: Option<ContextHook>,
}

/// What a statement produced.
#[derive(Debug)]
pub struct QueryOutput {
    pub schema: SchemaRef,
    pub batches: Vec<RecordBatch>,
}

impl QueryService {
    pub fn new(dbs: Arc<Databases>, limits: QueryLimits) -> Result<Self> {
        let pool: Arc<dyn MemoryPool> = Arc::new(FairSpillPool::new(limits.memory_pool_bytes));
        let runtime = RuntimeEnvBuilder::new()
            .with_memory_pool(pool.clone())
            .build_arc()?;
        Ok(Self {
            dbs,
            limits,
            runtime,
            pool,
            contexts: RwLock::new(HashMap::new()),
            memo: Default::default(),
            hook: None,
        })
    }

    /// Sets a function run on every new session.
    pub fn with_context_hook(
        mut self,
        hook: impl Fn(&SessionContext, &str) + Send + Sync + 'static,
    ) -> Self {
        self.hook = Some(Arc::new(hook));
        self
    }

    pub fn limits(&self) -> &QueryLimits {
        &self.limits
    }

    /// The session of `db` (which must exist).
    pub fn context(&self, db: &str) -> Result<Arc<SessionContext>> {
        if let Some(c) = self.contexts.read().get(db) {
            return Ok(c.clone());
        }
        if !self.dbs.exists(db) {
            return Err(QueryError::DatabaseNotFound(db.to_string()));
        }
        let mut contexts = self.contexts.write();
        if let Some(c) = contexts.get(db) {
            return Ok(c.clone());
        }
        let config = SessionConfig::new()
            .with_default_catalog_and_schema(db, SCHEMA)
            .with_create_default_catalog_and_schema(false)
            .with_information_schema(true)
            .with_target_partitions(self.limits.target_partitions);
        let state = SessionStateBuilder::new()
            .with_config(config)
            .with_runtime_env(self.runtime.clone())
            .with_catalog_list(Arc::new(TemporaCatalogList::new(self.dbs.clone())))
            .with_default_features()
            .build();
        let ctx = SessionContext::new_with_state(state);
        crate::functions::register_all(&ctx);
        if self.limits.last_value_cache {
            ctx.add_analyzer_rule(Arc::new(crate::latest_rule::LatestValueRule));
        }
        ctx.register_udtf(
            "tempora_columns",
            Arc::new(crate::functions::columns::ColumnsFn {
                engine: self.dbs.engine().clone(),
                db: db.to_string(),
            }),
        );
        if let Some(h) = &self.hook {
            h(&ctx, db);
        }
        let ctx = Arc::new(ctx);
        contexts.insert(db.to_string(), ctx.clone());
        Ok(ctx)
    }

    /// A session for one query in `db`: the database's session with a memory pool of its
    /// own, capped at the query's limit and drawing from the server's pool.
    pub fn query_context(&self, db: &str, opts: &QueryOptions) -> Result<Arc<SessionContext>> {
        let base = self.context(db)?;
        let limit = self.memory_for(opts);
        let runtime = RuntimeEnvBuilder::from_runtime_env(&self.runtime)
            .with_memory_pool(Arc::new(QueryPool::new(self.pool.clone(), limit)))
            .build_arc()?;
        let state = SessionStateBuilder::new_from_existing(base.state())
            .with_runtime_env(runtime)
            .build();
        Ok(Arc::new(SessionContext::new_with_state(state)))
    }

    /// The memory limit of a query: the client's, at most the server's.
    pub fn memory_for(&self, opts: &QueryOptions) -> usize {
        opts.memory_bytes
            .map_or(self.limits.query_memory_bytes, |m| {
                m.min(self.limits.query_memory_bytes)
            })
    }

    /// The timeout of a query: the client's, at most the server's.
    pub fn timeout_for(&self, opts: &QueryOptions) -> Duration {
        opts.timeout
            .map_or(self.limits.timeout, |t| t.min(self.limits.timeout))
    }

    /// Memory held by running queries now (bytes).
    pub fn memory_in_use(&self) -> usize {
        self.pool.reserved()
    }

    /// Forgets the session of a dropped database.
    pub fn forget(&self, db: &str) {
        self.contexts.write().remove(db);
    }

    /// Runs a simple insert without the planner; `None` when `sql` is not one.
    pub async fn try_fast_insert(&self, db: &str, sql: &str, now_ns: i64) -> Option<Result<u64>> {
        let engine = self.dbs.engine().clone();
        let db_owned = db.to_string();
        let parsed = parse_simple_insert(
            sql,
            |table, col| {
                engine
                    .schema(&engine_table(&db_owned, table))
                    .and_then(|s| s.kind(col))
            },
            now_ns,
        )?;
        Some(self.write_insert(db, parsed).await)
    }

    async fn write_insert(
        &self,
        db: &str,
        parsed: Result<crate::insert::SimpleInsert>,
    ) -> Result<u64> {
        let ins = parsed?;
        if !self.dbs.exists(db) {
            return Err(QueryError::DatabaseNotFound(db.to_string()));
        }
        let mut batch = ins.batch;
        batch.set_table(&engine_table(db, &ins.table))?;
        let engine = self.dbs.engine().clone();
        tokio::task::spawn_blocking(move || write_all_or_fail(&engine, batch))
            .await
            .map_err(|e| QueryError::Sql(format!("insert task failed: {e}")))?
    }

    /// `sql` as a fast-path query ([`crate::fast`]) of `db`, or `None` when the fast path is
    /// off or the text is not of its shape.
    pub fn recognize_fast(&self, db: &str, sql: &str) -> Option<FastQuery> {
        let head = sql.trim_start();
        let select = head
            .get(..6)
            .is_some_and(|h| h.eq_ignore_ascii_case("select"));
        if !self.limits.fast_path
            || !select
            || sql.len() > FAST_PATH_MAX_SQL
            || !self.dbs.exists(db)
        {
            return None;
        }
        let engine = self.dbs.engine();
        let schema = |t: &str| engine.schema(&engine_table(db, t));
        // Bound first: a guard in the `match` head would live through the arms.
        let remembered = self.memo.lock().get(db, sql, &schema);
        let q = match remembered {
            Some(q) => q,
            None => {
                // The snapshot the text is recognised against, as the recogniser saw it.
                let seen = std::cell::RefCell::new(None);
                let q = crate::fast::recognize(sql, &|t| {
                    let s = schema(t);
                    *seen.borrow_mut() = s.clone();
                    s
                })?;
                if let Some(s) = seen.into_inner() {
                    self.memo.lock().put(db, sql, &q, s);
                }
                q
            }
        };
        // Latest values come from the cache only where the server lets the planner use it.
        let allowed = !matches!(q, FastQuery::Latest(_)) || self.limits.last_value_cache;
        allowed.then_some(q)
    }

    /// Answers `sql` by the fast path when it has its shape; `None` leaves it to DataFusion
    /// (not of the shape, or the fold bailed). Runs under the query's memory limit and
    /// timeout; dropping the future stops the scan at its next region.
    pub async fn try_fast_query(
        &self,
        db: &str,
        sql: &str,
        opts: &QueryOptions,
    ) -> Option<Result<QueryOutput>> {
        let q = self.recognize_fast(db, sql)?;
        self.run_fast(db, q, opts).await
    }

    /// `EXPLAIN` of a fast-path query (see [`crate::fast::explain`]); `None` when `sql` is not
    /// a plain `EXPLAIN` of one.
    pub async fn try_fast_explain(&self, db: &str, sql: &str) -> Option<Result<QueryOutput>> {
        let inner = crate::fast::explain::explained(sql)?;
        let q = self.recognize_fast(db, inner)?;
        let engine = self.dbs.engine().clone();
        let table = engine_table(db, q.table());
        let task =
            tokio::task::spawn_blocking(move || crate::fast::explain::explain(&engine, &table, &q));
        Some(match task.await {
            Err(e) => Err(QueryError::Sql(format!("explain task failed: {e}"))),
            Ok(r) => r.map(|batch| QueryOutput {
                schema: batch.schema(),
                batches: vec![batch],
            }),
        })
    }

    /// Runs a recognised query (see [`Self::try_fast_query`]).
    pub async fn run_fast(
        &self,
        db: &str,
        q: FastQuery,
        opts: &QueryOptions,
    ) -> Option<Result<QueryOutput>> {
        struct CancelOnDrop(Arc<AtomicBool>);
        impl Drop for CancelOnDrop {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Relaxed);
            }
        }
        let engine = self.dbs.engine().clone();
        let table = engine_table(db, q.table());
        let pool: Arc<dyn MemoryPool> =
            Arc::new(QueryPool::new(self.pool.clone(), self.memory_for(opts)));
        let cancel = Arc::new(AtomicBool::new(false));
        let _stop = CancelOnDrop(cancel.clone());
        // A small latest-value read (a few thousand cached rows, well under a millisecond)
        // runs here: handing it to the blocking pool and back costs two thread wake-ups,
        // about as long as the read itself.
        let small = matches!(&q, FastQuery::Latest(_))
            && engine
                .latest_rows_bound(&table)
                .is_some_and(|n| n <= crate::fast::run::INLINE_LATEST_ROWS_MAX);
        let out = if small {
            crate::fast::run::run_fast_query(&engine, &table, &q, &pool, &cancel)
        } else {
            let task = tokio::task::spawn_blocking(move || {
                crate::fast::run::run_fast_query(&engine, &table, &q, &pool, &cancel)
            });
            let timeout = self.timeout_for(opts);
            match tokio::time::timeout(timeout, task).await {
                Err(_) => return Some(Err(QueryError::Timeout(timeout))),
                Ok(Err(e)) => {
                    return Some(Err(QueryError::Sql(format!("query task failed: {e}"))));
                }
                Ok(Ok(r)) => r,
            }
        };
        match out {
            Ok(Some(batch)) => Some(match opts.max_rows {
                Some(max) if batch.num_rows() > max => Err(QueryError::TooManyRows(max)),
                _ => Ok(QueryOutput {
                    schema: batch.schema(),
                    batches: vec![batch],
                }),
            }),
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        }
    }

    /// Runs one SQL text in `db` under the server's limits and collects its result.
    pub async fn sql(&self, db: &str, sql: &str, now_ns: i64) -> Result<QueryOutput> {
        self.sql_with(db, sql, now_ns, &QueryOptions::default())
            .await
    }

    /// Runs one SQL text in `db` under the client's limits (at most the server's) and
    /// collects its result. Dropping the future stops the query.
    pub async fn sql_with(
        &self,
        db: &str,
        sql: &str,
        now_ns: i64,
        opts: &QueryOptions,
    ) -> Result<QueryOutput> {
        if let Some(n) = self.try_fast_insert(db, sql, now_ns).await {
            return Ok(count_output(n?));
        }
        if let Some(out) = self.try_fast_query(db, sql, opts).await {
            return out;
        }
        if let Some(out) = self.try_fast_explain(db, sql).await {
            return out;
        }
        let ctx = self.query_context(db, opts)?;
        let rewritten = crate::rewrite_extensions(sql)?;
        let sql = rewritten.as_deref().unwrap_or(sql);
        let run = async {
            let df = ctx.sql(sql).await?;
            let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
            let mut stream = df.execute_stream().await?;
            let (mut batches, mut rows) = (Vec::new(), 0usize);
            while let Some(b) = stream.next().await {
                let b = b?;
                rows += b.num_rows();
                if let Some(max) = opts.max_rows.filter(|&m| rows > m) {
                    return Err(QueryError::TooManyRows(max));
                }
                batches.push(b);
            }
            Ok::<_, QueryError>(QueryOutput { schema, batches })
        };
        let timeout = self.timeout_for(opts);
        tokio::time::timeout(timeout, run)
            .await
            .map_err(|_| QueryError::Timeout(timeout))?
    }
}

/// The one-row `count` result of a write.
pub fn count_output(n: u64) -> QueryOutput {
    let schema = Arc::new(arrow::datatypes::Schema::new(vec![
        arrow::datatypes::Field::new("count", arrow::datatypes::DataType::UInt64, false),
    ]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(arrow::array::UInt64Array::from(vec![n]))],
    )
    .expect("count batch matches its schema");
    QueryOutput {
        schema,
        batches: vec![batch],
    }
}
