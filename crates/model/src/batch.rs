//! [`RowBatch`]: rows of one table in a compact, allocation-light form.
//!
//! Series keys live in one byte arena, field names are interned per batch and rows point into
//! both; consecutive rows of one series may point at the same key bytes
//! ([`RowBatchBuilder::push_same_series`]), which the encoding writes per row as before. The
//! binary encoding ([`RowBatch::encode_rows`] / [`RowBatch::decode`]) is the WAL's record
//! payload; all integers are little-endian:
//!
//! ```text
//! u32 table_len, table | u16 n_tags, (u16 len, name)* | u16 n_fields, (u16 len, name)*
//! u32 n_rows, then per row:
//!   u32 key_len, key (or u32 KEY_REF | series id, no key bytes) | i64 time | u16 n, (u16 field_idx, u8 type_code, value)*
//!   value: f64/i64/u64 as 8 bytes, bool as 1 byte, string as u32 len + UTF-8 bytes
//! ```

use rustc_hash::FxHashMap;

use crate::error::{ModelError, Result};
use crate::ids::Timestamp;
use crate::key::encode_series_key_with;
use crate::value::{FieldType, FieldValue};

/// High bit of a row's key length: the rest is a series id, not a length.
pub const KEY_REF: u32 = 1 << 31;

/// Most tags one row may carry.
pub const MAX_TAGS_PER_ROW: usize = 256;
/// Most fields one row may carry (and distinct field names per batch).
pub const MAX_FIELDS_PER_ROW: usize = 1024;
/// Longest table, tag or field name in bytes.
pub const MAX_NAME_LEN: usize = 1024;

#[derive(Debug, Clone, Copy, PartialEq)]
struct RowMeta {
    key_start: u32,
    key_len: u32,
    time: i64,
    fields_start: u32,
    fields_len: u16,
}

/// Rows for one table.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct RowBatch {
    table: String,
    tag_names: Vec<String>,
    field_names: Vec<String>,
    keys: Vec<u8>,
    rows: Vec<RowMeta>,
    fields: Vec<(u16, FieldValue)>,
}

/// A borrowed view of one row.
#[derive(Debug, Clone, Copy)]
pub struct BatchRow<'a> {
    pub key: &'a [u8],
    pub time: Timestamp,
    pub fields: &'a [(u16, FieldValue)],
}

impl RowBatch {
    pub fn table(&self) -> &str {
        &self.table
    }
    /// Renames the batch's table (series keys hold only tags, so they stay valid).
    pub fn set_table(&mut self, name: &str) -> Result<()> {
        validate_name(name)?;
        self.table = name.to_string();
        Ok(())
    }
    pub fn tag_names(&self) -> &[String] {
        &self.tag_names
    }
    pub fn field_names(&self) -> &[String] {
        &self.field_names
    }
    pub fn len(&self) -> usize {
        self.rows.len()
    }
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
    /// Number of field values across all rows.
    pub fn value_count(&self) -> usize {
        self.fields.len()
    }

