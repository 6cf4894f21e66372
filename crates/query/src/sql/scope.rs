//! The databases a statement touches, for permission checks (issue 26): a pure function of
//! the statement and the session's database.
//!
//! A table named `t` or `schema.t` is in the session's database; `db.schema.t` is in `db`
//! (the catalog is the database). DDL names its database the same way (`db.public.t`).
//! A statement that names no table (`SELECT 1`, `SHOW DATABASES`, `SHOW TOKENS`) touches no
//! database: `Scope::None`.

use std::collections::BTreeSet;
use std::ops::ControlFlow;

use datafusion::sql::parser::Statement as DfStatement;
use datafusion::sql::sqlparser::ast::{self, ObjectName, Visit};

use super::ddl::{AlterTarget, TableName};
use super::{ModelStatement, Show, Statement};

/// The databases of a statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// It reads or changes no database's data.
    None,
    /// These databases (never empty).
    Databases(BTreeSet<String>),
}

impl Scope {
    fn of(set: BTreeSet<String>) -> Scope {
        match set.is_empty() {
            true => Scope::None,
            false => Scope::Databases(set),
        }
    }
}

/// The databases `stmt`, run in a session of `db`, touches.
pub fn databases(stmt: &Statement, db: &str) -> Scope {
    let one = |d: &str| Scope::of(BTreeSet::from([d.to_string()]));
    let table = |t: &TableName| one(t.database.as_deref().unwrap_or(db));
    match stmt {
        Statement::Query(q) => relations(&*q.query, db),
        Statement::Explain(e) => databases(&e.statement, db),
        Statement::Insert(s) | Statement::Delete(s) | Statement::Update(s) => relations(&**s, db),
        // SHOW TABLES, SHOW COLUMNS and the like read the session's database's catalog.
        Statement::Plan(p) => match &**p {
            DfStatement::Statement(s) => with(relations(&**s, db), db),
            _ => one(db),
        },
        // PromQL reads the metrics of the session's database.
        Statement::PromQl(_) => one(db),
        Statement::Show(Show::Databases) => Scope::None,
        Statement::Show(Show::TagValues { table: t, .. } | Show::Describe(t)) => table(t),
        Statement::CreateDatabase(c) => one(&c.name),
        Statement::DropDatabase(d) => one(&d.name),
        Statement::CreateTable(c) => table(&c.name),
        Statement::DropTable(d) => Scope::of(
            d.names
                .iter()
                .map(|t| t.database.as_deref().unwrap_or(db).to_string())
                .collect(),
        ),
        Statement::Alter(a) => match &a.target {
            AlterTarget::Database(d) => one(d),
            AlterTarget::Table(t) => table(t),
        },
        Statement::Model(ModelStatement::Create(c)) => {
            match super::parse(&c.query).ok().and_then(|mut v| v.pop()) {
                Some(s) => with(databases(&s, db), db),
                None => one(db),
            }
        }
        // Models live in the session's database.
        Statement::Model(_) => one(db),
        Statement::Token(_) | Statement::Set(_) | Statement::Session(_) => Scope::None,
    }
}

/// The databases a writing statement changes and those it reads (`None`: it does not
/// write). `INSERT … SELECT` reads its sources; `DELETE` and `UPDATE` read the rows they
/// match (as PostgreSQL asks SELECT on the columns their WHERE names), so they read every
/// database they name. An `EXPLAIN` of a write is judged as the write.
pub fn write_parts(stmt: &Statement, db: &str) -> Option<(Scope, Scope)> {
    match stmt {
        Statement::Explain(e) => write_parts(&e.statement, db),
        Statement::Insert(s) => match &**s {
            ast::Statement::Insert(ins) => {
                // The table object, not its bare name: visiting an ObjectName alone
                // reports no relation.
                let written = relations(&ins.table, db);
                let read = match &ins.source {
                    Some(q) => relations(&**q, db),
                    None => Scope::None,
                };
                // A VALUES source names no relation: it reads nothing.
                Some((with_default(written, db), read))
            }
            other => Some((relations(other, db), Scope::None)),
        },
        Statement::Delete(s) | Statement::Update(s) => {
            let all = relations(&**s, db);
            Some((all.clone(), all))
        }
        _ => None,
    }
}

/// `scope`, or the session's database when it names none.
fn with_default(scope: Scope, db: &str) -> Scope {
    match scope {
        Scope::None => Scope::of(BTreeSet::from([db.to_string()])),
        s => s,
    }
}

/// `scope` with `db` added.
fn with(scope: Scope, db: &str) -> Scope {
    let mut set = match scope {
        Scope::None => BTreeSet::new(),
        Scope::Databases(s) => s,
    };
    set.insert(db.to_string());
    Scope::of(set)
}

