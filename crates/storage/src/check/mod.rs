//! `tempora check` and `tempora repair` of one engine directory (`<data_dir>/db`).
//!
//! Check reads every file the engine would read — the manifest, every data file whole (with
//! its `.last` and rollup files), every index file, every write-ahead log (engine and dense
//! tables) past its damage — and reports what is damaged and what that costs, changing
//! nothing. Repair carries out the plan check computed (one function computes both, so check
//! predicts repair exactly):
//!
//! 1. damaged data, `.last`, rollup and index files are moved to the quarantine directory
//!    (outside `db/`, under the same relative path; never deleted) — moved before the
//!    manifest stops naming them, since start-up deletes files under `data/` no version names;
//! 2. a damaged index is rebuilt from the keys of its region's files and put under a new name;
//! 3. one manifest commit drops the damaged files and names the rebuilt indexes;
//! 4. each log that needs it is rewritten with every record and row that can be kept
//!    (`logs.rs`) into `<log>.repair`, verified, and swapped in (`wal/0` → `wal/0.damaged` →
//!    quarantine); the engine refuses to open while a `.repair` or `.damaged` log exists, and
//!    a second repair finishes an interrupted swap;
//! 5. the report goes to `<quarantine>/report.json` and `report.txt`.
//!
//! Not repaired (reported only): a damaged manifest, and damage repair cannot attribute.

mod apply;
mod files;
mod logs;
pub mod report;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use tempora_index::IndexLimits;

use crate::error::{Result, StorageError};
use crate::files::manifest::{Edit, FileMeta, LegacyLayout, Manifest, ManifestState, RegionKey};
use crate::files::store::FileStore;
use crate::options::EngineOptions;
pub use apply::{DAMAGED, REPAIRING};
use logs::{LogPlan, Planner, RegionBase};
pub use report::{Finding, LostFile, LostRow, Report};

/// How the directory is read.
#[derive(Debug, Clone, Copy)]
pub struct CheckOptions {
    pub legacy: LegacyLayout,
    pub max_record_size: usize,
    pub index_limits: IndexLimits,
}

impl CheckOptions {
    pub fn from_engine(o: &EngineOptions) -> Self {
        Self {
            legacy: o.legacy_layout(),
            max_record_size: tempora_wal::WalOptions::default().max_record_size,
            index_limits: IndexLimits {
                max_series: o.max_series_per_region,
            },
        }
    }
}

/// What repair does.
#[derive(Debug, Default)]
pub(crate) struct Plan {
    /// Files to set aside, relative to the engine directory.
    pub quarantine: BTreeSet<String>,
    pub edits: Vec<Edit>,
    /// Rebuilt index files to put: (path, bytes).
    pub indexes: Vec<(String, Vec<u8>)>,
    pub logs: Vec<LogPlan>,
    /// The manifest could not be read: nothing else can be planned.
    pub manifest_broken: bool,
}

impl Plan {
    fn is_empty(&self) -> bool {
        self.quarantine.is_empty() && self.edits.is_empty() && self.logs.is_empty()
    }
}

/// Checks the engine directory `dir`, changing nothing.
pub fn check(dir: &Path, o: &CheckOptions) -> Result<Report> {
    Ok(plan(dir, o)?.0)
}

/// Repairs `dir`, setting damaged files aside under `quarantine` (created; must be outside
/// `dir`), and writes the report there as well as returning it.
pub fn repair(dir: &Path, quarantine: &Path, o: &CheckOptions) -> Result<Report> {
    apply::finish_interrupted(dir, quarantine)?;
    let (mut report, plan) = plan(dir, o)?;
    if plan.manifest_broken {
        return Err(StorageError::Corrupt {
            path: dir.join("manifest").display().to_string(),
            reason: "the manifest is damaged and repair does not rebuild it; see the report of `tempora check`".into(),
        });
    }
    if plan.is_empty() {
        report.actions.push("nothing to repair".into());
        return Ok(report);
    }
    apply::apply(dir, quarantine, o, &plan, &mut report)?;
    apply::write_report(quarantine, &report)?;
    Ok(report)
}

/// Reads everything and computes the report and the repair plan.
fn plan(dir: &Path, o: &CheckOptions) -> Result<(Report, Plan)> {
    if !dir.is_dir() {
        return Err(crate::error::io_err(
            "read engine directory",
            dir.display().to_string(),
            std::io::Error::from(std::io::ErrorKind::NotFound),
        ));
    }
    let store = FileStore::local(dir)?;
    let mut report = Report::default();
    let mut plan = Plan::default();
    let state = match Manifest::open_with(store.clone(), 1, o.legacy) {
        Ok(m) => Some(m.state().clone()),
        Err(e) => {
            report.findings.push(Finding {
                file: "manifest".into(),
                bytes: None,
                reason: e.to_string(),
                effect: "the engine's list of tables and files cannot be read; data files and logs are kept as they are".into(),
                blocks_start: true,
                repairable: false,
            });
            plan.manifest_broken = true;
            None
        }
    };
    let mut bases = BTreeMap::new();
    if let Some(state) = &state {
        for region in state.regions.values() {
            let base = check_region(&store, state, region, o, &mut report, &mut plan);
            bases.insert(region.key.dir(), base);
        }
    }
    plan_logs(
        dir,
        state.as_ref(),
        &store,
        o,
        bases,
        &mut report,
        &mut plan,
    )?;
    Ok((report, plan))
}

