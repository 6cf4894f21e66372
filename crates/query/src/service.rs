//! The query service: the one front door every protocol uses.
//!
//! ```text
//! text ─► sql::parse (once) ─► Statement ─► prepare ─► Prepared ─► execute(params) ─► Output
//!                                             │  plan (crate::plan), optimise,
//!                                             └─ kept in the plan cache (crate::cache)
//! ```
//!
//! - HTTP SQL calls [`QueryService::run`] (parse, then prepare and execute each statement);
//!   the PostgreSQL simple protocol does the same per statement; the extended protocol calls
//!   [`QueryService::prepare`] at `Parse` and [`QueryService::execute`] at `Execute`, with
//!   the bound parameters.
//! - One DataFusion session state per database (and per combination of the settings that
//!   change plans), shared by every query of that database; a query's memory pool is its own
//!   ([`QueryPool`]), set in the task context it runs with.
//! - Engine calls (which block) run on the blocking pool, never on the async runtime.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use arrow::array::RecordBatch;
use arrow::datatypes::{DataType, Schema, SchemaRef};
use datafusion::common::ScalarValue;
use datafusion::execution::memory_pool::{FairSpillPool, MemoryPool};
use datafusion::execution::runtime_env::{RuntimeEnv, RuntimeEnvBuilder};

use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::execution::{SendableRecordBatchStream, SessionState, TaskContext};
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::execution_plan::reset_plan_states;
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion::sql::sqlparser::ast;
use futures::StreamExt;
use parking_lot::RwLock;

use crate::catalog::{Databases, TemporaCatalogList};
use crate::error::{QueryError, Result};
use crate::insert::{SimpleInsertPlan, write_all_or_fail};
use crate::limits::{QueryOptions, QueryPool};
use crate::options::TemporaOptions;
use crate::plan::{Command, Planned};
use crate::sql::Statement;
use crate::{SCHEMA, engine_table};

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
    /// Answer latest-value queries from the last-value cache (see [`crate::rules::latest`]).
    pub last_value_cache: bool,
    /// Tempora's plan operators for the monitoring shapes (see [`crate::rules`]).
    pub operators: bool,
    /// Optimised plans kept for reuse (see [`crate::cache`]); 0 turns the cache off.
    pub plan_cache_entries: usize,
    /// Fewest values an aggregate reads for it to be folded on several threads
    /// ([`crate::exec::aggregate::PARALLEL_MIN_VALUES`]).
    pub parallel_min_values: u64,
    /// Memory one model's training may hold: its rows and its fitted series (bytes).
    pub model_memory_bytes: usize,
}

impl Default for QueryLimits {
    fn default() -> Self {
        Self {
            memory_pool_bytes: 2 << 30,
            query_memory_bytes: 1 << 30,
            timeout: Duration::from_secs(300),
            target_partitions: 2,
            last_value_cache: true,
            operators: true,
            plan_cache_entries: crate::cache::DEFAULT_ENTRIES,
            parallel_min_values: crate::exec::aggregate::PARALLEL_MIN_VALUES,
            model_memory_bytes: 1 << 30,
        }
    }
}

type ContextHook = Arc<dyn Fn(&SessionContext, &str) + Send + Sync>;

/// A statement made ready to run: planned and optimised (parameters still open), or a
/// command.
#[derive(Debug)]
pub struct Prepared {
    pub statement: Statement,
    pub kind: PreparedKind,
}

#[derive(Debug)]
pub enum PreparedKind {
    Query {
        /// Optimised; placeholders `$1…$n` for the client's parameters, then the literals the
        /// plan cache turned into parameters.
        plan: Arc<LogicalPlan>,
        /// Values of the placeholders after the client's.
        literals: Vec<ScalarValue>,
        /// The physical plan of `plan`, kept when `plan` has no parameters and the plan may be
        /// run again after its states are reset ([`crate::exec::replay`]).
        physical: Option<Arc<dyn ExecutionPlan>>,
    },
    Command(Command),
    Insert(SimpleInsertPlan),
    /// A PostgreSQL session statement: the protocol answers it.
    Session(Box<ast::Statement>),
}

