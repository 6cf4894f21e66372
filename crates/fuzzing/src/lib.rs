//! The bodies of the fuzz targets (issue 26): each takes arbitrary bytes and hands them to
//! one parser of untrusted input or one reader of an on-disk format, as the server does.
//! The contract each checks is the same: any input gives a value or an error — never a
//! panic, a hang or an allocation sized by a length field.
//!
//! `fuzz/` (cargo-fuzz, nightly) drives them with libFuzzer for the long runs
//! (docs/fuzzing.md); `tests/smoke.rs` runs each over valid inputs and seeded mutations of
//! them on stable, so every `cargo test` exercises them.

use bytes::BytesMut;
use datafusion_postgres::pgwire::messages::{DecodeContext, PgWireFrontendMessage};
use tempora_server::auth::scram;
use tempora_server::pg_frames::FrameTracker;

/// A target: a name and its body.
pub type Target = (&'static str, fn(&[u8]));

/// Every target, by the name of its `fuzz/` binary.
pub const TARGETS: [Target; 11] = [
    ("lineproto", lineproto),
    ("prometheus", prometheus),
    ("influxql", influxql),
    ("csv_import", csv_import),
    ("sql", sql),
    ("pg_messages", pg_messages),
    ("wal", wal),
    ("manifest", manifest),
    ("index", index),
    ("data_footer", data_footer),
    ("small_formats", small_formats),
];

/// Line protocol as the write endpoints receive it.
pub fn lineproto(data: &[u8]) {
    let opts = tempora_lineproto::ParseOptions {
        max_line_bytes: 64 << 10,
        ..Default::default()
    };
    let _ = tempora_lineproto::parse(data, &opts);
}

/// The CSV importer (`/api/v1/import`).
pub fn csv_import(data: &[u8]) {
    let spec = tempora_server::csv_import::CsvSpec {
        table: "t".into(),
        time_column: "time".into(),
        tags: vec!["host".into()],
    };
    let _ = tempora_server::csv_import::convert(data, &spec, 1);
}

/// The SQL front door: statements read and classed for permissions (the databases each
/// reads and writes), and the HTTP `params` list.
pub fn sql(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(stmts) = tempora_query::sql::parse(text) {
        for s in &stmts {
            let _ = tempora_query::sql::scope::databases(s, "db");
            let _ = tempora_query::sql::scope::write_parts(s, "db");
            let _ = tempora_server::auth::required::for_statement(s);
        }
    }
    let _ = tempora_server::sql_http::parse_params(text);
}

/// InfluxQL as `/query` reads it: parsed, and every SELECT translated over a measurement
/// with tags and fields (the SQL it gives then goes through the front door's reader).
pub fn influxql(data: &[u8]) {
    use tempora_query::influxql::{Statement, parse, translate};
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(stmts) = parse(text) else {
        return;
    };
    let cols = translate::Columns {
        tags: vec!["host".into(), "region".into()],
        fields: vec![
            ("usage".into(), "float".into()),
            ("n".into(), "integer".into()),
        ],
    };
    for s in stmts {
        if let Statement::Select(sel) = s
            && let Ok(t) = translate::select(&sel, "cpu", &cols, 1_700_000_000_000_000_000)
        {
            let _ = tempora_query::sql::parse(&t.sql);
        }
    }
}

/// Prometheus's inputs: the bytes as a remote write and as a remote read body (after
/// snappy), and as PromQL text through the bounds check, the parser and the planner over a
/// small catalog (`up`, `cpu` with two fields, `latency_bucket`). Plans are made, not run.
pub fn prometheus(data: &[u8]) {
    use tempora_query::promql::{self, Steps};
    let _ = tempora_server::prom::write::decode(data, 1 << 20);
    let _ = tempora_server::prom::read::decode(data);
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    const T: i64 = 1_700_000_000_000;
    let steps = Steps::range(T, T + 3_600_000, 60_000).expect("a valid grid");
    for instant in [false, true] {
        let steps = if instant { Steps::instant(T) } else { steps };
        if let Ok(q) = promql::parse(text, steps, promql::DEFAULT_LOOKBACK_MS, instant) {
            let _ = promql::logical_plan(prom_engine(), "db", &q);
        }
    }
}

/// The catalog PromQL is planned over (made once).
fn prom_engine() -> &'static std::sync::Arc<tempora_storage::Engine> {
    static ENGINE: std::sync::OnceLock<std::sync::Arc<tempora_storage::Engine>> =
        std::sync::OnceLock::new();
    ENGINE.get_or_init(|| {
        let (io, _) = tempora_storage::EngineIo::memory();
        let engine = std::sync::Arc::new(
            tempora_storage::Engine::open(tempora_storage::EngineOptions::default(), io)
                .expect("an in-memory engine opens"),
        );
        let dbs = std::sync::Arc::new(
            tempora_query::catalog::Databases::open(engine.clone(), None).expect("catalog"),
        );
        dbs.create("db").expect("database");
        let q = tempora_query::QueryService::new(dbs, Default::default()).expect("service");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        for sql in [
            "CREATE TABLE up (job TAG, instance TAG, value DOUBLE)",
            "CREATE TABLE cpu (host TAG, usage_user DOUBLE, usage_system DOUBLE)",
            "CREATE TABLE latency_bucket (le TAG, job TAG, value DOUBLE)",
        ] {
            rt.block_on(q.sql("db", sql, 0)).expect("a table");
        }
        engine
    })
}

