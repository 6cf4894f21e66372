//! Prometheus remote write against the real binary: a snappy protobuf body posted with curl
//! to both paths, one table per metric with labels as tags, bad series named by position
//! while the others are written, and hostile bodies refused with the server up.

mod common;

use common::{Server, post_args};
use tempora_server::prom_write::encode;

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
    assert!(s.healthy());
    s.stop();
}