    pub fn row(&self, i: usize) -> BatchRow<'_> {
        let m = &self.rows[i];
        let ks = m.key_start as usize;
        let fs = m.fields_start as usize;
        BatchRow {
            key: &self.keys[ks..ks + m.key_len as usize],
            time: Timestamp(m.time),
            fields: &self.fields[fs..fs + m.fields_len as usize],
        }
    }

    pub fn rows(&self) -> impl Iterator<Item = BatchRow<'_>> + '_ {
        (0..self.rows.len()).map(|i| self.row(i))
    }

    /// Appends the encoding of the given rows (all rows when `rows` is `None`) to `out`.
    pub fn encode_rows(&self, rows: Option<&[u32]>, out: &mut Vec<u8>) {
        self.encode_rows_keyed(rows, |_| None, out)
    }

    /// Like [`RowBatch::encode_rows`], but a row for which `key_ref(row)` gives a series id
    /// writes `KEY_REF | id` in place of its key length and no key bytes; a reader resolves the
    /// id with [`RowBatch::decode_keyed`].
    pub fn encode_rows_keyed(
        &self,
        rows: Option<&[u32]>,
        key_ref: impl Fn(usize) -> Option<u32>,
        out: &mut Vec<u8>,
    ) {
        put_str32(out, &self.table);
        put_names(out, &self.tag_names);
        put_names(out, &self.field_names);
        let n = rows.map_or(self.rows.len(), |r| r.len());
        out.extend_from_slice(&(n as u32).to_le_bytes());
        let mut put_row = |i: usize| {
            let r = self.row(i);
            match key_ref(i) {
                Some(id) => {
                    assert!(id < KEY_REF, "series id fits in 31 bits");
                    out.extend_from_slice(&(KEY_REF | id).to_le_bytes());
                }
                None => {
                    assert!((r.key.len() as u32) < KEY_REF, "key length fits in 31 bits");
                    out.extend_from_slice(&(r.key.len() as u32).to_le_bytes());
                    out.extend_from_slice(r.key);
                }
            }
            out.extend_from_slice(&r.time.0.to_le_bytes());
            out.extend_from_slice(&(r.fields.len() as u16).to_le_bytes());
            for (idx, v) in r.fields {
                out.extend_from_slice(&idx.to_le_bytes());
                out.push(v.field_type().code());
                match v {
                    FieldValue::F64(x) => out.extend_from_slice(&x.to_le_bytes()),
                    FieldValue::I64(x) => out.extend_from_slice(&x.to_le_bytes()),
                    FieldValue::U64(x) => out.extend_from_slice(&x.to_le_bytes()),
                    FieldValue::Bool(x) => out.push(*x as u8),
                    FieldValue::Str(s) => put_str32(out, s),
                }
            }
        };
        match rows {
            None => (0..self.rows.len()).for_each(&mut put_row),
            Some(r) => r.iter().for_each(|&i| put_row(i as usize)),
        }
    }

    /// Decodes a batch written by [`RowBatch::encode_rows`] (key references are an error).
    pub fn decode(buf: &[u8]) -> Result<RowBatch> {
        Self::decode_keyed(buf, |_| None)
    }

    /// Decodes a batch written by [`RowBatch::encode_rows_keyed`], resolving key references
    /// with `resolve`; an id it does not know is a named error.
    pub fn decode_keyed<'k>(
        buf: &[u8],
        resolve: impl Fn(u32) -> Option<&'k [u8]>,
    ) -> Result<RowBatch> {
        Self::decode_inner(buf, resolve, |_| {})
    }

    /// [`RowBatch::decode_keyed`], also returning for each row the series id it named
    /// (`None`: its key was written inline) — what `tempora repair` needs to re-encode a
    /// record without some of its rows.
    pub fn decode_with_refs<'k>(
        buf: &[u8],
        resolve: impl Fn(u32) -> Option<&'k [u8]>,
    ) -> Result<(RowBatch, Vec<Option<u32>>)> {
        let mut refs = Vec::new();
        let b = Self::decode_inner(buf, resolve, |r| refs.push(r))?;
        Ok((b, refs))
    }

    fn decode_inner<'k>(
        buf: &[u8],
        resolve: impl Fn(u32) -> Option<&'k [u8]>,
        mut on_row: impl FnMut(Option<u32>),
    ) -> Result<RowBatch> {
        let mut r = Reader { buf, pos: 0 };
        let table = r.str32()?;
        let tag_names = r.names()?;
        let field_names = r.names()?;
        let n_rows = r.u32()? as usize;
        // Each row needs at least 14 bytes, which bounds a hostile count.
        if n_rows > buf.len() / 14 + 1 {
            return Err(r.err("row count larger than the record"));
        }
        let mut b = RowBatch {
            table,
            tag_names,
            field_names,
            ..Default::default()
        };
        b.rows.reserve(n_rows);
        for _ in 0..n_rows {
            let head = r.u32()?;
            let key = if head & KEY_REF != 0 {
                on_row(Some(head & !KEY_REF));
                resolve(head & !KEY_REF).ok_or_else(|| r.err("reference to an unknown series"))?
            } else {
                on_row(None);
                r.take(head as usize)?
            };
            let key_len = key.len();
            let key_start = b.keys.len() as u32;
            b.keys.extend_from_slice(key);
            let time = r.i64()?;
            let nf = r.u16()?;
            let fields_start = b.fields.len() as u32;
            for _ in 0..nf {
                let idx = r.u16()?;
                if idx as usize >= b.field_names.len() {
                    return Err(r.err("field index out of range"));
                }
                let code = r.u8()?;
                let v = match FieldType::from_code(code) {
                    Some(FieldType::F64) => FieldValue::F64(f64::from_le_bytes(r.arr()?)),
                    Some(FieldType::I64) => FieldValue::I64(i64::from_le_bytes(r.arr()?)),
                    Some(FieldType::U64) => FieldValue::U64(u64::from_le_bytes(r.arr()?)),
                    Some(FieldType::Bool) => FieldValue::Bool(r.u8()? != 0),
                    Some(FieldType::Str) => FieldValue::Str(r.str32()?),
                    None => return Err(r.err("unknown field type code")),
                };
                b.fields.push((idx, v));
            }
            b.rows.push(RowMeta {
                key_start,
                key_len: key_len as u32,
                time,
                fields_start,
                fields_len: nf,
            });
        }
        if r.pos != buf.len() {
            return Err(r.err("trailing bytes after the last row"));
        }
        Ok(b)
    }
}

