//! Dense tables (issue 25, XStore): fixed-interval series stored at computed offsets in
//! sparse block files, so a point's create, read, update and delete cost one positioned read
//! or write at any history length, with no index.
//!
//! | module | what it holds |
//! |---|---|
//! | [`spec`] | a dense table's declaration: interval, block length, fixed-width fields |
//! | [`layout`] | where a point lives: its block, its slot, the slot's byte offset |
//! | [`header`] | the block file's header: magic, version, grid, fields (`docs/format/dense-files.md`) |
//! | [`slot`] | one slot's bytes: checksum, presence bits, fixed-width fields |
//! | [`file`] | a block file on local disk: positioned slot reads and writes, hole punching, data extents by `SEEK_DATA`/`SEEK_HOLE` |
//! | [`table`] | a table's directories: a directory per series, a file per block, open files within a limit |
//! | [`record`] | the write-ahead-log record of a dense put or delete (whole slot images) |
//! | [`log`] | a table's write-ahead log, write-behind buffer and checkpoints |
//! | [`cold`] | blocks converted to compressed Parquet after `cold_after`: smaller, read-only |
//! | [`ops`] | applying records to files, point and range reads, latest values, what a checkpoint syncs |
//! | `scan` | a block of the selected series as the read API's sorted run |
//!
//! Write path: the engine checks each row against the spec (grid, types, string lengths) and
//! encodes its slot image; the table logs the request as one record in its own write-ahead
//! log on the caller's thread (no hop to a worker: a point write costs a log append and, per
//! the WAL sync policy, an fsync), then buffers the images and writes them in place
//! ([`log`]). A checkpoint syncs every block file and directory written before it truncates
//! the log, so a record leaves the log only once its slots are durable; replay writes the
//! images again, in order, so a slot torn by a crash becomes the new value.

pub mod cold;
pub mod file;
pub mod header;
pub mod layout;
pub mod log;
pub mod ops;
pub mod record;
pub(crate) mod scan;
pub mod slot;
pub mod spec;
pub mod table;

pub use log::LogConfig;
pub use spec::DenseSpec;
pub use table::{DenseShared, DenseTable};
