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
    let use_ = |levels: Vec<i64>, checked| RollupPlan::Use {
        levels,
        sparse: vec![],
        checked,
        notes: vec![],
    };
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
        let view = RollupView {
            resolutions: resolutions.to_vec(),
            counts: vec![(1000, 1); resolutions.len()],
            raw_expired_until: None,
            expired_resolutions: vec![],
            min_rows_per_state: 16,
        };
        let got = choose(&Query {
            enabled,
            view: &view,
            key: key.as_ref(),
            row_fields,
            start: i64::MIN,
        });
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn sparse_rollups_are_read_only_where_raw_rows_expired() {
    // 10-second data: 6 raw rows per 1m state, 360 per 1h state.
    let view = |expired| RollupView {
        resolutions: vec![MIN, HOUR],
        counts: vec![(36_000, 6_000), (36_000, 100)],
        raw_expired_until: expired,
        expired_resolutions: vec![MIN, HOUR],
        min_rows_per_state: 16,
    };
    let thin = "1m not read where raw rows exist (6.0 raw rows per state, fewer than 16)";
    let gone = "raw rows before 1970-01-01 00:00:01 UTC expired: buckets there from rollups 1m only, a bucket counted when it starts in the range";
    let gone_both = "raw rows before 1970-01-01 00:00:01 UTC expired: buckets there from rollups 1h, 1m only, a bucket counted when it starts in the range";
    let cases: Vec<(&str, Option<i64>, i64, TimeKey, RollupPlan)> = vec![
        (
            "hours: 1h only",
            None,
            0,
            TimeKey::Bin {
                width: HOUR,
                origin: 0,
            },
            RollupPlan::Use {
                levels: vec![HOUR],
                sparse: vec![MIN],
                checked: false,
                notes: vec![thin.into()],
            },
        ),
        (
            "minutes: raw rows",
            None,
            0,
            TimeKey::Bin {
                width: MIN,
                origin: 0,
            },
            RollupPlan::Raw(thin.into()),
        ),
        (
            "minutes over expired raw rows: the 1m rollup there",
            Some(S),
            0,
            TimeKey::Bin {
                width: MIN,
                origin: 0,
            },
            RollupPlan::Use {
                levels: vec![],
                sparse: vec![MIN],
                checked: false,
                notes: vec![thin.into(), gone.into()],
            },
        ),
        (
            "hours over expired raw rows",
            Some(S),
            0,
            TimeKey::Bin {
                width: HOUR,
                origin: 0,
            },
            RollupPlan::Use {
                levels: vec![HOUR],
                sparse: vec![MIN],
                checked: false,
                notes: vec![thin.into(), gone_both.into()],
            },
        ),
        (
            "a range starting after the expiry says nothing of it",
            Some(S),
            S,
            TimeKey::Bin {
                width: MIN,
                origin: 0,
            },
            RollupPlan::Raw(thin.into()),
        ),
    ];
    // Only the 1h rollup outlived the raw rows: minute buckets there cannot be answered.
    let mut hours_left = view(Some(S));
    hours_left.expired_resolutions = vec![HOUR];
    let got = choose(&Query {
        enabled: true,
        view: &hours_left,
        key: Some(&TimeKey::Bin {
            width: MIN,
            origin: 0,
        }),
        row_fields: &[],
        start: 0,
    });
    let RollupPlan::Use { notes, .. } = got else {
        panic!("{got:?}")
    };
    assert!(
        notes[1].contains("no rollup left there holds these buckets"),
        "{notes:?}"
    );
    for (name, expired, start, key, want) in cases {
        let v = view(expired);
        let got = choose(&Query {
            enabled: true,
            view: &v,
            key: Some(&key),
            row_fields: &[],
            start,
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
