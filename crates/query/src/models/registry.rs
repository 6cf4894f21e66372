//! The models of every database by name (`db.model`): their catalog records, the trained
//! models loaded from their files, and the training running for each.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use parking_lot::{Condvar, Mutex};
use serde::{Deserialize, Serialize};
use tempora_ml::model::{Progress, SeriesKey, TrainedModel};
use tempora_storage::Engine;
use tempora_storage::catalog::models::{ModelRecord, ModelStatus, model_path};

use super::kept::KeptStates;
use crate::error::{QueryError, Result};

/// A model's definition as the catalog keeps it: the options and the training query's text
/// (read again to retrain, after a restart too).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Definition {
    pub options: Vec<(String, String)>,
    pub query: String,
}

/// What a training found, for `SHOW MODELS`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub series: usize,
    pub failed: usize,
    pub rows: u64,
    /// Algorithm chosen → series.
    pub chosen: BTreeMap<String, usize>,
    /// Mean over series of the in-sample error (share flagged, or one-step MAE).
    pub mean_in_sample_error: f64,
}

/// A trained model in memory, with the state its scoring keeps.
#[derive(Debug)]
pub struct Loaded {
    pub model: TrainedModel,
    pub kept: KeptStates,
    /// Series scored that training never saw (scored with `auto` defaults).
    pub untrained: Mutex<BTreeSet<SeriesKey>>,
}

impl Loaded {
    pub fn new(model: TrainedModel) -> Self {
        Self {
            kept: KeptStates::new(model.spec.keep),
            model,
            untrained: Mutex::new(BTreeSet::new()),
        }
    }
}

struct Training {
    generation: u64,
    progress: Arc<Progress>,
    started_ns: i64,
}

struct Entry {
    record: ModelRecord,
    definition: Definition,
    loaded: Option<Arc<Loaded>>,
    training: Option<Training>,
}

/// The registry.
pub struct Models {
    engine: Arc<Engine>,
    entries: Mutex<BTreeMap<String, Entry>>,
    /// Signalled whenever a training ends or a model is dropped.
    changed: Condvar,
    generation: AtomicU64,
    /// Threads a training uses.
    pub threads: usize,
    /// Bytes a model (its input and its fitted series) may hold.
    pub budget_bytes: usize,
}

/// A row of `SHOW MODELS`.
#[derive(Debug, Clone)]
pub struct ShowRow {
    pub name: String,
    pub task: String,
    pub algorithm: String,
    pub chosen: String,
    pub series: u64,
    pub rows: u64,
    pub status: String,
    pub reason: Option<String>,
    pub trained_at_ns: Option<i64>,
    pub training_seconds: Option<f64>,
    pub metrics: String,
    /// When the running training started.
    pub started_ns: Option<i64>,
}

impl std::fmt::Debug for Models {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Models")
            .field("models", &self.entries.lock().keys().collect::<Vec<_>>())
            .finish()
    }
}

fn key(db: &str, name: &str) -> String {
    tempora_storage::catalog::qualified(db, name)
}

impl Models {
    /// The registry of `engine`'s models; ready models' files are loaded now (a file that
    /// cannot be read makes its model failed, naming the file).
    pub fn open(engine: Arc<Engine>, threads: usize, budget_bytes: usize) -> Self {
        if let Err(e) = engine.remove_orphan_model_files() {
            tracing::warn!(error = %e, "could not remove orphan model files");
        }
        let mut entries = BTreeMap::new();
        for (name, mut record) in engine.models() {
            let definition = serde_json::from_str(&record.definition).unwrap_or_else(|e| {
                record.status = ModelStatus::Failed(format!("unreadable definition: {e}"));
                Definition {
                    options: Vec::new(),
                    query: String::new(),
                }
            });
            let loaded = match &record.file {
                Some(path) => match engine
                    .read_model_file(path)
                    .map_err(|e| e.to_string())
                    .and_then(|b| {
                        tempora_ml::model::file::decode(path, &b).map_err(|e| e.to_string())
                    }) {
                    Ok(m) => Some(Arc::new(Loaded::new(m))),
                    Err(e) => {
                        record.status = ModelStatus::Failed(e);
                        None
                    }
                },
                None => None,
            };
            entries.insert(
                name,
                Entry {
                    record,
                    definition,
                    loaded,
                    training: None,
                },
            );
        }
        Self {
            engine,
            entries: Mutex::new(entries),
            changed: Condvar::new(),
            generation: AtomicU64::new(0),
            threads: threads.max(1),
            budget_bytes,
        }
    }

