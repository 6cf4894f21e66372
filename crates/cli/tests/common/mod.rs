//! A real `tempora` server on free ports, and the real clients the end-to-end tests use
//! (curl, psql, python3 with psycopg and influxdb-client, java with pgJDBC).

#![allow(dead_code)]

use std::net::TcpListener;
use std::process::{Child, Command, Output};

pub struct Server {
    pub child: Child,
    pub http: String,
    pub pg: u16,
    pub dir: std::path::PathBuf,
    pub password: Option<String>,
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Server {
    pub fn start(dir: &std::path::Path) -> Self {
        Self::start_with(dir, &[])
    }

    /// Starts with extra `TEMPORA_*` settings; returns once `/health` answers 200.
    pub fn start_with(dir: &std::path::Path, env: &[(&str, &str)]) -> Self {
        let (http, pg) = (free_port(), free_port());
        let child = Command::new(env!("CARGO_BIN_EXE_tempora"))
            .args(["serve", "--data-dir", dir.to_str().unwrap()])
            .args([
                "--http-addr",
                &format!("127.0.0.1:{http}"),
                "--pg-addr",
                &format!("127.0.0.1:{pg}"),
            ])
            .envs(env.iter().copied())
            .env("TEMPORA_LOG", "warn")
            .spawn()
            .expect("start tempora");
        let password = env
            .iter()
            .find(|(k, _)| *k == "TEMPORA_PG_PASSWORD")
            .map(|(_, v)| v.to_string());
        let mut s = Server {
            child,
            http: format!("127.0.0.1:{http}"),
            pg,
            dir: dir.to_path_buf(),
            password,
        };
        s.wait_healthy();
        s
    }

    /// Polls `/health` until it answers 200; fails at once if the server exits, and after
    /// 60 s at most.
    fn wait_healthy(&mut self) {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(std::time::Duration::from_secs(2)))
            .build()
            .into();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let url = self.url("/health");
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("tempora exited during start-up: {status}");
            }
            if agent
                .get(&url)
                .call()
                .is_ok_and(|r| r.status().as_u16() == 200)
            {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "server never became healthy"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    pub fn url(&self, path_and_query: &str) -> String {
        format!("http://{}{path_and_query}", self.http)
    }

    /// SIGTERM, and the exit status must be 0.
    pub fn stop(mut self) {
        let pid = self.child.id().to_string();
        assert!(
            Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap()
                .success()
        );
        let status = self.child.wait().unwrap();
        assert!(status.success(), "clean shutdown exits 0, got {status}");
    }

    /// SIGKILL: no chance to flush or close anything.
    pub fn kill9(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// Peak resident memory of the server so far, in bytes (VmHWM).
    pub fn peak_rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let kb: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM in /proc/PID/status");
        kb * 1024
    }

    pub fn psql_output(&self, db: &str, sql: &str) -> Output {
        let mut cmd = Command::new("psql");
        cmd.args([
            "-h",
            "127.0.0.1",
            "-p",
            &self.pg.to_string(),
            "-d",
            db,
            "-U",
            "tempora",
            "-X",
            "-A",
            "-t",
            "-F",
            ",",
            "-c",
            sql,
        ])
        .env("PGCONNECT_TIMEOUT", "10");
        if let Some(p) = &self.password {
            cmd.env("PGPASSWORD", p);
        }
        cmd.output().expect("psql is installed")
    }

    pub fn psql(&self, db: &str, sql: &str) -> String {
        let out = self.psql_output(db, sql);
        assert!(
            out.status.success(),
            "psql {sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    pub fn sql_json(&self, db: &str, sql: &str) -> serde_json::Value {
        let out = curl(&[
            "--data-binary",
            sql,
            &self.url(&format!("/api/v1/sql?db={db}")),
        ]);
        serde_json::from_slice(&out.stdout).expect("JSON answer")
    }

    /// [`Server::sql_json`] presenting a token (`None`: none).
    pub fn sql_json_with(&self, db: &str, sql: &str, token: Option<&str>) -> serde_json::Value {
        let header = token.map(|t| format!("Authorization: Token {t}"));
        let url = self.url(&format!("/api/v1/sql?db={db}"));
        let mut args = vec!["--data-binary", sql, url.as_str()];
        if let Some(h) = &header {
            args.extend(["-H", h.as_str()]);
        }
        let out = curl(&args);
        serde_json::from_slice(&out.stdout).expect("JSON answer")
    }

    /// One unlabelled (or fully labelled, `name{…}`) series of `/metrics`.
    pub fn metric(&self, name: &str) -> f64 {
        let text = String::from_utf8(curl(&[&self.url("/metrics")]).stdout).unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("{name} missing from /metrics:\n{text}"))
    }

    pub fn healthy(&self) -> bool {
        curl(&["-f", &self.url("/health")]).status.success()
    }
}

impl Drop for Server {
    /// A test that fails midway must not leave its server running.
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

pub fn curl(args: &[&str]) -> Output {
    Command::new("curl")
        .arg("-s")
        .args(args)
        .output()
        .expect("curl is installed")
}

/// POSTs `body`; returns (status code, answer body).
pub fn post(url: &str, body: &str) -> (String, String) {
    post_args(url, &["--data-binary", body])
}

/// POSTs with extra curl arguments; returns (status code, answer body).
pub fn post_args(url: &str, extra: &[&str]) -> (String, String) {
    let mut args = vec!["-XPOST", url];
    args.extend_from_slice(extra);
    curl_status(&args)
}

/// Runs curl; returns (status code, answer body).
pub fn curl_status(args: &[&str]) -> (String, String) {
    let mut all = vec!["-w", "\n%{http_code}"];
    all.extend_from_slice(args);
    let out = curl(&all);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (code.to_string(), body.to_string())
}

/// Runs a python3 program with arguments; panics with its stderr when it fails.
pub fn python(program: &str, args: &[&str]) -> String {
    let out = Command::new("python3")
        .arg("-c")
        .arg(program)
        .args(args)
        .output()
        .expect("python3 is installed");
    assert!(
        out.status.success(),
        "python: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// pgJDBC from Maven Central: `PGJDBC_JAR`, or where `scripts/test-deps.sh` puts it.
pub fn pgjdbc_jar() -> std::path::PathBuf {
    let jar = std::env::var_os("PGJDBC_JAR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../../target/test-deps/postgresql.jar")
        });
    assert!(
        jar.exists(),
        "pgJDBC is missing at {}: run scripts/test-deps.sh (or set PGJDBC_JAR)",
        jar.display()
    );
    jar
}

/// The binary run with `args` to its end (logs at warn).
pub fn tempora(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tempora"))
        .args(args)
        .env("TEMPORA_LOG", "warn")
        .output()
        .expect("run tempora")
}

/// `tempora token create --name NAME GRANT… --data-dir DIR`: the token it prints, which is
/// `tmp_` and 64 hex digits on stdout, alone.
pub fn token_create(dir: &std::path::Path, name: &str, grant: &[&str]) -> String {
    let mut args = vec!["token", "create", "--name", name];
    args.extend_from_slice(grant);
    args.extend_from_slice(&["--data-dir", dir.to_str().unwrap()]);
    let out = tempora(&args);
    assert!(
        out.status.success(),
        "token create {name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let token = stdout.trim_end_matches('\n');
    let hex = token.strip_prefix("tmp_").unwrap_or("");
    assert!(
        hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()) && !token.contains('\n'),
        "token create prints the token alone: {stdout:?}"
    );
    token.to_string()
}
