//! Dense tables (issue 25, XStore): fixed-interval series stored at computed offsets in
//! sparse block files, so a point's create, read, update and delete cost one positioned read
//! or write at any history length, with no index.
//!
//! | module | what it holds |
//! |---|---|
//! | [`layout`] | where a point lives: its block, its slot, the slot's byte offset |
//! | [`header`] | the block file's header: magic, version, grid, fields (`docs/format/dense-files.md`) |
//! | [`slot`] | one slot's bytes: checksum, presence bits, fixed-width fields |
//! | [`file`] | a block file on local disk: positioned slot reads and writes, hole punching, data extents by `SEEK_DATA`/`SEEK_HOLE` |
//!
//! Status: the pure core (layout and codecs) and the block file are in place; the WAL path,
//! the catalog and the table provider come next.

pub mod file;
pub mod header;
pub mod layout;
pub mod slot;
