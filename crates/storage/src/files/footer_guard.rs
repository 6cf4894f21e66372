//! A bound on a Parquet footer before the Parquet crate decodes it.
//!
//! The footer is Thrift compact protocol. A damaged footer can claim a list of two billion
//! booleans in nine bytes; the Parquet crate skips such a list element by element without
//! reading anything (a boolean list element is one byte on the wire, but its skipper reads
//! none), which takes seconds. This walk reads the whole footer once and refuses it when any
//! list, set, map, string or struct claims more than the bytes that remain, or when nesting
//! goes deeper than [`MAX_DEPTH`]: every element of a compact-protocol container takes at
//! least one byte, so a footer that passes decodes in time linear in its length.
//!
//! Invariants:
//! - A pure function over bytes: no allocation, no I/O; every step reads at least one byte or
//!   ends, so the walk itself is linear in the footer's length.
//! - It accepts every footer our writer and the Parquet crate produce (tested over real files);
//!   it refuses only what cannot be a valid Thrift encoding.

/// The deepest nesting accepted (the Parquet crate's own skip depth).
pub const MAX_DEPTH: usize = 64;

/// Checks the footer of a whole Parquet file: the trailing length and magic, and the Thrift
/// metadata they frame. Returns a reason naming the byte offset on refusal.
pub fn check_file(data: &[u8]) -> Result<(), String> {
    let n = data.len();
    if n < 12 {
        return Err(format!(
            "{n} bytes is too short for a Parquet file (at least 12)"
        ));
    }
    if &data[n - 4..] != b"PAR1" {
        return Err("it does not end with the Parquet magic PAR1".into());
    }
    let len = u32::from_le_bytes(data[n - 8..n - 4].try_into().expect("4 bytes")) as usize;
    if len > n - 12 {
        return Err(format!(
            "its footer claims {len} bytes but the file has {} before it",
            n - 12
        ));
    }
    let start = n - 8 - len;
    check_metadata(&data[start..n - 8]).map_err(|(at, why)| {
        format!(
            "its footer is not valid Thrift at byte {}: {why}",
            start + at
        )
    })
}

/// Walks one Thrift compact struct (the file metadata) that must fill `meta` at most.
pub fn check_metadata(meta: &[u8]) -> Result<(), (usize, String)> {
    let mut w = Walk { buf: meta, pos: 0 };
    w.value(STRUCT, 0).map_err(|why| (w.pos, why))
}

const BOOL_TRUE: u8 = 1;
const BOOL_FALSE: u8 = 2;
const BYTE: u8 = 3;
const I16: u8 = 4;
const I32: u8 = 5;
const I64: u8 = 6;
const DOUBLE: u8 = 7;
const BINARY: u8 = 8;
const LIST: u8 = 9;
const SET: u8 = 10;
const MAP: u8 = 11;
const STRUCT: u8 = 12;
const UUID: u8 = 13;

