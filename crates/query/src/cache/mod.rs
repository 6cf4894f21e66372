//! The plan cache: optimised plans kept for reuse, so a repeated query (a dashboard's, a
//! benchmark's, a prepared statement's) skips DataFusion's planning and optimisation.
//!
//! Two kinds of entry, in two maps of the same limit:
//!
//! - **Plans by normalised statement**. Key: the database, the settings that change plans
//!   (`tempora.operators`, `tempora.last_value_cache`, `tempora.rollups`), and the query normalised
//!   ([`crate::sql::normalize`]): its comparison literals turned into parameters, with their
//!   kinds. The literals of this run are bound as parameters when it executes, after the
//!   client's own. Texts that differ only in literals share one entry.
//! - **Statements by text** ([`text`]). Key: the database, those settings and the text as the
//!   client sent it, when it is one query without client parameters. The entry is ready to
//!   run: parsed, planned, its literals bound, and, when every operator of its physical plan
//!   reads at run time ([`crate::exec::replay`]), its physical plan too, run again after its
//!   states are reset. A repeated text (a dashboard panel, a TSBS query) then skips the
//!   parser, the normaliser, binding and physical planning.
//!
//! Both:
//! - **Validity**: an entry keeps the schema snapshot of every Tempora table its plan reads;
//!   it is used only while each is still the engine's current schema (`Arc::ptr_eq`), so a new
//!   column, a dropped or re-created table makes the query be planned again. Dropping a
//!   database forgets its entries.
//! - **What is cached**: queries (`SELECT`, `WITH`, with `SAMPLE BY` or `LATEST ON`). Not:
//!   statements that read the current time (`now()` is folded into the plan), commands,
//!   `EXPLAIN`, inserts, deletes, catalog listings, or a query whose literals cannot be bound
//!   to its plan's parameters without changing their value (an integer column compared with
//!   `2.5`): those are planned each time (the last kind is kept by text, planned as written).
//! - **Limit**: at most `plan_cache_entries` (`QueryLimits`) entries in each map, the least
//!   recently used dropped for a new one; texts longer than [`text::TEXT_BYTES_MAX`] are not
//!   kept. 0 turns the cache off.

mod lru;
pub mod text;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::source_as_provider;
use datafusion::execution::SessionState;
use datafusion::logical_expr::LogicalPlan;
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

/// What both maps keep: a value with the schema snapshots it was made with.
struct Entry<V> {
    value: V,
    /// (engine table name, the schema snapshot the plan was made with).
    tables: Vec<(String, Arc<TableSchema>)>,
}

impl<V> Entry<V> {
    /// Whether every table is still at the snapshot the entry was made with.
    fn current(&self, dbs: &Databases) -> bool {
        self.tables.iter().all(|(name, snap)| {
            dbs.engine()
                .schema(name)
                .is_some_and(|now| Arc::ptr_eq(&now, snap))
        })
    }
}

/// Counters of the cache (for `/metrics` and tests).
#[derive(Debug, Default)]
pub struct CacheStats {
    pub hits: AtomicU64,
    pub misses: AtomicU64,
    /// Statements answered by their text ([`text`]).
    pub text_hits: AtomicU64,
}

pub struct PlanCache {
    plans: lru::Lru<Entry<Arc<LogicalPlan>>>,
    texts: lru::Lru<Entry<Arc<Prepared>>>,
    /// Texts seen once, which a second sighting admits to `texts` ([`text`]).
    seen: text::Doorkeeper,
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
            plans: lru::Lru::new(capacity),
            texts: lru::Lru::new(capacity),
            seen: text::Doorkeeper::new(capacity),
            stats: CacheStats::default(),
        }
    }

    /// Plans kept by normalised statement.
    pub fn len(&self) -> usize {
        self.plans.len()
    }

    /// Statements kept by text.
    pub fn texts_len(&self) -> usize {
        self.texts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn key(&self, db: &str, flags: Flags, stmt: &Statement) -> Option<Keyed> {
        if self.plans.capacity() == 0 {
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
            "{db}\u{0}{}{}{}\u{0}{}\u{0}{:?}\u{0}{:?}\u{0}{}",
            u8::from(flags.0),
            u8::from(flags.1),
            u8::from(flags.2),
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
        self.prepared(&keyed, stmt, dbs)
    }

    /// `stmt` prepared from the plan kept under its key, with its literals, when the plan's
    /// tables are as they were.
    fn prepared(&self, keyed: &Keyed, stmt: &Statement, dbs: &Databases) -> Option<Arc<Prepared>> {
        let plan = self.plan_of(&keyed.key, dbs)?;
        Some(Arc::new(Prepared {
            statement: stmt.clone(),
            kind: PreparedKind::Query {
                plan,
                literals: keyed.normalized.literals.clone(),
                physical: None,
            },
        }))
    }

    /// The plan kept under `key`, when its tables are as they were.
    fn plan_of(&self, key: &str, dbs: &Databases) -> Option<Arc<LogicalPlan>> {
        let Some(entry) = self.plans.get(key).filter(|e| e.current(dbs)) else {
            self.plans.remove(key);
            self.stats.misses.fetch_add(1, Ordering::Relaxed);
            return None;
        };
        self.stats.hits.fetch_add(1, Ordering::Relaxed);
        Some(entry.value.clone())
    }

    fn put(&self, key: String, plan: Arc<LogicalPlan>) {
        let tables = tables(&plan);
        self.plans.put(
            key,
            Arc::new(Entry {
                value: plan,
                tables,
            }),
        );
    }

    /// Forgets every plan and text of database `db`.
    pub fn forget_database(&self, db: &str) {
        let prefix = format!("{db}\u{0}");
        self.plans.forget_prefix(&prefix);
        self.texts.forget_prefix(&prefix);
    }
}

/// The settings that change plans: operators, last-value cache, rollups.
pub(crate) type Flags = (bool, bool, bool);

fn flags(opts: &QueryOptions, limits: &QueryLimits) -> Flags {
    (
        opts.operators.unwrap_or(limits.operators),
        opts.last_value_cache.unwrap_or(limits.last_value_cache),
        opts.rollups.unwrap_or(true),
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
    prepare_keyed(service, state, db, stmt, keyed).await
}

/// Plans the query `stmt` of key `keyed` in its normalised form and keeps the plan.
async fn prepare_keyed(
    service: &QueryService,
    state: &SessionState,
    db: &str,
    stmt: &Statement,
    keyed: Keyed,
) -> Result<Arc<Prepared>> {
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
    service.cache.put(keyed.key, plan.clone());
    Ok(Arc::new(Prepared {
        statement: stmt.clone(),
        kind: PreparedKind::Query {
            plan,
            literals,
            physical: None,
        },
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
