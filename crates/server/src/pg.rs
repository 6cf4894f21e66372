//! The PostgreSQL wire protocol (pgwire): simple and extended protocol, `pg_catalog` for psql,
//! psycopg, JDBC and Grafana. The connection's database name picks the Tempora database.
//!
//! Every statement goes through the query service's one front door: the simple protocol reads
//! the text with [`QueryService::parse`] and prepares and executes each statement; the
//! extended protocol prepares at `Parse` (the plan cache makes a repeated text cheap) and
//! executes at `Execute` with the bound parameters. PostgreSQL session statements (`BEGIN`,
//! `SET DateStyle`, `SHOW x`, cursors) are answered by datafusion-postgres's session hooks.

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::common::ScalarValue;
use datafusion::prelude::SessionContext;
use datafusion::sql::sqlparser;
use datafusion_postgres::arrow_pg::datatypes::{
    arrow_schema_to_pg_fields, df::deserialize_parameters, into_pg_type,
};
use datafusion_postgres::hooks::QueryHook;
use datafusion_postgres::hooks::cursor::CursorStatementHook;
use datafusion_postgres::hooks::set_show::SetShowHook;
use datafusion_postgres::hooks::transactions::TransactionStatementHook;
use datafusion_postgres::pgwire;
use futures::{Sink, StreamExt};
use pgwire::api::auth::StartupHandler;
use pgwire::api::portal::{Format, Portal};
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{FieldInfo, Response, Tag};
use pgwire::api::stmt::QueryParser;
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireServerHandlers, Type};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use pgwire::types::format::FormatOptions;
use tempora_query::sql::Statement;
use tempora_query::{Output, Prepared, QueryOptions, QueryService};

use crate::pg_limits::{self, CancelRegistry, Canceller, Guard};
use crate::pg_prepared::{PgStatement, PreparedNode, ast_of};
use crate::pg_startup::{self, Credentials};
use crate::state::{Histogram, QueryGauges};

/// The PostgreSQL handlers of one server.
pub struct PgDispatch {
    query: Arc<QueryService>,
    default_db: String,
    parser: Arc<DispatchParser>,
    hooks: Vec<Arc<dyn QueryHook>>,
    latency: Arc<Histogram>,
    gauges: Arc<QueryGauges>,
    pub cancels: Arc<CancelRegistry>,
    /// Who may run what (issue 26).
    access: Arc<crate::auth::Access>,
    /// `pg_user` when `pg_password` is set: that login is the operator (admin).
    operator: Option<String>,
}

