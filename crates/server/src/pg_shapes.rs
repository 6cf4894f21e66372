//! The shape of each PostgreSQL client message body, checked before pgwire decodes it.
//!
//! pgwire's decoders read a body by its fields with `bytes::Buf` getters, which panic past
//! the end of the buffer, and they read from the whole receive buffer rather than from the
//! declared message: a field list longer than its length field reads into the next message,
//! a shorter one leaves bytes that are then decoded as a message of their own. So every body
//! is walked here first, field by field, and must end exactly where its length says — as
//! PostgreSQL itself requires ("invalid message format").
//!
//! Invariants:
//! - Pure functions over bytes; the verdict names the message, the field and the byte.
//! - A body accepted here is one pgwire reads to exactly its end without a panic.

/// Start-up request codes (the second word of an untyped message).
pub const CANCEL_REQUEST: u32 = 80_877_102;
pub const SSL_REQUEST: u32 = 80_877_103;
pub const GSSENC_REQUEST: u32 = 80_877_104;
/// Protocol 3 in the start-up message's version word.
const PROTOCOL_3: u32 = 3;

/// Whether the body of a typed message of `kind` is walked ([`typed`]) or passed whole to
/// pgwire (copy data and the password family, whose bodies are opaque bytes to it).
pub fn walks(kind: u8) -> bool {
    !matches!(kind, b'd' | b'p')
}

/// The message types a client may send after start-up.
pub fn known(kind: u8) -> bool {
    matches!(
        kind,
        b'p' | b'Q' | b'P' | b'B' | b'C' | b'D' | b'E' | b'H' | b'S' | b'X' | b'd' | b'f' | b'c'
    )
}

/// The name PostgreSQL's documentation gives messages of `kind`.
pub fn name(kind: u8) -> &'static str {
    match kind {
        b'p' => "password",
        b'Q' => "Query",
        b'P' => "Parse",
        b'B' => "Bind",
        b'C' => "Close",
        b'D' => "Describe",
        b'E' => "Execute",
        b'H' => "Flush",
        b'S' => "Sync",
        b'X' => "Terminate",
        b'd' => "CopyData",
        b'f' => "CopyFail",
        b'c' => "CopyDone",
        _ => "unknown",
    }
}

/// Checks the body of a typed message (after its type byte and length).
pub fn typed(kind: u8, body: &[u8]) -> Result<(), String> {
    let mut c = Cursor { b: body, at: 0 };
    match kind {
        b'Q' | b'f' => {
            c.cstr("text")?;
        }
        b'P' => {
            c.cstr("statement name")?;
            c.cstr("query")?;
            let n = c.u16("parameter type count")?;
            c.skip(4 * n as usize, "parameter types")?;
        }
        b'B' => bind(&mut c)?,
        b'C' | b'D' => {
            c.skip(1, "target type")?;
            c.cstr("name")?;
        }
        b'E' => {
            c.cstr("portal name")?;
            c.skip(4, "row limit")?;
        }
        _ => {}
    }
    if walks(kind) {
        c.end()?;
    }
    Ok(())
}

fn bind(c: &mut Cursor<'_>) -> Result<(), String> {
    c.cstr("portal name")?;
    c.cstr("statement name")?;
    let n = c.u16("parameter format count")?;
    c.skip(2 * n as usize, "parameter formats")?;
    let n = c.u16("parameter count")?;
    for i in 1..=n {
        let at = c.at;
        let len = c.i32("parameter length")?;
        match len {
            -1 => {}
            l if l < 0 => {
                return Err(format!("parameter {i} claims a length of {l} at byte {at}"));
            }
            l => {
                c.skip(l as usize, "parameter value")?;
            }
        }
    }
    let n = c.u16("result format count")?;
    c.skip(2 * n as usize, "result formats")?;
    Ok(())
}

