//! One slot's bytes: CRC-32C of the rest (u32, little-endian), a presence bit per field
//! (field i is bit i % 8 of byte i / 8: set = written, clear = NULL) and after them one bit
//! always set in a written slot,
//! then each field at its fixed width (f64, i64, u64 as 8 bytes LE, bool as one byte, a string
//! as u16 length and its bytes, zero-padded to its declared maximum).
//!
//! An all-zero slot is a hole: never written (the written bit makes a written slot, even an
//! all-NULL one, never all zero). A slot whose checksum does not match was torn by a crash
//! or damaged: [`decode`] says so and the engine takes the point from the WAL.

use tempora_model::{FieldType, FieldValue};

use super::layout::{DenseField, presence_bytes, slot_len};

/// A slot's content: never written, or one value (or NULL) per field.
#[derive(Debug, Clone, PartialEq)]
pub enum Slot {
    Hole,
    Row(Vec<Option<FieldValue>>),
}

/// What is wrong with a value or a slot.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SlotError {
    #[error("field {field}: a string of {len} bytes is longer than its declared {max}")]
    TooLong {
        field: String,
        len: usize,
        max: usize,
    },
    #[error("field {field}: a {got} value does not fit a {want} field")]
    Type {
        field: String,
        got: String,
        want: String,
    },
    #[error("slot checksum mismatch (a torn or damaged write)")]
    Checksum,
    #[error("field {field}: the stored string is not valid")]
    BadString { field: String },
}

/// The bytes of a written slot holding `values` (one per field, None for NULL).
pub fn encode(fields: &[DenseField], values: &[Option<FieldValue>]) -> Result<Vec<u8>, SlotError> {
    assert_eq!(fields.len(), values.len());
    let mut out = Vec::with_capacity(slot_len(fields));
    encode_with(fields, |i| values[i].as_ref(), &mut out)?;
    Ok(out)
}

/// Appends the image of a written slot whose field `i` is `value(i)` (None for NULL) to
/// `out`; on error `out` is as it was. An integer given to a float field is converted.
pub fn encode_with<'v>(
    fields: &[DenseField],
    value: impl Fn(usize) -> Option<&'v FieldValue>,
    out: &mut Vec<u8>,
) -> Result<(), SlotError> {
    let base = out.len();
    out.resize(base + slot_len(fields), 0);
    let r = fill(fields, value, &mut out[base..]);
    if r.is_err() {
        out.truncate(base);
    }
    r
}

fn fill<'v>(
    fields: &[DenseField],
    value: impl Fn(usize) -> Option<&'v FieldValue>,
    out: &mut [u8],
) -> Result<(), SlotError> {
    let bits = presence_bytes(fields);
    // The written bit, after the fields' bits: a written slot is never all zero.
    let w = fields.len();
    out[4 + w / 8] |= 1 << (w % 8);
    let mut at = 4 + bits;
    for (i, f) in fields.iter().enumerate() {
        let w = f.width();
        if let Some(v) = value(i) {
            out[4 + i / 8] |= 1 << (i % 8);
            let cell = &mut out[at..at + w];
            match (f.ty, v) {
                (FieldType::F64, FieldValue::F64(x)) => cell.copy_from_slice(&x.to_le_bytes()),
                (FieldType::F64, FieldValue::I64(x)) => {
                    cell.copy_from_slice(&(*x as f64).to_le_bytes())
                }
                (FieldType::F64, FieldValue::U64(x)) => {
                    cell.copy_from_slice(&(*x as f64).to_le_bytes())
                }
                (FieldType::I64, FieldValue::I64(x)) => cell.copy_from_slice(&x.to_le_bytes()),
                (FieldType::U64, FieldValue::U64(x)) => cell.copy_from_slice(&x.to_le_bytes()),
                (FieldType::Bool, FieldValue::Bool(x)) => cell[0] = u8::from(*x),
                (FieldType::Str, FieldValue::Str(s)) => {
                    if s.len() > f.max_len {
                        return Err(SlotError::TooLong {
                            field: f.name.clone(),
                            len: s.len(),
                            max: f.max_len,
                        });
                    }
                    cell[..2].copy_from_slice(&(s.len() as u16).to_le_bytes());
                    cell[2..2 + s.len()].copy_from_slice(s.as_bytes());
                }
                (want, got) => {
                    return Err(SlotError::Type {
                        field: f.name.clone(),
                        got: format!("{:?}", got.field_type()),
                        want: format!("{want:?}"),
                    });
                }
            }
        }
        at += w;
    }
    let crc = crc32c::crc32c(&out[4..]);
    out[..4].copy_from_slice(&crc.to_le_bytes());
    Ok(())
}

/// Whether a slot image is a hole (never written: all zero).
pub fn is_hole(img: &[u8]) -> bool {
    img.iter().all(|b| *b == 0)
}

