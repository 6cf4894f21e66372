//! The web console (issue 27) in headless Chromium, driven by Playwright from PyPI against
//! the real binary with authentication on (`tests/data/console.py` holds the steps and their
//! assertions): sign-in, a query drawn as grid and chart, zoom, macros, an error marked at
//! its position, completion, EXPLAIN, 100,000 rows scrolled, CSV and Parquet downloads, the
//! schema browser, a CSV import with the server's preview, the live metrics page. Here: the
//! data it reads, the import's effect, and the figures (first paint, scroll frame times).

mod common;

use common::{Server, curl_status, token_create};

fn as_admin(token: &str, args: &[&str]) -> (String, String) {
    let header = format!("Authorization: Bearer {token}");
    let mut all = vec!["-H", header.as_str()];
    all.extend_from_slice(args);
    curl_status(&all)
}

#[test]
fn the_console_in_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let token = token_create(dir.path(), "console", &["--admin"]);
    let s = Server::start_with(dir.path(), &[("TEMPORA_AUTH", "true")]);
    // Two hosts, 100 minutes each, ending now (so the last-30-days macro holds them).
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as i64;
    let minute = 60_000_000_000i64;
    let mut lines = String::new();
    for i in 0..100i64 {
        let t = now_ns - (100 - i) * minute;
        for (h, base) in [("a", 10.0), ("b", 50.0)] {
            lines.push_str(&format!(
                "cpu,host={h} usage={} {t}\n",
                base + (i % 7) as f64
            ));
        }
    }
    let (code, body) = as_admin(
        &token,
        &[
            "-XPOST",
            &s.url("/write?db=console"),
            "--data-binary",
            &lines,
        ],
    );
    assert_eq!(code, "204", "{body}");
    // The page is served without credentials; the API behind it is not.
    let (code, page) = curl_status(&[&s.url("/")]);
    assert!(code == "200" && page.contains("/console/app.js"), "{code}");
    let (code, _) = curl_status(&[&s.url("/api/v1/sql?q=SELECT%201")]);
    assert_eq!(code, "401");

    let csv = dir.path().join("weather.csv");
    std::fs::write(
        &csv,
        "time,station,temp,ok\n\
         2024-01-01T00:00:00Z,north,1.5,true\n\
         2024-01-01T00:01:00Z,north,2,false\n\
         2024-01-01T00:00:00Z,south,-3.25,true\n",
    )
    .unwrap();
    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("console");
    std::fs::create_dir_all(&shots).unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/console.py");
    let out = std::process::Command::new("python3")
        .args([
            script,
            &format!("http://{}", s.http),
            &token,
            csv.to_str().unwrap(),
            shots.to_str().unwrap(),
        ])
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "console.py: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let figures = String::from_utf8_lossy(&out.stdout);
    eprintln!("console figures: {figures}");
    for shot in ["console-query.png", "console-schema.png"] {
        let png = std::fs::read(shots.join(shot)).unwrap();
        assert_eq!(&png[1..4], b"PNG", "{shot}");
    }

    // The import wrote three rows with station as a tag and typed fields.
    let (code, body) = as_admin(
        &token,
        &[&s.url(
            "/api/v1/sql?db=console&q=SELECT%20station,%20temp,%20ok%20FROM%20weather%20ORDER%20BY%20station,%20time&format=csv",
        )],
    );
    assert_eq!(code, "200", "{body}");
    assert_eq!(
        body,
        "station,temp,ok\nnorth,1.5,true\nnorth,2.0,false\nsouth,-3.25,true\n"
    );
    let (_, body) = as_admin(
        &token,
        &[&s.url("/api/v1/sql?db=console&q=DESCRIBE%20weather&format=csv")],
    );
    assert!(body.contains("station,string,tag"), "{body}");
    s.stop();
}
