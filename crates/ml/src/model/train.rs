//! Training every series of a model on `threads` threads, cancellable, within a memory budget.
//!
//! Invariants:
//! - Each series is trained exactly once, by whichever thread takes it next (an atomic
//!   cursor), so a long series does not hold up the rest of a thread's share.
//! - Cancellation ([`Progress::cancel`]) is seen before each series: training stops within
//!   one series' time and returns [`MlError::Cancelled`].
//! - The fitted series' memory is counted as they finish; past [`Budget::bytes`] training
//!   stops with an error naming the budget.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::series::{self, SeriesInput, SeriesModel};
use super::{ModelSpec, SeriesKey, TrainedModel};
use crate::error::MlError;

/// What a running training has done, and its stop switch.
#[derive(Debug, Default)]
pub struct Progress {
    pub done: AtomicUsize,
    pub total: AtomicUsize,
    pub cancel: AtomicBool,
}

/// The memory a model may hold.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    pub bytes: usize,
}

/// The training input: every series' rows, and the columns they came from.
pub struct Input {
    pub key_columns: Vec<String>,
    pub value_column: String,
    pub series: Vec<(SeriesKey, SeriesInput)>,
    pub rows: u64,
}

/// Trains every series of `input` by `spec`.
pub fn train_all(
    spec: &ModelSpec,
    input: Input,
    threads: usize,
    budget: Budget,
    progress: &Progress,
) -> Result<TrainedModel, MlError> {
    let n = input.series.len();
    progress.total.store(n, Ordering::Relaxed);
    let cursor = AtomicUsize::new(0);
    let used = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Result<SeriesModel, MlError>)>> =
        Mutex::new(Vec::with_capacity(n));
    let stop: Mutex<Option<MlError>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..threads.clamp(1, 64) {
            s.spawn(|| {
                let mut mine = Vec::new();
                loop {
                    if progress.cancel.load(Ordering::Relaxed) {
                        stop.lock()
                            .expect("not poisoned")
                            .get_or_insert(MlError::Cancelled);
                        break;
                    }
                    if stop.lock().expect("not poisoned").is_some() {
                        break;
                    }
                    let i = cursor.fetch_add(1, Ordering::Relaxed);
                    let Some((_, rows)) = input.series.get(i) else {
                        break;
                    };
                    let r = series::train(spec, rows);
                    if let Ok(m) = &r {
                        let total = used.fetch_add(m.bytes(), Ordering::Relaxed) + m.bytes();
                        if total > budget.bytes {
                            stop.lock()
                                .expect("not poisoned")
                                .get_or_insert(MlError::OverBudget {
                                    need: total,
                                    budget: budget.bytes,
                                });
                            break;
                        }
                    }
                    mine.push((i, r));
                    progress.done.fetch_add(1, Ordering::Relaxed);
                }
                results.lock().expect("not poisoned").extend(mine);
            });
        }
    });
    if let Some(e) = stop.into_inner().expect("not poisoned") {
        return Err(e);
    }
    let mut out = TrainedModel {
        spec: spec.clone(),
        key_columns: input.key_columns,
        value_column: input.value_column,
        series: BTreeMap::new(),
        failed: BTreeMap::new(),
        rows: input.rows,
    };
    let mut keys: Vec<Option<SeriesKey>> = input.series.into_iter().map(|(k, _)| Some(k)).collect();
    for (i, r) in results.into_inner().expect("not poisoned") {
        let key = keys[i].take().expect("each series trained once");
        match r {
            Ok(m) => {
                out.series.insert(key, m);
            }
            Err(e) => {
                out.failed.insert(key, e.to_string());
            }
        }
    }
    if out.series.is_empty() {
        let why = out
            .failed
            .values()
            .next()
            .cloned()
            .unwrap_or_else(|| "the query returned no rows".into());
        return Err(MlError::NothingTrained {
            series: out.failed.len(),
            reason: why,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::spec::Task;

    fn spec(task: &str) -> ModelSpec {
        ModelSpec::from_options(&[("task".into(), task.into())]).unwrap()
    }

    fn input(series: usize, points: usize) -> Input {
        Input {
            key_columns: vec!["host".into()],
            value_column: "v".into(),
            series: (0..series)
                .map(|s| {
                    let times = (0..points as i64).map(|t| t * 60_000_000_000).collect();
                    let values = (0..points).map(|t| ((t * 7 + s) % 13) as f64).collect();
                    (vec![Some(format!("h{s}"))], SeriesInput { times, values })
                })
                .collect(),
            rows: (series * points) as u64,
        }
    }

    #[test]
    fn every_series_is_trained_once_on_two_threads() {
        let p = Progress::default();
        let m = train_all(
            &spec("anomaly_detection"),
            input(50, 100),
            2,
            Budget { bytes: 1 << 30 },
            &p,
        )
        .unwrap();
        assert_eq!(m.series.len(), 50);
        assert_eq!(p.done.load(Ordering::Relaxed), 50);
        assert_eq!(m.spec.task, Task::AnomalyDetection);
    }

    #[test]
    fn a_short_series_fails_alone_and_all_short_fails_the_model() {
        let mut i = input(3, 100);
        i.series[1].1 = SeriesInput {
            times: vec![0, 1],
            values: vec![1.0, 2.0],
        };
        let m = train_all(
            &spec("forecasting"),
            i,
            2,
            Budget { bytes: 1 << 30 },
            &Progress::default(),
        )
        .unwrap();
        assert_eq!(m.series.len(), 2);
        assert!(
            m.failed[&vec![Some("h1".to_string())]].contains("needs at least"),
            "{:?}",
            m.failed
        );
        let e = train_all(
            &spec("forecasting"),
            input(2, 3),
            2,
            Budget { bytes: 1 << 30 },
            &Progress::default(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("no series"), "{e}");
    }

    #[test]
    fn cancel_and_budget_stop_training() {
        let p = Progress::default();
        p.cancel.store(true, Ordering::Relaxed);
        let e = train_all(
            &spec("anomaly_detection"),
            input(10, 100),
            2,
            Budget { bytes: 1 << 30 },
            &p,
        )
        .unwrap_err();
        assert_eq!(e, MlError::Cancelled);
        let e = train_all(
            &spec("anomaly_detection"),
            input(10, 100),
            2,
            Budget { bytes: 1000 },
            &Progress::default(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("1000"), "{e}");
    }
}
