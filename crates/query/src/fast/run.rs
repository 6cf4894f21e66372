//! The I/O shell of the fast path: scans the engine for a [`BucketQuery`] and folds what it
//! reads, region by region, under the query's memory limit.
//!
//! Reading window: `ORDER BY <bucket> DESC LIMIT n` over a range with an end needs only the
//! newest buckets. The first read covers the last `n` whole buckets before the end; if they
//! hold at least `n` groups the answer is among them (every bucket outside the window sorts
//! after every bucket inside it, and the window's buckets are whole). Otherwise a window of
//! `16 n` buckets, then the whole range, is read.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use arrow::array::RecordBatch;
use datafusion::execution::memory_pool::{MemoryConsumer, MemoryPool, MemoryReservation};
use tempora_model::TableSchema;
use tempora_storage::read::SortedRun;
use tempora_storage::{Engine, ScanRequest, StorageError, TagForm};

use super::FastQuery;
use super::aggregate::Fold;
use super::latest::LatestQuery;
use super::recognize::BucketQuery;
use super::rows::RowsQuery;
use super::sorted::expanded_size;
use crate::error::Result;
use crate::functions::date_trunc::truncate;

/// Latest-value reads of at most this many cached rows run on the calling async task
/// instead of the blocking pool (`QueryService::run_fast`).
pub const INLINE_LATEST_ROWS_MAX: usize = 10_000;

/// Runs any fast query on the calling thread; `Ok(None)` when `cancel` was set or the fold
/// handed the query back.
pub fn run_fast_query(
    engine: &Engine,
    table: &str,
    q: &FastQuery,
    pool: &Arc<dyn MemoryPool>,
    cancel: &AtomicBool,
) -> Result<Option<RecordBatch>> {
    match q {
        FastQuery::Bucket(b) => run_blocking(engine, table, b, pool, cancel),
        FastQuery::Latest(l) => run_latest(engine, table, l, pool).map(Some),
        FastQuery::Rows(r) => run_rows(engine, table, r, pool, cancel),
    }
}

/// The query's (empty) share of the memory pool.
fn reserve(pool: &Arc<dyn MemoryPool>) -> MemoryReservation {
    MemoryConsumer::new("tempora fast path").register(pool)
}

/// The memory reservation and the table's schema every read starts with.
fn start(
    engine: &Engine,
    table: &str,
    pool: &Arc<dyn MemoryPool>,
) -> Result<(MemoryReservation, Arc<TableSchema>)> {
    let schema = engine
        .schema(table)
        .ok_or_else(|| StorageError::TableNotFound(table.to_string()))?;
    Ok((reserve(pool), schema))
}

/// Runs a latest-value query from the last-value cache, on the calling (blocking) thread.
pub fn run_latest(
    engine: &Engine,
    table: &str,
    q: &LatestQuery,
    pool: &Arc<dyn MemoryPool>,
) -> Result<RecordBatch> {
    let (reservation, schema) = start(engine, table, pool)?;
    let latest = engine.latest(table, &q.matcher, Some(&q.fields(&schema)))?;
    reservation.try_resize(latest.get_array_memory_size())?;
    Ok(q.finish(&latest)?)
}

/// Runs a row-selection query on the calling (blocking) thread; `Ok(None)` when `cancel`
/// was set.
pub fn run_rows(
    engine: &Engine,
    table: &str,
    q: &RowsQuery,
    pool: &Arc<dyn MemoryPool>,
    cancel: &AtomicBool,
) -> Result<Option<RecordBatch>> {
    let (reservation, schema) = start(engine, table, pool)?;
    let (tags, fields) = q.reads(&schema);
    let typed: Vec<(String, tempora_model::FieldType)> = schema
        .fields()
        .filter(|(n, _)| fields.iter().any(|f| f == n))
        .map(|(n, t)| (n.to_string(), t))
        .collect();
    // The scan returns fields in request order: ask in the schema's order, as `typed` is.
    let req = ScanRequest {
        time: (q.time != (i64::MIN, i64::MAX)).then_some(q.time),
        matcher: q.matcher.clone(),
        fields: Some(typed.iter().map(|(n, _)| n.clone()).collect()),
        tags: Some(tags.clone()),
        field_bounds: q.bounds(),
    };
    // Tags as dictionaries: sorted and gathered by key, written out once (fast::sorted).
    let read_schema = tempora_storage::output_schema_as(&tags, &typed, TagForm::Dictionary);
    let plan = engine.plan_scan(table, &req)?;
    let mut kept = Vec::new();
    for region in 0..plan.regions() {
        if cancel.load(Ordering::Relaxed) {
            return Ok(None);
        }
        let Some(b) = plan.read_as(region, TagForm::Dictionary)? else {
            continue;
        };
        reservation.try_grow(b.get_array_memory_size())?;
        let mask = q.keep(&b)?;
        if mask.as_ref().is_none_or(|m| m.true_count() > 0) {
            kept.push((b, mask));
        } else {
            reservation.shrink(b.get_array_memory_size());
        }
    }
    // The sort keys (row format) and the gathered output, tags written out, are at most two
    // more copies.
    let expanded: usize = kept.iter().map(|(b, _)| expanded_size(b)).sum();
    reservation.try_grow(expanded.saturating_mul(2))?;
    Ok(Some(q.finish(&kept, &read_schema)?))
}

