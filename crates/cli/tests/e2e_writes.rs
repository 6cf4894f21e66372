//! Writes end to end: line-protocol edge cases over HTTP (curl), the InfluxDB client library
//! for Python, and CSV through `POST /api/v1/import` and `tempora import`; rows read back
//! over the PostgreSQL port with psql and psycopg.

mod common;

use std::process::Command;

use common::{Server, post, python};

/// (name, write URL path and query, body, SQL, psql's unaligned answer)
type Case = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
);

#[test]
fn line_protocol_edge_cases_store_what_influxdb_would() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    let cases: &[Case] = &[
        (
            "escaped space in the measurement",
            "/write?db=lp&precision=s",
            "my\\ m,t=a v=1 1\n",
            "SELECT t, v FROM \"my m\"",
            "a,1\n",
        ),
        (
            "escaped comma and equals in tag key and value",
            "/write?db=lp&precision=s",
            "m2,k\\,e\\=y=v\\,a\\=l\\ x v=1 1\n",
            "SELECT \"k,e=y\" FROM m2",
            "v,a=l x\n",
        ),
        (
            "escaped space, comma and equals in a field key",
            "/write?db=lp&precision=s",
            "m3 f\\ o\\,o\\=x=2 1\n",
            "SELECT \"f o,o=x\" FROM m3",
            "2\n",
        ),
        (
            "quoted string with escaped quotes and backslash",
            "/write?db=lp&precision=s",
            "m4 s=\"a \\\"q\\\" \\\\ b, c=d\" 1\n",
            "SELECT s FROM m4",
            "a \"q\" \\ b, c=d\n",
        ),
        (
            "integers with i and unsigned with u",
            "/write?db=lp&precision=s",
            "m5 i=-42i,u=18446744073709551615u 1\n",
            "SELECT i, u FROM m5",
            "-42,18446744073709551615\n",
        ),
        (
            "booleans in every spelling",
            "/write?db=lp&precision=s",
            "m6 b=t 1\nm6 b=T 2\nm6 b=true 3\nm6 b=True 4\nm6 b=TRUE 5\n\
             m6 b=f 6\nm6 b=F 7\nm6 b=false 8\nm6 b=False 9\nm6 b=FALSE 10\n",
            "SELECT string_agg(CASE WHEN b THEN 't' ELSE 'f' END, '' ORDER BY time) FROM m6",
            "tttttfffff\n",
        ),
        (
            "duplicate points: the last write wins",
            "/write?db=lp&precision=s",
            "m8,h=a v=1 5\nm8,h=a v=2 5\n",
            "SELECT count(*), max(v) FROM m8",
            "1,2\n",
        ),
        (
            "out-of-order points come back in time order",
            "/write?db=lp&precision=s",
            "m9 v=3 30\nm9 v=1 10\nm9 v=2 20\n",
            "SELECT string_agg(CAST(v AS VARCHAR), ' ' ORDER BY time) FROM m9",
            "1.0 2.0 3.0\n",
        ),
        (
            "comments, blank lines and CRLF line ends",
            "/write?db=lp&precision=s",
            "# a comment\n\nm11 v=1 1\r\n  \nm11 v=2 2\r\n",
            "SELECT count(*) FROM m11",
            "2\n",
        ),
        (
            "UTF-8 in names and values",
            "/write?db=lp&precision=s",
            "måling,by=Zürich\\ Ø temperatur=-3.5,note=\"snø ❄\" 1\n",
            "SELECT by, temperatur, note FROM \"måling\"",
            "Zürich Ø,-3.5,snø ❄\n",
        ),
        (
            "v2 endpoint with bucket, org and precision",
            "/api/v2/write?bucket=lp&org=anything&precision=ms",
            "m12 v=7i 1500\n",
            "SELECT v, CAST(time AS BIGINT) FROM m12",
            "7,1500000000\n",
        ),
    ];
    for (name, path, body, sql, want) in cases {
        let (code, answer) = post(&s.url(path), body);
        assert_eq!(code, "204", "{name}: {answer}");
        assert_eq!(&s.psql("lp", sql), want, "{name}");
    }
    // Every precision: the same number 2 in each unit.
    for (p, ns) in [
        ("ns", 2i64),
        ("n", 2),
        ("us", 2_000),
        ("u", 2_000),
        ("ms", 2_000_000),
        ("s", 2_000_000_000),
        ("m", 120_000_000_000),
        ("h", 7_200_000_000_000),
    ] {
        let (code, answer) = post(
            &s.url(&format!("/write?db=lp&precision={p}")),
            &format!("m7,p={p} v=1 2\n"),
        );
        assert_eq!(code, "204", "precision {p}: {answer}");
        let got = s.psql(
            "lp",
            &format!("SELECT CAST(time AS BIGINT) FROM m7 WHERE p = '{p}'"),
        );
        assert_eq!(got, format!("{ns}\n"), "precision {p}");
    }
    // A line without a timestamp takes the server's clock.
    let before = now_ns();
    let (code, _) = post(&s.url("/write?db=lp"), "m10 v=1\n");
    assert_eq!(code, "204");
    let after = now_ns();
    let got = s.psql(
        "lp",
        &format!(
            "SELECT count(*) FROM m10 WHERE CAST(time AS BIGINT) BETWEEN {before} AND {after}"
        ),
    );
    assert_eq!(got, "1\n", "server time between {before} and {after}");
    // A later write of the same point replaces it.
    let (code, _) = post(&s.url("/write?db=lp&precision=s"), "m8,h=a v=3 5\n");
    assert_eq!(code, "204");
    assert_eq!(s.psql("lp", "SELECT count(*), max(v) FROM m8"), "1,3\n");
    s.stop();
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64
}