fn put_str32(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

fn put_names(out: &mut Vec<u8>, names: &[String]) {
    out.extend_from_slice(&(names.len() as u16).to_le_bytes());
    for n in names {
        out.extend_from_slice(&(n.len() as u16).to_le_bytes());
        out.extend_from_slice(n.as_bytes());
    }
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn err(&self, reason: &'static str) -> ModelError {
        ModelError::CorruptBatch {
            offset: self.pos,
            reason,
        }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.buf.len() - self.pos < n {
            return Err(self.err("truncated"));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn arr<const N: usize>(&mut self) -> Result<[u8; N]> {
        Ok(self.take(N)?.try_into().expect("length checked"))
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.arr()?))
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.arr()?))
    }
    fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_le_bytes(self.arr()?))
    }
    fn str_n(&mut self, n: usize) -> Result<String> {
        let start = self.pos;
        let bytes = self.take(n)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| ModelError::CorruptBatch {
            offset: start,
            reason: "string is not UTF-8",
        })
    }
    fn str32(&mut self) -> Result<String> {
        let n = self.u32()? as usize;
        self.str_n(n)
    }
    fn names(&mut self) -> Result<Vec<String>> {
        let n = self.u16()? as usize;
        let mut v = Vec::with_capacity(n.min(self.buf.len()));
        for _ in 0..n {
            let len = self.u16()? as usize;
            v.push(self.str_n(len)?);
        }
        Ok(v)
    }
}

/// Builds a [`RowBatch`] row by row, validating names and limits.
#[derive(Debug, Default)]
pub struct RowBatchBuilder {
    batch: RowBatch,
    tag_idx: FxHashMap<String, u16>,
    field_idx: FxHashMap<String, u16>,
    /// Scratch for sorting a row's tags.
    order: Vec<usize>,
}

/// Checks a table, tag or field name.
pub fn validate_name(name: &str) -> Result<()> {
    let reason = if name.is_empty() {
        "empty"
    } else if name.len() > MAX_NAME_LEN {
        "longer than 1024 bytes"
    } else if name == crate::TIME_COLUMN {
        "`time` is the timestamp column"
    } else if name.starts_with("__") {
        "names starting with `__` are reserved"
    } else if name.chars().any(char::is_control) {
        "names must not contain control characters (NUL, newlines, ...)"
    } else {
        return Ok(());
    };
    Err(ModelError::InvalidName {
        name: name.chars().take(64).collect(),
        reason,
    })
}

impl RowBatchBuilder {
    pub fn new(table: &str) -> Result<Self> {
        validate_name(table)?;
        Ok(Self {
            batch: RowBatch {
                table: table.to_string(),
                ..Default::default()
            },
            ..Default::default()
        })
    }

    pub fn len(&self) -> usize {
        self.batch.rows.len()
    }
    pub fn is_empty(&self) -> bool {
        self.batch.rows.is_empty()
    }