/// Windows to try, narrowest first; the last is always the query's whole range.
pub fn windows(q: &BucketQuery) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    let (start, end) = q.time;
    if let (Some(limit), Some(key), Some(b)) = (q.limit, q.bucket_first(), q.bucket)
        && !key.asc
        && end != i64::MAX
        && end > start
        && limit > 0
    {
        let last = truncate(end - 1, b);
        for buckets in [limit, limit.saturating_mul(16)] {
            let buckets = i64::try_from(buckets).unwrap_or(i64::MAX);
            let back = (buckets - 1).saturating_mul(b.0);
            let from = last.saturating_sub(back);
            if from <= start {
                break;
            }
            out.push((from, end));
        }
    }
    out.push(q.time);
    out
}

/// Runs `q` against table `table` (the engine's name) on the calling (blocking) thread.
/// `Ok(None)`: the fold bailed (see `Bail`) or `cancel` was set; the caller asks DataFusion.
pub fn run_blocking(
    engine: &Engine,
    table: &str,
    q: &BucketQuery,
    pool: &Arc<dyn MemoryPool>,
    cancel: &AtomicBool,
) -> Result<Option<RecordBatch>> {
    let mut reservation = reserve(pool);
    let all = windows(q);
    for (i, &w) in all.iter().enumerate() {
        let Some(fold) = fold_window(engine, table, q, w, &mut reservation, cancel)? else {
            return Ok(None);
        };
        let last = i + 1 == all.len();
        if last || q.limit.is_some_and(|l| fold.len() >= l) {
            return Ok(Some(fold.finish(q)?));
        }
    }
    unreachable!("the last window is always answered")
}

/// Fewest series a scan reads for its regions to be read ahead on a thread of their own:
/// below it, starting the thread and handing runs over costs more than the overlap saves
/// (a few hosts over an hour take well under a millisecond in all).
const READ_AHEAD_MIN_SERIES: usize = 256;

/// Whether a scan of `regions` regions holding `series` selected series reads ahead.
fn read_ahead(regions: usize, series: usize) -> bool {
    regions >= 2 && series >= READ_AHEAD_MIN_SERIES
}

fn fold_window(
    engine: &Engine,
    table: &str,
    q: &BucketQuery,
    (start, end): (i64, i64),
    reservation: &mut MemoryReservation,
    cancel: &AtomicBool,
) -> Result<Option<Fold>> {
    let mut fold = Fold::new(q);
    if start >= end {
        return Ok(Some(fold));
    }
    let req = ScanRequest {
        time: (start != i64::MIN || end != i64::MAX).then_some((start, end)),
        matcher: q.matcher.clone(),
        fields: Some(q.fields()),
        tags: Some(q.group_tags.clone()),
        field_bounds: Vec::new(),
    };
    let plan = engine.plan_scan(table, &req)?;
    if !read_ahead(plan.regions(), plan.stats.series_kept) {
        // Nothing to read ahead of, or too little to pay for a thread.
        for region in 0..plan.regions() {
            if cancel.load(Ordering::Relaxed) {
                return Ok(None);
            }
            let Some(run) = plan.read_run(region)? else {
                continue;
            };
            if !fold_run(&mut fold, q, &run, reservation)? {
                return Ok(None);
            }
        }
        return Ok(Some(fold));
    }
    std::thread::scope(|scope| {
        // A reader thread reads region i + 1 while this thread folds region i. The fold sees
        // the regions in the same order as a plain loop, so every sum is the same. The read
        // that waits is charged to the reader's own reservation: at most one run more than
        // the fold holds.
        let (tx, rx) = std::sync::mpsc::sync_channel::<Result<SortedRun>>(0);
        let ahead = reservation.new_empty();
        let plan = &plan;
        scope.spawn(move || {
            for region in 0..plan.regions() {
                if cancel.load(Ordering::Relaxed) {
                    return;
                }
                let read = match plan.read_run(region) {
                    Ok(None) => continue,
                    Ok(Some(run)) => ahead
                        .try_resize(run.batch.get_array_memory_size())
                        .map(|()| run)
                        .map_err(Into::into),
                    Err(e) => Err(e.into()),
                };
                let failed = read.is_err();
                if tx.send(read).is_err() || failed {
                    return;
                }
            }
        });
        for read in rx {
            let run = read?;
            if !fold_run(&mut fold, q, &run, reservation)? {
                return Ok(None);
            }
        }
        if cancel.load(Ordering::Relaxed) {
            return Ok(None);
        }
        Ok(Some(fold))
    })
}

