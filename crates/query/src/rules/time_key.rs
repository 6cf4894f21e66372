//! Which group-by expressions of `time` the aggregate operator can fold, and how it groups
//! rows by them: a plain function from a DataFusion expression to a [`TimeKey`].
//!
//! Two kinds, by how the operator computes a row's group:
//!
//! - [`TimeKey::Bin`]: `origin + floor((t - origin) / width) * width` in integer nanoseconds.
//!   `date_trunc` with a fixed unit (microsecond … week; Tempora's own `date_trunc`, which
//!   rounds down before 1970 too), `date_bin` with a fixed interval (and a constant origin, or
//!   DataFusion's default 1970-01-01), `time_bucket` with a fixed interval (TimescaleDB's
//!   default origin 2000-01-03), `SAMPLE BY`'s bucket in UTC, and `time` itself (width 1 ns).
//!   The fold cuts a series' rows at bucket ends, one lookup per (series, bucket).
//! - [`TimeKey::Scalar`]: any composition of `date_part('epoch', time)`, casts between
//!   Int32, Int64 and Float64, `floor`, `+ - * /` with a constant, and `to_timestamp`, as
//!   Grafana's `$__timeGroup` (`floor(extract(epoch from time)/60)*60`) and TimescaleDB-format
//!   tools (`to_timestamp(((extract(epoch from time)::int)/60)*60)`) write a bucket. It is
//!   evaluated row by row with the arithmetic Arrow's kernels use (IEEE floats, integer
//!   division toward zero, casts that give NULL out of range), so two rows share a group
//!   exactly when DataFusion's evaluation gives them the same value.
//!
//! Either way the operator outputs the group column by evaluating the original expression
//! on one time of each group, so its values and type are DataFusion's.

use std::sync::Arc;

use arrow::datatypes::{DataType, IntervalMonthDayNano, TimeUnit};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{BinaryExpr, Cast, Expr, Operator, TryCast};
use tempora_model::TIME_COLUMN;

use crate::functions::date_trunc::fixed_unit;
use crate::functions::time_bucket::{ORIGIN_DAYS_NS, default_origin_ns};

const NS_PER_DAY: i64 = 86_400_000_000_000;

/// How the operator groups rows by a time expression.
#[derive(Debug, Clone, PartialEq)]
pub enum TimeKey {
    /// Fixed-width buckets in integer nanoseconds.
    Bin { width: i64, origin: i64 },
    /// Any other supported expression, evaluated row by row.
    Scalar(Arc<Scalar>),
}

/// A supported expression of `time`, as a tree.
#[derive(Debug, Clone, PartialEq)]
pub enum Scalar {
    Time,
    /// `date_part('epoch', x)`: seconds as a float.
    Epoch(Box<Scalar>),
    Cast(Box<Scalar>, Num),
    Floor(Box<Scalar>),
    Arith(Box<Scalar>, Operator, Value),
    /// `to_timestamp(int seconds)`: one-to-one, so the seconds are the key.
    ToTimestamp(Box<Scalar>),
}

/// The number types the evaluation follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Num {
    I32,
    I64,
    F64,
}

/// A value of the evaluation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    I(i64, Num),
    F(f64),
    Null,
}

/// Why a row's key could not be computed (DataFusion fails the query the same way).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overflow(pub &'static str);

impl TimeKey {
    /// Whether rows of one key are contiguous in time (except the NULL key of a cast out of
    /// range): bins always, a scalar expression when it is [`Scalar::monotone`].
    pub fn monotone(&self) -> bool {
        match self {
            TimeKey::Bin { .. } => true,
            TimeKey::Scalar(s) => s.monotone(),
        }
    }

