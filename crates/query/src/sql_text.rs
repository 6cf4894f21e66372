//! Small helpers over SQL text, shared by the rewrites of Tempora's extensions.

/// A double-quoted SQL identifier (quotes inside doubled).
pub fn quote(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Byte range of the keyword sequence `kws` (case-insensitive, outside quotes and comments,
/// separated by whitespace) at or after `from`.
pub fn find_keywords(sql: &str, kws: &[&str], from: usize) -> Option<(usize, usize)> {
    let b = sql.as_bytes();
    let mut i = from;
    let word_at = |i: usize, kw: &str| {
        let end = i + kw.len();
        end <= b.len()
            && b[i..end].eq_ignore_ascii_case(kw.as_bytes())
            && (i == 0 || !is_word(b[i - 1]) || !is_word(kw.as_bytes()[0]))
            && (end == b.len() || !is_word(b[end]) || !is_word(kw.as_bytes()[kw.len() - 1]))
    };
    while i < b.len() {
        match b[i] {
            b'\'' | b'"' => {
                // A quoted string or name; a doubled quote inside it is an escaped quote.
                let q = b[i];
                i += 1;
                while i < b.len() && (b[i] != q || b.get(i + 1) == Some(&q)) {
                    i += if b[i] == q { 2 } else { 1 };
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 1;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            _ if word_at(i, kws[0]) => {
                let mut end = i + kws[0].len();
                let mut ok = true;
                for kw in &kws[1..] {
                    let j = end + sql[end..].len() - sql[end..].trim_start().len();
                    if j == end || !word_at(j, kw) {
                        ok = false;
                        break;
                    }
                    end = j + kw.len();
                }
                if ok {
                    return Some((i, end));
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Part of an identifier: ASCII letters, digits, `_`, and any byte of a non-ASCII character.
fn is_word(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}
