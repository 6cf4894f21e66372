//! `GapFill`: the logical node of `SAMPLE BY … FILL(…)`.
//!
//! Its input is the sampled (grouped) query: one row per group (tag values) and bucket, with
//! the tags, the bucket start (`time`) and the aggregates as columns. It outputs one row for
//! every group and every bucket of the query's time range, the aggregates filled as the
//! clause says (see [`crate::exec::gap_fill`] for the rules). The range's bounds are
//! expressions (literals, parameters, `now() - …`) evaluated when the node runs.
//!
//! Output columns are the input's, in order; an aggregate filled `LINEAR`, or with a float
//! constant when it is an integer, becomes `Float64` (as `COALESCE` with a float would).

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::{DFSchema, DFSchemaRef, ScalarValue};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{Expr, LogicalPlan, UserDefinedLogicalNodeCore};

use crate::sql::sample_by::{Fill, Width};

/// A bound of the fill's range: the expression and whether it is exclusive.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Bound {
    pub expr: Expr,
    pub exclusive: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GapFill {
    pub input: Arc<LogicalPlan>,
    /// The bucket column's name.
    pub time: String,
    pub tags: Vec<String>,
    pub aggs: Vec<String>,
    pub fill: Fill,
    pub width: Width,
    pub offset_ns: i64,
    pub lower: Option<Bound>,
    pub upper: Option<Bound>,
    schema: DFSchemaRef,
}

impl GapFill {
    #[allow(clippy::too_many_arguments)]
    pub fn try_new(
        input: Arc<LogicalPlan>,
        time: String,
        tags: Vec<String>,
        aggs: Vec<String>,
        fill: Fill,
        width: Width,
        offset_ns: i64,
        lower: Option<Bound>,
        upper: Option<Bound>,
    ) -> Result<Self> {
        let schema = output_schema(input.schema(), &aggs, &fill)?;
        Ok(Self {
            input,
            time,
            tags,
            aggs,
            fill,
            width,
            offset_ns,
            lower,
            upper,
            schema,
        })
    }
}

/// The input's schema with the filled aggregates' types.
fn output_schema(input: &DFSchema, aggs: &[String], fill: &Fill) -> Result<DFSchemaRef> {
    let arrow = input.as_arrow();
    let fields: Vec<Field> = arrow
        .fields()
        .iter()
        .map(|f| {
            if !aggs.iter().any(|a| a == f.name()) {
                return Ok(f.as_ref().clone());
            }
            filled_type(f.name(), f.data_type(), fill).map(|t| f.as_ref().clone().with_data_type(t))
        })
        .collect::<Result<_>>()?;
    let qualifiers = (0..fields.len())
        .map(|i| input.qualified_field(i).0.cloned())
        .collect();
    let schema = DFSchema::from_field_specific_qualified_schema(
        qualifiers,
        &Arc::new(Schema::new_with_metadata(fields, arrow.metadata().clone())),
    )?;
    Ok(Arc::new(schema))
}

/// The type of an aggregate column after the fill.
pub fn filled_type(name: &str, ty: &DataType, fill: &Fill) -> Result<DataType> {
    let numeric = ty.is_numeric();
    match fill {
        Fill::Linear if numeric => Ok(DataType::Float64),
        Fill::Linear => Err(DataFusionError::Plan(format!(
            "SAMPLE BY: FILL(LINEAR) needs numbers; {name} is {ty}"
        ))),
        Fill::Value(ScalarValue::Float64(_)) if ty.is_integer() => Ok(DataType::Float64),
        Fill::Value(_) if !numeric => Err(DataFusionError::Plan(format!(
            "SAMPLE BY: FILL with a number needs numbers; {name} is {ty}"
        ))),
        _ => Ok(ty.clone()),
    }
}

impl PartialOrd for GapFill {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        self.input.partial_cmp(&other.input)
    }
}

impl UserDefinedLogicalNodeCore for GapFill {
    fn name(&self) -> &str {
        "GapFill"
    }
    fn inputs(&self) -> Vec<&LogicalPlan> {
        vec![&self.input]
    }
    fn schema(&self) -> &DFSchemaRef {
        &self.schema
    }
    fn expressions(&self) -> Vec<Expr> {
        self.lower
            .iter()
            .chain(self.upper.iter())
            .map(|b| b.expr.clone())
            .collect()
    }
    fn fmt_for_explain(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let width = match self.width {
            Width::Nanos(n) => format!("{n}ns"),
            Width::Months(m) => format!("{m} months"),
        };
        write!(
            f,
            "GapFill: time={}, width={width}, group=[{}], fill={:?} [{}]",
            self.time,
            self.tags.join(", "),
            self.fill,
            self.aggs.join(", ")
        )?;
        if let Some(b) = &self.lower {
            write!(
                f,
                ", from {}{}",
                b.expr,
                if b.exclusive { " (excl.)" } else { "" }
            )?;
        }
        if let Some(b) = &self.upper {
            write!(
                f,
                ", to {}{}",
                b.expr,
                if b.exclusive { " (excl.)" } else { "" }
            )?;
        }
        Ok(())
    }
    fn with_exprs_and_inputs(&self, exprs: Vec<Expr>, inputs: Vec<LogicalPlan>) -> Result<Self> {
        let [input] = <[LogicalPlan; 1]>::try_from(inputs)
            .map_err(|_| DataFusionError::Internal("GapFill takes one input".into()))?;
        let mut exprs = exprs.into_iter();
        let mut next = |b: &Option<Bound>| {
            b.as_ref().map(|b| Bound {
                expr: exprs.next().unwrap_or_else(|| b.expr.clone()),
                exclusive: b.exclusive,
            })
        };
        let lower = next(&self.lower);
        let upper = next(&self.upper);
        GapFill::try_new(
            Arc::new(input),
            self.time.clone(),
            self.tags.clone(),
            self.aggs.clone(),
            self.fill.clone(),
            self.width,
            self.offset_ns,
            lower,
            upper,
        )
    }
}
