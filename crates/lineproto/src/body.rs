//! The per-body driver: splits lines, parses each, and adds rows to one builder per table.
//!
//! Each line is parsed first with borrowed names ([`Borrowed`]), whose tag and field vectors
//! are passed to `RowBatchBuilder::push` as they are; only a line with an escape in a name is
//! parsed again with [`Unescaped`]. All per-line vectors live as long as the body and are
//! reused, so the fast path allocates nothing per line except string field values.

use std::collections::HashMap;

use tempora_model::{FieldValue, ModelError, RowBatchBuilder, Timestamp};

use crate::error::{Error, snippet};
use crate::line::{Borrowed, Fail, Line, Unescaped, name_error, parse_line};
use crate::split::line_end;
use crate::{LineError, ParseOptions, ParsedBody};

/// Parses `body`, whose first line is numbered `first_line`. With `push` false rows are
/// parsed and counted but not added (for benchmarks).
pub(crate) fn run(body: &[u8], first_line: usize, opts: &ParseOptions, push: bool) -> ParsedBody {
    let mut d = Driver::new(opts, push);
    let (mut pos, mut line_no, mut data_lines) = (0, first_line, 0usize);
    while pos < body.len() {
        let (end, inner_newlines) = line_end(body, pos);
        let raw = &body[pos..end];
        let this_line = line_no;
        line_no += 1 + inner_newlines;
        pos = end + 1;
        let content = raw.strip_suffix(b"\r").unwrap_or(raw);
        let lead = content
            .iter()
            .position(|&b| b != b' ' && b != b'\t')
            .unwrap_or(content.len());
        if lead == content.len() || content[lead] == b'#' {
            continue;
        }
        data_lines += 1;
        if data_lines > opts.max_lines {
            let limit = opts.max_lines;
            d.error(this_line, Error::TooManyLines { limit });
            break;
        }
        if let Err(e) = d.line(content, lead, this_line) {
            d.error(this_line, e);
        }
    }
    d.finish()
}

/// One measurement's rows.
struct Table {
    builder: RowBatchBuilder,
    lines: Vec<usize>,
}

/// The tables of a body, in order of first appearance.
#[derive(Default)]
struct Tables<'a> {
    tables: Vec<Table>,
    by_name: HashMap<String, usize>,
    /// The raw measurement of the last table used, and its index.
    last: Option<(&'a str, usize)>,
}

impl<'a> Tables<'a> {
    /// The index of table `name` (written `raw`, at byte `at`), created on first use.
    #[inline]
    fn index(&mut self, raw: &'a str, name: &str, at: usize) -> Result<usize, Error> {
        if let Some((last, i)) = self.last
            && last == raw
        {
            return Ok(i);
        }
        let i = match self.by_name.get(name) {
            Some(&i) => i,
            None => {
                let builder =
                    RowBatchBuilder::new(name).map_err(|e| name_error("measurement", e, at))?;
                self.tables.push(Table {
                    builder,
                    lines: Vec::new(),
                });
                self.by_name.insert(name.to_string(), self.tables.len() - 1);
                self.tables.len() - 1
            }
        };
        self.last = Some((raw, i));
        Ok(i)
    }

    /// Adds a row to table `t`.
    #[inline]
    fn push(
        &mut self,
        t: usize,
        tags: &[(&str, &str)],
        fields: &[(&str, FieldValue)],
        time: i64,
        line_no: usize,
    ) -> Result<(), ModelError> {
        let table = &mut self.tables[t];
        table.builder.push(tags, fields, Timestamp(time))?;
        table.lines.push(line_no);
        Ok(())
    }
}

/// State for one body.
struct Driver<'a> {
    opts: &'a ParseOptions,
    tables: Tables<'a>,
    fast: Line<'a, Borrowed>,
    slow: Line<'a, Unescaped>,
    errors: Vec<LineError>,
    rows: usize,
    /// False only for benchmarks: parse, but add no rows.
    push: bool,
}

impl<'a> Driver<'a> {
    fn new(opts: &'a ParseOptions, push: bool) -> Self {
        Self {
            opts,
            tables: Tables::default(),
            fast: Line::default(),
            slow: Line::default(),
            errors: Vec::new(),
            rows: 0,
            push,
        }
    }

