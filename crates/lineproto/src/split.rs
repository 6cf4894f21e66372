//! Finding where lines end, and splitting a body into chunks at line boundaries.
//!
//! A *logical line* ends at the first `\n` that is not inside a field's string value. A string
//! value is a `"` that is the first byte of a field value (right after the `=` that follows a
//! field key, in the field section) up to the next `"` not escaped by a backslash. A line whose
//! first physical line holds no `"` at all is just that physical line (the fast path). Lines
//! that are not valid are still split by these rules; a string that is never closed ends its
//! line at the first physical newline. Comment lines (`#` after optional blanks) are one
//! physical line. The parser and [`split_chunks`] use this one function, so they agree on
//! every boundary.

use memchr::{memchr, memchr_iter, memchr2};

/// Returns the end of the logical line that starts at `start` (the index of its terminating
/// `\n`, or `body.len()`) and how many newlines the line holds inside string values.
#[inline]
pub(crate) fn line_end(body: &[u8], start: usize) -> (usize, usize) {
    // Two single-byte searches beat one two-byte search: the second runs on cached bytes.
    let nl = physical_end(body, start);
    if memchr(b'"', &body[start..nl]).is_none() {
        return (nl, 0);
    }
    let end = slow_line_end(body, start);
    (end, memchr_iter(b'\n', &body[start..end]).count())
}

/// Index of the first `\n` at or after `from`, or `body.len()`.
#[inline]
fn physical_end(body: &[u8], from: usize) -> usize {
    memchr(b'\n', &body[from..]).map_or(body.len(), |i| from + i)
}

/// Where the scanner is within a line.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    /// Measurement and tags: backslash escapes, a space starts the fields.
    Series,
    /// Blanks before the field section.
    Gap,
    /// A field key: backslash escapes, `=` starts the value.
    Key,
    /// The first byte of a field value.
    ValueStart,
    /// An unquoted field value (or garbage after a string).
    Plain,
}

/// Structural scan of a line whose first physical line holds a `"`.
#[cold]
fn slow_line_end(body: &[u8], start: usize) -> usize {
    let mut i = start;
    while i < body.len() && matches!(body[i], b' ' | b'\t') {
        i += 1;
    }
    if body.get(i) == Some(&b'#') {
        return physical_end(body, i);
    }
    let mut state = State::Series;
    while i < body.len() {
        let b = body[i];
        if b == b'\n' {
            return i;
        }
        match state {
            State::Series | State::Key if b == b'\\' => {
                // Escapes the next byte, unless that ends the line.
                i += if body.get(i + 1) == Some(&b'\n') {
                    1
                } else {
                    2
                };
                continue;
            }
            State::Series if b == b' ' => state = State::Gap,
            State::Gap if b != b' ' => continue_as(&mut state, State::Key, &mut i),
            State::Key if b == b'=' => state = State::ValueStart,
            State::Key if b == b' ' => return physical_end(body, i),
            State::ValueStart if b == b'"' => match closing_quote(body, i + 1) {
                Some(q) => {
                    i = q + 1;
                    state = State::Plain;
                    continue;
                }
                None => return physical_end(body, start),
            },
            State::ValueStart => continue_as(&mut state, State::Plain, &mut i),
            State::Plain if b == b',' => state = State::Key,
            State::Plain if b == b' ' => return physical_end(body, i),
            _ => {}
        }
        i += 1;
    }
    body.len()
}

/// Switches state without consuming the byte (the loop's `i += 1` is undone).
#[inline]
fn continue_as(state: &mut State, next: State, i: &mut usize) {
    *state = next;
    *i = i.wrapping_sub(1);
}

/// Index of the `"` closing a string whose content starts at `from`, if any.
pub(crate) fn closing_quote(body: &[u8], mut from: usize) -> Option<usize> {
    loop {
        let j = from + memchr2(b'"', b'\\', body.get(from..)?)?;
        if body[j] == b'"' {
            return Some(j);
        }
        from = j + 2;
    }
}

