//! `PromScan`: the leaf of every PromQL plan. It reads one metric (a table's field) for the
//! series an index matcher selects and evaluates each series over the step grid — an instant
//! selector, a function of a range vector, or the raw samples of one ([`eval::Mode`]).
//!
//! Output rows: one label column per label the plan above needs (`Utf8`, null where the series
//! lacks the label; `__name__` among them when kept), then [`TS`] (`Int64`, the step's time in
//! ms; a raw sample's own time) and [`VALUE`] (`Float64`). Each series' rows are contiguous and
//! in time order.
//!
//! Invariants:
//! - The samples a partition reads are charged to the query's memory pool before they are
//!   evaluated; a scan that does not fit fails with "resources exhausted".
//! - Partitions split the step grid into contiguous slices ([`crate::promql::time::Steps::chunks`]);
//!   each reads only the time its slice needs, so they are independent and their output
//!   concatenated is the whole scan's.
//! - Reading and evaluating run on the blocking pool.

pub mod eval;
pub mod exec;

use std::fmt;
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::{DFSchema, DFSchemaRef};
use datafusion::error::Result;
use datafusion::logical_expr::{Expr, LogicalPlan, UserDefinedLogicalNodeCore};
use tempora_index::Matcher;
use tempora_storage::Engine;

pub use eval::{Mode, Timing};

/// The time column of PromQL rows (ms since the epoch).
pub const TS: &str = "__ts";
/// The value column of PromQL rows.
pub const VALUE: &str = "__value";
/// The metric name label.
pub const NAME: &str = "__name__";

/// The schema of PromQL rows with these labels.
pub fn rows_schema(labels: &[String]) -> DFSchemaRef {
    let mut fields: Vec<Field> = labels
        .iter()
        .map(|l| Field::new(l, DataType::Utf8, true))
        .collect();
    fields.push(Field::new(TS, DataType::Int64, false));
    fields.push(Field::new(VALUE, DataType::Float64, false));
    Arc::new(DFSchema::try_from(Schema::new(fields)).expect("label names are distinct"))
}

#[derive(Clone)]
pub struct PromScan {
    pub engine: Arc<Engine>,
    /// The engine's table name (`db.table`).
    pub table: String,
    /// The metric name (`__name__`'s value).
    pub metric: String,
    pub field: String,
    /// Selects the series (before any data is read).
    pub matcher: Matcher,
    /// The output label columns, in order: tags of the table, and [`NAME`] when kept.
    pub labels: Vec<String>,
    pub mode: Mode,
    pub timing: Timing,
    pub schema: DFSchemaRef,
}

impl PromScan {
    /// A description of everything that decides the output (also its identity).
    fn key(&self) -> String {
        format!(
            "table={} field={} matcher={:?} labels={:?} mode={:?} timing={:?}",
            self.table, self.field, self.matcher, self.labels, self.mode, self.timing
        )
    }

    /// The node as a plan.
    pub fn into_plan(self) -> LogicalPlan {
        LogicalPlan::Extension(datafusion::logical_expr::Extension {
            node: Arc::new(self),
        })
    }
}

impl fmt::Debug for PromScan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PromScan {}", self.key())
    }
}

impl PartialEq for PromScan {
    fn eq(&self, o: &Self) -> bool {
        self.key() == o.key()
    }
}
impl Eq for PromScan {}
impl std::hash::Hash for PromScan {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.key().hash(h)
    }
}
impl PartialOrd for PromScan {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        self.key().partial_cmp(&o.key())
    }
}

impl UserDefinedLogicalNodeCore for PromScan {
    fn name(&self) -> &str {
        "PromScan"
    }
    fn inputs(&self) -> Vec<&LogicalPlan> {
        Vec::new()
    }
    fn schema(&self) -> &DFSchemaRef {
        &self.schema
    }
    fn expressions(&self) -> Vec<Expr> {
        Vec::new()
    }
    fn fmt_for_explain(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let table = self.table.split_once('.').map_or(&*self.table, |(_, t)| t);
        write!(
            f,
            "PromScan: metric={} table={table} field={}",
            self.metric, self.field
        )?;
        match &self.mode {
            Mode::Instant {
                lookback,
                timestamp,
            } => {
                write!(f, " instant lookback={lookback}ms")?;
                if *timestamp {
                    write!(f, " timestamp")?;
                }
            }
            Mode::Range { func, range, args } => {
                write!(f, " {}[{range}ms]", func.name())?;
                if !args.is_empty() {
                    write!(f, " args={args:?}")?;
                }
            }
            Mode::Raw { range, .. } => write!(f, " raw[{range}ms]")?,
        }
        let s = self.timing.steps;
        write!(f, " steps={}..{} every {}ms", s.start, s.end, s.step)?;
        if self.timing.offset != 0 {
            write!(f, " offset={}ms", self.timing.offset)?;
        }
        if let Some(at) = self.timing.at {
            write!(f, " @{at}")?;
        }
        write!(f, " labels={:?}", self.labels)
    }
    fn with_exprs_and_inputs(&self, _exprs: Vec<Expr>, inputs: Vec<LogicalPlan>) -> Result<Self> {
        assert!(inputs.is_empty(), "PromScan is a leaf");
        Ok(self.clone())
    }
}
