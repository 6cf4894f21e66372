//! Differential test: queries generated from a grammar, each run with Tempora's operators and
//! plan cache (the defaults) and with neither (DataFusion's plain plan of the same statement,
//! planned afresh), must give the same column names and types and the same rows in the same order (floats to
//! 1e-9 relative, since sums add in another order).
//!
//! The grammar covers time ranges (`>=`, `>`, `<`, `<=`, `BETWEEN`), tag predicates (`=`, `IN`,
//! `<>`, `NOT IN`, regex, `OR`, `IS NULL`), field predicates, `max`/`min`/`sum`/`avg`/`count`
//! and `first`/`last`,
//! bucket spellings (`date_trunc`, `date_bin` with and without origin, `time_bucket`, epoch
//! arithmetic as Grafana and TimescaleDB-format tools write it, `time` itself, `SAMPLE BY`),
//! `GROUP BY` by name, alias and position, `ORDER BY` either way, `LIMIT`, a CTE or a subquery
//! around the aggregate, and bound parameters. Cases are seeded: `DIFF_SEED` and
//! `DIFF_CASES` (default 2000) pick them; a failure prints the query and its parameters.

mod common;

use std::sync::Arc;

use arrow::array::{Array, RecordBatch};
use arrow::util::display::array_value_to_string;
use datafusion::common::ScalarValue;
use tempora_query::{QueryOptions, QueryService};
use tempora_storage::Engine;

/// A small deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.below(v.len())]
    }
}

const HOSTS: [&str; 6] = ["h1", "h2", "h3", "h4", "h5", "h6"];
const DAY0: i64 = 1_704_067_200; // 2024-01-01T00:00:00Z in seconds

/// Three days of points for six hosts (one without `dc`), out of order, some overwritten,
/// some fields missing; the first half flushed to files, the rest in the memtable.
async fn load(engine: &Arc<Engine>, q: &QueryService) {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let mut batches: Vec<String> = Vec::new();
    for _ in 0..2 {
        let mut rows = Vec::new();
        for (i, h) in HOSTS.iter().enumerate() {
            for _ in 0..120 {
                let secs = DAY0 + rng.below(3 * 86_400) as i64;
                let nanos = rng.below(1_000_000_000) as i64;
                let t = secs * 1_000_000_000 + nanos;
                let region = if i % 2 == 0 { "'eu'" } else { "'us'" };
                let dc = if i == 5 {
                    "NULL".to_string()
                } else {
                    format!("'dc{}'", i % 3)
                };
                let v = if rng.chance(10) {
                    "NULL".to_string()
                } else {
                    format!("{:.3}", (rng.below(20_000) as f64 - 5_000.0) / 100.0)
                };
                let n = rng.below(1000) as i64 - 300;
                rows.push(format!("({t}, '{h}', {region}, {dc}, {v}, {n})"));
            }
        }
        batches.push(format!(
            "INSERT INTO cpu (time, host, region, dc, v, n) VALUES {}",
            rows.join(", ")
        ));
    }
    common::exec(q, &batches[0]).await;
    common::flush(engine).await;
    common::exec(q, &batches[1]).await;
}

/// A time literal between the data's first and last day (some outside it).
fn time_lit(rng: &mut Rng) -> String {
    let secs = DAY0 - 3_600 + rng.below(3 * 86_400 + 7_200) as i64;
    let t = chrono::DateTime::from_timestamp(secs, 0).unwrap();
    format!("'{}'", t.format("%Y-%m-%dT%H:%M:%SZ"))
}

/// The bucket spellings: (expression over `time`, whether `SAMPLE BY` writes it instead).
fn bucket(rng: &mut Rng) -> Option<String> {
    let unit = *rng.pick(&["minute", "hour", "day"]);
    let secs = match unit {
        "minute" => 60,
        "hour" => 3600,
        _ => 86_400,
    };
    Some(match rng.below(9) {
        0 => return None,
        1 => format!("date_trunc('{unit}', time)"),
        2 => format!("date_bin(INTERVAL '1 {unit}', time)"),
        3 => format!("date_bin(INTERVAL '5 {unit}s', time, TIMESTAMP '1970-01-01T00:02:00Z')"),
        4 => format!("time_bucket(INTERVAL '1 {unit}', time)"),
        5 => format!("floor(extract(epoch from time)/{secs})*{secs}"),
        6 => format!("to_timestamp(((extract(epoch from time)::int)/{secs})*{secs})"),
        7 => "time".into(),
        _ => "date_trunc('week', time)".to_string(),
    })
}

