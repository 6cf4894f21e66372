//! Table schemas and schema-on-write.
//!
//! A table's schema only grows. A row is accepted when every name it uses is of the kind the
//! schema already knows (tag or field) and every field value has the field's type; the first
//! accepted row that uses a new name decides its kind and type. A rejected row changes nothing.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::batch::RowBatch;
use crate::key::decode_series_key;
use crate::value::FieldType;

/// What a column is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ColumnKind {
    Tag,
    Field(FieldType),
}

/// One row of a batch that was not accepted, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowRejection {
    /// 0-based index of the row in its batch.
    pub row: usize,
    pub reason: String,
}

/// The columns of one table, in the order they were first written (tags and fields mixed).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TableSchema {
    pub name: String,
    columns: Vec<(String, ColumnKind)>,
    #[serde(skip)]
    by_name: HashMap<String, usize>,
}

impl TableSchema {
    pub fn new(name: &str) -> Self {
        Self {
            name: name.to_string(),
            ..Default::default()
        }
    }

    /// A schema of the given columns, in order (names are not checked: for tests and tools).
    pub fn with_columns(name: &str, columns: Vec<(String, ColumnKind)>) -> Self {
        let mut s = Self {
            name: name.to_string(),
            columns,
            by_name: HashMap::new(),
        };
        s.reindex();
        s
    }

    /// Rebuilds the name lookup after deserialisation.
    pub fn reindex(&mut self) {
        self.by_name = self
            .columns
            .iter()
            .enumerate()
            .map(|(i, (n, _))| (n.clone(), i))
            .collect();
    }

    pub fn columns(&self) -> &[(String, ColumnKind)] {
        &self.columns
    }

    pub fn kind(&self, name: &str) -> Option<ColumnKind> {
        self.by_name.get(name).map(|&i| self.columns[i].1)
    }

    pub fn tags(&self) -> impl Iterator<Item = &str> {
        self.columns
            .iter()
            .filter(|(_, k)| *k == ColumnKind::Tag)
            .map(|(n, _)| n.as_str())
    }

    pub fn fields(&self) -> impl Iterator<Item = (&str, FieldType)> {
        self.columns.iter().filter_map(|(n, k)| match k {
            ColumnKind::Field(t) => Some((n.as_str(), *t)),
            ColumnKind::Tag => None,
        })
    }

    fn add(&mut self, name: &str, kind: ColumnKind) {
        self.by_name.insert(name.to_string(), self.columns.len());
        self.columns.push((name.to_string(), kind));
    }

    /// Checks every row of `batch`, grows the schema with the names accepted rows introduce,
    /// and returns the rejected rows in ascending order. `max_columns` bounds the table width.
    pub fn check_and_grow(&mut self, batch: &RowBatch, max_columns: usize) -> Vec<RowRejection> {
        let mut rejected = Vec::new();
        // Keys need decoding only when a tag name could clash with a field.
        let tag_check = batch.tag_names().iter().any(|t| {
            matches!(self.kind(t), Some(ColumnKind::Field(_))) || batch.field_names().contains(t)
        });
        let mut expected: Vec<Option<ColumnKind>> =
            batch.field_names().iter().map(|n| self.kind(n)).collect();
        let mut tentative: Vec<(u16, FieldType)> = Vec::new();
        for (i, row) in batch.rows().enumerate() {
            tentative.clear();
            let reason = self.row_problem(row, tag_check, &expected, &mut tentative, batch);
            if let Some(reason) = reason {
                rejected.push(RowRejection { row: i, reason });
                continue;
            }
            let new_tags = if any_new_tag(self, batch) {
                row_new_tags(self, row.key)
            } else {
                Vec::new()
            };
            if self.columns.len() + tentative.len() + new_tags.len() > max_columns {
                rejected.push(RowRejection {
                    row: i,
                    reason: format!(
                        "table {:?} would exceed the limit of {max_columns} columns",
                        self.name
                    ),
                });
                continue;
            }
            for t in new_tags {
                self.add(&t, ColumnKind::Tag);
            }
            for &(idx, ty) in &tentative {
                if expected[idx as usize].is_none() {
                    expected[idx as usize] = Some(ColumnKind::Field(ty));
                    self.add(&batch.field_names()[idx as usize], ColumnKind::Field(ty));
                }
            }
        }
        rejected
    }

    fn row_problem(
        &self,
        row: crate::batch::BatchRow<'_>,
        tag_check: bool,
        expected: &[Option<ColumnKind>],
        tentative: &mut Vec<(u16, FieldType)>,
        batch: &RowBatch,
    ) -> Option<String> {
        for (idx, v) in row.fields {
            let name = &batch.field_names()[*idx as usize];
            let ty = v.field_type();
            let want = expected[*idx as usize]
                .or_else(|| self.kind(name))
                .or_else(|| {
                    tentative
                        .iter()
                        .find(|(i, _)| i == idx)
                        .map(|(_, t)| ColumnKind::Field(*t))
                });
            match want {
                Some(ColumnKind::Tag) => {
                    return Some(format!(
                        "field {name:?} is already a tag of table {:?}",
                        self.name
                    ));
                }
                Some(ColumnKind::Field(t)) if t != ty => {
                    return Some(format!(
                        "field {name:?} has type {ty} but table {:?} has it as {t}",
                        self.name
                    ));
                }
                Some(_) => {}
                None => tentative.push((*idx, ty)),
            }
        }
        if tag_check {
            let tags = decode_series_key(row.key).unwrap_or_default();
            for (k, _) in &tags {
                let is_field = matches!(self.kind(k), Some(ColumnKind::Field(_)))
                    || tentative
                        .iter()
                        .any(|(i, _)| batch.field_names()[*i as usize] == *k);
                if is_field {
                    return Some(format!(
                        "tag {k:?} is already a field of table {:?}",
                        self.name
                    ));
                }
            }
        }
        None
    }
}