/// Checks a written slot image's checksum.
pub fn check(img: &[u8]) -> Result<(), SlotError> {
    let crc = u32::from_le_bytes(img[..4].try_into().expect("4 bytes"));
    match crc32c::crc32c(&img[4..]) == crc {
        true => Ok(()),
        false => Err(SlotError::Checksum),
    }
}

/// Whether field `i` of a written slot image holds a value (not NULL).
pub fn present(img: &[u8], i: usize) -> bool {
    img[4 + i / 8] & (1 << (i % 8)) != 0
}

/// Byte offset of each field's cell in a slot.
pub fn field_offsets(fields: &[DenseField]) -> Vec<usize> {
    let mut at = 4 + presence_bytes(fields);
    fields
        .iter()
        .map(|f| {
            let o = at;
            at += f.width();
            o
        })
        .collect()
}

/// The slot in `bytes` (exactly [`slot_len`] of them).
pub fn decode(fields: &[DenseField], bytes: &[u8]) -> Result<Slot, SlotError> {
    assert_eq!(bytes.len(), slot_len(fields));
    if bytes.iter().all(|b| *b == 0) {
        return Ok(Slot::Hole);
    }
    let crc = u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes"));
    if crc32c::crc32c(&bytes[4..]) != crc {
        return Err(SlotError::Checksum);
    }
    let bits = presence_bytes(fields);
    let mut at = 4 + bits;
    let mut out = Vec::with_capacity(fields.len());
    for (i, f) in fields.iter().enumerate() {
        let cell = &bytes[at..at + f.width()];
        at += f.width();
        if bytes[4 + i / 8] & (1 << (i % 8)) == 0 {
            out.push(None);
            continue;
        }
        let eight = || <[u8; 8]>::try_from(&cell[..8]).expect("8 bytes");
        out.push(Some(match f.ty {
            FieldType::F64 => FieldValue::F64(f64::from_le_bytes(eight())),
            FieldType::I64 => FieldValue::I64(i64::from_le_bytes(eight())),
            FieldType::U64 => FieldValue::U64(u64::from_le_bytes(eight())),
            FieldType::Bool => FieldValue::Bool(cell[0] != 0),
            FieldType::Str => {
                let len = u16::from_le_bytes([cell[0], cell[1]]) as usize;
                let s = cell
                    .get(2..2 + len)
                    .and_then(|b| std::str::from_utf8(b).ok())
                    .ok_or_else(|| SlotError::BadString {
                        field: f.name.clone(),
                    })?;
                FieldValue::Str(s.to_string())
            }
        }));
    }
    Ok(Slot::Row(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields() -> Vec<DenseField> {
        vec![
            DenseField {
                name: "kwh".into(),
                ty: FieldType::F64,
                max_len: 0,
            },
            DenseField {
                name: "n".into(),
                ty: FieldType::I64,
                max_len: 0,
            },
            DenseField {
                name: "ok".into(),
                ty: FieldType::Bool,
                max_len: 0,
            },
            DenseField {
                name: "note".into(),
                ty: FieldType::Str,
                max_len: 5,
            },
        ]
    }

    #[test]
    fn a_row_with_nulls_round_trips_and_a_hole_is_distinct_from_all_null() {
        let f = fields();
        let row = vec![
            Some(FieldValue::F64(1.5)),
            None,
            Some(FieldValue::Bool(false)),
            Some(FieldValue::Str("hi".into())),
        ];
        let b = encode(&f, &row).unwrap();
        assert_eq!(decode(&f, &b).unwrap(), Slot::Row(row));
        let nulls = encode(&f, &[None, None, None, None]).unwrap();
        assert_eq!(
            decode(&f, &nulls).unwrap(),
            Slot::Row(vec![None; 4]),
            "a written NULL row"
        );
        assert_eq!(decode(&f, &vec![0; slot_len(&f)]).unwrap(), Slot::Hole);
    }

    #[test]
    fn bad_values_and_torn_slots_are_named() {
        let f = fields();
        let e = encode(
            &f,
            &[None, None, None, Some(FieldValue::Str("toolong".into()))],
        )
        .unwrap_err();
        assert_eq!(
            e,
            SlotError::TooLong {
                field: "note".into(),
                len: 7,
                max: 5
            }
        );
        let e = encode(&f, &[None, Some(FieldValue::F64(1.0)), None, None]).unwrap_err();
        assert!(e.to_string().contains("field n"), "{e}");
        let mut b = encode(&f, &[Some(FieldValue::F64(2.0)), None, None, None]).unwrap();
        // A crash that wrote only the first half of the slot's new bytes over another value.
        let other = encode(
            &f,
            &[
                Some(FieldValue::F64(3.0)),
                Some(FieldValue::I64(9)),
                None,
                None,
            ],
        )
        .unwrap();
        b[..10].copy_from_slice(&other[..10]);
        assert_eq!(decode(&f, &b).unwrap_err(), SlotError::Checksum);
    }
}
