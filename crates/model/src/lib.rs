//! Tempora's data model: the values every other crate passes around.
//!
//! Invariants taught here:
//! - A **timestamp** is `i64` nanoseconds since the Unix epoch, UTC ([`Timestamp`]).
//! - A **series** is a table plus one tag set. The tag set is canonical: tags sorted by key,
//!   no duplicate keys, and it is encoded once into a memcomparable [`SeriesKey`]; two rows
//!   belong to the same series iff their encoded keys are byte-equal.
//! - A table's columns are tags (always strings), fields (one [`FieldType`] each, fixed on first
//!   write) and the `time` column. A name is either a tag or a field, never both.
//! - A [`RowBatch`] carries rows for one table in a compact form (keys in one arena, field names
//!   interned), the unit that flows from protocols to the WAL and memtables.
//! - Ids and sequence numbers are newtypes so they cannot be mixed up.

mod batch;
mod error;
mod ids;
mod key;
mod schema;
mod value;

pub use batch::{BatchRow, RowBatch, RowBatchBuilder, validate_name};
pub use error::{ModelError, Result};
pub use ids::{SeqNo, SeriesId, TableId, Timestamp};
pub use key::{
    SeriesKey, decode_series_key, encode_series_key, encode_series_key_with, for_each_tag,
    series_hash,
};
pub use schema::{ColumnKind, RowRejection, TableSchema};
pub use value::{FieldType, FieldValue};

/// Name of the timestamp column in every table.
pub const TIME_COLUMN: &str = "time";
/// Name of the encoded series key column in data files.
pub const PRIMARY_KEY_COLUMN: &str = "__primary_key";
/// Name of the write sequence column in data files.
pub const SEQ_COLUMN: &str = "__seq";
