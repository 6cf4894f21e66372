//! The devops and iot generators: deterministic bytes, output that Tempora's line-protocol
//! parser (InfluxDB's rules) accepts whole, CSV with one well-formed file per measurement, and
//! iot's missing and out-of-order points.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::sync::{Arc, Mutex};

use tempora_bench::devops::{self, Devops};
use tempora_bench::iot::{self, Iot};
use tempora_bench::tsbs::{Format, Scale, TSBS_START_NS};
use tempora_bench::walk::{UseCase, write_all};
use tempora_lineproto::{ParseOptions, Precision, parse};

/// A writer whose bytes can be read after it is handed over as a `Box<dyn Write>`.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn scale(hosts: usize, steps: i64, seed: u64) -> Scale {
    Scale {
        hosts,
        start_ns: TSBS_START_NS,
        interval_ns: 10_000_000_000,
        steps,
        seed,
    }
}

/// Runs a use case; returns the rows written and each output's bytes.
fn run(mut uc: impl UseCase, format: Format) -> (u64, Vec<String>) {
    let n = if format == Format::Csv {
        uc.measurements().len()
    } else {
        1
    };
    let shared: Vec<Shared> = (0..n).map(|_| Shared::default()).collect();
    let mut outs: Vec<Box<dyn Write>> = shared
        .iter()
        .map(|s| Box::new(s.clone()) as Box<dyn Write>)
        .collect();
    let rows = write_all(&mut uc, format, &mut outs).unwrap();
    let texts = shared
        .iter()
        .map(|s| String::from_utf8(s.0.lock().unwrap().clone()).unwrap())
        .collect();
    (rows, texts)
}

fn lp(uc: impl UseCase) -> (u64, String) {
    let (rows, mut t) = run(uc, Format::LineProtocol);
    (rows, t.remove(0))
}

#[test]
fn the_same_seed_gives_the_same_bytes() {
    assert_eq!(
        lp(Devops::new(scale(3, 5, 7))),
        lp(Devops::new(scale(3, 5, 7)))
    );
    assert_ne!(
        lp(Devops::new(scale(3, 5, 7))).1,
        lp(Devops::new(scale(3, 5, 8))).1
    );
    assert_eq!(
        lp(Iot::new(scale(20, 30, 7))),
        lp(Iot::new(scale(20, 30, 7)))
    );
    assert_ne!(
        lp(Iot::new(scale(20, 30, 7))).1,
        lp(Iot::new(scale(20, 30, 8))).1
    );
    let csv = |s| run(Iot::new(scale(20, 30, s)), Format::Csv).1;
    assert_eq!(csv(7), csv(7));
}

/// Parses with Tempora's line-protocol parser, which follows InfluxDB's rules; no line may be
/// refused. Returns rows per measurement.
fn parse_all(text: &str) -> BTreeMap<String, usize> {
    let parsed = parse(text.as_bytes(), &ParseOptions::new(Precision::Ns, 0));
    assert!(
        parsed.errors.is_empty(),
        "{:?}",
        &parsed.errors[..parsed.errors.len().min(3)]
    );
    let mut per = BTreeMap::new();
    for b in &parsed.batches {
        *per.entry(b.table().to_string()).or_default() += b.len();
    }
    per
}

#[test]
fn devops_writes_every_measurement_for_every_host_and_step() {
    let (rows, text) = lp(Devops::new(scale(4, 6, 1)));
    assert_eq!(rows, 4 * 6 * 9);
    let per = parse_all(&text);
    let names: Vec<&str> = devops::MEASUREMENTS.iter().map(|m| m.name).collect();
    let mut want: Vec<&str> = names.clone();
    want.sort();
    assert_eq!(per.keys().map(String::as_str).collect::<Vec<_>>(), want);
    assert!(per.values().all(|&n| n == 24), "{per:?}");
    // Each line has the host's 10 tags plus its measurement's own, and all its fields.
    for line in text.lines() {
        let name = line.split(',').next().unwrap();
        let m = devops::MEASUREMENTS
            .iter()
            .find(|m| m.name == name)
            .unwrap();
        let (series, rest) = line.split_once(' ').unwrap();
        assert_eq!(
            series.matches('=').count(),
            10 + m.extra_tags.len(),
            "{line}"
        );
        let fields = rest.rsplit_once(' ').unwrap().0;
        assert_eq!(fields.split(',').count(), m.fields.len(), "{line}");
    }
    // Counters never decrease: net's bytes_sent of host_0.
    let sent: Vec<i64> = text
        .lines()
        .filter(|l| l.starts_with("net,hostname=host_0,"))
        .map(|l| {
            let v = l.split("bytes_sent=").nth(1).unwrap();
            v[..v.find('i').unwrap()].parse().unwrap()
        })
        .collect();
    assert_eq!(sent.len(), 6);
    assert!(sent.windows(2).all(|w| w[0] <= w[1]), "{sent:?}");
}

