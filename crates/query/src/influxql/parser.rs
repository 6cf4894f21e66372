//! A recursive-descent parser for InfluxQL's SELECT and SHOW statements (InfluxDB 1.8's
//! grammar); other statements are split off by tokens (a `;` in a string or regex does not
//! end one) and kept as text.
//!
//! Precedence, loosest first: OR, AND, comparisons (`= != <> < <= > >= =~ !~`), `+ -`,
//! `* / %`, then calls, parentheses and literals. Nesting is bounded by [`MAX_DEPTH`].

use super::ast::*;
use super::lexer::{Lexer, Tok};

/// Words that end an expression (never bare identifiers).
const RESERVED: [&str; 14] = [
    "SELECT", "FROM", "WHERE", "GROUP", "BY", "ORDER", "LIMIT", "OFFSET", "SLIMIT", "SOFFSET",
    "FILL", "AS", "AND", "OR",
];

/// Deepest expression nesting accepted.
pub const MAX_DEPTH: usize = 64;

/// Most operators (binary and unary) one statement may hold: the tree they build is walked
/// recursively, so its size is bounded, not only its parentheses.
pub const MAX_OPERATORS: usize = 256;

pub struct Parser<'a> {
    src: &'a str,
    lx: Lexer<'a>,
    peeked: Option<(Tok, usize)>,
    depth: usize,
    operators: usize,
}

type R<T> = Result<T, String>;

/// Every statement of `text`.
pub fn parse(text: &str) -> R<Vec<Statement>> {
    let mut p = Parser {
        src: text,
        lx: Lexer::new(text),
        peeked: None,
        depth: 0,
        operators: 0,
    };
    let mut out = Vec::new();
    loop {
        match p.peek()?.0 {
            Tok::Eof => return Ok(out),
            Tok::Semi => {
                p.next()?;
            }
            _ => out.push(p.statement()?),
        }
    }
}