/// Folds one region's run into `fold`; `false` when the fold bails (`Bail`).
fn fold_run(
    fold: &mut Fold,
    q: &BucketQuery,
    run: &SortedRun,
    reservation: &mut MemoryReservation,
) -> Result<bool> {
    reservation.try_resize(run.batch.get_array_memory_size() + fold.bytes())?;
    let tags = run.tag_values(&q.group_tags)?;
    let tuple_of_rank: Vec<u32> = if tags.is_empty() {
        // No tags grouped by: every series is the one empty tuple.
        vec![fold.tuple_id(Vec::new()); run.keys.len()]
    } else {
        (0..run.keys.len())
            .map(|r| {
                let values = tags
                    .iter()
                    .map(|t| arrow::array::Array::is_valid(t, r).then(|| t.value(r).to_string()))
                    .collect();
                fold.tuple_id(values)
            })
            .collect()
    };
    let fields = &run.batch.columns()[3..];
    if fold
        .add(run.ranks(), run.times(), &tuple_of_rank, fields)
        .is_err()
    {
        return Ok(false);
    }
    reservation.try_resize(fold.bytes())?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fast::{FastQuery, recognize};

    const MIN: i64 = 60_000_000_000;

    #[test]
    fn reads_ahead_only_for_several_regions_and_many_series() {
        for (name, regions, series, want) in [
            ("one region", 1, 100_000, false),
            ("a few hosts over four regions", 4, 8, false),
            ("just below", 4, READ_AHEAD_MIN_SERIES - 1, false),
            ("at the threshold", 2, READ_AHEAD_MIN_SERIES, true),
            ("every host of four regions", 4, 4000, true),
        ] {
            assert_eq!(read_ahead(regions, series), want, "{name}");
        }
    }

    fn query(sql: &str) -> BucketQuery {
        use tempora_model::{ColumnKind, FieldType, TableSchema};
        let schema = Arc::new(TableSchema::with_columns(
            "t",
            vec![
                ("host".into(), ColumnKind::Tag),
                ("v".into(), ColumnKind::Field(FieldType::I64)),
            ],
        ));
        match recognize(sql, &|t| (t == "t").then(|| schema.clone())).expect(sql) {
            FastQuery::Bucket(b) => b,
            other => panic!("a bucket query: {sql}: {other:?}"),
        }
    }

    #[test]
    fn windows_named_cases() {
        let end = 100 * MIN + 30_000_000_000; // 01:40:30 after the epoch
        type Case = (&'static str, String, Vec<(i64, i64)>);
        let cases: &[Case] = &[
            (
                "newest first with a limit: n buckets, 16 n buckets, then all",
                format!("SELECT date_trunc('minute', time) AS m, max(v) AS x FROM t WHERE time < '{}' GROUP BY m ORDER BY m DESC LIMIT 5", "1970-01-01T01:40:30Z"),
                vec![(96 * MIN, end), (21 * MIN, end), (i64::MIN, end)],
            ),
            (
                "a start inside the first window: one read",
                "SELECT date_trunc('minute', time) AS m, max(v) AS x FROM t WHERE time >= '1970-01-01T01:38:00Z' AND time < '1970-01-01T01:40:30Z' GROUP BY m ORDER BY m DESC LIMIT 5".into(),
                vec![(98 * MIN, end)],
            ),
            (
                "a start inside the second window: two reads",
                "SELECT date_trunc('minute', time) AS m, max(v) AS x FROM t WHERE time >= '1970-01-01T01:30:00Z' AND time < '1970-01-01T01:40:30Z' GROUP BY m ORDER BY m DESC LIMIT 5".into(),
                vec![(96 * MIN, end), (90 * MIN, end)],
            ),
            (
                "ascending: the whole range",
                "SELECT date_trunc('minute', time) AS m, max(v) AS x FROM t WHERE time < '1970-01-01T01:40:30Z' GROUP BY m ORDER BY m LIMIT 5".into(),
                vec![(i64::MIN, end)],
            ),
            (
                "no end: the whole range",
                "SELECT date_trunc('minute', time) AS m, max(v) AS x FROM t GROUP BY m ORDER BY m DESC LIMIT 5".into(),
                vec![(i64::MIN, i64::MAX)],
            ),
            (
                "no limit: the whole range",
                "SELECT date_trunc('minute', time) AS m, max(v) AS x FROM t WHERE time < '1970-01-01T01:40:30Z' GROUP BY m ORDER BY m DESC".into(),
                vec![(i64::MIN, end)],
            ),
            (
                "first sorted by a tag: the whole range",
                "SELECT host, date_trunc('minute', time) AS m, max(v) AS x FROM t WHERE time < '1970-01-01T01:40:30Z' GROUP BY host, m ORDER BY host, m DESC LIMIT 5".into(),
                vec![(i64::MIN, end)],
            ),
        ];
        for (name, sql, want) in cases {
            assert_eq!(windows(&query(sql)), *want, "{name}");
        }
    }
}
