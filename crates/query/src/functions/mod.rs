//! Time-series SQL functions registered in every session.
//!
//! - `time_bucket(interval, ts [, origin])`: TimescaleDB's bucketing (see [`time_bucket`]).
//! - `first(v [, ts])`, `last(v [, ts])`: value at the earliest/latest time (see
//!   [`first_last`]).
//! - `tempora_sample_bucket(ts, width_ns, months, offset_ns, zone)`: the bucket of `SAMPLE
//!   BY` (see [`sample_bucket`]).
//! - `date_trunc(unit, ts)`: DataFusion's, with integer arithmetic for UTC nanoseconds (see
//!   [`date_trunc`]).
//! - `tempora_rollup('t', '1h')`: a table's rollup rows (see [`rollup_table`]).
//! - `increase(v [, ts])`, `rate(v [, ts])`, `delta(v [, ts])`: counters with resets (see
//!   [`counter`]).
//! - `anomaly_detect(v, 'algorithm' [, 'options']) OVER (...)`, `anomaly_score(...)`: online
//!   anomaly detection per partition in order (see [`anomaly`]); with a model's name, the
//!   model's detector per series with its kept state (see [`model_anomaly`]).
//! - `forecast('model', horizon)`: a forecasting model's next points per series (see
//!   [`forecast`]).
//! - `current_setting(name [, missing_ok])` and a PostgreSQL-form `version()` (replacing
//!   DataFusion's), for PostgreSQL clients (see [`pg_settings`]).

pub mod anomaly;
pub mod columns;
pub mod counter;
pub mod date_trunc;
pub mod first_last;
pub mod forecast;
pub mod model_anomaly;
pub mod parse_ident;
pub mod pg_settings;
pub mod rollup_table;
pub mod sample_bucket;
pub mod tables;
pub mod time_bucket;

use std::sync::Arc;

use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::{AggregateUDF, ScalarUDF, WindowUDF};

/// Registers Tempora's functions in `ctx`.
pub fn register_all(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(time_bucket::TimeBucket::new()));
    ctx.register_udf(ScalarUDF::new_from_impl(sample_bucket::SampleBucket::new()));
    // Replaces DataFusion's date_trunc (same name and aliases) with a fast path for UTC.
    ctx.register_udf(ScalarUDF::new_from_impl(date_trunc::DateTrunc::new()));
    ctx.register_udaf(AggregateUDF::new_from_impl(first_last::FirstLast::first()));
    ctx.register_udaf(AggregateUDF::new_from_impl(first_last::FirstLast::last()));
    for kind in [
        counter::Kind::Increase,
        counter::Kind::Rate,
        counter::Kind::Delta,
    ] {
        ctx.register_udaf(AggregateUDF::new_from_impl(counter::Counter::new(kind)));
    }
    for output in [anomaly::Output::Detect, anomaly::Output::Score] {
        ctx.register_udwf(WindowUDF::new_from_impl(anomaly::Anomaly::new(output)));
        ctx.register_udwf(WindowUDF::new_from_impl(anomaly::Anomaly::with(
            output, true,
        )));
    }
    ctx.add_analyzer_rule(Arc::new(first_last::FirstLastTimeRule));
    ctx.register_udf(ScalarUDF::new_from_impl(pg_settings::CurrentSetting::new()));
    ctx.register_udf(ScalarUDF::new_from_impl(pg_settings::Version::new()));
    ctx.register_udf(ScalarUDF::new_from_impl(parse_ident::ParseIdent::default()));
}
