//! `SAMPLE BY … FILL(…)`: empty buckets of each group filled across the query's time range
//! (from its `WHERE time >= … / > … / < … / <= … / BETWEEN …` bounds) or, for a side the
//! query leaves open, the data's. Written as standard SQL around the sampled query:
//!
//! - `buckets`: every bucket start of the range (`generate_series` over the width);
//! - `grid`: every group (distinct tag values) × every bucket;
//! - the grid left-joined to the sampled rows, each aggregate column then filled:
//!   `NULL` leaves it empty, a constant `COALESCE`s, `PREV` takes the group's last non-NULL
//!   value before (`last_value … IGNORE NULLS`), `LINEAR` interpolates between the
//!   neighbouring non-NULL values by time (ends without a neighbour stay NULL).

use crate::sql_text::quote;

/// How to fill an empty bucket.
#[derive(Debug, Clone, PartialEq)]
pub enum Fill {
    None,
    Null,
    Prev,
    Linear,
    /// A number, as written (so `0` fills an integer column with an integer).
    Value(String),
}

/// The sampled query's output columns, by name.
#[derive(Debug)]
pub struct Columns {
    pub tags: Vec<String>,
    pub time: String,
    pub aggs: Vec<String>,
    /// Every output column, in the order the query lists them.
    pub order: Vec<String>,
}

/// A bound of the query's time range: the expression and whether it is exclusive.
pub type Bound = Option<(String, bool)>;

/// The filled query around `inner` (the sampled query, without ORDER BY).
pub fn wrap(
    inner: &str,
    cols: &Columns,
    (lo, hi): &(Bound, Bound),
    spec: &crate::sample_by::SampleBy,
    tail: &str,
) -> String {
    let (width, origin, fill) = (&spec.width, &spec.origin, &spec.fill);
    let t = quote(&cols.time);
    let iv = format!("INTERVAL '{}'", width.replace('\'', "''"));
    let bucket = |e: &str, exclusive: bool| {
        // As the sampled `time`: nanoseconds in UTC.
        let e = format!("arrow_cast({e}, 'Timestamp(Nanosecond, Some(\"UTC\"))')");
        let e = if exclusive {
            format!("{e} - INTERVAL '1 nanosecond'")
        } else {
            e
        };
        format!("date_bin({iv}, {e}, TIMESTAMP '{origin}')")
    };
    let lo = lo
        .as_ref()
        .map_or_else(|| "mn".to_string(), |(e, x)| bucket(e, *x));
    let hi = hi
        .as_ref()
        .map_or_else(|| "mx".to_string(), |(e, x)| bucket(e, *x));
    let tags: Vec<String> = cols.tags.iter().map(|c| quote(c)).collect();
    let (groups, grid_cols, on) = if tags.is_empty() {
        (String::new(), String::new(), String::new())
    } else {
        (
            format!(", groups AS (SELECT DISTINCT {} FROM agg)", tags.join(", ")),
            tags.iter().map(|c| format!("g.{c}, ")).collect::<String>(),
            tags.iter()
                .map(|c| format!(" AND g.{c} IS NOT DISTINCT FROM a.{c}"))
                .collect::<String>(),
        )
    };
    let from_grid = if tags.is_empty() {
        "buckets".to_string()
    } else {
        "groups g CROSS JOIN buckets".to_string()
    };
    let part = if tags.is_empty() {
        String::new()
    } else {
        format!("PARTITION BY {} ", tags.join(", "))
    };
    // The output columns in the query's own order: tags and time as they are, aggregates
    // filled.
    let out: Vec<String> = cols
        .order
        .iter()
        .map(|c| {
            if cols.aggs.contains(c) {
                format!("{} AS {}", fill_expr(&quote(c), &t, &part, fill), quote(c))
            } else {
                quote(c)
            }
        })
        .collect();
    let order =
        if tail.trim().is_empty() || !tail.trim_start().to_ascii_uppercase().starts_with("ORDER") {
            let mut o = vec![t.clone()];
            o.extend(tags.iter().cloned());
            format!("ORDER BY {}{tail}", o.join(", "))
        } else {
            tail.to_string()
        };
    format!(
        "WITH agg AS ({inner}), \
         bounds AS (SELECT {lo} AS lo, {hi} AS hi FROM (SELECT min({t}) AS mn, max({t}) AS mx FROM agg) AS s), \
         buckets AS (SELECT unnest(generate_series(lo, hi, {iv})) AS {t} FROM bounds){groups}, \
         joined AS (SELECT {grid_cols}buckets.{t} AS {t}, {aggs} FROM {from_grid} \
         LEFT JOIN agg a ON buckets.{t} = a.{t}{on}) \
         SELECT {out} FROM joined {order}",
        aggs = cols
            .aggs
            .iter()
            .map(|a| format!("a.{}", quote(a)))
            .collect::<Vec<_>>()
            .join(", "),
        out = out.join(", "),
    )
}

fn fill_expr(a: &str, t: &str, part: &str, fill: &Fill) -> String {
    let before =
        format!("OVER ({part}ORDER BY {t} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)");
    let after =
        format!("OVER ({part}ORDER BY {t} ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING)");
    let tn = format!("CAST({t} AS BIGINT)");
    match fill {
        Fill::None | Fill::Null => a.to_string(),
        Fill::Value(v) => format!("COALESCE({a}, {v})"),
        // `IGNORE NULLS` after the call: both the PostgreSQL and the generic dialect parse it.
        Fill::Prev => format!("last_value({a}) IGNORE NULLS {before}"),
        Fill::Linear => {
            let pv = format!("last_value({a}) IGNORE NULLS {before}");
            let nv = format!("first_value({a}) IGNORE NULLS {after}");
            let pt = format!(
                "last_value(CASE WHEN {a} IS NOT NULL THEN {tn} END) IGNORE NULLS {before}"
            );
            let nt = format!(
                "first_value(CASE WHEN {a} IS NOT NULL THEN {tn} END) IGNORE NULLS {after}"
            );
            format!(
                "COALESCE({a}, {pv} + ({nv} - {pv}) * CAST({tn} - {pt} AS DOUBLE) / CAST(NULLIF({nt} - {pt}, 0) AS DOUBLE))"
            )
        }
    }
}
