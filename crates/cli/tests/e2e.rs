//! End to end against the real `tempora` binary: curl writes line protocol over HTTP, psql
//! and psycopg read the same rows over the PostgreSQL port, and the server keeps what it
//! acknowledged across SIGTERM and restart. Needs curl, psql and python3 with psycopg
//! (`.ci/run` installs them).

use std::net::TcpListener;
use std::process::{Child, Command, Output};

struct Server {
    child: Child,
    http: String,
    pg: u16,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Server {
    fn start(dir: &std::path::Path) -> Self {
        let (http, pg) = (free_port(), free_port());
        let child = Command::new(env!("CARGO_BIN_EXE_tempora"))
            .args(["serve", "--data-dir", dir.to_str().unwrap()])
            .args([
                "--http-addr",
                &format!("127.0.0.1:{http}"),
                "--pg-addr",
                &format!("127.0.0.1:{pg}"),
            ])
            .spawn()
            .expect("start tempora");
        let s = Server {
            child,
            http: format!("127.0.0.1:{http}"),
            pg,
        };
        // Poll /health until it answers 200 (curl retries connection refusals itself).
        let out = curl(&[
            "--retry",
            "100",
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

    fn stop(mut self) {
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

    fn psql(&self, db: &str, sql: &str) -> String {
        let out = Command::new("psql")
            .args([
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
            .env("PGCONNECT_TIMEOUT", "10")
            .output()
            .expect("psql is installed");
        assert!(
            out.status.success(),
            "psql {sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }
}

fn curl(args: &[&str]) -> Output {
    Command::new("curl")
        .arg("-s")
        .args(args)
        .output()
        .expect("curl is installed")
}

fn post(url: &str, body: &str) -> (String, String) {
    let out = curl(&["-w", "\n%{http_code}", "-XPOST", url, "--data-binary", body]);
    let text = String::from_utf8(out.stdout).unwrap();
    let (body, code) = text.rsplit_once('\n').unwrap();
    (code.to_string(), body.to_string())
}

#[test]
fn curl_writes_psql_and_psycopg_read_and_sigterm_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    let lp = "cpu,host=a\\ 1,region=eu usage=1.5,n=3i 1700000000\n\
              cpu,host=b,region=us usage=2.5 1700000010\n\
              cpu,host=c\\,x,region=us usage=-1 1700000020\n";
    let (code, body) = post(&format!("http://{}/write?db=demo&precision=s", s.http), lp);
    assert_eq!(code, "204", "{body}");
    let rows = s.psql("demo", "SELECT host, region, usage FROM cpu ORDER BY time");
    assert_eq!(rows, "a 1,eu,1.5\nb,us,2.5\nc,x,us,-1.0\n");
    let py = Command::new("python3")
        .args(["-c", "import sys, psycopg\nwith psycopg.connect(host='127.0.0.1', port=int(sys.argv[1]), dbname='demo', user='tempora') as c:\n    rows = c.execute('SELECT host, usage FROM cpu WHERE usage > %s ORDER BY host', (0.0,)).fetchall()\n    print(rows)", &s.pg.to_string()])
        .output()
        .expect("python3");
    assert!(
        py.status.success(),
        "psycopg: {}",
        String::from_utf8_lossy(&py.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&py.stdout).trim(),
        "[('a 1', 1.5), ('b', 2.5)]"
    );
    let tables = s.psql("demo", "\\dt");
    assert!(tables.contains("cpu"), "\\dt lists the table: {tables}");
    s.stop();
    let s = Server::start(dir.path());
    assert_eq!(s.psql("demo", "SELECT count(*) FROM cpu"), "3\n");
    s.stop();
}

#[test]
fn bad_writes_get_clear_errors_and_the_good_lines_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let s = Server::start(dir.path());
    let url = |q: &str| format!("http://{}/write?{q}", s.http);
    // (name, query, body, expected status, text the answer must contain)
    let cases: &[(&str, &str, &str, &str, &str)] = &[
        (
            "bad line among good",
            "db=t",
            "m v=1 1\nm v= 2\nm v=3 3\n",
            "400",
            "\"line\":2",
        ),
        (
            "type conflict",
            "db=t",
            "m v=\"s\" 4\n",
            "400",
            "has type string",
        ),
        (
            "unknown precision",
            "db=t&precision=weeks",
            "m v=1\n",
            "400",
            "unknown precision",
        ),
        (
            "bad database name",
            "db=a.b",
            "m v=1\n",
            "400",
            "must not contain '.'",
        ),
        ("reserved name", "db=t", "m __x=1 5\n", "400", "reserved"),
    ];
    for (name, q, body, want_code, want_text) in cases {
        let (code, text) = post(&url(q), body);
        assert_eq!(&code, want_code, "{name}: {text}");
        assert!(text.contains(want_text), "{name}: {text}");
    }
    // Only the good lines were stored.
    assert_eq!(s.psql("t", "SELECT count(*) FROM m"), "2\n");
    // A body over the limit (64 MiB by default) is refused by its Content-Length.
    let out = curl(&[
        "-w",
        "%{http_code}",
        "-o",
        "/dev/null",
        "-XPOST",
        "-H",
        "Content-Length: 100000000",
        &url("db=t"),
        "--data-binary",
        "m v=1",
    ]);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "413");
    // Bad SQL names the position.
    let out = curl(&[&format!("http://{}/api/v1/sql?db=t&q=SELEC%201", s.http)]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("error"),
        "{:?}",
        out
    );
    // The server is still up.
    let out = curl(&["-f", &format!("http://{}/health", s.http)]);
    assert!(out.status.success());
    s.stop();
}
