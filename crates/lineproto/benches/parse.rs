//! Line protocol parse throughput on TSBS cpu-only lines (4,000 hosts, ~100 MB per body).
//!
//! `cargo bench -p tempora-lineproto --bench parse` (set `LP_BENCH_MB` to change the size).
//! Reports MB/s and lines/s of `parse` on one thread for integer, one-decimal float and
//! full-precision float fields, and the time `RowBatchBuilder::push` alone needs for the same
//! rows (its share of the parse time); and, on the same bytes, the `influxdb-line-protocol`
//! crate that InfluxDB publishes (it parses into borrowed line structs, without building
//! column batches, so it compares with "parse without push").

use std::time::{Duration, Instant};

use tempora_bench::tsbs::{FIELDS, REGIONS};
use tempora_lineproto::bench_support::parse_without_push;
use tempora_lineproto::{ParseOptions, parse, parse_from_line, split_chunks};
use tempora_model::{FieldValue, RowBatchBuilder, Timestamp};

const HOSTS: usize = 4_000;

/// xorshift64*: deterministic and dependency-free.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Int,
    Float1,
    FloatFull,
}

fn host_tags(rng: &mut Rng, h: usize) -> Vec<(String, String)> {
    let region = REGIONS[rng.below(9) as usize];
    let pick = |rng: &mut Rng, xs: &[&str]| xs[rng.below(xs.len() as u64) as usize].to_string();
    vec![
        ("hostname".into(), format!("host_{h}")),
        ("region".into(), region.into()),
        (
            "datacenter".into(),
            format!("{region}{}", pick(rng, &["a", "b", "c"])),
        ),
        ("rack".into(), rng.below(100).to_string()),
        (
            "os".into(),
            pick(rng, &["Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"]),
        ),
        ("arch".into(), pick(rng, &["x64", "x86"])),
        ("team".into(), pick(rng, &["SF", "NYC", "LON", "CHI"])),
        ("service".into(), rng.below(20).to_string()),
        ("service_version".into(), rng.below(2).to_string()),
        (
            "service_environment".into(),
            pick(rng, &["production", "staging", "test"]),
        ),
    ]
}

fn value(rng: &mut Rng, kind: Kind) -> FieldValue {
    match kind {
        Kind::Int => FieldValue::I64(rng.below(100) as i64),
        Kind::Float1 => FieldValue::F64(rng.below(1000) as f64 / 10.0),
        Kind::FloatFull => FieldValue::F64((rng.next() >> 11) as f64 / (1u64 << 53) as f64 * 100.0),
    }
}

/// Rows for the push-only measurement: (host, values, time).
type Rows = Vec<(usize, Vec<FieldValue>, i64)>;
/// Each host's tag set.
type HostTags = Vec<Vec<(String, String)>>;

fn generate(kind: Kind, target_bytes: usize) -> (Vec<u8>, HostTags, Rows) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let hosts: Vec<_> = (0..HOSTS).map(|h| host_tags(&mut rng, h)).collect();
    let mut body = Vec::with_capacity(target_bytes + 4096);
    let mut rows = Vec::new();
    let mut t = 1_451_606_400_000_000_000i64;
    while body.len() < target_bytes {
        for (h, tags) in hosts.iter().enumerate() {
            body.extend_from_slice(b"cpu");
            for (k, v) in tags {
                body.extend_from_slice(format!(",{k}={v}").as_bytes());
            }
            let values: Vec<FieldValue> =
                (0..FIELDS.len()).map(|_| value(&mut rng, kind)).collect();
            for (i, (k, v)) in FIELDS.iter().zip(&values).enumerate() {
                let sep = if i == 0 { ' ' } else { ',' };
                let s = match v {
                    FieldValue::I64(x) => format!("{sep}{k}={x}i"),
                    FieldValue::F64(x) => format!("{sep}{k}={x}"),
                    _ => unreachable!(),
                };
                body.extend_from_slice(s.as_bytes());
            }
            body.extend_from_slice(format!(" {t}\n").as_bytes());
            rows.push((h, values, t));
        }
        t += 10_000_000_000;
    }
    (body, hosts, rows)
}

