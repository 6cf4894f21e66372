use super::*;

fn seasonal(n: usize, m: usize, trend: f64) -> Vec<f64> {
    (0..n)
        .map(|i| {
            100.0 + trend * i as f64 + 10.0 * (i as f64 * std::f64::consts::TAU / m as f64).sin()
        })
        .collect()
}

fn spec(method: Method, seasons: Vec<usize>, horizon: usize) -> Spec {
    Spec {
        method,
        seasons,
        horizon,
        level: 0.95,
    }
}

fn check_shape(f: &Fitted, h: usize) {
    let fc = &f.forecast;
    assert_eq!((fc.point.len(), fc.lower.len(), fc.upper.len()), (h, h, h));
    for i in 0..h {
        assert!(fc.point[i].is_finite());
        assert!(
            fc.lower[i] <= fc.point[i] && fc.point[i] <= fc.upper[i],
            "at {i}"
        );
    }
}

#[test]
fn seasonal_naive_repeats_the_last_season() {
    let y = seasonal(48, 12, 0.0);
    let f = fit(&y, &spec(Method::SeasonalNaive, vec![12], 30)).unwrap();
    check_shape(&f, 30);
    for i in 0..30 {
        assert_eq!(f.forecast.point[i], y[36 + i % 12]);
    }
    // A pure repeat has no spread: the intervals are the points.
    assert!((f.forecast.upper[29] - f.forecast.point[29]).abs() < 1e-9);
    assert!(f.in_sample_mae < 1e-9);
}

#[test]
fn seasonal_naive_without_a_season_repeats_the_last_value_and_widens() {
    let y: Vec<f64> = (0..20).map(|i| (i % 3) as f64).collect();
    let f = fit(&y, &spec(Method::SeasonalNaive, vec![], 5)).unwrap();
    assert!(f.forecast.point.iter().all(|&p| p == y[19]));
    let w = |i: usize| f.forecast.upper[i] - f.forecast.point[i];
    assert!(w(4) > w(0) && w(0) > 0.0);
}

#[test]
fn ets_follows_a_trend() {
    let y: Vec<f64> = (0..60).map(|i| 10.0 + 2.0 * i as f64).collect();
    let f = fit(&y, &spec(Method::Ets, vec![], 5)).unwrap();
    check_shape(&f, 5);
    assert!(
        (f.forecast.point[0] - 130.0).abs() < 2.0,
        "{:?}",
        f.forecast.point
    );
}

#[test]
fn mstl_beats_ets_on_a_seasonal_series_and_auto_picks_a_seasonal_method() {
    let y = seasonal(240, 24, 0.1);
    let f = fit(&y, &spec(Method::Mstl, vec![24], 24)).unwrap();
    check_shape(&f, 24);
    let truth = seasonal(264, 24, 0.1);
    let err = mean_abs((0..24).map(|i| truth[240 + i] - f.forecast.point[i]));
    assert!(err < 1.0, "mstl error {err}");
    let a = fit(&y, &spec(Method::Auto, vec![24], 24)).unwrap();
    assert_ne!(a.method, Method::Ets, "holdout {:?}", a.holdout);
    assert_eq!(
        a.holdout.len(),
        3,
        "every candidate scored: {:?}",
        a.holdout
    );
}

#[test]
fn too_few_points_and_bad_seasons_are_errors_naming_them() {
    let e = fit(&[1.0, 2.0], &spec(Method::Ets, vec![], 3)).unwrap_err();
    assert!(
        e.to_string().contains("ets") && e.to_string().contains("10"),
        "{e}"
    );
    let e = fit(&[1.0; 12], &spec(Method::Mstl, vec![], 3)).unwrap_err();
    assert!(e.to_string().contains("season"), "{e}");
    let e = fit(&[1.0; 12], &spec(Method::Mstl, vec![8], 3)).unwrap_err();
    assert!(e.to_string().contains("17"), "{e}");
    let e = fit(&[f64::NAN; 12], &spec(Method::Auto, vec![], 3)).unwrap_err();
    assert!(matches!(e, MlError::TooFewPoints { .. }), "{e}");
}

#[test]
fn a_constant_series_forecasts_itself_without_panicking() {
    for m in [Method::SeasonalNaive, Method::Ets, Method::Auto] {
        let f = fit(&[5.0; 40], &spec(m, vec![], 4)).unwrap();
        check_shape(&f, 4);
        assert!(
            f.forecast.point.iter().all(|p| (p - 5.0).abs() < 1e-6),
            "{m:?}"
        );
    }
}

#[test]
fn missing_values_are_filled_before_fitting() {
    let mut y = seasonal(96, 12, 0.0);
    y[50] = f64::NAN;
    let f = fit(&y, &spec(Method::Auto, vec![12], 12)).unwrap();
    check_shape(&f, 12);
}

#[test]
fn method_names_round_trip_and_unknown_ones_are_named() {
    for m in [
        Method::SeasonalNaive,
        Method::Ets,
        Method::Mstl,
        Method::Auto,
    ] {
        assert_eq!(Method::parse(m.name()).unwrap(), m);
    }
    assert!(
        Method::parse("prophet")
            .unwrap_err()
            .to_string()
            .contains("prophet")
    );
}
