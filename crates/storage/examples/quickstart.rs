//! Quick start: opens an engine in `./data` (or the directory given), loads a day of example
//! cpu data for 10 hosts, and prints the latest value of every host and the row count.
//!
//! Run: `cargo run --release -p tempora-storage --example quickstart [DIR]`

use tempora_model::{FieldValue, RowBatchBuilder, Timestamp};
use tempora_storage::{Engine, EngineIo, EngineOptions, Matcher, ScanRequest};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "data".into());
    let engine = Engine::open(EngineOptions::default(), EngineIo::local(&dir)?)?;
    let start = 1_700_000_000_000_000_000i64;
    for step in 0..8640i64 {
        let mut b = RowBatchBuilder::new("cpu")?;
        for h in 0..10 {
            let host = format!("host_{h}");
            let region = ["eu-west", "us-east"][h % 2];
            let v = 50.0 + 40.0 * ((step as f64 / 360.0) + h as f64).sin();
            b.push(
                &[("host", &host), ("region", region)],
                &[("usage_user", FieldValue::F64(v.round()))],
                Timestamp(start + step * 10_000_000_000),
            )?;
        }
        engine.write(b.finish())?;
    }
    engine.flush()?;
    let rows: usize = engine
        .scan("cpu", &ScanRequest::default())?
        .iter()
        .map(|b| b.num_rows())
        .sum();
    println!("cpu holds {rows} rows in {dir}");
    let latest = engine.latest("cpu", &Matcher::Eq("region".into(), "eu-west".into()), None)?;
    println!(
        "latest usage_user in eu-west:\n{}",
        arrow::util::pretty::pretty_format_batches(&[latest])?
    );
    engine.close()?;
    Ok(())
}
