//! What `check` found and `repair` did: findings with their effect, rows and files that could
//! not be kept, and the actions taken. Serialised as JSON (`report.json`, `--json`) and
//! rendered as text, one line per finding or loss.

use serde::Serialize;

/// The report of one check or repair of an engine directory.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    /// Damage and warnings, in the order files were read.
    pub findings: Vec<Finding>,
    /// Log rows that cannot be kept (listed exactly).
    pub lost_rows: Vec<LostRow>,
    /// Data files that cannot be read, and the rows the manifest says they hold.
    pub lost_files: Vec<LostFile>,
    /// What repair did (empty for a check).
    pub actions: Vec<String>,
    /// Files read and verified, log records read.
    pub files_checked: u64,
    pub records_checked: u64,
}

/// One damaged file or range, and what it affects.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// The file, relative to the engine directory.
    pub file: String,
    /// The damaged bytes, `[start, end)`, when known.
    pub bytes: Option<[u64; 2]>,
    pub reason: String,
    /// What it costs: which records, rows, series and time ranges.
    pub effect: String,
    /// The server refuses to start because of it (else it starts and the finding is a
    /// warning, e.g. a torn log tail it cuts itself).
    pub blocks_start: bool,
    /// `repair` can fix it.
    pub repairable: bool,
}

/// A log row that cannot be kept: its record survived but the series it names cannot be
/// known (a record before it that introduced series ids was lost, or its region's index was
/// rebuilt).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LostRow {
    pub log: String,
    pub seq: u64,
    pub table: String,
    pub region: String,
    pub series_id: u32,
    pub time: i64,
    pub reason: String,
}

/// A data file set aside, with the manifest's account of its rows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LostFile {
    pub path: String,
    pub table: String,
    pub region: String,
    pub rows: u64,
    pub min_time: i64,
    pub max_time: i64,
    pub min_seq: u64,
    pub max_seq: u64,
}

impl Report {
    /// Whether anything blocks the server's start or loses data.
    pub fn damaged(&self) -> bool {
        self.findings.iter().any(|f| f.blocks_start || f.repairable)
    }

    /// The text form: a summary line, then one line per finding and loss.
    pub fn to_text(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "checked {} files and {} log records: {} findings, {} log rows and {} data files that cannot be kept",
            self.files_checked,
            self.records_checked,
            self.findings.len(),
            self.lost_rows.len(),
            self.lost_files.len()
        );
        for f in &self.findings {
            let at = f
                .bytes
                .map_or(String::new(), |[a, b]| format!(" bytes {a}..{b}"));
            let tag = match (f.blocks_start, f.repairable) {
                (true, _) => "DAMAGE (blocks start)",
                (false, true) => "DAMAGE",
                _ => "warning",
            };
            let _ = writeln!(s, "{tag}: {}{at}: {}; {}", f.file, f.reason, f.effect);
        }
        for r in &self.lost_rows {
            let _ = writeln!(
                s,
                "lost row: log {} seq {} table {} region {} series id {} time {}: {}",
                r.log, r.seq, r.table, r.region, r.series_id, r.time, r.reason
            );
        }
        for f in &self.lost_files {
            let _ = writeln!(
                s,
                "lost file: {} (table {}, region {}): {} rows, time {}..={}, seqs {}..={}",
                f.path, f.table, f.region, f.rows, f.min_time, f.max_time, f.min_seq, f.max_seq
            );
        }
        for a in &self.actions {
            let _ = writeln!(s, "done: {a}");
        }
        s
    }
}
