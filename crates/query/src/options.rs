//! Tempora's settings that reach DataFusion's planner, as a configuration extension: the
//! rules read them from the `ConfigOptions` they are given, so a session's `SET` reaches every
//! rule the same way (see [`crate::service`] for how a session's settings make its state).

use datafusion::common::config::{ConfigExtension, ConfigOptions};

datafusion::common::extensions_options! {
    /// Settings under `tempora.` in a session's configuration.
    pub struct TemporaOptions {
        /// Tempora's plan operators for the monitoring shapes (bucketed aggregates, filtered
        /// rows); off gives DataFusion's plain plan of the same query.
        pub operators: bool, default = true
        /// Latest-value queries answered from the last-value cache.
        pub last_value_cache: bool, default = true
        /// Bucketed aggregates answered from the table's rollups where they give the same
        /// rows (`exec::rollup`); off reads raw rows.
        pub rollups: bool, default = true
        /// Fewest values (estimated rows × (aggregates + 1)) an aggregate reads for it to be
        /// folded on several threads (`exec::aggregate`).
        pub parallel_min_values: u64, default = crate::exec::aggregate::PARALLEL_MIN_VALUES
    }
}

impl ConfigExtension for TemporaOptions {
    const PREFIX: &'static str = "tempora";
}

/// The Tempora settings of `config` (defaults when it has none).
pub fn of(config: &ConfigOptions) -> TemporaOptions {
    config
        .extensions
        .get::<TemporaOptions>()
        .cloned()
        .unwrap_or_default()
}
