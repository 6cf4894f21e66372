//! `tempora check` and `tempora repair` against the real binary: one flipped byte in the
//! middle of a write-ahead log, and one in a data file. The server refuses to start (or
//! loses a file's rows) with a message naming both commands; check reports the damage and
//! changes nothing; repair keeps every row outside the damage and lists exactly the rows it
//! could not keep; the server starts afterwards.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{Server, post};

fn tempora(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tempora"))
        .args(args)
        .args(["--data-dir", dir.to_str().unwrap()])
        .env("TEMPORA_LOG", "warn")
        .output()
        .unwrap()
}

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else {
                out.insert(e.path(), std::fs::read(e.path()).unwrap());
            }
        }
    }
    out
}

/// (offset, payload length) of each record frame of a segment (docs/format/wal.md).
fn frames(seg: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut pos = 32;
    while pos + 16 <= seg.len() {
        let len = u32::from_le_bytes(seg[pos..pos + 4].try_into().unwrap());
        if len == u32::MAX {
            pos += 24;
            continue;
        }
        out.push((pos, len as usize));
        pos += 16 + len as usize;
    }
    out
}

/// Rows as (series, time, value) read back over psql.
fn rows(s: &Server) -> BTreeSet<(String, i64, i64)> {
    s.psql(
        "t",
        "SELECT s, CAST(time AS BIGINT), CAST(v AS BIGINT) FROM m",
    )
    .lines()
    .map(|l| {
        let f: Vec<&str> = l.split(',').collect();
        (
            f[0].to_string(),
            f[1].parse().unwrap(),
            f[2].parse().unwrap(),
        )
    })
    .collect()
}

/// Request `i` writes five rows of a new series `s{i}` and one row of every earlier series,
/// so later records name earlier series by id. The value says which series and time it is.
fn request(i: i64) -> (String, Vec<(String, i64, i64)>) {
    let mut rows: Vec<(String, i64, i64)> = (0..5)
        .map(|k| (format!("s{i:02}"), i * 10 + k, i * 1_000_000 + i * 10 + k))
        .collect();
    rows.extend((0..i).map(|j| (format!("s{j:02}"), 1000 + i, j * 1_000_000 + 1000 + i)));
    let body = rows
        .iter()
        .map(|(s, t, v)| format!("m,s={s} v={v}i {t}\n"))
        .collect();
    (body, rows)
}

