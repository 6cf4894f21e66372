//! Forecasts one series from standard input (one value per line) and prints the points:
//! `forecast <method> <seasons, e.g. 48,336 or -> <horizon>`. Used by `bench/ml` to check the
//! forecasters against Python's outside the server.

use std::io::BufRead;

use tempora_ml::forecast::{Method, Spec, fit};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let method = Method::parse(&args[1]).expect("a method");
    let seasons = args[2].split(',').filter_map(|s| s.parse().ok()).collect();
    let horizon = args[3].parse().expect("a horizon");
    let y: Vec<f64> = std::io::stdin()
        .lock()
        .lines()
        .map(|l| l.expect("a line").trim().parse().unwrap_or(f64::NAN))
        .collect();
    let f = fit(
        &y,
        &Spec {
            method,
            seasons,
            horizon,
            level: 0.95,
        },
    )
    .expect("a fit");
    eprintln!("method {:?} holdout {:?}", f.method, f.holdout);
    for p in f.forecast.point {
        println!("{p}");
    }
}