impl PgDispatch {
    pub fn new(
        query: Arc<QueryService>,
        default_db: String,
        latency: Arc<Histogram>,
        gauges: Arc<QueryGauges>,
        access: Arc<crate::auth::Access>,
        operator: Option<String>,
    ) -> Arc<Self> {
        Arc::new_cyclic(|me: &std::sync::Weak<PgDispatch>| Self {
            access,
            operator,
            query,
            default_db,
            latency,
            gauges,
            cancels: Arc::default(),
            hooks: vec![
                Arc::new(CursorStatementHook),
                Arc::new(crate::pg_show::ShowSettings),
                Arc::new(SetShowHook),
                Arc::new(TransactionStatementHook),
            ],
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

    /// Who `client` logged in as: with authentication on, the operator or the token of its
    /// user name (the login checked the password).
    fn principal<C: ClientInfo + ?Sized>(&self, client: &C) -> crate::auth::Principal {
        use crate::auth::Principal;
        if !self.access.enabled {
            return Principal::Everyone;
        }
        let user = client.metadata().get("user").cloned().unwrap_or_default();
        match self.operator.as_deref() == Some(user.as_str()) {
            true => Principal::Operator,
            false => Principal::Token(user),
        }
    }

    /// Refuses `stmt` unless `client` may run it in `db`.
    fn authorize<C: ClientInfo + ?Sized>(
        &self,
        client: &C,
        stmt: &Statement,
        db: &str,
    ) -> PgWireResult<()> {
        use tempora_query::access::Authorize;
        self.access
            .statements(self.principal(client))
            .statement(stmt, db)
            .map_err(user_error)
    }

    fn context(&self, db: &str) -> PgWireResult<Arc<SessionContext>> {
        self.query.context(db).map_err(|e| {
            PgWireError::UserError(Box::new(ErrorInfo::new(
                "FATAL".into(),
                e.sqlstate().into(),
                e.to_string(),
            )))
        })
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

    /// Prepares and executes one statement (not a session statement) for `client`. `text`:
    /// the statement is the whole text the client sent (kept by its text when it can be).
    async fn run<C>(
        &self,
        client: &mut C,
        prepared: Option<Arc<Prepared>>,
        text: Option<&str>,
        stmt: &Statement,
        params: Vec<ScalarValue>,
        format: &Format,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ?Sized,
    {
        let db = self.database(client);
        self.authorize(client, stmt, &db)?;
        let mut opts = pg_limits::options(client);
        let guard = self.guard(client, &opts);
        let work = async {
            let p = match (prepared, text) {
                (Some(p), _) => p,
                (None, Some(sql)) => self.query.prepare_text(&db, &opts, sql, stmt).await?,
                (None, None) => self.query.prepare(&db, &opts, stmt).await?,
            };
            let now = crate::state::now_ns();
            self.query.execute(&db, &mut opts, &p, params, now).await
        };
        let out = tokio::select! {
            r = work => r.map_err(user_error)?,
            e = guard.stop() => return Err(e),
        };
        if matches!(stmt, Statement::Set(_)) {
            pg_limits::store_options(client, &opts);
        }
        let r = response(client, out, format, stmt)?;
        Ok(guard.response(r))
    }

    /// A session statement, by the first hook that answers it.
    async fn session<C>(
        &self,
        client: &mut C,
        s: &sqlparser::ast::Statement,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let ctx = self.context(&self.database(client))?;
        for hook in &self.hooks {
            if let Some(r) = hook.handle_simple_query(s, &ctx, client).await {
                return r;
            }
        }
        no_op(s)
    }
}

/// Session statements no hook answers: those that change nothing here are acknowledged.
fn no_op(s: &sqlparser::ast::Statement) -> PgWireResult<Response> {
    use sqlparser::ast::Statement as S;
    match s {
        S::Discard { .. } => Ok(Response::Execution(Tag::new("DISCARD ALL"))),
        S::Deallocate { .. } => Ok(Response::Execution(Tag::new("DEALLOCATE"))),
        other => Err(user_error(tempora_query::sql::unsupported(&format!(
            "{other}"
        )))),
    }
}

/// An output as a pgwire response, rows in `format`.
fn response<C: ClientInfo + ?Sized>(
    client: &C,
    out: Output,
    format: &Format,
    stmt: &Statement,
) -> PgWireResult<Response> {
    Ok(match out {
        Output::Rows { schema, stream } => {
            let opts = Arc::new(FormatOptions::from_client_metadata(client.metadata()));
            let query = match stmt {
                Statement::Query(q) => Some(q.query.as_ref()),
                _ => None,
            };
            let schema = crate::pg_names::renamed(&schema, query);
            let fields = arrow_schema_to_pg_fields(&schema, format, Some(opts))?;
            let batches = stream.map(|b| b.map_err(|e| PgWireError::ApiError(Box::new(e))));
            Response::Query(crate::pg_encode::query_response(Arc::new(fields), batches))
        }
        Output::Count { tag, rows } => {
            let t = Tag::new(tag).with_rows(rows as usize);
            Response::Execution(if tag == "INSERT" { t.with_oid(0) } else { t })
        }
        Output::Done { tag } => Response::Execution(Tag::new(tag)),
        Output::Session(s) => {
            return Err(user_error(tempora_query::sql::unsupported(&s.to_string())));
        }
    })
}

/// A query error as the PostgreSQL client sees it.
pub fn user_error(e: tempora_query::QueryError) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        "ERROR".into(),
        e.sqlstate().into(),
        e.to_string(),
    )))
}

/// Parses with the query service, for the client's database.
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
    type Statement = PgStatement;

