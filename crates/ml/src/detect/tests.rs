use super::*;
use proptest::prelude::*;

#[test]
fn algorithms_by_name() {
    for (name, want) in [
        ("nsigma", Ok(Algorithm::NSigma)),
        ("NSigma", Ok(Algorithm::NSigma)),
        (" mad ", Ok(Algorithm::Mad)),
        ("iqr", Ok(Algorithm::Iqr)),
        ("zscore", Err(MlError::UnknownAlgorithm("zscore".into()))),
    ] {
        assert_eq!(Algorithm::parse(name), want, "{name:?}");
    }
}

#[test]
fn options_parse_or_name_what_is_wrong() {
    let d = Options::defaults(Algorithm::NSigma);
    assert_eq!(
        d,
        Options {
            k: 3.0,
            window: 60,
            min_points: 15,
            alpha: 0.05,
            season: 0,
            gamma: 0.1,
            m: 8,
        }
    );
    let ok = |t: &str| Options::parse(Algorithm::NSigma, t).unwrap();
    assert_eq!(ok(""), d);
    assert_eq!(ok("k=2.5"), Options { k: 2.5, ..d });
    assert_eq!(
        ok("k=3, window=20"),
        Options {
            k: 3.0,
            window: 20,
            min_points: 8,
            ..d
        }
    );
    assert_eq!(
        ok("window=4"),
        Options {
            k: 3.0,
            window: 4,
            min_points: 4,
            ..d
        }
    );
    assert_eq!(
        ok("WINDOW=100,min_points=5"),
        Options {
            k: 3.0,
            window: 100,
            min_points: 5,
            ..d
        }
    );
    assert_eq!(Options::parse(Algorithm::Mad, "").unwrap().k, 3.5);
    assert_eq!(Options::parse(Algorithm::Iqr, "").unwrap().k, 1.5);
    for (name, text, words) in [
        (
            "unknown option",
            "k=3,season=24",
            "unknown option \"season\" for nsigma",
        ),
        ("not a pair", "k", "expected name=value pairs"),
        (
            "k not a number",
            "k=three",
            "option k = \"three\" of nsigma: expected a number",
        ),
        ("k negative", "k=-1", "must be a positive number"),
        ("k infinite", "k=inf", "must be a positive number"),
        ("window too small", "window=1", "between 2 and 100000"),
        ("window too large", "window=100001", "between 2 and 100000"),
        (
            "min_points above the window",
            "window=10,min_points=11",
            "between 2 and the window",
        ),
        (
            "min_points below 2",
            "min_points=1",
            "between 2 and the window",
        ),
    ] {
        let e = Options::parse(Algorithm::NSigma, text)
            .unwrap_err()
            .to_string();
        assert!(e.contains(words), "{name}: {e}");
    }
}

/// A noisy but regular series with one spike at 200.
fn spiky() -> Vec<f64> {
    (0..300)
        .map(|i| {
            let noise = ((i * 7919) % 13) as f64 / 13.0 - 0.5;
            if i == 200 { 40.0 } else { 10.0 + noise }
        })
        .collect()
}

#[test]
fn a_spike_is_flagged_by_every_algorithm_and_nothing_else() {
    for algo in [Algorithm::NSigma, Algorithm::Mad, Algorithm::Iqr] {
        let mut d = Detector::new(algo, Options::defaults(algo));
        let flagged: Vec<usize> = spiky()
            .into_iter()
            .enumerate()
            .filter(|&(_, x)| d.step(Some(x)).anomaly)
            .map(|(i, _)| i)
            .collect();
        assert_eq!(flagged, vec![200], "{algo:?}");
    }
}

#[test]
fn warm_up_missing_values_and_constant_series() {
    let mut d = Detector::new(
        Algorithm::Mad,
        Options::parse(Algorithm::Mad, "window=10").unwrap(),
    );
    // Fewer than min_points (8) before it: no evidence.
    for i in 0..8 {
        let v = d.step(Some(5.0));
        assert!(v.score.is_nan() && !v.anomaly, "point {i}");
    }
    // A constant window: the same value scores 0, any other is infinitely far.
    assert_eq!(
        d.step(Some(5.0)),
        Verdict {
            score: 0.0,
            anomaly: false
        }
    );
    let missing = d.step(None);
    assert!(missing.score.is_nan() && !missing.anomaly);
    let nan = d.step(Some(f64::NAN));
    assert!(nan.score.is_nan() && !nan.anomaly);
    assert_eq!(
        d.step(Some(5.5)),
        Verdict {
            score: f64::INFINITY,
            anomaly: true
        }
    );
}

