//! Time-series SQL functions registered in every session.
//!
//! - `time_bucket(interval, ts [, origin])`: TimescaleDB's bucketing (see [`time_bucket`]).

pub mod time_bucket;

use datafusion::execution::context::SessionContext;
use datafusion::logical_expr::ScalarUDF;

/// Registers Tempora's functions in `ctx`.
pub fn register_all(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::new_from_impl(time_bucket::TimeBucket::new()));
}