    /// The first time of the bucket holding `t`, at or after `floor` (the bucket may start
    /// before `floor`; then `floor`). Only for monotone keys.
    pub fn bucket_start(&self, t: i64, floor: i64) -> Result<i64, Overflow> {
        if let TimeKey::Bin { width, origin } = self {
            return Ok(crate::functions::date_trunc::truncate(t, (*width, *origin)).max(floor));
        }
        let k = self.key(t)?;
        // Gallop back while the key holds, then search between the last hit and the miss.
        let (mut hit, mut step) = (t, 1i64);
        let miss = loop {
            let probe = hit.saturating_sub(step).max(floor);
            if probe == hit {
                return Ok(hit);
            }
            if self.key(probe)? == k {
                hit = probe;
                step = step.saturating_mul(2);
            } else {
                break probe;
            }
        };
        let (mut lo, mut hi) = (miss, hit);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if self.key(mid)? == k {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        Ok(hi)
    }

    /// The group key of a row at time `t`: equal keys ⇔ equal values of the expression.
    pub fn key(&self, t: i64) -> Result<u64, Overflow> {
        match self {
            TimeKey::Bin { width, origin } => {
                Ok(crate::functions::date_trunc::truncate(t, (*width, *origin)) as u64)
            }
            TimeKey::Scalar(s) => Ok(match s.eval(t)? {
                Value::I(i, _) => i as u64,
                Value::F(f) => f.to_bits(),
                Value::Null => NULL_KEY,
            }),
        }
    }
}

/// The key of a NULL value (no integer or float key the evaluation gives equals it in
/// practice: it is a NaN with a payload no arithmetic produces).
pub const NULL_KEY: u64 = 0x7ff8_dead_beef_0001;

impl Scalar {
    /// Whether the value never decreases as time grows (NULLs, from an `Int32` cast out of
    /// range, can only come at the far ends of time): every step is monotone, and `*` and `/`
    /// take positive constants.
    pub fn monotone(&self) -> bool {
        match self {
            Scalar::Time => true,
            Scalar::Epoch(x) | Scalar::Floor(x) | Scalar::ToTimestamp(x) | Scalar::Cast(x, _) => {
                x.monotone()
            }
            Scalar::Arith(x, op, v) => {
                let positive = match v {
                    Value::I(i, _) => *i > 0,
                    Value::F(f) => *f > 0.0,
                    Value::Null => false,
                };
                let ok = match op {
                    Operator::Plus | Operator::Minus => true,
                    Operator::Multiply | Operator::Divide => positive,
                    _ => false,
                };
                ok && x.monotone()
            }
        }
    }