/// Nanoseconds this thread has run on a CPU (Linux `schedstat`), so that time spent waiting
/// for a core on a busy machine is not counted; wall time elsewhere.
fn cpu_now() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// Timed runs per measurement (`LP_BENCH_RUNS`, default 3).
fn runs() -> usize {
    std::env::var("LP_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3)
}

/// Best of `runs`, in on-CPU time where available.
fn best_of<F: FnMut()>(runs: usize, mut f: F) -> Duration {
    (0..runs)
        .map(|_| {
            let (cpu, wall) = (cpu_now(), Instant::now());
            f();
            match (cpu, cpu_now()) {
                (Some(a), Some(b)) => Duration::from_nanos(b - a),
                _ => wall.elapsed(),
            }
        })
        .min()
        .expect("at least one run")
}

/// Best of `runs` in wall time (for multi-threaded runs).
fn best_wall<F: FnMut()>(runs: usize, mut f: F) -> Duration {
    (0..runs)
        .map(|_| {
            let wall = Instant::now();
            f();
            wall.elapsed()
        })
        .min()
        .expect("at least one run")
}

fn push_only(hosts: &[Vec<(String, String)>], rows: &Rows) {
    let mut b = RowBatchBuilder::new("cpu").unwrap();
    let mut tags: Vec<(&str, &str)> = Vec::new();
    let mut fields: Vec<(&str, FieldValue)> = Vec::new();
    for (h, values, t) in rows {
        tags.clear();
        tags.extend(hosts[*h].iter().map(|(k, v)| (k.as_str(), v.as_str())));
        fields.clear();
        fields.extend(FIELDS.iter().copied().zip(values.iter().cloned()));
        b.push(&tags, &fields, Timestamp(*t)).unwrap();
    }
    std::hint::black_box(b.finish());
}

fn main() {
    let mb: usize = std::env::var("LP_BENCH_MB")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100);
    let opts = ParseOptions::default();
    if let Ok(n) = std::env::var("LP_BENCH_PROFILE") {
        // Only parse the integer body `n` times (for a profiler) and print the best times.
        let (body, _, _) = generate(Kind::Int, mb << 20);
        let n = n.parse().unwrap_or(5);
        let full = if std::env::var("LP_BENCH_NO_PUSH").is_ok() {
            Duration::MAX
        } else {
            best_of(n, || {
                std::hint::black_box(parse(&body, &opts));
            })
        };
        let scan = best_of(n, || {
            std::hint::black_box(parse_without_push(&body, &opts));
        });
        let mbs = |d: Duration| body.len() as f64 / 1e6 / d.as_secs_f64();
        println!(
            "parse {:.1} MB/s, without push {:.1} MB/s",
            mbs(full),
            mbs(scan)
        );
        return;
    }
    for (name, kind) in [
        ("int", Kind::Int),
        ("float (1 decimal)", Kind::Float1),
        ("float (full precision)", Kind::FloatFull),
    ] {
        let (body, hosts, rows) = generate(kind, mb << 20);
        let lines = rows.len();
        let check = parse(&body, &opts);
        assert!(check.errors.is_empty(), "{:?}", &check.errors[..1]);
        assert_eq!(check.rows, lines);
        drop(check);
        let parse_t = best_of(runs(), || {
            std::hint::black_box(parse(&body, &opts));
        });
        let push_t = best_of(runs(), || push_only(&hosts, &rows));
        let scan_t = best_of(runs(), || {
            std::hint::black_box(parse_without_push(&body, &opts));
        });
        // InfluxDB's own crate, on the same bytes (it needs UTF-8 text).
        let text = std::str::from_utf8(&body).expect("generated text is UTF-8");
        let influx_t = best_of(runs(), || {
            let n = influxdb_line_protocol::parse_lines(text)
                .filter(|l| std::hint::black_box(l).is_ok())
                .count();
            assert_eq!(n, lines);
        });
        let secs = parse_t.as_secs_f64();
        println!(
            "{name:>24}: {:6.1} MB in {:6.1} ms = {:6.1} MB/s, {:5.2} M lines/s ({} B/line); \
             push alone {:6.1} ms = {:4.1}% of parse; parse without push {:6.1} MB/s; \
             influxdb-line-protocol {:6.1} MB/s",
            body.len() as f64 / 1e6,
            secs * 1e3,
            body.len() as f64 / 1e6 / secs,
            lines as f64 / 1e6 / secs,
            body.len() / lines,
            push_t.as_secs_f64() * 1e3,
            100.0 * push_t.as_secs_f64() / secs,
            body.len() as f64 / 1e6 / scan_t.as_secs_f64(),
            body.len() as f64 / 1e6 / influx_t.as_secs_f64(),
        );
        if kind == Kind::Int {
            let threads = 2;
            let (body, opts) = (&body, &opts);
            let par_t = best_wall(3, || {
                let chunks = split_chunks(body, threads);
                std::thread::scope(|s| {
                    let handles: Vec<_> = chunks
                        .iter()
                        .map(|&(line, c)| s.spawn(move || parse_from_line(c, line, opts).rows))
                        .collect();
                    let n: usize = handles.into_iter().map(|h| h.join().unwrap()).sum();
                    assert_eq!(n, lines);
                });
            });
            println!(
                "{:>24}: {:6.1} MB/s with split_chunks + {threads} threads (wall time)",
                "int, parallel",
                body.len() as f64 / 1e6 / par_t.as_secs_f64()
            );
        }
    }
}
