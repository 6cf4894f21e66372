use std::sync::Arc;

use super::*;
use crate::rules::time_key::{Num, Scalar, Value};
use datafusion::logical_expr::Operator;

const S: i64 = 1_000_000_000;
const MIN: i64 = 60 * S;
const HOUR: i64 = 3600 * S;

/// Grafana's `floor(extract(epoch from time)/w)*w`.
fn epoch_bucket(w: f64) -> TimeKey {
    TimeKey::Scalar(Arc::new(Scalar::Arith(
        Box::new(Scalar::Floor(Box::new(Scalar::Arith(
            Box::new(Scalar::Epoch(Box::new(Scalar::Time))),
            Operator::Divide,
            Value::F(w),
        )))),
        Operator::Multiply,
        Value::F(w),
    )))
}

#[test]
fn which_rollups_a_query_reads() {
    let declared = [MIN, HOUR];
    let bin = |width, origin| TimeKey::Bin { width, origin };
    let decreasing = TimeKey::Scalar(Arc::new(Scalar::Arith(
        Box::new(Scalar::Time),
        Operator::Multiply,
        Value::I(-1, Num::I64),
    )));
    let usage = ["usage_user".to_string()];
    let use_ = |levels: Vec<i64>, checked| RollupPlan::Use { levels, checked };
    type Case<'a> = (
        &'a str,
        bool,
        &'a [i64],
        Option<TimeKey>,
        &'a [String],
        RollupPlan,
    );
    let cases: Vec<Case> = vec![
        ("hours: both", true, &declared, Some(bin(HOUR, 0)), &[], use_(vec![HOUR, MIN], false)),
        ("a day: both", true, &declared, Some(bin(24 * HOUR, 0)), &[], use_(vec![HOUR, MIN], false)),
        ("minutes: the minute rollup", true, &declared, Some(bin(MIN, 0)), &[], use_(vec![MIN], false)),
        ("5 minutes: the minute rollup", true, &declared, Some(bin(5 * MIN, 0)), &[], use_(vec![MIN], false)),
        (
            "time_bucket's 2000-01-03 origin is a whole hour",
            true,
            &declared,
            Some(bin(HOUR, 946_857_600 * S)),
            &[],
            use_(vec![HOUR, MIN], false),
        ),
        ("no time group", true, &declared, None, &[], use_(vec![HOUR, MIN], false)),
        ("Grafana's epoch hours, checked", true, &declared, Some(epoch_bucket(3600.0)), &[], use_(vec![HOUR, MIN], true)),
        ("Grafana's epoch minutes, checked", true, &declared, Some(epoch_bucket(60.0)), &[], use_(vec![MIN], true)),
        (
            "30 s buckets",
            true,
            &declared,
            Some(bin(30 * S, 0)),
            &[],
            RollupPlan::Raw("its buckets do not hold whole rollup buckets of 1m, 1h (a multiple from the same origin does)".into()),
        ),
        (
            "hours from half past",
            true,
            &[HOUR],
            Some(bin(HOUR, 30 * MIN)),
            &[],
            RollupPlan::Raw("its buckets do not hold whole rollup buckets of 1h (a multiple from the same origin does)".into()),
        ),
        ("off", false, &declared, Some(bin(HOUR, 0)), &[], RollupPlan::Raw("tempora.rollups is off".into())),
        ("none declared", true, &[], Some(bin(HOUR, 0)), &[], RollupPlan::Raw("the table declares no rollups".into())),
        (
            "a field predicate",
            true,
            &declared,
            Some(bin(HOUR, 0)),
            &usage,
            RollupPlan::Raw("a predicate on field usage_user needs raw rows".into()),
        ),
        (
            "not monotone",
            true,
            &declared,
            Some(decreasing),
            &[],
            RollupPlan::Raw("the time group is not monotone in time".into()),
        ),
    ];
    for (name, enabled, resolutions, key, row_fields, want) in cases {
        let got = choose(&Query {
            enabled,
            resolutions,
            key: key.as_ref(),
            row_fields,
        });
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn ceil_to_named_cases() {
    for (t, r, want) in [
        (0, 10, 0),
        (1, 10, 10),
        (10, 10, 10),
        (-1, 10, 0),
        (-10, 10, -10),
        (-11, 10, -10),
    ] {
        assert_eq!(ceil_to(t, r), want, "{t} {r}");
    }
}
