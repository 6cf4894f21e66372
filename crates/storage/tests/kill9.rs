//! `kill -9` at random moments during heavy writes, repeated on the same data directory:
//! every batch acknowledged before a kill is present after restart, exactly once.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use arrow::array::{Array, AsArray};
use arrow::datatypes::UInt64Type;
use tempora_storage::{Engine, EngineIo, EngineOptions, ScanRequest};

const ROWS: u64 = 200;

#[test]
fn acknowledged_batches_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let mut state = 0x2545F4914F6CDD1Du64;
    let mut next_batch = 0u64;
    let mut acked: Vec<std::ops::Range<u64>> = Vec::new();
    for round in 0..6 {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let kill_after = 5 + state % 150; // acknowledgements to wait for before the kill
        let mut child = Command::new(env!("CARGO_BIN_EXE_tempora-ackwriter"))
            .args([
                dir.path().to_str().unwrap(),
                &next_batch.to_string(),
                &ROWS.to_string(),
            ])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut seen = 0;
        while seen < kill_after {
            let line = lines.next().expect("writer exited early").unwrap();
            let n: u64 = line.strip_prefix("ack ").unwrap().parse().unwrap();
            assert_eq!(n, next_batch + seen, "round {round}: acks in order");
            seen += 1;
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        // Only acknowledgements read before the kill are asserted; later batches may or may
        // not have landed, in part (a batch spans workers) or whole.
        acked.push(next_batch..next_batch + seen);
        // The next writer starts past anything the killed one may have written.
        next_batch += seen + 1000;
    }
    let engine = Engine::open(
        EngineOptions::default(),
        EngineIo::local(dir.path()).unwrap(),
    )
    .unwrap();
    let mut rows_per_batch: BTreeMap<u64, u64> = BTreeMap::new();
    for b in engine.scan("ack", &ScanRequest::default()).unwrap() {
        let col = b
            .column_by_name("batch")
            .unwrap()
            .as_primitive::<UInt64Type>();
        for i in 0..b.num_rows() {
            assert!(col.is_valid(i));
            *rows_per_batch.entry(col.value(i)).or_default() += 1;
        }
    }
    let mut checked = 0;
    for range in &acked {
        for n in range.clone() {
            assert_eq!(
                rows_per_batch.get(&n),
                Some(&ROWS),
                "acknowledged batch {n} lost rows"
            );
            checked += 1;
        }
    }
    assert!(checked >= 6 * 5, "{checked} acknowledged batches checked");
}
