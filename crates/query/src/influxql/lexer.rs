//! InfluxQL's tokens (InfluxDB 1.8's spec): identifiers bare or `"quoted"`, `'strings'`,
//! numbers, durations (`10s`, `1h30m`, and `1700000000000ms`, which Grafana writes as an
//! epoch), operators, and regular expressions `/…/`, which are read only where the grammar
//! expects one ([`Lexer::regex`]), since `/` is also division.
//!
//! Invariants: every token carries its byte offset; an error names the offset; the lexer never
//! reads past its input and every step consumes at least one byte.

#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// A name; `quoted` names are never keywords.
    Ident {
        name: String,
        quoted: bool,
    },
    Str(String),
    Int(i64),
    Float(f64),
    /// A duration in nanoseconds.
    Dur(i64),
    /// `=`, `!=`, `<>`, `<`, `<=`, `>`, `>=`, `=~`, `!~`, `+`, `-`, `*`, `/`, `%`, `::`
    Op(&'static str),
    LParen,
    RParen,
    Comma,
    Dot,
    Semi,
    Eof,
}

impl Tok {
    /// Whether this is the (unquoted, case-insensitive) keyword `kw`.
    pub fn is_kw(&self, kw: &str) -> bool {
        matches!(self, Tok::Ident { name, quoted: false } if name.eq_ignore_ascii_case(kw))
    }
}

pub struct Lexer<'a> {
    src: &'a str,
    pos: usize,
}

