//! `date_trunc(unit, ts)` with a fast path for Tempora's `time` column.
//!
//! DataFusion's `date_trunc` converts every value of a zoned timestamp through chrono-tz,
//! even for UTC, which made it the largest cost of a downsampling query (a third of the
//! CPU of TSBS double-groupby). In UTC a unit of fixed length (microsecond … day, and week,
//! whose buckets start on Monday as PostgreSQL's do) is integer arithmetic on the
//! nanoseconds: `t - (t - origin) mod unit`, rounding down before 1970 too (DataFusion's
//! seconds and finer round toward zero there; PostgreSQL rounds down). Every other case
//! (months, years, other zones, other timestamp units) is DataFusion's own function.

use std::sync::Arc;

use arrow::array::{AsArray, TimestampNanosecondArray};
use arrow::datatypes::{DataType, FieldRef, TimeUnit, TimestampNanosecondType};
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
};

const NS: i64 = 1_000_000_000;
/// 1970-01-05, the first Monday after the epoch.
const MONDAY_NS: i64 = 4 * 86_400 * NS;

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct DateTrunc {
    inner: Arc<ScalarUDF>,
}

impl DateTrunc {
    pub fn new() -> Self {
        Self {
            inner: datafusion::functions::datetime::date_trunc(),
        }
    }
}

impl Default for DateTrunc {
    fn default() -> Self {
        Self::new()
    }
}

/// (unit length, origin) in nanoseconds for a fixed-length unit; `None` for the others.
pub fn fixed_unit(unit: &str) -> Option<(i64, i64)> {
    Some(match unit.to_ascii_lowercase().as_str() {
        "microsecond" => (1_000, 0),
        "millisecond" => (1_000_000, 0),
        "second" => (NS, 0),
        "minute" => (60 * NS, 0),
        "hour" => (3_600 * NS, 0),
        "day" => (86_400 * NS, 0),
        "week" => (7 * 86_400 * NS, MONDAY_NS),
        _ => return None,
    })
}

/// Whether a timestamp type is nanoseconds in UTC (named or as an offset) or without zone.
fn is_utc_nanos(ty: &DataType) -> bool {
    match ty {
        DataType::Timestamp(TimeUnit::Nanosecond, None) => true,
        DataType::Timestamp(TimeUnit::Nanosecond, Some(tz)) => {
            matches!(tz.as_ref(), "UTC" | "utc" | "+00:00" | "Z" | "Etc/UTC")
        }
        _ => false,
    }
}

/// The start of the unit holding `t`.
pub fn truncate(t: i64, (len, origin): (i64, i64)) -> i64 {
    t - (t - origin).rem_euclid(len)
}

fn unit_of(v: &ColumnarValue) -> Option<&str> {
    match v {
        ColumnarValue::Scalar(
            ScalarValue::Utf8(Some(s))
            | ScalarValue::Utf8View(Some(s))
            | ScalarValue::LargeUtf8(Some(s)),
        ) => Some(s),
        _ => None,
    }
}

