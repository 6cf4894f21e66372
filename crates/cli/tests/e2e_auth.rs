//! Authentication (issue 26) end to end, with the real binary and real clients:
//!
//! - the permission matrix: seven principals (no credentials, a wrong token, a revoked one,
//!   read, write, admin, read+write on another database) against every endpoint and
//!   statement class over HTTP, the InfluxDB client, psql, psycopg and pgJDBC, each answer
//!   the one the rules give, and nothing written or dropped by a refused request (the cells
//!   are in `tests/data/auth_matrix.py`, with the credential spellings, the identical
//!   refusals, a revocation stopping an open session, and the timing of refusals);
//! - a port bound beyond loopback without an admin token refuses to start, says how to make
//!   one or to pass `--insecure`, and starts with either;
//! - `tempora token list` (and the data directory) never hold a token itself;
//! - a token made with SQL `CREATE TOKEN` works at once, and `DROP TOKEN` stops it at once.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{Server, curl_status, free_port, pgjdbc_jar, tempora, token_create};

/// curl with `Authorization: Token TOKEN`; returns (status code, answer body).
fn as_token(token: &str, args: &[&str]) -> (String, String) {
    let header = format!("Authorization: Token {token}");
    let mut all = vec!["-H", header.as_str()];
    all.extend_from_slice(args);
    curl_status(&all)
}

/// psql as `user` with `password` (none: no password), one statement; the output.
fn psql_as(s: &Server, user: &str, password: Option<&str>, db: &str, sql: &str) -> Output {
    let mut cmd = Command::new("psql");
    cmd.args(["-X", "-w", "-A", "-t", "-h", "127.0.0.1", "-p"])
        .arg(s.pg.to_string())
        .args(["-U", user, "-d", db, "-c", sql])
        .env("PGCONNECT_TIMEOUT", "10")
        .env("PGPASSFILE", "/nonexistent/tempora-pgpass")
        .env_remove("PGPASSWORD");
    if let Some(p) = password {
        cmd.env("PGPASSWORD", p);
    }
    cmd.output().expect("psql is installed")
}

/// The matrix's cells (the driver prints `cells N expected N`); fixed by the driver's
/// tables, whatever the answers.
const CELLS: usize = 827;