struct Walk<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Walk<'_> {
    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn byte(&mut self) -> Result<u8, String> {
        let b = *self.buf.get(self.pos).ok_or("it ends inside a value")?;
        self.pos += 1;
        Ok(b)
    }

    fn skip(&mut self, n: usize) -> Result<(), String> {
        if n > self.remaining() {
            return Err(format!(
                "a value claims {n} bytes, {} remain",
                self.remaining()
            ));
        }
        self.pos += n;
        Ok(())
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            if shift == 63 && b > 1 {
                return Err("a varint overflows 64 bits".into());
            }
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("a varint is longer than 10 bytes".into())
    }

    /// A count of `per` -byte-or-more elements that must fit in what remains.
    fn count(&mut self, n: u64, per: u64) -> Result<u64, String> {
        if n.saturating_mul(per) > self.remaining() as u64 {
            return Err(format!(
                "a container claims {n} elements, {} bytes remain",
                self.remaining()
            ));
        }
        Ok(n)
    }

    /// One value of compact type `t`; in a container a boolean is a byte of its own.
    fn value(&mut self, t: u8, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!("values nest deeper than {MAX_DEPTH}"));
        }
        match t {
            BOOL_TRUE | BOOL_FALSE | BYTE => self.skip(1),
            I16 | I32 | I64 => self.varint().map(|_| ()),
            DOUBLE => self.skip(8),
            UUID => self.skip(16),
            BINARY => {
                let n = self.varint()?;
                self.skip(usize::try_from(n).map_err(|_| "a string length overflows")?)
            }
            LIST | SET => {
                let h = self.byte()?;
                let n = match h >> 4 {
                    15 => self.varint()?,
                    short => u64::from(short),
                };
                let n = self.count(n, 1)?;
                let t = h & 0x0f;
                // The Parquet crate skips a boolean element without reading its byte, so it
                // and this walk would disagree about everything after; no footer structure
                // is a list of booleans.
                if n > 0 && matches!(t, BOOL_TRUE | BOOL_FALSE) {
                    return Err("a list of booleans (none is in a Parquet footer)".into());
                }
                (0..n).try_for_each(|_| self.value(t, depth + 1))
            }
            MAP => {
                let n = self.varint()?;
                if n == 0 {
                    return Ok(());
                }
                let kv = self.byte()?;
                let n = self.count(n, 2)?;
                if [kv >> 4, kv & 0x0f]
                    .iter()
                    .any(|t| matches!(*t, BOOL_TRUE | BOOL_FALSE))
                {
                    return Err("a map of booleans (none is in a Parquet footer)".into());
                }
                (0..n).try_for_each(|_| {
                    self.value(kv >> 4, depth + 1)?;
                    self.value(kv & 0x0f, depth + 1)
                })
            }
            STRUCT => self.fields(depth),
            other => Err(format!("unknown Thrift type {other}")),
        }
    }

    /// The fields of a struct up to its stop byte; a boolean field carries its value in its
    /// header.
    fn fields(&mut self, depth: usize) -> Result<(), String> {
        loop {
            let h = self.byte()?;
            if h == 0 {
                return Ok(());
            }
            if h >> 4 == 0 {
                self.varint()?; // a long-form field id (zigzag i16)
            }
            match h & 0x0f {
                BOOL_TRUE | BOOL_FALSE => {}
                t => self.value(t, depth + 1)?,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases() {
        let ok: &[(&str, &[u8])] = &[
            ("empty struct", &[0]),
            ("i32 field", &[0x15, 0x04, 0]),
            ("bool field carries no byte", &[0x11, 0x12, 0]),
            ("short list of i32", &[0x19, 0x35, 1, 2, 3, 0]),
            ("string", &[0x18, 3, b'a', b'b', b'c', 0]),
            ("long-form field id", &[0x05, 0x08, 0x02, 0]),
            ("empty map", &[0x1b, 0, 0]),
            ("nested struct", &[0x1c, 0x15, 2, 0, 0]),
        ];
        for (name, bytes) in ok {
            assert_eq!(check_metadata(bytes), Ok(()), "{name}");
        }
        let bad: &[(&str, &[u8], &str)] = &[
            ("no stop", &[0x15, 0x04], "ends inside"),
            (
                "two billion booleans in a list",
                &[0x19, 0xf1, 0xff, 0xff, 0xff, 0xff, 0x07, 0],
                "claims 2147483647 elements",
            ),
            (
                "string longer than the footer",
                &[0x18, 9, b'a', 0],
                "claims 9 bytes",
            ),
            (
                "map larger than the footer",
                &[0x1b, 5, 0x55, 1, 1, 0],
                "claims 5 elements",
            ),
            ("unknown type", &[0x1e, 0], "unknown Thrift type 14"),
            (
                "varint too long",
                &[
                    0x15, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
                ],
                "varint",
            ),
        ];
        for (name, bytes, want) in bad {
            let (_, why) = check_metadata(bytes).expect_err(name);
            assert!(why.contains(want), "{name}: {why}");
        }
        let deep: Vec<u8> = std::iter::repeat_n(0x1c, 70)
            .chain(std::iter::repeat_n(0, 71))
            .collect();
        assert!(check_metadata(&deep).unwrap_err().1.contains("deeper"));
    }

    #[test]
    fn file_frame() {
        assert!(check_file(b"PAR1").unwrap_err().contains("too short"));
        assert!(
            check_file(b"PAR1xxxxxxxxxxxx")
                .unwrap_err()
                .contains("magic")
        );
        let mut f = b"PAR1".to_vec();
        f.extend_from_slice(&[0]);
        f.extend_from_slice(&100u32.to_le_bytes());
        f.extend_from_slice(b"PAR1");
        assert!(check_file(&f).unwrap_err().contains("claims 100 bytes"));
        let mut f = b"PAR1".to_vec();
        f.extend_from_slice(&[0]);
        f.extend_from_slice(&1u32.to_le_bytes());
        f.extend_from_slice(b"PAR1");
        assert_eq!(check_file(&f), Ok(()));
    }

    /// A list of booleans is refused: the Parquet crate skips its elements without reading
    /// them, so it and this walk would disagree about everything after.
    #[test]
    fn boolean_lists_are_refused() {
        let e = check_metadata(&[0x19, 0x21, 0x01, 0x00]).unwrap_err();
        assert!(e.1.contains("booleans"), "{e:?}");
    }

    /// The artifact libFuzzer found: nine footer bytes that took the Parquet crate seconds.
    #[test]
    fn fuzz_timeout_is_refused() {
        let f: &[u8] = &[
            0x00, 0x28, 0x00, 0x00, 0xff, 0xff, 0x5b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
            0x0b, 0x00, 0xff, 0xc6, 0xe5, 0x50, 0x12, 0xff, 0x32, 0x09, 0x00, 0x00, 0x00, 0x50,
            0x41, 0x52, 0x31,
        ];
        assert!(check_file(f).is_err());
    }
}