    /// The value at time `t`, as Arrow's kernels compute it.
    pub fn eval(&self, t: i64) -> Result<Value, Overflow> {
        Ok(match self {
            Scalar::Time => Value::I(t, Num::I64),
            Scalar::Epoch(x) => match x.eval(t)? {
                Value::I(ns, _) => Value::F(ns as f64 / 1_000_000_000_f64),
                _ => Value::Null,
            },
            Scalar::Floor(x) => match x.eval(t)? {
                Value::F(f) => Value::F(f.floor()),
                other => other,
            },
            Scalar::ToTimestamp(x) => x.eval(t)?,
            Scalar::Cast(x, to) => cast(x.eval(t)?, *to),
            Scalar::Arith(x, op, v) => arith(x.eval(t)?, *op, *v)?,
        })
    }
}

fn cast(v: Value, to: Num) -> Value {
    match (v, to) {
        (Value::Null, _) => Value::Null,
        (Value::F(f), Num::F64) => Value::F(f),
        (Value::I(i, _), Num::F64) => Value::F(i as f64),
        (Value::I(i, _), Num::I64) => Value::I(i, Num::I64),
        (Value::I(i, _), Num::I32) => match i32::try_from(i) {
            Ok(x) => Value::I(i64::from(x), Num::I32),
            Err(_) => Value::Null,
        },
        // Arrow's safe cast of a float: NULL when NaN or out of range, else toward zero.
        (Value::F(f), Num::I64) => {
            if f.is_nan() || f < i64::MIN as f64 || f >= i64::MAX as f64 {
                Value::Null
            } else {
                Value::I(f as i64, Num::I64)
            }
        }
        (Value::F(f), Num::I32) => {
            if f.is_nan() || f < f64::from(i32::MIN) || f > f64::from(i32::MAX) {
                Value::Null
            } else {
                Value::I(i64::from(f as i32), Num::I32)
            }
        }
    }
}

fn arith(l: Value, op: Operator, r: Value) -> Result<Value, Overflow> {
    use Operator::*;
    Ok(match (l, r) {
        (Value::Null, _) | (_, Value::Null) => Value::Null,
        (Value::F(a), Value::F(b)) => Value::F(match op {
            Plus => a + b,
            Minus => a - b,
            Multiply => a * b,
            Divide => a / b,
            _ => return Err(Overflow("unsupported operator")),
        }),
        (Value::I(a, ta), Value::I(b, _)) => {
            let r = match op {
                Plus => a.checked_add(b),
                Minus => a.checked_sub(b),
                Multiply => a.checked_mul(b),
                Divide if b == 0 => return Err(Overflow("Divide by zero")),
                Divide => a.checked_div(b),
                _ => return Err(Overflow("unsupported operator")),
            };
            let r = r.ok_or(Overflow("Arithmetic overflow"))?;
            if ta == Num::I32 && i32::try_from(r).is_err() {
                return Err(Overflow("Arithmetic overflow"));
            }
            Value::I(r, ta)
        }
        _ => return Err(Overflow("mixed types")),
    })
}

/// The key of a group-by expression over `time` (a column of the scanned table whose name is
/// [`TIME_COLUMN`]), or `None` when the operator cannot fold it.
pub fn classify(e: &Expr) -> Option<TimeKey> {
    if let Some(b) = bin(e) {
        return Some(b);
    }
    let s = scalar(e)?;
    // A bare `time` is a bin of 1 ns; anything else must reach `time` through a function.
    (s != Scalar::Time).then(|| TimeKey::Scalar(Arc::new(s)))
}

fn is_time(e: &Expr) -> bool {
    matches!(e, Expr::Column(c) if c.name == TIME_COLUMN)
}

fn bin(e: &Expr) -> Option<TimeKey> {
    if is_time(e) {
        return Some(TimeKey::Bin {
            width: 1,
            origin: 0,
        });
    }
    let Expr::ScalarFunction(f) = e else {
        return None;
    };
    let args = &f.args;
    match f.func.name() {
        "date_trunc" => {
            let [unit, t] = args.as_slice() else {
                return None;
            };
            let unit = utf8(unit)?;
            is_time(t).then_some(())?;
            let (width, origin) = fixed_unit(unit)?;
            Some(TimeKey::Bin { width, origin })
        }
        "date_bin" | "time_bucket" => {
            let (iv, t, origin) = match args.as_slice() {
                [iv, t] => (iv, t, None),
                [iv, t, o] => (iv, t, Some(o)),
                _ => return None,
            };
            is_time(t).then_some(())?;
            let (width, value) = fixed_interval(iv)?;
            let origin = match origin {
                Some(o) => timestamp_ns(o)?,
                None if f.func.name() == "time_bucket" => default_origin_ns(&value),
                None => 0,
            };
            Some(TimeKey::Bin { width, origin })
        }
        crate::functions::sample_bucket::NAME => {
            let [t, w, m, off, zone] = args.as_slice() else {
                return None;
            };
            is_time(t).then_some(())?;
            let (w, m, off) = (int(w)?, int(m)?, int(off)?);
            (m == 0 && w > 0 && utf8(zone)?.is_empty()).then_some(TimeKey::Bin {
                width: w,
                origin: off,
            })
        }
        _ => None,
    }
}

fn scalar(e: &Expr) -> Option<Scalar> {
    match e {
        _ if is_time(e) => Some(Scalar::Time),
        Expr::Cast(Cast { expr, field }) | Expr::TryCast(TryCast { expr, field }) => {
            let to = num(field.data_type())?;
            Some(Scalar::Cast(Box::new(scalar(expr)?), to))
        }
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            matches!(
                op,
                Operator::Plus | Operator::Minus | Operator::Multiply | Operator::Divide
            )
            .then_some(())?;
            let v = match right.as_ref() {
                Expr::Literal(ScalarValue::Int64(Some(i)), _) => Value::I(*i, Num::I64),
                Expr::Literal(ScalarValue::Int32(Some(i)), _) => Value::I(i64::from(*i), Num::I32),
                Expr::Literal(ScalarValue::Float64(Some(f)), _) => Value::F(*f),
                _ => return None,
            };
            let l = scalar(left)?;
            // Both sides must have one type, as DataFusion's coercion leaves them.
            if !same_type(&l, &v) {
                return None;
            }
            Some(Scalar::Arith(Box::new(l), *op, v))
        }
        Expr::ScalarFunction(f) => match (f.func.name(), f.args.as_slice()) {
            ("date_part", [part, t]) if utf8(part)?.eq_ignore_ascii_case("epoch") => {
                is_time(t).then(|| Scalar::Epoch(Box::new(Scalar::Time)))
            }
            ("floor", [x]) => {
                let s = scalar(x)?;
                (out_type(&s) == Some(Num::F64)).then(|| Scalar::Floor(Box::new(s)))
            }
            ("to_timestamp", [x]) => {
                let s = scalar(x)?;
                matches!(out_type(&s), Some(Num::I32 | Num::I64))
                    .then(|| Scalar::ToTimestamp(Box::new(s)))
            }
            _ => None,
        },
        _ => None,
    }
}

