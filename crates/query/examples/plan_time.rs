//! Where a query's time goes: parse and plan, optimise, physical planning, execution, each
//! timed over many runs against a data directory written by the server.
//!
//! ```text
//! cargo run --release -p tempora-query --example plan_time -- DATA_DIR/db DB 'SQL' [RUNS]
//! ```
//!
//! The server must be stopped (the engine takes the directory's lock).

use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::physical_plan::collect;
use tempora_query::catalog::Databases;
use tempora_query::{QueryLimits, QueryOptions, QueryService};
use tempora_storage::{Engine, EngineIo, EngineOptions};

#[derive(Default)]
struct Stages {
    context: Duration,
    logical: Duration,
    optimize: Duration,
    physical: Duration,
    execute: Duration,
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let [_, dir, db, sql, rest @ ..] = args.as_slice() else {
        return Err("usage: plan_time DATA_DIR/db DB SQL [RUNS]".into());
    };
    let runs: u32 = rest.first().map_or(Ok(50), |r| r.parse())?;
    // PASSES=n overrides the optimizer's passes (an experiment).
    let passes: Option<usize> = std::env::var("PASSES")
        .ok()
        .map(|p| p.parse())
        .transpose()?;
    let engine = Arc::new(Engine::open(
        EngineOptions::default(),
        EngineIo::local(dir)?,
    )?);
    let dbs = Arc::new(Databases::open(engine.clone(), None)?);
    dbs.create(db)?;
    let q = QueryService::new(dbs, QueryLimits::default())?;
    let rewritten = tempora_query::rewrite_extensions(sql)?;
    let sql = rewritten.as_deref().unwrap_or(sql);
    let mut total = Stages::default();
    let mut rows = 0;
    for i in 0..=runs {
        let mut s = Stages::default();
        let t = Instant::now();
        let ctx = q.query_context(db, &QueryOptions::default())?;
        let mut state = ctx.state();
        if let Some(p) = passes {
            state.config_mut().options_mut().optimizer.max_passes = p;
        }
        s.context = t.elapsed();
        let t = Instant::now();
        let plan = state.create_logical_plan(sql).await?;
        s.logical = t.elapsed();
        let t = Instant::now();
        let optimized = state.optimize(&plan)?;
        s.optimize = t.elapsed();
        let t = Instant::now();
        let physical = state
            .query_planner()
            .create_physical_plan(&optimized, &state)
            .await?;
        s.physical = t.elapsed();
        if i == 0 && std::env::var_os("PLAN").is_some() {
            let shown = datafusion::physical_plan::displayable(physical.as_ref()).indent(true);
            eprintln!("{optimized}\n{shown}");
        }
        let t = Instant::now();
        let batches = collect(physical, ctx.task_ctx()).await?;
        s.execute = t.elapsed();
        rows = batches.iter().map(|b| b.num_rows()).sum::<usize>();
        if i > 0 {
            // The first run warms caches and is left out.
            total.context += s.context;
            total.logical += s.logical;
            total.optimize += s.optimize;
            total.physical += s.physical;
            total.execute += s.execute;
        }
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3 / f64::from(runs);
    eprintln!(
        "rows {rows}; mean ms over {runs} runs: context {:.3}, parse+plan {:.3}, optimize {:.3}, \
         physical {:.3}, execute {:.3}",
        ms(total.context),
        ms(total.logical),
        ms(total.optimize),
        ms(total.physical),
        ms(total.execute)
    );
    Ok(())
}
