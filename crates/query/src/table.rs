//! A Tempora table as a DataFusion [`TableProvider`].
//!
//! Filters become the scan's time range and an index matcher (see [`crate::pushdown`]), so
//! the engine reads only matching regions, files and series; both are reported as
//! `Inexact`, so DataFusion still applies them to what comes back. Only the fields the query
//! uses are read. The scan itself streams region by region ([`crate::exec::scan`]).

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::datasource::TableType;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use tempora_model::TableSchema;
use tempora_storage::Engine;

use crate::exec::scan::{ScanArgs, ScanSource, TemporaScanExec};
use crate::pushdown::{classify, request};

/// Latest-value reads of at most this many cached rows run on the calling task instead of the
/// blocking pool.
pub const INLINE_LATEST_ROWS_MAX: usize = 10_000;

#[derive(Clone)]
pub struct TemporaTable {
    engine: Arc<Engine>,
    /// The engine's name (`db.table`).
    name: String,
    schema: SchemaRef,
    tags: Vec<String>,
    /// Answer from the last-value cache instead of the regions.
    latest: bool,
    /// With `latest`: keep only the newest cached row per value of these tag columns.
    newest_per: Option<Vec<String>>,
    /// The engine's schema this table was made from (the plan cache checks it is current).
    snapshot: Arc<TableSchema>,
    /// A dense table's declaration, as `CREATE TABLE` text.
    definition: Option<Arc<str>>,
}

impl std::fmt::Debug for TemporaTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TemporaTable")
            .field("name", &self.name)
            .finish()
    }
}

impl TemporaTable {
    pub fn new(engine: Arc<Engine>, name: String, schema: &Arc<TableSchema>) -> Self {
        let tags: Vec<String> = schema.tags().map(str::to_string).collect();
        let fields: Vec<_> = schema.fields().map(|(n, t)| (n.to_string(), t)).collect();
        let definition = engine
            .dense_spec(&name)
            .map(|spec| Arc::from(crate::dense::definition(&name, schema, &spec)));
        Self {
            engine,
            name,
            schema: tempora_storage::output_schema(&tags, &fields),
            tags,
            latest: false,
            newest_per: None,
            snapshot: schema.clone(),
            definition,
        }
    }

    /// The engine's schema this table was made from.
    pub fn snapshot(&self) -> &Arc<TableSchema> {
        &self.snapshot
    }

    pub fn is_tag(&self, name: &str) -> bool {
        self.tags.iter().any(|t| t == name)
    }

    /// Whether `name` is a field (not a tag, not `time`).
    pub fn is_field(&self, name: &str) -> bool {
        name != tempora_model::TIME_COLUMN
            && !self.is_tag(name)
            && self.schema.field_with_name(name).is_ok()
    }

    /// A field's Arrow type.
    pub fn field_type(&self, name: &str) -> Option<arrow::datatypes::DataType> {
        self.is_field(name)
            .then(|| self.schema.field_with_name(name).ok())
            .flatten()
            .map(|f| f.data_type().clone())
    }

    /// The engine's name (`db.table`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The table's name within its database.
    pub fn short_name(&self) -> &str {
        self.name.split_once('.').map_or(&self.name, |(_, t)| t)
    }

    pub fn engine(&self) -> &Arc<Engine> {
        &self.engine
    }

    /// The table's Arrow schema (tags, time, fields).
    pub fn arrow_schema(&self) -> &SchemaRef {
        &self.schema
    }
}

impl TemporaTable {
    /// The same table answered from the last-value cache: each selected series' newest
    /// row, or with `newest_per` the newest row per value of those tags. Only for plans where
    /// that gives the same result (see `latest_rule`).
    pub fn latest_variant(&self, newest_per: Option<&[String]>) -> Self {
        Self {
            latest: true,
            newest_per: newest_per.map(<[String]>::to_vec),
            ..self.clone()
        }
    }

    pub fn is_latest(&self) -> bool {
        self.latest
    }