#[test]
fn a_flipped_byte_in_the_wal_is_checked_and_repaired() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let s = Server::start_with(d, &[("TEMPORA_WORKERS", "1")]);
    let mut written = Vec::new();
    for i in 0..12 {
        let (body, rows) = request(i);
        assert_eq!(post(&s.url("/write?db=t"), &body).0, "204");
        written.push(rows);
    }
    s.kill9();
    let log = d.join("db/wal/0");
    let segs: Vec<_> = std::fs::read_dir(&log)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(segs.len(), 1, "{segs:?}");
    let mut seg = std::fs::read(&segs[0]).unwrap();
    let f = frames(&seg);
    assert_eq!(f.len(), 12, "one record per request");
    let (at, len) = f[5];
    seg[at + 16 + len / 2] ^= 0x10;
    std::fs::write(&segs[0], &seg).unwrap();
    let seg_name = segs[0].file_name().unwrap().to_str().unwrap().to_string();

    // The server refuses, naming the segment, the offset, the next valid frame and both tools.
    let out = Command::new(env!("CARGO_BIN_EXE_tempora"))
        .args(["serve", "--data-dir", d.to_str().unwrap()])
        .args(["--http-addr", &format!("127.0.0.1:{}", common::free_port())])
        .args(["--pg-addr", &format!("127.0.0.1:{}", common::free_port())])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    for want in [
        format!("wal/0/{seg_name}"),
        format!("corrupt at offset {at}"),
        format!("valid frame follows at offset {}", f[6].0),
        "tempora check --data-dir".into(),
        "tempora repair --data-dir".into(),
    ] {
        assert!(err.contains(&want), "{want:?} not in {err}");
    }

    // Check names the damage and changes nothing.
    let before = snapshot(d);
    let out = tempora(&["check", "--json"], d);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(snapshot(d), before, "check changed files");
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let finding = &report["findings"][0];
    assert_eq!(finding["file"], format!("wal/0/{seg_name}"));
    assert_eq!(finding["bytes"][0], at as u64);
    assert_eq!(finding["bytes"][1], f[6].0 as u64);
    assert_eq!(finding["blocks_start"], true);

    // What must be lost: request 5, and later rows naming by id a series first written in
    // request 5 or after (ids that request may have shifted); rows carrying their key stay.
    let mut lost: BTreeSet<(String, i64, i64)> = written[5].iter().cloned().collect();
    for (i, rows) in written.iter().enumerate().skip(6) {
        for r in rows {
            let series: i64 = r.0[1..].parse().unwrap();
            if series >= 5 && series < i as i64 {
                lost.insert(r.clone());
            }
        }
    }
    let listed: BTreeSet<i64> = report["lost_rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["time"].as_i64().unwrap())
        .collect();
    let lost_by_id: Vec<_> = lost.iter().filter(|r| r.1 >= 1000 && r.1 != 1005).collect();
    assert_eq!(
        report["lost_rows"].as_array().unwrap().len(),
        lost_by_id.len()
    );
    assert!(lost_by_id.iter().all(|r| listed.contains(&r.1)));

    let out = tempora(&["repair", "--json"], d);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let repaired: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        repaired["lost_rows"], report["lost_rows"],
        "check predicted repair"
    );
    let q: Vec<_> = std::fs::read_dir(d.join("quarantine"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(q.len(), 1);
    let qdir = q[0].path();
    assert!(qdir.join("report.json").exists() && qdir.join("report.txt").exists());
    assert_eq!(
        std::fs::read(qdir.join("db/wal/0").join(&seg_name)).unwrap(),
        seg,
        "the damaged log is kept byte for byte"
    );
    let out = tempora(&["check"], d);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );

    let s = Server::start_with(d, &[("TEMPORA_WORKERS", "1")]);
    let all: BTreeSet<_> = written.iter().flatten().cloned().collect();
    let want: BTreeSet<_> = all.difference(&lost).cloned().collect();
    assert_eq!(
        rows(&s),
        want,
        "exactly the rows outside the damage, each under its own series"
    );
    s.stop();
}

#[test]
fn a_damaged_data_file_is_quarantined_and_its_rows_reported() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let s = Server::start(d);
    let body = |m: &str| -> String { (0..100).map(|i| format!("{m},s=a v={i}i {i}\n")).collect() };
    assert_eq!(post(&s.url("/write?db=t"), &body("m")).0, "204");
    assert_eq!(post(&s.url("/write?db=t"), &body("n")).0, "204");
    s.stop(); // flushes both tables
    let mut files: Vec<PathBuf> = snapshot(d)
        .into_keys()
        .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 2, "{files:?}");
    let victim = files[1].clone(); // table n: created second, the higher table id
    let mut bytes = std::fs::read(&victim).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x01;
    std::fs::write(&victim, &bytes).unwrap();
    let rel = victim
        .strip_prefix(d.join("db"))
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();

    let out = tempora(&["check", "--json"], d);
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["lost_files"][0]["path"], rel.as_str());
    assert_eq!(report["lost_files"][0]["rows"], 100);
    assert_eq!(report["lost_files"][0]["table"], "t.n");
    let out = tempora(&["repair"], d);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let q: Vec<_> = std::fs::read_dir(d.join("quarantine"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(
        std::fs::read(q[0].path().join("db").join(&rel)).unwrap(),
        bytes
    );
    assert!(!victim.exists());

    let s = Server::start(d);
    assert_eq!(s.psql("t", "SELECT count(*) FROM m"), "100\n");
    assert_eq!(s.psql("t", "SELECT count(*) FROM n"), "0\n");
    s.stop();
}
