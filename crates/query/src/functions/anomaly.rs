//! `anomaly_detect(value, 'algorithm' [, 'options'])` and `anomaly_score(...)` (issue 24):
//! window functions that run one of `tempora_ml`'s detectors over each partition's rows in
//! the window's order, one verdict per row. Written with an `OVER` clause they score each
//! series in time order:
//!
//! ```sql
//! SELECT time, host, anomaly_detect(usage_user, 'nsigma', 'k=3,window=60')
//!          OVER (PARTITION BY host ORDER BY time) FROM cpu
//! ```
//!
//! Written without `OVER` (`anomaly_detect(usage_user, 'mad')`) each series (the table's
//! tags present in the query) is scored in time order: the front door gives the call an empty
//! window and [`crate::rules::anomaly`] fills it. With a model's name instead of an algorithm
//! the rule makes it a [`super::model_anomaly::ModelAnomaly`].
//!
//! The algorithm and options are constants, parsed when the operator is built (an unknown
//! algorithm or option is an error naming it, before any row is read); the value must be
//! numeric. NULL values score NULL (`anomaly_score`) / false (`anomaly_detect`) and leave the
//! detector's state as it was. The window frame is ignored: a detector always sees the
//! partition from its first row.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Float64Array};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Float64Type};
use datafusion::common::{Result, ScalarValue, plan_err};
use datafusion::logical_expr::function::{PartitionEvaluatorArgs, WindowUDFFieldArgs};
use datafusion::logical_expr::{
    PartitionEvaluator, Signature, TypeSignature, Volatility, WindowUDFImpl,
};
use datafusion::physical_expr::expressions::Literal;
use tempora_ml::detect::{Algorithm, Detector, Options};

/// Which of the two functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Output {
    /// `anomaly_detect`: whether the row is an anomaly.
    Detect,
    /// `anomaly_score`: its score (NaN while the detector has no evidence).
    Score,
}

impl Output {
    /// The name users write.
    pub fn name(self) -> &'static str {
        match self {
            Output::Detect => "anomaly_detect",
            Output::Score => "anomaly_score",
        }
    }

    /// The output column of a call named `name` (nullable: NULL values score NULL).
    pub fn field(self, name: &str) -> FieldRef {
        let ty = match self {
            Output::Detect => DataType::Boolean,
            Output::Score => DataType::Float64,
        };
        Arc::new(Field::new(name, ty, true))
    }

    /// Refuses a value column that is not numeric, naming the function and the type.
    pub fn check_value(self, value: &DataType) -> Result<()> {
        if !value.is_numeric() {
            return plan_err!("{} needs a numeric value, got {value}", self.name());
        }
        Ok(())
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Anomaly {
    pub output: Output,
    /// Written without `OVER`: the analyzer rule ([`crate::rules::anomaly`]) makes its window
    /// each series in time order.
    pub per_series: bool,
    signature: Signature,
}

/// The name the SQL front door gives a call written without `OVER`.
pub fn per_series_name(output: Output) -> &'static str {
    match output {
        Output::Detect => "tempora_anomaly_detect_series",
        Output::Score => "tempora_anomaly_score_series",
    }
}

impl Anomaly {
    pub fn new(output: Output) -> Self {
        Self::with(output, false)
    }

    pub fn with(output: Output, per_series: bool) -> Self {
        Self {
            output,
            per_series,
            signature: Signature::one_of(
                vec![TypeSignature::Any(2), TypeSignature::Any(3)],
                Volatility::Immutable,
            ),
        }
    }

    /// The name users write.
    pub fn public_name(&self) -> &'static str {
        self.output.name()
    }
}

