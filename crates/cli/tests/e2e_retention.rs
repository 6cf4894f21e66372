//! Retention and partition width set by users, end to end: through SQL (psql) and through the
//! InfluxDB Python client and InfluxQL; rows older than the retention refused per line at
//! write; the settings shown by SHOW DATABASES and tempora_tables() and kept across a
//! restart. (Expiry at the deadline is tested with an injected clock in the engine's tests.)

mod common;

use common::{Server, curl, post, python};

fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[test]
fn retention_set_through_sql_refuses_old_rows_and_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    s.psql("public", "CREATE DATABASE ret WITH (ttl = '30d')");
    s.psql(
        "ret",
        "CREATE TABLE short (host TAG, v DOUBLE) WITH (ttl = '1h', partition = '1h')",
    );
    let now = now_s();
    // Line 1 is older than `short`'s hour, line 3 older than the database's 30 days.
    let lines = format!(
        "short,host=a v=1 {}\nshort,host=a v=2 {}\nlong,host=a v=3 {}\nlong,host=a v=4.5 {}\n",
        now - 2 * 3600,
        now - 600,
        now - 40 * 86400,
        now - 86400
    );
    let (code, answer) = post(&s.url("/write?db=ret&precision=s"), &lines);
    assert_eq!(code, "400", "{answer}");
    let body: serde_json::Value = serde_json::from_str(&answer).unwrap();
    let lines: Vec<i64> = body["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["line"].as_i64().unwrap())
        .collect();
    assert_eq!(lines, vec![1, 3], "{answer}");
    assert!(
        body["rejected"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("retention")
    );
    assert_eq!(s.psql("ret", "SELECT count(*) FROM short").trim(), "1");
    assert_eq!(s.psql("ret", "SELECT v FROM long").trim(), "4.5");
    let refused = s.psql_output("ret", "ALTER TABLE long SET (ttl = '10 fortnights')");
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("ttl") && err.contains("unit"), "{err}");
    s.psql("ret", "ALTER TABLE long SET (ttl = 'forever')");
    let shown = "SELECT table_name, ttl, own_ttl, partition FROM tempora_tables() ORDER BY 1";
    let want_tables = "long,forever,forever,auto\nshort,1h,1h,1h";
    assert_eq!(s.psql("ret", shown).trim(), want_tables);
    assert!(
        s.psql("public", "SHOW DATABASES").contains("ret,30d,auto"),
        "{}",
        s.psql("public", "SHOW DATABASES")
    );
    s.stop();
    let s = Server::start(dir.path());
    assert_eq!(
        s.psql("ret", shown).trim(),
        want_tables,
        "settings after a restart"
    );
    assert!(s.psql("public", "SHOW DATABASES").contains("ret,30d,auto"));
    assert_eq!(s.psql("ret", "SELECT count(*) FROM short").trim(), "1");
    s.stop();
}

#[test]
fn retention_set_by_influxdb_clients_maps_onto_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    let client = r#"
import sys
from influxdb_client import InfluxDBClient, BucketRetentionRules
with InfluxDBClient(url="http://" + sys.argv[1], token="unused", org="o") as c:
    api = c.buckets_api()
    b = api.create_bucket(bucket_name="sensors", org_id="0000000000000001",
                          retention_rules=BucketRetentionRules(type="expire", every_seconds=7 * 86400))
    print(b.name, b.retention_rules[0].every_seconds)
    found = api.find_bucket_by_name("sensors")
    print(found.id == b.id, found.retention_rules[0].every_seconds)
    found.retention_rules = [BucketRetentionRules(type="expire", every_seconds=2 * 86400,
                                                  shard_group_duration_seconds=3600)]
    u = api.update_bucket(found)
    print(u.retention_rules[0].every_seconds, u.retention_rules[0].shard_group_duration_seconds)
    try:
        api.create_bucket(bucket_name="bad", org_id="0000000000000001",
                          retention_rules=BucketRetentionRules(type="expire", every_seconds=5))
    except Exception as e:
        print("refused", "1m" in str(e))
"#;
    let out = python(client, &[&s.http]);
    assert_eq!(
        out, "sensors 604800\nTrue 604800\n172800 3600\nrefused True\n",
        "{out}"
    );
    assert!(
        s.psql("public", "SHOW DATABASES").contains("sensors,2d,1h"),
        "{}",
        s.psql("public", "SHOW DATABASES")
    );
    // InfluxQL, as v1 clients and Telegraf send it.
    let q = |text: &str| {
        let out = curl(&[
            "-s",
            "-G",
            &s.url("/query"),
            "--data-urlencode",
            &format!("q={text}"),
        ]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    q(
        "CREATE DATABASE \"tele\" WITH DURATION 90d REPLICATION 1 SHARD DURATION 1d NAME \"autogen\"",
    );
    let shown = q("SHOW RETENTION POLICIES ON \"tele\"");
    assert!(
        shown.contains("\"2160h0m0s\"") && shown.contains("\"24h0m0s\""),
        "{shown}"
    );
    q("ALTER RETENTION POLICY \"autogen\" ON \"tele\" DURATION 1w");
    assert!(q("SHOW RETENTION POLICIES ON tele").contains("\"168h0m0s\""));
    let bad = q("CREATE RETENTION POLICY rp ON nowhere DURATION 1d REPLICATION 1");
    assert!(bad.contains("database not found: nowhere"), "{bad}");
    q("DROP RETENTION POLICY autogen ON tele");
    assert!(q("SHOW RETENTION POLICIES ON tele").contains("\"0s\""));
    s.stop();
}
