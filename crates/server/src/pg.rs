//! The PostgreSQL wire protocol, through `datafusion-postgres` (pgwire): simple and extended
//! protocol, `pg_catalog` for psql, psycopg and Grafana. The connection's database name picks
//! the Tempora database: each database has its own session, and these handlers send every
//! statement to the session of the connection's database.

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser;
use datafusion_postgres::pgwire;
use datafusion_postgres::{DfSessionService, Parser};
use futures::Sink;
use parking_lot::RwLock;
use pgwire::api::auth::StartupHandler;
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{FieldInfo, Response};
use pgwire::api::stmt::QueryParser;
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireServerHandlers, Type};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use tempora_query::fast::FastQuery;
use tempora_query::{QueryOptions, QueryService};

use crate::pg_fast;
use crate::pg_limits::{self, CancelRegistry, Canceller, Guard};
use crate::pg_startup::{self, Credentials};
use crate::state::{Histogram, QueryGauges};

type Statement = <Parser as QueryParser>::Statement;

/// Sessions by database, created on first use.
pub struct PgDispatch {
    query: Arc<QueryService>,
    default_db: String,
    services: RwLock<std::collections::HashMap<String, Arc<DfSessionService>>>,
    parser: Arc<DispatchParser>,
    latency: Arc<Histogram>,
    gauges: Arc<QueryGauges>,
    pub cancels: Arc<CancelRegistry>,
}

impl PgDispatch {
    pub fn new(
        query: Arc<QueryService>,
        default_db: String,
        latency: Arc<Histogram>,
        gauges: Arc<QueryGauges>,
    ) -> Arc<Self> {
        Arc::new_cyclic(|me: &std::sync::Weak<PgDispatch>| Self {
            query,
            default_db,
            latency,
            gauges,
            cancels: Arc::default(),
            services: Default::default(),
            parser: Arc::new(DispatchParser {
                dispatch: me.clone(),
            }),
        })
    }

    fn database<C: ClientInfo + ?Sized>(&self, client: &C) -> String {
        client
            .metadata()
            .get("database")
            .cloned()
            .unwrap_or_else(|| self.default_db.clone())
    }

    fn service(&self, db: &str) -> PgWireResult<Arc<DfSessionService>> {
        if let Some(s) = self.services.read().get(db) {
            return Ok(s.clone());
        }
        let ctx = self.query.context(db).map_err(|e| {
            PgWireError::UserError(Box::new(ErrorInfo::new(
                "FATAL".into(),
                e.sqlstate().into(),
                e.to_string(),
            )))
        })?;
        let svc = Arc::new(DfSessionService::new(ctx));
        self.services.write().insert(db.to_string(), svc.clone());
        Ok(svc)
    }
}

impl PgDispatch {
    /// A session for one query with the connection's limits, and the guard that stops it.
    fn start_query<C: ClientInfo + ?Sized>(
        &self,
        client: &C,
        db: &str,
    ) -> PgWireResult<(Arc<SessionContext>, Guard)> {
        let opts = pg_limits::options(client);
        let ctx = self.query.query_context(db, &opts).map_err(user_error)?;
        Ok((ctx, self.guard(client, &opts)))
    }

    /// The guard that stops a query of `client` at its deadline or on cancel.
    fn guard<C: ClientInfo + ?Sized>(&self, client: &C, opts: &QueryOptions) -> Guard {
        let timeout = self.query.timeout_for(opts);
        let running = Arc::new(self.gauges.start());
        // Stops are counted by the guard, not by the running-query drop.
        running.finish();
        Guard {
            deadline: tokio::time::Instant::now() + timeout,
            timeout,
            cancel: self.cancels.start_query(client),
            gauges: self.gauges.clone(),
            running,
        }
    }

    /// Answers a recognised query by the fast path, in `format`; `None` when the fast path
    /// turns it down (DataFusion answers then).
    async fn fast<C: ClientInfo + ?Sized>(
        &self,
        client: &C,
        db: &str,
        q: FastQuery,
        format: &Format,
    ) -> Option<PgWireResult<Response>> {
        let opts = pg_limits::options(client);
        let guard = self.guard(client, &opts);
        let out = tokio::select! {
            r = self.query.run_fast(db, q, &opts) => r?,
            e = guard.stop() => return Some(Err(e)),
        };
        Some(match out {
            Ok(out) => pg_fast::encode_output(client, out, format)
                .map(|r| guard.response(Response::Query(r))),
            Err(e) => Err(user_error(e)),
        })
    }
}