/// A tag predicate.
fn tag_pred(rng: &mut Rng) -> String {
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

struct Case {
    sql: String,
    params: Vec<ScalarValue>,
}

/// One query of the grammar.
fn case(rng: &mut Rng) -> Case {
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
fn rows(batches: &[RecordBatch]) -> Vec<Vec<(String, Option<f64>)>> {
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

fn same(a: &(String, Option<f64>), b: &(String, Option<f64>)) -> bool {
    match (a.1, b.1) {
        (Some(x), Some(y)) => {
            x == y || (x - y).abs() <= 1e-9 * x.abs().max(y.abs()) || (x.is_nan() && y.is_nan())
        }
        _ => a.0 == b.0,
    }
}

/// A result as columns and rows, or its error's SQLSTATE.
type Outcome = Result<(Vec<String>, Vec<Vec<String>>), String>;

fn outcome(r: &tempora_query::error::Result<tempora_query::QueryOutput>) -> Outcome {
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operators_give_the_plain_plans_rows() {
    let (engine, dbs) = common::engine();
    // Every aggregate over two regions or more is folded on several threads (the threshold
    // is for speed, not for answers), so the split and merge are compared too.
    let q = QueryService::new(
        dbs.clone(),
        tempora_query::QueryLimits {
            parallel_min_values: 0,
            ..tempora_query::QueryLimits::default()
        },
    )
    .unwrap();
    // The reference: DataFusion's plain plans, planned afresh each time.
    let plain = QueryService::new(
        dbs,
        tempora_query::QueryLimits {
            operators: false,
            plan_cache_entries: 0,
            ..tempora_query::QueryLimits::default()
        },
    )
    .unwrap();
    load(&engine, &q).await;
    let seed: u64 = std::env::var("DIFF_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0xd1ff_0000_0000_0001);
    let cases: usize = std::env::var("DIFF_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let mut rng = Rng(seed);
    let (mut on_ops, mut errors) = (0, 0);
    for n in 0..cases {
        let c = case(&mut rng);
        let (mut o1, mut o2) = (QueryOptions::default(), QueryOptions::default());
        let on = q.run("db", &c.sql, 0, &mut o1, c.params.clone()).await;
        let off = plain.run("db", &c.sql, 0, &mut o2, c.params.clone()).await;
        let ctx = || format!("case {n}: {}  params {:?}", c.sql, c.params);
        if c.params.is_empty() {
            // The same text again: the second run keeps it in the plan cache, the third runs
            // from what was kept (its physical plan run again, when kept).
            for run in ["second", "third"] {
                let again = q.run("db", &c.sql, 0, &mut o1, Vec::new()).await;
                assert_eq!(
                    outcome(&on),
                    outcome(&again),
                    "the {run} run differs: {}",
                    ctx()
                );
            }
        }
        match (on, off) {
            (Ok(a), Ok(b)) => {
                let (fa, fb): (Vec<_>, Vec<_>) = (
                    a.schema
                        .fields()
                        .iter()
                        .map(|f| (f.name().clone(), f.data_type().clone()))
                        .collect(),
                    b.schema
                        .fields()
                        .iter()
                        .map(|f| (f.name().clone(), f.data_type().clone()))
                        .collect(),
                );
                assert_eq!(fa, fb, "columns differ: {}", ctx());
                let (ra, rb) = (rows(&a.batches), rows(&b.batches));
                assert_eq!(ra.len(), rb.len(), "row counts differ: {}", ctx());
                for (i, (x, y)) in ra.iter().zip(&rb).enumerate() {
                    assert!(
                        x.iter().zip(y).all(|(p, q)| same(p, q)),
                        "row {i} differs: {x:?} vs {y:?}: {}",
                        ctx()
                    );
                }
                on_ops += 1;
            }
            (Err(a), Err(b)) => {
                errors += 1;
                assert_eq!(
                    a.sqlstate(),
                    b.sqlstate(),
                    "errors differ ({a} / {b}): {}",
                    ctx()
                );
            }
            (a, b) => panic!(
                "one way failed: on={:?} off={:?}: {}",
                a.err().map(|e| e.to_string()),
                b.err().map(|e| e.to_string()),
                ctx()
            ),
        }
    }
    // Most generated queries are valid; a grammar that produces only errors tests nothing.
    assert!(
        errors * 10 < cases,
        "{errors} of {cases} cases failed both ways"
    );
    assert!(on_ops > 0);
}

/// The operators are really used: the plan of a generated bucket query names them.
#[tokio::test]
async fn the_operator_is_in_the_plans_of_every_spelling() {
    let (engine, q) = common::service().await;
    load(&engine, &q).await;
    for b in [
        "date_trunc('hour', time)",
        "date_bin(INTERVAL '1 hour', time)",
        "date_bin(INTERVAL '1 hour', time, TIMESTAMP '1970-01-01T00:00:00Z')",
        "time_bucket(INTERVAL '1 hour', time)",
        "floor(extract(epoch from time)/3600)*3600",
        "to_timestamp(((extract(epoch from time)::int)/3600)*3600)",
    ] {
        for shape in [
            format!(
                "SELECT {b} AS b, host, max(v) FROM cpu WHERE host = 'h1' GROUP BY b, host ORDER BY b"
            ),
            format!("SELECT {b}, max(v) FROM cpu GROUP BY 1 ORDER BY 1 DESC LIMIT 3"),
            format!(
                "WITH q AS (SELECT {b} AS b, avg(n) AS a FROM cpu GROUP BY b) SELECT * FROM q ORDER BY b"
            ),
        ] {
            let out = common::table(&q, &format!("EXPLAIN {shape}")).await;
            assert!(out.contains("TemporaAggregateExec"), "{shape}\n{out}");
        }
    }
    let out = common::table(&q, "EXPLAIN SELECT time, max(v) FROM cpu SAMPLE BY 1h").await;
    assert!(out.contains("TemporaAggregateExec"), "{out}");
    // With the setting off, DataFusion's own plan: the comparison above compares two plans.
    let off = common::table(
        &q,
        "SET tempora.operators = off; EXPLAIN SELECT time, max(v) FROM cpu SAMPLE BY 1h",
    )
    .await;
    assert!(!off.contains("TemporaAggregate"), "{off}");
    assert!(off.contains("AggregateExec"), "{off}");
}