    #[cold]
    fn error(&mut self, line: usize, e: Error) {
        self.errors.push(LineError {
            line,
            message: e.to_string(),
        });
    }

    /// Parses one non-blank line (`start` is the offset of its first non-blank byte) and
    /// adds its row.
    #[inline]
    fn line(&mut self, content: &'a [u8], start: usize, line_no: usize) -> Result<(), Error> {
        if content.len() > self.opts.max_line_bytes {
            return Err(Error::LineTooLong {
                len: content.len(),
                limit: self.opts.max_line_bytes,
            });
        }
        let s = std::str::from_utf8(content).map_err(|e| Error::InvalidUtf8 {
            col: e.valid_up_to() + 1,
        })?;
        let (scale, precision) = (self.opts.precision.nanos(), self.opts.precision.name());
        match parse_line(s, start, scale, precision, &mut self.fast) {
            Ok(()) => {}
            Err(Fail::Bad(e)) => return Err(*e),
            Err(Fail::Escaped) => return self.slow_line(s, start, line_no),
        }
        let line = &self.fast;
        let t = self
            .tables
            .index(line.raw_measurement, line.measurement, start)?;
        let time = line.time.unwrap_or_else(|| self.default_time());
        if !self.push {
            self.rows += 1;
            return Ok(());
        }
        match self.tables.push(t, &line.tags, &line.fields, time, line_no) {
            Ok(()) => {
                self.rows += 1;
                Ok(())
            }
            Err(e) => Err(push_error(
                e,
                line.tags.iter().map(|t| t.0),
                &line.tag_offsets,
            )),
        }
    }

    /// A line with escaped names: parse again, copying them.
    #[cold]
    fn slow_line(&mut self, s: &'a str, start: usize, line_no: usize) -> Result<(), Error> {
        let (scale, precision) = (self.opts.precision.nanos(), self.opts.precision.name());
        match parse_line(s, start, scale, precision, &mut self.slow) {
            Ok(()) => {}
            Err(Fail::Bad(e)) => return Err(*e),
            Err(Fail::Escaped) => unreachable!("unescaped names never ask for another pass"),
        }
        let line = &self.slow;
        let t = self
            .tables
            .index(line.raw_measurement, &line.measurement, start)?;
        let time = line.time.unwrap_or_else(|| self.default_time());
        if !self.push {
            self.rows += 1;
            return Ok(());
        }
        let tags: Vec<(&str, &str)> = line.tags.iter().map(|(k, v)| (&**k, &**v)).collect();
        let fields: Vec<(&str, FieldValue)> =
            line.fields.iter().map(|(k, v)| (&**k, v.clone())).collect();
        match self.tables.push(t, &tags, &fields, time, line_no) {
            Ok(()) => {
                self.rows += 1;
                Ok(())
            }
            Err(e) => Err(push_error(e, tags.iter().map(|t| t.0), &line.tag_offsets)),
        }
    }

    /// Time for a line without a timestamp: the default, floored to the precision.
    fn default_time(&self) -> i64 {
        let unit = self.opts.precision.nanos();
        self.opts.default_time_ns.div_euclid(unit) * unit
    }

    fn finish(self) -> ParsedBody {
        let (batches, line_numbers) = self
            .tables
            .tables
            .into_iter()
            .filter(|t| !t.lines.is_empty())
            .map(|t| (t.builder.finish(), t.lines))
            .unzip();
        ParsedBody {
            batches,
            rows: self.rows,
            errors: self.errors,
            line_numbers,
        }
    }
}

/// Positions an error from `RowBatchBuilder::push` where possible: a duplicate tag key is
/// reported at its second occurrence.
#[cold]
fn push_error<'k>(e: ModelError, keys: impl Iterator<Item = &'k str>, offsets: &[usize]) -> Error {
    match e {
        ModelError::DuplicateTag { key } => {
            let col = keys
                .zip(offsets)
                .filter(|(k, _)| *k == key)
                .nth(1)
                .map_or(0, |(_, &at)| at + 1);
            Error::DuplicateTag {
                key: snippet(&key),
                col,
            }
        }
        other => Error::Model(other),
    }
}
