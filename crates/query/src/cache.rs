//! The plan cache: optimised plans kept for reuse, so a repeated query (a dashboard's, a
//! benchmark's, a prepared statement's) skips DataFusion's planning and optimisation.
//!
//! - **Key**: the database, the settings that change plans (`tempora.operators`,
//!   `tempora.last_value_cache`), and the query normalised ([`crate::sql::normalize`]): its
//!   comparison literals turned into parameters, with their kinds. The literals of this run
//!   are bound as parameters when it executes, after the client's own.
//! - **Validity**: an entry keeps the schema snapshot of every Tempora table its plan reads;
//!   it is used only while each is still the engine's current schema (`Arc::ptr_eq`), so a new
//!   column, a dropped or re-created table makes the query be planned again. Dropping a
//!   database forgets its entries.
//! - **What is cached**: queries (`SELECT`, `WITH`, with `SAMPLE BY` or `LATEST ON`). Not:
//!   statements that read the current time (`now()` is folded into the plan), commands,
//!   `EXPLAIN`, inserts, deletes, catalog listings, or a query whose literals cannot be bound
//!   to its plan's parameters without changing their value (an integer column compared with
//!   `2.5`): those are planned each time.
//! - **Limit**: at most `plan_cache_entries` (`QueryLimits`) plans; the least recently used
//!   is dropped for a new one. 0 turns the cache off.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::source_as_provider;
use datafusion::execution::SessionState;
use datafusion::logical_expr::LogicalPlan;
use parking_lot::Mutex;
use tempora_model::TableSchema;

use crate::catalog::Databases;
use crate::error::Result;
use crate::limits::QueryOptions;
use crate::nodes::TemporaAggregate;
use crate::service::{Prepared, PreparedKind, QueryLimits, QueryService};
use crate::sql::normalize::{Normalized, normalize};
use crate::sql::{QueryStatement, Statement};
use crate::table::TemporaTable;

/// Plans kept by default.
pub const DEFAULT_ENTRIES: usize = 1024;

struct Entry {
    plan: Arc<datafusion::logical_expr::LogicalPlan>,
    /// (engine table name, the schema snapshot the plan was made with).
    tables: Vec<(String, Arc<TableSchema>)>,
    used: AtomicU64,
}

/// Counters of the cache (for `/metrics` and tests).
#[derive(Debug, Default)]
pub struct CacheStats {
    pub hits: AtomicU64,
    pub misses: AtomicU64,
}

pub struct PlanCache {
    capacity: usize,
    entries: Mutex<HashMap<String, Arc<Entry>>>,
    clock: AtomicU64,
    pub stats: CacheStats,
}

/// A statement's key and what binds its literals, when it can be cached.
struct Keyed {
    key: String,
    normalized: Normalized,
}

impl PlanCache {
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            entries: Mutex::new(HashMap::new()),
            clock: AtomicU64::new(0),
            stats: CacheStats::default(),
        }
    }

    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn key(&self, db: &str, flags: (bool, bool), stmt: &Statement) -> Option<Keyed> {
        if self.capacity == 0 {
            return None;
        }
        let Statement::Query(q) = stmt else {
            return None;
        };
        let normalized = normalize(&q.query)?;
        // Written out without source positions, so spacing does not change the key.
        let latest_on = q.latest_on.as_ref().map(|l| {
            l.partition_by
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(",")
        });
        let key = format!(
            "{db}\u{0}{}{}\u{0}{}\u{0}{:?}\u{0}{:?}\u{0}{}",
            u8::from(flags.0),
            u8::from(flags.1),
            normalized.kinds,
            q.sample_by,
            latest_on,
            normalized.query
        );
        Some(Keyed { key, normalized })
    }

    /// The prepared statement cached for `stmt`, when its tables are as they were.
    pub fn get(
        &self,
        db: &str,
        opts: &QueryOptions,
        limits: &QueryLimits,
        stmt: &Statement,
        dbs: &Databases,
    ) -> Option<Arc<Prepared>> {
        let keyed = self.key(db, flags(opts, limits), stmt)?;
        let entry = self.entries.lock().get(&keyed.key).cloned();
        let Some(entry) = entry else {
            self.stats.misses.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        let current = entry.tables.iter().all(|(name, snap)| {
            dbs.engine()
                .schema(name)
                .is_some_and(|now| Arc::ptr_eq(&now, snap))
        });
        if !current {
            self.entries.lock().remove(&keyed.key);
            self.stats.misses.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        entry.used.store(
            self.clock.fetch_add(1, Ordering::Relaxed),
            Ordering::Relaxed,
        );
        self.stats.hits.fetch_add(1, Ordering::Relaxed);
        Some(Arc::new(Prepared {
            statement: stmt.clone(),
            kind: PreparedKind::Query {
                plan: entry.plan.clone(),
                literals: keyed.normalized.literals,
            },
        }))
    }

    fn put(&self, key: String, plan: Arc<LogicalPlan>, tables: Vec<(String, Arc<TableSchema>)>) {
        let mut entries = self.entries.lock();
        if entries.len() >= self.capacity && !entries.contains_key(&key) {
            let oldest = entries
                .iter()
                .min_by_key(|(_, e)| e.used.load(Ordering::Relaxed))
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                entries.remove(&k);
            }
        }
        let used = AtomicU64::new(self.clock.fetch_add(1, Ordering::Relaxed));
        entries.insert(key, Arc::new(Entry { plan, tables, used }));
    }

    /// Forgets every plan of database `db`.
    pub fn forget_database(&self, db: &str) {
        let prefix = format!("{db}\u{0}");
        self.entries.lock().retain(|k, _| !k.starts_with(&prefix));
    }
}