/// The databases of every relation named in `node`. `db.schema.t` is in `db`; shorter
/// names are in the session's database (a CTE's name counts as the session's too, which
/// asks for no more than the statement's own tables would).
fn relations<V: Visit>(node: &V, db: &str) -> Scope {
    let mut set = BTreeSet::new();
    let _ = ast::visit_relations(node, |name: &ObjectName| {
        let parts: Vec<String> = name
            .0
            .iter()
            .map(|p| match p.as_ident() {
                Some(i) => super::ddl::ident_name(i),
                None => p.to_string(),
            })
            .collect();
        match parts.as_slice() {
            [catalog, _, _] => set.insert(catalog.clone()),
            _ => set.insert(db.to_string()),
        };
        ControlFlow::<()>::Continue(())
    });
    Scope::of(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_touch_the_databases_they_name() {
        let set = |v: &[&str]| Scope::Databases(v.iter().map(|s| s.to_string()).collect());
        let cases = [
            ("a query of a table", "SELECT * FROM cpu", set(&["s"])),
            ("schema-qualified", "SELECT * FROM public.cpu", set(&["s"])),
            (
                "catalog-qualified",
                "SELECT * FROM other.public.cpu",
                set(&["other"]),
            ),
            (
                "a join across databases",
                "SELECT * FROM cpu JOIN \"B\".public.mem USING (host)",
                set(&["B", "s"]),
            ),
            (
                "a subquery in WHERE",
                "SELECT 1 WHERE EXISTS (SELECT 1 FROM x.public.t)",
                set(&["x"]),
            ),
            ("no table", "SELECT 1", Scope::None),
            ("SHOW DATABASES", "SHOW DATABASES", Scope::None),
            (
                "DESCRIBE db.public.t",
                "DESCRIBE other.public.t",
                set(&["other"]),
            ),
            (
                "INSERT",
                "INSERT INTO cpu (time, v) VALUES (1, 2)",
                set(&["s"]),
            ),
            ("DELETE elsewhere", "DELETE FROM o.public.cpu", set(&["o"])),
            ("UPDATE", "UPDATE cpu SET v = 1", set(&["s"])),
            ("CREATE DATABASE", "CREATE DATABASE d2", set(&["d2"])),
            ("DROP TABLE", "DROP TABLE d3.public.t", set(&["d3"])),
            ("EXPLAIN", "EXPLAIN SELECT * FROM q.public.t", set(&["q"])),
            (
                "a model reads its training query's database",
                "CREATE MODEL m WITH (algorithm = 'mad') AS SELECT time, v FROM o.public.t",
                set(&["o", "s"]),
            ),
            ("SHOW TOKENS", "SHOW TOKENS", Scope::None),
            ("SHOW TABLES", "SHOW TABLES", set(&["s"])),
        ];
        for (name, sql, want) in cases {
            let s = crate::sql::parse(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
            assert_eq!(databases(&s[0], "s"), want, "{name}");
        }
    }

    #[test]
    fn writes_read_their_sources_and_the_rows_they_match() {
        let set = |v: &[&str]| Scope::Databases(v.iter().map(|s| s.to_string()).collect());
        let cases = [
            (
                "INSERT VALUES writes only",
                "INSERT INTO cpu (time, v) VALUES (1, 2)",
                Some((set(&["s"]), Scope::None)),
            ),
            (
                "INSERT SELECT reads its source",
                "INSERT INTO cpu SELECT * FROM o.public.cpu",
                Some((set(&["s"]), set(&["o"]))),
            ),
            (
                "INSERT VALUES into another database",
                "INSERT INTO w.public.cpu (time, v) VALUES (1, 2)",
                Some((set(&["w"]), Scope::None)),
            ),
            (
                "INSERT into another database",
                "INSERT INTO w.public.cpu SELECT * FROM cpu",
                Some((set(&["w"]), set(&["s"]))),
            ),
            (
                "DELETE reads what it matches",
                "DELETE FROM cpu WHERE v > 1",
                Some((set(&["s"]), set(&["s"]))),
            ),
            (
                "UPDATE with a subquery elsewhere",
                "UPDATE cpu SET v = 1 WHERE host IN (SELECT host FROM o.public.h)",
                Some((set(&["o", "s"]), set(&["o", "s"]))),
            ),
            (
                "EXPLAIN ANALYZE of a write",
                "EXPLAIN ANALYZE INSERT INTO cpu SELECT * FROM o.public.cpu",
                Some((set(&["s"]), set(&["o"]))),
            ),
            ("a query writes nothing", "SELECT * FROM cpu", None),
        ];
        for (name, sql, want) in cases {
            let s = crate::sql::parse(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
            assert_eq!(write_parts(&s[0], "s"), want, "{name}");
        }
    }
}