#[test]
fn the_influxdb_python_client_writes_and_psycopg_reads() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    let writer = r#"
import sys
from influxdb_client import InfluxDBClient, Point, WritePrecision
from influxdb_client.client.write_api import SYNCHRONOUS
with InfluxDBClient(url="http://" + sys.argv[1], token="unused", org="o") as c:
    assert c.ping()
    w = c.write_api(write_options=SYNCHRONOUS)
    w.write(bucket="ifx", record=Point("weather").tag("station", "oslo 1")
            .field("temp", 3.5).field("ok", True).field("n", 7)
            .time(1700000000, WritePrecision.S), write_precision=WritePrecision.S)
    w.write(bucket="ifx", record="weather,station=bergen temp=8.25,ok=false,n=9i 1700000060",
            write_precision=WritePrecision.S)
    w.write(bucket="ifx", record=[{"measurement": "weather", "tags": {"station": "tromsø"},
            "fields": {"temp": -1.0, "ok": True, "n": 1}, "time": 1700000120000000000}])
"#;
    python(writer, &[&s.http]);
    let reader = r#"
import sys, psycopg
with psycopg.connect(host="127.0.0.1", port=int(sys.argv[1]), dbname="ifx", user="tempora") as c:
    for r in c.execute("SELECT station, temp, ok, n, time FROM weather ORDER BY time").fetchall():
        print(r[0], r[1], r[2], r[3], r[4].isoformat())
"#;
    let out = python(reader, &[&s.pg.to_string()]);
    assert_eq!(
        out,
        "oslo 1 3.5 True 7 2023-11-14T22:13:20+00:00\n\
         bergen 8.25 False 9 2023-11-14T22:14:20+00:00\n\
         tromsø -1.0 True 1 2023-11-14T22:15:20+00:00\n"
    );
    s.stop();
}