    /// Whether `db` has a model `name`.
    pub fn exists(&self, db: &str, name: &str) -> bool {
        self.entries.lock().contains_key(&key(db, name))
    }

    /// The definition of model `name`.
    pub fn definition(&self, db: &str, name: &str) -> Result<Definition> {
        self.entries
            .lock()
            .get(&key(db, name))
            .map(|e| e.definition.clone())
            .ok_or_else(|| QueryError::ModelNotFound(name.to_string()))
    }

    /// The trained model `name`, or an error saying why there is none.
    pub fn ready(&self, db: &str, name: &str) -> Result<Arc<Loaded>> {
        let entries = self.entries.lock();
        let e = entries
            .get(&key(db, name))
            .ok_or_else(|| QueryError::ModelNotFound(name.to_string()))?;
        if let Some(l) = &e.loaded {
            return Ok(l.clone());
        }
        Err(QueryError::ModelNotReady(
            match (&e.record.status, &e.training) {
                (_, Some(t)) => format!(
                    "model {name:?} is still training ({} of {} series done); query it when SHOW MODELS says ready",
                    t.progress.done.load(Ordering::Relaxed),
                    t.progress.total.load(Ordering::Relaxed)
                ),
                (ModelStatus::Failed(why), _) => format!("model {name:?} failed to train: {why}"),
                _ => format!(
                    "model {name:?} has not been trained (ALTER MODEL {name} REFRESH trains it)"
                ),
            },
        ))
    }

    /// Records model `name` as training and returns its generation and progress; with
    /// `replace`, the model exists and keeps what it had until the training finishes.
    pub fn begin(
        &self,
        db: &str,
        name: &str,
        definition: Definition,
        replace: bool,
        now_ns: i64,
    ) -> Result<(u64, Arc<Progress>)> {
        let k = key(db, name);
        let mut entries = self.entries.lock();
        let old = entries.get(&k);
        match (old.is_some(), replace) {
            (true, false) => return Err(QueryError::DuplicateModel(name.to_string())),
            (false, true) => return Err(QueryError::ModelNotFound(name.to_string())),
            _ => {}
        }
        if let Some(t) = old.and_then(|e| e.training.as_ref()) {
            t.progress.cancel.store(true, Ordering::Relaxed);
        }
        let record = ModelRecord {
            definition: serde_json::to_string(&definition).expect("a definition encodes"),
            status: ModelStatus::Training,
            file: old.and_then(|e| e.record.file.clone()),
            trained_at_ns: old.and_then(|e| e.record.trained_at_ns),
            training_ms: old.map_or(0, |e| e.record.training_ms),
            summary: old.map_or_else(String::new, |e| e.record.summary.clone()),
        };
        self.engine.put_model(&k, record.clone(), None)?;
        let generation = self.generation.fetch_add(1, Ordering::Relaxed) + 1;
        let progress = Arc::new(Progress::default());
        let loaded = old.and_then(|e| e.loaded.clone());
        entries.insert(
            k,
            Entry {
                record,
                definition,
                loaded,
                training: Some(Training {
                    generation,
                    progress: progress.clone(),
                    started_ns: now_ns,
                }),
            },
        );
        Ok((generation, progress))
    }