/// The PostgreSQL port: start-up then extended-protocol messages through pgwire's decoder
/// as the server runs it, the SCRAM messages of our exchange, and every Parse message's SQL
/// through the front door.
pub fn pg_messages(data: &[u8]) {
    let v = scram::Verifier::new("tmp_fuzz", b"salt", 1);
    if let Ok(first) = scram::client_first(data) {
        let sf = scram::server_first(&first, "server", &v);
        let _ = scram::client_final(&v, &first, &sf, data);
    }
    if let Ok((_, Some(first))) = tempora_server::pg_shapes::sasl_initial(data) {
        let _ = scram::client_first(&first);
    }
    for startup in [true, false] {
        // As the server runs it: encryption is negotiated before pgwire's loop (so the
        // start-up message comes first), and every byte passes the frame check first
        // (pg_frames.rs).
        let mut ctx = DecodeContext::default();
        ctx.awaiting_frontend_ssl = false;
        ctx.awaiting_frontend_startup = startup;
        let mut frames = if startup {
            FrameTracker::default()
        } else {
            FrameTracker::default().after_startup()
        };
        if frames.feed(data).is_err() {
            continue;
        }
        let mut buf = BytesMut::from(data);
        for _ in 0..64 {
            match PgWireFrontendMessage::decode(&mut buf, &ctx) {
                Ok(Some(PgWireFrontendMessage::Parse(p))) => {
                    let _ = tempora_query::sql::parse(&p.query);
                }
                Ok(Some(_)) => {
                    ctx.awaiting_frontend_ssl = false;
                    ctx.awaiting_frontend_startup = false;
                }
                Ok(None) | Err(_) => break,
            }
        }
    }
}

/// A write-ahead log segment: its header and frames, as replay reads them and as the
/// check/repair scan reads them.
pub fn wal(data: &[u8]) {
    tempora_wal::fuzzing::read_segment(data);
    // The forgiving scan of `tempora check` and `repair` reads the same bytes past damage.
    let files = [("00000000000000000001.wal".to_string(), data.to_vec())];
    let _ = tempora_wal::scan_log(&files, 1 << 20);
}

/// The manifest: framed edit files and checkpoints.
pub fn manifest(data: &[u8]) {
    tempora_storage::files::manifest::fuzzing::decode_both(data);
}

/// A series index file.
pub fn index(data: &[u8]) {
    let _ = tempora_index::SeriesIndex::decode(data, tempora_index::IndexLimits::default());
}

/// A data file's footer and row-group index, as the file cache decodes them.
pub fn data_footer(data: &[u8]) {
    let _ = tempora_storage::read::sst_cache::CachedSst::decode(
        "fuzz.parquet",
        bytes::Bytes::copy_from_slice(data),
    );
}

/// The small formats; the first byte picks one: the token catalog, a dense block header, a
/// dense log record, a model file.
pub fn small_formats(data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    match which % 4 {
        0 => {
            let _ = tempora_server::auth::store::decode(rest);
        }
        1 => {
            let _ = tempora_storage::dense::header::decode(rest);
        }
        2 => {
            let _ = tempora_storage::dense::record::decode(rest);
        }
        _ => {
            let _ = tempora_ml::model::file::decode("fuzz.tmdl", rest);
        }
    }
}