    /// Adds one row. On error nothing is added.
    pub fn push(
        &mut self,
        tags: &[(&str, &str)],
        fields: &[(&str, FieldValue)],
        time: Timestamp,
    ) -> Result<()> {
        if fields.is_empty() {
            return Err(ModelError::NoFields);
        }
        check_count("tags in a row", tags.len(), MAX_TAGS_PER_ROW)?;
        // A name already interned was validated when it was first seen.
        for (k, _) in tags {
            if !self.tag_idx.contains_key(*k) {
                validate_name(k)?;
            }
        }
        self.check_fields(fields)?;
        let key_start = self.batch.keys.len();
        if let Err(e) = encode_series_key_with(tags, &mut self.batch.keys, &mut self.order) {
            self.batch.keys.truncate(key_start);
            return Err(e);
        }
        for (k, _) in tags {
            intern(&mut self.tag_idx, &mut self.batch.tag_names, k);
        }
        let key_len = (self.batch.keys.len() - key_start) as u32;
        self.push_fields(key_start as u32, key_len, fields, time);
        Ok(())
    }

    /// Adds a row of the same series as the last row pushed: its key is shared with that
    /// row, neither encoded nor copied again (a remote-write series carries many samples).
    /// On error nothing is added. Panics when no row has been pushed.
    pub fn push_same_series(
        &mut self,
        fields: &[(&str, FieldValue)],
        time: Timestamp,
    ) -> Result<()> {
        let last = *self
            .batch
            .rows
            .last()
            .expect("push_same_series follows a push");
        self.check_fields(fields)?;
        self.push_fields(last.key_start, last.key_len, fields, time);
        Ok(())
    }

    /// Checks a row's fields against the limits and name rules.
    fn check_fields(&self, fields: &[(&str, FieldValue)]) -> Result<()> {
        if fields.is_empty() {
            return Err(ModelError::NoFields);
        }
        check_count("fields in a row", fields.len(), MAX_FIELDS_PER_ROW)?;
        for (k, _) in fields {
            if !self.field_idx.contains_key(*k) {
                validate_name(k)?;
            }
        }
        // Counting new names costs a lookup each: only when the limit could be reached.
        if self.batch.field_names.len() + fields.len() > MAX_FIELDS_PER_ROW {
            let new_fields = fields
                .iter()
                .filter(|(k, _)| !self.field_idx.contains_key(*k))
                .count();
            check_count(
                "distinct fields in a batch",
                self.batch.field_names.len() + new_fields,
                MAX_FIELDS_PER_ROW,
            )?;
        }
        Ok(())
    }

    /// Appends a checked row whose key is `keys[key_start..key_start + key_len]`.
    fn push_fields(
        &mut self,
        key_start: u32,
        key_len: u32,
        fields: &[(&str, FieldValue)],
        time: Timestamp,
    ) {
        let fields_start = self.batch.fields.len();
        for (k, v) in fields {
            let idx = intern(&mut self.field_idx, &mut self.batch.field_names, k);
            self.batch.fields.push((idx, v.clone()));
        }
        self.batch.rows.push(RowMeta {
            key_start,
            key_len,
            time: time.0,
            fields_start: fields_start as u32,
            fields_len: fields.len() as u16,
        });
    }

    pub fn finish(self) -> RowBatch {
        self.batch
    }
}

fn check_count(what: &'static str, count: usize, limit: usize) -> Result<()> {
    if count > limit {
        return Err(ModelError::TooMany { what, count, limit });
    }
    Ok(())
}

