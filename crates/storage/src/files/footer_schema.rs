//! The Parquet footer's Thrift structs as the Parquet crate decodes them: for each struct,
//! the field ids it reads and the type it reads them as.
//!
//! The crate reads a known field by its id as the type the format gives it, whatever type
//! the field's header declares; it skips an unknown field by the declared type. So a footer
//! whose known fields declare other types is read differently by the crate and by a walk
//! that follows the declared types, and the bounds [`super::footer_guard`] proves for its
//! walk would say nothing about the crate's. The guard therefore refuses a known field whose
//! declared type differs from the one here; then both read every byte alike.
//!
//! Invariants:
//! - Every struct the crate decodes from a footer is here with every field id it reads (from
//!   parquet.thrift and the crate's `file/metadata/thrift` decoders); enums are i32.
//! - A field listed here that the crate happens to skip only makes the guard stricter, and
//!   the writer always declares the format's type, so real footers pass (tested).

/// A Thrift type as the format gives it.
#[derive(Debug, Clone, Copy)]
pub enum Ty {
    Bool,
    I8,
    I16,
    I32,
    I64,
    Double,
    Binary,
    List(&'static Ty),
    Struct(&'static Struct),
    /// SchemaElement's `num_children`: an i32 the crate allocates a vector by, so it must
    /// be at most the number of schema elements (each child is one of them).
    Children,
}

impl Ty {
    /// The type's name in messages: `i64`, `list`, `struct SchemaElement`.
    pub fn name(&self) -> String {
        match self {
            Bool => "bool".into(),
            I8 => "byte".into(),
            I16 => "i16".into(),
            I32 | Children => "i32".into(),
            I64 => "i64".into(),
            Double => "double".into(),
            Binary => "binary".into(),
            List(_) => "list".into(),
            Struct(s) => format!("struct {}", s.name),
        }
    }
}

/// A struct (or union): its name for messages and its fields by id.
#[derive(Debug)]
pub struct Struct {
    pub name: &'static str,
    pub fields: &'static [(i16, Ty)],
}

impl Struct {
    /// The type the crate reads field `id` as, when it reads it.
    pub fn field(&self, id: i16) -> Option<Ty> {
        self.fields.iter().find(|(i, _)| *i == id).map(|(_, t)| *t)
    }
}

use Ty::*;

/// A union variant or struct with no fields (and any struct the crate does not read).
pub const EMPTY: Struct = Struct {
    name: "empty struct",
    fields: &[],
};

pub const FILE_METADATA: Struct = Struct {
    name: "FileMetaData",
    fields: &[
        (1, I32),
        (2, List(&Struct(&SCHEMA_ELEMENT))),
        (3, I64),
        (4, List(&Struct(&ROW_GROUP))),
        (5, List(&Struct(&KEY_VALUE))),
        (6, Binary),
        (7, List(&Struct(&COLUMN_ORDER))),
        (8, Struct(&ENCRYPTION_ALGORITHM)),
        (9, Binary),
    ],
};

const SCHEMA_ELEMENT: Struct = Struct {
    name: "SchemaElement",
    fields: &[
        (1, I32),
        (2, I32),
        (3, I32),
        (4, Binary),
        (5, Children),
        (6, I32),
        (7, I32),
        (8, I32),
        (9, I32),
        (10, Struct(&LOGICAL_TYPE)),
    ],
};

const LOGICAL_TYPE: Struct = Struct {
    name: "LogicalType",
    fields: &[
        (1, Struct(&EMPTY)),
        (2, Struct(&EMPTY)),
        (3, Struct(&EMPTY)),
        (4, Struct(&EMPTY)),
        (5, Struct(&DECIMAL_TYPE)),
        (6, Struct(&EMPTY)),
        (7, Struct(&TIME_TYPE)),
        (8, Struct(&TIME_TYPE)),
        (10, Struct(&INT_TYPE)),
        (11, Struct(&EMPTY)),
        (12, Struct(&EMPTY)),
        (13, Struct(&EMPTY)),
        (14, Struct(&EMPTY)),
        (15, Struct(&EMPTY)),
        (16, Struct(&VARIANT_TYPE)),
        (17, Struct(&GEOMETRY_TYPE)),
        (18, Struct(&GEOGRAPHY_TYPE)),
    ],
};

const DECIMAL_TYPE: Struct = Struct {
    name: "DecimalType",
    fields: &[(1, I32), (2, I32)],
};

const TIME_TYPE: Struct = Struct {
    name: "TimeType",
    fields: &[(1, Bool), (2, Struct(&TIME_UNIT))],
};

const TIME_UNIT: Struct = Struct {
    name: "TimeUnit",
    fields: &[
        (1, Struct(&EMPTY)),
        (2, Struct(&EMPTY)),
        (3, Struct(&EMPTY)),
    ],
};

const INT_TYPE: Struct = Struct {
    name: "IntType",
    fields: &[(1, I8), (2, Bool)],
};

const VARIANT_TYPE: Struct = Struct {
    name: "VariantType",
    fields: &[(1, I8)],
};

const GEOMETRY_TYPE: Struct = Struct {
    name: "GeometryType",
    fields: &[(1, Binary)],
};

const GEOGRAPHY_TYPE: Struct = Struct {
    name: "GeographyType",
    fields: &[(1, Binary), (2, I32)],
};

const KEY_VALUE: Struct = Struct {
    name: "KeyValue",
    fields: &[(1, Binary), (2, Binary)],
};

const COLUMN_ORDER: Struct = Struct {
    name: "ColumnOrder",
    fields: &[(1, Struct(&EMPTY))],
};

const ROW_GROUP: Struct = Struct {
    name: "RowGroup",
    fields: &[
        (1, List(&Struct(&COLUMN_CHUNK))),
        (2, I64),
        (3, I64),
        (4, List(&Struct(&SORTING_COLUMN))),
        (5, I64),
        (6, I64),
        (7, I16),
    ],
};

const SORTING_COLUMN: Struct = Struct {
    name: "SortingColumn",
    fields: &[(1, I32), (2, Bool), (3, Bool)],
};

const COLUMN_CHUNK: Struct = Struct {
    name: "ColumnChunk",
    fields: &[
        (1, Binary),
        (2, I64),
        (3, Struct(&COLUMN_METADATA)),
        (4, I64),
        (5, I32),
        (6, I64),
        (7, I32),
        (8, Struct(&COLUMN_CRYPTO_METADATA)),
        (9, Binary),
    ],
};

const COLUMN_METADATA: Struct = Struct {
    name: "ColumnMetaData",
    fields: &[
        (1, I32),
        (2, List(&I32)),
        (3, List(&Binary)),
        (4, I32),
        (5, I64),
        (6, I64),
        (7, I64),
        (8, List(&Struct(&KEY_VALUE))),
        (9, I64),
        (10, I64),
        (11, I64),
        (12, Struct(&STATISTICS)),
        (13, List(&Struct(&PAGE_ENCODING_STATS))),
        (14, I64),
        (15, I32),
        (16, Struct(&SIZE_STATISTICS)),
        (17, Struct(&GEOSPATIAL_STATISTICS)),
    ],
};

const STATISTICS: Struct = Struct {
    name: "Statistics",
    fields: &[
        (1, Binary),
        (2, Binary),
        (3, I64),
        (4, I64),
        (5, Binary),
        (6, Binary),
        (7, Bool),
        (8, Bool),
    ],
};

const PAGE_ENCODING_STATS: Struct = Struct {
    name: "PageEncodingStats",
    fields: &[(1, I32), (2, I32), (3, I32)],
};

const SIZE_STATISTICS: Struct = Struct {
    name: "SizeStatistics",
    fields: &[(1, I64), (2, List(&I64)), (3, List(&I64))],
};

const GEOSPATIAL_STATISTICS: Struct = Struct {
    name: "GeospatialStatistics",
    fields: &[(1, Struct(&BOUNDING_BOX)), (2, List(&I32))],
};

const BOUNDING_BOX: Struct = Struct {
    name: "BoundingBox",
    fields: &[
        (1, Double),
        (2, Double),
        (3, Double),
        (4, Double),
        (5, Double),
        (6, Double),
        (7, Double),
        (8, Double),
    ],
};

const COLUMN_CRYPTO_METADATA: Struct = Struct {
    name: "ColumnCryptoMetaData",
    fields: &[
        (1, Struct(&EMPTY)),
        (2, Struct(&ENCRYPTION_WITH_COLUMN_KEY)),
    ],
};

const ENCRYPTION_WITH_COLUMN_KEY: Struct = Struct {
    name: "EncryptionWithColumnKey",
    fields: &[(1, List(&Binary)), (2, Binary)],
};

const ENCRYPTION_ALGORITHM: Struct = Struct {
    name: "EncryptionAlgorithm",
    fields: &[(1, Struct(&AES_GCM)), (2, Struct(&AES_GCM))],
};

const AES_GCM: Struct = Struct {
    name: "AesGcmV1",
    fields: &[(1, Binary), (2, Binary), (3, Bool)],
};
