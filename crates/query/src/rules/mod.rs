//! Analyzer and optimizer rules: each matches what a plan means (its shape after DataFusion's
//! own simplification), so every spelling of the same query is caught.
//!
//! | rule | kind | what it does |
//! |---|---|---|
//! | [`latest::LatestValueRule`] | analyzer | newest-row shapes read the last-value cache |
//! | [`anomaly::AnomalyRule`] | analyzer | anomaly functions get their series and time order; a model's name makes them score with the model (registered per database by the service) |
//! | [`aggregate::AggregateRule`] | optimizer | aggregates over a Tempora table become a [`crate::nodes::TemporaAggregate`] |
//! | [`pg_types::PgTypeNamesRule`] | analyzer | `information_schema.columns.data_type` in PostgreSQL's names |
//!
//! [`chain`] and [`time_key`] are the plain functions these rules match with.

pub mod aggregate;
pub mod anomaly;
pub mod chain;
pub mod latest;
pub mod pg_types;
pub mod time_key;

use std::sync::Arc;

use datafusion::prelude::SessionContext;

/// Adds Tempora's rules to a session.
pub fn register_all(ctx: &SessionContext) {
    ctx.add_analyzer_rule(Arc::new(latest::LatestValueRule));
    ctx.add_analyzer_rule(Arc::new(pg_types::PgTypeNamesRule));
    ctx.register_udf(datafusion::logical_expr::ScalarUDF::new_from_impl(
        pg_types::PgTypeName::default(),
    ));
    ctx.register_udf(datafusion::logical_expr::ScalarUDF::new_from_impl(
        pg_types::PgTypeName::udt(),
    ));
    ctx.add_optimizer_rule(Arc::new(aggregate::AggregateRule));
}
