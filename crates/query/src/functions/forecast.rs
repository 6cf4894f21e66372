//! `forecast('model', horizon)`: a forecasting model's next `horizon` points per series, at
//! each series' step after its last training row: `time`, the model's key columns, `value`,
//! `lower`, `upper` (the prediction interval at the model's `level`).
//!
//! The forecast is the one training computed (a model keeps `horizon` points per series,
//! option `horizon`); asking for more is an error naming the option. A series that could not
//! be trained has no rows (`DESCRIBE MODEL` says why). The rows are read when the query is
//! planned (such queries are not kept in the plan cache).

use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, RecordBatch, StringArray, TimestampNanosecondArray};
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use datafusion::catalog::{TableFunctionImpl, TableProvider};
use datafusion::common::{Result, ScalarValue, plan_err};
use datafusion::datasource::MemTable;
use datafusion::logical_expr::Expr;
use tempora_ml::model::{SeriesModel, Task};

use super::model_anomaly::external;
use crate::models::Models;

pub struct ForecastFn {
    pub models: Arc<Models>,
    pub db: String,
}

impl std::fmt::Debug for ForecastFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ForecastFn").field("db", &self.db).finish()
    }
}

const USAGE: &str =
    "forecast takes a model name and a horizon in points: forecast('load_forecast', 48)";

impl TableFunctionImpl for ForecastFn {
    fn call(&self, args: &[Expr]) -> Result<Arc<dyn TableProvider>> {
        let name = match args.first() {
            Some(Expr::Literal(ScalarValue::Utf8(Some(s)), _)) => s.clone(),
            _ => return plan_err!("{USAGE}"),
        };
        let horizon = match args.get(1) {
            Some(Expr::Literal(v, _)) => {
                v.clone()
                    .cast_to(&DataType::Int64)
                    .ok()
                    .and_then(|v| match v {
                        ScalarValue::Int64(Some(h)) => Some(h),
                        _ => None,
                    })
            }
            _ => None,
        };
        let Some(horizon) = horizon.filter(|_| args.len() == 2) else {
            return plan_err!("{USAGE}");
        };
        if horizon < 1 {
            return plan_err!("forecast: the horizon is {horizon}; it is at least 1 point");
        }
        let loaded = self.models.ready(&self.db, &name).map_err(external)?;
        let m = &loaded.model;
        if m.spec.task != Task::Forecasting {
            return plan_err!(
                "forecast: model {name:?} is an anomaly detection model; anomaly_detect(value, '{name}') uses it"
            );
        }
        let horizon = horizon as usize;
        let mut fields = vec![Field::new(
            "time",
            DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
            false,
        )];
        fields.extend(
            m.key_columns
                .iter()
                .map(|k| Field::new(k, DataType::Utf8, true)),
        );
        fields.extend(["value", "lower", "upper"].map(|n| Field::new(n, DataType::Float64, false)));
        let schema = Arc::new(Schema::new(fields));
        let mut time = Vec::new();
        let mut keys: Vec<Vec<Option<String>>> = vec![Vec::new(); m.key_columns.len()];
        let (mut value, mut lower, mut upper) = (Vec::new(), Vec::new(), Vec::new());
        for (key, s) in &m.series {
            let SeriesModel::Forecast(f) = s else {
                continue;
            };
            let fc = &f.fitted.forecast;
            if fc.point.len() < horizon {
                return plan_err!(
                    "forecast: model {name:?} keeps {} points per series; train it with WITH (horizon = {horizon}) to forecast {horizon}",
                    fc.point.len()
                );
            }
            for i in 0..horizon {
                time.push(
                    f.last_time
                        .saturating_add(f.step_ns.saturating_mul(i as i64 + 1)),
                );
                for (c, v) in keys.iter_mut().zip(key) {
                    c.push(v.clone());
                }
                value.push(fc.point[i]);
                lower.push(fc.lower[i]);
                upper.push(fc.upper[i]);
            }
        }
        let mut arrays: Vec<ArrayRef> = vec![Arc::new(
            TimestampNanosecondArray::from(time).with_timezone("UTC"),
        )];
        arrays.extend(
            keys.into_iter()
                .map(|k| Arc::new(StringArray::from(k)) as ArrayRef),
        );
        arrays.extend([value, lower, upper].map(|v| Arc::new(Float64Array::from(v)) as ArrayRef));
        let batch = RecordBatch::try_new(schema.clone(), arrays)?;
        Ok(Arc::new(MemTable::try_new(schema, vec![vec![batch]])?))
    }
}
