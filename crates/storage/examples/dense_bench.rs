//! Dense tables against an ordinary table and SQLite, in process (issue 25).
//!
//! One series (`device=d0`, fields kwh f64, volts f64, ok bool) at a 1 s interval, in
//! histories: `month`, every second of 30 days (2,592,000 points); `years`, one hour of
//! every day for 20 × 365 days (26,280,000 points); `years-equal`, 355 s of every day for 20
//! years (2,591,500 points: the history 240 times longer, the data as large). Each history is
//! loaded into a dense table, an ordinary table (then flushed: the points are in Parquet
//! files) and SQLite (B-tree table, `PRIMARY KEY (device, time)`, WAL journal), and then
//! timed per operation on random existing points (fixed seed):
//!
//! - `read`: the point's fields (dense: `dense_get`, one positioned read; ordinary: a scan
//!   of `[t, t+1)` for the series; SQLite: a prepared `SELECT`);
//! - `update`: kwh set on the point (dense: `dense_update`, the point read, changed and
//!   logged; ordinary: a scan of the point and a write of it, as SQL `UPDATE` does; SQLite: a
//!   prepared `UPDATE`);
//! - `delete`: the point removed (dense: `dense_delete`; ordinary: engine `delete` of
//!   `[t, t+1)`, a tombstone; SQLite `DELETE`), then written again untimed so the history
//!   keeps its size;
//! - `day scan`: one day of the series read in full (SQLite: a range `SELECT`).
//!
//! Durability is the same on every side: `--sync durable` (default) fsyncs every write (the
//! engine's WAL commit, SQLite `synchronous=FULL`); `--sync relaxed` fsyncs none (WAL sync
//! off, `synchronous=OFF`), which shows the cost of the operations themselves.
//!
//! ```sh
//! cargo run --release -p tempora-storage --example dense_bench -- --dir /var/tmp/dense-bench \
//!     [--samples 2000] [--histories month,years] [--sync durable|relaxed] [--block-days 1]
//! ```

use std::time::Instant;

use tempora_model::{
    ColumnKind, FieldType, FieldValue, RowBatchBuilder, TableSchema, Timestamp, encode_series_key,
};
use tempora_storage::catalog::settings::StorageSettings;
use tempora_storage::dense::DenseSpec;
use tempora_storage::dense::layout::DenseField;
use tempora_storage::{DeleteRequest, Engine, EngineIo, EngineOptions, Matcher, ScanRequest};

const SEC: i64 = 1_000_000_000;
const DAY: i64 = 86_400 * SEC;
/// 2000-01-01T00:00:00Z.
const START: i64 = 946_684_800 * SEC;

struct Args {
    dir: std::path::PathBuf,
    samples: usize,
    histories: Vec<String>,
    durable: bool,
    /// Days per dense block.
    block_days: i64,
}

fn args() -> Args {
    let mut a = Args {
        dir: "/var/tmp/dense-bench".into(),
        samples: 2000,
        histories: vec!["month".into(), "years".into()],
        durable: true,
        block_days: 1,
    };
    let v: Vec<String> = std::env::args().skip(1).collect();
    for w in v.chunks(2) {
        match (w[0].as_str(), w.get(1)) {
            ("--dir", Some(d)) => a.dir = d.into(),
            ("--samples", Some(n)) => a.samples = n.parse().expect("--samples N"),
            ("--histories", Some(h)) => a.histories = h.split(',').map(String::from).collect(),
            ("--sync", Some(s)) => a.durable = s == "durable",
            ("--block-days", Some(d)) => a.block_days = d.parse().expect("--block-days N"),
            _ => {
                panic!("usage: --dir D --samples N --histories month,years --sync durable|relaxed")
            }
        }
    }
    a
}

/// The history's point times, oldest first.
fn history(name: &str) -> Vec<i64> {
    match name {
        "month" => (0..30 * 86_400).map(|i| START + i * SEC).collect(),
        "years" => (0..20 * 365)
            .flat_map(|d| (0..3600).map(move |s| START + d * DAY + 12 * 3600 * SEC + s * SEC))
            .collect(),
        // As many points as `month` (355 s at noon of every day), spread over 20 years: the
        // history's length changes, the data's size does not.
        "years-equal" => (0..20 * 365)
            .flat_map(|d| (0..355).map(move |s| START + d * DAY + 12 * 3600 * SEC + s * SEC))
            .collect(),
        other => panic!("unknown history {other}"),
    }
}

