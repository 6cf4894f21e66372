//! The loader: line protocol from a reader, cut into batches of whole lines, sent by
//! `workers` threads over HTTP (optionally gzipped) to any InfluxDB-compatible write URL; or
//! bodies prepared whole (Prometheus remote-write requests, [`load_bodies`]), one request
//! each, with the headers their protocol needs.
//!
//! With `max_duration`, reading stops at the first whole batch after that time, so a run has a
//! fixed length whatever the input's size.
//!
//! A `503` is retried after its `Retry-After` (at most `max_retries` times per batch); any
//! other non-2xx answer counts the batch as failed and keeps the first answers as messages.

use std::io::{BufRead, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Full write URL, e.g. `http://127.0.0.1:8086/write?db=benchmark`.
    pub url: String,
    pub workers: usize,
    /// Lines per request.
    pub batch_lines: usize,
    pub gzip: bool,
    /// Retries of one batch answered 503.
    pub max_retries: u32,
    /// Stop reading the input after this long (a run of fixed length over an endless or very
    /// large input); batches already read are still sent.
    pub max_duration: Option<Duration>,
    /// Sent as `Authorization: Token …` when the server requires a token.
    pub token: Option<String>,
    /// Extra headers of every request (remote write: `Content-Encoding: snappy` …).
    pub headers: Vec<(String, String)>,
}

/// A request body prepared whole, and the rows (samples) it holds.
pub struct Body {
    pub bytes: Vec<u8>,
    pub rows: u64,
}

/// Counters while loading (shared with the progress callback).
#[derive(Debug, Default)]
pub struct Progress {
    pub rows: AtomicU64,
    pub values: AtomicU64,
    pub bytes: AtomicU64,
    pub retries: AtomicU64,
    pub failed_rows: AtomicU64,
}

#[derive(Debug)]
pub struct LoadReport {
    pub rows: u64,
    pub values: u64,
    pub bytes: u64,
    pub retries: u64,
    pub failed_rows: u64,
    pub seconds: f64,
    /// The first few failure answers.
    pub failures: Vec<String>,
}

impl LoadReport {
    pub fn rows_per_sec(&self) -> f64 {
        self.rows as f64 / self.seconds.max(1e-9)
    }
    pub fn values_per_sec(&self) -> f64 {
        self.values as f64 / self.seconds.max(1e-9)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("reading the input: {0}")]
    Input(#[from] std::io::Error),
    #[error("bad option: {0}")]
    Option(&'static str),
}

/// Field values in one line: `=` signs in its field set (outside quoted strings).
pub fn count_fields(line: &[u8]) -> u64 {
    let mut i = 0;
    // Skip measurement and tags: up to the first unescaped space.
    while i < line.len() && line[i] != b' ' {
        i += if line[i] == b'\\' { 2 } else { 1 };
    }
    let (mut n, mut quoted) = (0, false);
    i += 1;
    while i < line.len() {
        match line[i] {
            b'\\' => i += 1,
            b'"' => quoted = !quoted,
            b'=' if !quoted => n += 1,
            b' ' if !quoted => break,
            _ => {}
        }
        i += 1;
    }
    n
}

struct Batch {
    body: Vec<u8>,
    rows: u64,
    values: u64,
}

/// Loads everything `input` holds; `tick` is called about once a second with the counters
/// and the time since the start.
pub fn load(
    input: impl BufRead + Send,
    opts: &LoadOptions,
    tick: impl Fn(&Progress, Duration) + Sync,
) -> Result<LoadReport, LoadError> {
    if opts.batch_lines == 0 {
        return Err(LoadError::Option("workers and batch size must be positive"));
    }
    drive(opts, tick, |tx, deadline| {
        read_batches(input, opts.batch_lines, deadline, tx)
    })
}

/// Sends each body as one request (in order, over `workers` connections).
pub fn load_bodies(
    bodies: Vec<Body>,
    opts: &LoadOptions,
    tick: impl Fn(&Progress, Duration) + Sync,
) -> Result<LoadReport, LoadError> {
    drive(opts, tick, |tx, deadline| {
        for b in bodies {
            let batch = Batch {
                body: b.bytes,
                rows: b.rows,
                values: b.rows,
            };
            if tx.send(batch).is_err() || deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
        }
        Ok(())
    })
}

/// Runs the workers and the ticker while `produce` hands them batches.
fn drive(
    opts: &LoadOptions,
    tick: impl Fn(&Progress, Duration) + Sync,
    produce: impl FnOnce(&crossbeam::channel::Sender<Batch>, Option<Instant>) -> Result<(), LoadError>,
) -> Result<LoadReport, LoadError> {
    if opts.workers == 0 {
        return Err(LoadError::Option("workers and batch size must be positive"));
    }
    let progress = Arc::new(Progress::default());
    let failures = Arc::new(Failures::default());
    let (tx, rx) = crossbeam::channel::bounded::<Batch>(opts.workers * 2);
    let (done_tx, done_rx) = crossbeam::channel::bounded::<()>(0);
    let started = Instant::now();
    let result = std::thread::scope(|s| {
        let workers: Vec<_> = (0..opts.workers)
            .map(|_| {
                let (rx, p, f) = (rx.clone(), progress.clone(), failures.clone());
                s.spawn(move || worker(rx, opts, &p, &f))
            })
            .collect();
        drop(rx);
        let p = progress.clone();
        let tick = &tick;
        s.spawn(move || {
            while let Err(crossbeam::channel::RecvTimeoutError::Timeout) =
                done_rx.recv_timeout(Duration::from_secs(1))
            {
                tick(&p, started.elapsed());
            }
        });
        let deadline = opts.max_duration.map(|d| started + d);
        let r = produce(&tx, deadline);
        drop(tx);
        for w in workers {
            w.join().expect("loader worker");
        }
        // Stops the ticker (it sees the channel disconnected).
        drop(done_tx);
        r
    });
    result?;
    let seconds = started.elapsed().as_secs_f64();
    let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
    Ok(LoadReport {
        rows: get(&progress.rows),
        values: get(&progress.values),
        bytes: get(&progress.bytes),
        retries: get(&progress.retries),
        failed_rows: get(&progress.failed_rows),
        seconds,
        failures: failures.take(),
    })
}

fn read_batches(
    mut input: impl BufRead,
    batch_lines: usize,
    deadline: Option<Instant>,
    tx: &crossbeam::channel::Sender<Batch>,
) -> Result<(), LoadError> {
    let mut batch = Batch {
        body: Vec::new(),
        rows: 0,
        values: 0,
    };
    let mut line = Vec::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        let t = line.trim_ascii();
        if t.is_empty() || t[0] == b'#' {
            continue;
        }
        batch.values += count_fields(t);
        batch.rows += 1;
        batch.body.extend_from_slice(&line);
        if !line.ends_with(b"\n") {
            batch.body.push(b'\n');
        }
        if batch.rows as usize >= batch_lines {
            let full = std::mem::replace(
                &mut batch,
                Batch {
                    body: Vec::new(),
                    rows: 0,
                    values: 0,
                },
            );
            if tx.send(full).is_err() || deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(());
            }
        }
    }
    if batch.rows > 0 {
        let _ = tx.send(batch);
    }
    Ok(())
}