    /// Records the end of training `generation` of model `name`: the model, or why not.
    /// A training that is no longer current records nothing.
    pub fn finish(
        &self,
        db: &str,
        name: &str,
        generation: u64,
        result: std::result::Result<TrainedModel, String>,
        ms: u64,
        now_ns: i64,
    ) {
        let k = key(db, name);
        let mut entries = self.entries.lock();
        let Some(e) = entries.get_mut(&k) else { return };
        if e.training
            .as_ref()
            .is_none_or(|t| t.generation != generation)
        {
            return;
        }
        // Unique per training: the finish time (ns) and the generation.
        let version = (now_ns.max(0) as u64).wrapping_add(generation);
        let outcome = result.and_then(|m| {
            let path = model_path(&k, version);
            let bytes = Bytes::from(tempora_ml::model::file::encode(&m));
            let record = ModelRecord {
                status: ModelStatus::Ready,
                file: Some(path.clone()),
                trained_at_ns: Some(now_ns),
                training_ms: ms,
                summary: serde_json::to_string(&summary(&m)).expect("a summary encodes"),
                ..e.record.clone()
            };
            self.engine
                .put_model(&k, record.clone(), Some((path, bytes)))
                .map_err(|err| err.to_string())?;
            Ok((record, m))
        });
        match outcome {
            Ok((record, m)) => {
                e.record = record;
                e.loaded = Some(Arc::new(Loaded::new(m)));
            }
            Err(why) => self.record_failure(&k, e, why),
        }
        e.training = None;
        self.changed.notify_all();
    }

    /// Blocks until model `name` is not training (or `timeout` passes); returns its status
    /// (`ready`, `failed: why`, `training`), or None when it does not exist.
    pub fn wait(&self, db: &str, name: &str, timeout: std::time::Duration) -> Option<String> {
        let k = key(db, name);
        let deadline = std::time::Instant::now() + timeout;
        let mut entries = self.entries.lock();
        loop {
            let e = entries.get(&k)?;
            if e.training.is_none() {
                return Some(match &e.record.status {
                    ModelStatus::Failed(why) => format!("failed: {why}"),
                    s => s.name().to_string(),
                });
            }
            if self.changed.wait_until(&mut entries, deadline).timed_out() {
                return Some("training".into());
            }
        }
    }

    /// Records that model `name`'s training could not start (a restart's resume), saying why.
    pub fn fail(&self, db: &str, name: &str, why: String) {
        let k = key(db, name);
        let mut entries = self.entries.lock();
        if let Some(e) = entries.get_mut(&k) {
            self.record_failure(&k, e, why);
            self.changed.notify_all();
        }
    }

    /// Records entry `k` as failed with `why`, in the catalog and in memory.
    fn record_failure(&self, k: &str, e: &mut Entry, why: String) {
        tracing::warn!(model = %k, reason = %why, "model training failed");
        let record = ModelRecord {
            status: ModelStatus::Failed(why),
            ..e.record.clone()
        };
        if let Err(err) = self.engine.put_model(k, record.clone(), None) {
            tracing::warn!(model = %k, error = %err, "could not record a failed training");
        }
        e.record = record;
    }

    /// Drops model `name`, cancelling its training; returns whether it existed.
    pub fn drop_model(&self, db: &str, name: &str) -> Result<bool> {
        let k = key(db, name);
        let mut entries = self.entries.lock();
        let Some(e) = entries.get(&k) else {
            return Ok(false);
        };
        if let Some(t) = &e.training {
            t.progress.cancel.store(true, Ordering::Relaxed);
        }
        self.engine.drop_model(&k)?;
        entries.remove(&k);
        self.changed.notify_all();
        Ok(true)
    }

    /// Forgets the models of a dropped database (the catalog dropped their records).
    pub fn forget_database(&self, db: &str) {
        self.entries.lock().retain(|k, e| {
            let keep = tempora_storage::catalog::split(k).is_none_or(|(d, _)| d != db);
            if !keep && let Some(t) = &e.training {
                t.progress.cancel.store(true, Ordering::Relaxed);
            }
            keep
        });
    }