/// Checks the body of an untyped start-up message (after its length and code).
pub fn startup(code: u32, body: &[u8]) -> Result<(), String> {
    match code {
        SSL_REQUEST | GSSENC_REQUEST if !body.is_empty() => Err(format!(
            "an encryption request carries {} bytes; it carries none",
            body.len()
        )),
        // pgwire 0.41 reads a 4-byte key whatever the length (protocol 3.0's cancel).
        CANCEL_REQUEST if body.len() != 8 => Err(format!(
            "a cancel request carries {} bytes; this server reads 8 (a process id and a \
             4-byte key)",
            body.len()
        )),
        c if c >> 16 == PROTOCOL_3 => {
            let mut cur = Cursor { b: body, at: 0 };
            loop {
                if cur.b.get(cur.at) == Some(&0) {
                    cur.at += 1;
                    return cur.end();
                }
                cur.cstr("parameter name")?;
                cur.cstr("parameter value")?;
            }
        }
        _ => Ok(()),
    }
}

/// The SASL initial response of a password-family body: mechanism and its data.
pub fn sasl_initial(body: &[u8]) -> Result<(String, Option<Vec<u8>>), String> {
    let mut c = Cursor { b: body, at: 0 };
    let name = c.cstr("mechanism")?;
    let mech = String::from_utf8_lossy(name).into_owned();
    let at = c.at;
    let data = match c.i32("data length")? {
        -1 => None,
        l if l < 0 => return Err(format!("the data claims a length of {l} at byte {at}")),
        l => Some(c.skip(l as usize, "data")?.to_vec()),
    };
    c.end()?;
    Ok((mech, data))
}

