//! The Tempora server: InfluxDB-compatible writes and SQL over HTTP, the PostgreSQL wire
//! protocol, health and metrics, over one storage engine.
//!
//! Start-up order: both ports are bound first (a taken port fails at once); HTTP answers at
//! once (`/health` is 503 and writes are 503 while the WAL is replayed); then the engine opens,
//! the gate and query service start, and the PostgreSQL port accepts connections. Shutdown
//! (SIGTERM or Ctrl-C) stops accepting requests, drains the ingest queue, flushes memtables
//! and closes the engine.

pub mod auth;
pub mod body;
pub mod check;
pub mod config;
pub mod console;
pub mod csv_import;
pub mod error;
pub mod form;
pub mod import;
pub mod influx;
pub mod influxql_format;
pub mod influxql_http;
pub mod json_ingest;
pub mod memory;
pub mod ops;
pub mod pg;
pub mod pg_encode;
pub mod pg_float;
pub mod pg_frames;
pub mod pg_limits;
pub mod pg_names;
pub mod pg_prepared;
pub mod pg_shapes;
pub mod pg_show;
pub mod pg_startup;
pub mod prom;
pub mod retention;
pub mod sql_http;
pub mod state;
pub mod tls;

use std::sync::Arc;

use axum::Router;
use axum::routing::{get, post};
use tempora_gate::{Gate, GateOptions};
use tempora_query::catalog::Databases;
use tempora_query::{QueryLimits, QueryService};
use tempora_storage::{Engine, EngineIo, EngineOptions};

use memory::Part;

pub use config::Config;
pub use error::ServerError;
use state::{AppState, Inner};

/// The HTTP routes.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/ping", get(influx::ping).head(influx::ping))
        .route("/write", post(influx::write_v1))
        .route("/api/v2/write", post(influx::write_v2))
        .route(
            "/api/v2/buckets",
            get(retention::list).post(retention::create),
        )
        .route(
            "/api/v2/buckets/{id}",
            axum::routing::patch(retention::update).delete(retention::delete),
        )
        .route("/query", get(influx::query).post(influx::query))
        .route("/api/v1/sql", get(sql_http::sql).post(sql_http::sql))
        .route("/api/v1/import", post(import::import))
        .route("/api/v1/ingest/json", post(json_ingest::ingest))
        .route("/api/v1/prom/write", post(prom::write::write))
        .route("/api/v1/write", post(prom::write::write))
        .route("/api/v1/prom/read", post(prom::read::read))
        .route("/api/v1/read", post(prom::read::read))
        .route(
            "/api/v1/query",
            get(prom::api::query).post(prom::api::query),
        )
        .route(
            "/api/v1/query_range",
            get(prom::api::query_range).post(prom::api::query_range),
        )
        .route(
            "/api/v1/series",
            get(prom::api::series).post(prom::api::series),
        )
        .route(
            "/api/v1/labels",
            get(prom::api::labels).post(prom::api::labels),
        )
        .route("/api/v1/label/{name}/values", get(prom::api::label_values))
        .route("/api/v1/status/buildinfo", get(prom::api::buildinfo))
        .route("/api/v1/metadata", get(prom::api::metadata))
        .route(
            "/api/v1/query_exemplars",
            get(prom::api::exemplars).post(prom::api::exemplars),
        )
        .route("/api/v1/rules", get(prom::api::rules))
        .route("/api/v1/alerts", get(prom::api::alerts))
        .route("/health", get(ops::health))
        .route("/metrics", get(ops::metrics))
        .route("/", get(console::page))
        .route("/console/{asset}", get(console::asset))
        .route(
            "/api/v1/tokens",
            get(auth::admin_http::list).post(auth::admin_http::create),
        )
        .route(
            "/api/v1/tokens/{name}",
            axum::routing::delete(auth::admin_http::revoke),
        )
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            auth::http::check,
        ))
        .with_state(state)
}