fn value(t: i64) -> [(&'static str, FieldValue); 3] {
    let i = (t - START) / SEC;
    [
        ("kwh", FieldValue::F64(i as f64 * 0.001)),
        ("volts", FieldValue::F64(230.0 + (i % 10) as f64)),
        ("ok", FieldValue::Bool(i % 2 == 0)),
    ]
}

fn schema(name: &str) -> TableSchema {
    TableSchema::with_columns(
        name,
        vec![
            ("device".into(), ColumnKind::Tag),
            ("kwh".into(), ColumnKind::Field(FieldType::F64)),
            ("volts".into(), ColumnKind::Field(FieldType::F64)),
            ("ok".into(), ColumnKind::Field(FieldType::Bool)),
        ],
    )
}

fn spec(block_days: i64) -> DenseSpec {
    let f = |n: &str, ty| DenseField {
        name: n.into(),
        ty,
        max_len: 0,
    };
    let fields = vec![
        f("kwh", FieldType::F64),
        f("volts", FieldType::F64),
        f("ok", FieldType::Bool),
    ];
    DenseSpec::new(SEC, Some(block_days * DAY), fields).unwrap()
}

fn write_points(e: &Engine, table: &str, times: &[i64]) {
    for chunk in times.chunks(50_000) {
        let mut b = RowBatchBuilder::new(table).unwrap();
        for &t in chunk {
            b.push(&[("device", "d0")], &value(t), Timestamp(t))
                .unwrap();
        }
        let out = e.write(b.finish()).unwrap();
        assert!(out.rejected.is_empty(), "{:?}", &out.rejected[..1]);
    }
}

/// p50, p90, p99 of `ns` in µs.
fn pct(ns: &mut [u64]) -> (f64, f64, f64) {
    ns.sort_unstable();
    let at = |q: f64| ns[((ns.len() - 1) as f64 * q) as usize] as f64 / 1000.0;
    (at(0.5), at(0.9), at(0.99))
}

fn time_each(samples: &[i64], mut op: impl FnMut(i64)) -> (f64, f64, f64) {
    for &t in samples.iter().take(100) {
        op(t); // warm-up
    }
    let mut ns: Vec<u64> = samples
        .iter()
        .map(|&t| {
            let s = Instant::now();
            op(t);
            s.elapsed().as_nanos() as u64
        })
        .collect();
    pct(&mut ns)
}

struct Sides<'a> {
    e: &'a Engine,
    ord: String,
    key: Vec<u8>,
}

impl Sides<'_> {
    fn read_ordinary(&self, t: i64) -> usize {
        let req = ScanRequest {
            time: Some((t, t + 1)),
            matcher: Matcher::eq("device", "d0"),
            ..Default::default()
        };
        self.e
            .scan(&self.ord, &req)
            .unwrap()
            .iter()
            .map(|b| b.num_rows())
            .sum()
    }

    fn write_one(&self, table: &str, t: i64, kwh: f64) {
        let mut b = RowBatchBuilder::new(table).unwrap();
        let mut f = value(t);
        f[0].1 = FieldValue::F64(kwh);
        b.push(&[("device", "d0")], &f, Timestamp(t)).unwrap();
        self.e.write(b.finish()).unwrap();
    }

    fn delete(&self, table: &str, t: i64) -> u64 {
        let req = DeleteRequest {
            time: Some((t, t + 1)),
            matcher: Matcher::eq("device", "d0"),
            series_filter: None,
        };
        self.e.delete(table, &req).unwrap()
    }
}

fn row(label: &str, hist: &str, op: &str, (p50, p90, p99): (f64, f64, f64)) -> f64 {
    println!("| {label} | {hist} | {op} | {p50:.1} | {p90:.1} | {p99:.1} |");
    p50
}

