//! Memory and speed of a `SeriesIndex` with TSBS-like tag sets.
//!
//! `INDEX_BENCH_SERIES=1000000 cargo bench -p tempora-index --bench index_memory`
//!
//! Heap bytes are measured with a counting global allocator (live bytes after building the
//! index minus before), so they include allocator-visible slack but not malloc's own headers.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tempora_index::{IndexLimits, Matcher, SeriesIndex};
use tempora_model::encode_series_key;

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            let now = LIVE.fetch_add(new_size, Ordering::Relaxed) + new_size;
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const REGIONS: [&str; 9] = [
    "us-east-1",
    "us-west-1",
    "us-west-2",
    "eu-west-1",
    "eu-central-1",
    "ap-southeast-1",
    "ap-southeast-2",
    "ap-northeast-1",
    "sa-east-1",
];
const OS: [&str; 3] = ["Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"];
const ARCH: [&str; 2] = ["x64", "x86"];
const TEAM: [&str; 4] = ["SF", "NYC", "LON", "CHI"];
const ENV: [&str; 3] = ["production", "staging", "test"];

/// Deterministic TSBS-like key of series `i` into `out`.
fn tsbs_key(i: u64, out: &mut Vec<u8>) {
    let mut x = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    let mut next = |n: u64| {
        x ^= x >> 33;
        x = x.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
        x ^= x >> 29;
        (x % n) as usize
    };
    let host = format!("host_{i}");
    let region = REGIONS[next(9)];
    let dc = format!("{region}{}", ["a", "b", "c"][next(3)]);
    let rack = next(100).to_string();
    let service = next(20).to_string();
    let version = next(2).to_string();
    let tags = [
        ("hostname", host.as_str()),
        ("region", region),
        ("datacenter", dc.as_str()),
        ("rack", rack.as_str()),
        ("os", OS[next(3)]),
        ("arch", ARCH[next(2)]),
        ("team", TEAM[next(4)]),
        ("service", service.as_str()),
        ("service_version", version.as_str()),
        ("service_environment", ENV[next(3)]),
    ];
    out.clear();
    encode_series_key(&tags, out).expect("valid tags");
}

fn time_it<T>(iters: u32, mut f: impl FnMut() -> T) -> (Duration, T) {
    let start = Instant::now();
    let mut last = f();
    for _ in 1..iters {
        last = f();
    }
    (start.elapsed() / iters, last)
}

fn main() {
    let n: u64 = std::env::var("INDEX_BENCH_SERIES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let mut buf = Vec::with_capacity(256);
    let mut key_bytes = 0usize;

    let start = Instant::now();
    for i in 0..n {
        tsbs_key(i, &mut buf);
    }
    let keygen = start.elapsed();

    let before = LIVE.load(Ordering::Relaxed);
    let mut idx = SeriesIndex::new(IndexLimits::default());
    let start = Instant::now();
    for i in 0..n {
        tsbs_key(i, &mut buf);
        key_bytes += buf.len();
        idx.get_or_insert(&buf).expect("insert");
    }
    let insert = start.elapsed();
    let heap = LIVE.load(Ordering::Relaxed) - before - buf.capacity();
    let nf = n as f64;
    println!("series                 {n}");
    println!("avg key bytes          {:.1}", key_bytes as f64 / nf);
    println!(
        "insert                 {:.2?} total, {:.0} inserts/s",
        insert,
        nf / insert.as_secs_f64()
    );
    println!(
        "  net of key generation {:.2?}, {:.0} inserts/s",
        insert.saturating_sub(keygen),
        nf / insert.saturating_sub(keygen).as_secs_f64()
    );
    println!(
        "heap bytes/series      {:.1} (counting allocator)",
        heap as f64 / nf
    );
    println!(
        "estimate bytes/series  {:.1} (memory_bytes())",
        idx.memory_bytes() as f64 / nf
    );
    println!("  of which key bytes   {:.1}", idx.key_bytes() as f64 / nf);

    let (t, hits) = time_it(200_000, || {
        tsbs_key(n / 2, &mut buf);
        idx.get(&buf)
    });
    println!("get (hit, incl. keygen) {t:.2?} ({hits:?})");

    let queries: Vec<(&str, Matcher)> = vec![
        ("eq region (1/9)", Matcher::eq("region", "us-east-1")),
        ("eq hostname (1)", Matcher::eq("hostname", "host_12345")),
        ("not_eq arch (1/2)", Matcher::not_eq("arch", "x86")),
        (
            "regex datacenter ^eu-",
            Matcher::regex("datacenter", "^eu-").unwrap(),
        ),
        (
            "regex hostname ^host_1[0-9]*5$",
            Matcher::regex("hostname", "^host_1[0-9]*5$").unwrap(),
        ),
        (
            "and(eq region, eq os, regex service)",
            Matcher::And(vec![
                Matcher::eq("region", "us-east-1"),
                Matcher::eq("os", "Ubuntu16.10"),
                Matcher::regex("service", "^1").unwrap(),
            ]),
        ),
    ];
    for (name, m) in &queries {
        let iters = if name.contains("hostname ^") { 5 } else { 50 };
        let (t, got) = time_it(iters, || idx.select(m));
        println!("select {name:<38} {t:>10.2?}  ({} ids)", got.len());
    }

    let start = Instant::now();
    let bytes = idx.encode();
    let enc = start.elapsed();
    println!(
        "encode                 {enc:.2?}, {} bytes ({:.1} B/series)",
        bytes.len(),
        bytes.len() as f64 / nf
    );
    drop(idx);
    let start = Instant::now();
    let back = SeriesIndex::decode(&bytes, IndexLimits::default()).expect("decode");
    let dec = start.elapsed();
    println!(
        "decode                 {dec:.2?} ({:.0} series/s)",
        nf / dec.as_secs_f64()
    );
    assert_eq!(back.len() as u64, n);
    println!(
        "peak heap              {:.1} MiB",
        PEAK.load(Ordering::Relaxed) as f64 / 1048576.0
    );
}