pub(crate) fn engine_options(c: &Config) -> Result<EngineOptions, ServerError> {
    let mut o = EngineOptions::default();
    if c.workers > 0 {
        o.workers = c.workers;
    }
    o.wal_sync = c.sync_policy().map_err(ServerError::BadRequest)?;
    let (ttl, width) = c
        .storage_defaults()
        .map_err(|(k, v, r)| ServerError::BadRequest(format!("{k} = {v:?}: {r}")))?;
    o.default_ttl_ns = ttl;
    o.default_rollups = c.default_rollups().map_err(ServerError::BadRequest)?;
    o.rollup_min_rows_per_state = c.rollup_min_rows_per_state;
    o.maintenance_interval = std::time::Duration::from_secs(c.maintenance_secs as u64);
    if let Some(w) = width {
        o.partition_ns = w;
        o.partition_auto = false;
    }
    let plan = c.memory_plan().map_err(ServerError::BadRequest)?;
    o.write_stall_bytes = plan.get(Part::Memtables);
    o.flush_threshold_bytes = o.write_stall_bytes / 2;
    o.compaction_memory_bytes = plan.get(Part::Compaction);
    // A compaction holds its output file in memory until it is put: a quarter of its share.
    o.compaction_target_file_bytes = (o.compaction_memory_bytes / 4).clamp(8 << 20, 256 << 20);
    o.index_cache_bytes = plan.get(Part::SeriesCache);
    o.sst_cache_bytes = plan.get(Part::FileCache);
    o.decoded_cache_bytes = plan.get(Part::DecodedCache);
    o.prewarm_percent = c.prewarm_percent;
    Ok(o)
}

/// Opens the token catalog and decides whether authentication is on (refusing a start
/// that would expose the ports without a way to administer them).
pub fn open_access(c: &Config) -> Result<Arc<auth::Access>, ServerError> {
    let store = Arc::new(
        auth::store::TokenStore::open(&c.data_dir)
            .map_err(|e| ServerError::Internal(e.to_string()))?,
    );
    let enabled = auth::mode::decide(auth::mode::Inputs {
        auth: c.auth,
        insecure: c.insecure,
        addrs: [&c.http_addr, &c.pg_addr],
        has_admin_token: store.has_admin(),
        has_operator_password: c.pg_password.is_some(),
    })
    .map_err(ServerError::Internal)?;
    if !enabled
        && [&c.http_addr, &c.pg_addr]
            .iter()
            .any(|a| auth::mode::beyond_loopback(a))
    {
        tracing::warn!("--insecure: serving beyond loopback WITHOUT authentication");
    }
    Ok(Arc::new(auth::Access::new(
        enabled,
        store,
        c.pg_password.as_deref(),
    )))
}

/// Opens the engine and starts everything behind it (blocking: runs WAL replay).
fn open(c: &Config, access: Arc<auth::Access>) -> Result<Inner, ServerError> {
    std::fs::create_dir_all(&c.data_dir).map_err(|e| {
        ServerError::Internal(format!("data directory {}: {e}", c.data_dir.display()))
    })?;
    let io = EngineIo::local(c.data_dir.join("db"))?;
    let engine = Engine::open(engine_options(c)?, io).map_err(|e| match e.is_damage() {
        true => ServerError::Internal(format!("{e}\n{}", check::damage_hint(&c.data_dir))),
        false => e.into(),
    })?;
    let engine = Arc::new(engine);
    let gate = Arc::new(Gate::start(
        engine.clone(),
        GateOptions {
            queue_capacity: c.ingest_queue_batches,
            ..GateOptions::default()
        },
    ));
    let dbs = Arc::new(Databases::open(
        engine.clone(),
        Some(c.data_dir.join("databases.json")),
    )?);
    dbs.create(&c.default_database)?;
    let plan = c.memory_plan().map_err(ServerError::BadRequest)?;
    let limits = QueryLimits {
        memory_pool_bytes: plan.get(Part::QueryPool),
        query_memory_bytes: c.query_limit_bytes(&plan),
        timeout: std::time::Duration::from_secs(c.query_timeout_secs),
        operators: c.query_operators,
        plan_cache_entries: c.plan_cache_entries,
        parallel_min_values: c.query_parallel_min_values,
        model_memory_bytes: c.model_memory_bytes,
        ..QueryLimits::default()
    };
    let query = QueryService::new(dbs, limits)?
        .with_token_admin(access)
        .with_context_hook(|ctx, db| {
            use datafusion_postgres::datafusion_pg_catalog::pg_catalog::{
                context::EmptyContextProvider, setup_pg_catalog,
            };
            if let Err(e) = setup_pg_catalog(ctx, db, EmptyContextProvider) {
                tracing::warn!(db, error = %e, "pg_catalog could not be set up");
            }
        });
    Ok(Inner {
        engine,
        gate,
        query: Arc::new(query),
        ingest_buffer: state::IngestBuffer::new(plan.get(Part::IngestBuffers)),
    })
}

