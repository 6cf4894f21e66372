//! Property test: random writes, overwrites, flushes, compactions and restarts against a
//! simple model (a BTreeMap of rows, last write wins field by field).

mod common;

use std::collections::BTreeMap;

use common::*;
use proptest::prelude::*;
use tempora_model::{FieldValue, RowBatchBuilder, Timestamp};
use tempora_storage::{Engine, EngineIo};

#[derive(Debug, Clone)]
enum Op {
    Write(Vec<(u8, i64, Option<f64>, Option<i64>)>),
    Flush,
    Compact,
    Restart,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => proptest::collection::vec((0u8..5, -3i64..40, proptest::option::of(-5.0f64..5.0), proptest::option::of(0i64..9)), 1..12).prop_map(Op::Write),
        1 => Just(Op::Flush),
        1 => Just(Op::Compact),
        1 => Just(Op::Restart),
    ]
}

type Model = BTreeMap<(String, i64), (Option<f64>, Option<i64>)>;

fn read(e: &Engine) -> Model {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{Float64Type, Int64Type, TimestampNanosecondType};
    let mut out = Model::new();
    let Ok(batches) = e.scan("m", &Default::default()) else {
        return out;
    };
    for b in batches {
        let host = b.column_by_name("host").unwrap().as_string::<i32>();
        let t = b
            .column_by_name("time")
            .unwrap()
            .as_primitive::<TimestampNanosecondType>();
        let a = b
            .column_by_name("a")
            .map(|c| c.as_primitive::<Float64Type>().clone());
        let n = b
            .column_by_name("n")
            .map(|c| c.as_primitive::<Int64Type>().clone());
        for i in 0..b.num_rows() {
            let av = a.as_ref().and_then(|c| c.is_valid(i).then(|| c.value(i)));
            let nv = n.as_ref().and_then(|c| c.is_valid(i).then(|| c.value(i)));
            let prev = out.insert((host.value(i).to_string(), t.value(i)), (av, nv));
            assert!(prev.is_none(), "duplicate row");
        }
    }
    out
}

fn run_ops(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let open = || Engine::open(small_opts(), EngineIo::local(dir.path()).unwrap()).unwrap();
    let mut e = open();
    let mut model = Model::new();
    let mut trace = Vec::new();
    for op in ops {
        trace.push(format!("{op:?}"));
        match op {
            Op::Write(rows) => {
                let mut b = RowBatchBuilder::new("m").unwrap();
                let mut any = false;
                for (h, t, a, n) in &rows {
                    let mut f = Vec::new();
                    if let Some(a) = a {
                        f.push(("a", FieldValue::F64(*a)));
                    }
                    if let Some(n) = n {
                        f.push(("n", FieldValue::I64(*n)));
                    }
                    if f.is_empty() {
                        continue;
                    }
                    any = true;
                    let host = format!("h{h}");
                    b.push(&[("host", &host)], &f, Timestamp(*t * SEC)).unwrap();
                    let e = model.entry((host, *t * SEC)).or_default();
                    if a.is_some() {
                        e.0 = *a;
                    }
                    if n.is_some() {
                        e.1 = *n;
                    }
                }
                if any {
                    let out = e.write(b.finish()).unwrap();
                    prop_assert!(out.rejected.is_empty());
                }
            }
            Op::Flush => e.flush().unwrap(),
            Op::Compact => {
                e.compact().unwrap();
            }
            Op::Restart => {
                drop(e);
                e = open();
            }
        }
        let got = read(&e);
        if got != model {
            eprintln!(
                "MISMATCH after {} ops:\n{}\nstate:\n{}",
                trace.len(),
                trace.join("\n"),
                e.debug_state()
            );
        }
        prop_assert_eq!(got, model.clone());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn engine_matches_model(ops in proptest::collection::vec(op(), 1..25)) {
        run_ops(ops)?;
    }
}