impl Prepared {
    /// The result's schema (empty for statements without rows).
    pub fn schema(&self) -> SchemaRef {
        match &self.kind {
            PreparedKind::Query { plan, .. } if !is_dml(plan) => {
                Arc::new(plan.schema().as_arrow().clone())
            }
            PreparedKind::Command(Command::Token(t)) => match t {
                crate::sql::TokenStatement::Create(_) => crate::access::created_schema(),
                crate::sql::TokenStatement::Show => crate::access::list_schema(),
                crate::sql::TokenStatement::Drop { .. } => Arc::new(Schema::empty()),
            },
            _ => Arc::new(Schema::empty()),
        }
    }

    /// The types of the client's parameters `$1…$n` (`None`: not known).
    pub fn param_types(&self) -> Vec<Option<DataType>> {
        match &self.kind {
            PreparedKind::Query { plan, literals, .. } => {
                let types = crate::params::parameter_types(plan).unwrap_or_default();
                let n = client_params(&types, literals.len());
                (1..=n)
                    .map(|i| types.get(&format!("${i}")).cloned().flatten())
                    .collect()
            }
            PreparedKind::Insert(i) => vec![None; i.param_count()],
            _ => Vec::new(),
        }
    }
}

/// How many of a plan's placeholders are the client's (the rest are cached literals).
pub(crate) fn client_params(types: &HashMap<String, Option<DataType>>, literals: usize) -> usize {
    types.len().saturating_sub(literals)
}

fn is_dml(plan: &LogicalPlan) -> bool {
    matches!(plan, LogicalPlan::Dml(_))
}

