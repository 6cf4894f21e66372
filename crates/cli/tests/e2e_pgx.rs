//! PostgreSQL as Grafana sees it (issue 27, item 4): Grafana's PostgreSQL data source talks
//! pgx v5, so a Go client built with pgx (tests/data/pgx_grafana) sends the statements Grafana
//! sends, the way it sends them: the health check (`-- ping`), the configuration page's
//! version and TimescaleDB checks, the query builder's schema, table and column lists, the
//! schema handler's parameterized lookups (extended protocol), macro-expanded time series and
//! table panels, and texts of several statements through `PgConn().Exec` (simple protocol,
//! every SELECT result's rows in one frame, other statements' results skipped). The client
//! prints Grafana's frame per case; the first test checks what Grafana needs of each, the
//! second that the lists show the connected database only, as PostgreSQL's do.
//! Needs Go (on PATH or at /usr/local/go/bin/go) with pgx in its module cache or reachable.

mod common;

use std::collections::HashMap;
use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Server, post};
use serde_json::Value;

/// 2023-11-14T22:10:00Z: hosts a and b, one point a minute for ten minutes from here.
const BASE_S: i64 = 1_699_999_800;
/// The 5-minute buckets of the points, as `$__timeGroupAlias(time, 5m)` gives them (epoch
/// seconds) and as `time_bucket` gives them.
const B0: &str = "1699999800";
const B1: &str = "1700000100";
const T0: &str = "2023-11-14T22:10:00Z";
const T5: &str = "2023-11-14T22:15:00Z";

const INTEGER: &[&str] = &["int2", "int4", "int8"];
/// What Grafana turns into a number (and, for a `time` column, into a time from epoch seconds).
const NUMBER: &[&str] = &["int2", "int4", "int8", "float4", "float8", "numeric"];

/// host a: usage_user 0.5 … 9.5, usage_system 0 … 9; host b: 100.5 … 109.5 and 0 … 90.
fn load_cpu(s: &Server) {
    let mut lines = String::new();
    for i in 0..10i64 {
        let ns = (BASE_S + 60 * i) * 1_000_000_000;
        let (ua, ub) = (0.5 + i as f64, 100.5 + i as f64);
        lines.push_str(&format!(
            "cpu,host=a,region=eu usage_user={ua},usage_system={i}i {ns}\n\
             cpu,host=b,region=eu usage_user={ub},usage_system={}i {ns}\n",
            10 * i
        ));
    }
    let (code, answer) = post(&s.url("/write?db=public"), &lines);
    assert_eq!(code, "204", "{answer}");
}

fn go() -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("go"))
                .find(|g| g.is_file())
        })
        .unwrap_or_else(|| PathBuf::from("/usr/local/go/bin/go"))
}

