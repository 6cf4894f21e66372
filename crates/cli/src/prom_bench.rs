//! Prometheus remote-write benchmarks: `tempora bench capture` records what a real
//! Prometheus sends (so the load is its output, not ours), and `tempora bench load --format
//! prom-rw` replays it to any remote-write endpoint (Tempora, VictoriaMetrics, InfluxDB 1.8's
//! `/api/v1/prom/write`).
//!
//! Capture file: the line `TEMPORA-PRW 1\n`, then per request `u32` body length, `u32` sample
//! count (little endian) and the body as received (snappy-compressed protobuf).
//! `--repeat N` replays the capture N times, each copy's timestamps shifted past the previous
//! one's (decoded, shifted, re-encoded before the clock starts), so every copy is new data.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tempora_bench::load::Body;
use tempora_server::prom::proto::{OwnedSeries, decode_series, put_bytes, put_series};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

const MAGIC: &[u8] = b"TEMPORA-PRW 1\n";

#[derive(clap::Args)]
pub struct CaptureArgs {
    /// Address to listen on (point Prometheus's remote_write url at http://ADDR/api/v1/write).
    #[arg(long, default_value = "127.0.0.1:9201")]
    listen: String,
    #[arg(long)]
    out: PathBuf,
    /// Stop after this many seconds.
    #[arg(long, default_value_t = 60.0)]
    max_secs: f64,
    /// Stop after this many samples.
    #[arg(long, default_value_t = u64::MAX)]
    max_samples: u64,
}

struct Capture {
    file: std::sync::Mutex<std::io::BufWriter<std::fs::File>>,
    requests: AtomicU64,
    samples: AtomicU64,
    max_samples: u64,
    full: tokio::sync::Notify,
}

async fn receive(
    axum::extract::State(c): axum::extract::State<Arc<Capture>>,
    body: axum::body::Bytes,
) -> (axum::http::StatusCode, String) {
    let samples = match snap::raw::Decoder::new()
        .decompress_vec(&body)
        .map_err(|e| e.to_string())
        .and_then(|raw| decode_series(&raw))
    {
        Ok(series) => series.iter().map(|s| s.1.len() as u64).sum::<u64>(),
        Err(e) => return (axum::http::StatusCode::BAD_REQUEST, e),
    };
    {
        let mut f = c.file.lock().unwrap_or_else(|e| e.into_inner());
        let head = [
            (body.len() as u32).to_le_bytes(),
            (samples as u32).to_le_bytes(),
        ]
        .concat();
        if let Err(e) = f.write_all(&head).and_then(|_| f.write_all(&body)) {
            return (axum::http::StatusCode::INTERNAL_SERVER_ERROR, e.to_string());
        }
    }
    c.requests.fetch_add(1, Ordering::Relaxed);
    if c.samples.fetch_add(samples, Ordering::Relaxed) + samples >= c.max_samples {
        c.full.notify_one();
    }
    (axum::http::StatusCode::NO_CONTENT, String::new())
}

pub fn capture_cmd(a: CaptureArgs) -> Res<()> {
    let mut file = std::io::BufWriter::new(
        std::fs::File::create(&a.out).map_err(|e| format!("{}: {e}", a.out.display()))?,
    );
    file.write_all(MAGIC)?;
    let c = Arc::new(Capture {
        file: std::sync::Mutex::new(file),
        requests: AtomicU64::new(0),
        samples: AtomicU64::new(0),
        max_samples: a.max_samples,
        full: tokio::sync::Notify::new(),
    });
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let app = axum::Router::new()
            .route("/api/v1/write", axum::routing::post(receive))
            .layer(axum::extract::DefaultBodyLimit::max(64 << 20))
            .with_state(c.clone());
        let listener = tokio::net::TcpListener::bind(&a.listen).await?;
        eprintln!(
            "capturing remote writes on http://{}/api/v1/write",
            a.listen
        );
        let stop = {
            let c = c.clone();
            let secs = std::time::Duration::from_secs_f64(a.max_secs);
            async move {
                tokio::select! {
                    _ = tokio::time::sleep(secs) => {}
                    _ = c.full.notified() => {}
                }
            }
        };
        axum::serve(listener, app)
            .with_graceful_shutdown(stop)
            .await?;
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    c.file.lock().unwrap_or_else(|e| e.into_inner()).flush()?;
    println!(
        "captured {} requests, {} samples into {}",
        c.requests.load(Ordering::Relaxed),
        c.samples.load(Ordering::Relaxed),
        a.out.display()
    );
    Ok(())
}

