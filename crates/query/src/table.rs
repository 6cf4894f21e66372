//! A Tempora table as a DataFusion [`TableProvider`].
//!
//! Time predicates become the scan's time range and tag predicates (`=`, `IN`) become index
//! matchers, so the engine reads only matching regions, files and series; both are reported
//! as `Inexact`, so DataFusion still applies them to what comes back. Only the fields the
//! query uses are read.

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::ScalarValue;
use datafusion::datasource::TableType;
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::{BinaryExpr, Expr, Operator, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use tempora_model::TableSchema;
use tempora_storage::{Engine, Matcher, ScanRequest};

pub struct TemporaTable {
    engine: Arc<Engine>,
    /// The engine's name (`db.table`).
    name: String,
    schema: SchemaRef,
    tags: Vec<String>,
}

impl std::fmt::Debug for TemporaTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemporaTable")
            .field("name", &self.name)
            .finish()
    }
}

impl TemporaTable {
    pub fn new(engine: Arc<Engine>, name: String, schema: &TableSchema) -> Self {
        let tags: Vec<String> = schema.tags().map(str::to_string).collect();
        let fields: Vec<_> = schema.fields().map(|(n, t)| (n.to_string(), t)).collect();
        Self {
            engine,
            name,
            schema: tempora_storage::output_schema(&tags, &fields),
            tags,
        }
    }

    fn is_tag(&self, name: &str) -> bool {
        self.tags.iter().any(|t| t == name)
    }
}

/// A timestamp literal in nanoseconds.
fn ts_nanos(v: &ScalarValue) -> Option<i64> {
    match v {
        ScalarValue::TimestampNanosecond(Some(x), _) => Some(*x),
        ScalarValue::TimestampMicrosecond(Some(x), _) => x.checked_mul(1_000),
        ScalarValue::TimestampMillisecond(Some(x), _) => x.checked_mul(1_000_000),
        ScalarValue::TimestampSecond(Some(x), _) => x.checked_mul(1_000_000_000),
        _ => None,
    }
}

fn column_name(e: &Expr) -> Option<&str> {
    match e {
        Expr::Column(c) => Some(c.name.as_str()),
        Expr::Cast(c) => column_name(&c.expr),
        _ => None,
    }
}

fn literal(e: &Expr) -> Option<&ScalarValue> {
    match e {
        Expr::Literal(v, _) => Some(v),
        _ => None,
    }
}

/// What one filter tells the scan.
#[derive(Debug)]
enum Pushed {
    /// Inclusive start, exclusive end.
    Time(i64, i64),
    Tag(Matcher),
}

