//! JSON ingestion against the real binary with curl: JSON lines and arrays in both object
//! forms, each bad object answered by number and reason while the others are written, and
//! the rows read back over psql.

mod common;

use common::{Server, post_args};

fn ingest(s: &Server, query: &str, body: &str) -> (String, String) {
    post_args(
        &s.url(&format!("/api/v1/ingest/json?{query}")),
        &[
            "-H",
            "Content-Type: application/x-ndjson",
            "--data-binary",
            body,
        ],
    )
}

#[test]
fn json_rows_are_written_and_bad_objects_named() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    // Explicit objects, JSON lines.
    let body = concat!(
        r#"{"measurement":"cpu","tags":{"host":"a"},"fields":{"usage":1.5,"ok":true},"time":1000}"#,
        "\n",
        r#"{"measurement":"cpu","tags":{"host":"b"},"fields":{"usage":2.5,"ok":false},"time":"1970-01-01T00:00:00.000002Z"}"#,
        "\n"
    );
    assert_eq!(ingest(&s, "db=j", body).0, "204");
    // Flat objects in an array, the table from the query, milliseconds.
    let body = r#"[{"host":"c","usage":3,"time":5},{"host":"d","usage":4,"time":6}]"#;
    assert_eq!(ingest(&s, "db=j&table=cpu&precision=ms", body).0, "204");
    assert_eq!(
        s.psql(
            "j",
            "SELECT host, CAST(time AS BIGINT) AS t, CAST(usage * 10 AS BIGINT) FROM cpu ORDER BY t"
        ),
        "a,1000,15\nb,2000,25\nc,5000000,30\nd,6000000,40\n"
    );
    // Bad objects among good ones: named by number, the good ones written.
    let body = concat!(
        r#"{"v":1,"time":1}"#,
        "\n",
        r#"{"v":[1,2],"time":2}"#,
        "\n",
        "{not json\n",
        r#"{"v":"text","time":3}"#,
        "\n",
        r#"{"v":4,"time":4}"#,
        "\n",
    );
    let (code, text) = ingest(&s, "db=j&table=m&tags=", body);
    assert_eq!(code, "400", "{text}");
    let answer: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(answer["written"], 2, "{text}");
    let rejected: Vec<(i64, String)> = answer["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["line"].as_i64().unwrap(),
                r["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        rejected.iter().map(|r| r.0).collect::<Vec<_>>(),
        vec![2, 3, 4],
        "{text}"
    );
    assert!(rejected[0].1.contains("arrays"), "{text}");
    assert!(rejected[1].1.contains("invalid JSON"), "{text}");
    // Object 4 writes a string into the float column: the engine's type check names it.
    assert!(rejected[2].1.contains('v'), "{text}");
    assert_eq!(
        s.psql(
            "j",
            "SELECT CAST(time AS BIGINT) AS t, CAST(v AS BIGINT) FROM m ORDER BY t"
        ),
        "1,1\n4,4\n"
    );
    // Whole-body refusals.
    for (name, body, want) in [
        ("empty", "\n\n", "empty"),
        ("broken array", "[{\"v\":1},", "array is invalid"),
    ] {
        let (code, text) = ingest(&s, "db=j&table=m", body);
        assert_eq!(code, "400", "{name}: {text}");
        assert!(text.contains(want), "{name}: {text}");
    }
    assert!(s.healthy());
    s.stop();
}