#[test]
fn every_principal_gets_what_its_grant_allows_on_every_port_and_client() {
    let jar = pgjdbc_jar();
    let dir = tempfile::tempdir().unwrap();
    let work = tempfile::tempdir().unwrap();
    let grants: [(&str, &[&str]); 5] = [
        ("admin", &["--admin"]),
        ("read", &["--read", "db1"]),
        ("write", &["--write", "db1"]),
        ("other", &["--read", "db2", "--write", "db2"]),
        ("revoked", &["--read", "db1", "--write", "db1"]),
    ];
    let tokens: serde_json::Map<String, serde_json::Value> = grants
        .iter()
        .map(|(name, grant)| {
            let secret = token_create(dir.path(), name, grant);
            (name.to_string(), serde_json::Value::String(secret))
        })
        .collect();
    let token = |name: &str| tokens[name].as_str().unwrap().to_string();
    let s = Server::start_with(dir.path(), &[("TEMPORA_AUTH", "true")]);

    // db1 and db2, each with a table cpu (tag host, float field v) of two rows.
    for db in ["db1", "db2"] {
        let create = s.url(&format!("/query?q=CREATE%20DATABASE%20{db}"));
        let (code, body) = as_token(&token("admin"), &["-XPOST", &create]);
        assert_eq!(code, "200", "{body}");
        let lines = "cpu,host=a v=1 1700000000000000000\ncpu,host=b v=2 1700000000000000000";
        let write = s.url(&format!("/write?db={db}"));
        let (code, body) = as_token(&token("admin"), &["--data-binary", lines, &write]);
        assert_eq!(code, "204", "{body}");
    }

    // The CLI revokes while the server runs, and the server sees it at once.
    let probe = s.url("/api/v1/sql?db=db1&q=SELECT%20count(*)%20FROM%20cpu");
    let (code, body) = as_token(&token("revoked"), &[&probe]);
    assert_eq!(
        (code.as_str(), body.contains("[[2]]")),
        ("200", true),
        "{body}"
    );
    let out = tempora(&[
        "token",
        "revoke",
        "revoked",
        "--data-dir",
        dir.path().to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (code, body) = as_token(&token("revoked"), &[&probe]);
    assert_eq!(code, "401", "a revoked token is refused at once: {body}");

    let tokens_file = work.path().join("tokens.json");
    std::fs::write(
        &tokens_file,
        serde_json::Value::Object(tokens.clone()).to_string(),
    )
    .unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/auth_matrix.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(&s.http)
        .arg(s.pg.to_string())
        .arg(&jar)
        .arg(&tokens_file)
        .env_remove("PGPASSWORD")
        .output()
        .expect("python3 is installed");
    let text = String::from_utf8_lossy(&out.stdout);
    println!("{text}");
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let total = format!("cells {CELLS} expected {CELLS}");
    assert!(
        text.lines().any(|l| l == total),
        "want {total:?} in:\n{text}"
    );
    s.stop();
}

/// Starts `tempora serve` with its HTTP port on 0.0.0.0 (beyond loopback) and `extra`
/// arguments. `Ok`: it became healthy; `Err`: it exited, with its stderr.
fn serve_exposed(dir: &Path, extra: &[&str]) -> Result<Server, (std::process::ExitStatus, String)> {
    let (http, pg) = (free_port(), free_port());
    let mut child = Command::new(env!("CARGO_BIN_EXE_tempora"))
        .args(["serve", "--data-dir", dir.to_str().unwrap()])
        .args(["--http-addr", &format!("0.0.0.0:{http}")])
        .args(["--pg-addr", &format!("127.0.0.1:{pg}")])
        .args(extra)
        .env("TEMPORA_LOG", "warn")
        .env_remove("TEMPORA_AUTH")
        .env_remove("TEMPORA_INSECURE")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start tempora");
    let health = format!("http://127.0.0.1:{http}/health");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            use std::io::Read as _;
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            return Err((status, err));
        }
        if curl_status(&["--max-time", "2", &health]).0 == "200" {
            return Ok(Server {
                child,
                http: format!("127.0.0.1:{http}"),
                pg,
                dir: dir.to_path_buf(),
                password: None,
            });
        }
        assert!(
            std::time::Instant::now() < deadline,
            "tempora neither started nor exited"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn a_port_beyond_loopback_needs_an_admin_token_or_insecure() {
    let dir = tempfile::tempdir().unwrap();
    // A token that is not admin does not count: nobody could administer the server.
    token_create(dir.path(), "reader", &["--read", "db1"]);
    let Err((status, err)) = serve_exposed(dir.path(), &[]) else {
        panic!("the server started beyond loopback without an admin token");
    };
    assert!(!status.success(), "{status}");
    assert!(
        err.contains("0.0.0.0:") && err.contains("--insecure") && err.contains("token create"),
        "the refusal names the address and both ways out: {err}"
    );

    // --insecure: the operator's explicit choice, without authentication.
    let s = serve_exposed(dir.path(), &["--insecure"]).expect("--insecure starts");
    let (code, body) = curl_status(&[&s.url("/api/v1/sql?q=SELECT%201")]);
    assert_eq!(code, "200", "no credentials needed with --insecure: {body}");
    s.stop();

    // With an admin token it starts, and authentication is on without being asked for.
    let admin = token_create(dir.path(), "admin", &["--admin"]);
    let s = serve_exposed(dir.path(), &[]).expect("an admin token lets it start");
    let (code, body) = curl_status(&[&s.url("/api/v1/sql?q=SELECT%201")]);
    assert_eq!(code, "401", "exposed means authenticated: {body}");
    let (code, body) = as_token(&admin, &[&s.url("/api/v1/sql?q=SELECT%201")]);
    assert_eq!(code, "200", "{body}");
    let out = psql_as(&s, "admin", None, "public", "SELECT 1");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("no password supplied"),
        "the PostgreSQL port asks for a password too: {err}"
    );
    s.stop();
}

#[test]
fn no_token_secret_is_listed_or_stored() {
    let dir = tempfile::tempdir().unwrap();
    let admin = token_create(dir.path(), "admin", &["--admin"]);
    let reader = token_create(dir.path(), "grafana", &["--read", "db1,db2"]);
    let out = tempora(&["token", "list", "--data-dir", dir.path().to_str().unwrap()]);
    assert!(out.status.success());
    let shown = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = shown.lines().collect();
    assert_eq!(lines.len(), 2, "one line per token: {shown}");
    assert!(
        lines[0].starts_with("admin\t") && lines[0].contains("admin: yes"),
        "{shown}"
    );
    assert!(
        lines[1].starts_with("grafana\t") && lines[1].contains("read: db1,db2"),
        "{shown}"
    );
    assert!(
        !shown.contains("tmp_"),
        "token list prints no secret: {shown}"
    );
    // Only hashes and SCRAM verifiers are kept: the catalog names both tokens, and no file
    // holds a token or its hex part.
    let catalog =
        String::from_utf8_lossy(&std::fs::read(dir.path().join("tokens")).unwrap()).into_owned();
    assert!(
        catalog.contains("\"admin\"") && catalog.contains("\"grafana\""),
        "{catalog}"
    );
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let path = entry.unwrap().path();
        if !path.is_file() {
            continue;
        }
        let bytes = std::fs::read(path).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        for secret in [&admin, &reader] {
            assert!(
                !text.contains(&secret[4..]),
                "a secret is stored in the data dir"
            );
        }
    }
}

#[test]
fn create_token_works_at_once_and_drop_token_stops_it_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let admin = token_create(dir.path(), "admin", &["--admin"]);
    let s = Server::start_with(dir.path(), &[("TEMPORA_AUTH", "true")]);
    let lines = "cpu,host=a v=1 1700000000000000000";
    let (code, body) = as_token(&admin, &["--data-binary", lines, &s.url("/write?db=db1")]);
    assert_eq!(code, "204", "{body}");

    let sql = s.url("/api/v1/sql?db=db1");
    let (code, body) = as_token(
        &admin,
        &[
            "--data-binary",
            "CREATE TOKEN grafana WITH (read = 'db1')",
            &sql,
        ],
    );
    assert_eq!(code, "200", "{body}");
    let answer: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(answer["rows"][0][0], "grafana", "{body}");
    let grafana = answer["rows"][0][1].as_str().unwrap().to_string();
    assert!(grafana.starts_with("tmp_") && grafana.len() == 68, "{body}");

    // At once: it reads db1 over HTTP and logs in over PostgreSQL, and writes nothing.
    let count = s.url("/api/v1/sql?db=db1&q=SELECT%20count(*)%20FROM%20cpu");
    let (code, body) = as_token(&grafana, &[&count]);
    assert_eq!(
        (code.as_str(), body.contains("[[1]]")),
        ("200", true),
        "{body}"
    );
    let out = psql_as(
        &s,
        "grafana",
        Some(&grafana),
        "db1",
        "SELECT count(*) FROM cpu",
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "1",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (code, body) = as_token(&grafana, &["--data-binary", lines, &s.url("/write?db=db1")]);
    assert_eq!(code, "403", "read does not write: {body}");
    // SHOW TOKENS lists it, without its secret.
    let (code, body) = as_token(&admin, &["--data-binary", "SHOW TOKENS", &sql]);
    assert_eq!(code, "200", "{body}");
    assert!(
        body.contains("\"grafana\"") && !body.contains("tmp_"),
        "{body}"
    );

    let (code, body) = as_token(&admin, &["--data-binary", "DROP TOKEN grafana", &sql]);
    assert_eq!(code, "200", "{body}");
    // At once: refused over HTTP and over PostgreSQL, as any wrong credential is.
    let (code, body) = as_token(&grafana, &[&count]);
    assert_eq!(code, "401", "{body}");
    assert!(body.contains("authentication failed"), "{body}");
    let out = psql_as(&s, "grafana", Some(&grafana), "db1", "SELECT 1");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("authentication failed"),
        "{err}"
    );
    s.stop();
}