/// Splits `body` at logical line boundaries into about `n` chunks of similar size. Returns
/// each chunk with the 1-based line number of its first line, so that parsing each chunk with
/// [`crate::parse_from_line`] gives the same rows and line numbers as parsing the whole body.
/// Every byte is in exactly one chunk; chunks are never empty (an empty body gives none).
///
/// Chunks split only at newlines outside string values: a line ends at the first `\n` that is
/// not inside a field's quoted string (a `"` that starts a field value, up to the next `"` not
/// escaped by a backslash). If that string is never closed, the line ends at its first `\n`.
/// Comment lines end at their first `\n`. Each chunk's rows and errors carry global line
/// numbers; [`ParseOptions::max_lines`](crate::ParseOptions::max_lines) applies per chunk.
pub fn split_chunks(body: &[u8], n: usize) -> Vec<(usize, &[u8])> {
    let target = body.len().div_ceil(n.max(1)).max(1);
    let mut out = Vec::with_capacity(n.max(1));
    let (mut start, mut line) = (0, 1);
    while start < body.len() {
        let end = if body.len() - start <= target {
            body.len()
        } else {
            boundary_after(body, start, start + target)
        };
        let chunk = &body[start..end];
        out.push((line, chunk));
        line += memchr_iter(b'\n', chunk).count();
        start = end;
    }
    out
}

/// The first logical line start after `want`, given that `start` is a line start.
fn boundary_after(body: &[u8], start: usize, want: usize) -> usize {
    let candidate = physical_end(body, want).saturating_add(1).min(body.len());
    if memchr(b'"', &body[start..candidate]).is_none() {
        // No quote, so every newline in between ends a logical line.
        return candidate;
    }
    let mut pos = start;
    while pos < want {
        pos = (line_end(body, pos).0 + 1).min(body.len());
    }
    pos
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_ends() {
        let cases: &[(&str, &str, usize)] = &[
            ("plain", "m f=1\nx", 5),
            ("no newline", "m f=1", 5),
            ("string spans", "m s=\"a\nb\" 1\nx", 11),
            ("quote in tag", "m,t=\"a f=1\nx", 10),
            ("quote in measurement", "\"m f=1\nx", 6),
            ("escaped quote", "m s=\"a\\\"\nb\"\nx", 11),
            ("escaped backslash", "m s=\"a\\\\\"\nb", 9),
            ("unterminated", "m s=\"a\nb f=1\nc", 6),
            ("comment", "# \"a\nb\"\nc", 4),
            ("second field", "m a=1,s=\"x\ny\"\nz", 13),
            ("quote in key", "m \"a=1\nb", 6),
            ("escaped space", "m\\ x s=\"a\nb\"\nz", 12),
            ("garbage after string", "m s=\"a\"b\"\n\"\nz", 9),
            ("timestamp", "m s=\"a\nb\" \"\nz", 11),
            ("crlf", "m s=\"a\r\nb\"\r\nz", 11),
        ];
        for (name, body, want) in cases {
            assert_eq!(line_end(body.as_bytes(), 0).0, *want, "{name}");
        }
    }

    #[test]
    fn chunks_cover_body() {
        let body = b"a f=1\nb s=\"x\ny\"\nc f=2\n\nd f=3";
        for n in 1..12 {
            let chunks = split_chunks(body, n);
            let joined: Vec<u8> = chunks.iter().flat_map(|(_, c)| c.iter().copied()).collect();
            assert_eq!(joined, body, "n={n}");
            for (line, c) in &chunks {
                let before = c.as_ptr() as usize - body.as_ptr() as usize;
                assert_eq!(*line, 1 + memchr_iter(b'\n', &body[..before]).count());
                assert!(!c.starts_with(b"y"), "n={n}: split inside a string");
            }
        }
        assert!(split_chunks(b"", 4).is_empty());
    }
}
