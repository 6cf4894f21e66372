//! The state a model's scoring keeps per series (Lindorm's kept state): the detector after
//! the newest point scored, and the verdicts of the last `keep` points, so a dashboard that
//! polls the last minutes scores only its new points.
//!
//! Scoring a series' points in time order ([`score`]):
//! - a point after the newest scored one continues the kept detector (the trained one at
//!   first), which then keeps it: *scored*;
//! - a point at or before it whose time and value are among the recent verdicts takes that
//!   verdict: *from kept state*;
//! - when some such point is not among them (older than the recent verdicts, inside the
//!   training rows, or rewritten), every point up to the newest scored one is scored again by
//!   a fresh detector of the series' algorithm over the query's own points: *replayed*. The
//!   kept state does not change for them.
//!
//! A series training never saw is scored with `auto`'s default detector (`mad`) from no
//! history, and counted as untrained.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use parking_lot::Mutex;
use tempora_ml::detect::{Detector, Verdict};
use tempora_ml::model::{SeriesKey, SeriesModel, series::default_detector};

use super::registry::Loaded;

#[derive(Debug, Clone, Copy)]
struct Recent {
    time: i64,
    bits: u64,
    verdict: Verdict,
}

#[derive(Debug)]
pub struct Kept {
    detector: Detector,
    last_time: i64,
    recent: VecDeque<Recent>,
}

/// Every series' kept state of one model.
#[derive(Debug)]
pub struct KeptStates {
    keep: usize,
    map: Mutex<HashMap<SeriesKey, Arc<Mutex<Kept>>>>,
}

/// What scoring one series did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub scored: u64,
    pub from_kept: u64,
    pub replayed: u64,
    pub untrained: bool,
}

impl KeptStates {
    pub fn new(keep: usize) -> Self {
        Self {
            keep: keep.max(1),
            map: Mutex::new(HashMap::new()),
        }
    }

