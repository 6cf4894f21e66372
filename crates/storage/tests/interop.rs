//! The engine's data files are plain Parquet: pyarrow and DuckDB read them and see the rows the
//! engine wrote. Needs `python3` with `pyarrow` and `duckdb` (`.ci/run` installs them).

mod common;

use common::*;
use tempora_storage::{Engine, EngineIo};

#[test]
fn pyarrow_and_duckdb_read_the_data_files() {
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(small_opts(), EngineIo::local(dir.path()).unwrap()).unwrap();
    let rows: Vec<(String, i64, f64)> = (0..300)
        .map(|i| (format!("h{}", i % 3), i * SEC, (i % 17) as f64 * 0.5))
        .collect();
    let refs: Vec<(&str, i64, f64)> = rows.iter().map(|(h, t, v)| (h.as_str(), *t, *v)).collect();
    write(&e, &refs);
    e.close().unwrap();
    let script = r#"
import glob, sys
import duckdb, pyarrow.parquet as pq
files = sorted(glob.glob(sys.argv[1] + "/data/**/*.parquet", recursive=True))
n = sum(pq.read_table(f).num_rows for f in files)
con = duckdb.connect()
rows = con.execute(
    "select host, count(*), sum(v)::double, min(epoch_ns(time)), max(epoch_ns(time)) "
    "from read_parquet($1) group by host order by host", [files]).fetchall()
print(n)
for r in rows:
    print(*r)
# Each file's newest rows beside it (`<id>.last`) are Parquet too, one row per series.
lasts = sorted(glob.glob(sys.argv[1] + "/data/**/*.last", recursive=True))
for r in con.execute("select host, epoch_ns(time) from read_parquet($1) order by host", [lasts]).fetchall():
    print("last", *r)
"#;
    let out = std::process::Command::new("python3")
        .args(["-c", script, dir.path().to_str().unwrap()])
        .output()
        .expect("python3 is installed");
    assert!(
        out.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut want = format!("{}\n", rows.len());
    for h in 0..3 {
        let mine: Vec<_> = rows.iter().filter(|r| r.0 == format!("h{h}")).collect();
        let sum: f64 = mine.iter().map(|r| r.2).sum();
        let (lo, hi) = (mine[0].1, mine[mine.len() - 1].1);
        want += &format!("h{h} {} {sum:?} {lo} {hi}\n", mine.len());
    }
    for h in 0..3 {
        let hi = rows
            .iter()
            .filter(|r| r.0 == format!("h{h}"))
            .map(|r| r.1)
            .max();
        want += &format!("last h{h} {}\n", hi.unwrap());
    }
    assert_eq!(String::from_utf8_lossy(&out.stdout), want);
}
