//! Field encodings on TSBS cpu-shaped columns: Parquet's encodings with zstd against pco.
//!
//! Columns are laid out as data files hold them: sorted by series, then time. Reports bytes
//! per value and encode speed for each choice. Run:
//! `cargo bench -p tempora-storage --bench codecs` (env HOSTS, STEPS).

#[path = "tsbs.rs"]
mod tsbs;

use std::sync::Arc;
use std::time::Instant;

use arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch};
use arrow::datatypes::{Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::WriterProperties;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn parquet_size(col: ArrayRef, enc: Option<Encoding>, dict: bool, level: i32) -> usize {
    let schema = Arc::new(Schema::new(vec![Field::new(
        "c",
        col.data_type().clone(),
        false,
    )]));
    let batch = RecordBatch::try_new(schema.clone(), vec![col]).unwrap();
    let mut b = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(level).unwrap()))
        .set_dictionary_enabled(dict);
    if let Some(e) = enc {
        b = b.set_encoding(e);
    }
    let mut buf = Vec::new();
    let mut w = ArrowWriter::try_new(&mut buf, schema, Some(b.build())).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    buf.len()
}

fn report(name: &str, n: usize, f: impl Fn() -> usize) {
    let t = Instant::now();
    let bytes = f();
    let secs = t.elapsed().as_secs_f64();
    println!(
        "{name:<44} {:>7.3} bytes/value  {:>8.1} M values/s",
        bytes as f64 / n as f64,
        n as f64 / secs / 1e6
    );
}

fn main() {
    let hosts = env("HOSTS", 200);
    let steps = env("STEPS", 8640);
    let mut g = tsbs::Gen::new(hosts, 42);
    // Column 0 (usage_user) per host, then concatenated host after host (file order).
    let mut per_host: Vec<Vec<f64>> = vec![Vec::with_capacity(steps); hosts];
    for s in 0..steps as i64 {
        let b = g.batch(s, 0..hosts);
        for (h, row) in b.rows().enumerate() {
            if let tempora_model::FieldValue::F64(v) = row.fields[0].1 {
                per_host[h].push(v);
            }
        }
    }
    let values: Vec<f64> = per_host.concat();
    let n = values.len();
    let times: Vec<i64> = (0..hosts)
        .flat_map(|_| (0..steps as i64).map(|s| 1_451_606_400_000_000_000 + s * 10_000_000_000))
        .collect();
    println!("{hosts} hosts x {steps} steps = {n} values per column (sorted by series, time)\n");
    let f: ArrayRef = Arc::new(Float64Array::from(values.clone()));
    report("f64 parquet PLAIN + zstd(3)", n, || {
        parquet_size(f.clone(), Some(Encoding::PLAIN), false, 3)
    });
    report("f64 parquet BYTE_STREAM_SPLIT + zstd(3)", n, || {
        parquet_size(f.clone(), Some(Encoding::BYTE_STREAM_SPLIT), false, 3)
    });
    report("f64 parquet dictionary + zstd(3)", n, || {
        parquet_size(f.clone(), None, true, 3)
    });
    report("f64 parquet BYTE_STREAM_SPLIT + zstd(9)", n, || {
        parquet_size(f.clone(), Some(Encoding::BYTE_STREAM_SPLIT), false, 9)
    });
    report("f64 pco (level 8)", n, || {
        pco::standalone::simple_compress(&values, &pco::ChunkConfig::default())
            .unwrap()
            .len()
    });
    let ints: Vec<i64> = values.iter().map(|v| *v as i64).collect();
    let i: ArrayRef = Arc::new(Int64Array::from(ints.clone()));
    report("i64 parquet DELTA_BINARY_PACKED + zstd(3)", n, || {
        parquet_size(i.clone(), Some(Encoding::DELTA_BINARY_PACKED), false, 3)
    });
    report("i64 pco (level 8)", n, || {
        pco::standalone::simple_compress(&ints, &pco::ChunkConfig::default())
            .unwrap()
            .len()
    });
    let t: ArrayRef = Arc::new(Int64Array::from(times.clone()));
    report("time parquet DELTA_BINARY_PACKED + zstd(3)", n, || {
        parquet_size(t.clone(), Some(Encoding::DELTA_BINARY_PACKED), false, 3)
    });
    report("time pco (level 8)", n, || {
        pco::standalone::simple_compress(&times, &pco::ChunkConfig::default())
            .unwrap()
            .len()
    });
}
