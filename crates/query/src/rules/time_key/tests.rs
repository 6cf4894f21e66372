//! Every bucket spelling, classified from DataFusion's own optimised plan and checked against
//! DataFusion's evaluation: two times share a key exactly when DataFusion gives them the same
//! value.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, RecordBatch, TimestampNanosecondArray};
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use datafusion::datasource::MemTable;
use datafusion::logical_expr::{Expr, LogicalPlan};
use datafusion::prelude::SessionContext;

use super::{TimeKey, classify};

/// Deterministic times around 2016 and near bucket edges (±1 ns of whole minutes), and a few
/// before 1970.
fn times() -> Vec<i64> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut out = Vec::new();
    for i in 0..4000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let base = 1_451_606_400_000_000_000 + (x % 86_400_000_000_000) as i64;
        let minute = base - base.rem_euclid(60_000_000_000);
        out.push(match i % 4 {
            0 => base,
            1 => minute - 1,
            2 => minute,
            _ => -((x % 100_000_000_000_000) as i64),
        });
    }
    out
}

async fn context() -> SessionContext {
    let ctx = SessionContext::new();
    crate::functions::register_all(&ctx);
    let utc = DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()));
    let schema = Arc::new(Schema::new(vec![Field::new("time", utc, false)]));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(
            TimestampNanosecondArray::from(times()).with_timezone("UTC"),
        )],
    )
    .unwrap();
    let t = MemTable::try_new(schema, vec![vec![batch]]).unwrap();
    ctx.register_table("t", Arc::new(t)).unwrap();
    ctx
}

/// The optimised projection expression of `SELECT <e> AS k FROM t`, without its alias.
async fn expr(ctx: &SessionContext, e: &str) -> Expr {
    let df = ctx.sql(&format!("SELECT {e} AS k FROM t")).await.unwrap();
    let plan = df.into_optimized_plan().unwrap();
    let LogicalPlan::Projection(p) = plan else {
        panic!("{e}: {plan}");
    };
    match &p.expr[0] {
        Expr::Alias(a) => *a.expr.clone(),
        other => other.clone(),
    }
}

#[tokio::test]
async fn spellings_group_rows_as_datafusion_evaluates_them() {
    let ctx = context().await;
    let cases: &[(&str, &str, bool)] = &[
        ("date_trunc", "date_trunc('minute', time)", true),
        ("date_trunc week", "date_trunc('week', time)", true),
        ("date_bin", "date_bin(INTERVAL '1 minute', time)", true),
        (
            "date_bin with origin",
            "date_bin(INTERVAL '5 minutes', time, TIMESTAMP '1970-01-01T00:02:00Z')",
            true,
        ),
        ("time_bucket", "time_bucket(INTERVAL '1 hour', time)", true),
        ("time itself", "time", true),
        (
            "sample by",
            "tempora_sample_bucket(time, 60000000000, 0, 900000000000, '')",
            true,
        ),
        ("grafana", "floor(extract(epoch from time)/60)*60", false),
        (
            "timescale tools",
            "to_timestamp(((extract(epoch from time)::int)/60)*60)",
            false,
        ),
        (
            "epoch to bigint",
            "CAST(extract(epoch from time) AS BIGINT) / 3600",
            false,
        ),
    ];
    for (name, text, bin) in cases {
        let e = expr(&ctx, text).await;
        let key = classify(&e).unwrap_or_else(|| panic!("{name}: not classified: {e}"));
        assert_eq!(matches!(key, TimeKey::Bin { .. }), *bin, "{name}: {key:?}");
        let out = ctx
            .sql(&format!("SELECT time, {text} AS k FROM t"))
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        // value (as text) → key, and key → value: both must be functions.
        let mut by_value: HashMap<String, u64> = HashMap::new();
        let mut by_key: HashMap<u64, String> = HashMap::new();
        for b in &out {
            let t = b
                .column(0)
                .as_any()
                .downcast_ref::<TimestampNanosecondArray>()
                .unwrap();
            let v = b.column(1);
            for i in 0..b.num_rows() {
                let value = if v.is_null(i) {
                    "NULL".to_string()
                } else {
                    arrow::util::display::array_value_to_string(v, i).unwrap()
                };
                let k = match key.key(t.value(i)) {
                    Ok(k) => k,
                    Err(o) => panic!("{name}: {o:?} at {}", t.value(i)),
                };
                let prev = by_value.insert(value.clone(), k);
                assert!(prev.is_none_or(|p| p == k), "{name}: {value} has two keys");
                let prev = by_key.insert(k, value.clone());
                assert!(
                    prev.as_ref().is_none_or(|p| *p == value),
                    "{name}: key {k} has {prev:?} and {value}"
                );
            }
        }
    }
}

#[tokio::test]
async fn other_expressions_are_not_taken() {
    let ctx = context().await;
    for text in [
        "date_trunc('month', time)",
        "date_bin(INTERVAL '1 month', time)",
        "extract(hour from time)",
        "date_trunc('minute', time) + INTERVAL '1 second'",
        "tempora_sample_bucket(time, 3600000000000, 0, 0, 'Europe/Oslo')",
    ] {
        let e = expr(&ctx, text).await;
        assert!(classify(&e).is_none(), "{text}: {e}");
    }
}