fn worker(
    rx: crossbeam::channel::Receiver<Batch>,
    opts: &LoadOptions,
    p: &Progress,
    failures: &Failures,
) {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    for b in rx {
        let body = if opts.gzip {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(&b.body).expect("writing to memory");
            e.finish().expect("writing to memory")
        } else {
            b.body
        };
        let mut tries = 0;
        let outcome = loop {
            let mut req = agent.post(&opts.url);
            if let Some(t) = &opts.token {
                req = req.header("Authorization", &format!("Token {t}"));
            }
            if opts.gzip {
                req = req.header("Content-Encoding", "gzip");
            }
            for (k, v) in &opts.headers {
                req = req.header(k, v);
            }
            match req.send(&body[..]) {
                Ok(r) if r.status().is_success() => break Ok(()),
                Ok(r) if r.status().as_u16() == 503 && tries < opts.max_retries => {
                    tries += 1;
                    p.retries.fetch_add(1, Ordering::Relaxed);
                    let wait = r
                        .headers()
                        .get("Retry-After")
                        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
                        .unwrap_or(1);
                    std::thread::sleep(Duration::from_secs(wait.min(30)));
                }
                Ok(mut r) => {
                    let status = r.status();
                    let text = r.body_mut().read_to_string().unwrap_or_default();
                    break Err(format!(
                        "{status}: {}",
                        text.chars().take(300).collect::<String>()
                    ));
                }
                Err(e) => break Err(e.to_string()),
            }
        };
        match outcome {
            Ok(()) => {
                p.rows.fetch_add(b.rows, Ordering::Relaxed);
                p.values.fetch_add(b.values, Ordering::Relaxed);
                p.bytes.fetch_add(body.len() as u64, Ordering::Relaxed);
            }
            Err(msg) => {
                p.failed_rows.fetch_add(b.rows, Ordering::Relaxed);
                failures.push(msg);
            }
        }
    }
}

/// The first few failure messages.
#[derive(Default)]
struct Failures(std::sync::Mutex<Vec<String>>);

impl Failures {
    fn push(&self, m: String) {
        let mut v = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if v.len() < 10 {
            v.push(m);
        }
    }
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_counted_outside_tags_and_strings() {
        for (line, want) in [
            (&b"cpu,host=a u=1i,s=2i 5"[..], 2),
            (b"m v=1", 1),
            (b"m,t=a\\ b=c f=\"x=y z\",g=1 5", 2),
            (b"my\\ m f\\=x=1", 1),
        ] {
            assert_eq!(
                count_fields(line),
                want,
                "{}",
                String::from_utf8_lossy(line)
            );
        }
    }
}