/// The number type an expression yields (`None` for `time` and `to_timestamp`).
fn out_type(s: &Scalar) -> Option<Num> {
    match s {
        Scalar::Time | Scalar::ToTimestamp(_) => None,
        Scalar::Epoch(_) | Scalar::Floor(_) => Some(Num::F64),
        Scalar::Cast(_, n) => Some(*n),
        Scalar::Arith(x, _, _) => out_type(x),
    }
}

fn same_type(s: &Scalar, v: &Value) -> bool {
    matches!(
        (out_type(s), v),
        (Some(Num::F64), Value::F(_))
            | (Some(Num::I64), Value::I(_, Num::I64))
            | (Some(Num::I32), Value::I(_, Num::I32))
    )
}

fn num(t: &DataType) -> Option<Num> {
    match t {
        DataType::Int32 => Some(Num::I32),
        DataType::Int64 => Some(Num::I64),
        DataType::Float64 => Some(Num::F64),
        _ => None,
    }
}

fn utf8(e: &Expr) -> Option<&str> {
    match e {
        Expr::Literal(ScalarValue::Utf8(Some(s)), _)
        | Expr::Literal(ScalarValue::Utf8View(Some(s)), _)
        | Expr::Literal(ScalarValue::LargeUtf8(Some(s)), _) => Some(s),
        _ => None,
    }
}

fn int(e: &Expr) -> Option<i64> {
    match e {
        Expr::Literal(ScalarValue::Int64(Some(i)), _) => Some(*i),
        _ => None,
    }
}

/// A constant interval without months: (width in ns, the literal).
fn fixed_interval(e: &Expr) -> Option<(i64, ScalarValue)> {
    let Expr::Literal(v, _) = e else { return None };
    let ns = match v {
        ScalarValue::IntervalMonthDayNano(Some(IntervalMonthDayNano {
            months: 0,
            days,
            nanoseconds,
        })) => i64::from(*days)
            .checked_mul(NS_PER_DAY)?
            .checked_add(*nanoseconds)?,
        ScalarValue::IntervalDayTime(Some(d)) => i64::from(d.days)
            .checked_mul(NS_PER_DAY)?
            .checked_add(i64::from(d.milliseconds).checked_mul(1_000_000)?)?,
        _ => return None,
    };
    (ns > 0).then(|| (ns, v.clone()))
}

/// A constant timestamp (any unit, any zone) in nanoseconds.
fn timestamp_ns(e: &Expr) -> Option<i64> {
    match e {
        Expr::Literal(v, _) => crate::pushdown::ts_nanos(v),
        Expr::Cast(Cast { expr, field })
            if matches!(
                field.data_type(),
                DataType::Timestamp(TimeUnit::Nanosecond, _)
            ) =>
        {
            timestamp_ns(expr)
        }
        _ => None,
    }
}

/// `time_bucket`'s default origin when no origin is given (for tests).
pub const TIME_BUCKET_ORIGIN_NS: i64 = ORIGIN_DAYS_NS;

#[cfg(test)]
mod tests;