fn main() {
    let a = args();
    let _ = std::fs::remove_dir_all(&a.dir);
    std::fs::create_dir_all(&a.dir).unwrap();
    let mut opts = EngineOptions::default();
    if !a.durable {
        opts.wal_sync = tempora_wal::SyncPolicy::None;
    }
    let open = || {
        Engine::open(
            opts.clone(),
            EngineIo::local(a.dir.join("tempora")).unwrap(),
        )
    };
    let mut e = open().unwrap();
    e.create_database("b").unwrap();
    println!(
        "durability: {}",
        if a.durable {
            "every write fsynced"
        } else {
            "no fsync"
        }
    );
    let mut summary = Vec::new();
    for hist in &a.histories {
        let times = history(hist);
        let name = hist.replace('-', "_");
        let (dense, ord) = (format!("b.dense_{name}"), format!("b.ord_{name}"));
        e.create_dense_table(
            &dense,
            schema(&dense),
            false,
            StorageSettings::default(),
            spec(a.block_days),
        )
        .unwrap();
        e.create_table(&ord, schema(&ord), false).unwrap();
        let s = Instant::now();
        write_points(&e, &dense, &times);
        let dense_rate = times.len() as f64 / s.elapsed().as_secs_f64();
        let s = Instant::now();
        write_points(&e, &ord, &times);
        e.flush().unwrap();
        let ord_rate = times.len() as f64 / s.elapsed().as_secs_f64();
        let sql = rusqlite::Connection::open(a.dir.join(format!("sqlite-{hist}.db"))).unwrap();
        let sync = if a.durable { "FULL" } else { "OFF" };
        sql.execute_batch(&format!(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous={sync};
             CREATE TABLE t (device TEXT, time INTEGER, kwh REAL, volts REAL, ok INTEGER,
                             PRIMARY KEY (device, time));"
        ))
        .unwrap();
        let s = Instant::now();
        {
            let tx = sql.unchecked_transaction().unwrap();
            let mut st = tx
                .prepare("INSERT INTO t VALUES ('d0', ?1, ?2, ?3, ?4)")
                .unwrap();
            for &t in &times {
                let i = (t - START) / SEC;
                st.execute(rusqlite::params![
                    t,
                    i as f64 * 0.001,
                    230.0 + (i % 10) as f64,
                    i % 2 == 0
                ])
                .unwrap();
            }
            drop(st);
            tx.commit().unwrap();
        }
        let sqlite_rate = times.len() as f64 / s.elapsed().as_secs_f64();
        // Both restarted before timing: files opened anew, as a server answers after a restart.
        e.close().unwrap();
        e = open().unwrap();
        drop(sql);
        let sql = rusqlite::Connection::open(a.dir.join(format!("sqlite-{hist}.db"))).unwrap();
        sql.execute_batch(&format!("PRAGMA synchronous={sync};"))
            .unwrap();
        println!(
            "\n{hist}: {} points loaded in process: dense {:.0} rows/s, ordinary {:.0} rows/s (with its flush), SQLite {:.0} rows/s (one transaction)",
            times.len(),
            dense_rate,
            ord_rate,
            sqlite_rate
        );
        let mut rng = 0x9E37_79B9_7F4A_7C15u64;
        let samples: Vec<i64> = (0..a.samples)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                times[(rng % times.len() as u64) as usize]
            })
            .collect();
        let mut key = Vec::new();
        encode_series_key(&[("device", "d0")], &mut key).unwrap();
        let sides = Sides {
            e: &e,
            ord: ord.clone(),
            key,
        };
        println!(
            "\n| system | history | op | p50 µs | p90 µs | p99 µs |\n|---|---|---|---|---|---|"
        );
        let mut read_sql = sql
            .prepare("SELECT kwh, volts, ok FROM t WHERE device = 'd0' AND time = ?1")
            .unwrap();
        let mut upd_sql = sql
            .prepare("UPDATE t SET kwh = ?1 WHERE device = 'd0' AND time = ?2")
            .unwrap();
        let mut del_sql = sql
            .prepare("DELETE FROM t WHERE device = 'd0' AND time = ?1")
            .unwrap();
        let mut ins_sql = sql
            .prepare("INSERT INTO t VALUES ('d0', ?1, 1.0, 230.0, 1)")
            .unwrap();
        let mut day_sql = sql
            .prepare("SELECT time, kwh FROM t WHERE device = 'd0' AND time >= ?1 AND time < ?2")
            .unwrap();
        let r = |label, op, p| (hist.clone(), op, label, row(label, hist, op, p));
        // Every system first reads one point of every day (untimed): files opened, pages
        // and footers cached, as on a server that has been answering for a while.
        let mut warm: Vec<i64> = times.clone();
        warm.dedup_by_key(|t| t.div_euclid(DAY));
        for &t in &warm {
            std::hint::black_box(e.dense_get(&dense, &sides.key, t).unwrap());
            std::hint::black_box(sides.read_ordinary(t));
            let v: f64 = read_sql.query_row([t], |r| r.get(0)).unwrap();
            std::hint::black_box(v);
        }
        summary.push(r(
            "dense",
            "read",
            time_each(&samples, |t| {
                assert!(e.dense_get(&dense, &sides.key, t).unwrap().is_some());
            }),
        ));
        summary.push(r(
            "ordinary",
            "read",
            time_each(&samples, |t| {
                assert_eq!(sides.read_ordinary(t), 1);
            }),
        ));
        summary.push(r(
            "sqlite",
            "read",
            time_each(&samples, |t| {
                let v: f64 = read_sql.query_row([t], |r| r.get(0)).unwrap();
                std::hint::black_box(v);
            }),
        ));
        summary.push(r(
            "dense",
            "update",
            time_each(&samples, |t| {
                let set = [("kwh", FieldValue::F64(1.5))];
                assert!(e.dense_update(&dense, &sides.key, t, &set).unwrap());
            }),
        ));
        summary.push(r(
            "ordinary",
            "update",
            time_each(&samples, |t| {
                std::hint::black_box(sides.read_ordinary(t));
                sides.write_one(&ord, t, 1.5);
            }),
        ));
        summary.push(r(
            "sqlite",
            "update",
            time_each(&samples, |t| {
                upd_sql.execute(rusqlite::params![1.5, t]).unwrap();
            }),
        ));
        let mut deleted = Vec::new();
        summary.push(r(
            "dense",
            "delete",
            time_each(&samples, |t| {
                e.dense_delete(&dense, &sides.key, t, t + 1).unwrap();
                deleted.push(t);
            }),
        ));
        write_points(&e, &dense, &deleted);
        deleted.clear();
        summary.push(r(
            "ordinary",
            "delete",
            time_each(&samples, |t| {
                sides.delete(&ord, t);
                deleted.push(t);
            }),
        ));
        write_points(&e, &ord, &deleted);
        summary.push(r(
            "sqlite",
            "delete",
            time_each(&samples, |t| {
                del_sql.execute([t]).unwrap();
                ins_sql.execute([t]).unwrap_or(0);
            }),
        ));
        let days: Vec<i64> = samples
            .iter()
            .take(50)
            .map(|t| t.div_euclid(DAY) * DAY)
            .collect();
        let scan = |table: &str, d: i64| -> usize {
            let req = ScanRequest {
                time: Some((d, d + DAY)),
                matcher: Matcher::eq("device", "d0"),
                fields: Some(vec!["kwh".into()]),
                ..Default::default()
            };
            e.scan(table, &req)
                .unwrap()
                .iter()
                .map(|b| b.num_rows())
                .sum()
        };
        summary.push(r(
            "dense",
            "day scan",
            time_each(&days, |d| assert!(scan(&dense, d) > 0)),
        ));
        summary.push(r(
            "ordinary",
            "day scan",
            time_each(&days, |d| assert!(scan(&ord, d) > 0)),
        ));
        summary.push(r(
            "sqlite",
            "day scan",
            time_each(&days, |d| {
                let n = day_sql
                    .query_map([d, d + DAY], |r| r.get::<_, f64>(1))
                    .unwrap()
                    .count();
                assert!(n > 0);
            }),
        ));
    }
    println!("\n| history | op | ordinary / dense | SQLite / dense |\n|---|---|---|---|");
    for (hist, op, label, p50) in &summary {
        if *label != "dense" {
            continue;
        }
        let of = |who: &str| {
            summary
                .iter()
                .find(|(h, o, l, _)| h == hist && o == op && *l == who)
                .map_or(f64::NAN, |x| x.3)
        };
        println!(
            "| {hist} | {op} | {:.1}× | {:.1}× |",
            of("ordinary") / p50,
            of("sqlite") / p50
        );
    }
    let dense_p50 = |hist: &str, op: &str| {
        summary
            .iter()
            .find(|(h, o, l, _)| h == hist && *o == op && *l == "dense")
            .map(|x| x.3)
    };
    for hist in a.histories.iter().filter(|h| *h != "month") {
        for op in ["read", "update", "delete"] {
            if let (Some(m), Some(y)) = (dense_p50("month", op), dense_p50(hist, op)) {
                println!(
                    "flatness, dense {op}: {hist} p50 / month p50 = {:.2}",
                    y / m
                );
            }
        }
    }
    e.close().unwrap();
}
