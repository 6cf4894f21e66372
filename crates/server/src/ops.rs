//! Operations endpoints: `/health` and `/metrics` (Prometheus text format).

use std::fmt::Write;
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::state::{AppState, Histogram};

pub async fn health(State(s): State<Arc<AppState>>) -> Response {
    match s.inner.get() {
        Some(_) => (StatusCode::OK, axum::Json(serde_json::json!({"status": "pass"}))).into_response(),
        None => (
            StatusCode::SERVICE_UNAVAILABLE,
            [("Retry-After", "1")],
            axum::Json(serde_json::json!({"status": "starting", "message": "replaying the write-ahead log"})),
        )
            .into_response(),
    }
}

pub async fn metrics(State(s): State<Arc<AppState>>) -> Response {
    let mut out = String::new();
    let mut counter =
        |name: &str, help: &str, v: u64| write_metric(&mut out, "counter", name, help, v);
    let m = &s.metrics;
    counter(
        "tempora_ingest_bytes_total",
        "Request body bytes received for writes.",
        m.ingest_bytes.get(),
    );
    counter(
        "tempora_ingest_rows_total",
        "Rows written through HTTP.",
        m.ingest_rows.get(),
    );
    counter(
        "tempora_queries_total",
        "SQL statements run over HTTP.",
        m.http_query_latency.count(),
    );
    counter(
        "tempora_query_errors_total",
        "SQL statements that failed.",
        m.query_errors.get(),
    );
    counter(
        "tempora_queries_timed_out_total",
        "Queries stopped at their timeout.",
        m.queries.timed_out.get(),
    );
    counter(
        "tempora_queries_cancelled_total",
        "Queries stopped by a PostgreSQL cancel request or an HTTP client that went away.",
        m.queries.cancelled.get(),
    );
    let mut gauges = vec![(
        "tempora_queries_running",
        "Queries running now (HTTP and PostgreSQL).",
        m.queries.running(),
    )];
    if let Some(inner) = s.inner.get() {
        gauges.push((
            "tempora_query_memory_bytes",
            "Memory held by running queries (bytes).",
            inner.query.memory_in_use() as u64,
        ));
        for (name, help, v) in inner.engine.metrics().counters() {
            counter(name, help, v);
        }
        let plans = inner.query.cache_stats();
        let load = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
        counter(
            "tempora_plan_cache_hits_total",
            "Queries planned from the plan cache's plan of their normalised statement.",
            load(&plans.hits),
        );
        counter(
            "tempora_plan_cache_misses_total",
            "Cacheable queries the plan cache had no current plan for.",
            load(&plans.misses),
        );
        counter(
            "tempora_plan_cache_text_hits_total",
            "Queries run from the plan cache's entry for their text.",
            load(&plans.text_hits),
        );
        let g = &inner.gate.metrics;
        counter(
            "tempora_ingest_queue_full_total",
            "Write requests refused because the ingest queue was full.",
            g.queue_full.load(std::sync::atomic::Ordering::Relaxed),
        );
        gauges.push((
            "tempora_ingest_queue_depth",
            "Parsed batches waiting for the engine.",
            inner.gate.queue_depth() as u64,
        ));
        gauges.push((
            "tempora_ingest_queue_capacity",
            "Capacity of the ingest queue.",
            inner.gate.capacity() as u64,
        ));
        gauges.push((
            "tempora_ingest_buffer_bytes",
            "Bytes of the ingest buffer held by writes (bodies and parsed rows).",
            inner.ingest_buffer.held_bytes() as u64,
        ));
        gauges.push((
            "tempora_memtable_bytes",
            "Bytes held in memtables.",
            inner.engine.memtable_bytes() as u64,
        ));
    }
    gauges.push((
        "tempora_ready",
        "1 once the write-ahead log is replayed.",
        s.inner.get().is_some() as u64,
    ));
    for (name, help, v) in gauges {
        write_metric(&mut out, "gauge", name, help, v);
    }
    let _ = writeln!(
        out,
        "# HELP tempora_query_duration_seconds Latency of queries, by protocol.\n# TYPE tempora_query_duration_seconds histogram"
    );
    for (protocol, h) in [
        ("http", &m.http_query_latency),
        ("postgres", &*m.pg_query_latency),
        ("promql", &m.promql_latency),
    ] {
        write_histogram(&mut out, "tempora_query_duration_seconds", protocol, h);
    }
    ([("Content-Type", "text/plain; version=0.0.4")], out).into_response()
}

/// Appends one metric in the Prometheus text format.
fn write_metric(out: &mut String, kind: &str, name: &str, help: &str, v: u64) {
    let _ = write!(
        out,
        "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {v}\n"
    );
}

/// Appends one labelled series of a histogram (its HELP and TYPE are written once before).
fn write_histogram(out: &mut String, name: &str, protocol: &str, h: &Histogram) {
    let (buckets, sum, count) = h.snapshot();
    for (le, n) in buckets {
        let le = if le.is_infinite() {
            "+Inf".to_string()
        } else {
            le.to_string()
        };
        let _ = writeln!(
            out,
            "{name}_bucket{{protocol=\"{protocol}\",le=\"{le}\"}} {n}"
        );
    }
    let _ = writeln!(out, "{name}_sum{{protocol=\"{protocol}\"}} {sum}");
    let _ = writeln!(out, "{name}_count{{protocol=\"{protocol}\"}} {count}");
}
