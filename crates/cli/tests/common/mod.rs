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
        let s = Server {
            child,
            http: format!("127.0.0.1:{http}"),
            pg,
            dir: dir.to_path_buf(),
            password,
        };
        // Poll /health until it answers 200 (curl retries connection refusals itself).
        let out = curl(&[
            "--retry",
            "200",
            "--retry-connrefused",
            "--retry-delay",
            "0",
            "--retry-all-errors",
            "-f",
            &format!("http://{}/health", s.http),
        ]);
        assert!(out.status.success(), "server never became healthy");
        s
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

    pub fn healthy(&self) -> bool {
        curl(&["-f", &self.url("/health")]).status.success()
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
    let mut args = vec!["-w", "\n%{http_code}", "-XPOST", url];
    args.extend_from_slice(extra);
    let out = curl(&args);
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