impl ScalarUDFImpl for DateTrunc {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }
    fn signature(&self) -> &Signature {
        self.inner.signature()
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        self.inner.return_type(arg_types)
    }
    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }
    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }
    fn output_ordering(
        &self,
        input: &[datafusion::logical_expr::sort_properties::ExprProperties],
    ) -> Result<datafusion::logical_expr::sort_properties::SortProperties> {
        self.inner.output_ordering(input)
    }
    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let fast = match (args.args.as_slice(), args.arg_fields.get(1)) {
            ([unit, _], Some(f)) if is_utc_nanos(f.data_type()) => {
                unit_of(unit).and_then(fixed_unit)
            }
            _ => None,
        };
        let Some(unit) = fast else {
            return self.inner.invoke_with_args(args);
        };
        let tz = match args.arg_fields[1].data_type() {
            DataType::Timestamp(_, tz) => tz.clone(),
            _ => None,
        };
        Ok(match &args.args[1] {
            ColumnarValue::Array(a) => {
                let ts = a.as_primitive::<TimestampNanosecondType>();
                let out: TimestampNanosecondArray = ts.unary(|t| truncate(t, unit));
                ColumnarValue::Array(Arc::new(out.with_timezone_opt(tz)))
            }
            ColumnarValue::Scalar(ScalarValue::TimestampNanosecond(v, _)) => ColumnarValue::Scalar(
                ScalarValue::TimestampNanosecond(v.map(|t| truncate(t, unit)), tz),
            ),
            _ => return self.inner.invoke_with_args(args),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_units_truncate_like_postgres() {
        let ts = |s: &str| {
            chrono::DateTime::parse_from_rfc3339(s)
                .unwrap()
                .timestamp_nanos_opt()
                .unwrap()
        };
        for (name, unit, t, want) in [
            (
                "minute",
                "minute",
                "2016-01-01T20:15:42.5Z",
                "2016-01-01T20:15:00Z",
            ),
            (
                "hour, upper case",
                "HOUR",
                "2016-01-01T20:15:42Z",
                "2016-01-01T20:00:00Z",
            ),
            ("day", "day", "2016-01-01T20:15:42Z", "2016-01-01T00:00:00Z"),
            (
                "week starts Monday",
                "week",
                "2016-01-01T20:15:42Z",
                "2015-12-28T00:00:00Z",
            ),
            (
                "a Monday stays",
                "week",
                "2015-12-28T00:00:00Z",
                "2015-12-28T00:00:00Z",
            ),
            (
                "before the epoch",
                "hour",
                "1969-12-31T23:59:59Z",
                "1969-12-31T23:00:00Z",
            ),
            (
                "week before the epoch",
                "week",
                "1970-01-01T00:00:00Z",
                "1969-12-29T00:00:00Z",
            ),
            (
                "millisecond",
                "millisecond",
                "2016-01-01T00:00:00.1239Z",
                "2016-01-01T00:00:00.123Z",
            ),
        ] {
            let got = truncate(ts(t), fixed_unit(unit).unwrap());
            assert_eq!(got, ts(want), "{name}");
        }
        for slow in ["month", "quarter", "year", "decade", "fortnight"] {
            assert_eq!(fixed_unit(slow), None, "{slow}");
        }
        assert!(is_utc_nanos(&DataType::Timestamp(
            TimeUnit::Nanosecond,
            Some("UTC".into())
        )));
        assert!(!is_utc_nanos(&DataType::Timestamp(
            TimeUnit::Nanosecond,
            Some("Europe/Oslo".into())
        )));
        assert!(!is_utc_nanos(&DataType::Timestamp(
            TimeUnit::Millisecond,
            None
        )));
    }

    /// The fast path and DataFusion's own function agree on every unit, zone and value.
    #[tokio::test]
    async fn same_results_as_datafusion() {
        use datafusion::prelude::SessionContext;
        let plain = SessionContext::new();
        let ours = SessionContext::new();
        ours.register_udf(ScalarUDF::new_from_impl(DateTrunc::new()));
        let times = [
            "1969-12-31T23:59:59.999999999Z",
            "1970-01-01T00:00:00Z",
            "2015-12-28T00:00:00Z",
            "2016-01-01T20:15:42.123456789Z",
            "2024-03-31T01:30:00Z",
        ];
        for unit in [
            "microsecond",
            "millisecond",
            "second",
            "minute",
            "hour",
            "day",
            "week",
            "month",
            "year",
        ] {
            for zone in ["UTC", "+00:00", "Europe/Oslo"] {
                for t in times {
                    if t.starts_with("1969") && unit.ends_with("second") {
                        // DataFusion truncates seconds and finer toward zero before the
                        // epoch (-1 ns → 0); this rounds down, as PostgreSQL does (tested
                        // above).
                        continue;
                    }
                    let sql = format!(
                        "SELECT CAST(date_trunc('{unit}', arrow_cast(TIMESTAMP '{t}', \
                         'Timestamp(Nanosecond, Some(\"{zone}\"))')) AS BIGINT) AS v"
                    );
                    let run = |ctx: &SessionContext| {
                        let sql = sql.clone();
                        let ctx = ctx.clone();
                        async move {
                            let b = ctx.sql(&sql).await.unwrap().collect().await.unwrap();
                            arrow::util::pretty::pretty_format_batches(&b)
                                .unwrap()
                                .to_string()
                        }
                    };
                    assert_eq!(run(&ours).await, run(&plain).await, "{unit} {zone} {t}");
                }
            }
        }
        // Over a column (the array path), with a NULL.
        let sql = "SELECT CAST(date_trunc('hour', t) AS BIGINT) AS v FROM (VALUES \
                   (arrow_cast(TIMESTAMP '2016-01-01T20:15:42Z', 'Timestamp(Nanosecond, Some(\"UTC\"))')), \
                   (NULL)) AS x(t)";
        let b = ours.sql(sql).await.unwrap().collect().await.unwrap();
        let text = arrow::util::pretty::pretty_format_batches(&b)
            .unwrap()
            .to_string();
        assert!(
            text.contains("1451678400000000000") && text.contains("|   |")
                || text.contains("|                     |"),
            "{text}"
        );
    }
}
