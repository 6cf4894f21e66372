//! WAL throughput: appends ~1 KiB records (group commits of 64, `SyncPolicy::None`) until
//! the log holds `WAL_BENCH_MB` MiB (default 256), then times `Wal::open` and a full `replay`
//! on 2 threads (and on 1 for comparison, then on 2 again).
//!
//! Run: `WAL_BENCH_MB=1024 cargo bench -p tempora-wal --bench replay`
//! The log goes to a temporary directory under `WAL_BENCH_DIR` (default: the system temp dir).
//! The page cache is not dropped, so open/replay read warm files.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tempora_wal::{FsLogStore, SeqNo, SyncPolicy, Wal, WalError, WalOptions};

const PAYLOAD: usize = 1024;
const GROUP: u64 = 64;

fn mb_per_s(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / (1 << 20) as f64 / d.as_secs_f64()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mb: u64 = std::env::var("WAL_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let base = std::env::var_os("WAL_BENCH_DIR").map_or_else(std::env::temp_dir, Into::into);
    let dir = tempfile::tempdir_in(base)?;
    let store = Arc::new(FsLogStore::new(dir.path())?);
    let opts = WalOptions {
        sync: SyncPolicy::None,
        ..WalOptions::default()
    };
    println!(
        "wal bench: {mb} MiB of {PAYLOAD}-byte records in {}",
        dir.path().display()
    );

    let target = mb << 20;
    let mut payload = vec![0u8; PAYLOAD];
    let mut wal = Wal::open(store.clone(), opts.clone())?;
    let start = Instant::now();
    let mut seq = 0u64;
    while wal.stats().log_bytes < target {
        for _ in 0..GROUP {
            seq += 1;
            payload[..8].copy_from_slice(&seq.to_le_bytes());
            payload[8] = seq as u8;
            wal.append(SeqNo(seq), &payload)?;
        }
        wal.commit()?;
    }
    wal.sync()?;
    let append = start.elapsed();
    let stats = wal.stats();
    drop(wal);
    println!(
        "append+commit: {seq} records, {:.0} MiB in {} segments, {:.2} s, {:.0} MiB/s ({} syncs)",
        stats.log_bytes as f64 / (1 << 20) as f64,
        stats.segments,
        append.as_secs_f64(),
        mb_per_s(stats.log_bytes, append),
        stats.syncs,
    );

    // threads=2 runs first and last: the first open after writing pays for a cold LRU.
    for threads in [2, 1, 2] {
        let start = Instant::now();
        let wal = Wal::open(store.clone(), opts.clone())?;
        let open = start.elapsed();
        let (mut n, mut bytes, mut check) = (0u64, 0u64, 0u64);
        wal.replay(SeqNo(0), threads, |s, p| {
            n += 1;
            bytes += p.len() as u64;
            check = check.wrapping_add(s.0 ^ p[8] as u64);
            Ok::<(), WalError>(())
        })?;
        let total = start.elapsed();
        assert_eq!(n, seq, "replayed every record");
        println!(
            "threads={threads}: open {:.2} s, replay {:.2} s, open+replay {:.2} s = {:.0} MiB/s (checksum {check:x})",
            open.as_secs_f64(),
            (total - open).as_secs_f64(),
            total.as_secs_f64(),
            mb_per_s(stats.log_bytes, total),
        );
        let _ = bytes;
    }
    Ok(())
}
