//! The query grammar of the differential tests: a seeded generator of aggregate queries over
//! `cpu (time, host, region, dc, v, n)` in every bucket spelling, and results compared as
//! text with floats to 1e-9 relative.

use arrow::array::{Array, RecordBatch};
use arrow::util::display::array_value_to_string;
use datafusion::common::ScalarValue;

/// A small deterministic generator (xorshift).
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
    pub fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

pub const HOSTS: [&str; 6] = ["h1", "h2", "h3", "h4", "h5", "h6"];
pub const DAY0: i64 = 1_704_067_200; // 2024-01-01T00:00:00Z in seconds

/// A time literal between the data's first and last day (some outside it).
pub fn time_lit(rng: &mut Rng) -> String {
    let secs = DAY0 - 3_600 + rng.below(3 * 86_400 + 7_200) as i64;
    let t = chrono::DateTime::from_timestamp(secs, 0).unwrap();
    format!("'{}'", t.format("%Y-%m-%dT%H:%M:%SZ"))
}

/// The bucket spellings: (expression over `time`, whether `SAMPLE BY` writes it instead).
pub fn bucket(rng: &mut Rng) -> Option<String> {
    let unit = *rng.pick(&["minute", "hour", "day"]);
    let secs = match unit {
        "minute" => 60,
        "hour" => 3600,
        _ => 86_400,
    };
    Some(match rng.below(12) {
        0 => return None,
        1 => format!("date_trunc('{unit}', time)"),
        2 => format!("date_bin(INTERVAL '1 {unit}', time)"),
        3 => format!("date_bin(INTERVAL '5 {unit}s', time, TIMESTAMP '1970-01-01T00:02:00Z')"),
        4 => format!("time_bucket(INTERVAL '1 {unit}', time)"),
        5 => format!("floor(extract(epoch from time)/{secs})*{secs}"),
        6 => format!("to_timestamp(((extract(epoch from time)::int)/{secs})*{secs})"),
        7 => "time".into(),
        // A multiple of every unit's rollup, one that holds none, a multiple in epoch form.
        8 => format!("date_bin(INTERVAL '2 {unit}s', time)"),
        9 => "date_bin(INTERVAL '90 seconds', time)".into(),
        10 => format!("floor(extract(epoch from time)/{})*{}", 2 * secs, 2 * secs),
        _ => "date_trunc('week', time)".to_string(),
    })
}

/// A tag predicate.
pub fn tag_pred(rng: &mut Rng) -> String {
    let h = |rng: &mut Rng| format!("'{}'", rng.pick(&HOSTS));
    match rng.below(8) {
        0 => format!("host = {}", h(rng)),
        1 => format!("host IN ({}, {})", h(rng), h(rng)),
        2 => format!("(host = {} OR host = {})", h(rng), h(rng)),
        3 => format!("dc <> 'dc{}'", rng.below(3)),
        4 => format!("dc NOT IN ('dc0', 'dc{}')", rng.below(3)),
        5 => "host ~ '^h[1-3]'".into(),
        6 => "dc IS NULL".into(),
        _ => format!("(region = 'eu' OR dc = 'dc{}')", rng.below(3)),
    }
}

pub struct Case {
    pub sql: String,
    pub params: Vec<ScalarValue>,
}

