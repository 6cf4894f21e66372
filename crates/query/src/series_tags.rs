//! The tag values of a table's series, read from its series indexes without a sample: what
//! PromQL's `/api/v1/series` and label listings and InfluxQL's `SHOW TAG VALUES` and `SHOW
//! SERIES` answer from.
//!
//! Invariant: a series is visited once per region (time partition × bucket) that holds it,
//! so callers that list distinct values collect them in a set.

use arrow::array::Array;
use tempora_index::Matcher;
use tempora_storage::{Engine, ScanRequest};

use crate::error::Result;

/// Calls `each` with the values of `tags` (absent or empty: `None`) of every series of the
/// table `qualified` that `matcher` selects, in every region overlapping `time` (ns, end
/// exclusive; `None`: all).
pub fn each_series(
    engine: &Engine,
    qualified: &str,
    tags: &[String],
    matcher: Matcher,
    time: Option<(i64, i64)>,
    each: &mut dyn FnMut(&[Option<&str>]) -> Result<()>,
) -> Result<()> {
    let req = ScanRequest {
        time,
        matcher,
        fields: Some(Vec::new()),
        tags: Some(Vec::new()),
        field_bounds: Vec::new(),
    };
    let plan = engine.plan_scan(qualified, &req)?;
    for i in 0..plan.regions() {
        let keys = plan.series_keys(i)?;
        let values = tempora_storage::read::tag_columns(keys.iter().map(|k| k.as_ref()), tags)?;
        let mut row: Vec<Option<&str>> = Vec::with_capacity(tags.len());
        for k in 0..keys.len() {
            row.clear();
            row.extend(values.iter().map(|col| {
                (!col.is_null(k))
                    .then(|| col.value(k))
                    .filter(|v| !v.is_empty())
            }));
            each(&row)?;
        }
    }
    Ok(())
}
