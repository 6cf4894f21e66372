//! The crate's one error type. Every variant that concerns a place in a line names the
//! 1-based byte column (counted from the first byte of the line, newlines inside multi-line
//! string values included).

use tempora_model::ModelError;

/// Why a line (or a precision string) was rejected. [`crate::LineError::message`] is the
/// `Display` of one of these.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("unknown precision {0:?}: expected one of ns, n, us, u, µ, ms, s, m, h")]
    UnknownPrecision(String),
    #[error("line is {len} bytes, longer than the limit of {limit} bytes")]
    LineTooLong { len: usize, limit: usize },
    #[error("too many lines: the limit is {limit}; this and all later lines were not parsed")]
    TooManyLines { limit: usize },
    #[error("invalid UTF-8 at column {col}")]
    InvalidUtf8 { col: usize },
    #[error("missing measurement at column {col}")]
    MissingMeasurement { col: usize },
    #[error("missing fields at column {col}")]
    MissingFields { col: usize },
    #[error("empty {what} at column {col}")]
    EmptyKey { what: &'static str, col: usize },
    #[error("missing '=' after {what} {name:?} at column {col}")]
    MissingEquals {
        what: &'static str,
        name: String,
        col: usize,
    },
    #[error("missing value for tag {key:?} at column {col}")]
    MissingTagValue { key: String, col: usize },
    #[error("unescaped '=' in the value of tag {key:?} at column {col}")]
    EqualsInTagValue { key: String, col: usize },
    #[error("missing value for field {field:?} at column {col}")]
    MissingFieldValue { field: String, col: usize },
    #[error("invalid field value {value:?} for field {field:?} at column {col}")]
    InvalidFieldValue {
        value: String,
        field: String,
        col: usize,
    },
    #[error("{kind} field value {value:?} for field {field:?} is out of range at column {col}")]
    FieldOutOfRange {
        kind: &'static str,
        value: String,
        field: String,
        col: usize,
    },
    #[error("unterminated string value for field {field:?} starting at column {col}")]
    UnterminatedString { field: String, col: usize },
    #[error("invalid timestamp {value:?} at column {col}")]
    InvalidTimestamp { value: String, col: usize },
    #[error(
        "timestamp {value:?} at precision {precision} overflows i64 nanoseconds at column {col}"
    )]
    TimestampOverflow {
        value: String,
        precision: &'static str,
        col: usize,
    },
    #[error("unexpected {found:?} after the {after} at column {col}")]
    Trailing {
        found: String,
        after: &'static str,
        col: usize,
    },
    #[error("backslash at the end of the line escapes nothing at column {col}")]
    EscapeAtEnd { col: usize },
    #[error("invalid {what} {name:?} at column {col}: {reason}")]
    InvalidName {
        what: &'static str,
        name: String,
        reason: &'static str,
        col: usize,
    },
    #[error("duplicate tag key {key:?} at column {col}")]
    DuplicateTag { key: String, col: usize },
    #[error("{0}")]
    Model(ModelError),
}

/// Longest excerpt of input quoted in a message.
const SNIPPET_CHARS: usize = 64;

/// Copies at most [`SNIPPET_CHARS`] characters of `s` for an error message.
pub(crate) fn snippet(s: &str) -> String {
    match s.char_indices().nth(SNIPPET_CHARS) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}
