//! InfluxDB line protocol: request bodies to [`RowBatch`]es, fast.
//!
//! `measurement[,tag=value...] field=value[,field=value...] [timestamp]`, one point per line
//! (<https://docs.influxdata.com/influxdb/v2/reference/syntax/line-protocol/>).
//!
//! Invariants:
//! - **A bad line never stops the others.** [`parse`] records it in [`ParsedBody::errors`]
//!   (1-based line number, message naming what is wrong and the 1-based byte column) and goes
//!   on with the next line. The only exception is [`ParseOptions::max_lines`]: the first line
//!   past it gets one error and parsing stops there.
//! - **Lines.** A line ends at `\n` (a `\r` before it is dropped), except inside a quoted field
//!   string, which may span lines; the row's line number is that of its first line. A string
//!   that is never closed ends its line at the first newline (the exact rule is in
//!   [`split_chunks`]). Blank lines and lines whose first non-blank byte is `#` are skipped.
//!   Invalid UTF-8 or more than [`ParseOptions::max_line_bytes`] bytes rejects that line only.
//!   [`split_chunks`] cuts at exactly the boundaries [`parse`] uses, so chunks can be parsed on
//!   several threads.
//! - **Escapes.** In the measurement a backslash escapes `,` and space; in tag keys, tag
//!   values and field keys it escapes `,`, `=` and space; everywhere in names `\\` is one
//!   backslash, and a backslash before any other byte is literal. In string values only `\"`
//!   and `\\` are escapes. A backslash that ends a line is an error.
//! - **Values.** `1i` is `i64`, `1u` is `u64` (both range-checked), `t T true True TRUE` and
//!   `f F false False FALSE` are booleans, `"..."` is a string and anything else must be a
//!   finite float (`1`, `-1.5`, `1.`, `.5`, `1e10`; no NaN, no infinity, no `+` sign).
//! - **Names** must pass [`tempora_model::validate_name`] (so `time` and `__x` are rejected);
//!   a tag value must not be empty and must not hold an unescaped `=`. A repeated tag key is an error; a repeated field key keeps
//!   the last value.
//! - **Time.** The optional timestamp is a signed integer in [`ParseOptions::precision`] units,
//!   scaled to nanoseconds with overflow checks. A line without one gets
//!   [`ParseOptions::default_time_ns`], truncated (floored) to the precision.
//! - **Output.** One [`RowBatch`] per measurement, in order of first appearance; rows keep
//!   input order. Tags are passed unsorted to [`tempora_model::RowBatchBuilder::push`], which
//!   sorts them.
//!
//! Speed: names are borrowed from the body (copied only when they hold an escape), all
//! per-line vectors are reused, lines are found with `memchr`, and numbers have hand-written
//! fast paths.

mod body;
mod error;
mod line;
mod number;
mod split;

use std::str::FromStr;

use tempora_model::RowBatch;

pub use error::Error;
pub use split::split_chunks;

use error::snippet;

/// The unit of timestamps in a body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Precision {
    /// Nanoseconds (`ns`, `n`).
    #[default]
    Ns,
    /// Microseconds (`us`, `u`, `µ`, `µs`).
    Us,
    /// Milliseconds (`ms`).
    Ms,
    /// Seconds (`s`).
    S,
    /// Minutes (`m`, InfluxDB v1 only).
    M,
    /// Hours (`h`, InfluxDB v1 only).
    H,
}

impl Precision {
    /// Nanoseconds per unit.
    pub fn nanos(self) -> i64 {
        match self {
            Precision::Ns => 1,
            Precision::Us => 1_000,
            Precision::Ms => 1_000_000,
            Precision::S => 1_000_000_000,
            Precision::M => 60_000_000_000,
            Precision::H => 3_600_000_000_000,
        }
    }

    /// The canonical short name (`ns`, `us`, `ms`, `s`, `m`, `h`).
    pub fn name(self) -> &'static str {
        match self {
            Precision::Ns => "ns",
            Precision::Us => "us",
            Precision::Ms => "ms",
            Precision::S => "s",
            Precision::M => "m",
            Precision::H => "h",
        }
    }
}

impl FromStr for Precision {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        Ok(match s {
            "ns" | "n" => Precision::Ns,
            "us" | "u" | "µ" | "µs" | "μ" | "μs" => Precision::Us,
            "ms" => Precision::Ms,
            "s" => Precision::S,
            "m" => Precision::M,
            "h" => Precision::H,
            _ => return Err(Error::UnknownPrecision(snippet(s))),
        })
    }
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// How to parse a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseOptions {
    pub precision: Precision,
    /// Time (nanoseconds) for lines without a timestamp, usually the server's clock.
    pub default_time_ns: i64,
    /// Longest accepted line in bytes (default 1 MiB).
    pub max_line_bytes: usize,
    /// Most non-blank, non-comment lines parsed (default 10,000,000).
    pub max_lines: usize,
}

impl Default for ParseOptions {
    fn default() -> Self {
        Self {
            precision: Precision::Ns,
            default_time_ns: 0,
            max_line_bytes: 1 << 20,
            max_lines: 10_000_000,
        }
    }
}

impl ParseOptions {
    /// Default limits with the given precision and time for lines without a timestamp.
    pub fn new(precision: Precision, default_time_ns: i64) -> Self {
        Self {
            precision,
            default_time_ns,
            ..Self::default()
        }
    }
}

/// A line that was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong and where (byte column), e.g.
    /// `invalid field value "1.2.3" for field "x" at column 17`.
    pub message: String,
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// The result of parsing a body.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParsedBody {
    /// One batch per measurement, in order of first appearance; rows in input order.
    pub batches: Vec<RowBatch>,
    /// Rows accepted, over all batches.
    pub rows: usize,
    /// Rejected lines in input order.
    pub errors: Vec<LineError>,
    /// For each batch, the 1-based source line of each row.
    pub line_numbers: Vec<Vec<usize>>,
}

/// Parses a whole request body.
pub fn parse(body: &[u8], opts: &ParseOptions) -> ParsedBody {
    parse_from_line(body, 1, opts)
}

/// Parses a body whose first line has number `first_line` (see [`split_chunks`]).
pub fn parse_from_line(body: &[u8], first_line: usize, opts: &ParseOptions) -> ParsedBody {
    body::run(body, first_line, opts, true)
}

/// Benchmark support, not part of the API.
#[doc(hidden)]
pub mod bench_support {
    /// Parses like [`crate::parse`] but never calls `RowBatchBuilder::push`, to measure the
    /// parser alone. Returns (lines parsed, lines rejected).
    pub fn parse_without_push(body: &[u8], opts: &crate::ParseOptions) -> (usize, usize) {
        let parsed = crate::body::run(body, 1, opts, false);
        (parsed.rows, parsed.errors.len())
    }
}
