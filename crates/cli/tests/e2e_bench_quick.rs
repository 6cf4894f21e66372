//! The benchmark suite's quick mode (`bench/quick.sh`) end to end, so the suite cannot rot:
//! generated TSBS data loaded by `tempora bench load` into the real server, every query type
//! run over PostgreSQL and HTTP and on DuckDB with the same rows everywhere, and the report
//! written with its charts.

mod common;

use common::free_port;

#[test]
fn the_quick_benchmark_runs_and_every_system_returns_the_same_rows() {
    let work = tempfile::tempdir().unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/quick.sh");
    let out = std::process::Command::new(script)
        .arg(work.path())
        .env("TEMPORA_BIN", env!("CARGO_BIN_EXE_tempora"))
        .env("BENCH_HTTP_PORT", free_port().to_string())
        .env("BENCH_PG_PORT", free_port().to_string())
        .output()
        .expect("bash runs bench/quick.sh");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    // Tempora over both protocols and DuckDB, each query type once per system; a line without
    // "kind" is a query line (bench/report.py's schema).
    let results = std::fs::read_to_string(work.path().join("results.jsonl")).unwrap();
    let records: Vec<serde_json::Value> = results
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kind = |r: &serde_json::Value| r["kind"].as_str().unwrap_or("query").to_string();
    for system in ["tempora", "tempora-http", "duckdb"] {
        let n = records
            .iter()
            .filter(|r| kind(r) == "query" && r["system"] == system)
            .count();
        assert_eq!(n, 13, "{system}: the thirteen TSBS query types: {results}");
    }
    // Ingest, storage and memory records are written by the same run, and charted.
    for (k, n) in [("ingest", 1), ("storage", 2), ("memory", 2), ("machine", 1)] {
        let got = records.iter().filter(|r| kind(r) == k).count();
        assert!(got >= n, "{k}: {got} lines\n{results}");
    }
    let report = std::fs::read_to_string(work.path().join("report/report.md")).unwrap();
    assert!(report.contains("query_latency.png"), "{report}");
    for chart in [
        "query_latency.png",
        "ingest.png",
        "bytes_per_value.png",
        "memory.png",
    ] {
        let png = std::fs::read(work.path().join("report").join(chart)).unwrap();
        assert!(
            png.starts_with(b"\x89PNG\r\n\x1a\n"),
            "{chart} is a PNG chart"
        );
    }
}

/// The benchmark scripts' own unit tests (report tables and charts, the real-data compression
/// mapping, the memory sampler, the query types' parameters, texts and rows), so that `cargo test` runs them too.
#[test]
fn the_benchmark_scripts_unit_tests_pass() {
    let bench = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench");
    let out = std::process::Command::new("python3")
        .args([
            "-m",
            "unittest",
            "test_report",
            "test_compression",
            "test_rss_sampler",
            "test_tsbs_queries",
        ])
        .current_dir(bench)
        .output()
        .expect("python3 runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("\nOK"), "{stderr}");
    assert!(
        !stderr.contains("skipped"),
        "no test may be skipped: {stderr}"
    );
}
