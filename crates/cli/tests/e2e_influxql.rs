//! InfluxQL on `/query` against the real binary: the statements Grafana's InfluxDB data
//! source sends (its default query with `$timeFilter` expanded, the editor's SHOW queries),
//! answered in InfluxDB 1.8's JSON shape over curl; the same data read by Debian's `influx`
//! CLI (1.6) and Python's `influxdb` client; an error ending only its own statement, a text
//! that does not parse refused whole.

mod common;

use common::{Server, curl};

fn query(s: &Server, db: &str, q: &str, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "-sG".to_string(),
        s.url("/query"),
        "--data-urlencode".into(),
        format!("db={db}"),
        "--data-urlencode".into(),
        format!("q={q}"),
    ];
    for e in extra {
        args.push("--data-urlencode".into());
        args.push(e.to_string());
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = curl(&refs);
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("JSON from {q}: {}", String::from_utf8_lossy(&out.stdout)))
}

const T0: i64 = 1_700_000_000; // seconds

fn load(s: &Server) {
    let mut lp = String::new();
    for i in 0..6i64 {
        let t = (T0 + i * 60) * 1_000_000_000;
        lp.push_str(&format!(
            "cpu,host=a,region=eu usage={},idle={} {t}\n",
            10 + i,
            90 - i
        ));
        lp.push_str(&format!("cpu,host=b usage={} {t}\n", 50 + i));
    }
    lp.push_str(&format!("mem,host=a used=1i {}\n", T0 * 1_000_000_000));
    let (code, body) = common::post(&s.url("/write?db=telegraf"), &lp);
    assert_eq!(code, "204", "{body}");
}

