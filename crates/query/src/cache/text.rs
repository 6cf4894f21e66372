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
//!
//! Admission: a text is kept the second time it is seen. A stream of texts that never repeat
//! (TSBS draws new hosts and times for every query) would otherwise pay for an entry per
//! query, evict one and drop it, for nothing. The [`Doorkeeper`] remembers hashes of texts seen
//! once, at most [`SEEN_PER_ENTRY`] per entry of the cache, forgetting them all when full; a
//! hash collision only admits a text early.

use std::collections::HashSet;
use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use parking_lot::Mutex;

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

/// Hashes of texts seen once the doorkeeper holds, per entry of the cache.
pub const SEEN_PER_ENTRY: usize = 4;

/// The hashes of texts seen once.
pub struct Doorkeeper {
    limit: usize,
    hasher: RandomState,
    seen: Mutex<HashSet<u64>>,
}

impl Doorkeeper {
    pub fn new(entries: usize) -> Self {
        Self {
            limit: entries.saturating_mul(SEEN_PER_ENTRY),
            hasher: RandomState::new(),
            seen: Mutex::new(HashSet::new()),
        }
    }

    /// Whether `key` was seen before; remembers it otherwise.
    pub fn seen_before(&self, key: &str) -> bool {
        if self.limit == 0 {
            return false;
        }
        let h = self.hasher.hash_one(key);
        let mut seen = self.seen.lock();
        if seen.contains(&h) {
            return true;
        }
        if seen.len() >= self.limit {
            seen.clear();
        }
        seen.insert(h);
        false
    }
}

fn text_key(db: &str, flags: super::Flags, sql: &str) -> String {
    format!(
        "{db}\u{0}{}{}{}\u{0}{sql}",
        u8::from(flags.0),
        u8::from(flags.1),
        u8::from(flags.2)
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
    let key = text_key(db, flags, sql);
    let p = match cache.prepared(&keyed, stmt, &service.dbs) {
        Some(p) => p,
        None => prepare_keyed(service, state, db, stmt, keyed).await?,
    };
    let PreparedKind::Query { plan, literals, .. } = &p.kind else {
        return Ok(p);
    };
    if !p.param_types().is_empty() || !cache.seen.seen_before(&key) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_is_admitted_on_its_second_sighting_and_the_door_forgets_when_full() {
        let door = Doorkeeper::new(1); // remembers SEEN_PER_ENTRY hashes
        assert!(!door.seen_before("a"), "first sighting");
        assert!(door.seen_before("a"), "second sighting");
        for t in ["b", "c", "d"] {
            assert!(!door.seen_before(t));
        }
        // Full (a, b, c, d): the next new text clears what it remembered.
        assert!(!door.seen_before("e"));
        assert!(
            !door.seen_before("a"),
            "forgotten when the door was cleared"
        );
        let off = Doorkeeper::new(0);
        assert!(!off.seen_before("a") && !off.seen_before("a"));
    }
}
