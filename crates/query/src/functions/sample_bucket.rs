//! `tempora_sample_bucket(time, width_ns, months, offset_ns, zone)`: the bucket start of
//! `SAMPLE BY` (the planner writes the call; see [`crate::plan::sample_by`]).
//!
//! - No zone, `months = 0`: `offset + floor((time - offset) / width) * width`, buckets of a
//!   fixed length aligned to the epoch plus the offset (what `date_bin` does).
//! - No zone, `months > 0`: `date_bin` with a month interval from 1970-01-01 plus the offset.
//! - A zone: buckets follow that zone's local calendar. A width of one day, week, month or year
//!   starts at the local start of that day, week (Monday), month or year (DataFusion's
//!   `date_trunc` in the zone; a DST day has 23 or 25 hours). A width that divides a day
//!   counts from local midnight plus the offset.
//!
//! The result has the input's type (UTC nanoseconds for Tempora's `time`). Every argument but
//! `time` is a constant.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Int64Array, TimestampNanosecondArray};
use arrow::datatypes::{DataType, Field, IntervalMonthDayNano, TimeUnit, TimestampNanosecondType};
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use super::date_trunc::truncate;

/// The function's name.
pub const NAME: &str = "tempora_sample_bucket";

pub const NS_PER_DAY: i64 = 86_400_000_000_000;

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct SampleBucket {
    signature: Signature,
}

impl SampleBucket {
    pub fn new() -> Self {
        Self {
            signature: Signature::any(5, Volatility::Immutable),
        }
    }
}

impl Default for SampleBucket {
    fn default() -> Self {
        Self::new()
    }
}

/// The constant arguments of a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    pub width_ns: i64,
    pub months: i64,
    pub offset_ns: i64,
    pub zone: String,
}

impl Spec {
    /// The arguments as scalars, as the planner writes them.
    pub fn from_args(args: &[ColumnarValue]) -> Result<Spec> {
        let int = |i: usize| match &args[i] {
            ColumnarValue::Scalar(ScalarValue::Int64(Some(v))) => Ok(*v),
            other => exec_err!(
                "{NAME}: argument {} must be a BIGINT constant, got {other:?}",
                i + 1
            ),
        };
        let zone = match &args[4] {
            ColumnarValue::Scalar(ScalarValue::Utf8(Some(z))) => z.clone(),
            other => return exec_err!("{NAME}: the zone must be a text constant, got {other:?}"),
        };
        Ok(Spec {
            width_ns: int(1)?,
            months: int(2)?,
            offset_ns: int(3)?,
            zone,
        })
    }

    /// `(width, origin)` of a fixed-length bucket in UTC, when the spec is one.
    pub fn fixed(&self) -> Option<(i64, i64)> {
        (self.zone.is_empty() && self.months == 0 && self.width_ns > 0)
            .then_some((self.width_ns, self.offset_ns))
    }
}

impl ScalarUDFImpl for SampleBucket {
    fn name(&self) -> &str {
        NAME
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match arg_types.first() {
            Some(t @ DataType::Timestamp(TimeUnit::Nanosecond, _)) => Ok(t.clone()),
            other => exec_err!(
                "{NAME}: the first argument must be a nanosecond timestamp, got {other:?}"
            ),
        }
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let spec = Spec::from_args(&args.args)?;
        let ty = args.return_field.data_type().clone();
        let times = args.args[0].to_array(args.number_rows)?;
        let out = if let Some(w) = spec.fixed() {
            fixed(&times, w)
        } else if spec.zone.is_empty() {
            months(&times, &spec, &args)?
        } else {
            zoned(&times, &spec, &args)?
        };
        let out = out.with_data_type(ty);
        Ok(ColumnarValue::Array(Arc::new(out)))
    }
}

fn fixed(times: &ArrayRef, w: (i64, i64)) -> TimestampNanosecondArray {
    times
        .as_primitive::<TimestampNanosecondType>()
        .unary(|t| truncate(t, w))
}

/// Calls one of DataFusion's datetime functions on `args` (the first an array of `rows`).
fn call(
    udf: &ScalarUDF,
    args: Vec<ColumnarValue>,
    rows: usize,
    ret: DataType,
    outer: &ScalarFunctionArgs,
) -> Result<TimestampNanosecondArray> {
    let arg_fields = args
        .iter()
        .enumerate()
        .map(|(i, a)| Arc::new(Field::new(format!("a{i}"), a.data_type(), true)))
        .collect();
    let out = udf.invoke_with_args(ScalarFunctionArgs {
        args,
        arg_fields,
        number_rows: rows,
        return_field: Arc::new(Field::new("out", ret, true)),
        config_options: outer.config_options.clone(),
    })?;
    Ok(out
        .to_array(rows)?
        .as_primitive::<TimestampNanosecondType>()
        .clone())
}