/// The plan of a bound portal that is a plain query with no parameters (a `SELECT`, `WITH`,
/// `VALUES` ... as the statement), which `run_plan` executes; `None` sends the statement
/// through datafusion-postgres (parameters, `INSERT`, `SET`, `SHOW`, transactions, cursors).
fn plain_query(portal: &Portal<Statement>) -> Option<&LogicalPlan> {
    let (_, Some((statement, plan))) = &portal.statement.statement else {
        return None;
    };
    let plain = matches!(statement, sqlparser::ast::Statement::Query(_))
        && portal.parameter_len() == 0
        && plan.get_parameter_types().is_ok_and(|p| p.is_empty());
    plain.then_some(plan)
}

/// Executes a plain query's logical plan and encodes its rows in the portal's formats.
///
/// datafusion-postgres optimises an extended-protocol plan before it makes a DataFrame of it,
/// and the DataFrame optimises it again when it plans its execution: two optimiser passes, of
/// about 0.9 ms each for a plan with ten aggregates (docs/benchmarks.md, "planning costs").
/// Here the DataFrame's pass is the only one, as on the simple protocol and over HTTP.
async fn run_plan<C: ClientInfo + ?Sized>(
    ctx: &SessionContext,
    client: &C,
    portal: &Portal<Statement>,
    plan: &LogicalPlan,
) -> PgWireResult<Response> {
    let df = ctx
        .execute_logical_plan(plan.clone())
        .await
        .map_err(|e| PgWireError::ApiError(Box::new(e)))?;
    let rows =
        crate::pg_encode::dataframe_response(client, df, &portal.result_column_format).await?;
    Ok(Response::Query(rows))
}

/// A query error as the PostgreSQL client sees it.
fn user_error(e: tempora_query::QueryError) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        "ERROR".into(),
        e.sqlstate().into(),
        e.to_string(),
    )))
}

/// Parses with the session of the client's database.
pub struct DispatchParser {
    dispatch: std::sync::Weak<PgDispatch>,
}

impl DispatchParser {
    fn dispatch(&self) -> Arc<PgDispatch> {
        self.dispatch
            .upgrade()
            .expect("dispatch outlives its parser")
    }
}

#[async_trait]
impl QueryParser for DispatchParser {
    type Statement = Statement;

    async fn parse_sql<C>(
        &self,
        client: &C,
        sql: &str,
        types: &[Option<Type>],
    ) -> PgWireResult<Option<Statement>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let d = self.dispatch();
        let db = d.database(client);
        if let Some(q) = d.query.recognize_fast(&db, sql)
            && let Some(stmt) = pg_fast::marker_statement(sql, &q)
        {
            return Ok(Some(stmt));
        }
        let svc = d.service(&db)?;
        let rewritten = tempora_query::rewrite_extensions(sql).map_err(user_error)?;
        let sql = rewritten.as_deref().unwrap_or(sql);
        svc.query_parser().parse_sql(client, sql, types).await
    }

    fn get_parameter_types(&self, stmt: &Statement) -> PgWireResult<Vec<Type>> {
        let d = self.dispatch();
        d.service(&d.default_db)?
            .query_parser()
            .get_parameter_types(stmt)
    }

    fn get_result_schema(
        &self,
        stmt: &Statement,
        format: Option<&pgwire::api::portal::Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        let d = self.dispatch();
        d.service(&d.default_db)?
            .query_parser()
            .get_result_schema(stmt, format)
    }
}

#[async_trait]
impl SimpleQueryHandler for PgDispatch {
    async fn do_query<C>(&self, client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let started = std::time::Instant::now();
        let r = self.simple(client, query).await;
        self.latency.observe(started.elapsed());
        r
    }
}