/// One query of the grammar.
pub fn case(rng: &mut Rng) -> Case {
    let mut params = Vec::new();
    let p = |rng: &mut Rng, params: &mut Vec<ScalarValue>| {
        let lit = time_lit(rng);
        if rng.chance(25) {
            params.push(ScalarValue::Utf8(Some(lit.trim_matches('\'').to_string())));
            format!("${}", params.len())
        } else {
            lit
        }
    };
    let mut conds = Vec::new();
    match rng.below(5) {
        0 => {}
        1 => conds.push(format!("time >= {}", p(rng, &mut params))),
        2 => {
            let op = *rng.pick(&[">", ">="]);
            conds.push(format!("time {op} {}", p(rng, &mut params)));
            let op = *rng.pick(&["<", "<="]);
            conds.push(format!("time {op} {}", p(rng, &mut params)));
        }
        3 => conds.push(format!("time < {}", time_lit(rng))),
        _ => conds.push(format!(
            "time BETWEEN {} AND {}",
            time_lit(rng),
            time_lit(rng)
        )),
    }
    if rng.chance(50) {
        conds.push(tag_pred(rng));
    }
    if rng.chance(15) {
        conds.push(format!("v > {}", rng.below(60) as i64 - 20));
    }
    let sample_by = rng.chance(10);
    let b = if sample_by {
        Some(rng.pick(&["1m", "1h", "1d"]).to_string())
    } else {
        bucket(rng)
    };
    let tags: Vec<&str> = ["host", "region", "dc"]
        .into_iter()
        .filter(|_| rng.chance(30))
        .collect();
    // first/last are not the operator's: the plans must still agree (the rule leaves them).
    let field_aggs = [
        "max", "min", "sum", "avg", "count", "max", "min", "first", "last",
    ];
    let mut aggs = Vec::new();
    for i in 0..1 + rng.below(3) {
        let f = *rng.pick(&field_aggs);
        let col = *rng.pick(&["v", "n"]);
        aggs.push(if rng.chance(10) {
            format!("count(*) AS a{i}")
        } else {
            format!("{f}({col}) AS a{i}")
        });
    }
    let where_ = if conds.is_empty() {
        String::new()
    } else {
        format!(" WHERE {}", conds.join(" AND "))
    };
    let dir = if rng.chance(50) { "ASC" } else { "DESC" };
    let limit = if rng.chance(30) {
        format!(" LIMIT {}", 1 + rng.below(10))
    } else {
        String::new()
    };
    if sample_by {
        let mut cols = vec!["time".to_string()];
        cols.extend(tags.iter().map(|t| t.to_string()));
        cols.extend(aggs.iter().cloned());
        let mut order = vec![format!("time {dir}")];
        order.extend(tags.iter().map(|t| format!("{t} {dir}")));
        let sql = format!(
            "SELECT {} FROM cpu{where_} SAMPLE BY {} ORDER BY {}{limit}",
            cols.join(", "),
            b.unwrap(),
            order.join(", ")
        );
        return Case { sql, params };
    }
    let mut select = Vec::new();
    let mut group = Vec::new();
    if let Some(b) = &b {
        select.push(format!("{b} AS b"));
        group.push(if rng.chance(50) {
            "b".to_string()
        } else {
            "1".to_string()
        });
    }
    for t in &tags {
        select.push(t.to_string());
        group.push(if rng.chance(50) {
            t.to_string()
        } else {
            (select.len()).to_string()
        });
    }
    let order: Vec<String> = (1..=select.len()).map(|i| format!("{i} {dir}")).collect();
    select.extend(aggs.iter().cloned());
    let group_by = if group.is_empty() {
        String::new()
    } else {
        format!(" GROUP BY {}", group.join(", "))
    };
    let order_by = if order.is_empty() {
        String::new()
    } else {
        format!(" ORDER BY {}", order.join(", "))
    };
    let inner = format!("SELECT {} FROM cpu{where_}{group_by}", select.join(", "));
    let sql = match rng.below(4) {
        0 => format!("WITH q AS ({inner}) SELECT * FROM q{order_by}{limit}"),
        1 => format!("SELECT * FROM ({inner}) AS q{order_by}{limit}"),
        _ => format!("{inner}{order_by}{limit}"),
    };
    Case { sql, params }
}

/// A result as text rows, floats kept apart for a tolerant comparison.
pub fn rows(batches: &[RecordBatch]) -> Vec<Vec<(String, Option<f64>)>> {
    let mut out = Vec::new();
    for b in batches {
        for r in 0..b.num_rows() {
            out.push(
                b.columns()
                    .iter()
                    .map(|c| {
                        let f = match c.data_type() {
                            arrow::datatypes::DataType::Float64 if c.is_valid(r) => Some(
                                c.as_any()
                                    .downcast_ref::<arrow::array::Float64Array>()
                                    .unwrap()
                                    .value(r),
                            ),
                            _ => None,
                        };
                        (array_value_to_string(c, r).unwrap(), f)
                    })
                    .collect(),
            );
        }
    }
    out
}

pub fn same(a: &(String, Option<f64>), b: &(String, Option<f64>)) -> bool {
    match (a.1, b.1) {
        (Some(x), Some(y)) => {
            x == y || (x - y).abs() <= 1e-9 * x.abs().max(y.abs()) || (x.is_nan() && y.is_nan())
        }
        _ => a.0 == b.0,
    }
}

/// Asserts that two results hold the same rows in the same order (floats by [`same`]);
/// `ctx` names the case in a failure.
pub fn assert_same_rows(a: &[RecordBatch], b: &[RecordBatch], ctx: &dyn Fn() -> String) {
    let (ra, rb) = (rows(a), rows(b));
    assert_eq!(ra.len(), rb.len(), "row counts differ: {}", ctx());
    for (i, (x, y)) in ra.iter().zip(&rb).enumerate() {
        assert!(
            x.iter().zip(y).all(|(p, q)| same(p, q)),
            "row {i} differs: {x:?} vs {y:?}: {}",
            ctx()
        );
    }
}

/// A result as columns and rows, or its error's SQLSTATE.
pub type Outcome = Result<(Vec<String>, Vec<Vec<String>>), String>;

pub fn outcome(r: &tempora_query::error::Result<tempora_query::QueryOutput>) -> Outcome {
    match r {
        Ok(o) => Ok((
            o.schema.fields().iter().map(|f| f.to_string()).collect(),
            rows(&o.batches)
                .into_iter()
                .map(|r| r.into_iter().map(|(s, _)| s).collect())
                .collect(),
        )),
        Err(e) => Err(e.sqlstate().to_string()),
    }
}
