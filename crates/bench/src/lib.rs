//! The benchmark suite's parts (issue 5): a deterministic generator of TSBS-shaped data and a
//! loader that sends line protocol over HTTP to Tempora, InfluxDB or QuestDB alike.
//!
//! Invariants:
//! - The generator is a pure function of its settings and seed: the same settings give the
//!   same bytes, and it streams (one time step of all hosts in memory at a time).
//! - The loader holds at most `workers * 2` batches in memory, whatever the input size.

pub mod load;
pub mod tsbs;