fn months(
    times: &ArrayRef,
    spec: &Spec,
    outer: &ScalarFunctionArgs,
) -> Result<TimestampNanosecondArray> {
    let Ok(m) = i32::try_from(spec.months) else {
        return exec_err!("{NAME}: {} months is too long", spec.months);
    };
    let tz = match times.data_type() {
        DataType::Timestamp(_, tz) => tz.clone(),
        _ => None,
    };
    let args = vec![
        ColumnarValue::Scalar(ScalarValue::IntervalMonthDayNano(Some(
            IntervalMonthDayNano::new(m, 0, 0),
        ))),
        ColumnarValue::Array(times.clone()),
        ColumnarValue::Scalar(ScalarValue::TimestampNanosecond(Some(spec.offset_ns), tz)),
    ];
    call(
        &datafusion::functions::datetime::date_bin(),
        args,
        times.len(),
        times.data_type().clone(),
        outer,
    )
}

/// The calendar unit of a zoned width that is one day, week, month or year.
fn calendar_unit(spec: &Spec) -> Option<&'static str> {
    match (spec.width_ns, spec.months) {
        (NS_PER_DAY, 0) => Some("day"),
        (w, 0) if w == 7 * NS_PER_DAY => Some("week"),
        (0, 1) => Some("month"),
        (0, 12) => Some("year"),
        _ => None,
    }
}

/// Whether a zoned spec is one this function computes (the planner checks it first).
pub fn zoned_spec_ok(spec: &Spec) -> std::result::Result<(), String> {
    if calendar_unit(spec).is_some() {
        return if spec.offset_ns == 0 {
            Ok(())
        } else {
            Err(
                "with TIME ZONE, a day, week, month or year width must be 1 and without an offset"
                    .into(),
            )
        };
    }
    if spec.months != 0 {
        return Err("with TIME ZONE, a month or year width must be 1 and without an offset".into());
    }
    let w = spec.width_ns;
    if w <= 0 || w > NS_PER_DAY || NS_PER_DAY % w != 0 {
        return Err(
            if w > NS_PER_DAY && w % NS_PER_DAY == 0 && spec.offset_ns == 0 {
                "with TIME ZONE, a day or week width must be 1".into()
            } else {
                "with TIME ZONE, the width must divide a day (or be 1 day, week, month or year)"
                    .into()
            },
        );
    }
    Ok(())
}

fn zoned(
    times: &ArrayRef,
    spec: &Spec,
    outer: &ScalarFunctionArgs,
) -> Result<TimestampNanosecondArray> {
    if let Err(e) = zoned_spec_ok(spec) {
        return exec_err!("{NAME}: {e}");
    }
    let local_ty = DataType::Timestamp(TimeUnit::Nanosecond, Some(spec.zone.as_str().into()));
    let local = arrow::compute::cast(times, &local_ty)?;
    let trunc = |unit: &str| {
        call(
            &datafusion::functions::datetime::date_trunc(),
            vec![
                ColumnarValue::Scalar(ScalarValue::Utf8(Some(unit.to_string()))),
                ColumnarValue::Array(local.clone()),
            ],
            times.len(),
            local_ty.clone(),
            outer,
        )
    };
    if let Some(unit) = calendar_unit(spec) {
        return trunc(unit);
    }
    let day = trunc("day")?;
    let (w, off) = (spec.width_ns, spec.offset_ns);
    let t = times.as_primitive::<TimestampNanosecondType>();
    let out: Int64Array = arrow::compute::kernels::arity::binary(t, &day, |t, day| {
        let rel = t.wrapping_sub(day).wrapping_sub(off);
        day + off + rel - ((rel % w) + w) % w
    })?;
    Ok(TimestampNanosecondArray::new(
        out.values().clone(),
        out.nulls().cloned(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(width_ns: i64, months: i64, offset_ns: i64, zone: &str) -> Spec {
        Spec {
            width_ns,
            months,
            offset_ns,
            zone: zone.into(),
        }
    }

    #[test]
    fn zoned_widths_named_cases() {
        let h = 3_600_000_000_000;
        for (name, s, ok) in [
            ("an hour", spec(h, 0, 0, "Europe/Oslo"), true),
            (
                "7 hours do not divide a day",
                spec(7 * h, 0, 0, "UTC"),
                false,
            ),
            ("a day", spec(NS_PER_DAY, 0, 0, "UTC"), true),
            ("two days", spec(2 * NS_PER_DAY, 0, 0, "UTC"), false),
            ("a day with an offset", spec(NS_PER_DAY, 0, h, "UTC"), false),
            ("a month", spec(0, 1, 0, "UTC"), true),
            ("two months", spec(0, 2, 0, "UTC"), false),
            ("a year", spec(0, 12, 0, "UTC"), true),
        ] {
            assert_eq!(zoned_spec_ok(&s).is_ok(), ok, "{name}");
        }
    }

    #[test]
    fn fixed_specs_are_date_bin() {
        assert_eq!(spec(60, 0, 5, "").fixed(), Some((60, 5)));
        assert_eq!(spec(60, 0, 0, "UTC").fixed(), None);
        assert_eq!(spec(0, 1, 0, "").fixed(), None);
        let t: ArrayRef = Arc::new(TimestampNanosecondArray::from(vec![-1, 0, 64, 125]));
        let got: Vec<i64> = fixed(&t, (60, 5)).values().to_vec();
        assert_eq!(got, [-55, -55, 5, 125]);
    }
}