/// Builds the Go client into `out`.
fn build_client(out: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pgx_grafana");
    let bin = out.join("pgx_grafana");
    let go = go();
    let built = Command::new(&go)
        .args(["build", "-o"])
        .arg(&bin)
        .arg(".")
        .current_dir(&src)
        .env("GOFLAGS", "-mod=mod -buildvcs=false")
        .env("GOTOOLCHAIN", "local")
        .output()
        .unwrap_or_else(|e| panic!("{}: {e} (this test needs Go)", go.display()));
    assert!(
        built.status.success(),
        "go build: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    bin
}

type Rows = Vec<Vec<Option<String>>>;

fn strs(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .map(|x| x.as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn rows(v: &Value) -> Rows {
    v["rows"]
        .as_array()
        .map(|a| a.iter().map(|r| strs_opt(r.as_array().unwrap())).collect())
        .unwrap_or_default()
}

fn strs_opt(a: &[Value]) -> Vec<Option<String>> {
    a.iter().map(|x| x.as_str().map(String::from)).collect()
}

fn want(r: &[&[&str]]) -> Rows {
    r.iter()
        .map(|row| row.iter().map(|x| Some(x.to_string())).collect())
        .collect()
}

/// Every mismatch, reported at once.
struct Check<'a> {
    got: &'a HashMap<String, Value>,
    wrong: Vec<String>,
}

impl<'a> Check<'a> {
    /// The case, when it ran without an error.
    fn ok(&mut self, case: &str) -> Option<&'a Value> {
        let got = self.got;
        match got.get(case) {
            None => self.wrong.push(format!("{case}: did not run")),
            Some(v) if v["ok"] != true => {
                self.wrong.push(format!(
                    "{case}: failed: {}\n  sql: {}",
                    v["error"], v["sql"]
                ));
            }
            Some(v) => return Some(v),
        }
        None
    }

    fn eq<T: PartialEq + Debug>(&mut self, case: &str, what: &str, got: T, want: T) {
        if got != want {
            self.wrong
                .push(format!("{case}: {what}: got {got:?}, want {want:?}"));
        }
    }

    fn that(&mut self, case: &str, holds: bool, what: String) {
        if !holds {
            self.wrong.push(format!("{case}: {what}"));
        }
    }

    fn columns(&mut self, case: &str, v: &Value, want: &[&str]) {
        self.eq(case, "columns", strs(&v["columns"]), strs_of(want));
    }

    fn types(&mut self, case: &str, v: &Value, want: &[&[&str]]) {
        let got = strs(&v["types"]);
        let fits =
            got.len() == want.len() && got.iter().zip(want).all(|(g, w)| w.contains(&g.as_str()));
        self.that(
            case,
            fits,
            format!("types: got {got:?}, want one of each of {want:?}"),
        );
    }
}

fn strs_of(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// Runs the Go client against `s`'s database `public`, as Grafana connects; its cases by name.
fn run_client(s: &Server) -> HashMap<String, Value> {
    let build = tempfile::tempdir().unwrap();
    let bin = build_client(build.path());
    // The connection string Grafana's generateConnectionString builds.
    let dsn = format!(
        "user='tempora' password='' host='127.0.0.1' dbname='public' port={} sslmode='disable'",
        s.pg
    );
    let out = Command::new(&bin).arg(&dsn).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .map(|v| (v["case"].as_str().unwrap().to_string(), v))
        .collect()
}

/// The query builder's and the schema handler's lists: the schema `public`, its table `cpu`
/// (unqualified: `public` is in the search path) and `cpu`'s columns with PostgreSQL's types.
fn check_lookups(c: &mut Check) {
    for (case, col, rows_want) in [
        ("show_schemas", "name", "public"),
        ("show_tables", "table", "cpu"),
        ("show_tables_in_schema", "table", "cpu"),
        ("schemads_schemas", "schema_name", "public"),
        ("schemads_tables", "table_name", "cpu"),
    ] {
        if let Some(v) = c.ok(case) {
            c.columns(case, v, &[col]);
            c.eq(case, "rows", rows(v), want(&[&[rows_want]]));
        }
    }
    if let Some(v) = c.ok("column_lookup") {
        c.columns("column_lookup", v, &["column", "type"]);
        // Any order: the query has no ORDER BY. PostgreSQL's quote_ident quotes the keyword
        // `time` (PostgreSQL 15 answers `"time"`); one quoting reserved words only does not.
        // Grafana's builder puts either into its SQL, and both name the column.
        let mut r = rows(v);
        r.sort();
        let mut plain = want(&[
            &["host", "text"],
            &["region", "text"],
            &["time", "timestamp with time zone"],
            &["usage_system", "bigint"],
            &["usage_user", "double precision"],
        ]);
        let mut quoted = plain.clone();
        quoted[2][0] = Some("\"time\"".into());
        plain.sort();
        quoted.sort();
        c.that(
            "column_lookup",
            r == plain || r == quoted,
            format!("rows: got {r:?}, want {plain:?} (or `time` quoted)"),
        );
    }
    if let Some(v) = c.ok("schemads_columns") {
        let cols = &[
            "column_name",
            "data_type",
            "udt_name",
            "numeric_precision",
            "numeric_scale",
        ];
        c.columns("schemads_columns", v, cols);
        let mut r: Rows = rows(v)
            .into_iter()
            .map(|r| r[..3.min(r.len())].to_vec())
            .collect();
        r.sort();
        let mut w = want(&[
            &["host", "text", "text"],
            &["region", "text", "text"],
            &["time", "timestamp with time zone", "timestamptz"],
            &["usage_system", "bigint", "int8"],
            &["usage_user", "double precision", "float8"],
        ]);
        w.sort();
        c.eq("schemads_columns", "column_name, data_type, udt_name", r, w);
    }
}

#[test]
fn grafana_statements_through_pgx() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    load_cpu(&s);
    let got = run_client(&s);
    let mut c = Check {
        got: &got,
        wrong: Vec::new(),
    };
    for (case, v) in &got {
        c.that(
            case,
            v["reconnected"] != true,
            "the connection was lost before it".into(),
        );
    }

    // Save & test.
    c.ok("health_check");

    // The configuration page: version, then (from 9.6 on) TimescaleDB. An error in either
    // leaves the page without a version; a row from the second turns TimescaleDB on.
    if let Some(v) = c.ok("version_check") {
        c.columns("version_check", v, &["version"]);
        c.types("version_check", v, &[INTEGER]);
        c.eq("version_check", "rows", rows(v), want(&[&["1600"]]));
        c.eq(
            "version_check",
            "tags",
            strs(&v["tags"]),
            strs_of(&["SELECT 1"]),
        );
    }
    // pgx gives a result's fields only with its rows, so no row means no columns.
    if let Some(v) = c.ok("timescaledb_check") {
        let n = rows(v).len();
        c.that("timescaledb_check", n <= 1, format!("{n} rows"));
        if n == 1 {
            c.columns("timescaledb_check", v, &["extversion"]);
        }
    }
    if let Some(v) = c.ok("version_function") {
        c.columns("version_function", v, &["version"]);
        let r = rows(v);
        let text = r.first().and_then(|r| r.first().cloned().flatten());
        c.that(
            "version_function",
            r.len() == 1
                && text
                    .as_deref()
                    .is_some_and(|t| t.starts_with("PostgreSQL 16")),
            format!("got {r:?}, want one row starting \"PostgreSQL 16\""),
        );
    }

    check_lookups(&mut c);

    // Time series panels: a `time` column Grafana reads as a time, `metric` naming the
    // series, sorted by time.
    if let Some(v) = c.ok("ts_time_group") {
        c.columns("ts_time_group", v, &["time", "metric", "value"]);
        c.types("ts_time_group", v, &[NUMBER, &["text"], NUMBER]);
        let r = want(&[
            &[B0, "a", "2.5"],
            &[B0, "b", "102.5"],
            &[B1, "a", "7.5"],
            &[B1, "b", "107.5"],
        ]);
        c.eq("ts_time_group", "rows", rows(v), r);
    }
    if let Some(v) = c.ok("ts_timescaledb") {
        c.columns("ts_timescaledb", v, &["time", "metric", "value"]);
        c.types(
            "ts_timescaledb",
            v,
            &[&["timestamptz"], &["text"], &["float8"]],
        );
        let r = want(&[
            &[T0, "a", "4.5"],
            &[T0, "b", "104.5"],
            &[T5, "a", "9.5"],
            &[T5, "b", "109.5"],
        ]);
        c.eq("ts_timescaledb", "rows", rows(v), r);
    }
    if let Some(v) = c.ok("ts_raw_wide") {
        c.columns("ts_raw_wide", v, &["time", "usage_user", "usage_system"]);
        c.types(
            "ts_raw_wide",
            v,
            &[&["timestamptz"], &["float8"], &["int8"]],
        );
        let r = want(&[
            &[T0, "0.5", "0"],
            &["2023-11-14T22:11:00Z", "1.5", "1"],
            &["2023-11-14T22:12:00Z", "2.5", "2"],
        ]);
        c.eq("ts_raw_wide", "rows", rows(v), r);
    }

    // Table panels from the query builder: unaliased aggregates named as PostgreSQL names them.
    if let Some(v) = c.ok("table_builder_max") {
        c.columns("table_builder_max", v, &["host", "max"]);
        c.types("table_builder_max", v, &[&["text"], &["float8"]]);
        let r = want(&[&["a", "9.5"], &["b", "109.5"]]);
        c.eq("table_builder_max", "rows", rows(v), r);
    }
    if let Some(v) = c.ok("table_builder_count") {
        c.columns("table_builder_count", v, &["region", "count"]);
        c.types("table_builder_count", v, &[&["text"], &["int8"]]);
        c.eq(
            "table_builder_count",
            "rows",
            rows(v),
            want(&[&["eu", "20"]]),
        );
    }

    // Several statements in one text: each runs, in order, on the one connection; the frame is
    // every SELECT's rows.
    if let Some(v) = c.ok("multi_set_then_select") {
        let case = "multi_set_then_select";
        c.eq(
            case,
            "tags",
            strs(&v["tags"]),
            strs_of(&["SET", "SELECT 2"]),
        );
        c.columns(case, v, &["time", "value"]);
        c.eq(case, "rows", rows(v), want(&[&[B0, "2.5"], &[B1, "7.5"]]));
    }
    if let Some(v) = c.ok("multi_two_selects") {
        let case = "multi_two_selects";
        c.eq(
            case,
            "tags",
            strs(&v["tags"]),
            strs_of(&["SELECT 1", "SELECT 1"]),
        );
        c.columns(case, v, &["host", "usage_user"]);
        c.eq(
            case,
            "rows",
            rows(v),
            want(&[&["a", "0.5"], &["b", "100.5"]]),
        );
    }
    if let Some(v) = c.ok("multi_time_zone") {
        let case = "multi_time_zone";
        let tags = strs_of(&["SET", "SELECT 1", "SET", "SELECT 1"]);
        c.eq(case, "tags", strs(&v["tags"]), tags);
        c.columns(case, v, &["time", "usage_user"]);
        c.eq(
            case,
            "rows (one instant)",
            rows(v),
            want(&[&[T0, "0.5"], &[T0, "0.5"]]),
        );
    }

    // A failing query is Grafana's error, naming what failed, and the connection goes on.
    match got.get("error_unknown_table") {
        Some(v) => c.that(
            "error_unknown_table",
            v["ok"] == false
                && v["error"]
                    .as_str()
                    .is_some_and(|e| e.contains("no_such_table")),
            format!(
                "got ok={} error={}, want an error naming no_such_table",
                v["ok"], v["error"]
            ),
        ),
        None => c.wrong.push("error_unknown_table: did not run".into()),
    }
    if let Some(v) = c.ok("after_error") {
        c.columns("after_error", v, &["n"]);
        c.eq("after_error", "rows", rows(v), want(&[&["20"]]));
    }

    assert!(c.wrong.is_empty(), "{}", c.wrong.join("\n"));
    s.stop();
}

/// PostgreSQL's information_schema shows the connected database only: another database's
/// tables (one of them also named `cpu`, with other columns) must not reach Grafana's lists.
#[test]
fn grafana_lists_only_the_connected_database() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    load_cpu(&s);
    let other =
        "cpu,dc=x temperature=1.5 1699999800000000000\nmem,host=a used=1i 1699999800000000000\n";
    let (code, answer) = post(&s.url("/write?db=other"), other);
    assert_eq!(code, "204", "{answer}");
    let got = run_client(&s);
    let mut c = Check {
        got: &got,
        wrong: Vec::new(),
    };
    check_lookups(&mut c);
    assert!(c.wrong.is_empty(), "{}", c.wrong.join("\n"));
    s.stop();
}
