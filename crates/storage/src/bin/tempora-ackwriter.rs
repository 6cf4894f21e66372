//! Test helper for crash tests: writes numbered batches into an engine at `DIR` as fast as it
//! can and prints `ack N` on stdout after batch N is acknowledged. A test kills it with
//! SIGKILL at a random moment and checks that every acknowledged batch survived.
//!
//! Usage: `tempora-ackwriter DIR FIRST_BATCH ROWS_PER_BATCH`

use std::io::Write;

use tempora_model::{FieldValue, RowBatchBuilder, Timestamp};
use tempora_storage::{Engine, EngineIo, EngineOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, dir, first, rows] = args.as_slice() else {
        return Err("usage: tempora-ackwriter DIR FIRST_BATCH ROWS_PER_BATCH".into());
    };
    let (first, rows): (u64, u64) = (first.parse()?, rows.parse()?);
    let opts = EngineOptions {
        flush_threshold_bytes: 256 << 10,
        write_stall_bytes: 64 << 20,
        ..EngineOptions::default()
    };
    let engine = Engine::open(opts, EngineIo::local(dir)?)?;
    let mut out = std::io::stdout().lock();
    for n in first.. {
        let mut b = RowBatchBuilder::new("ack")?;
        for r in 0..rows {
            let host = format!("h{}", r % 16);
            let t = (n * rows + r) as i64;
            b.push(
                &[("host", &host)],
                &[("batch", FieldValue::U64(n))],
                Timestamp(t),
            )?;
        }
        engine.write(b.finish())?;
        writeln!(out, "ack {n}")?;
        out.flush()?;
    }
    Ok(())
}
