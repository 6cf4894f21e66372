//! TSBS `iot` data: a fleet of trucks, each writing a `readings` row (position, speed, fuel)
//! and a `diagnostics` row (load, fuel state, status) per time step, with the imperfections
//! real fleets have.
//!
//! Invariants (the rates are the constants below; all draws come from the seed):
//! - **Missing points.** A truck is offline for a whole step with probability
//!   [`P_OFFLINE`]: neither of its rows is written for that time.
//! - **Missing values.** Each value is left out with probability [`P_NULL`]; a row that loses
//!   every value is not written.
//! - **Out-of-order points.** A row is held back with probability [`P_LATE`] and written at
//!   the start of a step 1 to [`MAX_DELAY_STEPS`] steps later (rows still held after the last
//!   step are written at the end), so it follows newer rows of its own series. At most
//!   `trucks * 2 * MAX_DELAY_STEPS` rows are held (in expectation far fewer), whatever the
//!   time range.
//! - Tags are TSBS's: name, fleet, driver, model, device_version and the truck's load and fuel
//!   capacity and nominal fuel consumption, drawn once per truck.

use crate::tsbs::Scale;
use crate::walk::{Measurement, Rng, Rows, SeriesState, UseCase, fgauge, gauge, source_series};

pub const P_OFFLINE: f64 = 0.05;
pub const P_NULL: f64 = 0.01;
pub const P_LATE: f64 = 0.02;
pub const MAX_DELAY_STEPS: u64 = 5;

pub const TAG_KEYS: [&str; 8] = [
    "name",
    "fleet",
    "driver",
    "model",
    "device_version",
    "load_capacity",
    "fuel_capacity",
    "nominal_fuel_consumption",
];

pub const MEASUREMENTS: [Measurement; 2] = [
    Measurement {
        name: "readings",
        extra_tags: &[],
        fields: &[
            fgauge("latitude", -90.0, 90.0, 0.01),
            fgauge("longitude", -180.0, 180.0, 0.01),
            fgauge("elevation", 0.0, 5000.0, 10.0),
            fgauge("velocity", 0.0, 100.0, 2.0),
            fgauge("heading", 0.0, 360.0, 5.0),
            fgauge("grade", 0.0, 100.0, 1.0),
            fgauge("fuel_consumption", 0.0, 50.0, 0.5),
        ],
    },
    Measurement {
        name: "diagnostics",
        extra_tags: &[],
        fields: &[
            fgauge("load", 0.0, 5000.0, 50.0),
            fgauge("fuel_state", 0.0, 1.0, 0.01),
            gauge("status", 0.0, 5.0, 1.0),
        ],
    },
];

/// A row held back to be written late.
struct Late {
    due_step: i64,
    truck: usize,
    measurement: usize,
    time_ns: i64,
    values: Vec<Option<f64>>,
}

/// Streams iot rows, one time step (every truck) at a time.
pub struct Iot {
    scale: Scale,
    rng: Rng,
    /// Per truck, per measurement: the series and its current values.
    trucks: Vec<Vec<SeriesState>>,
    late: Vec<Late>,
}

impl Iot {
    pub fn new(scale: Scale) -> Self {
        assert!(
            scale.hosts > 0 && scale.interval_ns > 0,
            "scale must be positive"
        );
        let mut rng = Rng::new(scale.seed);
        let trucks = (0..scale.hosts)
            .map(|i| {
                let tags = truck_tags(i, &mut rng);
                source_series(&MEASUREMENTS, &mut rng, |_| tags.clone())
            })
            .collect();
        Self {
            scale,
            rng,
            trucks,
            late: Vec::new(),
        }
    }

    fn write_late(&mut self, out: &mut Rows, up_to_step: i64) {
        let (due, keep): (Vec<Late>, Vec<Late>) = std::mem::take(&mut self.late)
            .into_iter()
            .partition(|l| l.due_step <= up_to_step);
        self.late = keep;
        for l in due {
            let (series, _) = &self.trucks[l.truck][l.measurement];
            let fields = MEASUREMENTS[l.measurement].fields;
            out.push(series, fields, &l.values, l.time_ns);
        }
    }
}

fn truck_tags(i: usize, rng: &mut Rng) -> Vec<(&'static str, String)> {
    let pick = |rng: &mut Rng, items: &[&str]| rng.pick(items).to_string();
    let values = [
        format!("truck_{i}"),
        pick(rng, &["South", "North", "East", "West", "Midwest"]),
        pick(
            rng,
            &[
                "Albert", "Derek", "Rodney", "Seth", "Trish", "Andy", "Annie",
            ],
        ),
        pick(rng, &["F-150", "G-2000", "H-2"]),
        pick(rng, &["v1.0", "v1.5", "v2.0", "v2.3"]),
        pick(rng, &["1500", "2000", "5000"]),
        pick(rng, &["150", "200", "300"]),
        pick(rng, &["5", "15", "20"]),
    ];
    TAG_KEYS.iter().copied().zip(values).collect()
}

impl UseCase for Iot {
    fn measurements(&self) -> &'static [Measurement] {
        &MEASUREMENTS
    }

    fn tag_keys(&self, _m: usize) -> Vec<&'static str> {
        TAG_KEYS.to_vec()
    }

    fn steps(&self) -> i64 {
        self.scale.steps
    }

    fn write_step(&mut self, step: i64, out: &mut Rows) {
        self.write_late(out, step);
        let t = self.scale.start_ns + step * self.scale.interval_ns;
        for truck in 0..self.trucks.len() {
            // Values move on while a truck is offline; only the points are lost.
            let offline = self.rng.chance(P_OFFLINE);
            for (m, ms) in MEASUREMENTS.iter().enumerate() {
                let (series, v) = &mut self.trucks[truck][m];
                ms.advance(v, &mut self.rng);
                if offline {
                    continue;
                }
                let values: Vec<Option<f64>> = v
                    .iter()
                    .map(|x| (!self.rng.chance(P_NULL)).then_some(*x))
                    .collect();
                if self.rng.chance(P_LATE) {
                    let delay = 1 + self.rng.below(MAX_DELAY_STEPS) as i64;
                    self.late.push(Late {
                        due_step: step + delay,
                        truck,
                        measurement: m,
                        time_ns: t,
                        values,
                    });
                } else {
                    out.push(series, ms.fields, &values, t);
                }
            }
        }
    }

    fn finish(&mut self, out: &mut Rows) {
        self.write_late(out, i64::MAX);
    }
}
