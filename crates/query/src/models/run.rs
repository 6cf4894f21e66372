//! The model statements: `CREATE MODEL` and `ALTER MODEL … REFRESH` read the training rows
//! now (a bad query or bad rows fail the statement), record the model as training and train
//! it in the background; `DROP MODEL` cancels and drops; [`resume`] restarts the trainings a
//! restart interrupted.

use std::sync::Arc;
use std::time::Instant;

use tempora_ml::detect::Algorithm;
use tempora_ml::model::ModelSpec;
use tempora_ml::model::train::{Budget, train_all};

use super::input;
use super::registry::{Definition, Models};
use crate::error::{QueryError, Result};
use crate::limits::QueryOptions;
use crate::service::QueryService;
use crate::sql::{CreateModel, ModelStatement};

fn ml(e: tempora_ml::MlError) -> QueryError {
    QueryError::InvalidParameter(e.to_string())
}

fn now_ns() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// Runs a model command in `db`.
pub async fn run(
    q: &QueryService,
    db: &str,
    opts: &QueryOptions,
    m: &ModelStatement,
    now: i64,
) -> Result<()> {
    match m {
        ModelStatement::Create(c) => create(q, db, opts, c, now).await,
        ModelStatement::Drop { name, if_exists } => {
            let (models, db2, name2) = (q.models.clone(), db.to_string(), name.clone());
            let existed = blocking(move || models.drop_model(&db2, &name2)).await?;
            if !existed && !if_exists {
                return Err(QueryError::ModelNotFound(name.clone()));
            }
            Ok(())
        }
        ModelStatement::Refresh { name } => {
            let def = q.models.definition(db, name)?;
            let spec = ModelSpec::from_options(&def.options).map_err(ml)?;
            train(q, db, name, def, spec, true, opts, now).await
        }
        ModelStatement::Show | ModelStatement::Describe { .. } => {
            unreachable!("planned as queries")
        }
    }
}

async fn create(
    q: &QueryService,
    db: &str,
    opts: &QueryOptions,
    c: &CreateModel,
    now: i64,
) -> Result<()> {
    let spec = ModelSpec::from_options(&c.options).map_err(ml)?;
    tempora_model::validate_name(&c.name)
        .map_err(|e| QueryError::Sql(format!("CREATE MODEL: {e}")))?;
    if Algorithm::parse(&c.name).is_ok() || c.name == "auto" {
        return Err(QueryError::Sql(format!(
            "CREATE MODEL: {:?} is the name of an algorithm; anomaly_detect(v, '{}') would be ambiguous",
            c.name, c.name
        )));
    }
    if q.models.exists(db, &c.name) {
        return if c.if_not_exists {
            Ok(())
        } else {
            Err(QueryError::DuplicateModel(c.name.clone()))
        };
    }
    let def = Definition {
        options: c.options.clone(),
        query: c.query.clone(),
    };
    train(q, db, &c.name, def, spec, false, opts, now).await
}

/// Reads the training rows and starts training in the background.
#[allow(clippy::too_many_arguments)]
async fn train(
    q: &QueryService,
    db: &str,
    name: &str,
    def: Definition,
    spec: ModelSpec,
    replace: bool,
    opts: &QueryOptions,
    now: i64,
) -> Result<()> {
    let out = read_rows(q, db, name, &def.query, opts, now).await?;
    let rows = input::series(&out.schema, &out.batches, spec.value.as_deref())?;
    drop(out);
    if rows.series.is_empty() {
        return Err(QueryError::InvalidParameter(format!(
            "CREATE MODEL {name}: the training query returned no rows"
        )));
    }
    let models = q.models.clone();
    let held = input::bytes(&rows);
    if held > models.budget_bytes {
        return Err(ml(tempora_ml::MlError::OverBudget {
            need: held,
            budget: models.budget_bytes,
        }));
    }
    let (m2, db2, name2) = (models.clone(), db.to_string(), name.to_string());
    let (generation, progress) =
        blocking(move || m2.begin(&db2, &name2, def, replace, now)).await?;
    let (db, name) = (db.to_string(), name.to_string());
    let spawned = std::thread::Builder::new()
        .name(format!("tempora-train-{name}"))
        .spawn(move || {
            let t0 = Instant::now();
            let budget = Budget {
                bytes: models.budget_bytes - held,
            };
            // A panic in training fails the model (saying so) instead of leaving it training.
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                train_all(&spec, rows, models.threads, budget, &progress)
            }))
            .map_err(|_| "training panicked (a bug: please report it)".to_string())
            .and_then(|r| r.map_err(|e| e.to_string()));
            models.finish(
                &db,
                &name,
                generation,
                r,
                t0.elapsed().as_millis() as u64,
                now_ns(),
            );
        });
    if let Err(e) = spawned {
        return Err(QueryError::Sql(format!("could not start training: {e}")));
    }
    Ok(())
}

/// The training query's rows, read batch by batch within the model memory budget (not within
/// a result's row limit: they are not sent to a client), under the query's timeout.
async fn read_rows(
    q: &QueryService,
    db: &str,
    name: &str,
    query: &str,
    opts: &QueryOptions,
    now: i64,
) -> Result<crate::QueryOutput> {
    use futures::StreamExt;
    let mut opts = QueryOptions {
        max_rows: None,
        ..*opts
    };
    let stmts = q.parse(query)?;
    let [stmt] = stmts.as_slice() else {
        return Err(QueryError::Sql(format!(
            "CREATE MODEL {name}: the training text holds {} statements",
            stmts.len()
        )));
    };
    let budget = q.models.budget_bytes;
    let timeout = q.timeout_for(&opts);
    let read = async {
        let p = q.prepare(db, &opts, stmt).await?;
        let crate::Output::Rows { schema, mut stream } =
            q.execute(db, &mut opts, &p, Vec::new(), now).await?
        else {
            return Err(QueryError::Sql(format!(
                "CREATE MODEL {name}: the training statement returns no rows"
            )));
        };
        let (mut batches, mut bytes) = (Vec::new(), 0usize);
        while let Some(b) = stream.next().await {
            let b = b?;
            bytes += b.get_array_memory_size();
            if bytes > budget {
                return Err(ml(tempora_ml::MlError::OverBudget {
                    need: bytes,
                    budget,
                }));
            }
            batches.push(b);
        }
        Ok(crate::QueryOutput { schema, batches })
    };
    tokio::time::timeout(timeout, read)
        .await
        .map_err(|_| QueryError::Timeout(timeout))?
}

/// Restarts every training a restart interrupted; a model whose training cannot start is
/// recorded as failed with the reason.
pub async fn resume(q: &QueryService) {
    for (db, name) in q.models.interrupted() {
        let r = async {
            let def = q.models.definition(&db, &name)?;
            let spec = ModelSpec::from_options(&def.options).map_err(ml)?;
            train(
                q,
                &db,
                &name,
                def,
                spec,
                true,
                &QueryOptions::default(),
                now_ns(),
            )
            .await
        }
        .await;
        if let Err(e) = r {
            // Recorded as failed, in the catalog: blocking I/O, off the runtime.
            let models = q.models.clone();
            let why = e.to_string();
            let _ = blocking(move || {
                models.fail(&db, &name, why);
                Ok(())
            })
            .await;
        }
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| QueryError::Sql(format!("model task failed: {e}")))?
}

/// The registry a service opens over its engine: training on every core, within `budget`.
pub fn open(engine: Arc<tempora_storage::Engine>, budget_bytes: usize) -> Arc<Models> {
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    Arc::new(Models::open(engine, threads, budget_bytes))
}
