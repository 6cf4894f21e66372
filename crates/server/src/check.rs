//! `tempora check` and `tempora repair` of a whole data directory: the engine directory
//! (`db/`, through `tempora_storage::check`) and the server's own files (the token catalog).
//! The quarantine is `<data_dir>/quarantine/<UTC time>/`, outside `db/`.

use std::path::{Path, PathBuf};

use tempora_storage::check::{self, CheckOptions, Finding, Report};

use crate::config::Config;
use crate::error::ServerError;

/// The text the server adds when it refuses to start over damaged files.
pub fn damage_hint(data_dir: &Path) -> String {
    let d = data_dir.display();
    format!(
        "The data directory {d} is damaged. `tempora check --data-dir {d}` shows what is damaged and which rows, series and time ranges it affects, changing nothing; `tempora repair --data-dir {d}` keeps every readable row, moves damaged files to {d}/quarantine/ (never deletes them) and writes a report of what was lost."
    )
}

fn options(c: &Config) -> Result<CheckOptions, ServerError> {
    Ok(CheckOptions::from_engine(&crate::engine_options(c)?))
}

/// Checks every file of the data directory, changing nothing.
pub fn check_data_dir(c: &Config) -> Result<Report, ServerError> {
    let mut report = check::check(&c.data_dir.join("db"), &options(c)?)?;
    check_tokens(&c.data_dir, &mut report);
    Ok(report)
}

/// Repairs the data directory; returns the report and the quarantine directory.
pub fn repair_data_dir(c: &Config) -> Result<(Report, PathBuf), ServerError> {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ").to_string();
    let root = c.data_dir.join("quarantine");
    let mut q = root.join(&stamp);
    let mut n = 1;
    while q.exists() {
        q = root.join(format!("{stamp}-{n}"));
        n += 1;
    }
    let mut report = check::repair(&c.data_dir.join("db"), &q, &options(c)?)?;
    check_tokens(&c.data_dir, &mut report);
    Ok((report, q))
}

/// The token catalog is reported, never moved: moving it would lock the admin out.
fn check_tokens(dir: &Path, report: &mut Report) {
    let p = dir.join("tokens");
    let Ok(bytes) = std::fs::read(&p) else {
        return;
    };
    report.files_checked += 1;
    if let Err(reason) = crate::auth::store::decode(&bytes) {
        report.findings.push(Finding {
            file: p.display().to_string(),
            bytes: None,
            reason,
            effect: "tokens cannot be read; move the file aside and create an admin token with `tempora token create --admin --data-dir`".into(),
            blocks_start: true,
            repairable: false,
        });
    }
}
