//! Dense tables end to end on a real server: declared over psql, written with line protocol
//! over HTTP (curl; bad lines refused one by one, naming the grid), updated and deleted in
//! place over the PostgreSQL port, every acknowledged write kept through `kill -9`.

mod common;

use common::{Server, post};

#[test]
fn dense_table_through_line_protocol_psql_and_kill9() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    let (code, body) = post(&s.url("/api/v1/sql"), "CREATE DATABASE plant");
    assert_eq!(code, "200", "{body}");
    s.psql(
        "plant",
        "CREATE TABLE meter (time TIMESTAMP, device TAG, kwh DOUBLE, volts DOUBLE, ok BOOLEAN) \
         WITH (layout = 'dense', interval = '1s', block = '1h')",
    );
    // Good lines and one with a field the table does not declare, then one off the grid.
    let body = "meter,device=a kwh=1.5,volts=230,ok=true 1700000000\n\
                meter,device=a kwh=2.5,volts=231,ok=true 1700000001\n\
                meter,device=b kwh=7,volts=240,ok=false 1700000000\n\
                meter,device=a watts=3 1700000002\n";
    let (code, answer) = post(&s.url("/write?db=plant&precision=s"), body);
    assert_eq!(code, "400", "{answer}");
    assert!(
        answer.contains("1 of 4 lines rejected") && answer.contains("\"line\":4"),
        "the good lines are written, the bad one named: {answer}"
    );
    assert!(answer.contains("is not a field of dense table"), "{answer}");
    let (code, answer) = post(
        &s.url("/write?db=plant&precision=ms"),
        "meter,device=a kwh=9 1700000000500\n",
    );
    assert_eq!(code, "400", "{answer}");
    assert!(
        answer.contains("not on the table's grid: every 1000000000 ns"),
        "{answer}"
    );
    let rows = s.psql(
        "plant",
        "SELECT device, CAST(extract(epoch from time) AS BIGINT), kwh, volts, ok FROM meter ORDER BY device, time",
    );
    assert_eq!(
        rows,
        "a,1700000000,1.5,230,t\na,1700000001,2.5,231,t\nb,1700000000,7,240,f\n"
    );
    // In place over the PostgreSQL port: the command tags count the rows.
    let out = s.psql_output(
        "plant",
        "UPDATE meter SET kwh = 3.5 WHERE device = 'a' AND time = to_timestamp(1700000001)",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = s.psql_output(
        "plant",
        "DELETE FROM meter WHERE device = 'b' AND time = to_timestamp(1700000000)",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan = s.psql(
        "plant",
        "EXPLAIN SELECT kwh FROM meter WHERE device = 'a' AND time = to_timestamp(1700000001)",
    );
    assert!(plan.contains("TemporaScanExec"), "{plan}");
    // Acknowledged means kept: kill -9, restart, read.
    s.kill9();
    let s = Server::start(dir.path());
    let rows = s.psql(
        "plant",
        "SELECT device, CAST(extract(epoch from time) AS BIGINT), kwh, volts FROM meter ORDER BY device, time",
    );
    assert_eq!(rows, "a,1700000000,1.5,230\na,1700000001,3.5,231\n");
    let latest = s.psql(
        "plant",
        "SELECT device, kwh FROM meter LATEST ON time PARTITION BY device",
    );
    assert_eq!(latest, "a,3.5\n");
}