impl WindowUDFImpl for Anomaly {
    fn name(&self) -> &str {
        if self.per_series {
            per_series_name(self.output)
        } else {
            self.public_name()
        }
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
        let text = |i: usize, what: &str| -> Result<Option<String>> {
            let Some(e) = args.input_exprs().get(i) else {
                return Ok(None);
            };
            match e.downcast_ref::<Literal>().map(Literal::value) {
                Some(
                    ScalarValue::Utf8(Some(s))
                    | ScalarValue::LargeUtf8(Some(s))
                    | ScalarValue::Utf8View(Some(s)),
                ) => Ok(Some(s.clone())),
                _ => plan_err!(
                    "{}: the {what} must be a constant string",
                    self.public_name()
                ),
            }
        };
        let name = text(1, "algorithm")?.unwrap_or_default();
        let algo = Algorithm::parse(&name).map_err(|e| plan_error(self.public_name(), e))?;
        let opts = Options::parse(algo, &text(2, "options")?.unwrap_or_default())
            .map_err(|e| plan_error(self.public_name(), e))?;
        Ok(Box::new(Evaluator {
            output: self.output,
            algo,
            opts,
        }))
    }

    fn field(&self, args: WindowUDFFieldArgs) -> Result<FieldRef> {
        Ok(self.output.field(args.name()))
    }
}

fn plan_error(f: &str, e: tempora_ml::MlError) -> datafusion::error::DataFusionError {
    let e = match e {
        tempora_ml::MlError::UnknownAlgorithm(name) => format!(
            "{name:?} is neither an algorithm (nsigma, mad, iqr, esd, stl, discord) nor a model of this \
             database (SHOW MODELS)"
        ),
        e => e.to_string(),
    };
    datafusion::error::DataFusionError::Plan(format!("{f}: {e}"))
}

/// Rewrites every `anomaly_detect(...)` / `anomaly_score(...)` written without `OVER` in a
/// query's syntax tree into its per-series window function with an empty `OVER ()`, which
/// the analyzer rule fills with the series and their time order.
pub fn per_series_calls(q: &mut datafusion::sql::sqlparser::ast::Query) {
    use datafusion::sql::sqlparser::ast::{
        Expr, Ident, ObjectName, ObjectNamePart, WindowSpec, WindowType,
    };
    let _ = datafusion::sql::sqlparser::ast::visit_expressions_mut(q, |e: &mut Expr| {
        if let Expr::Function(f) = e
            && f.over.is_none()
            && let [ObjectNamePart::Identifier(id)] = f.name.0.as_slice()
        {
            let output = match id.value.to_ascii_lowercase().as_str() {
                "anomaly_detect" => Output::Detect,
                "anomaly_score" => Output::Score,
                _ => return std::ops::ControlFlow::<()>::Continue(()),
            };
            f.name = ObjectName(vec![ObjectNamePart::Identifier(Ident::new(
                per_series_name(output),
            ))]);
            f.over = Some(WindowType::WindowSpec(WindowSpec {
                window_name: None,
                partition_by: vec![],
                order_by: vec![],
                window_frame: None,
            }));
        }
        std::ops::ControlFlow::Continue(())
    });
}

#[derive(Debug)]
struct Evaluator {
    output: Output,
    algo: Algorithm,
    opts: Options,
}

impl PartitionEvaluator for Evaluator {
    fn evaluate_all(&mut self, values: &[ArrayRef], num_rows: usize) -> Result<ArrayRef> {
        let v = cast(&values[0], &DataType::Float64)?;
        let v = v.as_primitive::<Float64Type>();
        debug_assert_eq!(v.len(), num_rows);
        let mut d = Detector::new(self.algo, self.opts);
        let verdicts =
            (0..num_rows).map(|i| (v.is_valid(i), d.step(v.is_valid(i).then(|| v.value(i)))));
        Ok(match self.output {
            Output::Detect => Arc::new(BooleanArray::from_iter(
                verdicts.map(|(valid, x)| valid.then_some(x.anomaly)),
            )),
            Output::Score => Arc::new(Float64Array::from_iter(
                verdicts.map(|(valid, x)| valid.then_some(x.score)),
            )),
        })
    }
}
