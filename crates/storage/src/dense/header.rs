//! The dense block file's header: magic `TMPRDNS\0`, format version (u16), field count
//! (u16), interval, block start and block length (i64 ns), slot length (u32), CRC-32C of the
//! header's other bytes and its field list (u32); then per field its name (u16 length, UTF-8),
//! its type code (u8) and its width parameter (u16: a string's maximum length). Little-endian.
//!
//! Invariants:
//! - [`decode`] refuses a short header, a wrong magic or version, a checksum mismatch, an
//!   unknown type and a slot length that does not match the fields, naming what is wrong; it
//!   never panics on any bytes.

use tempora_model::FieldType;

use super::layout::{DenseField, FORMAT_VERSION, HEADER_LEN, MAGIC, MAX_STRING, slot_len};

/// A block file's header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub interval_ns: i64,
    pub block_start: i64,
    pub block_ns: i64,
    pub fields: Vec<DenseField>,
}

/// What is wrong with a header.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("dense block header: {0}")]
pub struct HeaderError(pub String);

fn type_of(code: u8) -> Option<FieldType> {
    [
        FieldType::F64,
        FieldType::I64,
        FieldType::U64,
        FieldType::Bool,
        FieldType::Str,
    ]
    .into_iter()
    .find(|t| t.code() == code)
}

/// The header's bytes.
pub fn encode(h: &Header) -> Vec<u8> {
    assert!(h.fields.len() <= u16::MAX as usize);
    let mut list = Vec::new();
    for f in &h.fields {
        list.extend_from_slice(&(f.name.len() as u16).to_le_bytes());
        list.extend_from_slice(f.name.as_bytes());
        list.push(f.ty.code());
        list.extend_from_slice(&(f.max_len as u16).to_le_bytes());
    }
    let mut out = Vec::with_capacity(HEADER_LEN + list.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&(h.fields.len() as u16).to_le_bytes());
    out.extend_from_slice(&h.interval_ns.to_le_bytes());
    out.extend_from_slice(&h.block_start.to_le_bytes());
    out.extend_from_slice(&h.block_ns.to_le_bytes());
    out.extend_from_slice(&(slot_len(&h.fields) as u32).to_le_bytes());
    let mut crc = crc32c::crc32c(&out);
    crc = crc32c::crc32c_append(crc, &list);
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&list);
    out
}

/// The header at the start of `data`.
pub fn decode(data: &[u8]) -> Result<Header, HeaderError> {
    let bad = |m: String| HeaderError(m);
    if data.len() < HEADER_LEN {
        return Err(bad(format!(
            "{} bytes is shorter than the header",
            data.len()
        )));
    }
    if &data[..8] != MAGIC {
        return Err(bad("bad magic number (not a dense block file)".into()));
    }
    let u16_at = |i: usize| u16::from_le_bytes([data[i], data[i + 1]]);
    let i64_at = |i: usize| i64::from_le_bytes(data[i..i + 8].try_into().expect("8 bytes"));
    let version = u16_at(8);
    if version != FORMAT_VERSION {
        return Err(bad(format!(
            "format version {version}, this build reads {FORMAT_VERSION}"
        )));
    }
    let count = u16_at(10) as usize;
    let (interval_ns, block_start, block_ns) = (i64_at(12), i64_at(20), i64_at(28));
    let slot = u32::from_le_bytes(data[36..40].try_into().expect("4 bytes")) as usize;
    let crc = u32::from_le_bytes(data[40..44].try_into().expect("4 bytes"));
    let mut fields = Vec::with_capacity(count.min(1024));
    let mut at = HEADER_LEN;
    for _ in 0..count {
        let short = || bad("the field list is cut short".into());
        let len = data.get(at..at + 2).ok_or_else(short)?;
        let len = u16::from_le_bytes([len[0], len[1]]) as usize;
        let name = data.get(at + 2..at + 2 + len).ok_or_else(short)?;
        let name =
            std::str::from_utf8(name).map_err(|_| bad("a field name is not UTF-8".into()))?;
        let rest = data.get(at + 2 + len..at + 5 + len).ok_or_else(short)?;
        let ty = type_of(rest[0])
            .ok_or_else(|| bad(format!("field {name:?} has unknown type code {}", rest[0])))?;
        let max_len = u16::from_le_bytes([rest[1], rest[2]]) as usize;
        fields.push(DenseField {
            name: name.to_string(),
            ty,
            max_len,
        });
        at += 5 + len;
    }
    let mut want = crc32c::crc32c(&data[..40]);
    want = crc32c::crc32c_append(want, &data[HEADER_LEN..at]);
    if want != crc {
        return Err(bad("checksum mismatch".into()));
    }
    if interval_ns <= 0 || block_ns <= 0 || block_ns % interval_ns != 0 {
        return Err(bad(format!(
            "interval {interval_ns} ns does not divide block {block_ns} ns"
        )));
    }
    if fields
        .iter()
        .any(|f| f.ty == FieldType::Str && f.max_len > MAX_STRING)
    {
        return Err(bad(format!("a string longer than {MAX_STRING} bytes")));
    }
    if slot != slot_len(&fields) {
        return Err(bad(format!(
            "slot length {slot} does not match the fields ({})",
            slot_len(&fields)
        )));
    }
    Ok(Header {
        interval_ns,
        block_start,
        block_ns,
        fields,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> Header {
        Header {
            interval_ns: 1_000_000_000,
            block_start: 86_400_000_000_000,
            block_ns: 86_400_000_000_000,
            fields: vec![
                DenseField {
                    name: "kwh".into(),
                    ty: FieldType::F64,
                    max_len: 0,
                },
                DenseField {
                    name: "state".into(),
                    ty: FieldType::Str,
                    max_len: 16,
                },
            ],
        }
    }

    #[test]
    fn a_header_round_trips() {
        assert_eq!(decode(&encode(&header())).unwrap(), header());
    }

    #[test]
    fn damaged_headers_are_refused_by_name_and_none_panics() {
        let good = encode(&header());
        for n in 0..good.len() {
            assert!(decode(&good[..n]).is_err(), "cut at {n}");
        }
        let cases: Vec<(&str, usize, &str)> = vec![
            ("magic", 0, "magic"),
            ("version", 8, "version"),
            ("interval", 12, "checksum"),
            ("name", HEADER_LEN + 3, "checksum"),
        ];
        for (what, at, want) in cases {
            let mut b = good.clone();
            b[at] ^= 0x11;
            let e = decode(&b).unwrap_err().to_string();
            assert!(e.contains(want), "{what}: {e}");
        }
    }
}