    /// Series with kept state.
    pub fn len(&self) -> usize {
        self.map.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Scores one series' points, in time order (`values[i]` None for NULL), with `loaded`.
pub fn score(
    loaded: &Loaded,
    key: &SeriesKey,
    times: &[i64],
    values: &[Option<f64>],
) -> (Vec<Option<Verdict>>, Counts) {
    assert_eq!(times.len(), values.len());
    let mut counts = Counts::default();
    let slot = {
        let mut map = loaded.kept.map.lock();
        map.entry(key.clone())
            .or_insert_with(|| {
                let (detector, last_time) = match loaded.model.series.get(key) {
                    Some(SeriesModel::Detect(d)) => (d.detector.clone(), d.last_time),
                    _ => (default_detector(&loaded.model.spec), i64::MIN),
                };
                Arc::new(Mutex::new(Kept {
                    detector,
                    last_time,
                    recent: VecDeque::new(),
                }))
            })
            .clone()
    };
    if !matches!(loaded.model.series.get(key), Some(SeriesModel::Detect(_))) {
        counts.untrained = true;
        loaded.untrained.lock().insert(key.clone());
    }
    let mut k = slot.lock();
    let base = k.last_time;
    let mut out = vec![None; times.len()];
    let old: Vec<usize> = (0..times.len())
        .filter(|&i| times[i] <= base && values[i].is_some())
        .collect();
    let found: Vec<Option<Verdict>> = old
        .iter()
        .map(|&i| k.find(times[i], values[i].expect("present")))
        .collect();
    if found.iter().all(Option::is_some) {
        for (&i, v) in old.iter().zip(found) {
            out[i] = v;
        }
        counts.from_kept = old.len() as u64;
    } else {
        let mut fresh = Detector::new(k.detector.algorithm(), *k.detector.options());
        for &i in &old {
            out[i] = Some(fresh.step(values[i]));
        }
        counts.replayed = old.len() as u64;
    }
    let keep = loaded.kept.keep;
    for i in (0..times.len()).filter(|&i| times[i] > base) {
        let Some(x) = values[i] else { continue };
        let v = k.detector.step(Some(x));
        out[i] = Some(v);
        k.last_time = k.last_time.max(times[i]);
        if k.recent.len() == keep {
            k.recent.pop_front();
        }
        k.recent.push_back(Recent {
            time: times[i],
            bits: x.to_bits(),
            verdict: v,
        });
        counts.scored += 1;
    }
    (out, counts)
}

impl Kept {
    fn find(&self, time: i64, x: f64) -> Option<Verdict> {
        let at = self.recent.partition_point(|r| r.time < time);
        self.recent
            .range(at..)
            .take_while(|r| r.time == time)
            .find(|r| r.bits == x.to_bits())
            .map(|r| r.verdict)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tempora_ml::model::train::{Budget, Input, Progress, train_all};
    use tempora_ml::model::{ModelSpec, SeriesInput};

    fn loaded(keep: usize) -> Loaded {
        let spec = ModelSpec::from_options(&[
            ("task".into(), "anomaly_detection".into()),
            ("algorithm".into(), "mad".into()),
            ("keep".into(), keep.to_string()),
        ])
        .unwrap();
        let times: Vec<i64> = (0..100).collect();
        let values = (0..100).map(|i| (i % 7) as f64).collect();
        let input = Input {
            key_columns: vec!["host".into()],
            value_column: "v".into(),
            series: vec![(vec![Some("a".into())], SeriesInput { times, values })],
            rows: 100,
        };
        Loaded::new(
            train_all(
                &spec,
                input,
                1,
                Budget { bytes: 1 << 30 },
                &Progress::default(),
            )
            .unwrap(),
        )
    }

    fn a() -> SeriesKey {
        vec![Some("a".into())]
    }

    #[test]
    fn polling_scores_only_new_points() {
        let l = loaded(1000);
        let t: Vec<i64> = (100..160).collect();
        let v: Vec<Option<f64>> = t.iter().map(|i| Some((i % 7) as f64)).collect();
        let (first, c) = score(&l, &a(), &t, &v);
        assert_eq!(
            c,
            Counts {
                scored: 60,
                ..Counts::default()
            }
        );
        // The next poll: the same hour moved on by ten points.
        let t2: Vec<i64> = (110..170).collect();
        let v2: Vec<Option<f64>> = t2.iter().map(|i| Some((i % 7) as f64)).collect();
        let (second, c) = score(&l, &a(), &t2, &v2);
        assert_eq!(
            c,
            Counts {
                scored: 10,
                from_kept: 50,
                ..Counts::default()
            }
        );
        assert_eq!(
            first[10..]
                .iter()
                .map(|v| v.unwrap().score.to_bits())
                .collect::<Vec<_>>(),
            second[..50]
                .iter()
                .map(|v| v.unwrap().score.to_bits())
                .collect::<Vec<_>>()
        );
    }

    #[test]
    fn points_inside_training_or_rewritten_are_replayed_without_moving_the_state() {
        let l = loaded(1000);
        let t: Vec<i64> = (50..100).collect();
        let v: Vec<Option<f64>> = t.iter().map(|i| Some((i % 7) as f64)).collect();
        let (_, c) = score(&l, &a(), &t, &v);
        assert_eq!(
            c,
            Counts {
                replayed: 50,
                ..Counts::default()
            }
        );
        let (_, c) = score(&l, &a(), &[100], &[Some(1.0)]);
        assert_eq!(c.scored, 1);
        // Point 100 rewritten with another value: replayed, not taken from the kept verdict.
        let (_, c) = score(&l, &a(), &[100, 101], &[Some(2.0), Some(3.0)]);
        assert_eq!(
            c,
            Counts {
                scored: 1,
                replayed: 1,
                ..Counts::default()
            }
        );
    }

    #[test]
    fn an_unseen_series_is_scored_by_defaults_and_said_so() {
        let l = loaded(10);
        let b = vec![Some("b".to_string())];
        let (out, c) = score(&l, &b, &[1, 2], &[Some(1.0), None]);
        assert!(c.untrained && c.scored == 1);
        assert!(out[1].is_none(), "NULL scores NULL");
        assert!(l.untrained.lock().contains(&b));
    }

    #[test]
    fn recent_verdicts_are_bounded_by_keep() {
        let l = loaded(5);
        let t: Vec<i64> = (100..120).collect();
        let v: Vec<Option<f64>> = t.iter().map(|_| Some(1.0)).collect();
        score(&l, &a(), &t, &v);
        let (_, c) = score(&l, &a(), &t[15..], &v[15..]);
        assert_eq!(c.from_kept, 5, "the last five kept");
        let (_, c) = score(&l, &a(), &t[10..], &v[10..]);
        assert_eq!(c.replayed, 10, "older than the kept verdicts");
    }
}
