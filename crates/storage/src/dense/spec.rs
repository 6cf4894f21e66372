//! A dense table's declaration: its grid (interval), its block length and its fixed-width
//! fields, checked once when the table is created and kept in the manifest.
//!
//! Invariants: `interval_ns > 0`; `block_ns` is a positive multiple of it holding at most
//! [`MAX_SLOTS_PER_BLOCK`] slots; at most [`MAX_FIELDS`] fields, names distinct, strings of
//! 1..=[`MAX_STRING`] bytes. The field list never changes after creation (slots are fixed
//! width), so a row naming another field is refused.

use serde::{Deserialize, Serialize};
use tempora_model::FieldType;

use super::header::Header;
use super::layout::{DenseField, MAX_STRING};

/// Most slots in one block file.
pub const MAX_SLOTS_PER_BLOCK: i64 = 1 << 24;
/// Most fields of a dense table.
pub const MAX_FIELDS: usize = 1024;
/// Largest block file header (the reader takes at most 64 KiB).
pub const MAX_HEADER: usize = 60 * 1024;
/// Largest block file (its apparent size: it is mapped whole).
pub const MAX_BLOCK_BYTES: i64 = 4 << 30;
/// Slots in a block when the declaration names no block length (one day at 1 s).
pub const DEFAULT_SLOTS_PER_BLOCK: i64 = 86_400;

/// A dense table's layout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DenseSpec {
    pub interval_ns: i64,
    pub block_ns: i64,
    pub fields: Vec<DenseField>,
    /// Blocks that ended this long ago are converted to cold files ([`super::cold`]);
    /// `None`: never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cold_after_ns: Option<i64>,
}

impl DenseSpec {
    /// Checks a declaration; `block_ns` defaults to [`DEFAULT_SLOTS_PER_BLOCK`] intervals.
    pub fn new(
        interval_ns: i64,
        block_ns: Option<i64>,
        fields: Vec<DenseField>,
    ) -> Result<Self, String> {
        if interval_ns <= 0 {
            return Err(format!(
                "a dense table's interval must be positive, not {interval_ns} ns"
            ));
        }
        let block_ns = match block_ns {
            Some(b) => b,
            None => interval_ns
                .checked_mul(DEFAULT_SLOTS_PER_BLOCK)
                .ok_or_else(|| format!("interval {interval_ns} ns is too long"))?,
        };
        if block_ns <= 0 || block_ns % interval_ns != 0 {
            return Err(format!(
                "a dense table's block ({block_ns} ns) must be a positive multiple of its \
                 interval ({interval_ns} ns)"
            ));
        }
        if block_ns / interval_ns > MAX_SLOTS_PER_BLOCK {
            return Err(format!(
                "a block of {block_ns} ns holds {} slots of {interval_ns} ns; at most \
                 {MAX_SLOTS_PER_BLOCK} are allowed (choose a shorter block)",
                block_ns / interval_ns
            ));
        }
        if fields.is_empty() || fields.len() > MAX_FIELDS {
            return Err(format!(
                "a dense table declares 1 to {MAX_FIELDS} fields, not {}",
                fields.len()
            ));
        }
        let header =
            super::layout::HEADER_LEN + fields.iter().map(|f| 5 + f.name.len()).sum::<usize>();
        if header > MAX_HEADER {
            return Err(format!(
                "the fields' names take {header} bytes in each block header; at most \
                 {MAX_HEADER} (use fewer or shorter names)"
            ));
        }
        let slot = super::layout::slot_len(&fields) as i64;
        if (block_ns / interval_ns).saturating_mul(slot) > MAX_BLOCK_BYTES {
            return Err(format!(
                "a block of {} slots of {slot} bytes is larger than {MAX_BLOCK_BYTES} bytes \
                 (choose a shorter block)",
                block_ns / interval_ns
            ));
        }
        for (i, f) in fields.iter().enumerate() {
            if fields[..i].iter().any(|g| g.name == f.name) {
                return Err(format!("field {:?} is declared twice", f.name));
            }
            if f.ty == FieldType::Str && !(1..=MAX_STRING).contains(&f.max_len) {
                return Err(format!(
                    "text field {:?} of a dense table needs a maximum length of 1 to \
                     {MAX_STRING} bytes, as in VARCHAR(32); it has {}",
                    f.name, f.max_len
                ));
            }
        }
        Ok(Self {
            interval_ns,
            block_ns,
            fields,
            cold_after_ns: None,
        })
    }

    /// The same layout converting blocks to cold files `after` ns past their end.
    pub fn with_cold_after(mut self, after: Option<i64>) -> Result<Self, String> {
        if let Some(a) = after
            && a <= 0
        {
            return Err(format!("cold_after must be positive, not {a} ns"));
        }
        self.cold_after_ns = after;
        Ok(self)
    }

    /// The position of field `name`.
    pub fn field_index(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|f| f.name == name)
    }

    /// The header of the block starting at `block_start`.
    pub fn header(&self, block_start: i64) -> Header {
        Header {
            interval_ns: self.interval_ns,
            block_start,
            block_ns: self.block_ns,
            fields: self.fields.clone(),
        }
    }

    /// Bytes of one slot.
    pub fn slot_len(&self) -> usize {
        super::layout::slot_len(&self.fields)
    }

    /// The field names, comma separated (for messages).
    pub fn field_list(&self) -> String {
        let names: Vec<&str> = self.fields.iter().map(|f| f.name.as_str()).collect();
        names.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(name: &str, ty: FieldType, max_len: usize) -> DenseField {
        DenseField {
            name: name.into(),
            ty,
            max_len,
        }
    }

    #[test]
    fn declarations_checked_and_refused_by_name() {
        let s = DenseSpec::new(1_000_000_000, None, vec![f("kwh", FieldType::F64, 8)]).unwrap();
        assert_eq!(s.block_ns, 86_400 * 1_000_000_000);
        type Case = (
            &'static str,
            i64,
            Option<i64>,
            Vec<DenseField>,
            &'static str,
        );
        let cases: Vec<Case> = vec![
            (
                "zero interval",
                0,
                None,
                vec![f("a", FieldType::F64, 8)],
                "positive",
            ),
            (
                "block off the interval",
                3,
                Some(10),
                vec![f("a", FieldType::F64, 8)],
                "multiple",
            ),
            (
                "huge block",
                1,
                Some(1 << 30),
                vec![f("a", FieldType::F64, 8)],
                "at most",
            ),
            ("no fields", 1, None, vec![], "1 to"),
            (
                "twice",
                1,
                None,
                vec![f("a", FieldType::F64, 8), f("a", FieldType::I64, 8)],
                "twice",
            ),
            (
                "unsized text",
                1,
                None,
                vec![f("s", FieldType::Str, 0)],
                "VARCHAR",
            ),
        ];
        for (name, i, b, fields, want) in cases {
            let e = DenseSpec::new(i, b, fields).unwrap_err();
            assert!(e.contains(want), "{name}: {e}");
        }
    }
}
