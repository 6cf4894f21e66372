//! The PostgreSQL wire protocol, through `datafusion-postgres` (pgwire): simple and extended
//! protocol, `pg_catalog` for psql, psycopg and Grafana. The connection's database name picks
//! the Tempora database: each database has its own session, and these handlers send every
//! statement to the session of the connection's database.

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion_postgres::pgwire;
use datafusion_postgres::{DfSessionService, Parser};
use futures::Sink;
use parking_lot::RwLock;
use pgwire::api::auth::noop::NoopStartupHandler;
use pgwire::api::portal::Portal;
use pgwire::api::query::{ExtendedQueryHandler, SimpleQueryHandler};
use pgwire::api::results::{FieldInfo, Response};
use pgwire::api::stmt::QueryParser;
use pgwire::api::store::PortalStore;
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireServerHandlers, Type};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use tempora_query::QueryService;

type Statement = <Parser as QueryParser>::Statement;

/// Sessions by database, created on first use.
pub struct PgDispatch {
    query: Arc<QueryService>,
    default_db: String,
    services: RwLock<std::collections::HashMap<String, Arc<DfSessionService>>>,
    parser: Arc<DispatchParser>,
}

impl PgDispatch {
    pub fn new(query: Arc<QueryService>, default_db: String) -> Arc<Self> {
        Arc::new_cyclic(|me: &std::sync::Weak<PgDispatch>| Self {
            query,
            default_db,
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
        let svc = d.service(&d.database(client))?;
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
        let db = self.database(client);
        let now = crate::state::now_ns();
        if let Some(r) = self.query.try_fast_insert(&db, query, now).await {
            let n = r.map_err(|e| {
                PgWireError::UserError(Box::new(ErrorInfo::new(
                    "ERROR".into(),
                    e.sqlstate().into(),
                    e.to_string(),
                )))
            })?;
            return Ok(vec![Response::Execution(
                pgwire::api::results::Tag::new("INSERT")
                    .with_oid(0)
                    .with_rows(n as usize),
            )]);
        }
        SimpleQueryHandler::do_query(&*self.service(&db)?, client, query).await
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
        let db = self.database(client);
        ExtendedQueryHandler::do_query(&*self.service(&db)?, client, portal, max_rows).await
    }
}

pub struct Startup;

impl NoopStartupHandler for Startup {}

/// The handlers the pgwire server uses.
pub struct Handlers {
    pub dispatch: Arc<PgDispatch>,
}

impl PgWireServerHandlers for Handlers {
    fn simple_query_handler(&self) -> Arc<impl SimpleQueryHandler> {
        self.dispatch.clone()
    }
    fn extended_query_handler(&self) -> Arc<impl ExtendedQueryHandler> {
        self.dispatch.clone()
    }
    fn startup_handler(&self) -> Arc<impl pgwire::api::auth::StartupHandler> {
        Arc::new(Startup)
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