impl Parser<'_> {
    fn peek(&mut self) -> R<&(Tok, usize)> {
        if self.peeked.is_none() {
            self.peeked = Some(self.lx.token()?);
        }
        Ok(self.peeked.as_ref().expect("just set"))
    }

    fn next(&mut self) -> R<(Tok, usize)> {
        match self.peeked.take() {
            Some(t) => Ok(t),
            None => self.lx.token(),
        }
    }

    fn unexpected<T>(&self, (t, at): (Tok, usize), want: &str) -> R<T> {
        let found = match t {
            Tok::Eof => "EOF".to_string(),
            Tok::Ident { name, .. } => name,
            Tok::Str(s) => format!("'{s}'"),
            other => format!("{other:?}"),
        };
        Err(format!(
            "error parsing query: found {found}, expected {want} at char {}",
            at + 1
        ))
    }

    fn kw(&mut self, kw: &str) -> R<bool> {
        if self.peek()?.0.is_kw(kw) {
            self.next()?;
            return Ok(true);
        }
        Ok(false)
    }

    fn expect_kw(&mut self, kw: &str) -> R<()> {
        if self.kw(kw)? {
            return Ok(());
        }
        let t = self.next()?;
        self.unexpected(t, kw)
    }

    fn expect(&mut self, want: Tok, name: &str) -> R<()> {
        let t = self.next()?;
        if t.0 == want {
            return Ok(());
        }
        self.unexpected(t, name)
    }

    fn ident(&mut self) -> R<String> {
        match self.next()? {
            (Tok::Ident { name, .. }, _) => Ok(name),
            t => self.unexpected(t, "identifier"),
        }
    }

    fn uint(&mut self) -> R<u64> {
        match self.next()? {
            (Tok::Int(n), _) if n >= 0 => Ok(n as u64),
            t => self.unexpected(t, "integer"),
        }
    }

    fn statement(&mut self) -> R<Statement> {
        self.operators = 0;
        let start = self.peek()?.1;
        if self.kw("SELECT")? {
            return Ok(Statement::Select(Box::new(self.select()?)));
        }
        if self.kw("SHOW")? {
            // A SHOW this parser does not type consumed only its SHOW: read on as text.
            if let Some(s) = self.show()? {
                return Ok(s);
            }
        }
        // Anything else: its text up to the next `;`.
        let mut end = start;
        loop {
            let (t, at) = self.peek()?.clone();
            if matches!(t, Tok::Semi | Tok::Eof) {
                break;
            }
            self.next()?;
            end = self.lx.pos().max(at);
        }
        Ok(Statement::Other(self.src[start..end].trim().to_string()))
    }

    /// A typed SHOW, which must end the statement.
    fn show(&mut self) -> R<Option<Statement>> {
        let s = self.show_parts()?;
        if s.is_some() {
            match self.peek()?.clone() {
                (Tok::Semi | Tok::Eof, _) => {}
                t => return self.unexpected(t, "; or EOF"),
            }
        }
        Ok(s)
    }

    /// `WHERE <condition>`, if next.
    fn optional_where(&mut self) -> R<Option<Expr>> {
        Ok(if self.kw("WHERE")? {
            Some(self.expr()?)
        } else {
            None
        })
    }

    fn show_parts(&mut self) -> R<Option<Statement>> {
        if self.kw("MEASUREMENTS")? {
            let db = self.on()?;
            let mut regex = None;
            if self.kw("WITH")? {
                self.expect_kw("MEASUREMENT")?;
                match self.next()? {
                    (Tok::Op("=~"), _) => regex = Some(self.regex()?),
                    (Tok::Op("="), _) => {
                        regex = Some(format!("^{}$", regex::escape(&self.ident()?)))
                    }
                    t => return self.unexpected(t, "=~ or ="),
                }
            }
            // InfluxDB keeps the measurements with series matching; all are listed here.
            self.optional_where()?;
            let page = self.page()?;
            return Ok(Some(Statement::ShowMeasurements { db, regex, page }));
        }
        if self.kw("FIELD")? {
            self.expect_kw("KEYS")?;
            let db = self.on()?;
            let from = self.optional_from()?;
            let page = self.page()?;
            return Ok(Some(Statement::ShowFieldKeys { db, from, page }));
        }
        if self.kw("SERIES")? {
            let db = self.on()?;
            let from = self.optional_from()?;
            let condition = self.optional_where()?;
            let page = self.page()?;
            return Ok(Some(Statement::ShowSeries {
                db,
                from,
                condition,
                page,
            }));
        }
        if self.kw("TAG")? {
            if self.kw("KEYS")? {
                let db = self.on()?;
                let from = self.optional_from()?;
                // InfluxDB keeps the keys of series matching; all are listed here.
                self.optional_where()?;
                let page = self.page()?;
                return Ok(Some(Statement::ShowTagKeys { db, from, page }));
            }
            self.expect_kw("VALUES")?;
            let db = self.on()?;
            let from = self.optional_from()?;
            self.expect_kw("WITH")?;
            self.expect_kw("KEY")?;
            let key = match self.next()? {
                (Tok::Op("="), _) => KeyMatch::Eq(self.ident()?),
                (Tok::Op("=~"), _) => KeyMatch::Regex(self.regex()?),
                (t, _) if t.is_kw("IN") => {
                    self.expect(Tok::LParen, "(")?;
                    let mut keys = vec![self.ident()?];
                    while self.peek()?.0 == Tok::Comma {
                        self.next()?;
                        keys.push(self.ident()?);
                    }
                    self.expect(Tok::RParen, ")")?;
                    KeyMatch::In(keys)
                }
                t => return self.unexpected(t, "=, =~ or IN"),
            };
            let condition = self.optional_where()?;
            let page = self.page()?;
            return Ok(Some(Statement::ShowTagValues {
                db,
                from,
                key,
                condition,
                page,
            }));
        }
        Ok(None)
    }

    fn on(&mut self) -> R<Option<String>> {
        Ok(if self.kw("ON")? {
            Some(self.ident()?)
        } else {
            None
        })
    }

    fn optional_from(&mut self) -> R<Option<Source>> {
        Ok(if self.kw("FROM")? {
            Some(self.source()?)
        } else {
            None
        })
    }

    /// A SHOW statement's `[LIMIT n] [OFFSET m]`.
    fn page(&mut self) -> R<Page> {
        let mut page = Page::default();
        if self.kw("LIMIT")? {
            page.limit = self.count()?;
        }
        if self.kw("OFFSET")? {
            page.offset = self.uint()?;
        }
        Ok(page)
    }

    /// A `LIMIT`'s or `SLIMIT`'s count: 0 is no limit, as in InfluxDB.
    fn count(&mut self) -> R<Option<u64>> {
        Ok(Some(self.uint()?).filter(|&n| n > 0))
    }

    /// A regex whose `/` is next.
    fn regex(&mut self) -> R<String> {
        match self.peeked.take() {
            Some((Tok::Op("/"), _)) => self.lx.regex(),
            Some(t) => self.unexpected(t, "regex"),
            None => match self.lx.token()? {
                (Tok::Op("/"), _) => self.lx.regex(),
                t => self.unexpected(t, "regex"),
            },
        }
    }

    /// `m`, `"db"."rp"."m"`, `db..m`, or `/re/`.
    fn source(&mut self) -> R<Source> {
        if self.peek()?.0 == Tok::Op("/") {
            return Ok(Source::Regex(self.regex()?));
        }
        let mut parts = vec![Some(self.ident()?)];
        while self.peek()?.0 == Tok::Dot {
            self.next()?;
            if self.peek()?.0 == Tok::Dot {
                parts.push(None);
                continue;
            }
            if self.peek()?.0 == Tok::Op("/") && parts.len() >= 2 {
                return Ok(Source::Regex(self.regex()?));
            }
            parts.push(Some(self.ident()?));
        }
        let name = parts.pop().flatten().unwrap_or_default();
        let db = match parts.len() {
            2 => parts[0].clone(),
            _ => None,
        };
        Ok(Source::Name { db, name })
    }

    fn select(&mut self) -> R<Select> {
        let mut fields = Vec::new();
        loop {
            let expr = self.expr()?;
            let alias = if self.kw("AS")? {
                Some(self.ident()?)
            } else {
                None
            };
            fields.push(Field { expr, alias });
            if self.peek()?.0 != Tok::Comma {
                break;
            }
            self.next()?;
        }
        self.expect_kw("FROM")?;
        let mut from = vec![self.source()?];
        while self.peek()?.0 == Tok::Comma {
            self.next()?;
            from.push(self.source()?);
        }
        let condition = if self.kw("WHERE")? {
            Some(self.expr()?)
        } else {
            None
        };
        let mut s = Select::new(fields, from, condition);
        if self.kw("GROUP")? {
            self.expect_kw("BY")?;
            self.group_by(&mut s)?;
        }
        if self.kw("FILL")? {
            self.expect(Tok::LParen, "(")?;
            s.fill = match self.next()? {
                (t, _) if t.is_kw("null") => Fill::Null,
                (t, _) if t.is_kw("none") => Fill::None,
                (t, _) if t.is_kw("previous") => Fill::Previous,
                (t, _) if t.is_kw("linear") => Fill::Linear,
                (Tok::Int(v), _) => Fill::Value(v as f64),
                (Tok::Float(v), _) => Fill::Value(v),
                (Tok::Op("-"), _) => match self.next()? {
                    (Tok::Int(v), _) => Fill::Value(-(v as f64)),
                    (Tok::Float(v), _) => Fill::Value(-v),
                    t => return self.unexpected(t, "number"),
                },
                t => return self.unexpected(t, "null, none, previous, linear or a number"),
            };
            self.expect(Tok::RParen, ")")?;
        }
        if self.kw("ORDER")? {
            self.expect_kw("BY")?;
            self.expect_kw("time")?;
            if self.kw("DESC")? {
                s.desc = true;
            } else {
                self.kw("ASC")?;
            }
        }
        loop {
            if self.kw("LIMIT")? {
                s.limit = self.count()?;
            } else if self.kw("OFFSET")? {
                s.offset = Some(self.uint()?);
            } else if self.kw("SLIMIT")? {
                s.slimit = self.count()?;
            } else if self.kw("SOFFSET")? {
                s.soffset = Some(self.uint()?);
            } else if self.kw("tz")? {
                self.expect(Tok::LParen, "(")?;
                match self.next()? {
                    (Tok::Str(z), _) if z == "UTC" || z == "Etc/UTC" => {}
                    (Tok::Str(z), at) => {
                        return Err(format!(
                            "error parsing query: tz('{z}') at char {}: only UTC is supported yet",
                            at + 1
                        ));
                    }
                    t => return self.unexpected(t, "string"),
                }
                self.expect(Tok::RParen, ")")?;
            } else {
                break;
            }
        }
        match self.peek()?.clone() {
            (Tok::Semi | Tok::Eof, _) => Ok(s),
            t => self.unexpected(t, "; or EOF"),
        }
    }

    fn group_by(&mut self, s: &mut Select) -> R<()> {
        let mut tags = Vec::new();
        loop {
            if self.peek()?.0.is_kw("time") {
                self.next()?;
                self.expect(Tok::LParen, "(")?;
                let width = self.duration()?;
                let mut offset = 0;
                if self.peek()?.0 == Tok::Comma {
                    self.next()?;
                    let neg = self.peek()?.0 == Tok::Op("-");
                    if neg {
                        self.next()?;
                    }
                    offset = self.duration()? * if neg { -1 } else { 1 };
                }
                self.expect(Tok::RParen, ")")?;
                if width <= 0 {
                    return Err("error parsing query: group by time must be positive".into());
                }
                s.group_time = Some((width, offset.rem_euclid(width)));
            } else if self.peek()?.0 == Tok::Op("*") {
                self.next()?;
                s.group_tags = GroupTags::All;
            } else {
                tags.push(self.ident()?);
            }
            if self.peek()?.0 != Tok::Comma {
                break;
            }
            self.next()?;
        }
        if !tags.is_empty() && s.group_tags != GroupTags::All {
            s.group_tags = GroupTags::Names(tags);
        }
        Ok(())
    }

    fn duration(&mut self) -> R<i64> {
        match self.next()? {
            (Tok::Dur(d), _) => Ok(d),
            t => self.unexpected(t, "duration"),
        }
    }

    fn expr(&mut self) -> R<Expr> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(format!(
                "error parsing query: expressions nest deeper than {MAX_DEPTH}"
            ));
        }
        let e = self.binary(0);
        self.depth -= 1;
        e
    }

    /// Operators by binding strength; `level` is the loosest one accepted.
    fn binary(&mut self, level: usize) -> R<Expr> {
        const LEVELS: [&[&str]; 5] = [
            &["OR"],
            &["AND"],
            &["=", "!=", "<>", "<", "<=", ">", ">=", "=~", "!~"],
            &["+", "-"],
            &["*", "/", "%"],
        ];
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut left = self.binary(level + 1)?;
        loop {
            let op = match &self.peek()?.0 {
                Tok::Op(o) if LEVELS[level].contains(o) => *o,
                t if level == 0 && t.is_kw("OR") => "OR",
                t if level == 1 && t.is_kw("AND") => "AND",
                _ => return Ok(left),
            };
            self.next()?;
            self.operator()?;
            let right = if matches!(op, "=~" | "!~") {
                Expr::Regex(self.regex()?)
            } else {
                self.binary(level + 1)?
            };
            left = Expr::Binary(Box::new(left), op, Box::new(right));
        }
    }

    /// Counts one operator against [`MAX_OPERATORS`].
    fn operator(&mut self) -> R<()> {
        self.operators += 1;
        if self.operators > MAX_OPERATORS {
            return Err(format!(
                "error parsing query: more than {MAX_OPERATORS} operators in one statement"
            ));
        }
        Ok(())
    }

    fn unary(&mut self) -> R<Expr> {
        let t = self.next()?;
        Ok(match t.0 {
            Tok::Int(v) => Expr::Int(v),
            Tok::Float(v) => Expr::Float(v),
            Tok::Str(s) => Expr::Str(s),
            Tok::Dur(d) => Expr::Dur(d),
            Tok::Op("*") => Expr::Star,
            Tok::Op("-") => {
                // A run of minus signs is read in a loop, not by recursion.
                self.operator()?;
                let mut negative = true;
                while self.peek()?.0 == Tok::Op("-") {
                    self.next()?;
                    self.operator()?;
                    negative = !negative;
                }
                match (negative, self.unary()?) {
                    (false, e) => e,
                    (true, Expr::Int(v)) => Expr::Int(v.wrapping_neg()),
                    (true, Expr::Float(v)) => Expr::Float(-v),
                    (true, Expr::Dur(v)) => Expr::Dur(v.wrapping_neg()),
                    (true, e) => Expr::Binary(Box::new(Expr::Int(0)), "-", Box::new(e)),
                }
            }
            Tok::Op("/") => Expr::Regex(self.lx.regex()?),
            Tok::LParen => {
                let e = self.expr()?;
                self.expect(Tok::RParen, ")")?;
                e
            }
            Tok::Ident {
                ref name,
                quoted: false,
            } if RESERVED.iter().any(|k| name.eq_ignore_ascii_case(k)) => {
                return self.unexpected(t, "identifier, string, number, bool");
            }
            Tok::Ident { name, quoted } => {
                if !quoted && self.peek()?.0 == Tok::LParen {
                    self.next()?;
                    let mut args = Vec::new();
                    if self.peek()?.0 != Tok::RParen {
                        loop {
                            args.push(self.expr()?);
                            if self.peek()?.0 != Tok::Comma {
                                break;
                            }
                            self.next()?;
                        }
                    }
                    self.expect(Tok::RParen, ")")?;
                    if name.eq_ignore_ascii_case("now") && args.is_empty() {
                        return Ok(Expr::Now);
                    }
                    return Ok(Expr::Call(name.to_ascii_lowercase(), args));
                }
                if !quoted && name.eq_ignore_ascii_case("true") {
                    return Ok(Expr::Bool(true));
                }
                if !quoted && name.eq_ignore_ascii_case("false") {
                    return Ok(Expr::Bool(false));
                }
                let hint = if self.peek()?.0 == Tok::Op("::") {
                    self.next()?;
                    Some(self.ident()?.to_ascii_lowercase())
                } else {
                    None
                };
                Expr::Var(name, hint)
            }
            _ => return self.unexpected(t, "identifier, string, number or bool"),
        })
    }
}
