//! Physical operators (DataFusion `ExecutionPlan`s) and the query planner that makes them
//! from Tempora's logical nodes.
//!
//! | operator | from |
//! |---|---|
//! | [`scan::TemporaScanExec`] | a Tempora table's `scan` |
//! | [`gap_fill::GapFillExec`] | [`crate::nodes::GapFill`] |
//! | [`aggregate::AggregateExec`] | [`crate::nodes::TemporaAggregate`] (folds with [`fold`], filters with [`filter`], reads rollups with [`rollup`]) |
//!
//! [`replay`] says which physical plans the plan cache may run again.

mod acc;
pub mod aggregate;
pub mod direct;
pub mod filter;
pub mod fold;
pub mod gap_fill;
pub mod model_scoring;
pub mod planner;
pub mod replay;
pub mod rollup;
pub mod scan;
