//! Tempora's logical plan nodes (DataFusion `UserDefinedLogicalNode`s). Each is made by the
//! planner ([`crate::plan`]) or by a rule ([`crate::rules`]), shows in `EXPLAIN`, and becomes
//! a physical operator through [`crate::exec::planner`].
//!
//! | node | made by | runs as |
//! |---|---|---|
//! | [`GapFill`] | `SAMPLE BY … FILL` ([`crate::plan::fill`]) | [`crate::exec::gap_fill::GapFillExec`] |
//! | [`TemporaAggregate`] | [`crate::rules::aggregate`] | [`crate::exec::aggregate::AggregateExec`] |

pub mod aggregate;
pub mod gap_fill;

pub use aggregate::TemporaAggregate;
pub use gap_fill::GapFill;