#[test]
fn csv_has_one_file_per_measurement_with_its_columns() {
    let (rows, files) = run(Devops::new(scale(2, 3, 1)), Format::Csv);
    assert_eq!(rows, 2 * 3 * 9);
    for (m, text) in devops::MEASUREMENTS.iter().zip(&files) {
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        assert_eq!(header[0], "time");
        assert_eq!(
            header.len(),
            1 + 10 + m.extra_tags.len() + m.fields.len(),
            "{}",
            m.name
        );
        assert_eq!(lines.clone().count(), 6, "{}", m.name);
        assert!(
            lines.all(|l| l.split(',').count() == header.len()),
            "{}",
            m.name
        );
    }
}

/// Time stamps of each series, in file order.
fn times_per_series(text: &str) -> HashMap<String, Vec<i64>> {
    let mut out: HashMap<String, Vec<i64>> = HashMap::new();
    for line in text.lines() {
        let series = line.split_once(' ').unwrap().0.to_string();
        let t = line.rsplit_once(' ').unwrap().1.parse().unwrap();
        out.entry(series).or_default().push(t);
    }
    out
}

#[test]
fn iot_has_missing_values_missing_points_and_late_points() {
    let (trucks, steps) = (50, 200);
    let (rows, text) = lp(Iot::new(scale(trucks, steps, 3)));
    let per = parse_all(&text);
    assert_eq!(per.values().sum::<usize>() as u64, rows);
    let full = (trucks as i64 * steps) as f64;
    for (m, n) in &per {
        // About P_OFFLINE of the points are lost (and a few rows with every value missing).
        let lost = 1.0 - *n as f64 / full;
        assert!((0.03..0.08).contains(&lost), "{m}: {lost}");
    }
    // Missing values: some readings lines lack some of the 7 fields.
    let short = text
        .lines()
        .filter(|l| l.starts_with("readings,"))
        .filter(|l| l.matches('=').count() < iot::TAG_KEYS.len() + 7)
        .count();
    let share = short as f64 / per["readings"] as f64;
    assert!((0.02..0.12).contains(&share), "{share}");
    // Late points: series whose times go backwards, and no time written twice.
    let series = times_per_series(&text);
    assert_eq!(series.len(), trucks * 2);
    let backwards = series
        .values()
        .filter(|t| t.windows(2).any(|w| w[1] < w[0]))
        .count();
    assert!(backwards > trucks / 2, "{backwards}");
    for t in series.values() {
        let mut s = t.clone();
        s.sort();
        s.dedup();
        assert_eq!(s.len(), t.len(), "a time written twice");
    }
}

#[test]
fn iot_csv_leaves_missing_values_empty() {
    let (rows, files) = run(Iot::new(scale(50, 100, 3)), Format::Csv);
    let (lp_rows, _) = lp(Iot::new(scale(50, 100, 3)));
    assert_eq!(rows, lp_rows, "both formats drop the same rows");
    let readings = &files[0];
    let header = readings.lines().next().unwrap();
    assert_eq!(header.split(',').count(), 1 + 8 + 7);
    assert!(readings.lines().skip(1).all(|l| l.split(',').count() == 16));
    assert!(
        readings
            .lines()
            .any(|l| l.contains(",,") || l.ends_with(','))
    );
}
