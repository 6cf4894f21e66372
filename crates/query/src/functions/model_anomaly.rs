//! `anomaly_detect(value, 'model')` / `anomaly_score(value, 'model')`: a model's detector per
//! series, continuing from the state the model keeps (`crate::models::kept`). The analyzer
//! rule ([`crate::rules::anomaly`]) makes these from the calls users write, adding the time
//! and the model's key columns as arguments: `(value, 'model', time, key...)`.
//!
//! Each evaluation counts its points into [`ScoreCounters`] (scored, from the kept state,
//! replayed), which `EXPLAIN ANALYZE` shows on the `ModelScoringExec` above the window.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Float64Array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType, FieldRef, Float64Type, TimeUnit, TimestampNanosecondType,
};
use datafusion::common::Result;
use datafusion::error::DataFusionError;
use datafusion::logical_expr::function::{PartitionEvaluatorArgs, WindowUDFFieldArgs};
use datafusion::logical_expr::{PartitionEvaluator, Signature, Volatility, WindowUDFImpl};
use tempora_ml::model::SeriesKey;

use super::anomaly::Output;
use crate::models::Models;
use crate::models::kept;

/// Points a plan's model scoring handled.
#[derive(Debug, Default)]
pub struct ScoreCounters {
    pub scored: AtomicU64,
    pub from_kept: AtomicU64,
    pub replayed: AtomicU64,
    pub untrained_series: AtomicU64,
}

impl ScoreCounters {
    fn add(&self, c: kept::Counts) {
        self.scored.fetch_add(c.scored, Ordering::Relaxed);
        self.from_kept.fetch_add(c.from_kept, Ordering::Relaxed);
        self.replayed.fetch_add(c.replayed, Ordering::Relaxed);
        self.untrained_series
            .fetch_add(u64::from(c.untrained), Ordering::Relaxed);
    }
}

#[derive(Debug)]
pub struct ModelAnomaly {
    pub output: Output,
    pub models: Arc<Models>,
    pub db: String,
    pub model: String,
    pub counters: Arc<ScoreCounters>,
    signature: Signature,
}

impl ModelAnomaly {
    pub fn new(
        output: Output,
        models: Arc<Models>,
        db: &str,
        model: &str,
        counters: Arc<ScoreCounters>,
    ) -> Self {
        Self {
            output,
            models,
            db: db.to_string(),
            model: model.to_string(),
            counters,
            signature: Signature::variadic_any(Volatility::Volatile),
        }
    }
}

impl PartialEq for ModelAnomaly {
    fn eq(&self, o: &Self) -> bool {
        self.output == o.output
            && self.db == o.db
            && self.model == o.model
            && Arc::ptr_eq(&self.counters, &o.counters)
    }
}
impl Eq for ModelAnomaly {}
impl std::hash::Hash for ModelAnomaly {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        (self.output, &self.db, &self.model).hash(h);
    }
}

/// A query error as DataFusion carries it (its status and SQLSTATE survive).
pub fn external(e: crate::QueryError) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

impl WindowUDFImpl for ModelAnomaly {
    fn name(&self) -> &str {
        self.output.name()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn partition_evaluator(
        &self,
        args: PartitionEvaluatorArgs,
    ) -> Result<Box<dyn PartitionEvaluator>> {
        self.output
            .check_value(args.input_fields()[0].data_type())?;
        self.models.ready(&self.db, &self.model).map_err(external)?;
        Ok(Box::new(Evaluator {
            output: self.output,
            models: self.models.clone(),
            db: self.db.clone(),
            model: self.model.clone(),
            counters: self.counters.clone(),
        }))
    }

    fn field(&self, args: WindowUDFFieldArgs) -> Result<FieldRef> {
        Ok(self.output.field(args.name()))
    }
}

#[derive(Debug)]
struct Evaluator {
    output: Output,
    models: Arc<Models>,
    db: String,
    model: String,
    counters: Arc<ScoreCounters>,
}

impl PartitionEvaluator for Evaluator {
    fn evaluate_all(&mut self, values: &[ArrayRef], num_rows: usize) -> Result<ArrayRef> {
        let loaded = self.models.ready(&self.db, &self.model).map_err(external)?;
        let v = cast(&values[0], &DataType::Float64)?;
        let v = v.as_primitive::<Float64Type>();
        let t = cast(&values[2], &DataType::Timestamp(TimeUnit::Nanosecond, None))?;
        let t = t.as_primitive::<TimestampNanosecondType>();
        let mut key: SeriesKey = Vec::with_capacity(values.len() - 3);
        for k in &values[3..] {
            let k = cast(k, &DataType::Utf8)?;
            let k = k.as_string::<i32>();
            key.push((num_rows > 0 && k.is_valid(0)).then(|| k.value(0).to_string()));
        }
        let times: Vec<i64> = (0..num_rows)
            .map(|i| if t.is_valid(i) { t.value(i) } else { i64::MIN })
            .collect();
        let vals: Vec<Option<f64>> = (0..num_rows)
            .map(|i| (v.is_valid(i) && t.is_valid(i) && !v.value(i).is_nan()).then(|| v.value(i)))
            .collect();
        let (verdicts, counts) = kept::score(&loaded, &key, &times, &vals);
        self.counters.add(counts);
        Ok(match self.output {
            Output::Detect => Arc::new(BooleanArray::from_iter(
                verdicts.iter().map(|x| x.map(|x| x.anomaly)),
            )),
            Output::Score => Arc::new(Float64Array::from_iter(
                verdicts.iter().map(|x| x.map(|x| x.score)),
            )),
        })
    }
}
