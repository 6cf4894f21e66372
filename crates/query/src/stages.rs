//! Where a query's time goes, stage by stage, through the same functions the front door
//! runs: parse, prepare (from the plan cache once it holds the statement; planned and
//! optimised without it), bind, physical planning, the task context, execution. `tempora
//! bench plan-time` prints it for a data directory.

use std::time::{Duration, Instant};

use crate::error::{QueryError, Result};
use crate::limits::QueryOptions;
use crate::service::{PreparedKind, QueryService};

/// Mean time of each stage over the timed runs.
#[derive(Debug, Default, Clone)]
pub struct Stages {
    pub parse: Duration,
    /// Prepare with the plan cache (a hit once the first run has filled it).
    pub prepare: Duration,
    /// Prepare without the cache: plan and optimise.
    pub plan_and_optimize: Duration,
    pub bind: Duration,
    pub physical: Duration,
    pub task: Duration,
    pub execute: Duration,
    /// The whole statement through [`QueryService::run`].
    pub front_door: Duration,
    pub rows: usize,
}

/// Times `sql` in `db` over `runs` runs after one warm-up.
pub async fn measure(q: &QueryService, db: &str, sql: &str, runs: u32) -> Result<Stages> {
    let opts = QueryOptions::default();
    let mut total = Stages::default();
    for i in 0..=runs {
        let mut s = Stages::default();
        let t = Instant::now();
        let stmt = q
            .parse(sql)?
            .pop()
            .ok_or_else(|| QueryError::Sql("no statement".into()))?;
        s.parse = t.elapsed();
        let state = q.state(db, &opts)?;
        let t = Instant::now();
        q.plan_statement(&state, db, &stmt).await?;
        s.plan_and_optimize = t.elapsed();
        let t = Instant::now();
        let p = q.prepare(db, &opts, &stmt).await?;
        s.prepare = t.elapsed();
        let PreparedKind::Query { plan, literals, .. } = &p.kind else {
            return Err(QueryError::Sql("not a query".into()));
        };
        let t = Instant::now();
        let bound = crate::params::bind(plan, Vec::new(), literals)?;
        s.bind = t.elapsed();
        let t = Instant::now();
        let physical = state
            .query_planner()
            .create_physical_plan(&bound, state.as_ref())
            .await?;
        s.physical = t.elapsed();
        if i == 0 && std::env::var_os("PLAN").is_some() {
            let shown = datafusion::physical_plan::displayable(physical.as_ref()).indent(true);
            eprintln!("{bound}\n{shown}");
        }
        let t = Instant::now();
        let task = std::sync::Arc::new(q.task_context(&state, &opts));
        s.task = t.elapsed();
        let t = Instant::now();
        let batches = datafusion::physical_plan::collect(physical, task).await?;
        s.execute = t.elapsed();
        s.rows = batches.iter().map(|b| b.num_rows()).sum();
        let t = Instant::now();
        q.sql(db, sql, 0).await?;
        s.front_door = t.elapsed();
        if i > 0 {
            add(&mut total, &s);
        }
    }
    let n = runs.max(1);
    Ok(Stages {
        parse: total.parse / n,
        prepare: total.prepare / n,
        plan_and_optimize: total.plan_and_optimize / n,
        bind: total.bind / n,
        physical: total.physical / n,
        task: total.task / n,
        execute: total.execute / n,
        front_door: total.front_door / n,
        rows: total.rows,
    })
}

fn add(total: &mut Stages, s: &Stages) {
    total.parse += s.parse;
    total.prepare += s.prepare;
    total.plan_and_optimize += s.plan_and_optimize;
    total.bind += s.bind;
    total.physical += s.physical;
    total.task += s.task;
    total.execute += s.execute;
    total.front_door += s.front_door;
    total.rows = s.rows;
}

impl std::fmt::Display for Stages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        write!(
            f,
            "rows {}; mean ms: parse {:.3}, prepare (cache) {:.3} [plan+optimise without it {:.3}], \
             bind {:.3}, physical plan {:.3}, task context {:.3}, execute {:.3}; the whole \
             statement through the front door {:.3}",
            self.rows,
            ms(self.parse),
            ms(self.prepare),
            ms(self.plan_and_optimize),
            ms(self.bind),
            ms(self.physical),
            ms(self.task),
            ms(self.execute),
            ms(self.front_door)
        )
    }
}