/// Whether the batch names a tag the schema does not know yet (decoding keys is needed only then).
fn any_new_tag(schema: &TableSchema, batch: &RowBatch) -> bool {
    batch.tag_names().iter().any(|t| schema.kind(t).is_none())
}

fn row_new_tags(schema: &TableSchema, key: &[u8]) -> Vec<String> {
    let tags = decode_series_key(key).unwrap_or_default();
    tags.into_iter()
        .map(|(k, _)| k)
        .filter(|k| schema.kind(k).is_none())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FieldValue as V, RowBatchBuilder, Timestamp};

    type Row<'a> = (Vec<(&'a str, &'a str)>, Vec<(&'a str, V)>);

    fn batch(rows: Vec<Row<'_>>) -> RowBatch {
        let mut b = RowBatchBuilder::new("t").unwrap();
        for (tags, fields) in rows {
            b.push(&tags, &fields, Timestamp(0)).unwrap();
        }
        b.finish()
    }

    #[test]
    fn table_of_cases() {
        struct Case<'a> {
            name: &'a str,
            rows: Vec<Row<'a>>,
            rejected: Vec<usize>,
            columns: Vec<(&'a str, ColumnKind)>,
        }
        use ColumnKind::*;
        use FieldType::*;
        let cases = vec![
            Case {
                name: "first row sets types",
                rows: vec![(vec![("h", "a")], vec![("v", V::F64(1.0))])],
                rejected: vec![],
                columns: vec![("h", Tag), ("v", Field(F64))],
            },
            Case {
                name: "type conflict rejects only that row",
                rows: vec![
                    (vec![], vec![("v", V::F64(1.0))]),
                    (vec![], vec![("v", V::I64(1))]),
                    (vec![], vec![("v", V::F64(2.0))]),
                ],
                rejected: vec![1],
                columns: vec![("v", Field(F64))],
            },
            Case {
                name: "rejected row defines nothing",
                rows: vec![
                    (vec![], vec![("v", V::F64(1.0)), ("w", V::Bool(true))]),
                    (
                        vec![],
                        vec![("w", V::Bool(false)), ("v", V::Str("x".into()))],
                    ),
                    (vec![], vec![("v", V::F64(1.0))]),
                ],
                rejected: vec![1],
                columns: vec![("v", Field(F64)), ("w", Field(Bool))],
            },
            Case {
                name: "new field decided by first accepted row",
                rows: vec![
                    (vec![], vec![("v", V::F64(1.0))]),
                    (vec![], vec![("v", V::I64(1)), ("z", V::I64(1))]),
                    (vec![], vec![("v", V::F64(1.0)), ("z", V::U64(1))]),
                ],
                rejected: vec![1],
                columns: vec![("v", Field(F64)), ("z", Field(U64))],
            },
            Case {
                name: "same name as tag and field",
                rows: vec![
                    (vec![("h", "a")], vec![("v", V::F64(1.0))]),
                    (vec![], vec![("h", V::F64(1.0))]),
                    (vec![("v", "x")], vec![("w", V::F64(1.0))]),
                ],
                rejected: vec![1, 2],
                columns: vec![("h", Tag), ("v", Field(F64))],
            },
        ];
        for c in cases {
            let mut s = TableSchema::new("t");
            let rej = s.check_and_grow(&batch(c.rows), 100);
            let got: Vec<usize> = rej.iter().map(|r| r.row).collect();
            assert_eq!(got, c.rejected, "{}", c.name);
            let cols: Vec<(&str, ColumnKind)> =
                s.columns().iter().map(|(n, k)| (n.as_str(), *k)).collect();
            assert_eq!(cols, c.columns, "{}", c.name);
        }
    }

    #[test]
    fn column_limit_rejects_rows() {
        let mut s = TableSchema::new("t");
        let b = batch(vec![
            (vec![], vec![("a", V::F64(1.0))]),
            (vec![], vec![("b", V::F64(1.0)), ("c", V::F64(1.0))]),
            (vec![], vec![("a", V::F64(2.0))]),
        ]);
        let rej = s.check_and_grow(&b, 2);
        assert_eq!(rej.len(), 1);
        assert_eq!(rej[0].row, 1);
        assert!(
            rej[0].reason.contains("limit of 2 columns"),
            "{}",
            rej[0].reason
        );
    }

    #[test]
    fn conflict_message_names_field_and_types() {
        let mut s = TableSchema::new("cpu");
        let b = batch(vec![
            (vec![], vec![("v", V::F64(1.0))]),
            (vec![], vec![("v", V::Str("x".into()))]),
        ]);
        let rej = s.check_and_grow(&b, 10);
        assert_eq!(
            rej[0].reason,
            "field \"v\" has type string but table \"cpu\" has it as float"
        );
    }
}
