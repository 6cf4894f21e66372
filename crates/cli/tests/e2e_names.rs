//! Hostile names through every way a name enters (issue 26): SQL (CREATE DATABASE, TABLE,
//! MODEL, TOKEN), InfluxQL, line protocol (the database parameter and the measurement), the
//! bucket API, the CSV importer, a PostgreSQL connection's database, and the token CLI.
//! Each is refused with a 4xx naming the problem or accepted as a plain name; no answer is a
//! 5xx, the server stays up and restarts on what it stored, and afterwards every file lives
//! inside the data directory (model files, the one place a name reaches a path, are mapped
//! to safe file names).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// `..`, separators, NUL, very long, Unicode look-alikes of `../`, a right-to-left
/// override, percent-encoded separators, and a plain control name.
fn hostile() -> Vec<String> {
    vec![
        "../../escape1".into(),
        "a/b".into(),
        "a\0b".into(),
        "x".repeat(5000),
        "．．／．．／escape2".into(),
        "..".into(),
        ".".into(),
        "\u{202e}fdp.exe".into(),
        "name%2F..%2Fescape3".into(),
        "plain".into(),
    ]
}

fn urlenc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A name as a SQL quoted identifier.
fn ident(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// POSTs `body` from a file (a NUL cannot travel in a command's arguments); the status.
fn post_body(url: &str, body: &str) -> String {
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), body).unwrap();
    let arg = format!("@{}", f.path().display());
    curl_status(&["-XPOST", "--data-binary", &arg, url]).0
}

fn sql(s: &Server, db: &str, text: &str) -> String {
    post_body(&s.url(&format!("/api/v1/sql?db={}", urlenc(db))), text)
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            match p.is_dir() {
                true => stack.push(p),
                false => out.push(p),
            }
        }
    }
    out
}