/// The requests of a capture file, as (body, samples).
pub fn read_capture(path: &Path) -> Res<Vec<(Vec<u8>, u32)>> {
    let mut f = std::io::BufReader::new(
        std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?,
    );
    let mut magic = vec![0u8; MAGIC.len()];
    f.read_exact(&mut magic)?;
    if magic != MAGIC {
        return Err(format!(
            "{}: not a capture file (no {MAGIC:?} header)",
            path.display()
        )
        .into());
    }
    let mut out = Vec::new();
    let mut head = [0u8; 8];
    loop {
        match f.read_exact(&mut head) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(e.into()),
        }
        let len = u32::from_le_bytes(head[..4].try_into().expect("4 bytes")) as usize;
        let samples = u32::from_le_bytes(head[4..].try_into().expect("4 bytes"));
        if len > 256 << 20 {
            return Err(
                format!("{}: a request of {len} bytes: damaged file", path.display()).into(),
            );
        }
        let mut body = vec![0u8; len];
        f.read_exact(&mut body)
            .map_err(|e| format!("{}: cut short: {e}", path.display()))?;
        out.push((body, samples));
    }
    Ok(out)
}

/// The bodies to send: the capture `repeat` times, copy k with every timestamp moved by k
/// times the capture's time span (plus one step), so no copy overwrites another.
pub fn bodies(path: &Path, repeat: usize) -> Res<Vec<Body>> {
    let captured = read_capture(path)?;
    if repeat <= 1 {
        return Ok(captured
            .into_iter()
            .map(|(bytes, n)| Body {
                bytes,
                rows: u64::from(n),
            })
            .collect());
    }
    let decoded: Vec<Vec<OwnedSeries>> = captured
        .iter()
        .map(|(b, _)| {
            let raw = snap::raw::Decoder::new().decompress_vec(b)?;
            Ok(decode_series(&raw)?)
        })
        .collect::<Res<_>>()?;
    let times = decoded
        .iter()
        .flatten()
        .flat_map(|s| s.1.iter().map(|p| p.1));
    let (lo, hi) = times.fold((i64::MAX, i64::MIN), |(l, h), t| (l.min(t), h.max(t)));
    let span = (hi - lo).max(0) + 1000;
    let mut out = Vec::with_capacity(decoded.len() * repeat);
    for k in 0..repeat as i64 {
        for req in &decoded {
            let mut raw = Vec::new();
            let mut ts = Vec::new();
            let mut n = 0u64;
            for (labels, samples) in req {
                let labels: Vec<(&str, &str)> = labels
                    .iter()
                    .map(|(a, b)| (a.as_str(), b.as_str()))
                    .collect();
                let shifted: Vec<(f64, i64)> =
                    samples.iter().map(|(v, t)| (*v, t + k * span)).collect();
                n += shifted.len() as u64;
                ts.clear();
                put_series(&mut ts, &labels, &shifted);
                put_bytes(&mut raw, 1, &ts);
            }
            let bytes = snap::raw::Encoder::new().compress_vec(&raw)?;
            out.push(Body { bytes, rows: n });
        }
    }
    Ok(out)
}

/// The headers of a remote-write request.
pub fn headers() -> Vec<(String, String)> {
    [
        ("Content-Encoding", "snappy"),
        ("Content-Type", "application/x-protobuf"),
        ("X-Prometheus-Remote-Write-Version", "0.1.0"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}
