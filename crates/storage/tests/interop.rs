//! The engine's data files are plain Parquet: pyarrow and DuckDB read them and see the rows the
//! engine wrote. Needs `python3` with `pyarrow` and `duckdb` (`.ci/run` installs them).

mod common;

use common::*;
use tempora_storage::{Engine, EngineIo};

/// Runs a Python program with the data directory as its argument; its standard output.
fn python(script: &str, dir: &std::path::Path) -> String {
    let out = std::process::Command::new("python3")
        .args(["-c", script, dir.to_str().unwrap()])
        .output()
        .expect("python3 is installed");
    assert!(
        out.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

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
    let stdout = python(script, dir.path());
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
    assert_eq!(stdout, want);
}

/// Float fields stored each way `files::float_codec` chooses (a decimal, f32 readings widened
/// to f64, computed doubles, a double with two values) read back in DuckDB and pyarrow as the
/// very same f64 values, and each file records which way it took.
#[test]
fn every_float_representation_reads_the_same_in_duckdb_and_pyarrow() {
    use tempora_model::{FieldValue, RowBatchBuilder, Timestamp};
    let dir = tempfile::tempdir().unwrap();
    let e = Engine::open(small_opts(), EngineIo::local(dir.path()).unwrap()).unwrap();
    let value = |col: usize, i: i64| -> f64 {
        match col {
            0 => (i % 1000) as f64 / 100.0,
            1 => (20.0f32 + i as f32 * 0.013f32) as f64,
            2 => 1000.0 + (i as f64 / 37.0).sin(),
            _ => [0.1f64.sqrt(), 2f64.sqrt()][(i % 2) as usize],
        }
    };
    let names = ["dec", "single", "wave", "two"];
    let mut b = RowBatchBuilder::new("f").unwrap();
    for i in 0..3000i64 {
        let fields: Vec<(&str, FieldValue)> = (0..4)
            .map(|c| (names[c], FieldValue::F64(value(c, i))))
            .collect();
        b.push(&[("s", "x")], &fields, Timestamp(i * SEC)).unwrap();
    }
    assert!(e.write(b.finish()).unwrap().rejected.is_empty());
    e.close().unwrap();
    let script = r#"
import glob, sys
import duckdb, pyarrow.parquet as pq
files = sorted(glob.glob(sys.argv[1] + "/data/**/*.parquet", recursive=True))
t = pq.read_table(files)
for name in ["dec", "single", "wave", "two"]:
    print(name, t.schema.field(name).type)
con = duckdb.connect()
q = "select dec::double, single::double, wave::double, two::double from read_parquet($1) order by time"
for r in con.execute(q, [files]).fetchall():
    print(*[repr(x) for x in r])
"#;
    let stdout = python(script, dir.path());
    let mut lines = stdout.lines();
    let types: Vec<&str> = lines.by_ref().take(4).collect();
    assert_eq!(
        types,
        vec![
            "dec decimal128(18, 2)",
            "single float",
            "wave double",
            "two double"
        ],
        "representations"
    );
    // Python prints the shortest text that reads back as the same double; Rust parses it
    // exactly, so equal bits mean equal values.
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 3000);
    for (i, row) in rows.iter().enumerate() {
        let got: Vec<u64> = row
            .split(' ')
            .map(|x| x.parse::<f64>().unwrap().to_bits())
            .collect();
        let want: Vec<u64> = (0..4).map(|c| value(c, i as i64).to_bits()).collect();
        assert_eq!(got, want, "row {i}: {row}");
    }
}
