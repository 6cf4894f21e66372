//! The permission each endpoint and statement needs. `/health` and `/ping` need none;
//! writes need write on their database; queries read; statements by class (see
//! [`for_statement`]); tokens, settings and `/metrics` need admin.

use tempora_query::sql::{ModelStatement, Statement};

use super::grant::Permission;

/// An HTTP endpoint, as far as permissions go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `/health`, `/ping`: open to everyone.
    Health,
    /// Line protocol (`/write`, `/api/v2/write`) and CSV import.
    Write,
    /// `/query` and `/api/v1/sql`: the statement decides.
    Statements,
    /// `/metrics`, token administration.
    Admin,
}

/// The permission an endpoint needs before its statements are looked at (`None`: open).
pub fn for_endpoint(e: Endpoint) -> Option<Permission> {
    match e {
        Endpoint::Health => None,
        Endpoint::Write => Some(Permission::Write),
        Endpoint::Statements => Some(Permission::Read),
        Endpoint::Admin => Some(Permission::Admin),
    }
}

/// The permission a statement needs (`None`: session statements, which change nothing).
pub fn for_statement(s: &Statement) -> Option<Permission> {
    use Permission::*;
    match s {
        Statement::Query(_) | Statement::Show(_) | Statement::Plan(_) => Some(Read),
        Statement::Explain(e) => for_statement(&e.statement).map(|p| p.max(Read)),
        Statement::Insert(_) | Statement::Delete(_) | Statement::Update(_) => Some(Write),
        Statement::Model(ModelStatement::Show | ModelStatement::Describe { .. }) => Some(Read),
        Statement::Model(_)
        | Statement::CreateDatabase(_)
        | Statement::DropDatabase(_)
        | Statement::CreateTable(_)
        | Statement::DropTable(_)
        | Statement::Alter(_) => Some(Admin),
        Statement::Set(_) | Statement::Session(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_need_the_permission_of_their_class() {
        let cases = [
            ("SELECT 1", Some(Permission::Read)),
            ("SHOW DATABASES", Some(Permission::Read)),
            ("SHOW MODELS", Some(Permission::Read)),
            ("EXPLAIN SELECT 1", Some(Permission::Read)),
            (
                "INSERT INTO t (time, v) VALUES (1, 2)",
                Some(Permission::Write),
            ),
            ("DELETE FROM t WHERE time < 5", Some(Permission::Write)),
            ("UPDATE t SET v = 1", Some(Permission::Write)),
            ("EXPLAIN DELETE FROM t", Some(Permission::Write)),
            ("CREATE TABLE t (v DOUBLE)", Some(Permission::Admin)),
            ("DROP TABLE t", Some(Permission::Admin)),
            ("DROP DATABASE d", Some(Permission::Admin)),
            ("ALTER TABLE t SET (ttl = '1d')", Some(Permission::Admin)),
            (
                "CREATE MODEL m WITH (algorithm = 'mad') AS SELECT time, v FROM t",
                Some(Permission::Admin),
            ),
            ("SET statement_timeout = 1000", None),
            ("BEGIN", None),
        ];
        for (sql, want) in cases {
            let s = tempora_query::sql::parse(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
            assert_eq!(for_statement(&s[0]), want, "{sql}");
        }
        assert_eq!(for_endpoint(Endpoint::Health), None);
        assert_eq!(for_endpoint(Endpoint::Write), Some(Permission::Write));
        assert_eq!(for_endpoint(Endpoint::Admin), Some(Permission::Admin));
    }
}