fn intern(map: &mut FxHashMap<String, u16>, names: &mut Vec<String>, name: &str) -> u16 {
    if let Some(&i) = map.get(name) {
        return i;
    }
    let i = names.len() as u16;
    names.push(name.to_string());
    map.insert(name.to_string(), i);
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> RowBatch {
        let mut b = RowBatchBuilder::new("cpu").unwrap();
        b.push(
            &[("host", "a"), ("dc", "x")],
            &[("v", FieldValue::F64(1.5)), ("n", FieldValue::I64(-3))],
            Timestamp(10),
        )
        .unwrap();
        b.push(
            &[("host", "b")],
            &[
                ("s", FieldValue::Str("hi\0there".into())),
                ("ok", FieldValue::Bool(true)),
                ("u", FieldValue::U64(u64::MAX)),
            ],
            Timestamp(-5),
        )
        .unwrap();
        b.finish()
    }

    #[test]
    fn encode_decode_roundtrip() {
        let b = sample();
        let mut buf = Vec::new();
        b.encode_rows(None, &mut buf);
        assert_eq!(RowBatch::decode(&buf).unwrap(), b);
    }

    #[test]
    fn encode_subset() {
        let b = sample();
        let mut buf = Vec::new();
        b.encode_rows(Some(&[1]), &mut buf);
        let d = RowBatch::decode(&buf).unwrap();
        assert_eq!(d.len(), 1);
        assert_eq!(d.row(0).time, Timestamp(-5));
        assert_eq!(d.row(0).key, b.row(1).key);
    }

    #[test]
    fn keyed_encoding_resolves_references() {
        let b = sample();
        let mut buf = Vec::new();
        b.encode_rows_keyed(None, |i| (i == 1).then_some(7), &mut buf);
        let mut plain = Vec::new();
        b.encode_rows(None, &mut plain);
        assert!(buf.len() < plain.len());
        let key1 = b.row(1).key.to_vec();
        let d = RowBatch::decode_keyed(&buf, |id| (id == 7).then_some(key1.as_slice())).unwrap();
        assert_eq!(d, b);
        let err = RowBatch::decode(&buf).unwrap_err();
        assert!(err.to_string().contains("unknown series"), "{err}");
    }

    /// Rows pushed as "the same series" read back as rows pushed with their tags, share the
    /// key bytes, encode to the same WAL payload, and a refused one adds nothing.
    #[test]
    fn same_series_rows_share_their_key() {
        let tags = [("host", "a"), ("dc", "eu")];
        let (mut shared, mut plain) = (
            RowBatchBuilder::new("t").unwrap(),
            RowBatchBuilder::new("t").unwrap(),
        );
        shared
            .push(&tags, &[("v", FieldValue::F64(1.0))], Timestamp(1))
            .unwrap();
        plain
            .push(&tags, &[("v", FieldValue::F64(1.0))], Timestamp(1))
            .unwrap();
        for t in 2..5 {
            let f = [("v", FieldValue::F64(t as f64)), ("n", FieldValue::I64(t))];
            shared.push_same_series(&f, Timestamp(t)).unwrap();
            plain.push(&tags, &f, Timestamp(t)).unwrap();
        }
        let bad = [("__x", FieldValue::F64(0.0))];
        assert!(shared.push_same_series(&bad, Timestamp(9)).is_err());
        assert!(shared.push_same_series(&[], Timestamp(9)).is_err());
        let (shared, plain) = (shared.finish(), plain.finish());
        assert_eq!(shared.len(), 4);
        assert_eq!(shared.keys.len() * 4, plain.keys.len(), "one key, not four");
        for i in 0..4 {
            let (a, b) = (shared.row(i), plain.row(i));
            assert_eq!(
                (a.key, a.time, a.fields),
                (b.key, b.time, b.fields),
                "row {i}"
            );
        }
        let (mut a, mut b) = (Vec::new(), Vec::new());
        shared.encode_rows(None, &mut a);
        plain.encode_rows(None, &mut b);
        assert_eq!(a, b);
        assert_eq!(RowBatch::decode(&a).unwrap(), plain);
    }

    #[test]
    fn every_truncation_is_an_error() {
        let mut buf = Vec::new();
        sample().encode_rows(None, &mut buf);
        for cut in 0..buf.len() {
            assert!(RowBatch::decode(&buf[..cut]).is_err(), "cut at {cut}");
        }
        buf.push(0);
        assert!(RowBatch::decode(&buf).is_err(), "trailing byte");
    }

    #[test]
    fn bad_rows_rejected_without_side_effects() {
        let mut b = RowBatchBuilder::new("t").unwrap();
        let f = [("v", FieldValue::F64(1.0))];
        type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, Vec<(&'a str, FieldValue)>);
        let cases: Vec<Case> = vec![
            ("no fields", vec![], vec![]),
            ("dup tag", vec![("a", "1"), ("a", "2")], f.to_vec()),
            ("time as tag", vec![("time", "1")], f.to_vec()),
            (
                "reserved field",
                vec![],
                vec![("__x", FieldValue::F64(1.0))],
            ),
            ("empty tag name", vec![("", "1")], f.to_vec()),
        ];
        for (name, tags, fields) in cases {
            assert!(b.push(&tags, &fields, Timestamp(0)).is_err(), "{name}");
            assert!(b.is_empty(), "{name}");
        }
        assert!(b.finish().keys.is_empty());
    }

    #[test]
    fn new_rejects_bad_table_name() {
        assert!(RowBatchBuilder::new("").is_err());
        assert!(RowBatchBuilder::new("__t").is_err());
    }
}