/// Runs the server until `shutdown` resolves, then stops cleanly.
pub async fn run(
    config: Config,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    let bind = |addr: &str| {
        let addr = addr.to_string();
        async move {
            tokio::net::TcpListener::bind(&addr)
                .await
                .map_err(|e| ServerError::Internal(format!("cannot listen on {addr}: {e}")))
        }
    };
    let access = open_access(&config)?;
    let certificate = match (&config.tls_cert, &config.tls_key) {
        (Some(c), Some(k)) => Some(tls::Certificate::open(c, k).map_err(ServerError::Internal)?),
        _ => None,
    };
    if let Some(c) = &certificate {
        reload_on_sighup(c.clone());
    }
    let http = bind(&config.http_addr).await?;
    let pg = bind(&config.pg_addr).await?;
    let config = Arc::new(config);
    let state = Arc::new(AppState {
        access: access.clone(),
        config: config.clone(),
        inner: Default::default(),
        metrics: Default::default(),
    });
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let http_task = serve_http(http, router(state.clone()), certificate.as_ref(), stop_rx)?;
    tracing::info!(http = %config.http_addr, pg = %config.pg_addr, data_dir = %config.data_dir.display(), "listening; opening the engine");
    let (c2, a2) = (config.clone(), access.clone());
    let inner = Arc::new(
        tokio::task::spawn_blocking(move || open(&c2, a2))
            .await
            .map_err(|e| ServerError::Internal(e.to_string()))??,
    );
    let _ = state.inner.set(inner.clone());
    let operator = config
        .pg_password
        .as_deref()
        .map(|p| (config.pg_user.as_str(), p));
    // With authentication on, tokens log in; otherwise only the operator's password, if set.
    let credentials = match access.enabled || operator.is_some() {
        true => Some(Arc::new(pg_startup::Credentials::new(
            operator,
            access.enabled.then(|| access.store.clone()),
            access
                .store
                .decoy_key()
                .map_err(|e| ServerError::Internal(e.to_string()))?,
        ))),
        false => None,
    };
    let handlers = Arc::new(pg::Handlers {
        dispatch: pg::PgDispatch::new(
            inner.query.clone(),
            config.default_database.clone(),
            state.metrics.pg_query_latency.clone(),
            state.metrics.queries.clone(),
            access.clone(),
            operator.map(|(u, _)| u.to_string()),
        ),
        credentials,
    });
    let pg_tls = certificate
        .as_ref()
        .map(|c| tokio_rustls::TlsAcceptor::from(c.server_config(&[b"postgresql"])));
    let pg_task = tokio::spawn(pg::serve(pg, handlers, pg_tls, config.max_body_bytes));
    let models = inner.query.clone();
    tokio::spawn(async move { models.resume_models().await });
    tracing::info!("ready");
    shutdown.await;
    tracing::info!("shutting down: draining writes and flushing memtables");
    let _ = stop_tx.send(true);
    pg_task.abort();
    let _ = http_task.await;
    let inner2 = inner.clone();
    tokio::task::spawn_blocking(move || {
        inner2.gate.shutdown();
        inner2.engine.shutdown()
    })
    .await
    .map_err(|e| ServerError::Internal(e.to_string()))??;
    tracing::info!("stopped");
    Ok(())
}

/// Serves the HTTP routes on `http` (over TLS when a certificate is given) until `stop`.
fn serve_http(
    http: tokio::net::TcpListener,
    app: Router,
    certificate: Option<&Arc<tls::Certificate>>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> Result<tokio::task::JoinHandle<std::io::Result<()>>, ServerError> {
    let stopped = async move {
        let _ = stop.changed().await;
    };
    Ok(match certificate {
        None => tokio::spawn(
            axum::serve(http, app)
                .with_graceful_shutdown(stopped)
                .into_future(),
        ),
        Some(c) => {
            let acceptor = tokio_rustls::TlsAcceptor::from(c.server_config(&[b"http/1.1"]));
            let listener = tls::TlsListener::new(http, acceptor)
                .map_err(|e| ServerError::Internal(format!("TLS listener: {e}")))?;
            tokio::spawn(
                axum::serve(listener, app)
                    .with_graceful_shutdown(stopped)
                    .into_future(),
            )
        }
    })
}

/// Reads the certificate files again on every SIGHUP.
fn reload_on_sighup(certificate: Arc<tls::Certificate>) {
    #[cfg(unix)]
    tokio::spawn(async move {
        use tokio::signal::unix::{SignalKind, signal};
        let Ok(mut hup) = signal(SignalKind::hangup()) else {
            tracing::warn!("no SIGHUP handler: the certificate is read at start only");
            return;
        };
        while hup.recv().await.is_some() {
            match certificate.reload() {
                Ok(()) => tracing::info!("SIGHUP: TLS certificate reloaded"),
                Err(e) => {
                    tracing::error!(error = %e, "SIGHUP: TLS certificate not reloaded; the old one stays")
                }
            }
        }
    });
}

/// Resolves on SIGTERM or Ctrl-C.
pub async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {},
            _ = term.recv() => {},
        }
    }
    #[cfg(not(unix))]
    let _ = ctrl_c.await;
}