    async fn parse_sql<C>(
        &self,
        client: &C,
        sql: &str,
        _types: &[Option<Type>],
    ) -> PgWireResult<Option<PgStatement>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let d = self.dispatch();
        let db = d.database(client);
        let opts = pg_limits::options(client);
        if let Some(p) = d.query.recall(&db, &opts, sql) {
            d.authorize(client, &p.statement, &db)?;
            let ast = ast_of(&p.statement);
            let plan = PreparedNode::plan(p).map_err(|e| PgWireError::ApiError(Box::new(e)))?;
            return Ok(Some((sql.to_string(), Some((ast, plan)))));
        }
        let mut stmts = d.query.parse(sql).map_err(user_error)?;
        let stmt = match (stmts.pop(), stmts.is_empty()) {
            (None, _) => return Ok(None),
            (Some(s), true) => s,
            (Some(_), false) => {
                return Err(user_error(tempora_query::QueryError::Sql(
                    "the extended protocol takes one statement at a time".into(),
                )));
            }
        };
        d.authorize(client, &stmt, &db)?;
        if let Statement::Session(s) = &stmt {
            let ctx = d.context(&db)?;
            for hook in &d.hooks {
                if let Some(plan) = hook.handle_extended_parse_query(s, &ctx, client).await {
                    return Ok(Some((sql.to_string(), Some(((**s).clone(), plan?)))));
                }
            }
            return no_op(s).map(|_| {
                let plan = datafusion::logical_expr::LogicalPlan::EmptyRelation(
                    datafusion::logical_expr::EmptyRelation {
                        produce_one_row: false,
                        schema: Arc::new(datafusion::common::DFSchema::empty()),
                    },
                );
                Some((sql.to_string(), Some(((**s).clone(), plan))))
            });
        }
        let prepared = d
            .query
            .prepare_text(&db, &opts, sql, &stmt)
            .await
            .map_err(user_error)?;
        let plan = PreparedNode::plan(prepared).map_err(|e| PgWireError::ApiError(Box::new(e)))?;
        Ok(Some((sql.to_string(), Some((ast_of(&stmt), plan)))))
    }

    fn get_parameter_types(&self, stmt: &PgStatement) -> PgWireResult<Vec<Type>> {
        let Some((_, plan)) = &stmt.1 else {
            return Ok(vec![]);
        };
        match PreparedNode::of(plan) {
            Some(p) => p
                .param_types()
                .iter()
                .map(|t| t.as_ref().map_or(Ok(Type::UNKNOWN), into_pg_type))
                .collect(),
            None => Ok(vec![]),
        }
    }

    fn get_result_schema(
        &self,
        stmt: &PgStatement,
        format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        let Some((parsed, plan)) = &stmt.1 else {
            return Ok(vec![]);
        };
        let schema = match PreparedNode::of(plan) {
            Some(p) => p.schema(),
            None => Arc::new(plan.schema().as_arrow().clone()),
        };
        let query = match parsed {
            sqlparser::ast::Statement::Query(q) => Some(q.as_ref()),
            _ => None,
        };
        let schema = crate::pg_names::renamed(&schema, query);
        arrow_schema_to_pg_fields(&schema, format.unwrap_or(&Format::UnifiedText), None)
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
        let opts = pg_limits::options(client);
        if let Some(p) = self.query.recall(&self.database(client), &opts, query) {
            let stmt = p.statement.clone();
            let r = self
                .run(
                    client,
                    Some(p),
                    None,
                    &stmt,
                    Vec::new(),
                    &Format::UnifiedText,
                )
                .await;
            self.latency.observe(started.elapsed());
            return Ok(vec![r?]);
        }
        let stmts = self.query.parse(query).map_err(user_error)?;
        let text = (stmts.len() == 1).then_some(query);
        if stmts.is_empty() {
            return Ok(vec![Response::EmptyQuery]);
        }
        // A text is refused whole when any of its statements is.
        let db = self.database(client);
        for stmt in &stmts {
            self.authorize(client, stmt, &db)?;
        }
        let mut out = Vec::with_capacity(stmts.len());
        for stmt in &stmts {
            let r = match stmt {
                Statement::Session(s) => self.session(client, s).await,
                _ => {
                    self.run(client, None, text, stmt, Vec::new(), &Format::UnifiedText)
                        .await
                }
            };
            out.push(r?);
        }
        self.latency.observe(started.elapsed());
        Ok(out)
    }
}

#[async_trait]
impl ExtendedQueryHandler for PgDispatch {
    type Statement = PgStatement;
    type QueryParser = DispatchParser;

    fn query_parser(&self) -> Arc<DispatchParser> {
        self.parser.clone()
    }

    async fn do_query<C>(
        &self,
        client: &mut C,
        portal: &Portal<PgStatement>,
        _max_rows: usize,
    ) -> PgWireResult<Response>
    where
        C: ClientInfo + ClientPortalStore + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::PortalStore: PortalStore<Statement = PgStatement>,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let started = std::time::Instant::now();
        let Some((stmt, plan)) = &portal.statement.statement.1 else {
            return Ok(Response::EmptyQuery);
        };
        let r = match PreparedNode::of(plan) {
            Some(p) => {
                let types = p.param_types();
                let refs: Vec<Option<&arrow::datatypes::DataType>> =
                    types.iter().map(Option::as_ref).collect();
                let params = deserialize_parameters(portal, &refs)?;
                let params: Vec<ScalarValue> = match params {
                    datafusion::common::ParamValues::List(l) => {
                        l.into_iter().map(|v| v.value).collect()
                    }
                    datafusion::common::ParamValues::Map(_) => Vec::new(),
                };
                let statement = p.statement.clone();
                self.run(
                    client,
                    Some(p.clone()),
                    None,
                    &statement,
                    params,
                    &portal.result_column_format,
                )
                .await
            }
            None => {
                let ctx = self.context(&self.database(client))?;
                let params = datafusion::common::ParamValues::List(vec![]);
                let mut handled = None;
                for hook in &self.hooks {
                    if let Some(r) = hook
                        .handle_extended_query(stmt, plan, &params, &ctx, client)
                        .await
                    {
                        handled = Some(r);
                        break;
                    }
                }
                handled.unwrap_or_else(|| no_op(stmt))
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
pub async fn serve(
    listener: tokio::net::TcpListener,
    handlers: Arc<Handlers>,
    tls: Option<pgwire::tokio::TlsAcceptor>,
    max_body: usize,
) {
    loop {
        let Ok((socket, peer)) = listener.accept().await else {
            continue;
        };
        let (h, tls) = (handlers.clone(), tls.clone());
        tokio::spawn(async move {
            if let Err(e) = crate::pg_frames::process_socket(socket, tls, h, max_body).await {
                tracing::debug!(%peer, error = %e, "postgres connection ended with an error");
            }
        });
    }
}