fn table_name(state: &ManifestState, key: &RegionKey) -> Option<String> {
    state
        .tables
        .iter()
        .find(|(_, t)| t.id == key.table)
        .map(|(n, _)| n.clone())
}

/// Checks one region's index and files; returns its base for the log simulation (keys are
/// filled only for a rebuilt index; others are read when a log needs them).
fn check_region(
    store: &FileStore,
    state: &ManifestState,
    region: &crate::files::manifest::RegionMeta,
    o: &CheckOptions,
    report: &mut Report,
    plan: &mut Plan,
) -> RegionBase {
    let table = table_name(state, &region.key).unwrap_or_default();
    let mut rebuild = false;
    let mut index_finding = None;
    if let Some(p) = &region.index_path {
        report.files_checked += 1;
        let verdict = store
            .get(p)
            .map_err(|e| e.to_string())
            .and_then(|b| files::verify_index(&b, o.index_limits).map(|_| ()));
        if let Err(reason) = verdict {
            index_finding = Some(report.findings.len());
            report.findings.push(Finding {
                file: p.clone(),
                bytes: None,
                reason,
                effect: format!(
                    "the series index of table {table:?} region {}: rebuilt from its data files; log rows of the region that name series by id are lost",
                    region.key.dir()
                ),
                blocks_start: true,
                repairable: true,
            });
            rebuild = true;
        }
    }
    let mut keys = BTreeSet::new();
    for f in region.files.values() {
        let wanted = rebuild.then_some(&mut keys);
        check_file(store, &table, region, f, wanted, report, plan);
    }
    if !rebuild {
        return RegionBase {
            table: Some(table),
            flushed_seq: region.flushed_seq,
            ..Default::default()
        };
    }
    let path = format!("{}/rebuilt-{}.tidx", region.key.dir(), state.version + 1);
    match files::rebuild_index(&keys, o.index_limits) {
        Ok((ix, bytes)) => {
            if let Some(old) = &region.index_path {
                plan.quarantine.insert(old.clone());
            }
            plan.indexes.push((path.clone(), bytes));
            plan.edits.push(Edit::Flush {
                region: region.key,
                files: Vec::new(),
                flushed_seq: region.flushed_seq,
                index_path: Some(path),
            });
            RegionBase {
                table: Some(table),
                flushed_seq: region.flushed_seq,
                keys: ix.keys().map(<[u8]>::to_vec).collect(),
                rebuilt: true,
            }
        }
        Err(reason) => {
            report.findings.push(Finding {
                file: region.key.dir(),
                bytes: None,
                reason,
                effect: "the index cannot be rebuilt; it is left in place".into(),
                blocks_start: true,
                repairable: false,
            });
            if let Some(i) = index_finding {
                report.findings[i].repairable = false;
            }
            RegionBase {
                table: None, // its log records are kept as they are
                flushed_seq: region.flushed_seq,
                ..Default::default()
            }
        }
    }
}

/// Checks one file entry: the data file, its last rows and its rollups.
fn check_file(
    store: &FileStore,
    table: &str,
    region: &crate::files::manifest::RegionMeta,
    f: &FileMeta,
    mut keys: Option<&mut BTreeSet<Vec<u8>>>,
    report: &mut Report,
    plan: &mut Plan,
) {
    let read = |p: &str| store.get(p).map_err(|e| e.to_string());
    let mut keep = f.clone();
    if !f.raw_expired {
        report.files_checked += 1;
        let verdict = read(&f.path).and_then(|b| {
            files::verify_data(&b, f.size, f.crc32c, Some(f.rows), keys.as_deref_mut())
        });
        if let Err(reason) = verdict {
            report.findings.push(Finding {
                file: f.path.clone(),
                bytes: None,
                reason,
                effect: format!(
                    "{} rows of table {table:?} from {} to {} (seqs {} to {}) cannot be read",
                    f.rows, f.min_time, f.max_time, f.min_seq, f.max_seq
                ),
                blocks_start: false,
                repairable: true,
            });
            report.lost_files.push(LostFile {
                path: f.path.clone(),
                table: table.to_string(),
                region: region.key.dir(),
                rows: f.rows,
                min_time: f.min_time,
                max_time: f.max_time,
                min_seq: f.min_seq,
                max_seq: f.max_seq,
            });
            // The whole entry goes: its other files would be orphans, deleted at start.
            plan.quarantine.extend(f.paths().map(str::to_string));
            plan.edits.push(Edit::Compact {
                region: region.key,
                added: Vec::new(),
                removed: vec![f.id],
            });
            return;
        }
        if let Some(last) = &f.last_rows {
            report.files_checked += 1;
            let size = store.size(last).unwrap_or(0);
            if let Err(reason) =
                read(last).and_then(|b| files::verify_data(&b, size, None, None, None))
            {
                report.findings.push(finding(
                    last,
                    reason,
                    "nothing lost: the last-value cache reads the data file instead",
                ));
                plan.quarantine.insert(last.clone());
                keep.last_rows = None;
            }
        }
    }
    for r in &f.rollups {
        report.files_checked += 1;
        let verdict = read(&r.path)
            .and_then(|b| files::verify_data(&b, r.size, None, Some(r.rows), keys.as_deref_mut()));
        if let Err(reason) = verdict {
            let effect = if f.raw_expired {
                "its downsampled rows are lost (the raw rows expired)"
            } else {
                "nothing lost: queries downsample the raw rows instead"
            };
            report.findings.push(finding(&r.path, reason, effect));
            plan.quarantine.insert(r.path.clone());
            keep.rollups.retain(|x| x.path != r.path);
        }
    }
    if keep != *f {
        plan.edits.push(Edit::Compact {
            region: region.key,
            added: vec![keep],
            removed: vec![f.id],
        });
    }
}

