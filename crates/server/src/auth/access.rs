//! The I/O shell of authentication: who a request or connection is ([`Principal`]), and the
//! checks every port makes with the pure core ([`super::required`], [`super::grant`]).
//!
//! Invariants:
//! - With authentication off every request is [`Principal::Everyone`] and nothing is checked
//!   (a local install, as before issue 26).
//! - A token's grant is looked up again for every statement, so a revocation stops a
//!   PostgreSQL session that logged in with it at its next statement.
//! - Refusals: missing, wrong and revoked credentials all read "authentication failed"
//!   (401 / 28P01) and never say whether a name exists; a missing permission (403 / 42501)
//!   names the permission and the database.

use std::sync::Arc;

use tempora_query::QueryError;
use tempora_query::access::{Authorize, TokenAdmin, TokenInfo};
use tempora_query::sql::scope::{self, Scope};
use tempora_query::sql::{Statement, TokenSpec};

use super::credentials::Credentials;
use super::grant::{Grant, Permission};
use super::required;
use super::store::{StoreError, TokenStore};
use super::token;

/// Who is asking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// Authentication is off.
    Everyone,
    /// The configured `pg_password` (an admin credential).
    Operator,
    /// A token, by name (its grant is read at each check).
    Token(String),
}

/// Authentication and permissions of one server.
pub struct Access {
    pub enabled: bool,
    pub store: Arc<TokenStore>,
    /// SHA-256 of the configured `pg_password`, if any.
    operator: Option<token::TokenHash>,
}

/// The message of every authentication failure.
pub const FAILED: &str = "authentication failed: give a valid token (Authorization: Token \
                          <token>, Bearer, Basic with the token as password, or u/p)";

fn unauthenticated() -> QueryError {
    QueryError::Unauthenticated(FAILED.into())
}

impl Access {
    pub fn new(enabled: bool, store: Arc<TokenStore>, pg_password: Option<&str>) -> Access {
        Access {
            enabled,
            store,
            operator: pg_password.map(token::hash),
        }
    }

    /// The principal of an HTTP request's credentials (401 when none fits).
    pub fn http(&self, c: &Credentials) -> Result<Principal, QueryError> {
        if !self.enabled {
            return Ok(Principal::Everyone);
        }
        let Some(secret) = c.token() else {
            return Err(unauthenticated());
        };
        self.secret(secret).ok_or_else(unauthenticated)
    }

    /// The principal a secret stands for: a token, or the operator's password.
    pub fn secret(&self, secret: &str) -> Option<Principal> {
        let grant = self.store.authenticate(secret);
        // Both comparisons always run, so their time does not tell which matched.
        let operator = self
            .operator
            .as_ref()
            .is_some_and(|h| token::same(h, &token::hash(secret)));
        match (grant, operator) {
            (Some(g), _) => Some(Principal::Token(g.name)),
            (None, true) => Some(Principal::Operator),
            (None, false) => None,
        }
    }

    /// The grant of `p` now (a revoked token fails as unauthenticated).
    fn grant(&self, p: &Principal) -> Result<Option<Grant>, QueryError> {
        match p {
            Principal::Everyone | Principal::Operator => Ok(None),
            Principal::Token(name) => self.store.grant(name).map(Some).ok_or_else(unauthenticated),
        }
    }

    /// Refuses unless `p` has `perm` on every database of `scope`.
    pub fn require(
        &self,
        p: &Principal,
        perm: Permission,
        scope: &Scope,
    ) -> Result<(), QueryError> {
        match self.grant(p)? {
            Some(g) => check(&g, perm, scope),
            None => Ok(()),
        }
    }

    /// The statement checker for principal `p`.
    pub fn statements(self: &Arc<Self>, p: Principal) -> StatementAccess {
        StatementAccess {
            access: self.clone(),
            principal: p,
        }
    }
}

/// Refuses unless grant `g` has `perm` on every database of `scope`.
fn check(g: &Grant, perm: Permission, scope: &Scope) -> Result<(), QueryError> {
    let missing = match scope {
        Scope::None => (!g.allows(perm, None)).then_some(None),
        Scope::Databases(dbs) => dbs
            .iter()
            .find(|d| !g.allows(perm, Some(d)))
            .map(|d| Some(d.as_str())),
    };
    match missing {
        None => Ok(()),
        Some(db) => Err(denied(perm, db)),
    }
}

/// The refusal for a missing permission.
pub fn denied(perm: Permission, db: Option<&str>) -> QueryError {
    QueryError::Denied(match (perm, db) {
        (Permission::Admin, _) => "permission denied: this needs the admin permission".into(),
        (p, Some(d)) => {
            format!("permission denied: this needs the {p} permission on database {d:?}")
        }
        (p, None) => format!("permission denied: this needs the {p} permission"),
    })
}

/// Checks each statement of one principal.
pub struct StatementAccess {
    access: Arc<Access>,
    principal: Principal,
}

impl Authorize for StatementAccess {
    /// One lookup of the principal's grant per statement (a revoked token fails here), then
    /// the checks of the statement's class against it.
    fn statement(&self, stmt: &Statement, db: &str) -> Result<(), QueryError> {
        let Some(g) = self.access.grant(&self.principal)? else {
            return Ok(());
        };
        if let Some((written, read)) = scope::write_parts(stmt, db) {
            check(&g, Permission::Write, &written)?;
            if read != Scope::None {
                check(&g, Permission::Read, &read)?;
            }
            return Ok(());
        }
        match required::for_statement(stmt) {
            None => Ok(()),
            Some(perm) => check(&g, perm, &scope::databases(stmt, db)),
        }
    }
}

impl TokenAdmin for Access {
    fn create(&self, spec: &TokenSpec) -> Result<String, QueryError> {
        let grant = Grant::parse(
            &spec.name,
            &spec.read.join(","),
            &spec.write.join(","),
            spec.admin,
        )
        .map_err(QueryError::InvalidParameter)?;
        self.store
            .create(grant, crate::state::now_ns())
            .map(|s| s.0)
            .map_err(store_error)
    }

    fn revoke(&self, name: &str, if_exists: bool) -> Result<(), QueryError> {
        match self.store.revoke(name).map_err(store_error)? {
            false if !if_exists => Err(QueryError::InvalidParameter(format!(
                "token {name:?} does not exist"
            ))),
            _ => Ok(()),
        }
    }

    fn list(&self) -> Result<Vec<TokenInfo>, QueryError> {
        self.store.refresh().map_err(store_error)?;
        Ok(self
            .store
            .list()
            .into_iter()
            .map(|t| TokenInfo {
                read: t.grant.read.into_iter().collect(),
                write: t.grant.write.into_iter().collect(),
                name: t.grant.name,
                admin: t.grant.admin,
                created_ns: t.created_ns,
            })
            .collect())
    }
}

fn store_error(e: StoreError) -> QueryError {
    match e {
        StoreError::Invalid(m) => QueryError::InvalidParameter(m),
        StoreError::Duplicate(n) => QueryError::DuplicateToken(n),
        StoreError::NotFound(n) => {
            QueryError::InvalidParameter(format!("token {n:?} does not exist"))
        }
        StoreError::Io(m) => QueryError::Sql(m),
    }
}
