//! Where a query's time goes: parse, plan, optimise, physical planning, execution, each
//! timed over many runs against a data directory written by the server, and the whole
//! through the service's front door (with its plan cache).
//!
//! ```text
//! cargo run --release -p tempora-query --example plan_time -- DATA_DIR/db DB 'SQL' [RUNS]
//! ```
//!
//! The server must be stopped (the engine takes the directory's lock). `PLAN=1` prints the
//! optimised and physical plans once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::physical_plan::collect;
use tempora_query::catalog::Databases;
use tempora_query::plan::Planned;
use tempora_query::{QueryLimits, QueryOptions, QueryService};
use tempora_storage::{Engine, EngineIo, EngineOptions};

#[derive(Default)]
struct Stages {
    parse: Duration,
    plan: Duration,
    optimize: Duration,
    physical: Duration,
    execute: Duration,
    front_door: Duration,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, dir, db, sql, rest @ ..] = args.as_slice() else {
        return Err("usage: plan_time DATA_DIR/db DB SQL [RUNS]".into());
    };
    let runs: u32 = rest.first().map_or(Ok(50), |r| r.parse())?;
    let engine = Arc::new(Engine::open(
        EngineOptions::default(),
        EngineIo::local(dir)?,
    )?);
    let dbs = Arc::new(Databases::open(engine.clone(), None)?);
    dbs.create(db)?;
    let q = QueryService::new(dbs.clone(), QueryLimits::default())?;
    let opts = QueryOptions::default();
    let mut total = Stages::default();
    let mut rows = 0;
    for i in 0..=runs {
        let mut s = Stages::default();
        let t = Instant::now();
        let stmt = q.parse(sql)?.pop().ok_or("no statement")?;
        s.parse = t.elapsed();
        let state = q.state(db, &opts)?;
        let t = Instant::now();
        let Planned::Query(plan) = tempora_query::plan::plan(&state, &dbs, db, &stmt).await? else {
            return Err("not a query".into());
        };
        s.plan = t.elapsed();
        let t = Instant::now();
        let optimized = state.optimize(&plan)?;
        s.optimize = t.elapsed();
        let t = Instant::now();
        let physical = state
            .query_planner()
            .create_physical_plan(&optimized, state.as_ref())
            .await?;
        s.physical = t.elapsed();
        if i == 0 && std::env::var_os("PLAN").is_some() {
            let shown = datafusion::physical_plan::displayable(physical.as_ref()).indent(true);
            eprintln!("{optimized}\n{shown}");
        }
        let t = Instant::now();
        let batches = collect(physical, state.task_ctx()).await?;
        s.execute = t.elapsed();
        rows = batches.iter().map(|b| b.num_rows()).sum::<usize>();
        let t = Instant::now();
        q.sql(db, sql, 0).await?;
        s.front_door = t.elapsed();
        if i > 0 {
            // The first run warms caches and is left out.
            total.parse += s.parse;
            total.plan += s.plan;
            total.optimize += s.optimize;
            total.physical += s.physical;
            total.execute += s.execute;
            total.front_door += s.front_door;
        }
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3 / f64::from(runs);
    eprintln!(
        "rows {rows}; mean ms over {runs} runs: parse {:.3}, plan {:.3}, optimize {:.3}, \
         physical {:.3}, execute {:.3}; through the front door (plan cache) {:.3}",
        ms(total.parse),
        ms(total.plan),
        ms(total.optimize),
        ms(total.physical),
        ms(total.execute),
        ms(total.front_door)
    );
    Ok(())
}
