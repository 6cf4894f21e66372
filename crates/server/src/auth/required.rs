//! The permission each endpoint and statement needs. `/health` and `/ping` need none;
//! writes need write on their database; queries read; statements by class (see
//! [`for_statement`]); tokens, settings and `/metrics` need admin.

use tempora_query::sql::{ModelStatement, Statement};

use super::grant::Permission;

/// An HTTP endpoint, as far as permissions go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `/health`, `/ping`: open to everyone (every other endpoint needs credentials).
    Health,
    /// The console's page and assets (`GET /`, `/console/…`): open, as they hold no data; the
    /// page asks for a token when the API it calls refuses it.
    Console,
    /// Line protocol (`/write`, `/api/v2/write`) and CSV import.
    Write,
    /// `/query` and `/api/v1/sql`: the statement decides.
    Statements,
    /// Listing buckets: read.
    Catalog,
    /// `/metrics`, bucket changes, token administration.
    Admin,
}

/// The endpoint a request's method and path address. Paths Tempora does not serve are
/// `Admin`: an unknown path answers 404 only to an admin, so probing tells nothing.
pub fn endpoint_of(method: &str, path: &str) -> Endpoint {
    match (method, path) {
        (_, "/health" | "/ping") => Endpoint::Health,
        ("GET" | "HEAD", p) if crate::console::is_asset(p) => Endpoint::Console,
        (
            _,
            "/write"
            | "/api/v2/write"
            | "/api/v1/import"
            | "/api/v1/ingest/json"
            | "/api/v1/prom/write"
            | "/api/v1/write",
        ) => Endpoint::Write,
        (_, "/query" | "/api/v1/sql") => Endpoint::Statements,
        // Prometheus's query API and remote read: the handler checks read on its database.
        (_, p) if is_prometheus_read(p) => Endpoint::Statements,
        ("GET", "/api/v2/buckets") => Endpoint::Catalog,
        _ => Endpoint::Admin,
    }
}

/// Prometheus's read endpoints (query API, listings, remote read, the fixed answers).
fn is_prometheus_read(path: &str) -> bool {
    matches!(
        path,
        "/api/v1/query"
            | "/api/v1/query_range"
            | "/api/v1/series"
            | "/api/v1/labels"
            | "/api/v1/read"
            | "/api/v1/prom/read"
            | "/api/v1/status/buildinfo"
            | "/api/v1/metadata"
            | "/api/v1/query_exemplars"
            | "/api/v1/rules"
            | "/api/v1/alerts"
    ) || (path.starts_with("/api/v1/label/") && path.ends_with("/values"))
}

/// The permission an endpoint needs before its statements are looked at (`None`: open).
pub fn for_endpoint(e: Endpoint) -> Option<Permission> {
    match e {
        Endpoint::Health | Endpoint::Console => None,
        Endpoint::Write => Some(Permission::Write),
        // Authenticated; each statement is then checked by its class.
        Endpoint::Statements => None,
        Endpoint::Catalog => Some(Permission::Read),
        Endpoint::Admin => Some(Permission::Admin),
    }
}

/// The permission a statement needs (`None`: session statements, which change nothing).
pub fn for_statement(s: &Statement) -> Option<Permission> {
    use Permission::*;
    match s {
        Statement::Query(_) | Statement::Show(_) | Statement::Plan(_) | Statement::PromQl(_) => {
            Some(Read)
        }
        Statement::Explain(e) => for_statement(&e.statement).map(|p| p.max(Read)),
        Statement::Insert(_) | Statement::Delete(_) | Statement::Update(_) => Some(Write),
        Statement::Model(ModelStatement::Show | ModelStatement::Describe { .. }) => Some(Read),
        Statement::Model(_)
        | Statement::CreateDatabase(_)
        | Statement::DropDatabase(_)
        | Statement::CreateTable(_)
        | Statement::DropTable(_)
        | Statement::Alter(_)
        | Statement::Token(_) => Some(Admin),
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
            (
                "CREATE TOKEN t WITH (admin = true)",
                Some(Permission::Admin),
            ),
            ("SHOW TOKENS", Some(Permission::Admin)),
            ("DROP TOKEN t", Some(Permission::Admin)),
            ("SET statement_timeout = 1000", None),
            ("BEGIN", None),
        ];
        for (sql, want) in cases {
            let s = tempora_query::sql::parse(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
            assert_eq!(for_statement(&s[0]), want, "{sql}");
        }
        for (method, path, want) in [
            ("GET", "/health", Endpoint::Health),
            ("HEAD", "/ping", Endpoint::Health),
            ("GET", "/", Endpoint::Console),
            ("GET", "/console/app.js", Endpoint::Console),
            ("POST", "/", Endpoint::Admin),
            ("GET", "/console/other.js", Endpoint::Admin),
            ("POST", "/write", Endpoint::Write),
            ("POST", "/api/v2/write", Endpoint::Write),
            ("POST", "/api/v1/import", Endpoint::Write),
            ("GET", "/query", Endpoint::Statements),
            ("POST", "/api/v1/sql", Endpoint::Statements),
            ("GET", "/api/v2/buckets", Endpoint::Catalog),
            ("POST", "/api/v2/buckets", Endpoint::Admin),
            ("DELETE", "/api/v2/buckets/1", Endpoint::Admin),
            ("GET", "/metrics", Endpoint::Admin),
            ("POST", "/api/v1/tokens", Endpoint::Admin),
            ("GET", "/nothing/here", Endpoint::Admin),
        ] {
            assert_eq!(endpoint_of(method, path), want, "{method} {path}");
        }
        assert_eq!(for_endpoint(Endpoint::Health), None);
        assert_eq!(for_endpoint(Endpoint::Write), Some(Permission::Write));
        assert_eq!(for_endpoint(Endpoint::Admin), Some(Permission::Admin));
    }
}