/// Nanoseconds per duration unit, longest unit names first.
const UNITS: [(&str, i64); 9] = [
    ("ns", 1),
    ("ms", 1_000_000),
    ("us", 1_000),
    ("µs", 1_000),
    ("u", 1_000),
    ("µ", 1_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];
const LONG_UNITS: [(&str, i64); 2] = [("d", 86_400_000_000_000), ("w", 604_800_000_000_000)];

impl<'a> Lexer<'a> {
    pub fn new(src: &'a str) -> Self {
        Self { src, pos: 0 }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    fn rest(&self) -> &'a str {
        &self.src[self.pos..]
    }

    fn err(&self, at: usize, what: &str) -> String {
        format!("error parsing query: {what} at char {}", at + 1)
    }

    fn skip_space(&mut self) {
        loop {
            let r = self.rest();
            let t = r.trim_start();
            self.pos += r.len() - t.len();
            if let Some(after) = t.strip_prefix("--") {
                self.pos += 2 + after.find('\n').unwrap_or(after.len());
            } else if t.starts_with("/*") {
                self.pos += t.find("*/").map_or(t.len(), |e| e + 2);
            } else {
                return;
            }
        }
    }

    /// The next token and its offset.
    pub fn token(&mut self) -> Result<(Tok, usize), String> {
        self.skip_space();
        let at = self.pos;
        let r = self.rest();
        let Some(c) = r.chars().next() else {
            return Ok((Tok::Eof, at));
        };
        let tok = match c {
            '"' => Tok::Ident {
                name: self.quoted('"')?,
                quoted: true,
            },
            '\'' => Tok::Str(self.quoted('\'')?),
            '0'..='9' => return self.number(at),
            '.' if r[1..].starts_with(|c: char| c.is_ascii_digit()) => return self.number(at),
            c if c.is_alphabetic() || c == '_' => {
                let n = r
                    .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .unwrap_or(r.len());
                self.pos += n;
                Tok::Ident {
                    name: r[..n].to_string(),
                    quoted: false,
                }
            }
            _ => {
                let two = r.get(..2).unwrap_or("");
                let (tok, n) = match two {
                    "!=" => (Tok::Op("!="), 2),
                    "<>" => (Tok::Op("<>"), 2),
                    "<=" => (Tok::Op("<="), 2),
                    ">=" => (Tok::Op(">="), 2),
                    "=~" => (Tok::Op("=~"), 2),
                    "!~" => (Tok::Op("!~"), 2),
                    "::" => (Tok::Op("::"), 2),
                    _ => match c {
                        '=' => (Tok::Op("="), 1),
                        '<' => (Tok::Op("<"), 1),
                        '>' => (Tok::Op(">"), 1),
                        '+' => (Tok::Op("+"), 1),
                        '-' => (Tok::Op("-"), 1),
                        '*' => (Tok::Op("*"), 1),
                        '/' => (Tok::Op("/"), 1),
                        '%' => (Tok::Op("%"), 1),
                        '(' => (Tok::LParen, 1),
                        ')' => (Tok::RParen, 1),
                        ',' => (Tok::Comma, 1),
                        '.' => (Tok::Dot, 1),
                        ';' => (Tok::Semi, 1),
                        other => return Err(self.err(at, &format!("unexpected {other:?}"))),
                    },
                };
                self.pos += n;
                tok
            }
        };
        Ok((tok, at))
    }

    /// A quoted string or identifier; `\` escapes the next character.
    fn quoted(&mut self, q: char) -> Result<String, String> {
        let start = self.pos;
        let mut out = String::new();
        let mut chars = self.rest().char_indices().skip(1);
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, 'n')) => out.push('\n'),
                    Some((_, e)) => out.push(e),
                    None => break,
                },
                c if c == q => {
                    self.pos += i + 1;
                    return Ok(out);
                }
                c => out.push(c),
            }
        }
        Err(self.err(start, &format!("unterminated {q}")))
    }

    /// An integer, float or duration (a compound duration such as `1h30m` is summed).
    fn number(&mut self, at: usize) -> Result<(Tok, usize), String> {
        let r = self.rest();
        let n = r
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(r.len());
        let text = &r[..n];
        self.pos += n;
        let unit = self.unit();
        if let Some(mut ns) = unit {
            let v: i64 = text
                .parse()
                .map_err(|_| self.err(at, &format!("invalid duration {text:?}")))?;
            ns = v
                .checked_mul(ns)
                .ok_or_else(|| self.err(at, "duration out of range"))?;
            // Compound: 1h30m.
            while self.rest().starts_with(|c: char| c.is_ascii_digit()) {
                let save = self.pos;
                let r = self.rest();
                let d = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
                let part: i64 = r[..d].parse().unwrap_or(0);
                self.pos += d;
                let Some(u) = self.unit() else {
                    self.pos = save;
                    break;
                };
                ns = part
                    .checked_mul(u)
                    .and_then(|p| ns.checked_add(p))
                    .ok_or_else(|| self.err(at, "duration out of range"))?;
            }
            return Ok((Tok::Dur(ns), at));
        }
        if text.contains('.') {
            let v = text
                .parse()
                .map_err(|_| self.err(at, &format!("invalid number {text:?}")))?;
            return Ok((Tok::Float(v), at));
        }
        match text.parse::<i64>() {
            Ok(v) => Ok((Tok::Int(v), at)),
            Err(_) => text
                .parse::<f64>()
                .map(|v| (Tok::Float(v), at))
                .map_err(|_| self.err(at, &format!("invalid number {text:?}"))),
        }
    }

    /// A duration unit right after a number (not followed by more name characters).
    fn unit(&mut self) -> Option<i64> {
        let r = self.rest();
        for (u, ns) in UNITS.iter().chain(LONG_UNITS.iter()) {
            if let Some(after) = r.strip_prefix(u)
                && !after.starts_with(|c: char| c.is_alphabetic() || c == '_')
            {
                self.pos += u.len();
                return Some(*ns);
            }
        }
        None
    }

    /// A regular expression whose opening `/` was just read: up to the next unescaped `/`
    /// (`\/` stands for `/`).
    pub fn regex(&mut self) -> Result<String, String> {
        let start = self.pos;
        let mut out = String::new();
        let mut chars = self.rest().char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, '/')) => out.push('/'),
                    Some((_, e)) => {
                        out.push('\\');
                        out.push(e);
                    }
                    None => break,
                },
                '/' => {
                    self.pos += i + 1;
                    return Ok(out);
                }
                c => out.push(c),
            }
        }
        Err(self.err(start, "unterminated regex"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(s: &str) -> Vec<Tok> {
        let mut l = Lexer::new(s);
        let mut out = Vec::new();
        loop {
            let (t, _) = l.token().unwrap();
            if t == Tok::Eof {
                return out;
            }
            out.push(t);
        }
    }

    #[test]
    fn tokens() {
        let id = |n: &str, q| Tok::Ident {
            name: n.into(),
            quoted: q,
        };
        assert_eq!(
            all(r#"SELECT mean("usage") FROM "cpu" WHERE time >= 1700000000000ms and x != 'a\'b'"#),
            vec![
                id("SELECT", false),
                id("mean", false),
                Tok::LParen,
                id("usage", true),
                Tok::RParen,
                id("FROM", false),
                id("cpu", true),
                id("WHERE", false),
                id("time", false),
                Tok::Op(">="),
                Tok::Dur(1_700_000_000_000_000_000),
                id("and", false),
                id("x", false),
                Tok::Op("!="),
                Tok::Str("a'b".into()),
            ]
        );
        assert_eq!(
            all("1h30m 10s 2.5 7 5m"),
            vec![
                Tok::Dur(5_400_000_000_000),
                Tok::Dur(10_000_000_000),
                Tok::Float(2.5),
                Tok::Int(7),
                Tok::Dur(300_000_000_000),
            ]
        );
        assert_eq!(
            all("a::tag -- c\n/* d */ ;"),
            vec![id("a", false), Tok::Op("::"), id("tag", false), Tok::Semi]
        );
        let mut l = Lexer::new("/^a\\/b$/ x");
        assert_eq!(l.token().unwrap().0, Tok::Op("/"));
        assert_eq!(l.regex().unwrap(), "^a/b$");
        for (bad, want) in [
            ("'abc", "unterminated '"),
            ("a ? b", "unexpected '?'"),
            ("99999999999999h", "out of range"),
        ] {
            let mut l = Lexer::new(bad);
            let e = (0..4).find_map(|_| l.token().err()).expect(bad);
            assert!(e.contains(want), "{bad}: {e}");
        }
    }
}
