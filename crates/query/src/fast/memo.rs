//! Recognised texts, remembered: a dashboard sends the same text every few seconds, and a
//! PostgreSQL client's extended protocol has it recognised at `Parse` and again at `Execute`.
//! Parsing the text is about a tenth of a cached latest-value query's server time.
//!
//! An entry is the recognised query and the table schema it was recognised against; it is
//! used only while that table's current schema is the same snapshot (`Arc::ptr_eq`), so a new
//! column, a dropped or re-created table makes the text be recognised again. Only texts the
//! fast path takes are remembered (the others go to DataFusion, whose planning dwarfs a parse).
//! At most [`MEMO_ENTRIES`] entries: a full memo is emptied before the next insert.

use std::collections::HashMap;
use std::sync::Arc;

use tempora_model::TableSchema;

use super::FastQuery;

/// Most recognised texts kept.
pub const MEMO_ENTRIES: usize = 256;

/// Longest text remembered (bytes); longer ones are recognised each time.
pub const MEMO_SQL_MAX: usize = 4096;

#[derive(Default)]
pub struct Memo {
    entries: HashMap<(String, String), (FastQuery, Arc<TableSchema>)>,
}

impl Memo {
    /// The remembered query of `sql` in `db`, if `current` (the schema of the table it reads,
    /// looked up now) is the snapshot it was recognised against.
    pub fn get(
        &self,
        db: &str,
        sql: &str,
        current: &dyn Fn(&str) -> Option<Arc<TableSchema>>,
    ) -> Option<FastQuery> {
        let (q, schema) = self.entries.get(&(db.to_string(), sql.to_string()))?;
        let now = current(q.table())?;
        Arc::ptr_eq(&now, schema).then(|| q.clone())
    }

    /// Remembers `q`, recognised from `sql` in `db` against `schema`.
    pub fn put(&mut self, db: &str, sql: &str, q: &FastQuery, schema: Arc<TableSchema>) {
        if sql.len() > MEMO_SQL_MAX {
            return;
        }
        if self.entries.len() >= MEMO_ENTRIES {
            self.entries.clear();
        }
        self.entries
            .insert((db.to_string(), sql.to_string()), (q.clone(), schema));
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tempora_model::{ColumnKind, FieldType};

    fn schema(fields: &[&str]) -> Arc<TableSchema> {
        let mut columns = vec![("host".to_string(), ColumnKind::Tag)];
        columns.extend(
            fields
                .iter()
                .map(|f| (f.to_string(), ColumnKind::Field(FieldType::F64))),
        );
        Arc::new(TableSchema::with_columns("cpu", columns))
    }

    const SQL: &str = "SELECT host, max(v) AS m FROM cpu GROUP BY host";

    fn recognised(s: &Arc<TableSchema>) -> FastQuery {
        let s = s.clone();
        super::super::recognize(SQL, &move |t| (t == "cpu").then(|| s.clone())).unwrap()
    }

    #[test]
    fn named_cases() {
        let v1 = schema(&["v"]);
        let v1_again = schema(&["v"]);
        let mut memo = Memo::default();
        memo.put("db", SQL, &recognised(&v1), v1.clone());
        let at = |s: &Arc<TableSchema>| {
            let s = s.clone();
            move |t: &str| (t == "cpu").then(|| s.clone())
        };
        type Lookup = Box<dyn Fn(&str) -> Option<Arc<TableSchema>>>;
        let cases: Vec<(&str, &str, &str, Lookup, bool)> = vec![
            (
                "same text, same schema snapshot",
                "db",
                SQL,
                Box::new(at(&v1)),
                true,
            ),
            (
                "an equal schema that is another snapshot",
                "db",
                SQL,
                Box::new(at(&v1_again)),
                false,
            ),
            (
                "the table is gone",
                "db",
                SQL,
                Box::new(|_: &str| None),
                false,
            ),
            ("another database", "other", SQL, Box::new(at(&v1)), false),
            ("another text", "db", "SELECT 1", Box::new(at(&v1)), false),
        ];
        for (name, db, sql, current, hit) in cases {
            assert_eq!(memo.get(db, sql, &*current).is_some(), hit, "{name}");
        }
    }

    #[test]
    fn the_memo_is_bounded_and_skips_long_texts() {
        let s = schema(&["v"]);
        let q = recognised(&s);
        let mut memo = Memo::default();
        for i in 0..MEMO_ENTRIES {
            memo.put("db", &format!("{SQL} -- {i}"), &q, s.clone());
        }
        assert_eq!(memo.len(), MEMO_ENTRIES);
        memo.put("db", SQL, &q, s.clone());
        assert_eq!(memo.len(), 1, "a full memo is emptied first");
        let long = format!("{SQL} -- {}", "x".repeat(MEMO_SQL_MAX));
        memo.put("db", &long, &q, s.clone());
        assert_eq!(memo.len(), 1);
    }
}
