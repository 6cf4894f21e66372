//! Tempora's series index: the series of one region (a time partition × hash bucket of one
//! table), looked up by key, by id, and by tag predicates.
//!
//! Invariants taught here:
//! - **Dense ids.** [`SeriesIndex::get_or_insert`] assigns [`SeriesId`]s `0, 1, 2, …` in
//!   insertion order; an id never changes and is never reused. `len()` is the next id.
//! - **Canonical keys only.** A key is the model crate's memcomparable encoding of a tag set
//!   ([`tempora_model::encode_series_key`]). A new key must decode and have strictly ascending
//!   tag keys, so byte-equal keys ⇔ equal tag sets. A rejected key leaves the index unchanged.
//! - **Each key is stored once**, in a chunked byte arena; the forward hash table holds only
//!   ids (hash = [`tempora_model::series_hash`]) and compares through the arena.
//! - **Inverted index.** Tag key (interned once) → distinct value → posting list. A value held
//!   by one series keeps that id inline; two or more get a roaring bitmap. Each tag key also
//!   has a presence bitmap (series that carry the key at all).
//! - **SQL NULL semantics** for [`Matcher`]: a series lacking tag `k` never matches a
//!   comparison on `k` (`Eq`, `NotEq`, `In`, `NotIn`, `Regex`, `NotRegex`); only `Not` and
//!   `NotExists` reach it. Regexes are unanchored (PostgreSQL `~`) and run over distinct values.
//! - **Persistence** ([`SeriesIndex::encode`]/[`SeriesIndex::decode`]) stores the keys in id
//!   order under a magic, a version and a CRC32C; decode re-inserts them, so ids and the
//!   inverted index come back identical. Corrupt input is an [`IndexError`] naming the byte
//!   offset, never a panic, and allocation is bounded by the input length.
//! - [`LruCache`] bounds total *weight in bytes* (not entry count) and evicts least recently
//!   used entries first.

mod arena;
mod error;
mod format;
mod lru;
mod matcher;
mod series;
mod tags;

pub use error::IndexError;
pub use format::{HEADER_LEN, INDEX_FORMAT_VERSION, INDEX_MAGIC};
pub use lru::{LruCache, Weigher};
pub use matcher::{Matcher, REGEX_SIZE_LIMIT};
pub use roaring::RoaringBitmap;
pub use series::{DEFAULT_MAX_SERIES, IndexLimits, SeriesIndex};
pub use tempora_model::SeriesId;