#[test]
fn hostile_names_are_refused_or_kept_inside_the_data_directory() {
    let root = tempfile::tempdir().unwrap();
    let data = root.path().join("sandbox").join("data");
    std::fs::create_dir_all(&data).unwrap();
    let s = Server::start(&data);
    assert_eq!(
        sql(&s, "public", "CREATE TABLE ok_t (host TAG, v DOUBLE)"),
        "200"
    );
    let mut lines = String::new();
    for i in 0..200 {
        lines.push_str(&format!(
            "ok_t,host=a v={} {}\n",
            (i % 7) as f64,
            i * 60_000_000_000i64
        ));
    }
    assert_eq!(post(&s.url("/write?db=public"), &lines).0, "204");
    let mut answers: Vec<(String, String, String)> = Vec::new();
    let mut note = |way: &str, name: &str, code: String| {
        answers.push((way.to_string(), name.chars().take(24).collect(), code));
    };
    for name in hostile() {
        let id = ident(&name);
        let bucket =
            serde_json::json!({ "name": format!("{name}-b"), "orgID": "0000000000000001" })
                .to_string();
        let b = post_args(
            &s.url("/api/v2/buckets"),
            &[
                "-H",
                "Content-Type: application/json",
                "--data-binary",
                &bucket,
            ],
        );
        note("bucket", &name, b.0);
        note(
            "CREATE DATABASE",
            &name,
            sql(&s, "public", &format!("CREATE DATABASE {id}")),
        );
        note(
            "CREATE TABLE",
            &name,
            sql(&s, "public", &format!("CREATE TABLE {id} (v DOUBLE)")),
        );
        let model = format!(
            "CREATE MODEL {id} WITH (task = 'anomaly_detection', algorithm = 'mad') \
             AS SELECT time, host, v FROM ok_t"
        );
        note("CREATE MODEL", &name, sql(&s, "public", &model));
        let token = format!("CREATE TOKEN {id} WITH (read = 'public')");
        note("CREATE TOKEN", &name, sql(&s, "public", &token));
        let q = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(q.path(), format!("CREATE DATABASE {id}")).unwrap();
        let influxql = curl_status(&[
            "-G",
            &s.url("/query"),
            "--data-urlencode",
            &format!("q@{}", q.path().display()),
        ]);
        note("InfluxQL CREATE DATABASE", &name, influxql.0);
        let measurement = name.replace(' ', "\\ ").replace(',', "\\,");
        let lp = post_body(
            &s.url(&format!("/write?db={}", urlenc(&name))),
            &format!("{measurement},host=a v=1 1\n"),
        );
        note("line protocol", &name, lp);
        let import = post(
            &s.url(&format!(
                "/api/v1/import?db={}&table={}",
                urlenc(&name),
                urlenc(&name)
            )),
            "time,v\n1970-01-01T00:00:01Z,1.5\n",
        );
        note("CSV import", &name, import.0);
        if !name.contains('\0') {
            let pg = python(
                "import sys, psycopg\ntry:\n    with psycopg.connect(host='127.0.0.1', \
                 port=sys.argv[1], user='tempora', dbname=sys.argv[2]) as c:\n        \
                 c.execute('SELECT 1').fetchone()\n        print('ok')\nexcept psycopg.Error \
                 as e:\n    print(e.sqlstate or 'refused')",
                &[&s.pg.to_string(), &name],
            );
            note("PostgreSQL database", &name, pg.trim().to_string());
            let cli = Command::new(env!("CARGO_BIN_EXE_tempora"))
                .args([
                    "token",
                    "create",
                    "--read",
                    "public",
                    "--name",
                    &format!("{name}-cli"),
                    "--data-dir",
                ])
                .arg(&data)
                .output()
                .unwrap();
            let code = match cli.status.success() {
                true => "ok".to_string(),
                false => String::from_utf8_lossy(&cli.stderr)
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_string(),
            };
            note("token CLI", &name, code);
        }
    }
    for (way, name, code) in &answers {
        println!("{way:26} {name:?} -> {code}");
        assert!(
            !code.starts_with('5') && !code.is_empty() && code != "XX000",
            "{way} {name:?}: {code}"
        );
    }
    // The plain name is accepted every way (so the refusals above are about the names).
    for (way, _, code) in answers.iter().filter(|a| a.1 == "plain") {
        assert!(
            ["200", "201", "204", "ok"].contains(&code.as_str()),
            "plain name refused by {way}: {code}"
        );
    }
    // Wait for the trainings to end (trained or failed), so their files are written. Every
    // model a name was accepted for trains: its mapped file name is written and fsynced.
    until_models_settle(&s);
    let models = s.sql_json("public", "SHOW MODELS");
    let rows = models["rows"].as_array().expect("rows");
    let status = models["columns"]
        .as_array()
        .and_then(|c| c.iter().position(|c| c["name"] == "status"))
        .expect("a status column");
    let failed: Vec<_> = rows.iter().filter(|r| r[status] != "ready").collect();
    assert!(failed.is_empty(), "every model trains: {failed:?}");
    let trained = rows.len() as u64;
    assert!(s.healthy());
    let (http, pg) = (s.http.clone(), s.pg);
    s.stop();
    let s = Server::start(&data);
    assert!(
        s.healthy(),
        "restarts on the names it stored ({http}, {pg})"
    );
    let outside: Vec<_> = files_under(root.path())
        .into_iter()
        .filter(|p| !p.starts_with(&data))
        .collect();
    assert!(
        outside.is_empty(),
        "files outside the data directory: {outside:?}"
    );
    let models = data.join("db").join("models");
    let model_files: Vec<_> = files_under(&models);
    assert!(
        trained >= 2 && model_files.len() as u64 == trained,
        "a file for each of the {trained} models, plain and mapped: {model_files:?}"
    );
    for f in &model_files {
        let name = f.file_name().unwrap().to_str().unwrap();
        assert!(
            name.len() < 255 && name.bytes().all(|b| b.is_ascii_graphic()),
            "{name}"
        );
    }
    s.stop();
}

/// Polls SHOW MODELS until no model is training (60 s at most).
fn until_models_settle(s: &Server) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let v = s.sql_json(
            "public",
            "SELECT count(*) AS n FROM (SHOW MODELS) WHERE status = 'training'",
        );
        if v["rows"][0][0].as_i64() == Some(0) || v.get("error").is_some() {
            let all = s.sql_json("public", "SHOW MODELS");
            let training = all["rows"]
                .as_array()
                .map(|r| r.iter().any(|row| row.to_string().contains("\"training\"")))
                .unwrap_or(false);
            if !training {
                return;
            }
        }
        assert!(std::time::Instant::now() < deadline, "models never settled");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
