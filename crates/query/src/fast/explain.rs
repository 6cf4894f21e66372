//! `EXPLAIN` of a fast-path query: what runs instead of DataFusion's plan, with the scan's
//! pruning in the words `TemporaScanExec` uses (regions, files and series kept of total).
//!
//! Only a plain `EXPLAIN` is answered here; `EXPLAIN ANALYZE` and `EXPLAIN VERBOSE` (and
//! every text with `query_fast_path = false`) show DataFusion's plan of the same text.

use std::sync::Arc;

use arrow::array::{RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use tempora_storage::{Engine, ScanRequest};

use super::FastQuery;
use super::recognize::{BucketQuery, Output};
use crate::error::Result;
use crate::pushdown::{describe, describe_matcher};

/// The text explained when `sql` is a plain `EXPLAIN <text>`.
pub fn explained(sql: &str) -> Option<&str> {
    let (explain, stmt) = crate::split_explain(sql);
    explain
        .trim()
        .eq_ignore_ascii_case("explain")
        .then_some(stmt)
}

/// The `plan_type`, `plan` rows of `EXPLAIN` for `q` (table `table`, the engine's name).
pub fn explain(engine: &Engine, table: &str, q: &FastQuery) -> Result<RecordBatch> {
    let short = table.split_once('.').map_or(table, |(_, t)| t);
    let plan = match q {
        FastQuery::Bucket(b) => {
            let req = ScanRequest {
                time: (b.time != (i64::MIN, i64::MAX)).then_some(b.time),
                matcher: b.matcher.clone(),
                fields: Some(b.fields()),
                tags: Some(b.group_tags.clone()),
                field_bounds: Vec::new(),
            };
            format!("{}\n{}", aggregate_line(b), scan_line(engine, table, &req)?)
        }
        FastQuery::Rows(r) => {
            let req = ScanRequest {
                time: (r.time != (i64::MIN, i64::MAX)).then_some(r.time),
                matcher: r.matcher.clone(),
                fields: None,
                tags: None,
                field_bounds: r.bounds(),
            };
            let cmps: Vec<String> = r
                .comparisons
                .iter()
                .map(|c| format!("{} {} {:?}", c.field, c.op, c.lit))
                .collect();
            let order: Vec<String> = r
                .order
                .iter()
                .map(|(c, asc, _)| format!("{c} {}", if *asc { "ASC" } else { "DESC" }))
                .collect();
            format!(
                "TemporaFastRows: filter=[{}], order=[{}], limit={:?}\n{}",
                cmps.join(" AND "),
                order.join(", "),
                r.limit,
                scan_line(engine, table, &req)?
            )
        }
        FastQuery::Latest(l) => {
            let keys: Vec<&str> = l.keys.iter().map(|(k, _)| k.as_str()).collect();
            let tags = match l.matcher {
                tempora_storage::Matcher::All => String::new(),
                ref m => format!(", pushed=[tags={}]", describe_matcher(m)),
            };
            format!(
                "TemporaFastLatest: newest per [{}], limit={:?}\n  TemporaScanExec: table={short}, last_value_cache=true{tags}",
                keys.join(", "),
                l.limit
            )
        }
    };
    let schema = Arc::new(Schema::new(vec![
        Field::new("plan_type", DataType::Utf8, false),
        Field::new("plan", DataType::Utf8, false),
    ]));
    Ok(RecordBatch::try_new(
        schema,
        vec![
            Arc::new(StringArray::from(vec!["physical_plan"])),
            Arc::new(StringArray::from(vec![plan])),
        ],
    )?)
}

/// The indented `TemporaScanExec` line of a planned scan: its pruning and what was pushed.
fn scan_line(engine: &Engine, table: &str, req: &ScanRequest) -> Result<String> {
    let short = table.split_once('.').map_or(table, |(_, t)| t);
    let stats = engine.plan_scan(table, req)?.stats;
    Ok(format!(
        "  TemporaScanExec: table={short}, {stats}, pushed=[{}]",
        describe(req)
    ))
}

fn aggregate_line(b: &BucketQuery) -> String {
    let bucket = b
        .bucket
        .map_or("none".to_string(), |(len, _)| format!("{len}ns"));
    let aggs: Vec<String> = b
        .outputs
        .iter()
        .filter_map(|o| match o {
            Output::Agg { func, field, .. } => Some(format!(
                "{}({})",
                format!("{func:?}").to_lowercase(),
                field.as_ref().map_or("*", |f| f.0.as_str())
            )),
            _ => None,
        })
        .collect();
    format!(
        "TemporaFastAggregate: bucket={bucket}, group=[{}], aggregates=[{}], limit={:?}",
        b.group_tags.join(", "),
        aggs.join(", "),
        b.limit
    )
}