fn flags(opts: &QueryOptions, limits: &QueryLimits) -> (bool, bool) {
    (
        opts.operators.unwrap_or(limits.operators),
        opts.last_value_cache.unwrap_or(limits.last_value_cache),
    )
}

/// Plans `stmt`; a query that can be cached is planned in its normalised form, kept, and
/// given this run's literals.
pub async fn prepare(
    service: &QueryService,
    state: &SessionState,
    db: &str,
    opts: &QueryOptions,
    stmt: &Statement,
) -> Result<Arc<Prepared>> {
    let cache = &service.cache;
    let Some(keyed) = cache.key(db, flags(opts, service.limits()), stmt) else {
        return Ok(Arc::new(service.plan_statement(state, db, stmt).await?));
    };
    let Statement::Query(q) = stmt else {
        unreachable!("only queries are keyed");
    };
    let normal = Statement::Query(Box::new(QueryStatement {
        query: keyed.normalized.query.clone(),
        ..(**q).clone()
    }));
    let planned = match service.plan_statement(state, db, &normal).await {
        Ok(p) => p,
        // The normalised form does not plan (a parameter DataFusion cannot type): plan the
        // statement as written, each time.
        Err(_) => return Ok(Arc::new(service.plan_statement(state, db, stmt).await?)),
    };
    let PreparedKind::Query { plan, .. } = planned.kind else {
        return Ok(Arc::new(planned));
    };
    let literals = keyed.normalized.literals;
    // The literals must bind to the plan's parameters as they are.
    if crate::params::check_literals(&plan, &literals).is_err() {
        return Ok(Arc::new(service.plan_statement(state, db, stmt).await?));
    }
    cache.put(keyed.key, plan.clone(), tables(&plan));
    Ok(Arc::new(Prepared {
        statement: stmt.clone(),
        kind: PreparedKind::Query { plan, literals },
    }))
}

/// The Tempora tables a plan reads, with their schema snapshots.
fn tables(plan: &LogicalPlan) -> Vec<(String, Arc<TableSchema>)> {
    let mut out: Vec<(String, Arc<TableSchema>)> = Vec::new();
    let mut add = |t: &TemporaTable| {
        if !out.iter().any(|(n, _)| n == t.name()) {
            out.push((t.name().to_string(), t.snapshot().clone()));
        }
    };
    let _ = plan.apply_with_subqueries(|node| {
        match node {
            LogicalPlan::TableScan(s) => {
                if let Ok(p) = source_as_provider(&s.source)
                    && let Some(t) = p.downcast_ref::<TemporaTable>()
                {
                    add(t);
                }
            }
            LogicalPlan::Extension(e) => {
                if let Some(a) = e.node.as_any().downcast_ref::<TemporaAggregate>() {
                    add(&a.table);
                }
            }
            _ => {}
        }
        Ok(TreeNodeRecursion::Continue)
    });
    out
}
