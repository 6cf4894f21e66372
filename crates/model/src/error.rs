//! The model crate's error type.

/// Errors raised while building or decoding model values.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum ModelError {
    #[error("invalid name {name:?}: {reason}")]
    InvalidName { name: String, reason: &'static str },
    #[error("duplicate tag key {key:?}")]
    DuplicateTag { key: String },
    #[error("row has no fields")]
    NoFields,
    #[error("too many {what}: {count} exceeds the limit of {limit}")]
    TooMany {
        what: &'static str,
        count: usize,
        limit: usize,
    },
    #[error("corrupt series key at byte {offset}: {reason}")]
    CorruptKey { offset: usize, reason: &'static str },
    #[error("corrupt row batch at byte {offset}: {reason}")]
    CorruptBatch { offset: usize, reason: &'static str },
}

pub type Result<T> = std::result::Result<T, ModelError>;