impl PgDispatch {
    async fn simple<C>(&self, client: &mut C, query: &str) -> PgWireResult<Vec<Response>>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let db = self.database(client);
        let now = crate::state::now_ns();
        if let Some(r) = self.query.try_fast_insert(&db, query, now).await {
            let n = r.map_err(user_error)?;
            return Ok(vec![Response::Execution(
                pgwire::api::results::Tag::new("INSERT")
                    .with_oid(0)
                    .with_rows(n as usize),
            )]);
        }
        if let Some(r) = pg_limits::set_memory_limit(client, query) {
            r?;
            return Ok(vec![Response::Execution(pgwire::api::results::Tag::new(
                "SET",
            ))]);
        }
        if let Some(q) = self.query.recognize_fast(&db, query)
            && let Some(r) = self.fast(client, &db, q, &Format::UnifiedText).await
        {
            return r.map(|r| vec![r]);
        }
        if let Some(out) = self.query.try_fast_explain(&db, query).await {
            let out = out.map_err(user_error)?;
            let rows = pg_fast::encode_output(client, out, &Format::UnifiedText)?;
            return Ok(vec![Response::Query(rows)]);
        }
        let rewritten = tempora_query::rewrite_extensions(query).map_err(user_error)?;
        let query = rewritten.as_deref().unwrap_or(query);
        let (svc, guard) = self.start_query(client, &db)?;
        let svc = DfSessionService::new(svc);
        let responses = tokio::select! {
            r = SimpleQueryHandler::do_query(&svc, client, query) => {
                r.map_err(pg_limits::sqlstate)?
            }
            e = guard.stop() => return Err(e),
        };
        Ok(responses.into_iter().map(|r| guard.response(r)).collect())
    }
}

#[async_trait]
impl ExtendedQueryHandler for PgDispatch {
    type Statement = Statement;
    type QueryParser = DispatchParser;

    fn query_parser(&self) -> Arc<DispatchParser> {
        self.parser.clone()
    }

    async fn do_query<C>(
        &self,
        client: &mut C,
        portal: &Portal<Statement>,
        max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = Statement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let started = std::time::Instant::now();
        let db = self.database(client);
        // A marker is never run as a plan: with parameters bound (which its text does not
        // use), or when the fast path declines, the text is planned by DataFusion.
        let marker = matches!(&portal.statement.statement.1, Some((_, p)) if pg_fast::is_marker(p));
        if marker && portal.parameter_len() == 0 {
            let sql = &portal.statement.statement.0;
            let format = &portal.result_column_format;
            if let Some(q) = self.query.recognize_fast(&db, sql)
                && let Some(r) = self.fast(client, &db, q, format).await
            {
                self.latency.observe(started.elapsed());
                return r;
            }
        }
        let (ctx, guard) = self.start_query(client, &db)?;
        let r = if marker {
            let sql = &portal.statement.statement.0;
            tokio::select! {
                r = pg_fast::run_text(&ctx, client, sql, &portal.result_column_format) => {
                    r.map(|r| guard.response(Response::Query(r))).map_err(pg_limits::sqlstate)
                }
                e = guard.stop() => Err(e),
            }
        } else if let Some(plan) = plain_query(portal) {
            tokio::select! {
                r = run_plan(&ctx, client, portal, plan) => {
                    r.map(|r| guard.response(r)).map_err(pg_limits::sqlstate)
                }
                e = guard.stop() => Err(e),
            }
        } else {
            let svc = DfSessionService::new(ctx);
            tokio::select! {
                r = ExtendedQueryHandler::do_query(&svc, client, portal, max_rows) => {
                    r.map(|r| guard.response(r)).map_err(pg_limits::sqlstate)
                }
                e = guard.stop() => Err(e),
            }
        };
        self.latency.observe(started.elapsed());
        r
    }
}

/// The handlers the pgwire server uses.
pub struct Handlers {
    pub dispatch: Arc<PgDispatch>,
    /// `None`: no password is set and every login is accepted (trust, as a local install).
    pub credentials: Option<Arc<Credentials>>,
}

impl PgWireServerHandlers for Handlers {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        self.dispatch.clone()
    }
    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        self.dispatch.clone()
    }
    fn cancel_handler(&self) -> Arc<impl pgwire::api::cancel::CancelHandler> {
        Arc::new(Canceller(self.dispatch.cancels.clone()))
    }
    fn startup_handler(&self) -> Arc<impl StartupHandler> {
        // Called once per connection: the SASL handler keeps that connection's state.
        Arc::new(pg_startup::StartupKind::new(self.credentials.as_ref()))
    }
}

/// Serves the PostgreSQL protocol on `listener` until the task is dropped.
pub async fn serve(listener: tokio::net::TcpListener, handlers: Arc<Handlers>) {
    loop {
        let Ok((socket, peer)) = listener.accept().await else {
            continue;
        };
        let h = handlers.clone();
        tokio::spawn(async move {
            if let Err(e) = pgwire::tokio::process_socket(socket, None, h).await {
                tracing::debug!(%peer, error = %e, "postgres connection ended with an error");
            }
        });
    }
}
