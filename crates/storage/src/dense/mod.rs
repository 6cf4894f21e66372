//! Dense tables (issue 25, XStore): fixed-interval series stored at computed offsets in
//! sparse block files, so a point's create, read, update and delete cost one positioned read
//! or write at any history length, with no index.
//!
//! | module | what it holds |
//! |---|---|
//! | [`layout`] | where a point lives: its block, its slot, the slot's byte offset |
//! | [`header`] | the block file's header: magic, version, grid, fields (`docs/format/dense-files.md`) |
//! | [`slot`] | one slot's bytes: checksum, presence bits, fixed-width fields |
//!
//! Status: the pure core (layout and codecs) is in place; the file I/O, the WAL path and the
//! table provider come next.

pub mod header;
pub mod layout;
pub mod slot;
