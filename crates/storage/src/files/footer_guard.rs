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
//! That holds only if the crate reads the footer as this walk does. The crate reads a field
//! it knows by the type the format gives it, not by the type its header declares, so the walk
//! follows the format's structs ([`super::footer_schema`]) and refuses a known field, or a
//! known list's elements, declared as another type.
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
    let mut w = Walk {
        buf: meta,
        pos: 0,
        schema_len: 0,
        children: Vec::new(),
    };
    w.fields(&schema::FILE_METADATA, 0)
        .map_err(|why| (w.pos, why))
}

use super::footer_schema::{self as schema, Ty};

/// Whether a field declared as compact type `declared` is read alike as `ty`.
fn declared_as(ty: Ty, declared: u8) -> bool {
    match ty {
        Ty::Bool => matches!(declared, BOOL_TRUE | BOOL_FALSE),
        Ty::I8 => declared == BYTE,
        Ty::I16 => declared == I16,
        Ty::I32 | Ty::Children => declared == I32,
        Ty::I64 => declared == I64,
        Ty::Double => declared == DOUBLE,
        Ty::Binary => declared == BINARY,
        Ty::List(_) => matches!(declared, LIST | SET),
        Ty::Struct(_) => declared == STRUCT,
    }
}

/// The compact type's name, for messages.
fn type_name(t: u8) -> &'static str {
    match t {
        BOOL_TRUE | BOOL_FALSE => "bool",
        BYTE => "byte",
        I16 => "i16",
        I32 => "i32",
        I64 => "i64",
        DOUBLE => "double",
        BINARY => "binary",
        LIST => "list",
        SET => "set",
        MAP => "map",
        STRUCT => "struct",
        UUID => "uuid",
        _ => "unknown",
    }
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
    /// The length of the schema list, once read (bounds `num_children`).
    schema_len: u64,
    /// Each schema element's `num_children` (0: a leaf), in order.
    children: Vec<u64>,
}

/// Deepest schema tree accepted: the Parquet crate builds it by recursion.
pub const MAX_SCHEMA_DEPTH: usize = 128;

