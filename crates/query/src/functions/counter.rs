//! `increase(v [, ts])`, `rate(v [, ts])` and `delta(v [, ts])` over each group's points in
//! time order (with one argument, `ts` is `time`; the analyzer rule in [`super::first_last`]
//! adds it):
//!
//! - `increase`: how much a counter grew. A drop is a counter reset: the counter restarted
//!   from zero, so the value after the drop is all growth (Prometheus' rule).
//! - `rate`: `increase` per second between the first and the last point.
//! - `delta`: last value minus first value (for gauges; no reset handling).
//!
//! NULL values and times are skipped; fewer than two points give NULL. The pure core is
//! [`evaluate`]; the accumulator keeps the group's points (memory grows with the points of a
//! group, so bound such queries by time).

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, FieldRef, Float64Type, Int64Type};
use datafusion::common::{Result, ScalarValue, plan_err};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDFImpl, Signature, TypeSignature, Volatility,
};

/// Which of the three.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Increase,
    Rate,
    Delta,
}

/// The result over `points` (time in nanoseconds, value), in any order.
pub fn evaluate(kind: Kind, points: &mut [(i64, f64)]) -> Option<f64> {
    if points.len() < 2 {
        return None;
    }
    points.sort_by_key(|p| p.0);
    let (first, last) = (points[0], points[points.len() - 1]);
    let increase = || {
        points.windows(2).fold(0.0, |acc, w| {
            let d = w[1].1 - w[0].1;
            acc + if d >= 0.0 { d } else { w[1].1 }
        })
    };
    match kind {
        Kind::Delta => Some(last.1 - first.1),
        Kind::Increase => Some(increase()),
        Kind::Rate => {
            let secs = (last.0 - first.0) as f64 / 1e9;
            (secs > 0.0).then(|| increase() / secs)
        }
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Counter {
    kind: Kind,
    signature: Signature,
}

impl Counter {
    pub fn new(kind: Kind) -> Self {
        Self {
            kind,
            signature: Signature::one_of(
                vec![TypeSignature::Any(1), TypeSignature::Any(2)],
                Volatility::Immutable,
            ),
        }
    }
}

impl AggregateUDFImpl for Counter {
    fn name(&self) -> &str {
        match self.kind {
            Kind::Increase => "increase",
            Kind::Rate => "rate",
            Kind::Delta => "delta",
        }
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        if !arg_types[0].is_numeric() {
            return plan_err!(
                "{}: the value must be numeric, got {}",
                self.name(),
                arg_types[0]
            );
        }
        if let Some(t) = arg_types.get(1)
            && !matches!(t, DataType::Timestamp(..) | DataType::Int64)
        {
            return plan_err!(
                "{}(value, time): the second argument must be a timestamp, got {t}",
                self.name()
            );
        }
        Ok(DataType::Float64)
    }
    fn state_fields(&self, _args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let list = |name: &str, t: DataType| {
            Arc::new(Field::new(
                name,
                DataType::List(Arc::new(Field::new_list_field(t, true))),
                true,
            ))
        };
        Ok(vec![
            list("ts", DataType::Int64),
            list("v", DataType::Float64),
        ])
    }
    fn accumulator(&self, _args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(Points {
            kind: self.kind,
            points: Vec::new(),
        }))
    }
}

#[derive(Debug)]
struct Points {
    kind: Kind,
    points: Vec<(i64, f64)>,
}

impl Points {
    fn absorb(&mut self, ts: &ArrayRef, v: &ArrayRef) -> Result<()> {
        let ts = cast(ts, &DataType::Int64)?;
        let v = cast(v, &DataType::Float64)?;
        let (ts, v) = (
            ts.as_primitive::<Int64Type>(),
            v.as_primitive::<Float64Type>(),
        );
        for i in 0..ts.len() {
            if ts.is_valid(i) && v.is_valid(i) {
                self.points.push((ts.value(i), v.value(i)));
            }
        }
        Ok(())
    }
}

impl Accumulator for Points {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let Some(ts) = values.get(1) else {
            return plan_err!("rate/increase/delta: the time argument is missing");
        };
        self.absorb(ts, &values[0])
    }
    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(ScalarValue::Float64(evaluate(self.kind, &mut self.points)))
    }
    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.points.capacity() * 16
    }
    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let ts: Vec<ScalarValue> = self
            .points
            .iter()
            .map(|p| ScalarValue::Int64(Some(p.0)))
            .collect();
        let v: Vec<ScalarValue> = self
            .points
            .iter()
            .map(|p| ScalarValue::Float64(Some(p.1)))
            .collect();
        Ok(vec![
            ScalarValue::List(ScalarValue::new_list_nullable(&ts, &DataType::Int64)),
            ScalarValue::List(ScalarValue::new_list_nullable(&v, &DataType::Float64)),
        ])
    }
    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let (ts, v) = (states[0].as_list::<i32>(), states[1].as_list::<i32>());
        for i in 0..ts.len() {
            if ts.is_valid(i) && v.is_valid(i) {
                self.absorb(&ts.value(i), &v.value(i))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_with_resets() {
        let s = 1_000_000_000;
        for (name, kind, pts, want) in [
            (
                "increase, no reset",
                Kind::Increase,
                vec![(0, 1.0), (s, 3.0), (2 * s, 6.0)],
                Some(5.0),
            ),
            (
                "increase across a reset",
                Kind::Increase,
                vec![(0, 10.0), (s, 15.0), (2 * s, 2.0), (3 * s, 4.0)],
                Some(9.0),
            ),
            (
                "out of order input",
                Kind::Increase,
                vec![(2 * s, 6.0), (0, 1.0), (s, 3.0)],
                Some(5.0),
            ),
            (
                "rate per second",
                Kind::Rate,
                vec![(0, 10.0), (10 * s, 15.0), (20 * s, 2.0)],
                Some(7.0 / 20.0),
            ),
            (
                "rate over no time",
                Kind::Rate,
                vec![(s, 1.0), (s, 2.0)],
                None,
            ),
            (
                "delta ignores resets",
                Kind::Delta,
                vec![(0, 10.0), (s, 15.0), (2 * s, 2.0)],
                Some(-8.0),
            ),
            ("one point", Kind::Increase, vec![(0, 1.0)], None),
            ("no points", Kind::Delta, vec![], None),
        ] {
            let mut pts = pts;
            assert_eq!(evaluate(kind, &mut pts), want, "{name}");
        }
    }
}
