//! Prometheus remote write against the real binary: a snappy protobuf body posted with curl
//! to both paths, one table per metric with labels as tags, bad series named by position
//! while the others are written, and hostile bodies refused with the server up.

mod common;

use common::{Server, post_args};
use tempora_server::prom::proto::encode;

fn send(s: &Server, path: &str, raw: &[u8], dir: &std::path::Path) -> (String, String) {
    let body = snap::raw::Encoder::new().compress_vec(raw).unwrap();
    let file = dir.join("body.bin");
    std::fs::write(&file, body).unwrap();
    post_args(
        &s.url(path),
        &[
            "-H",
            "Content-Encoding: snappy",
            "-H",
            "Content-Type: application/x-protobuf",
            "-H",
            "X-Prometheus-Remote-Write-Version: 0.1.0",
            "--data-binary",
            &format!("@{}", file.display()),
        ],
    )
}

#[test]
fn remote_write_stores_a_table_per_metric() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    let t0 = 1_700_000_000_000i64;
    let raw = encode(&[
        (
            vec![
                ("__name__", "node_load1"),
                ("instance", "a:9100"),
                ("job", "node"),
            ],
            vec![(0.5, t0), (0.75, t0 + 15_000)],
        ),
        (
            vec![
                ("__name__", "node_load1"),
                ("instance", "b:9100"),
                ("job", "node"),
            ],
            vec![(1.25, t0)],
        ),
        (vec![("__name__", "up"), ("job", "node")], vec![(1.0, t0)]),
    ]);
    let (code, text) = send(&s, "/api/v1/write?db=prom", &raw, dir.path());
    assert_eq!(code, "204", "{text}");
    assert_eq!(
        s.psql(
            "prom",
            "SELECT instance, CAST(time AS BIGINT) / 1000000 AS ms, value FROM node_load1 ORDER BY instance, ms"
        ),
        format!("a:9100,{t0},0.5\na:9100,{},0.75\nb:9100,{t0},1.25\n", t0 + 15_000)
    );
    assert_eq!(s.psql("prom", "SELECT job, value FROM up"), "node,1\n");
    // The older path, and bad series among good ones.
    let raw = encode(&[
        (vec![("job", "x")], vec![(1.0, t0)]),
        (vec![("__name__", "up"), ("job", "other")], vec![(0.0, t0)]),
        (vec![("__name__", "up"), ("value", "v")], vec![(0.0, t0)]),
    ]);
    let (code, text) = send(&s, "/api/v1/prom/write?db=prom", &raw, dir.path());
    assert_eq!(code, "400", "{text}");
    let answer: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(answer["written"], 1, "{text}");
    let rejected = answer["rejected"].to_string();
    assert!(
        rejected.contains("series 1: a series without __name__"),
        "{text}"
    );
    assert!(rejected.contains("series 3: label \\\"value\\\""), "{text}");
    assert_eq!(s.psql("prom", "SELECT count(*) FROM up"), "2\n");
    // Hostile bodies: not snappy, snappy of garbage.
    let file = dir.path().join("bad.bin");
    std::fs::write(&file, b"\xff\xff\xff\xff").unwrap();
    let (code, text) = post_args(
        &s.url("/api/v1/write?db=prom"),
        &["--data-binary", &format!("@{}", file.display())],
    );
    assert_eq!(code, "400", "{text}");
    assert!(text.contains("not snappy"), "{text}");
    let (code, text) = send(&s, "/api/v1/write?db=prom", &[0x0a, 0xff], dir.path());
    assert_eq!(code, "400", "{text}");
    assert!(text.contains("invalid protobuf at byte"), "{text}");
    // A query near the bound of 256 operators plans and answers: the planner and DataFusion's
    // optimizer recurse once per level of it, on the server's workers.
    let chain = vec!["node_load1"; 250].join(" >= ");
    let (code, text) = post_args(
        &s.url("/api/v1/query?db=prom"),
        &[
            "--data-urlencode",
            &format!("query={chain}"),
            "--data-urlencode",
            &format!("time={}", (t0 + 15_000) / 1000),
        ],
    );
    assert_eq!(code, "200", "{}", &text[..text.len().min(400)]);
    let answer: serde_json::Value = serde_json::from_str(&text).unwrap();
    let mut values: Vec<&str> = answer["data"]["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["value"][1].as_str().unwrap())
        .collect();
    values.sort();
    assert_eq!(values, ["0.75", "1.25"], "{text}");
    assert!(s.healthy());
    s.stop();
}

/// Debian's Prometheus (2.42) scrapes itself every second and remote-writes into Tempora; the
/// samples Tempora stores are the ones Prometheus answers for the same series and time, label
/// for label and value for value.
#[test]
fn a_real_prometheus_remote_writes_into_tempora() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    let port = common::free_port();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n\
             scrape_configs:\n  - job_name: self\n    static_configs:\n      - targets: ['127.0.0.1:{port}']\n\
             remote_write:\n  - url: http://{}/api/v1/write?db=prom\n    queue_config:\n      batch_send_deadline: 1s\n",
            s.http
        ),
    )
    .unwrap();
    let mut prom = std::process::Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("prom-data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("prometheus is installed (scripts/test-deps.sh)");
    // Wait (bounded) until three scrapes of the request counter have arrived.
    let series = "SELECT CAST(time AS BIGINT) / 1000000 AS ms, value, instance, job, code \
                  FROM prometheus_http_requests_total WHERE handler = '/metrics' \
                  ORDER BY time DESC LIMIT 3";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    let rows = loop {
        let v = s.sql_json("prom", series);
        if let Some(rows) = v["rows"].as_array().filter(|r| r.len() == 3) {
            break rows.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no samples from Prometheus in 90 s: {v}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    for row in &rows {
        let ms = row[0].as_i64().unwrap();
        let url = format!(
            "http://127.0.0.1:{port}/api/v1/query?query=prometheus_http_requests_total%7Bhandler%3D%22%2Fmetrics%22%7D&time={}.{:03}",
            ms / 1000,
            ms % 1000
        );
        let out = common::curl(&[&url]);
        let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let result = &answer["data"]["result"][0];
        assert_eq!(
            result["value"][0].as_f64().unwrap(),
            ms as f64 / 1000.0,
            "{answer}"
        );
        let value: f64 = result["value"][1].as_str().unwrap().parse().unwrap();
        assert_eq!(value, row[1].as_f64().unwrap(), "at {ms}: {answer}");
        for (i, label) in [(2, "instance"), (3, "job"), (4, "code")] {
            assert_eq!(result["metric"][label], row[i], "{label} at {ms}");
        }
    }
    prom.kill().unwrap();
    prom.wait().unwrap();
    s.stop();
}