impl TemporaTable {
    fn classify(&self, e: &Expr) -> Option<Pushed> {
        match e {
            Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
                let (col, op, v) = match (column_name(left), literal(right)) {
                    (Some(c), Some(v)) => (c, *op, v),
                    _ => (column_name(right)?, op.swap()?, literal(left)?),
                };
                if col == tempora_model::TIME_COLUMN {
                    let t = ts_nanos(v)?;
                    return match op {
                        Operator::GtEq => Some(Pushed::Time(t, i64::MAX)),
                        Operator::Gt => Some(Pushed::Time(t.checked_add(1)?, i64::MAX)),
                        Operator::Lt => Some(Pushed::Time(i64::MIN, t)),
                        Operator::LtEq => Some(Pushed::Time(i64::MIN, t.checked_add(1)?)),
                        Operator::Eq => Some(Pushed::Time(t, t.checked_add(1)?)),
                        _ => None,
                    };
                }
                if op == Operator::Eq && self.is_tag(col) {
                    let ScalarValue::Utf8(Some(s)) = v else {
                        return None;
                    };
                    return Some(Pushed::Tag(Matcher::Eq(col.to_string(), s.clone())));
                }
                None
            }
            Expr::InList(l) if !l.negated => {
                let col = column_name(&l.expr)?;
                if !self.is_tag(col) {
                    return None;
                }
                let values = l
                    .list
                    .iter()
                    .map(|e| match literal(e) {
                        Some(ScalarValue::Utf8(Some(s))) => Some(s.clone()),
                        _ => None,
                    })
                    .collect::<Option<Vec<_>>>()?;
                Some(Pushed::Tag(Matcher::In(col.to_string(), values)))
            }
            Expr::Between(b) if !b.negated && column_name(&b.expr) == Some("time") => {
                let lo = ts_nanos(literal(&b.low)?)?;
                let hi = ts_nanos(literal(&b.high)?)?;
                Some(Pushed::Time(lo, hi.checked_add(1)?))
            }
            _ => None,
        }
    }

    fn request(&self, filters: &[Expr], fields: Option<Vec<String>>) -> ScanRequest {
        let mut time: Option<(i64, i64)> = None;
        let mut matchers = Vec::new();
        for f in filters {
            match self.classify(f) {
                Some(Pushed::Time(s, e)) => {
                    let (s0, e0) = time.unwrap_or((i64::MIN, i64::MAX));
                    time = Some((s0.max(s), e0.min(e)));
                }
                Some(Pushed::Tag(m)) => matchers.push(m),
                None => {}
            }
        }
        let matcher = match matchers.len() {
            0 => Matcher::All,
            1 => matchers.pop().expect("one"),
            _ => Matcher::And(matchers),
        };
        ScanRequest {
            time: time.map(|(s, e)| (s, e.max(s))),
            matcher,
            fields,
        }
    }
}

#[async_trait]
impl TableProvider for TemporaTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    fn table_type(&self) -> TableType {
        TableType::Base
    }
    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|f| match self.classify(f) {
                Some(_) => TableProviderFilterPushDown::Inexact,
                None => TableProviderFilterPushDown::Unsupported,
            })
            .collect())
    }

    async fn scan(
        &self,
        _state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        _limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let first_field = self.tags.len() + 1;
        // Read every field the projection names; tags and time always come back.
        let fields = projection.map(|p| {
            p.iter()
                .filter(|&&i| i >= first_field)
                .map(|&i| self.schema.field(i).name().clone())
                .collect::<Vec<_>>()
        });
        let req = self.request(filters, fields.clone());
        let (engine, name) = (self.engine.clone(), self.name.clone());
        let batches = tokio::task::spawn_blocking(move || engine.scan(&name, &req))
            .await
            .map_err(|e| DataFusionError::External(Box::new(e)))?
            .map_err(|e| DataFusionError::External(Box::new(e)))?;
        // The engine's output has tags, time, then the requested fields in request order.
        let read_schema = match &fields {
            None => self.schema.clone(),
            Some(f) => {
                let mut cols: Vec<arrow::datatypes::FieldRef> =
                    self.schema.fields()[..first_field].to_vec();
                for name in f {
                    cols.push(self.schema.field_with_name(name)?.clone().into());
                }
                Arc::new(arrow::datatypes::Schema::new(cols))
            }
        };
        let proj = projection.map(|p| {
            p.iter()
                .map(|&i| {
                    let name = self.schema.field(i).name();
                    read_schema
                        .index_of(name)
                        .expect("read schema has every projected column")
                })
                .collect::<Vec<_>>()
        });
        let batches = batches
            .into_iter()
            .map(|b| b.with_schema(read_schema.clone()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(MemorySourceConfig::try_new_exec(
            &[batches],
            read_schema,
            proj,
        )?)
    }

    async fn insert_into(
        &self,
        _state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        _op: datafusion::logical_expr::dml::InsertOp,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let sink = crate::insert::EngineSink::new(
            self.engine.clone(),
            self.name.clone(),
            self.schema.clone(),
        );
        Ok(Arc::new(datafusion::datasource::sink::DataSinkExec::new(
            input,
            Arc::new(sink),
            None,
        )))
    }
}
