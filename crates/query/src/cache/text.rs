//! Statements kept by their text: a query sent again word for word (a dashboard panel's
//! refresh, a benchmark's loop, an ORM's fixed query) runs from an entry made ready the first
//! time: parsed, planned, its literals bound and, when [`replay::replayable`], its physical
//! plan made, which each run resets and executes. What it saves is the fixed cost of a small
//! query: the parser, the normaliser, binding and physical planning (about 0.08 ms of a
//! 0.1 ms TSBS single-groupby over 100 hosts).
//!
//! Only a text that is one query, without client parameters, that the plan cache would key
//! ([`super::PlanCache`]'s rules: no `now()`, no commands) and at most [`TEXT_BYTES_MAX`] long is
//! kept. Validity is the plan cache's: the schema snapshots of the tables the plan reads.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use datafusion::execution::SessionState;

use super::{Entry, PlanCache, flags, prepare_keyed, tables};
use crate::catalog::Databases;
use crate::error::Result;
use crate::exec::replay;
use crate::limits::QueryOptions;
use crate::service::{Prepared, PreparedKind, QueryLimits, QueryService};
use crate::sql::Statement;

/// Longest text kept (bytes); a longer one is prepared each time through the plan cache.
pub const TEXT_BYTES_MAX: usize = 16 * 1024;

fn text_key(db: &str, flags: (bool, bool), sql: &str) -> String {
    format!(
        "{db}\u{0}{}{}\u{0}{sql}",
        u8::from(flags.0),
        u8::from(flags.1)
    )
}

impl PlanCache {
    /// The statement kept for text `sql`, when its tables are as they were.
    pub fn recall(
        &self,
        db: &str,
        opts: &QueryOptions,
        limits: &QueryLimits,
        sql: &str,
        dbs: &Databases,
    ) -> Option<Arc<Prepared>> {
        if sql.len() > TEXT_BYTES_MAX || self.texts.capacity() == 0 {
            return None;
        }
        let key = text_key(db, flags(opts, limits), sql);
        let entry = self.texts.get(&key)?;
        if !entry.current(dbs) {
            self.texts.remove(&key);
            return None;
        }
        self.stats.text_hits.fetch_add(1, Ordering::Relaxed);
        Some(entry.value.clone())
    }
}

/// Prepares `stmt`, the only statement of text `sql`, and keeps it by its text when it can be
/// (the rules above); otherwise prepares it as [`QueryService::prepare`] does.
pub async fn prepare_text(
    service: &QueryService,
    state: &SessionState,
    db: &str,
    opts: &QueryOptions,
    sql: &str,
    stmt: &Statement,
) -> Result<Arc<Prepared>> {
    let cache = &service.cache;
    let flags = flags(opts, service.limits());
    let keyed = (sql.len() <= TEXT_BYTES_MAX)
        .then(|| cache.key(db, flags, stmt))
        .flatten();
    let Some(keyed) = keyed else {
        return service.prepare(db, opts, stmt).await;
    };
    let p = match cache.plan_of(&keyed.key, &service.dbs) {
        Some(plan) => Arc::new(Prepared {
            statement: stmt.clone(),
            kind: PreparedKind::Query {
                plan,
                literals: keyed.normalized.literals,
                physical: None,
            },
        }),
        None => prepare_keyed(service, state, db, stmt, keyed).await?,
    };
    let PreparedKind::Query { plan, literals, .. } = &p.kind else {
        return Ok(p);
    };
    if !p.param_types().is_empty() {
        return Ok(p);
    }
    let bound = Arc::new(crate::params::bind(plan, Vec::new(), literals)?);
    let physical = if replay::may_replay(&bound) {
        let physical = state
            .query_planner()
            .create_physical_plan(&bound, state)
            .await?;
        replay::replayable(&physical).then_some(physical)
    } else {
        None
    };
    let ready = Arc::new(Prepared {
        statement: stmt.clone(),
        kind: PreparedKind::Query {
            plan: bound.clone(),
            literals: Vec::new(),
            physical,
        },
    });
    let entry = Entry {
        value: ready.clone(),
        tables: tables(&bound),
    };
    cache.texts.put(text_key(db, flags, sql), Arc::new(entry));
    Ok(ready)
}
