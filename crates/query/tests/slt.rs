//! Runs every `tests/slt/*.slt` file (sqllogictest) against a fresh in-memory engine with
//! database `db`.
//!
//! Conventions the files rely on:
//! - `FLUSH` moves every memtable row into data files; `COMPACT` compacts the files. With
//!   them a file puts rows in files and in the memtable at once.
//! - Values print as Arrow displays them: `NULL` for null, `(empty)` for an empty string,
//!   timestamps with a zone as RFC 3339 (`2024-01-01T00:00:10Z`), floats as `1.0`.
//! - Column type letters are not checked; `statement error <regex>` matches anywhere in the
//!   error's message.

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use arrow::util::display::{ArrayFormatter, FormatOptions};
use async_trait::async_trait;
use sqllogictest::{DBOutput, DefaultColumnType, Runner};
use tempora_query::QueryService;
use tempora_storage::Engine;

struct Db {
    engine: Arc<Engine>,
    q: QueryService,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct SltError(String);

#[async_trait]
impl sqllogictest::AsyncDB for Db {
    type Error = SltError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, SltError> {
        let word = sql.trim().trim_end_matches(';').to_ascii_uppercase();
        if word == "FLUSH" || word == "COMPACT" {
            let e = self.engine.clone();
            tokio::task::spawn_blocking(move || match word.as_str() {
                "FLUSH" => e.flush(),
                _ => e.compact().map(|_| ()),
            })
            .await
            .unwrap()
            .map_err(|e| SltError(e.to_string()))?;
            return Ok(DBOutput::StatementComplete(0));
        }
        let out = self
            .q
            .sql("db", sql, 0)
            .await
            .map_err(|e| SltError(e.to_string()))?;
        let options = FormatOptions::default().with_null("NULL");
        let mut rows = Vec::new();
        for b in &out.batches {
            let formatters = b
                .columns()
                .iter()
                .map(|c| ArrayFormatter::try_new(c.as_ref(), &options))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| SltError(e.to_string()))?;
            for i in 0..b.num_rows() {
                rows.push(
                    formatters
                        .iter()
                        .map(|f| match f.value(i).to_string() {
                            s if s.is_empty() => "(empty)".to_string(),
                            s => s,
                        })
                        .collect::<Vec<_>>(),
                );
            }
        }
        let columns = out.batches.first().map_or(0, |b| b.num_columns());
        if columns == 0 && rows.is_empty() {
            return Ok(DBOutput::StatementComplete(0));
        }
        Ok(DBOutput::Rows {
            types: vec![DefaultColumnType::Any; columns],
            rows,
        })
    }

    async fn shutdown(&mut self) {}
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqllogictest_files() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/slt");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "slt"))
        .collect();
    files.sort();
    assert!(files.len() >= 10, "the .slt files are missing from {dir:?}");
    let only = std::env::var("SLT").ok();
    let mut failures = Vec::new();
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        if only.as_ref().is_some_and(|o| !name.contains(o.as_str())) {
            continue;
        }
        let mut runner = Runner::new(|| async {
            let (engine, q) = common::service().await;
            Ok(Db { engine, q })
        });
        if let Err(e) = runner.run_file_async(file).await {
            failures.push(format!("{name}: {e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