/// The schema list as the crate builds its tree (depth first from the root, each element's
/// children the elements after it): every claimed child must exist and the tree may not be
/// deeper than [`MAX_SCHEMA_DEPTH`]. Walked with a stack, not by recursion.
fn check_tree(children: &[u64]) -> Result<(), String> {
    let Some(&root) = children.first() else {
        return Ok(());
    };
    let mut open = vec![root];
    let mut next = 1usize;
    while let Some(left) = open.last_mut() {
        if *left == 0 {
            open.pop();
            continue;
        }
        *left -= 1;
        let Some(&c) = children.get(next) else {
            return Err(format!(
                "the schema claims more children than its {} elements",
                children.len()
            ));
        };
        next += 1;
        if c > 0 {
            open.push(c);
            if open.len() > MAX_SCHEMA_DEPTH {
                return Err(format!("the schema nests deeper than {MAX_SCHEMA_DEPTH}"));
            }
        }
    }
    Ok(())
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
            STRUCT => self.fields(&schema::EMPTY, depth),
            other => Err(format!("unknown Thrift type {other}")),
        }
    }

    /// A value the crate reads as `ty`, declared as compact type `t` (already checked).
    fn typed(&mut self, ty: Ty, t: u8, depth: usize) -> Result<(), String> {
        match ty {
            Ty::Struct(s) => self.fields(s, depth),
            Ty::List(elem) => {
                if depth > MAX_DEPTH {
                    return Err(format!("values nest deeper than {MAX_DEPTH}"));
                }
                let h = self.byte()?;
                let n = match h >> 4 {
                    15 => self.varint()?,
                    short => u64::from(short),
                };
                let n = self.count(n, 1)?;
                let schema = matches!(elem, Ty::Struct(s) if s.name == "SchemaElement");
                if schema {
                    self.schema_len = n;
                    self.children.clear();
                }
                let et = h & 0x0f;
                if n > 0 && !declared_as(*elem, et) {
                    return Err(format!(
                        "a list's elements are declared {} where the format has {}",
                        type_name(et),
                        elem.name()
                    ));
                }
                for _ in 0..n {
                    if schema {
                        self.children.push(0);
                    }
                    self.typed(*elem, et, depth + 1)?;
                }
                if schema {
                    check_tree(&self.children)?;
                }
                Ok(())
            }
            Ty::Children => {
                let z = self.varint()?;
                let v = ((z >> 1) as i64) ^ -((z & 1) as i64);
                if v < 0 || v as u64 > self.schema_len {
                    return Err(format!(
                        "a schema element claims {v} children; the schema has {} elements",
                        self.schema_len
                    ));
                }
                if let Some(last) = self.children.last_mut() {
                    *last = v as u64;
                }
                Ok(())
            }
            _ => self.value(t, depth),
        }
    }

    /// The fields of a struct up to its stop byte; a boolean field carries its value in its
    /// header. Fields the crate knows must be declared as it reads them.
    fn fields(&mut self, s: &schema::Struct, depth: usize) -> Result<(), String> {
        if depth > MAX_DEPTH {
            return Err(format!("values nest deeper than {MAX_DEPTH}"));
        }
        let mut last: i16 = 0;
        loop {
            let h = self.byte()?;
            if h == 0 {
                return Ok(());
            }
            let id = match h >> 4 {
                0 => {
                    // A long-form field id: a zigzag i16.
                    let z = self.varint()?;
                    let v = ((z >> 1) as i64) ^ -((z & 1) as i64);
                    i16::try_from(v).map_err(|_| format!("a field id {v} overflows i16"))?
                }
                delta => last
                    .checked_add(i16::from(delta))
                    .ok_or("a field id overflows i16")?,
            };
            last = id;
            let t = h & 0x0f;
            match s.field(id) {
                Some(ty) if !declared_as(ty, t) => {
                    return Err(format!(
                        "field {id} of {} is declared {} where the format has {}",
                        s.name,
                        type_name(t),
                        ty.name()
                    ));
                }
                Some(Ty::Bool) => {}
                Some(ty) => self.typed(ty, t, depth + 1)?,
                None => match t {
                    BOOL_TRUE | BOOL_FALSE => {}
                    t => self.value(t, depth + 1)?,
                },
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
            ("bool fields carry no byte", &[0xa1, 0x12, 0]),
            ("short list of i32", &[0xa9, 0x35, 1, 2, 3, 0]),
            ("created_by", &[0x68, 3, b'a', b'b', b'c', 0]),
            ("long-form field id", &[0x05, 0x02, 0x02, 0]),
            ("empty map", &[0xab, 0, 0]),
            ("nested struct", &[0xac, 0x15, 2, 0, 0]),
            (
                "a schema of one element",
                &[0x29, 0x1c, 0x48, 1, b'x', 0, 0],
            ),
        ];
        for (name, bytes) in ok {
            assert_eq!(check_metadata(bytes), Ok(()), "{name}");
        }
        let bad: &[(&str, &[u8], &str)] = &[
            ("no stop", &[0x15, 0x04], "ends inside"),
            (
                "two billion booleans in a list",
                &[0xa9, 0xf1, 0xff, 0xff, 0xff, 0xff, 0x07, 0],
                "claims 2147483647 elements",
            ),
            (
                "string longer than the footer",
                &[0x68, 9, b'a', 0],
                "claims 9 bytes",
            ),
            (
                "map larger than the footer",
                &[0xab, 5, 0x55, 1, 1, 0],
                "claims 5 elements",
            ),
            ("unknown type", &[0xae, 0], "unknown Thrift type 14"),
            (
                "a known field declared as another type",
                &[0x38, 1, b'x', 0],
                "field 3 of FileMetaData is declared binary where the format has i64",
            ),
            (
                "a known list's elements declared as another type",
                &[0x29, 0x15, 1, 0],
                "a list's elements are declared i32 where the format has struct SchemaElement",
            ),
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
        let deep: Vec<u8> = std::iter::once(0xac)
            .chain(std::iter::repeat_n(0x1c, 69))
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
        let e = check_metadata(&[0xa9, 0x21, 0x01, 0x00]).unwrap_err();
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

    /// Footers the Parquet crate writes pass, with every struct it writes: logical types,
    /// statistics, page encoding and size statistics, key-value metadata, sorting columns.
    #[test]
    fn written_footers_pass() {
        use std::sync::Arc;

        use arrow::array::{
            BooleanArray, Float64Array, Int8Array, StringArray, TimestampNanosecondArray,
        };
        use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
        use arrow::record_batch::RecordBatch;
        use parquet::arrow::ArrowWriter;
        use parquet::file::metadata::{KeyValue, SortingColumn};
        use parquet::file::properties::{EnabledStatistics, WriterProperties};

        let schema = Arc::new(Schema::new(vec![
            Field::new(
                "time",
                DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
                false,
            ),
            Field::new("host", DataType::Utf8, true),
            Field::new("v", DataType::Float64, true),
            Field::new("up", DataType::Boolean, true),
            Field::new("small", DataType::Int8, true),
        ]));
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(TimestampNanosecondArray::from(vec![1, 2, 3]).with_timezone("UTC")),
                Arc::new(StringArray::from(vec![Some("a"), None, Some("c")])),
                Arc::new(Float64Array::from(vec![Some(1.5), Some(f64::NAN), None])),
                Arc::new(BooleanArray::from(vec![Some(true), None, Some(false)])),
                Arc::new(Int8Array::from(vec![Some(-1), Some(0), None])),
            ],
        )
        .unwrap();
        for stats in [
            EnabledStatistics::Page,
            EnabledStatistics::Chunk,
            EnabledStatistics::None,
        ] {
            let props = WriterProperties::builder()
                .set_statistics_enabled(stats)
                .set_sorting_columns(Some(vec![SortingColumn {
                    column_idx: 0,
                    descending: false,
                    nulls_first: true,
                }]))
                .set_key_value_metadata(Some(vec![KeyValue::new("k".into(), "v".to_string())]))
                .build();
            let mut out = Vec::new();
            let mut w = ArrowWriter::try_new(&mut out, schema.clone(), Some(props)).unwrap();
            w.write(&batch).unwrap();
            w.close().unwrap();
            assert_eq!(check_file(&out), Ok(()), "{stats:?}");
        }
    }

    /// The third: 103 bytes whose schema element claimed 176 million children, which the
    /// crate allocates a vector for before reading any.
    #[test]
    fn fuzz_oom_by_num_children_is_refused() {
        let f: &[u8] = &[
            0x00, 0xe3, 0xe3, 0xbd, 0x29, 0x2c, 0xba, 0x00, 0x05, 0x06, 0x00, 0x18, 0x00, 0x00,
            0x08, 0x08, 0x00, 0x85, 0x00, 0x08, 0x05, 0x00, 0x85, 0x98, 0xbd, 0x9c, 0xa8, 0x01,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1e,
            0x16, 0x5b, 0x00, 0x00, 0x16, 0x41, 0x00, 0x2a, 0x52, 0x16, 0x00, 0xfa, 0x00, 0xbd,
            0xbd, 0xbd, 0xbd, 0xbd, 0xbd, 0xbd, 0x43, 0x42, 0xbd, 0xbd, 0xbd, 0xbc, 0x2d, 0x00,
            0x50, 0x41, 0x52, 0x08, 0x33, 0xbd, 0xbd, 0x9c, 0xa8, 0x01, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1e, 0x16, 0x5b, 0x00, 0x00,
            0x00, 0x50, 0x41, 0x52, 0x31,
        ];
        let e = check_file(f).unwrap_err();
        assert!(e.contains("children"), "{e}");
        // A legal count passes: one root with one child.
        let ok = [0x29, 0x2c, 0x48, 1, b'r', 0x15, 2, 0, 0x48, 1, b'c', 0, 0];
        assert_eq!(check_metadata(&ok), Ok(()));
    }

    /// Schema trees are walked as the crate builds them: every child exists, and nesting is
    /// bounded (the crate recurses once per level).
    #[test]
    fn schema_trees() {
        for (name, children, ok) in [
            ("a root with two leaves", vec![2, 0, 0], true),
            ("nested groups", vec![1, 2, 0, 1, 0], true),
            ("a child too many", vec![3, 0, 0], false),
            ("a group's child missing", vec![1, 1], false),
            ("a leaf root", vec![0], true),
        ] {
            assert_eq!(check_tree(&children).is_ok(), ok, "{name}");
        }
        let mut chain = vec![1u64; MAX_SCHEMA_DEPTH + 1];
        chain.push(0);
        assert!(check_tree(&chain).unwrap_err().contains("deeper"));
        let mut chain = vec![1u64; MAX_SCHEMA_DEPTH - 1];
        chain.push(0);
        assert_eq!(check_tree(&chain), Ok(()));
    }

    /// The second: 34 bytes that took 40 s past the type-driven walk, because the crate read
    /// a known field as its format type rather than the declared one.
    #[test]
    fn fuzz_timeout_past_the_declared_types_is_refused() {
        let f: &[u8] = &[
            0x26, 0x00, 0x00, 0x00, 0x31, 0x00, 0xb5, 0xaa, 0x29, 0xba, 0xb9, 0x01, 0x41, 0x52,
            0x3b, 0xff, 0xff, 0xff, 0xff, 0x00, 0x22, 0x41, 0x01, 0xfd, 0xf8, 0xf8, 0x16, 0x00,
            0x00, 0x00, 0x50, 0x41, 0x52, 0x31,
        ];
        let e = check_file(f).unwrap_err();
        assert!(e.contains("where the format has"), "{e}");
    }
}
