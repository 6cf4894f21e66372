//! Scores one series from standard input (one value per line) with an ad hoc detector and
//! prints 1 or 0 per point: `score <algorithm> [options]`. Used by `bench/ml` to tune the
//! detectors' defaults against labelled data outside the server.

use std::io::BufRead;

use tempora_ml::detect::{Algorithm, Detector, Options};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let algo = Algorithm::parse(args.get(1).map_or("mad", String::as_str)).expect("an algorithm");
    let opts = Options::parse(algo, args.get(2).map_or("", String::as_str)).expect("options");
    let mut d = Detector::new(algo, opts);
    let stdin = std::io::stdin();
    let mut out = String::new();
    for line in stdin.lock().lines() {
        let v: f64 = line.expect("a line").trim().parse().unwrap_or(f64::NAN);
        out.push(if d.step(Some(v)).anomaly { '1' } else { '0' });
        out.push('\n');
    }
    print!("{out}");
}