fn finding(file: &str, reason: String, effect: &str) -> Finding {
    Finding {
        file: file.to_string(),
        bytes: None,
        reason,
        effect: effect.to_string(),
        blocks_start: false,
        repairable: true,
    }
}

/// Scans every log (engine logs in id order, then dense tables' logs) and plans them.
fn plan_logs(
    dir: &Path,
    state: Option<&ManifestState>,
    store: &FileStore,
    o: &CheckOptions,
    mut bases: BTreeMap<String, RegionBase>,
    report: &mut Report,
    plan: &mut Plan,
) -> Result<()> {
    let mut base = |key: &RegionKey| -> RegionBase {
        let mut b = bases.remove(&key.dir()).unwrap_or_else(|| RegionBase {
            table: state.and_then(|s| table_name(s, key)),
            ..Default::default()
        });
        let index = state
            .and_then(|s| s.region(key))
            .and_then(|r| r.index_path.clone());
        if !b.rebuilt
            && let Some(p) = index
            && let Ok(bytes) = store.get(&p)
            && let Ok(ix) = files::verify_index(&bytes, o.index_limits)
        {
            b.keys = ix.keys().map(<[u8]>::to_vec).collect();
        }
        b
    };
    let mut planner = Planner::new(o.legacy, &mut base);
    for (id, path) in log_dirs(&dir.join("wal"), |n| n.parse::<usize>().ok())? {
        let scan = scan_dir(&path, o)?;
        let log = format!("wal/{id}");
        let keep_all = state.is_none();
        planner.keep_all = keep_all;
        let p = planner.plan_log(&log, &scan, report);
        if p.rewrite && !keep_all {
            plan.logs.push(p);
        }
    }
    let mut none = |_: &RegionKey| RegionBase::default();
    let mut dense_planner = Planner::new(o.legacy, &mut none);
    dense_planner.keep_all = true;
    let dense = |n: &str| n.strip_suffix(".wal").map(str::to_string);
    for (name, path) in log_dirs(&dir.join("dense"), dense)? {
        let scan = scan_dir(&path, o)?;
        let p = dense_planner.plan_log(&format!("dense/{name}.wal"), &scan, report);
        if p.rewrite && state.is_some() {
            plan.logs.push(p);
        }
    }
    interrupted_swaps(dir, report);
    Ok(())
}

/// A log swap a crash interrupted blocks the start until `repair` finishes it.
fn interrupted_swaps(dir: &Path, report: &mut Report) {
    for parent in ["wal", "dense"] {
        let Ok(rd) = std::fs::read_dir(dir.join(parent)) else {
            continue;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(REPAIRING) || name.ends_with(DAMAGED) {
                report.findings.push(Finding {
                    file: format!("{parent}/{name}"),
                    bytes: None,
                    reason: "a repair of this log was interrupted".into(),
                    effect: "the server refuses to start until `tempora repair` finishes it".into(),
                    blocks_start: true,
                    repairable: true,
                });
            }
        }
    }
}

/// Subdirectories of `dir` whose names `parse` accepts, sorted by the parsed value.
fn log_dirs<K: Ord>(dir: &Path, parse: impl Fn(&str) -> Option<K>) -> Result<Vec<(K, PathBuf)>> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for e in rd.flatten() {
        if let Some(k) = e.file_name().to_str().and_then(&parse)
            && e.path().is_dir()
        {
            out.push((k, e.path()));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// Reads and scans the segments of one log directory.
fn scan_dir(dir: &Path, o: &CheckOptions) -> Result<tempora_wal::LogScan> {
    let io = |e| crate::error::io_err("read log", dir.display().to_string(), e);
    let mut files = Vec::new();
    for e in std::fs::read_dir(dir).map_err(io)? {
        let e = e.map_err(io)?;
        let Some(name) = e.file_name().to_str().map(str::to_string) else {
            continue;
        };
        if name.ends_with(".wal") {
            files.push((name, std::fs::read(e.path()).map_err(io)?));
        }
    }
    Ok(tempora_wal::scan_log(&files, o.max_record_size))
}
