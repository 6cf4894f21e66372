//! Scalar functions PromQL plans use where SQL's have other semantics:
//!
//! - `prom_quantile(φ, values)`: the φ-quantile of a list (from `array_agg`), as `quantile`
//!   aggregates;
//! - `prom_bucket_quantile(φ, buckets)`: `histogram_quantile` of a list of `{le, v}` structs
//!   (`le` as text; series whose `le` is not a number are left out, as Prometheus does; null
//!   when no bucket is left);
//! - `prom_time_part(seconds, part)`: `day_of_month`, `hour` … of a Unix time in UTC.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Float64Array, Float64Builder};
use arrow::datatypes::{DataType, Field, Float64Type};
use chrono::{Datelike, Timelike};
use datafusion::common::{Result, ScalarValue, exec_err};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use super::functions::quantile::{bucket_quantile, quantile};

/// The functions, for registering or for building expressions.
pub fn all() -> Vec<ScalarUDF> {
    vec![
        ScalarUDF::new_from_impl(Quantile::new()),
        ScalarUDF::new_from_impl(BucketQuantile::new()),
        ScalarUDF::new_from_impl(TimePart::new()),
    ]
}

/// The φ argument: a constant.
fn phi(args: &ScalarFunctionArgs) -> Result<f64> {
    match &args.args[0] {
        ColumnarValue::Scalar(ScalarValue::Float64(Some(q))) => Ok(*q),
        other => exec_err!("the quantile must be a constant, got {other:?}"),
    }
}

fn lists(args: &ScalarFunctionArgs) -> Result<ArrayRef> {
    args.args[1].to_array(args.number_rows)
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Quantile {
    signature: Signature,
}

impl Quantile {
    fn new() -> Self {
        Self {
            signature: Signature::any(2, Volatility::Immutable),
        }
    }
}

impl ScalarUDFImpl for Quantile {
    fn name(&self) -> &str {
        "prom_quantile"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let q = phi(&args)?;
        let lists = lists(&args)?;
        let lists = lists.as_list::<i32>();
        let mut out = Float64Builder::with_capacity(lists.len());
        let mut buf = Vec::new();
        for i in 0..lists.len() {
            let values = lists.value(i);
            let values = values.as_primitive::<Float64Type>();
            buf.clear();
            buf.extend(values.iter().flatten());
            out.append_value(quantile(q, &mut buf));
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct BucketQuantile {
    signature: Signature,
}

impl BucketQuantile {
    fn new() -> Self {
        Self {
            signature: Signature::any(2, Volatility::Immutable),
        }
    }
}

/// A bucket bound as Go's `strconv.ParseFloat` reads it (`+Inf`, `Inf`, `NaN`, decimals).
fn bound(s: &str) -> Option<f64> {
    s.parse::<f64>().ok()
}

impl ScalarUDFImpl for BucketQuantile {
    fn name(&self) -> &str {
        "prom_bucket_quantile"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let q = phi(&args)?;
        let lists = lists(&args)?;
        let lists = lists.as_list::<i32>();
        let mut out = Float64Builder::with_capacity(lists.len());
        let mut buckets = Vec::new();
        for i in 0..lists.len() {
            let items = lists.value(i);
            let items = items.as_struct();
            let (le, v) = (items.column(0), items.column(1));
            let (le, v) = (le.as_string::<i32>(), v.as_primitive::<Float64Type>());
            buckets.clear();
            for j in 0..items.len() {
                if le.is_null(j) || v.is_null(j) {
                    continue;
                }
                if let Some(b) = bound(le.value(j)) {
                    buckets.push((b, v.value(j)));
                }
            }
            if buckets.is_empty() {
                out.append_null();
            } else {
                out.append_value(bucket_quantile(q, &mut buckets));
            }
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct TimePart {
    signature: Signature,
}

impl TimePart {
    fn new() -> Self {
        Self {
            signature: Signature::exact(
                vec![DataType::Float64, DataType::Utf8],
                Volatility::Immutable,
            ),
        }
    }
}

/// One part of the UTC time `secs` (a Unix time in seconds), as Prometheus's date
/// functions give it; NaN for a time that is not one.
pub fn time_part(secs: f64, part: &str) -> f64 {
    if !secs.is_finite() {
        return f64::NAN;
    }
    let Some(t) = chrono::DateTime::from_timestamp(secs.floor() as i64, 0) else {
        return f64::NAN;
    };
    let v = match part {
        "day_of_month" => t.day(),
        "day_of_week" => t.weekday().num_days_from_sunday(),
        "day_of_year" => t.ordinal(),
        "days_in_month" => {
            let (y, m) = (t.year(), t.month());
            let next = if m == 12 {
                chrono::NaiveDate::from_ymd_opt(y + 1, 1, 1)
            } else {
                chrono::NaiveDate::from_ymd_opt(y, m + 1, 1)
            };
            next.and_then(|n| n.pred_opt()).map_or(0, |d| d.day())
        }
        "hour" => t.hour(),
        "minute" => t.minute(),
        "month" => t.month(),
        "year" => return t.year() as f64,
        _ => return f64::NAN,
    };
    v as f64
}

impl ScalarUDFImpl for TimePart {
    fn name(&self) -> &str {
        "prom_time_part"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Float64)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let part = match &args.args[1] {
            ColumnarValue::Scalar(ScalarValue::Utf8(Some(p))) => p.clone(),
            other => {
                return exec_err!("prom_time_part: the part must be a constant, got {other:?}");
            }
        };
        let secs = args.args[0].to_array(args.number_rows)?;
        let secs = secs.as_primitive::<Float64Type>();
        let out: Float64Array = secs
            .iter()
            .map(|s| s.map(|s| time_part(s, &part)))
            .collect();
        Ok(ColumnarValue::Array(Arc::new(out)))
    }
}

/// The struct type of a `{le, v}` bucket.
pub fn bucket_fields() -> Vec<Field> {
    vec![
        Field::new("le", DataType::Utf8, true),
        Field::new("v", DataType::Float64, true),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_parts_in_utc() {
        // 2024-02-29 23:59:30 UTC, a Thursday.
        let t = 1_709_251_170.0;
        let cases = [
            ("day_of_month", 29.0),
            ("day_of_week", 4.0),
            ("day_of_year", 60.0),
            ("days_in_month", 29.0),
            ("hour", 23.0),
            ("minute", 59.0),
            ("month", 2.0),
            ("year", 2024.0),
        ];
        for (part, want) in cases {
            assert_eq!(time_part(t, part), want, "{part}");
        }
        assert!(time_part(f64::NAN, "hour").is_nan());
        assert_eq!(time_part(0.0, "year"), 1970.0);
        assert_eq!(time_part(-1.0, "year"), 1969.0);
        assert_eq!(time_part(1_704_067_200.0, "days_in_month"), 31.0);
    }

    #[test]
    fn bucket_bounds_read_as_go_reads_them() {
        assert_eq!(bound("+Inf"), Some(f64::INFINITY));
        assert_eq!(bound("Inf"), Some(f64::INFINITY));
        assert_eq!(bound("0.005"), Some(0.005));
        assert_eq!(bound("1e3"), Some(1000.0));
        assert_eq!(bound("abc"), None);
        assert_eq!(bound(""), None);
    }
}
