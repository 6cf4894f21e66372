//! In-process ingest of TSBS cpu-only-shaped rows with sync on, then bytes per value at rest
//! after compaction, then memory per active series.
//!
//! Run: `cargo bench -p tempora-storage --bench ingest` (env: HOSTS, STEPS, CLIENTS, BATCH,
//! SERIES for the memory phase, DATA_DIR for where files go).

#[path = "tsbs.rs"]
mod tsbs;

use std::sync::Arc;
use std::time::Instant;

use tempora_storage::{Engine, EngineIo, EngineOptions};

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn dir_bytes(p: &std::path::Path, ext: &str) -> u64 {
    let mut n = 0;
    for e in std::fs::read_dir(p).into_iter().flatten().flatten() {
        let path = e.path();
        if path.is_dir() {
            n += dir_bytes(&path, ext);
        } else if path.extension().is_some_and(|x| x == ext) {
            n += e.metadata().map(|m| m.len()).unwrap_or(0);
        }
    }
    n
}

fn rss_bytes() -> u64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .unwrap_or(0)
        * 1024
}

fn main() {
    let hosts = env("HOSTS", 4000);
    let steps = env("STEPS", 250);
    let clients = env("CLIENTS", 2);
    let batch = env("BATCH", 10_000).min(hosts);
    let base =
        std::env::var("DATA_DIR").unwrap_or_else(|_| std::env::temp_dir().display().to_string());
    let dir = tempfile::tempdir_in(base).unwrap();
    let flush_mb = env("FLUSH_MB", 512);
    let opts = EngineOptions {
        flush_threshold_bytes: flush_mb << 20,
        write_stall_bytes: (2 * flush_mb).max(1024) << 20,
        ..EngineOptions::default()
    };
    let engine = Arc::new(Engine::open(opts, EngineIo::local(dir.path()).unwrap()).unwrap());

    // Pre-generate batches so the generator is not measured.
    let mut gen_ = tsbs::Gen::new(hosts, 42);
    let mut batches = Vec::new();
    for step in 0..steps as i64 {
        let mut h = 0;
        while h < hosts {
            let end = (h + batch).min(hosts);
            batches.push(gen_.batch(step, h..end));
            h = end;
        }
    }
    let rows: usize = batches.iter().map(|b| b.len()).sum();
    let queue = Arc::new(parking_lot::Mutex::new(batches));
    let start = Instant::now();
    let threads: Vec<_> = (0..clients)
        .map(|_| {
            let (q, e) = (queue.clone(), engine.clone());
            std::thread::spawn(move || {
                loop {
                    let Some(b) = q.lock().pop() else { break };
                    let out = e.write(b).unwrap();
                    assert!(out.rejected.is_empty());
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "ingest: {rows} rows ({} values) in {secs:.2} s = {:.0} rows/s, {:.0} values/s (hosts={hosts}, clients={clients}, batch={batch}, sync on)",
        rows * 10,
        rows as f64 / secs,
        rows as f64 * 10.0 / secs
    );
    let t = Instant::now();
    engine.flush().unwrap();
    println!("flush: {:.2} s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let jobs = engine.compact().unwrap();
    println!(
        "compaction: {jobs} jobs in {:.2} s",
        t.elapsed().as_secs_f64()
    );
    let bytes = dir_bytes(dir.path(), "parquet");
    println!(
        "at rest: {bytes} bytes of Parquet for {} values = {:.3} bytes/value",
        rows * 10,
        bytes as f64 / (rows as f64 * 10.0)
    );
    let index = dir_bytes(dir.path(), "tidx");
    println!("index files: {index} bytes");
    println!("rss after load: {} MiB", rss_bytes() >> 20);
    drop(engine);

    let series = env("SERIES", 0);
    if series > 0 {
        memory_per_series(series);
    }
    let replay_steps = env("REPLAY_STEPS", 0);
    if replay_steps > 0 {
        replay(hosts, replay_steps);
    }
}

fn wal_bytes(p: &std::path::Path) -> u64 {
    dir_bytes(&p.join("wal"), "wal")
}

/// Writes without flushing, drops the engine (as a crash would), and times the reopen:
/// WAL replay plus the flush of everything replayed.
fn replay(hosts: usize, steps: usize) {
    let dir = tempfile::tempdir().unwrap();
    let opts = || EngineOptions {
        flush_threshold_bytes: 16 << 30,
        write_stall_bytes: 16 << 30,
        ..EngineOptions::default()
    };
    let engine = Engine::open(opts(), EngineIo::local(dir.path()).unwrap()).unwrap();
    let mut g = tsbs::Gen::new(hosts, 9);
    let mut rows = 0;
    for step in 0..steps as i64 {
        let b = g.batch(step, 0..hosts);
        rows += b.len();
        engine.write(b).unwrap();
    }
    drop(engine);
    let wal = wal_bytes(dir.path());
    let t = Instant::now();
    let engine = Engine::open(opts(), EngineIo::local(dir.path()).unwrap()).unwrap();
    let secs = t.elapsed().as_secs_f64();
    engine.flush().unwrap();
    let flushed = t.elapsed().as_secs_f64();
    println!(
        "replay: {rows} rows, {} MiB of WAL replayed in {secs:.2} s = {:.0} MiB/s (open, ready for writes); replayed rows flushed after {flushed:.2} s",
        wal >> 20,
        (wal >> 20) as f64 / secs
    );
    drop(engine);
}

/// Writes one point for each of `series` hosts and reports RSS growth per series.
fn memory_per_series(series: usize) {
    let dir = tempfile::tempdir().unwrap();
    let opts = EngineOptions {
        flush_threshold_bytes: 8 << 30,
        write_stall_bytes: 8 << 30,
        ..EngineOptions::default()
    };
    let engine = Engine::open(opts, EngineIo::local(dir.path()).unwrap()).unwrap();
    let mut gen_ = tsbs::Gen::new(series, 7);
    let before = rss_bytes();
    let mut h = 0;
    while h < series {
        let end = (h + 10_000).min(series);
        engine.write(gen_.batch(0, h..end)).unwrap();
        h = end;
    }
    let after = rss_bytes();
    println!(
        "memory: {series} active series, RSS grew {} MiB = {:.0} bytes/series (generator state allocated before the baseline)",
        (after - before) >> 20,
        (after.saturating_sub(before)) as f64 / series as f64
    );
}
