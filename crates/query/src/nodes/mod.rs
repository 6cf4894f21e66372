//! Tempora's logical plan nodes (DataFusion `UserDefinedLogicalNode`s). Each is made by the
//! planner ([`crate::plan`]) or by a rule ([`crate::rules`]), shows in `EXPLAIN`, and becomes
//! a physical operator through [`crate::exec::planner`].
//!
//! | node | made by | runs as |
//! |---|---|---|
//! | [`GapFill`] | `SAMPLE BY … FILL` ([`crate::plan::fill`]) | [`crate::exec::gap_fill::GapFillExec`] |
//! | [`TemporaAggregate`] | [`crate::rules::aggregate`] | [`crate::exec::aggregate::AggregateExec`] |
//! | [`ModelScoring`] | [`crate::rules::anomaly`] | [`crate::exec::model_scoring::ModelScoringExec`] |

pub mod aggregate;
pub mod gap_fill;
pub mod model_scoring;

pub use aggregate::TemporaAggregate;
pub use gap_fill::GapFill;
pub use model_scoring::ModelScoring;