/// What a statement produced.
pub enum Output {
    /// Rows, streamed.
    Rows {
        schema: SchemaRef,
        stream: SendableRecordBatchStream,
    },
    /// Rows written or deleted (`INSERT`, `DELETE`).
    Count { tag: &'static str, rows: u64 },
    /// A command that returns no rows (`CREATE DATABASE`, `SET` …).
    Done { tag: &'static str },
    /// A PostgreSQL session statement the protocol answers.
    Session(Box<ast::Statement>),
}

/// A collected result.
#[derive(Debug)]
pub struct QueryOutput {
    pub schema: SchemaRef,
    pub batches: Vec<RecordBatch>,
}

/// Runs SQL against the databases of one engine.
pub struct QueryService {
    pub dbs: Arc<Databases>,
    limits: QueryLimits,
    runtime: Arc<RuntimeEnv>,
    /// The server-wide pool every query's [`QueryPool`] draws from.
    pool: Arc<dyn MemoryPool>,
    /// Session states by (database, operators, last-value cache, rollups).
    states: RwLock<HashMap<(String, crate::cache::Flags), Arc<SessionState>>>,
    contexts: RwLock<HashMap<String, Arc<SessionContext>>>,
    pub(crate) cache: crate::cache::PlanCache,
    /// Called on each new session (the server installs `pg_catalog` here).
    hook: Option<ContextHook>,
    /// Every database's models (`CREATE MODEL`).
    pub models: Arc<crate::models::Models>,
    /// The token catalog (`CREATE TOKEN`); `None` refuses token statements.
    pub tokens: Option<Arc<dyn crate::access::TokenAdmin>>,
}

impl QueryService {
    pub fn new(dbs: Arc<Databases>, limits: QueryLimits) -> Result<Self> {
        let pool: Arc<dyn MemoryPool> = Arc::new(FairSpillPool::new(limits.memory_pool_bytes));
        let runtime = RuntimeEnvBuilder::new()
            .with_memory_pool(pool.clone())
            .build_arc()?;
        let cache = crate::cache::PlanCache::new(limits.plan_cache_entries);
        let models = crate::models::run::open(dbs.engine().clone(), limits.model_memory_bytes);
        Ok(Self {
            models,
            dbs,
            limits,
            runtime,
            pool,
            states: RwLock::new(HashMap::new()),
            contexts: RwLock::new(HashMap::new()),
            cache,
            hook: None,
            tokens: None,
        })
    }

    /// Sets the token catalog `CREATE TOKEN`, `DROP TOKEN` and `SHOW TOKENS` use.
    pub fn with_token_admin(mut self, tokens: Arc<dyn crate::access::TokenAdmin>) -> Self {
        self.tokens = Some(tokens);
        self
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

    /// The session of `db` (which must exist): its catalogs, functions and rules.
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
            .with_target_partitions(self.limits.target_partitions)
            .with_option_extension(TemporaOptions {
                operators: self.limits.operators,
                last_value_cache: self.limits.last_value_cache,
                rollups: true,
                parallel_min_values: self.limits.parallel_min_values,
            });
        let state = SessionStateBuilder::new()
            .with_config(config)
            .with_runtime_env(self.runtime.clone())
            .with_catalog_list(Arc::new(TemporaCatalogList::new(self.dbs.clone())))
            .with_default_features()
            .with_query_planner(Arc::new(crate::exec::planner::TemporaQueryPlanner))
            .build();
        let ctx = SessionContext::new_with_state(state);
        crate::functions::register_all(&ctx);
        crate::rules::register_all(&ctx);
        ctx.add_analyzer_rule(Arc::new(crate::rules::anomaly::AnomalyRule {
            models: self.models.clone(),
            db: db.to_string(),
        }));
        ctx.register_udtf(
            "forecast",
            Arc::new(crate::functions::forecast::ForecastFn {
                models: self.models.clone(),
                db: db.to_string(),
            }),
        );
        ctx.register_udtf(
            "tempora_columns",
            Arc::new(crate::functions::columns::ColumnsFn {
                engine: self.dbs.engine().clone(),
                db: db.to_string(),
            }),
        );
        ctx.register_udtf(
            "tempora_rollup",
            Arc::new(crate::functions::rollup_table::RollupFn {
                engine: self.dbs.engine().clone(),
                db: db.to_string(),
            }),
        );
        ctx.register_udtf(
            "tempora_tables",
            Arc::new(crate::functions::tables::TablesFn {
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

    /// The session state a query of `db` with `opts` plans and runs in.
    pub fn state(&self, db: &str, opts: &QueryOptions) -> Result<Arc<SessionState>> {
        let operators = opts.operators.unwrap_or(self.limits.operators);
        let lvc = opts
            .last_value_cache
            .unwrap_or(self.limits.last_value_cache);
        let rollups = opts.rollups.unwrap_or(true);
        let key = (db.to_string(), (operators, lvc, rollups));
        if let Some(s) = self.states.read().get(&key) {
            return Ok(s.clone());
        }
        let mut state = self.context(db)?.state();
        let ext = state
            .config_mut()
            .options_mut()
            .extensions
            .get_mut::<TemporaOptions>()
            .expect("every session has Tempora's options");
        ext.operators = operators;
        ext.last_value_cache = lvc;
        ext.rollups = rollups;
        ext.parallel_min_values = self.limits.parallel_min_values;
        let state = Arc::new(state);
        self.states.write().insert(key, state.clone());
        Ok(state)
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

    /// The plan cache's counters.
    pub fn cache_stats(&self) -> &crate::cache::CacheStats {
        &self.cache.stats
    }

    /// Plans in the plan cache now.
    pub fn cache_len(&self) -> usize {
        self.cache.len()
    }

    /// Statements kept by their text in the plan cache now.
    pub fn cache_texts_len(&self) -> usize {
        self.cache.texts_len()
    }

    /// Forgets the sessions of a dropped database.
    pub fn forget(&self, db: &str) {
        self.contexts.write().remove(db);
        self.states.write().retain(|k, _| k.0 != db);
        self.cache.forget_database(db);
    }

    /// Reads every statement of `sql` ([`crate::sql::parse`]).
    pub fn parse(&self, sql: &str) -> Result<Vec<Statement>> {
        crate::sql::parse(sql)
    }

    /// Plans and optimises `stmt` for a session of `db`.
    pub async fn prepare(
        &self,
        db: &str,
        opts: &QueryOptions,
        stmt: &Statement,
    ) -> Result<Arc<Prepared>> {
        let state = self.state(db, opts)?;
        if let Some(p) = self.cache.get(db, opts, &self.limits, stmt, &self.dbs) {
            return Ok(p);
        }
        crate::cache::prepare(self, &state, db, opts, stmt).await
    }

    /// The statement prepared for text `sql` before, ready to run, when the plan cache kept it
    /// ([`crate::cache::text`]). `None`: parse the text and prepare its statements.
    pub fn recall(&self, db: &str, opts: &QueryOptions, sql: &str) -> Option<Arc<Prepared>> {
        self.cache.recall(db, opts, &self.limits, sql, &self.dbs)
    }

    /// Prepares `stmt`, the only statement of text `sql`, as [`Self::prepare`] does, and keeps
    /// it by its text when it is a query without parameters, for [`Self::recall`].
    pub async fn prepare_text(
        &self,
        db: &str,
        opts: &QueryOptions,
        sql: &str,
        stmt: &Statement,
    ) -> Result<Arc<Prepared>> {
        let state = self.state(db, opts)?;
        crate::cache::text::prepare_text(self, &state, db, opts, sql, stmt).await
    }

    /// Plans `stmt` without the cache: the plan and the literals it was given for.
    pub async fn plan_statement(
        &self,
        state: &SessionState,
        db: &str,
        stmt: &Statement,
    ) -> Result<Prepared> {
        let planned = crate::plan::plan(state, &self.dbs, &self.models, db, stmt).await?;
        let kind = match planned {
            Planned::Query(plan) => {
                let plan = state.optimize(&plan)?;
                PreparedKind::Query {
                    plan: Arc::new(plan),
                    literals: Vec::new(),
                    physical: None,
                }
            }
            Planned::Command(c) => PreparedKind::Command(c),
            Planned::Insert(i) => PreparedKind::Insert(i),
            Planned::Session(s) => PreparedKind::Session(s),
        };
        Ok(Prepared {
            statement: stmt.clone(),
            kind,
        })
    }

    /// Runs a prepared statement with the client's parameters. `opts` may be changed by a
    /// `SET`. Rows stream: the caller collects them under the query's timeout.
    pub async fn execute(
        &self,
        db: &str,
        opts: &mut QueryOptions,
        p: &Prepared,
        params: Vec<ScalarValue>,
        now_ns: i64,
    ) -> Result<Output> {
        match &p.kind {
            PreparedKind::Query {
                physical: Some(physical),
                ..
            } if params.is_empty() => {
                let state = self.state(db, opts)?;
                let physical = reset_plan_states(physical.clone())?;
                let task = Arc::new(self.task_context(&state, opts));
                let stream = datafusion::physical_plan::execute_stream(physical, task)?;
                Ok(Output::Rows {
                    schema: stream.schema(),
                    stream,
                })
            }
            PreparedKind::Query { plan, literals, .. } => {
                let state = self.state(db, opts)?;
                let plan = crate::params::bind(plan, params, literals)?;
                let dml = is_dml(&plan);
                let stream = self.run_plan(&state, opts, &plan).await?;
                if dml {
                    let tag = match &p.statement {
                        Statement::Insert(_) => "INSERT",
                        Statement::Update(_) => "UPDATE",
                        _ => "DELETE",
                    };
                    return Ok(Output::Count {
                        tag,
                        rows: dml_count(stream).await?,
                    });
                }
                Ok(Output::Rows {
                    schema: stream.schema(),
                    stream,
                })
            }
            PreparedKind::Insert(ins) => {
                let rows = self.insert(db, ins, &params, now_ns).await?;
                Ok(Output::Count {
                    tag: "INSERT",
                    rows,
                })
            }
            PreparedKind::Command(crate::plan::Command::Token(t)) => {
                match crate::command::token(self, t).await? {
                    Some(batch) => {
                        let schema = batch.schema();
                        let stream =
                            datafusion::physical_plan::stream::RecordBatchStreamAdapter::new(
                                schema.clone(),
                                futures::stream::iter([Ok(batch)]),
                            );
                        Ok(Output::Rows {
                            schema,
                            stream: Box::pin(stream),
                        })
                    }
                    None => Ok(Output::Done {
                        tag: p.statement.tag(),
                    }),
                }
            }
            PreparedKind::Command(c) => {
                crate::command::run(self, db, opts, c, now_ns).await?;
                Ok(Output::Done {
                    tag: p.statement.tag(),
                })
            }
            PreparedKind::Session(s) => Ok(Output::Session(s.clone())),
        }
    }

    /// Physical plan of `plan` in `state`, run with a memory pool of the query's own.
    async fn run_plan(
        &self,
        state: &SessionState,
        opts: &QueryOptions,
        plan: &LogicalPlan,
    ) -> Result<SendableRecordBatchStream> {
        let physical = state
            .query_planner()
            .create_physical_plan(plan, state)
            .await?;
        let task = Arc::new(self.task_context(state, opts));
        Ok(datafusion::physical_plan::execute_stream(physical, task)?)
    }

    /// The task context a query runs with: the session's configuration and a runtime whose
    /// memory pool is the query's own ([`QueryPool`]). The function registries stay empty:
    /// physical plans hold their functions, and copying the registries (hundreds of entries)
    /// for every query would cost more than a small query's execution.
    pub fn task_context(&self, state: &SessionState, opts: &QueryOptions) -> TaskContext {
        let pool = Arc::new(QueryPool::new(self.pool.clone(), self.memory_for(opts)));
        let runtime = Arc::new(RuntimeEnv {
            memory_pool: pool,
            disk_manager: self.runtime.disk_manager.clone(),
            cache_manager: self.runtime.cache_manager.clone(),
            object_store_registry: self.runtime.object_store_registry.clone(),
        });
        TaskContext::new(
            None,
            state.session_id().to_string(),
            state.config().clone(),
            HashMap::new(),
            HashMap::new(),
            HashMap::new(),
            HashMap::new(),
            runtime,
        )
    }

    async fn insert(
        &self,
        db: &str,
        ins: &SimpleInsertPlan,
        params: &[ScalarValue],
        now_ns: i64,
    ) -> Result<u64> {
        let (db, table) = crate::plan::show::resolve(db, &ins.table);
        if !self.dbs.exists(&db) {
            return Err(QueryError::DatabaseNotFound(db));
        }
        let engine = self.dbs.engine().clone();
        let name = engine_table(&db, &table);
        let schema = engine.schema(&name);
        let kinds = |c: &str| schema.as_ref().and_then(|s| s.kind(c));
        let mut batch = ins.bind(&table, params, &kinds, now_ns)?;
        batch.set_table(&name)?;
        tokio::task::spawn_blocking(move || write_all_or_fail(&engine, batch))
            .await
            .map_err(|e| QueryError::Sql(format!("insert task failed: {e}")))?
    }

    /// Runs every statement of `sql` in `db` and collects the last statement's rows (a
    /// statement without rows gives its count, or nothing). `opts` carries `SET`s from one
    /// statement to the next. Under the query's timeout; dropping the future stops it.
    pub async fn run(
        &self,
        db: &str,
        sql: &str,
        now_ns: i64,
        opts: &mut QueryOptions,
        params: Vec<ScalarValue>,
        auth: &dyn crate::access::Authorize,
    ) -> Result<QueryOutput> {
        let recalled = params
            .is_empty()
            .then(|| self.recall(db, opts, sql))
            .flatten();
        let parsed;
        let stmts: &[Statement] = match &recalled {
            Some(p) => std::slice::from_ref(&p.statement),
            None => {
                parsed = self.parse(sql)?;
                &parsed
            }
        };
        // One query without parameters is kept by its text.
        let by_text = stmts.len() == 1 && params.is_empty();
        let mut last = QueryOutput {
            schema: Arc::new(Schema::empty()),
            batches: Vec::new(),
        };
        // Every statement is checked before any runs: a text is refused whole.
        for stmt in stmts {
            auth.statement(stmt, db)?;
        }
        for stmt in stmts {
            let timeout = self.timeout_for(opts);
            let max_rows = opts.max_rows;
            let run = async {
                let p = match &recalled {
                    Some(p) => p.clone(),
                    None if by_text => self.prepare_text(db, opts, sql, stmt).await?,
                    None => self.prepare(db, opts, stmt).await?,
                };
                let out = self.execute(db, opts, &p, params.clone(), now_ns).await?;
                collect(out, max_rows).await
            };
            last = tokio::time::timeout(timeout, run)
                .await
                .map_err(|_| QueryError::Timeout(timeout))??;
        }
        Ok(last)
    }

    /// Runs one statement a protocol built itself (a PromQL query) in `db` under the
    /// caller's permissions and the query's limits, and collects its rows.
    pub async fn run_statement(
        &self,
        db: &str,
        stmt: &Statement,
        opts: &mut QueryOptions,
        auth: &dyn crate::access::Authorize,
        now_ns: i64,
    ) -> Result<QueryOutput> {
        auth.statement(stmt, db)?;
        let timeout = self.timeout_for(opts);
        let max_rows = opts.max_rows;
        let run = async {
            let p = self.prepare(db, opts, stmt).await?;
            let out = self.execute(db, opts, &p, Vec::new(), now_ns).await?;
            collect(out, max_rows).await
        };
        tokio::time::timeout(timeout, run)
            .await
            .map_err(|_| QueryError::Timeout(timeout))?
    }

    /// Runs one SQL text in `db` under the server's limits and collects its result.
    /// Restarts the model trainings a restart interrupted (the server calls it at start).
    pub async fn resume_models(&self) {
        crate::models::run::resume(self).await
    }

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
        let mut opts = *opts;
        self.run(
            db,
            sql,
            now_ns,
            &mut opts,
            Vec::new(),
            &crate::access::Unrestricted,
        )
        .await
    }
}

/// The row count a DML plan returns.
async fn dml_count(mut stream: SendableRecordBatchStream) -> Result<u64> {
    let mut n = 0;
    while let Some(b) = stream.next().await {
        let b = b?;
        if let Some(c) = b
            .column_by_name("count")
            .and_then(|c| c.as_any().downcast_ref::<arrow::array::UInt64Array>())
        {
            n += c.iter().flatten().sum::<u64>();
        }
    }
    Ok(n)
}

/// Collects an output's rows (at most `max_rows`; more is an error).
pub async fn collect(out: Output, max_rows: Option<usize>) -> Result<QueryOutput> {
    match out {
        Output::Rows { schema, mut stream } => {
            let (mut batches, mut rows) = (Vec::new(), 0usize);
            while let Some(b) = stream.next().await {
                let b = b?;
                rows += b.num_rows();
                if let Some(max) = max_rows.filter(|&m| rows > m) {
                    return Err(QueryError::TooManyRows(max));
                }
                batches.push(b);
            }
            Ok(QueryOutput { schema, batches })
        }
        Output::Count { rows, .. } => Ok(count_output(rows)),
        Output::Done { .. } => Ok(QueryOutput {
            schema: Arc::new(Schema::empty()),
            batches: Vec::new(),
        }),
        Output::Session(s) => Err(QueryError::Sql(format!(
            "{s}: a PostgreSQL session statement; over HTTP use the request's parameters \
             (timeout=, memory_limit=) or Tempora's SET statements"
        ))),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_parameter_of_another_integer_type_binds_a_limit() {
        let (io, _) = tempora_storage::EngineIo::memory();
        let engine = Arc::new(
            tempora_storage::Engine::open(tempora_storage::EngineOptions::default(), io).unwrap(),
        );
        let dbs = Arc::new(Databases::open(engine, None).unwrap());
        dbs.create("db").unwrap();
        let q = QueryService::new(dbs, QueryLimits::default()).unwrap();
        let mut opts = QueryOptions::default();
        let out = q
            .run(
                "db",
                "SELECT * FROM generate_series(1, 5) LIMIT $1",
                0,
                &mut opts,
                vec![ScalarValue::Int16(Some(2))],
                &crate::access::Unrestricted,
            )
            .await
            .unwrap();
        let rows: usize = out.batches.iter().map(|b| b.num_rows()).sum();
        assert_eq!(rows, 2);
    }
}
