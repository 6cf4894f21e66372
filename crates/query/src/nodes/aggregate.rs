//! `TemporaAggregate`: an aggregate over a Tempora table that the engine's scan feeds series by
//! series (the monitoring shapes: downsampling, aggregation across series by tags, both).
//!
//! It replaces an `Aggregate` (and the projections and filters below it, down to the table
//! scan) when [`crate::rules::aggregate`] proves it computes the same rows: the groups are
//! tags and at most one expression of `time` it can fold ([`TimeKey`]), the aggregates are
//! `max`, `min`, `sum`, `avg` and `count` over fields (or `count(*)`), and the filters are
//! bounds on `time`, predicates over tags, and predicates over fields. Its output schema is the
//! `Aggregate`'s. It runs as [`crate::exec::aggregate::AggregateExec`].
//!
//! Every expression it holds (time bounds, predicates, the time group expression) is over the
//! table's columns and may hold parameters, bound before it runs.

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::DFSchemaRef;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{Expr, LogicalPlan, Operator, UserDefinedLogicalNodeCore};

use crate::rules::time_key::TimeKey;
use crate::table::TemporaTable;

/// An aggregate function the operator computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AggFunc {
    Max,
    Min,
    Sum,
    Avg,
    Count,
}

/// One aggregate: its function and the field it reads (`None`: `count(*)`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AggSpec {
    pub func: AggFunc,
    pub field: Option<String>,
}

/// One group column, in output order.
#[derive(Debug, Clone, PartialEq)]
pub enum Group {
    /// The expression of `time` (over the table's columns) and how rows are grouped by it.
    Time {
        expr: Expr,
        key: TimeKey,
    },
    Tag(String),
}

/// `time <op> <value>`, with `value` free of columns.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TimeBound {
    pub op: Operator,
    pub value: Expr,
}

/// What the scan of a Tempora operator keeps: rows in the time bounds, of series the tag
/// predicate keeps, that the field predicate keeps.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ScanFilter {
    pub time: Vec<TimeBound>,
    pub tags: Option<Expr>,
    pub fields: Option<Expr>,
}

impl ScanFilter {
    /// The expressions, in the order [`ScanFilter::with_exprs`] takes them.
    pub fn exprs(&self) -> Vec<Expr> {
        let mut out: Vec<Expr> = self.time.iter().map(|b| b.value.clone()).collect();
        out.extend(self.tags.iter().cloned());
        out.extend(self.fields.iter().cloned());
        out
    }

    /// A copy with `exprs` (as [`ScanFilter::exprs`] gave them) put back.
    pub fn with_exprs(&self, exprs: &mut impl Iterator<Item = Expr>) -> Result<ScanFilter> {
        let mut next = || {
            exprs
                .next()
                .ok_or_else(|| DataFusionError::Internal("a scan filter lost an expression".into()))
        };
        let time = self
            .time
            .iter()
            .map(|b| {
                Ok(TimeBound {
                    op: b.op,
                    value: next()?,
                })
            })
            .collect::<Result<_>>()?;
        let tags = self.tags.as_ref().map(|_| next()).transpose()?;
        let fields = self.fields.as_ref().map(|_| next()).transpose()?;
        Ok(ScanFilter { time, tags, fields })
    }

    /// The filter as `EXPLAIN` shows it.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = self
            .time
            .iter()
            .map(|b| format!("time {} {}", b.op, b.value))
            .collect();
        parts.extend(self.tags.iter().map(|t| format!("tags: {t}")));
        parts.extend(self.fields.iter().map(|f| format!("fields: {f}")));
        parts.join(", ")
    }
}

#[derive(Debug, Clone)]
pub struct TemporaAggregate {
    pub table: Arc<TemporaTable>,
    pub filter: ScanFilter,
    pub groups: Vec<Group>,
    pub aggs: Vec<AggSpec>,
    /// `ORDER BY <time group> DESC LIMIT n` above: only the newest `n` groups are wanted, so
    /// the operator reads the newest buckets first (see [`crate::exec::aggregate`]).
    pub newest: Option<usize>,
    /// The `Aggregate`'s output schema.
    pub schema: DFSchemaRef,
}

