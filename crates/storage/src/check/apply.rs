//! Carrying out a repair plan on disk, in an order that a crash at any point leaves safe:
//! files move to the quarantine before the manifest stops naming them, and a log is swapped
//! through names the engine refuses to open beside (`<log>.repair`, `<log>.damaged`).

use std::path::Path;

use bytes::Bytes;
use tempora_wal::{FsLogStore, SeqNo, SyncPolicy, Wal, WalOptions};

use super::report::Report;
use super::{CheckOptions, Plan};
use crate::error::{Result, StorageError, io_err};
use crate::files::manifest::Manifest;
use crate::files::store::FileStore;

/// Suffix of a log being written by repair.
pub const REPAIRING: &str = ".repair";
/// Suffix of a damaged log moved aside by repair.
pub const DAMAGED: &str = ".damaged";

fn fsync_dir(p: &Path) -> Result<()> {
    std::fs::File::open(p)
        .and_then(|f| f.sync_all())
        .map_err(|e| io_err("fsync dir", p.display().to_string(), e))
}

/// Moves `from` to `to` (creating its parent), durably.
fn move_durably(from: &Path, to: &Path) -> Result<()> {
    let parent = to.parent().expect("a path under the quarantine");
    std::fs::create_dir_all(parent)
        .map_err(|e| io_err("create dir", parent.display().to_string(), e))?;
    std::fs::rename(from, to).map_err(|e| io_err("move", from.display().to_string(), e))?;
    fsync_dir(parent)?;
    fsync_dir(from.parent().expect("a file in a directory"))
}

/// Finishes a log swap a crash interrupted: a complete `<log>.repair` with `<log>` moved
/// aside is swapped in; a `.repair` beside its original log is ours and half written.
pub(crate) fn finish_interrupted(dir: &Path, quarantine: &Path) -> Result<()> {
    for parent in [dir.join("wal"), dir.join("dense")] {
        let Ok(rd) = std::fs::read_dir(&parent) else {
            continue;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(log) = name.strip_suffix(REPAIRING) {
                let live = parent.join(log);
                if live.exists() {
                    std::fs::remove_dir_all(e.path())
                        .map_err(|er| io_err("remove", e.path().display().to_string(), er))?;
                } else {
                    std::fs::rename(e.path(), &live)
                        .map_err(|er| io_err("move", e.path().display().to_string(), er))?;
                }
                fsync_dir(&parent)?;
            }
        }
        let Ok(rd) = std::fs::read_dir(&parent) else {
            continue;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(log) = name.strip_suffix(DAMAGED) {
                let rel = e
                    .path()
                    .strip_prefix(dir)
                    .expect("under dir")
                    .with_file_name(log);
                move_durably(&e.path(), &quarantine.join("db").join(rel))?;
            }
        }
    }
    Ok(())
}

/// Applies `plan` (see the module order in `check/mod.rs`).
pub(crate) fn apply(
    dir: &Path,
    quarantine: &Path,
    o: &CheckOptions,
    plan: &Plan,
    report: &mut Report,
) -> Result<()> {
    for p in &plan.quarantine {
        let from = dir.join(p);
        if from.exists() {
            move_durably(&from, &quarantine.join("db").join(p))?;
            report.actions.push(format!(
                "moved {p} to {}",
                quarantine.join("db").join(p).display()
            ));
        }
    }
    // Logs before the manifest: until the commit names a rebuilt index, the moved-away
    // index makes the engine refuse to start, so a log is never replayed against ids it was
    // not planned for.
    for l in &plan.logs {
        rewrite_log(dir, quarantine, o, &l.log, &l.keep)?;
        report.actions.push(format!(
            "rewrote log {} with {} records",
            l.log,
            l.keep.len()
        ));
    }
    let store = FileStore::local(dir)?;
    for (p, bytes) in &plan.indexes {
        store.put(p, Bytes::from(bytes.clone()))?;
        report.actions.push(format!("rebuilt index {p}"));
    }
    if !plan.edits.is_empty() {
        let mut m = Manifest::open_with(store, 1 << 20, o.legacy)?;
        m.commit(plan.edits.clone())?;
        report.actions.push(format!(
            "manifest version {}: {} edits",
            m.state().version,
            plan.edits.len()
        ));
    }
    Ok(())
}

/// Writes `keep` as the log `rel` (through `.repair`), verifies it, and moves the old log to
/// the quarantine.
fn rewrite_log(
    dir: &Path,
    quarantine: &Path,
    o: &CheckOptions,
    rel: &str,
    keep: &[(u64, Vec<u8>)],
) -> Result<()> {
    let live = dir.join(rel);
    let tmp = dir.join(format!("{rel}{REPAIRING}"));
    let aside = dir.join(format!("{rel}{DAMAGED}"));
    let opts = WalOptions {
        max_record_size: o.max_record_size,
        sync: SyncPolicy::Sync,
        ..WalOptions::default()
    };
    let store =
        FsLogStore::new(&tmp).map_err(|e| io_err("create log", tmp.display().to_string(), e))?;
    let mut wal = Wal::open(std::sync::Arc::new(store), opts.clone())?;
    for chunk in keep.chunks(1024) {
        for (seq, payload) in chunk {
            wal.append(SeqNo(*seq), payload)?;
        }
        wal.commit()?;
    }
    drop(wal);
    let store =
        FsLogStore::new(&tmp).map_err(|e| io_err("open log", tmp.display().to_string(), e))?;
    let check = Wal::open(std::sync::Arc::new(store), opts)?;
    if check.last_seq().map(|s| s.0) != keep.last().map(|k| k.0) {
        return Err(StorageError::Corrupt {
            path: tmp.display().to_string(),
            reason: "the rewritten log does not read back".into(),
        });
    }
    drop(check);
    let parent = live.parent().expect("logs live in a directory");
    if live.exists() {
        std::fs::rename(&live, &aside)
            .map_err(|e| io_err("move", live.display().to_string(), e))?;
        fsync_dir(parent)?;
    }
    std::fs::rename(&tmp, &live).map_err(|e| io_err("move", tmp.display().to_string(), e))?;
    fsync_dir(parent)?;
    if aside.exists() {
        move_durably(&aside, &quarantine.join("db").join(rel))?;
    }
    Ok(())
}

/// Writes `report.json` and `report.txt` into the quarantine directory.
pub(crate) fn write_report(quarantine: &Path, report: &Report) -> Result<()> {
    std::fs::create_dir_all(quarantine)
        .map_err(|e| io_err("create dir", quarantine.display().to_string(), e))?;
    let json = serde_json::to_vec_pretty(report).expect("the report serialises");
    for (name, bytes) in [
        ("report.json", json),
        ("report.txt", report.to_text().into_bytes()),
    ] {
        let p = quarantine.join(name);
        std::fs::write(&p, bytes).map_err(|e| io_err("write", p.display().to_string(), e))?;
        std::fs::File::open(&p)
            .and_then(|f| f.sync_all())
            .map_err(|e| io_err("fsync", p.display().to_string(), e))?;
    }
    fsync_dir(quarantine)
}