#[test]
fn csv_imports_over_http_and_with_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    let csv = "ts,site,temp,status\n\
               2024-01-01T00:00:00Z,north,1.5,ok\n\
               not a time,north,2.5,ok\n\
               2024-01-01 00:01:00,south,-0.5,\"low, very\"\n\
               2024-01-01T00:02:00Z,south,,\n\
               2024-01-01T00:03:00+01:00,north,3,ok\n";
    let (code, answer) = post(
        &s.url("/api/v1/import?db=imp&table=sensors&time_column=ts&tags=site"),
        csv,
    );
    assert_eq!(code, "400", "{answer}");
    let v: serde_json::Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(v["written"], 3, "{answer}");
    let rows: Vec<u64> = v["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["line"].as_u64().unwrap())
        .collect();
    assert_eq!(rows, vec![2, 4], "{answer}");
    assert!(
        v["rejected"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("\"not a time\""),
        "{answer}"
    );
    assert_eq!(
        s.psql(
            "imp",
            "SELECT site, temp, status, CAST(time AS BIGINT) AS t FROM sensors ORDER BY time"
        ),
        "north,3,ok,1704063780000000000\n\
         north,1.5,ok,1704067200000000000\n\
         south,-0.5,\"low, very\",1704067260000000000\n"
            .replace("\"low, very\"", "low, very")
    );
    // A type conflict found by the engine is named by its CSV row too.
    let (code, answer) = post(
        &s.url("/api/v1/import?db=imp&table=sensors&time_column=ts&tags=site"),
        "ts,site,temp\n2024-01-02T00:00:00Z,x,1\n2024-01-02T00:00:01Z,x,hot\n",
    );
    assert_eq!(code, "400", "{answer}");
    assert!(answer.contains("\"line\":2"), "{answer}");
    assert!(answer.contains("table \\\"sensors\\\""), "{answer}");
    let (code, answer) = post(&s.url("/api/v1/import?db=imp"), csv);
    assert_eq!(code, "400");
    assert!(answer.contains("`table` parameter is required"), "{answer}");

    // The CLI: a file, tags, a summary.
    let file = dir.path().join("in.csv");
    std::fs::write(&file, "time,host,load\n1,a,0.5\n2,b,0.75\n3,a,1\nbad,a,1\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tempora"))
        .args(["import", file.to_str().unwrap(), "--host", &s.http])
        .args(["--db", "imp", "--table", "load", "--tags", "host"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "one row is bad: exit status says so");
    assert!(
        stdout.contains("imported 3 rows into imp.load") && stdout.contains("1 rejected"),
        "{stdout}"
    );
    assert!(stdout.contains("row 4:"), "{stdout}");
    assert_eq!(
        s.psql(
            "imp",
            "SELECT host, count(*) FROM load GROUP BY host ORDER BY host"
        ),
        "a,2\nb,1\n"
    );
    s.stop();
}

#[test]
fn bench_gen_output_loads_with_bench_load() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    let data = dir.path().join("cpu.lp");
    let bin = env!("CARGO_BIN_EXE_tempora");
    let generate = |out: &std::path::Path| {
        let st = Command::new(bin)
            .args([
                "bench",
                "gen",
                "--hosts",
                "7",
                "--duration-secs",
                "600",
                "--seed",
                "5",
            ])
            .arg("--out")
            .arg(out)
            .status()
            .unwrap();
        assert!(st.success());
        std::fs::read(out).unwrap()
    };
    let bytes = generate(&data);
    assert_eq!(
        bytes,
        generate(&dir.path().join("again.lp")),
        "same seed, same bytes"
    );
    let out = Command::new(bin)
        .args(["bench", "load"])
        .arg(&data)
        .args([
            "--url",
            &s.url("/write?db=bench"),
            "--workers",
            "3",
            "--batch",
            "25",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(
        stdout.starts_with("loaded 420 rows (4200 values"),
        "{stdout}"
    );
    assert_eq!(
        s.psql(
            "bench",
            "SELECT count(*), count(DISTINCT hostname) FROM cpu"
        ),
        "420,7\n"
    );
    s.stop();
}

/// devops and iot data from `bench gen` load whole into the real server, and `bench load
/// --json-out` appends one ingest record per run in bench/report.py's schema.
#[test]
fn devops_and_iot_data_load_and_the_loader_writes_ingest_records() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    let bin = env!("CARGO_BIN_EXE_tempora");
    let results = dir.path().join("results.jsonl");
    for (use_case, db) in [("devops", "devops"), ("iot", "iot")] {
        let data = dir.path().join(format!("{use_case}.lp"));
        let st = Command::new(bin)
            .args(["bench", "gen", "--use-case", use_case, "--hosts", "6"])
            .args(["--duration-secs", "3000", "--seed", "9", "--out"])
            .arg(&data)
            .status()
            .unwrap();
        assert!(st.success(), "{use_case}");
        let out = Command::new(bin)
            .args(["bench", "load"])
            .arg(&data)
            .args([
                "--url",
                &s.url(&format!("/write?db={db}")),
                "--batch",
                "100",
            ])
            .args(["--system", "tempora", "--dataset", use_case, "--json-out"])
            .arg(&results)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{use_case}: {stdout}");
        let lines = std::fs::read_to_string(&data).unwrap().lines().count();
        assert!(
            stdout.starts_with(&format!("loaded {lines} rows")),
            "{stdout}"
        );
    }
    // devops: 9 tables, 6 hosts x 300 steps each.
    let tables = s.psql(
        "devops",
        "SELECT table_name FROM information_schema.tables WHERE table_catalog = 'devops' \
         AND table_schema = 'public' ORDER BY table_name",
    );
    assert_eq!(
        tables,
        "cpu\ndisk\ndiskio\nkernel\nmem\nnet\nnginx\npostgresl\nredis\n"
    );
    assert_eq!(
        s.psql(
            "devops",
            "SELECT count(*), count(DISTINCT hostname) FROM net"
        ),
        "1800,6\n"
    );
    // iot: every written row is stored (no two share a series and time), some points are
    // missing, and some values are NULL.
    let iot_lines = std::fs::read_to_string(dir.path().join("iot.lp")).unwrap();
    let readings = iot_lines
        .lines()
        .filter(|l| l.starts_with("readings,"))
        .count();
    let got = s.psql(
        "iot",
        "SELECT count(*), count(latitude) < count(*), count(*) < 6 * 300 FROM readings",
    );
    assert_eq!(got, format!("{readings},t,t\n"));
    // One ingest record per load, in report.py's schema.
    let records: Vec<serde_json::Value> = std::fs::read_to_string(&results)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 2);
    for (r, use_case) in records.iter().zip(["devops", "iot"]) {
        assert_eq!(r["kind"], "ingest");
        assert_eq!(r["dataset"], use_case);
        assert!(r["rows_per_s"].as_f64().unwrap() > 0.0, "{r}");
        assert_eq!(r["failed_rows"], 0);
        assert!(r["samples"].is_array(), "{r}");
    }
    s.stop();
}

/// `bench load --max-secs` ends a run over an endless input (`yes`) at the time given.
#[test]
fn the_loader_stops_an_endless_input_at_max_secs() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    let bin = env!("CARGO_BIN_EXE_tempora");
    let mut yes = Command::new("yes")
        .arg("endless,host=a v=1i")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = Command::new(bin)
        .args(["bench", "load", "--max-secs", "0.5", "--batch", "1000"])
        .args(["--url", &s.url("/write?db=endless")])
        .stdin(yes.stdout.take().unwrap())
        .output()
        .unwrap();
    yes.kill().unwrap();
    yes.wait().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.starts_with("loaded "), "{stdout}");
    assert!(!stdout.starts_with("loaded 0 rows"), "{stdout}");
    for bad in ["0", "-1", "NaN", "inf"] {
        let out = Command::new(bin)
            .args(["bench", "load", "/dev/null", &format!("--max-secs={bad}")])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{bad}");
        assert!(
            stderr.contains("--max-secs must be a positive"),
            "{bad}: {stderr}"
        );
    }
    s.stop();
}
