//! Telegraf, unchanged, writing into Tempora: the real agent (built by scripts/test-deps.sh
//! from the Go module proxy with only the plugins used here) sends its own metrics through
//! both InfluxDB outputs at once — `outputs.influxdb` (InfluxDB 1.x: creates its database with
//! `CREATE DATABASE` on /query, then line protocol on /write, Basic auth whose password is the
//! token) and `outputs.influxdb_v2` (/api/v2/write with `Authorization: Token`, gzip) — into a
//! server with authentication on, with a write-only token. Both databases fill with the same
//! measurements and fields.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Server;

fn telegraf() -> std::path::PathBuf {
    let p =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-deps/telegraf");
    assert!(
        p.exists(),
        "{} is missing: run scripts/test-deps.sh",
        p.display()
    );
    p
}

#[test]
fn telegraf_writes_through_both_influxdb_outputs() {
    let dir = tempfile::tempdir().unwrap();
    // Write permission only: the 1.x output's CREATE DATABASE is refused (403, which Telegraf
    // logs and goes on from) and its writes create the database.
    let token = common::token_create(dir.path(), "telegraf", &["--write", "tg1,tg2"]);
    let reader = common::token_create(dir.path(), "reader", &["--read", "tg1,tg2"]);
    let s = Server::start_with(dir.path(), &[("TEMPORA_AUTH", "true")]);
    let conf = dir.path().join("telegraf.conf");
    std::fs::write(
        &conf,
        format!(
            r#"[agent]
  interval = "1s"
  flush_interval = "1s"
  omit_hostname = false
  hostname = "tg-host"
[[inputs.cpu]]
  percpu = false
  totalcpu = true
[[inputs.mem]]
[[inputs.internal]]
  collect_memstats = false
[[outputs.influxdb]]
  urls = ["http://{http}"]
  database = "tg1"
  username = "telegraf"
  password = "{token}"
  skip_database_creation = false
[[outputs.influxdb_v2]]
  urls = ["http://{http}"]
  token = "{token}"
  organization = "any"
  bucket = "tg2"
  content_encoding = "gzip"
"#,
            http = s.http
        ),
    )
    .unwrap();
    let mut agent = Command::new(telegraf())
        .args(["--config", conf.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start telegraf");
    // Both databases get rows of cpu and mem (bounded wait: Telegraf flushes every second).
    let count = |db: &str, table: &str| -> i64 {
        let v = s.sql_json_with(
            db,
            &format!("SELECT count(*) AS n FROM {table}"),
            Some(&reader),
        );
        v["rows"][0][0].as_i64().unwrap_or(0)
    };
    let deadline = Instant::now() + Duration::from_secs(90);
    while !["tg1", "tg2"]
        .iter()
        .all(|db| count(db, "cpu") >= 3 && count(db, "mem") >= 3)
    {
        if let Some(status) = agent.try_wait().unwrap() {
            let mut err = String::new();
            use std::io::Read;
            agent
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            panic!("telegraf exited ({status}): {err}");
        }
        assert!(
            Instant::now() < deadline,
            "Telegraf's rows did not arrive in 90 s"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    agent.kill().unwrap();
    agent.wait().unwrap();
    // The same schema through both outputs: cpu's fields and mem's, the host tag.
    for db in ["tg1", "tg2"] {
        let v = s.sql_json_with(
            db,
            "SELECT host, cpu, usage_user >= 0 AND usage_user <= 100 AS ok FROM cpu LIMIT 1",
            Some(&reader),
        );
        assert_eq!(
            v["rows"][0],
            serde_json::json!(["tg-host", "cpu-total", true]),
            "{db}: {v}"
        );
        let v = s.sql_json_with(
            db,
            "SELECT used > 0 AND total >= used AS ok FROM mem LIMIT 1",
            Some(&reader),
        );
        assert_eq!(v["rows"][0][0], true, "{db}: {v}");
        assert!(
            count(db, "internal_write") >= 1,
            "{db}: Telegraf's own write metrics"
        );
    }
    s.stop();
}