/// The model: each score computed from scratch over the previous `window` present values.
fn model(algo: Algorithm, o: Options, xs: &[Option<f64>]) -> Vec<f64> {
    let mut seen: Vec<f64> = Vec::new();
    let mut out = Vec::new();
    for x in xs {
        let Some(x) = x.filter(|v| !v.is_nan()) else {
            out.push(f64::NAN);
            continue;
        };
        let w: Vec<f64> = seen.iter().rev().take(o.window).rev().copied().collect();
        if w.len() < o.min_points {
            out.push(f64::NAN);
        } else {
            let n = w.len() as f64;
            let mut s = w.clone();
            s.sort_by(f64::total_cmp);
            let q = |p: f64| window::quantile_sorted(&s, p);
            out.push(match algo {
                Algorithm::NSigma => {
                    let mean = w.iter().sum::<f64>() / n;
                    let var = w.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
                    distance(x - mean, var.sqrt())
                }
                Algorithm::Mad => {
                    let m = q(0.5);
                    let mut dev: Vec<f64> = w.iter().map(|v| (v - m).abs()).collect();
                    dev.sort_by(f64::total_cmp);
                    distance(x - m, 1.4826 * window::quantile_sorted(&dev, 0.5))
                }
                Algorithm::Iqr => {
                    let (q1, q3) = (q(0.25), q(0.75));
                    let outside = if x < q1 { q1 - x } else { (x - q3).max(0.0) };
                    distance(outside, q3 - q1)
                }
                Algorithm::Esd | Algorithm::Stl | Algorithm::Discord => {
                    unreachable!("not modelled here")
                }
            });
        }
        seen.push(x);
    }
    out
}

fn close(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
}

proptest! {
    #[test]
    fn detectors_equal_the_model(
        xs in prop::collection::vec(prop::option::weighted(0.9, -1e3..1e3f64), 0..400),
        window in 2usize..50,
        algo in prop::sample::select(vec![Algorithm::NSigma, Algorithm::Mad, Algorithm::Iqr]),
    ) {
        let o = Options::parse(algo, &format!("window={window}")).unwrap();
        let mut d = Detector::new(algo, o);
        let want = model(algo, o, &xs);
        for (i, x) in xs.iter().enumerate() {
            let v = d.step(*x);
            prop_assert!(close(v.score, want[i]), "{algo:?} point {i}: {} vs {}", v.score, want[i]);
            prop_assert_eq!(v.anomaly, want[i] > o.k);
        }
    }
}

/// A daily-shaped series (season 24) with noise, one spike at 300 and one dip at 420 that are
/// small against the seasonal swing but large against the noise.
fn seasonal() -> Vec<f64> {
    (0..600)
        .map(|i| {
            let shape = 20.0 * (std::f64::consts::TAU * (i % 24) as f64 / 24.0).sin();
            let noise = ((i * 7919) % 17) as f64 / 17.0 - 0.5;
            let event = match i {
                300 => 6.0,
                420 => -6.0,
                _ => 0.0,
            };
            50.0 + shape + noise + event
        })
        .collect()
}

#[test]
fn seasonal_detectors_find_what_the_season_hides() {
    for (algo, opts) in [
        (Algorithm::Esd, "season=24,window=96"),
        (Algorithm::Stl, "season=24,window=96"),
    ] {
        let mut d = Detector::new(algo, Options::parse(algo, opts).unwrap());
        let flagged: Vec<usize> = seasonal()
            .into_iter()
            .enumerate()
            .filter(|&(_, x)| d.step(Some(x)).anomaly)
            .map(|(i, _)| i)
            .filter(|&i| i >= 200)
            .collect();
        assert_eq!(flagged, vec![300, 420], "{algo:?} {opts}");
    }
    // Without the season the same events hide in the swing.
    let mut d = Detector::new(
        Algorithm::Mad,
        Options::parse(Algorithm::Mad, "window=96").unwrap(),
    );
    let found = seasonal()
        .into_iter()
        .enumerate()
        .filter(|&(i, x)| d.step(Some(x)).anomaly && (i == 300 || i == 420))
        .count();
    assert_eq!(found, 0, "a detector without the season misses them");
}

#[test]
fn seasonal_options_are_checked_per_algorithm() {
    for (algo, text, words) in [
        (
            Algorithm::Esd,
            "k=3",
            "unknown option \"k\" for esd (known: alpha, window, min_points, season)",
        ),
        (Algorithm::Esd, "alpha=0.7", "must be between 0 and 0.5"),
        (Algorithm::Stl, "season=1", "must be 0 (none) or between 2"),
        (Algorithm::Stl, "gamma=0", "must be in (0, 1]"),
        (
            Algorithm::NSigma,
            "season=24",
            "unknown option \"season\" for nsigma",
        ),
    ] {
        let e = Options::parse(algo, text).unwrap_err().to_string();
        assert!(e.contains(words), "{algo:?} {text}: {e}");
    }
}

#[test]
fn discord_has_its_own_defaults_and_checks_m_against_the_window() {
    let d = Options::defaults(Algorithm::Discord);
    assert_eq!((d.window, d.min_points, d.m, d.k), (1000, 50, 8, 4.0));
    let e = Options::parse(Algorithm::Discord, "m=20,window=10")
        .unwrap_err()
        .to_string();
    assert!(e.contains("longer than m"), "{e}");
    let e = Options::parse(Algorithm::Discord, "m=1")
        .unwrap_err()
        .to_string();
    assert!(e.contains("between 2"), "{e}");
    let e = Options::parse(Algorithm::Mad, "m=4")
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown option"), "{e}");
}
