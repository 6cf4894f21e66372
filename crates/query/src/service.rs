//! The query service: one DataFusion session per database, sharing one runtime (and so one
//! memory pool) across all of them.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use datafusion::execution::memory_pool::FairSpillPool;
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};
use parking_lot::RwLock;

use crate::catalog::{Databases, TemporaCatalogList};
use crate::error::{QueryError, Result};
use crate::insert::{parse_simple_insert, write_all_or_fail};
use crate::{SCHEMA, engine_table};

/// Server-wide query limits.
#[derive(Debug, Clone)]
pub struct QueryLimits {
    /// Memory all running queries may hold together (bytes).
    pub memory_pool_bytes: usize,
    /// Longest a query may run.
    pub timeout: Duration,
    /// Threads a query's plan is split over.
    pub target_partitions: usize,
}

impl Default for QueryLimits {
    fn default() -> Self {
        Self {
            memory_pool_bytes: 2 << 30,
            timeout: Duration::from_secs(300),
            target_partitions: 2,
        }
    }
}

type ContextHook = Arc<dyn Fn(&SessionContext, &str) + Send + Sync>;

/// Runs SQL against the databases of one engine.
pub struct QueryService {
    pub dbs: Arc<Databases>,
    limits: QueryLimits,
    runtime: Arc<RuntimeEnv>,
    contexts: RwLock<HashMap<String, Arc<SessionContext>>>,
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
        let runtime = RuntimeEnvBuilder::new()
            .with_memory_pool(Arc::new(FairSpillPool::new(limits.memory_pool_bytes)))
            .build_arc()?;
        Ok(Self {
            dbs,
            limits,
            runtime,
            contexts: RwLock::new(HashMap::new()),
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

    /// Runs one SQL text in `db` and collects its result, under the query timeout.
    pub async fn sql(&self, db: &str, sql: &str, now_ns: i64) -> Result<QueryOutput> {
        if let Some(n) = self.try_fast_insert(db, sql, now_ns).await {
            return Ok(count_output(n?));
        }
        let ctx = self.context(db)?;
        let rewritten = crate::rewrite_extensions(sql)?;
        let sql = rewritten.as_deref().unwrap_or(sql);
        let run = async {
            let df = ctx.sql(sql).await?;
            let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
            let batches = df.collect().await?;
            Ok::<_, QueryError>(QueryOutput { schema, batches })
        };
        tokio::time::timeout(self.limits.timeout, run)
            .await
            .map_err(|_| QueryError::Timeout(self.limits.timeout))?
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
