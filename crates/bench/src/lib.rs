//! The benchmark suite's parts (issue 5): deterministic generators of TSBS-shaped data
//! (`cpu-only` in [`tsbs`], `devops` and `iot` on the table-driven engine in [`walk`]) and a
//! loader that sends line protocol over HTTP to Tempora, InfluxDB or QuestDB alike.
//!
//! Invariants:
//! - The generator is a pure function of its settings and seed: the same settings give the
//!   same bytes, and it streams (one time step of all hosts in memory at a time; `iot` also
//!   holds its late rows, a few steps' worth at most).
//! - The loader holds at most `workers * 2` batches in memory, whatever the input size.

pub mod devops;
pub mod iot;
pub mod load;
pub mod tsbs;
pub mod walk;
