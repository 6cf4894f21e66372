//! Differential test: the TSBS cpu-only query types and the monitoring query shapes, run on
//! Tempora (the real binary, over PostgreSQL) and on DuckDB over the same generated data, must
//! give identical rows. Half of the data is flushed to files by a restart, half is in the
//! memtable, so queries cross both. The queries are in `tests/data/tsbs_diff.py`.

mod common;

use std::io::Write;

use common::{Server, post_args};
use tempora_bench::tsbs::{CpuOnly, Format, Scale, TSBS_START_NS};

const HOSTS: usize = 20;
/// Six hours at 10 s.
const STEPS: i64 = 6 * 360;
/// Steps per HTTP body.
const CHUNK: i64 = 60;

fn scale() -> Scale {
    Scale {
        hosts: HOSTS,
        start_ns: TSBS_START_NS,
        interval_ns: 10_000_000_000,
        steps: STEPS,
        seed: 7,
    }
}

/// Posts steps `from..to` as line protocol to database `benchmark`.
fn load(s: &Server, g: &mut CpuOnly, from: i64, to: i64, work: &std::path::Path) {
    let url = s.url("/write?db=benchmark");
    let file = work.join("body.lp");
    let mut step = from;
    while step < to {
        let mut body = Vec::new();
        for st in step..(step + CHUNK).min(to) {
            g.write_step(st, Format::LineProtocol, &mut body);
        }
        std::fs::write(&file, &body).unwrap();
        let arg = format!("@{}", file.display());
        let (code, answer) = post_args(&url, &["--data-binary", &arg]);
        assert_eq!(code, "204", "{answer}");
        step += CHUNK;
    }
}

#[test]
fn tsbs_queries_give_the_rows_duckdb_gives() {
    let dir = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let csv = work.path().join("cpu.csv");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&csv).unwrap());
    CpuOnly::new(scale())
        .write_all(Format::Csv, &mut f)
        .unwrap();
    f.flush().unwrap();
    drop(f);

    // The generator is deterministic and stateful: one instance continues across the halves.
    let mut g = CpuOnly::new(scale());
    let s = Server::start(dir.path());
    load(&s, &mut g, 0, STEPS / 2, work.path());
    s.stop(); // flushes the memtables to files
    let s = Server::start(dir.path());
    load(&s, &mut g, STEPS / 2, STEPS, work.path());

    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tsbs_diff.py");
    let out = std::process::Command::new("python3")
        .args([
            script,
            &s.pg.to_string(),
            csv.to_str().unwrap(),
            "2016-01-01T00:00:00",
        ])
        .output()
        .expect("python3 is installed");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!("{text}");
    assert_eq!(
        text.lines().filter(|l| l.starts_with("ok ")).count(),
        16,
        "{text}"
    );
}