    /// Models whose training a restart interrupted: (database, name).
    pub fn interrupted(&self) -> Vec<(String, String)> {
        self.entries
            .lock()
            .iter()
            .filter(|(_, e)| e.record.status == ModelStatus::Training && e.training.is_none())
            .filter_map(|(k, _)| {
                tempora_storage::catalog::split(k).map(|(d, n)| (d.to_string(), n.to_string()))
            })
            .collect()
    }

    /// The rows of `SHOW MODELS` in `db`.
    pub fn show(&self, db: &str) -> Vec<ShowRow> {
        let entries = self.entries.lock();
        entries
            .iter()
            .filter_map(|(k, e)| {
                let (d, name) = tempora_storage::catalog::split(k)?;
                (d == db).then(|| show_row(name, e))
            })
            .collect()
    }

    /// The loaded model `name` and its status, for `DESCRIBE MODEL`.
    pub fn describe(&self, db: &str, name: &str) -> Result<(Option<Arc<Loaded>>, String)> {
        let entries = self.entries.lock();
        let e = entries
            .get(&key(db, name))
            .ok_or_else(|| QueryError::ModelNotFound(name.to_string()))?;
        Ok((e.loaded.clone(), status_text(e)))
    }
}

fn status_text(e: &Entry) -> String {
    match (&e.training, &e.record.status) {
        (Some(_), _) => "training".into(),
        (None, ModelStatus::Training) => "training (interrupted; resumes at start)".into(),
        (None, s) => s.name().into(),
    }
}

fn show_row(name: &str, e: &Entry) -> ShowRow {
    let def_spec = tempora_ml::model::ModelSpec::from_options(&e.definition.options).ok();
    let s: Summary = serde_json::from_str(&e.record.summary).unwrap_or_default();
    let chosen: Vec<String> = s.chosen.iter().map(|(a, n)| format!("{a} x {n}")).collect();
    let metrics = match def_spec.as_ref().map(|d| d.task) {
        _ if s.series == 0 => String::new(),
        Some(tempora_ml::model::Task::Forecasting) => {
            format!("mean in-sample one-step MAE {:.4}", s.mean_in_sample_error)
        }
        _ => format!(
            "{:.3}% of training points flagged",
            100.0 * s.mean_in_sample_error
        ),
    };
    let metrics = if s.failed > 0 {
        format!(
            "{metrics}; {} series not trained (DESCRIBE MODEL)",
            s.failed
        )
    } else {
        metrics
    };
    ShowRow {
        name: name.to_string(),
        task: def_spec.as_ref().map_or("?", |d| d.task.name()).to_string(),
        algorithm: def_spec
            .as_ref()
            .map_or("?", |d| d.algorithm_name())
            .to_string(),
        chosen: chosen.join(", "),
        series: s.series as u64,
        rows: s.rows,
        status: match &e.training {
            Some(t) => format!(
                "training ({} of {} series)",
                t.progress.done.load(Ordering::Relaxed),
                t.progress.total.load(Ordering::Relaxed)
            ),
            None => status_text(e),
        },
        reason: match &e.record.status {
            ModelStatus::Failed(why) => Some(why.clone()),
            _ => None,
        },
        trained_at_ns: e.record.trained_at_ns,
        training_seconds: e
            .record
            .trained_at_ns
            .map(|_| e.record.training_ms as f64 / 1000.0),
        metrics,
        started_ns: e.training.as_ref().map(|t| t.started_ns),
    }
}

/// What a trained model holds, in brief.
pub fn summary(m: &TrainedModel) -> Summary {
    let n = m.series.len().max(1) as f64;
    Summary {
        series: m.series.len(),
        failed: m.failed.len(),
        rows: m.rows,
        chosen: m
            .chosen()
            .into_iter()
            .map(|(a, c)| (a.to_string(), c))
            .collect(),
        mean_in_sample_error: m.series.values().map(|s| s.in_sample_error()).sum::<f64>() / n,
    }
}
