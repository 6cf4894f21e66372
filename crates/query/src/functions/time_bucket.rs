//! `time_bucket(bucket_width, ts [, origin])` as TimescaleDB defines it: the start of the
//! bucket of width `bucket_width` that holds `ts`, buckets aligned to `origin`.
//!
//! TimescaleDB's default origin is Monday 2000-01-03 00:00 UTC, so that week buckets start on
//! Mondays; for widths counted in months or years it is 2000-01-01. Everything else (types,
//! month arithmetic, time zones of the input) is DataFusion's `date_bin`, which this function
//! calls with the origin filled in.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
};

/// 2000-01-03T00:00:00Z in nanoseconds.
pub const ORIGIN_DAYS_NS: i64 = 946_857_600_000_000_000;
/// 2000-01-01T00:00:00Z in nanoseconds.
pub const ORIGIN_MONTHS_NS: i64 = 946_684_800_000_000_000;

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct TimeBucket {
    date_bin: Arc<ScalarUDF>,
}

impl TimeBucket {
    pub fn new() -> Self {
        Self {
            date_bin: datafusion::functions::datetime::date_bin(),
        }
    }
}

impl Default for TimeBucket {
    fn default() -> Self {
        Self::new()
    }
}

/// The default origin for a bucket width: months → 2000-01-01, otherwise 2000-01-03.
pub fn default_origin_ns(width: &ScalarValue) -> i64 {
    match width {
        ScalarValue::IntervalMonthDayNano(Some(v)) if v.months != 0 => ORIGIN_MONTHS_NS,
        ScalarValue::IntervalYearMonth(Some(_)) => ORIGIN_MONTHS_NS,
        _ => ORIGIN_DAYS_NS,
    }
}

/// The origin scalar for a source of type `ty`: always nanoseconds (what `date_bin` takes
/// for an origin, whatever the source's unit), in the source's time zone.
fn origin_scalar(ns: i64, ty: &DataType) -> Result<ScalarValue> {
    let DataType::Timestamp(_, tz) = ty else {
        return exec_err!("time_bucket: the second argument must be a timestamp, got {ty}");
    };
    Ok(ScalarValue::TimestampNanosecond(Some(ns), tz.clone()))
}

impl ScalarUDFImpl for TimeBucket {
    fn name(&self) -> &str {
        "time_bucket"
    }
    fn signature(&self) -> &Signature {
        self.date_bin.signature()
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.date_bin.return_type(arg_types)
    }
    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        self.date_bin.return_field_from_args(args)
    }
    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.date_bin.coerce_types(arg_types)
    }
    fn invoke_with_args(&self, mut args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        if args.args.len() == 2 {
            let ColumnarValue::Scalar(width) = &args.args[0] else {
                return exec_err!("time_bucket: the bucket width must be a constant");
            };
            let origin = origin_scalar(default_origin_ns(width), args.arg_fields[1].data_type())?;
            let field = Field::new("origin", origin.data_type(), true);
            args.args.push(ColumnarValue::Scalar(origin));
            args.arg_fields.push(Arc::new(field));
        }
        self.date_bin.invoke_with_args(args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::{IntervalMonthDayNano, TimeUnit};

    #[test]
    fn default_origins() {
        let iv = |months, days, nanos| {
            ScalarValue::IntervalMonthDayNano(Some(IntervalMonthDayNano::new(months, days, nanos)))
        };
        for (name, width, want) in [
            ("minutes", iv(0, 0, 300_000_000_000), ORIGIN_DAYS_NS),
            ("a week", iv(0, 7, 0), ORIGIN_DAYS_NS),
            ("a month", iv(1, 0, 0), ORIGIN_MONTHS_NS),
            ("a year", iv(12, 0, 0), ORIGIN_MONTHS_NS),
        ] {
            assert_eq!(default_origin_ns(&width), want, "{name}");
        }
        // 2000-01-03 is a Monday: days since 1970-01-01 (a Thursday) ≡ 4 (mod 7).
        assert_eq!((ORIGIN_DAYS_NS / 86_400_000_000_000) % 7, 4);
    }

    #[test]
    fn origin_is_in_nanoseconds_and_the_input_zone() {
        let ty = DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()));
        assert_eq!(
            origin_scalar(ORIGIN_DAYS_NS, &ty).unwrap(),
            ScalarValue::TimestampNanosecond(Some(ORIGIN_DAYS_NS), Some("UTC".into()))
        );
        assert!(origin_scalar(0, &DataType::Int64).is_err());
    }
}