impl TemporaAggregate {
    /// The tag columns grouped by, in group order.
    pub fn group_tags(&self) -> Vec<String> {
        self.groups
            .iter()
            .filter_map(|g| match g {
                Group::Tag(t) => Some(t.clone()),
                Group::Time { .. } => None,
            })
            .collect()
    }

    pub fn time_group(&self) -> Option<(&Expr, &TimeKey)> {
        self.groups.iter().find_map(|g| match g {
            Group::Time { expr, key } => Some((expr, key)),
            Group::Tag(_) => None,
        })
    }

    /// The output types of the aggregates, in order.
    pub fn agg_types(&self) -> Vec<DataType> {
        let n = self.groups.len();
        (0..self.aggs.len())
            .map(|i| self.schema.field(n + i).data_type().clone())
            .collect()
    }

    fn key(&self) -> String {
        format!(
            "{} {:?} {:?} {:?} {:?}",
            self.table.name(),
            self.filter,
            self.groups,
            self.aggs,
            self.newest
        )
    }
}

impl PartialEq for TemporaAggregate {
    fn eq(&self, other: &Self) -> bool {
        self.schema == other.schema && self.key() == other.key()
    }
}
impl Eq for TemporaAggregate {}
impl Hash for TemporaAggregate {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key().hash(state)
    }
}
impl PartialOrd for TemporaAggregate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        self.key().partial_cmp(&other.key())
    }
}

impl UserDefinedLogicalNodeCore for TemporaAggregate {
    fn name(&self) -> &str {
        "TemporaAggregate"
    }
    fn inputs(&self) -> Vec<&LogicalPlan> {
        vec![]
    }
    fn schema(&self) -> &DFSchemaRef {
        &self.schema
    }
    /// None: the node's expressions are over the table's columns, which its output schema
    /// does not have, so DataFusion's rules must not rewrite them (they are already
    /// optimised). Parameters in them are found and bound by [`TemporaAggregate::inner_exprs`].
    fn expressions(&self) -> Vec<Expr> {
        vec![]
    }
    fn fmt_for_explain(&self, f: &mut fmt::Formatter) -> fmt::Result {
        let groups: Vec<String> = self
            .groups
            .iter()
            .map(|g| match g {
                Group::Time { expr, key } => match key {
                    TimeKey::Bin { width, .. } => format!("{expr} (bins of {width}ns)"),
                    TimeKey::Scalar(_) => format!("{expr} (by row)"),
                },
                Group::Tag(t) => t.clone(),
            })
            .collect();
        let aggs: Vec<String> = self
            .aggs
            .iter()
            .map(|a| {
                format!(
                    "{}({})",
                    format!("{:?}", a.func).to_lowercase(),
                    a.field.as_deref().unwrap_or("*")
                )
            })
            .collect();
        write!(
            f,
            "TemporaAggregate: table={}, group=[{}], aggr=[{}]",
            self.table.short_name(),
            groups.join(", "),
            aggs.join(", ")
        )?;
        let filter = self.filter.describe();
        if !filter.is_empty() {
            write!(f, ", filter=[{filter}]")?;
        }
        if let Some(n) = self.newest {
            write!(f, ", newest={n}")?;
        }
        Ok(())
    }
    fn with_exprs_and_inputs(&self, _exprs: Vec<Expr>, _inputs: Vec<LogicalPlan>) -> Result<Self> {
        Ok(self.clone())
    }
}

impl TemporaAggregate {
    /// The expressions the node holds (time bounds, predicates, the time group), over the
    /// table's columns: what parameter binding looks into.
    pub fn inner_exprs(&self) -> Vec<Expr> {
        let mut out = self.filter.exprs();
        out.extend(self.time_group().map(|(e, _)| e.clone()));
        out
    }

    /// A copy with `exprs` (as [`TemporaAggregate::inner_exprs`] gave them) put back.
    pub fn with_inner_exprs(&self, exprs: Vec<Expr>) -> Result<Self> {
        let mut it = exprs.into_iter();
        let filter = self.filter.with_exprs(&mut it)?;
        let groups = self
            .groups
            .iter()
            .map(|g| match g {
                Group::Time { expr, key } => Group::Time {
                    expr: it.next().unwrap_or_else(|| expr.clone()),
                    key: key.clone(),
                },
                tag => tag.clone(),
            })
            .collect();
        Ok(Self {
            filter,
            groups,
            ..self.clone()
        })
    }
}
