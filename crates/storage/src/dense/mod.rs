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
//! | [`ops`] | applying records to files, point and range reads, latest values, what a worker syncs |
//! | `scan` | a block of the selected series as the read API's sorted run |
//!
//! Write path: the engine checks each row against the spec (grid, types, string lengths),
//! encodes its slot image, and hands the rows to the worker its series hashes to; the worker
//! appends one record per request to its WAL, commits, then writes the slots. Before it
//! truncates its WAL it syncs every block file and directory it wrote, so a record leaves the
//! log only once its slots are durable; replay writes the images again, in sequence order,
//! so a slot torn by a crash becomes the new value.

pub mod file;
pub mod header;
pub mod layout;
pub mod ops;
pub mod record;
pub(crate) mod scan;
pub mod slot;
pub mod spec;
pub mod table;

pub use spec::DenseSpec;
pub use table::DenseTable;
