//! TLS on both ports (issue 26), with real clients: curl with the CA answers over HTTPS and
//! refuses without it; psql connects with `sslmode=verify-full` by IP and by name and with
//! `sslmode=require`; psycopg reports the connection encrypted. After the files are replaced
//! and the server gets SIGHUP, a wrong-host and then an expired certificate are refused by
//! both clients, and a damaged file keeps the certificate in use. The certificates come from
//! `data/certs.py` (Python's `cryptography`).

mod common;

use std::path::Path;
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use common::{free_port, python};

struct TlsServer {
    child: Child,
    http: u16,
    pg: u16,
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn curl_https(port: u16, ca: Option<&Path>) -> Output {
    let mut c = Command::new("curl");
    c.args(["-s", "-o", "/dev/null", "-w", "%{http_code}"]);
    if let Some(ca) = ca {
        c.arg("--cacert").arg(ca);
    }
    c.arg(format!("https://127.0.0.1:{port}/health"))
        .output()
        .expect("curl is installed")
}

fn psql(conninfo: &str) -> Output {
    Command::new("psql")
        .args(["-X", "-w", "-At", conninfo, "-c", "SELECT 40 + 2"])
        .output()
        .expect("psql is installed")
}

/// Polls `done` until it holds (the server acts on SIGHUP asynchronously), for 30 s at most.
fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn replace(dir: &Path, certs: &Path, stem: &str) {
    std::fs::copy(certs.join(format!("{stem}.pem")), dir.join("cert.pem")).unwrap();
    std::fs::copy(certs.join(format!("{stem}.key")), dir.join("key.pem")).unwrap();
}

fn hup(s: &TlsServer) {
    let pid = s.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-HUP", &pid])
            .status()
            .unwrap()
            .success()
    );
}

#[test]
fn both_ports_speak_tls_and_reload_the_certificate_on_sighup() {
    let dir = tempfile::tempdir().unwrap();
    let certs = dir.path().join("certs");
    std::fs::create_dir(&certs).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/certs.py");
    python(
        &std::fs::read_to_string(script).unwrap(),
        &[certs.to_str().unwrap()],
    );
    replace(dir.path(), &certs, "server");
    let (http, pg) = (free_port(), free_port());
    let child = Command::new(env!("CARGO_BIN_EXE_tempora"))
        .args(["serve", "--data-dir"])
        .arg(dir.path().join("data"))
        .args(["--http-addr", &format!("127.0.0.1:{http}")])
        .args(["--pg-addr", &format!("127.0.0.1:{pg}")])
        .env("TEMPORA_TLS_CERT", dir.path().join("cert.pem"))
        .env("TEMPORA_TLS_KEY", dir.path().join("key.pem"))
        .env("TEMPORA_LOG", "warn")
        .stderr(std::fs::File::create(dir.path().join("server.log")).unwrap())
        .spawn()
        .expect("start tempora");
    let mut s = TlsServer { child, http, pg };
    let ca = certs.join("ca.pem");
    until("HTTPS /health answers 200", || {
        assert!(s.child.try_wait().unwrap().is_none(), "tempora exited");
        curl_https(s.http, Some(&ca)).stdout == b"200"
    });
    let no_ca = curl_https(s.http, None);
    assert_eq!(
        no_ca.status.code(),
        Some(60),
        "curl without the CA refuses the certificate"
    );
    let verify = |host: &str| {
        format!(
            "host={host} port={} dbname=public user=tempora sslmode=verify-full sslrootcert={}",
            s.pg,
            ca.display()
        )
    };
    for host in ["127.0.0.1", "localhost"] {
        let out = psql(&verify(host));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "42\n",
            "verify-full via {host}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let require = format!(
        "host=127.0.0.1 port={} dbname=public user=tempora sslmode=require",
        s.pg
    );
    let encrypted = python(
        "import sys, psycopg\nwith psycopg.connect(sys.argv[1]) as c:\n    \
         print(c.pgconn.ssl_in_use, c.execute('SELECT 1').fetchone()[0])",
        &[&require],
    );
    assert_eq!(encrypted, "True 1\n");

    // A certificate for another host: both clients refuse it after the reload.
    replace(dir.path(), &certs, "wronghost");
    hup(&s);
    until("curl refuses the wrong-host certificate", || {
        curl_https(s.http, Some(&ca)).status.code() == Some(60)
    });
    let out = psql(&verify("127.0.0.1"));
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("does not match host name"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // An expired certificate.
    replace(dir.path(), &certs, "expired");
    hup(&s);
    until("curl refuses the expired certificate", || {
        let out = Command::new("curl")
            .args(["-sv", "--cacert"])
            .arg(&ca)
            .arg(format!("https://127.0.0.1:{}/health", s.http))
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stderr).contains("certificate has expired")
    });
    let out = psql(&verify("127.0.0.1"));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("certificate verify failed"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Back to the good one; then a damaged file, which must not replace it.
    replace(dir.path(), &certs, "server");
    hup(&s);
    until("the good certificate is back", || {
        curl_https(s.http, Some(&ca)).stdout == b"200"
    });
    std::fs::write(dir.path().join("cert.pem"), "not a certificate").unwrap();
    hup(&s);
    until("the server logs the refused reload", || {
        std::fs::read_to_string(dir.path().join("server.log"))
            .unwrap()
            .contains("not reloaded; the old one stays")
    });
    assert_eq!(
        curl_https(s.http, Some(&ca)).stdout,
        b"200",
        "a damaged file keeps the certificate in use"
    );
    assert!(
        s.child.try_wait().unwrap().is_none(),
        "a bad reload must not stop the server"
    );
}