#[test]
fn grafana_s_influxql_is_answered_as_influxdb_answers_it() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    load(&s);
    // Grafana's default query, $timeFilter expanded to epoch milliseconds.
    let q = format!(
        r#"SELECT mean("usage") FROM "cpu" WHERE ("region" =~ /^(eu|)$/) AND time >= {}ms and time <= {}ms GROUP BY time(2m), "host" fill(null)"#,
        T0 * 1000,
        (T0 + 300) * 1000
    );
    let v = query(&s, "telegraf", &q, &["epoch=ms"]);
    let series = v["results"][0]["series"].as_array().expect("series");
    assert_eq!(series.len(), 2, "{v}");
    assert_eq!(series[0]["name"], "cpu");
    assert_eq!(series[0]["tags"], serde_json::json!({"host": "a"}));
    assert_eq!(series[0]["columns"], serde_json::json!(["time", "mean"]));
    let ms = |min: i64| (T0 / 120 * 120 + min * 60) * 1000;
    assert_eq!(
        series[0]["values"],
        serde_json::json!([[ms(0), 10], [ms(2), 11.5], [ms(4), 13.5], [ms(6), 15]])
    );
    assert_eq!(
        series[1]["tags"],
        serde_json::json!({"host": "b"}),
        "a missing tag matches ^$"
    );
    // The editor's statements, several in one request.
    let v = query(
        &s,
        "telegraf",
        "SHOW MEASUREMENTS WITH MEASUREMENT =~ /c/ LIMIT 100; SHOW TAG KEYS FROM \"cpu\"; \
         SHOW FIELD KEYS FROM \"cpu\"; SHOW TAG VALUES FROM \"cpu\" WITH KEY = \"host\"; \
         SHOW RETENTION POLICIES ON \"telegraf\"; SELECT usage, mean(idle) FROM cpu; SHOW SERIES FROM mem; \
         SHOW TAG VALUES FROM \"cpu\" WITH KEY = \"host\" WHERE \"region\" = ''; \
         SHOW TAG VALUES FROM \"cpu\" WITH KEY = \"host\" WHERE \"usage\" > 14; \
         SHOW SERIES FROM \"cpu\" WHERE \"host\" =~ /a/",
        &[],
    );
    let r = &v["results"];
    assert_eq!(r[0]["series"][0]["values"], serde_json::json!([["cpu"]]));
    assert_eq!(
        r[1]["series"][0]["values"],
        serde_json::json!([["host"], ["region"]])
    );
    assert_eq!(
        r[2]["series"][0]["values"],
        serde_json::json!([["idle", "float"], ["usage", "float"]])
    );
    assert_eq!(
        r[3]["series"][0]["values"],
        serde_json::json!([["host", "a"], ["host", "b"]])
    );
    assert_eq!(r[4]["series"][0]["columns"][0], "name", "{v}");
    assert!(
        r[5]["error"].as_str().unwrap().contains("mixing aggregate"),
        "{v}"
    );
    assert_eq!(
        r[6]["series"][0]["values"],
        serde_json::json!([["mem,host=a"]])
    );
    // From the series index (tags only; a missing tag is ''), and by a scan (a field).
    assert_eq!(
        r[7]["series"][0]["values"],
        serde_json::json!([["host", "b"]]),
        "{v}"
    );
    assert_eq!(
        r[8]["series"][0]["values"],
        serde_json::json!([["host", "a"], ["host", "b"]]),
        "{v}"
    );
    assert_eq!(
        r[9]["series"][0]["values"],
        serde_json::json!([["cpu,host=a,region=eu"]]),
        "{v}"
    );
    // A text that does not parse is refused whole, as InfluxDB refuses it.
    let v = query(&s, "telegraf", "SHOW MEASUREMENTS; SELECT nope FROM", &[]);
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .starts_with("error parsing query: found EOF"),
        "{v}"
    );
    // Raw points, newest first; a selector reports its point's time.
    let v = query(
        &s,
        "telegraf",
        "SELECT usage, idle FROM cpu WHERE host = 'a' ORDER BY time DESC LIMIT 2; \
         SELECT max(usage) FROM cpu GROUP BY host",
        &["epoch=s"],
    );
    assert_eq!(
        v["results"][0]["series"][0]["values"],
        serde_json::json!([[T0 + 300, 15, 85], [T0 + 240, 14, 86]])
    );
    assert_eq!(
        v["results"][1]["series"][1]["values"],
        serde_json::json!([[T0 + 300, 55]]),
        "{v}"
    );
    // Per-series limits, done in SQL: the newest point of each host (TSBS's lastpoint, from
    // the last-value cache), and two points of each after the first.
    let v = query(
        &s,
        "telegraf",
        "SELECT * FROM cpu GROUP BY host ORDER BY time DESC LIMIT 1; \
         SELECT usage FROM cpu GROUP BY host LIMIT 2 OFFSET 1",
        &["epoch=s"],
    );
    let r = &v["results"];
    assert_eq!(
        r[0]["series"][0]["columns"],
        serde_json::json!(["time", "idle", "region", "usage"]),
        "{v}"
    );
    assert_eq!(
        r[0]["series"][0]["values"],
        serde_json::json!([[T0 + 300, 85, "eu", 15]]),
        "{v}"
    );
    assert_eq!(
        r[0]["series"][1]["values"],
        serde_json::json!([[T0 + 300, null, null, 55]]),
        "{v}"
    );
    assert_eq!(
        r[1]["series"][1]["values"],
        serde_json::json!([[T0 + 60, 51], [T0 + 120, 52]]),
        "{v}"
    );
    assert_eq!(r[1]["series"][1]["tags"], serde_json::json!({"host": "b"}));
    // Telegraf dashboards' rate: one point a minute rising by 1.
    let q = format!(
        "SELECT non_negative_derivative(max(usage), 1m) FROM cpu WHERE host = 'a' AND time >= {}s AND time < {}s GROUP BY time(1m)",
        T0,
        T0 + 360
    );
    let v = query(&s, "telegraf", &q, &["epoch=s"]);
    let b0 = T0 / 60 * 60;
    let want: Vec<serde_json::Value> = (1..=5)
        .map(|i| serde_json::json!([b0 + i * 60, 1]))
        .collect();
    assert_eq!(
        v["results"][0]["series"][0]["values"],
        serde_json::json!(want),
        "{v}"
    );
    assert_eq!(
        v["results"][0]["series"][0]["columns"],
        serde_json::json!(["time", "non_negative_derivative"])
    );
    // As InfluxDB, the range is read from one bucket earlier: its first (partial) bucket has
    // a rate too, and the earlier bucket is not reported.
    let q = format!(
        "SELECT non_negative_derivative(max(usage), 1m) FROM cpu WHERE host = 'a' AND time >= {}s AND time < {}s GROUP BY time(1m)",
        T0 + 60,
        T0 + 360
    );
    let v = query(&s, "telegraf", &q, &["epoch=s"]);
    assert_eq!(
        v["results"][0]["series"][0]["values"],
        serde_json::json!(want),
        "{v}"
    );
    // In descending order each rate is from the later bucket (InfluxDB's sign: -1 a minute
    // here); the end is read one bucket further and nothing after the range is reported.
    let q = format!(
        "SELECT derivative(max(usage), 1m) FROM cpu WHERE host = 'a' AND time >= {}s AND time < {}s GROUP BY time(1m) ORDER BY time DESC",
        T0,
        T0 + 300
    );
    let v = query(&s, "telegraf", &q, &["epoch=s"]);
    let want: Vec<serde_json::Value> = (0..=4)
        .rev()
        .map(|i| serde_json::json!([b0 + i * 60, -1]))
        .collect();
    assert_eq!(
        v["results"][0]["series"][0]["values"],
        serde_json::json!(want),
        "{v}"
    );
    // Paging: LIMIT/OFFSET of SHOW statements, SLIMIT/SOFFSET of series, LIMIT 0 as none.
    let v = query(
        &s,
        "telegraf",
        &format!(
            "SHOW MEASUREMENTS LIMIT 1 OFFSET 1; SHOW TAG VALUES FROM cpu WITH KEY = host LIMIT 1 OFFSET 1; \
             SELECT usage FROM cpu WHERE time >= {T0}s GROUP BY host SLIMIT 1 SOFFSET 1; \
             SELECT usage FROM cpu WHERE host = 'a' LIMIT 0"
        ),
        &["epoch=s"],
    );
    let r = &v["results"];
    assert_eq!(
        r[0]["series"][0]["values"],
        serde_json::json!([["mem"]]),
        "{v}"
    );
    assert_eq!(
        r[1]["series"][0]["values"],
        serde_json::json!([["host", "b"]]),
        "{v}"
    );
    let series = r[2]["series"].as_array().expect("series");
    assert_eq!(series.len(), 1, "{v}");
    assert_eq!(series[0]["tags"], serde_json::json!({"host": "b"}));
    assert_eq!(
        r[3]["series"][0]["values"].as_array().map(Vec::len),
        Some(6),
        "{v}"
    );
    // Without epoch, times are RFC 3339.
    let v = query(
        &s,
        "telegraf",
        "SELECT usage FROM cpu WHERE host = 'b' LIMIT 1",
        &[],
    );
    assert_eq!(
        v["results"][0]["series"][0]["values"][0][0],
        "2023-11-14T22:13:20Z"
    );

    // Debian's influx CLI (InfluxDB 1.6's shell).
    let out = std::process::Command::new("influx")
        .args(["-host", "127.0.0.1", "-port"])
        .arg(s.http.rsplit(':').next().unwrap())
        .args(["-database", "telegraf", "-format", "csv", "-execute"])
        .arg(format!(
            "SELECT sum(usage) FROM cpu WHERE time >= {}s AND time < {}s GROUP BY time(3m)",
            T0 / 180 * 180,
            T0 / 180 * 180 + 360
        ))
        .output()
        .expect("influx is installed (scripts/test-deps.sh)");
    let text = String::from_utf8_lossy(&out.stdout);
    let b = T0 / 180 * 180;
    // Buckets of 3 minutes from the epoch, the range's end excluded: a's and b's values
    // summed per bucket, written as InfluxDB writes whole floats.
    let first: i64 = (0..6)
        .filter(|i| T0 + i * 60 < b + 180)
        .map(|i| 10 + i + 50 + i)
        .sum();
    let second: i64 = (0..6)
        .filter(|i| T0 + i * 60 >= b + 180 && T0 + i * 60 < b + 360)
        .map(|i| 10 + i + 50 + i)
        .sum();
    assert_eq!(
        text,
        format!(
            "name,time,sum\ncpu,{}000000000,{first}\ncpu,{}000000000,{second}\n",
            b,
            b + 180
        ),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Python's influxdb client (1.x).
    let py = format!(
        r#"
from influxdb import InfluxDBClient
c = InfluxDBClient('127.0.0.1', {port}, database='telegraf')
print(sorted(m['name'] for m in c.get_list_measurements()))
r = c.query("SELECT last(usage) AS u FROM cpu GROUP BY host", epoch='s')
print([(k[1]['host'], list(p)) for k, p in r.items()])
# Chunked: two points a chunk, merged back by the client.
r = c.query("SELECT usage FROM cpu WHERE host = 'a'", epoch='s', chunked=True, chunk_size=2)
print([p['usage'] for rs in r for p in rs.get_points()])
"#,
        port = s.http.rsplit(':').next().unwrap()
    );
    let out = common::python(&py, &[]);
    assert_eq!(
        out,
        format!(
            "['cpu', 'mem']\n[('a', [{{'time': {t}, 'u': 15}}]), ('b', [{{'time': {t}, 'u': 55}}])]\n\
             [10, 11, 12, 13, 14, 15]\n",
            t = T0 + 300
        )
    );
    // The chunks themselves: JSON lines of at most chunk_size points, partial until the last.
    let out = curl(&[
        "-sG",
        &s.url("/query"),
        "--data-urlencode",
        "db=telegraf",
        "--data-urlencode",
        "q=SELECT usage FROM cpu WHERE host = 'a'",
        "--data-urlencode",
        "chunked=true",
        "--data-urlencode",
        "chunk_size=4",
    ]);
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["results"][0]["series"][0]["partial"], true);
    assert_eq!(
        lines[1]["results"][0]["series"][0]["values"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    // CSV, as InfluxDB writes it for `Accept: application/csv`.
    let out = curl(&[
        "-sG",
        &s.url("/query"),
        "-H",
        "Accept: application/csv",
        "--data-urlencode",
        "db=telegraf",
        "--data-urlencode",
        "q=SELECT usage FROM cpu WHERE host = 'a' LIMIT 2; SHOW MEASUREMENTS",
    ]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!(
            "name,tags,time,usage\ncpu,,{}000000000,10\ncpu,,{}000000000,11\n\nname,tags,name\nmeasurements,,cpu\nmeasurements,,mem\n",
            T0,
            T0 + 60
        )
    );
    s.stop();
}