    pub fn tags(&self) -> &[String] {
        &self.tags
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
            .map(|f| {
                // A parameter has its value when the scan is planned: push what its value
                // will make pushable.
                let bound = crate::pushdown::with_sample_values(f);
                match classify(&bound, &|c| self.is_tag(c)) {
                    Some(_) => TableProviderFilterPushDown::Inexact,
                    None => TableProviderFilterPushDown::Unsupported,
                }
            })
            .collect())
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let first_field = self.tags.len() + 1;
        // Read the fields the projection names and decode only the tags it names; time
        // always comes back.
        let fields = projection.map(|p| {
            p.iter()
                .filter(|&&i| i >= first_field)
                .map(|&i| self.schema.field(i).name().clone())
                .collect::<Vec<_>>()
        });
        let tags = projection.map(|p| {
            let mut t: Vec<usize> = p.iter().copied().filter(|&i| i < self.tags.len()).collect();
            t.sort_unstable();
            t.dedup();
            t.into_iter()
                .map(|i| self.tags[i].clone())
                .collect::<Vec<_>>()
        });
        let (mut req, pushed) = request(filters, &|c| self.is_tag(c), fields.clone());
        req.tags = tags.clone();
        // The engine's output: the tags asked for, time, then the fields in request order.
        let read_schema = match projection {
            None => self.schema.clone(),
            Some(_) => {
                let mut cols: Vec<arrow::datatypes::FieldRef> = Vec::new();
                for name in tags.iter().flatten() {
                    cols.push(self.schema.field_with_name(name)?.clone().into());
                }
                cols.push(self.schema.field(self.tags.len()).clone().into());
                for name in fields.iter().flatten() {
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
        let (engine, name, latest) = (self.engine.clone(), self.name.clone(), self.latest);
        let read = move || {
            if latest {
                engine
                    .latest(&name, &req.matcher, req.fields.as_ref())
                    .map(ScanSource::Latest)
            } else {
                engine
                    .plan_scan(&name, &req)
                    .map(|p| ScanSource::Regions(Arc::new(p)))
            }
        };
        // A small read of cached latest rows (well under a millisecond) runs here: handing it
        // to the blocking pool and back costs two thread wake-ups, about as long as the read.
        let small = latest
            && self
                .engine
                .latest_rows_bound(&self.name)
                .is_some_and(|n| n <= INLINE_LATEST_ROWS_MAX);
        let source = if small {
            read()
        } else {
            tokio::task::spawn_blocking(read)
                .await
                .map_err(|e| DataFusionError::External(Box::new(e)))?
        }
        .map_err(|e| DataFusionError::External(Box::new(e)))?;
        // The cache answers with every tag: keep the read schema's columns.
        let source = match source {
            ScanSource::Latest(b) => {
                let b = match &self.newest_per {
                    Some(keys) => crate::latest_rows::newest_per_key(&b, keys)?,
                    None => b,
                };
                let idx = read_schema
                    .fields()
                    .iter()
                    .map(|f| b.schema().index_of(f.name()))
                    .collect::<Result<Vec<_>, _>>()?;
                ScanSource::Latest(b.project(&idx)?)
            }
            other => other,
        };
        let config = state.config();
        Ok(Arc::new(TemporaScanExec::new(ScanArgs {
            table: self.name.clone(),
            source,
            read_schema,
            projection: proj,
            limit,
            pushed,
            target_partitions: config.target_partitions(),
            batch_rows: config.batch_size(),
        })?))
    }

    async fn delete_from(
        &self,
        state: &dyn Session,
        filters: Vec<Expr>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        crate::delete::exec(
            state,
            self.engine.clone(),
            self.name.clone(),
            &self.tags,
            &filters,
        )
    }

    async fn update(
        &self,
        state: &dyn Session,
        assignments: Vec<(String, Expr)>,
        filters: Vec<Expr>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        crate::update::exec(
            state,
            self.engine.clone(),
            self.name.clone(),
            &self.tags,
            self.schema.clone(),
            assignments,
            &filters,
        )
    }

    /// A dense table's declaration (`information_schema.views.definition` shows it);
    /// `None` for a table of the ordinary layout.
    fn get_table_definition(&self) -> Option<&str> {
        self.definition.as_deref()
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
