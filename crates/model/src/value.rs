//! Field types and values.

use serde::{Deserialize, Serialize};

/// The type of a field column; fixed by the first write of that field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FieldType {
    F64,
    I64,
    U64,
    Bool,
    Str,
}

impl FieldType {
    /// One-byte code used in binary encodings.
    pub fn code(self) -> u8 {
        match self {
            FieldType::F64 => 0,
            FieldType::I64 => 1,
            FieldType::U64 => 2,
            FieldType::Bool => 3,
            FieldType::Str => 4,
        }
    }

    pub fn from_code(code: u8) -> Option<FieldType> {
        Some(match code {
            0 => FieldType::F64,
            1 => FieldType::I64,
            2 => FieldType::U64,
            3 => FieldType::Bool,
            4 => FieldType::Str,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            FieldType::F64 => "float",
            FieldType::I64 => "integer",
            FieldType::U64 => "unsigned",
            FieldType::Bool => "boolean",
            FieldType::Str => "string",
        }
    }
}

impl std::fmt::Display for FieldType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One field value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum FieldValue {
    F64(f64),
    I64(i64),
    U64(u64),
    Bool(bool),
    Str(String),
}

impl FieldValue {
    pub fn field_type(&self) -> FieldType {
        match self {
            FieldValue::F64(_) => FieldType::F64,
            FieldValue::I64(_) => FieldType::I64,
            FieldValue::U64(_) => FieldType::U64,
            FieldValue::Bool(_) => FieldType::Bool,
            FieldValue::Str(_) => FieldType::Str,
        }
    }
}