/// Reads fields off a body, naming what ran short and where.
struct Cursor<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn skip(&mut self, n: usize, what: &str) -> Result<&'a [u8], String> {
        let left = self.b.len() - self.at;
        if n > left {
            return Err(format!(
                "the {what} at byte {} needs {n} bytes; {left} remain",
                self.at
            ));
        }
        self.at += n;
        Ok(&self.b[self.at - n..self.at])
    }

    fn cstr(&mut self, what: &str) -> Result<&'a [u8], String> {
        let rest = &self.b[self.at..];
        let Some(n) = rest.iter().position(|&b| b == 0) else {
            return Err(format!(
                "the {what} at byte {} has no terminating NUL",
                self.at
            ));
        };
        self.at += n + 1;
        Ok(&rest[..n])
    }

    fn u16(&mut self, what: &str) -> Result<u16, String> {
        let b = self.skip(2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn i32(&mut self, what: &str) -> Result<i32, String> {
        let b = self.skip(4, what)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn end(&self) -> Result<(), String> {
        match self.b.len() - self.at {
            0 => Ok(()),
            n => Err(format!(
                "{n} bytes follow the last field (at byte {})",
                self.at
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bind_body(params: &[i32], extra: &[u8]) -> Vec<u8> {
        let mut b = b"\0s1\0".to_vec();
        b.extend_from_slice(&0u16.to_be_bytes());
        b.extend_from_slice(&(params.len() as u16).to_be_bytes());
        for &p in params {
            b.extend_from_slice(&p.to_be_bytes());
            if p > 0 {
                b.extend(std::iter::repeat_n(b'x', p as usize));
            }
        }
        b.extend_from_slice(&0u16.to_be_bytes());
        b.extend_from_slice(extra);
        b
    }

    #[test]
    fn typed_bodies() {
        let cases: Vec<(&str, u8, Vec<u8>, Option<&str>)> = vec![
            ("query", b'Q', b"SELECT 1\0".to_vec(), None),
            (
                "query without NUL",
                b'Q',
                b"SELECT 1".to_vec(),
                Some("no terminating NUL"),
            ),
            (
                "query then junk",
                b'Q',
                b"SELECT 1\0xy".to_vec(),
                Some("2 bytes follow"),
            ),
            (
                "parse",
                b'P',
                b"\0SELECT $1\0\0\x01\0\0\0\x17".to_vec(),
                None,
            ),
            (
                "parse claiming a parameter type past the end",
                b'P',
                b"\0SELECT $1\0\0\x02\0\0\0\x17".to_vec(),
                Some("parameter types at byte 13 needs 8 bytes; 4 remain"),
            ),
            (
                "parse without a count",
                b'P',
                b"\0q\0".to_vec(),
                Some("parameter type count"),
            ),
            ("bind", b'B', bind_body(&[3, -1, 0], b""), None),
            (
                "bind value past the end",
                b'B',
                bind_body(&[3], b"")[..14].to_vec(),
                Some("parameter value"),
            ),
            (
                "bind length -2",
                b'B',
                bind_body(&[-2], b""),
                Some("length of -2"),
            ),
            (
                "bind then junk",
                b'B',
                bind_body(&[], b"z"),
                Some("1 bytes follow"),
            ),
            ("close", b'C', b"Ss1\0".to_vec(), None),
            ("describe empty", b'D', b"".to_vec(), Some("target type")),
            ("execute", b'E', b"\0\0\0\0\0".to_vec(), None),
            ("execute short", b'E', b"\0\0\0".to_vec(), Some("row limit")),
            ("sync", b'S', b"".to_vec(), None),
            (
                "sync with a body",
                b'S',
                b"x".to_vec(),
                Some("1 bytes follow"),
            ),
            ("copy data is opaque", b'd', b"anything".to_vec(), None),
            ("password is opaque", b'p', b"".to_vec(), None),
        ];
        for (name, kind, body, want) in cases {
            let got = typed(kind, &body);
            match want {
                None => assert_eq!(got, Ok(()), "{name}"),
                Some(w) => {
                    let e = got.expect_err(name);
                    assert!(e.contains(w), "{name}: {e}");
                }
            }
        }
    }

    #[test]
    fn startup_bodies() {
        let v3 = 196_608;
        for (name, code, body, ok) in [
            ("protocol 3", v3, &b"user\0u\0\0"[..], true),
            ("no parameters", v3, b"\0", true),
            ("no final NUL", v3, b"user\0u\0", false),
            ("a name without value", v3, b"user\0", false),
            ("junk after the end", v3, b"\0x", false),
            ("empty protocol 3", v3, b"", false),
            ("ssl", SSL_REQUEST, b"", true),
            ("ssl with a body", SSL_REQUEST, b"x", false),
            ("cancel", CANCEL_REQUEST, b"\0\0\0\x01\0\0\0\x02", true),
            ("cancel short", CANCEL_REQUEST, b"\0\0\0\x01", false),
            (
                "cancel with a long key",
                CANCEL_REQUEST,
                &[0u8; 40][..],
                false,
            ),
            ("protocol 2 is pgwire's to refuse", 131_072, b"x", true),
        ] {
            assert_eq!(startup(code, body).is_ok(), ok, "{name}");
        }
    }

    #[test]
    fn sasl_initial_responses() {
        let good = b"SCRAM-SHA-256\0\0\0\0\x03abc";
        assert_eq!(
            sasl_initial(good),
            Ok(("SCRAM-SHA-256".into(), Some(b"abc".to_vec())))
        );
        assert_eq!(
            sasl_initial(b"SCRAM-SHA-256\0\xff\xff\xff\xff"),
            Ok(("SCRAM-SHA-256".into(), None))
        );
        for (name, body, want) in [
            (
                "data past the end",
                &b"M\0\0\0\0\x09abc"[..],
                "needs 9 bytes; 3 remain",
            ),
            ("no length", b"M\0\0", "data length"),
            ("no mechanism", b"M", "no terminating NUL"),
            ("negative length", b"M\0\xff\xff\xff\xfe", "length of -2"),
        ] {
            let e = sasl_initial(body).expect_err(name);
            assert!(e.contains(want), "{name}: {e}");
        }
    }
}
