//! The table-driven engine behind the multi-measurement TSBS use cases (`devops`, `iot`).
//!
//! A use case is a list of [`Measurement`]s, each a list of [`Field`]s whose values follow a
//! [`Walk`]: a gauge wanders inside a range, a counter only grows. [`Rows`] turns one row's
//! values into line protocol or CSV bytes in memory; the caller owns every file and socket.
//!
//! Invariants:
//! - Everything is a pure function of the seed: [`Rng`] is a xorshift generator, floats are
//!   written with a fixed number of decimals, so the same settings give the same bytes.
//! - A missing value (`None`) is left out of a line-protocol line and written as an empty CSV
//!   cell. A row whose every value is missing is not written at all (line protocol has no
//!   line without fields).
//! - Line protocol goes to buffer 0; CSV goes to one buffer per measurement, since the
//!   measurements have different columns.

use std::io::Write;

use crate::tsbs::Format;

/// Deterministic xorshift64 generator (the one `cpu-only` uses).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A float in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// An integer in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "below(0)");
        self.next_u64() % n
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.unit() < p
    }

    /// One of `items`.
    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

/// How a field's value moves from one point to the next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Walk {
    /// Wanders inside `[lo, hi]` by at most `step` per point.
    Gauge { lo: f64, hi: f64, step: f64 },
    /// Grows by `0..max_inc` per point, from a random start below `1000 * max_inc`.
    Counter { max_inc: f64 },
}

/// One field of a measurement.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub name: &'static str,
    pub walk: Walk,
    /// Written as an integer (`12i` in line protocol), else as a float with two decimals.
    pub int: bool,
}

/// An integer gauge.
pub const fn gauge(name: &'static str, lo: f64, hi: f64, step: f64) -> Field {
    let walk = Walk::Gauge { lo, hi, step };
    Field {
        name,
        walk,
        int: true,
    }
}

/// A float gauge.
pub const fn fgauge(name: &'static str, lo: f64, hi: f64, step: f64) -> Field {
    let walk = Walk::Gauge { lo, hi, step };
    Field {
        name,
        walk,
        int: false,
    }
}

/// An integer counter.
pub const fn counter(name: &'static str, max_inc: f64) -> Field {
    Field {
        name,
        walk: Walk::Counter { max_inc },
        int: true,
    }
}

/// One measurement: its name, the tag keys it adds to the host's (or truck's), its fields.
#[derive(Debug, Clone, Copy)]
pub struct Measurement {
    pub name: &'static str,
    pub extra_tags: &'static [&'static str],
    pub fields: &'static [Field],
}

impl Measurement {
    /// First values of a series.
    pub fn start(&self, rng: &mut Rng) -> Vec<f64> {
        self.fields
            .iter()
            .map(|f| match f.walk {
                Walk::Gauge { lo, hi, .. } => lo + (hi - lo) * rng.unit(),
                Walk::Counter { max_inc } => (1000.0 * max_inc * rng.unit()).floor(),
            })
            .collect()
    }

    /// Moves every value of a series one point on.
    pub fn advance(&self, values: &mut [f64], rng: &mut Rng) {
        debug_assert_eq!(values.len(), self.fields.len());
        for (v, f) in values.iter_mut().zip(self.fields) {
            *v = match f.walk {
                Walk::Gauge { lo, hi, step } => {
                    (*v + (rng.unit() * 2.0 - 1.0) * step).clamp(lo, hi)
                }
                Walk::Counter { max_inc } => *v + (rng.unit() * max_inc).floor(),
            };
        }
    }

    /// The CSV header: `time`, the tag keys given, the fields.
    pub fn csv_header(&self, tag_keys: &[&str]) -> String {
        let fields: Vec<&str> = self.fields.iter().map(|f| f.name).collect();
        format!("time,{},{}\n", tag_keys.join(","), fields.join(","))
    }
}

/// One series: the measurement's index, its line-protocol prefix and CSV tag cells.
#[derive(Debug, Clone)]
pub struct Series {
    pub measurement: usize,
    /// `name,tag=value,...`
    pub prefix: String,
    /// `value,value,...` in the order of the CSV header.
    pub csv_tags: String,
}

impl Series {
    pub fn new(measurement: usize, name: &str, tags: &[(&str, String)]) -> Self {
        let mut prefix = String::from(name);
        for (k, v) in tags {
            prefix.push_str(&format!(",{k}={v}"));
        }
        let cells: Vec<&str> = tags.iter().map(|(_, v)| v.as_str()).collect();
        Self {
            measurement,
            prefix,
            csv_tags: cells.join(","),
        }
    }
}

/// A series and its current values.
pub type SeriesState = (Series, Vec<f64>);

/// One source's (host's, truck's) series, one per measurement, with their first values;
/// `tags` gives the tags of each measurement of this source.
pub fn source_series<'a>(
    measurements: &[Measurement],
    rng: &mut Rng,
    mut tags: impl FnMut(&Measurement) -> Vec<(&'a str, String)>,
) -> Vec<SeriesState> {
    measurements
        .iter()
        .enumerate()
        .map(|(m, ms)| (Series::new(m, ms.name, &tags(ms)), ms.start(rng)))
        .collect()
}

/// Rows in memory, in one format: buffer 0 for line protocol, one buffer per measurement
/// for CSV.
#[derive(Debug)]
pub struct Rows {
    pub format: Format,
    pub bufs: Vec<Vec<u8>>,
    /// Rows written so far.
    pub rows: u64,
}

impl Rows {
    pub fn new(format: Format, measurements: usize) -> Self {
        let n = if format == Format::Csv {
            measurements
        } else {
            1
        };
        Self {
            format,
            bufs: vec![Vec::new(); n],
            rows: 0,
        }
    }

    /// Appends one row; returns false (and writes nothing) when every value is missing.
    pub fn push(&mut self, s: &Series, fields: &[Field], values: &[Option<f64>], t: i64) -> bool {
        debug_assert_eq!(fields.len(), values.len());
        if values.iter().all(Option::is_none) {
            return false;
        }
        match self.format {
            Format::LineProtocol => {
                let out = &mut self.bufs[0];
                out.extend_from_slice(s.prefix.as_bytes());
                let mut sep = b' ';
                for (f, v) in fields.iter().zip(values) {
                    if let Some(v) = v {
                        out.push(sep);
                        out.extend_from_slice(f.name.as_bytes());
                        out.push(b'=');
                        write_value(out, f, *v, true);
                        sep = b',';
                    }
                }
                let _ = writeln!(out, " {t}");
            }
            Format::Csv => {
                let out = &mut self.bufs[s.measurement];
                let _ = write!(out, "{t},{}", s.csv_tags);
                for (f, v) in fields.iter().zip(values) {
                    out.push(b',');
                    if let Some(v) = v {
                        write_value(out, f, *v, false);
                    }
                }
                out.push(b'\n');
            }
        }
        self.rows += 1;
        true
    }
}

fn write_value(out: &mut Vec<u8>, f: &Field, v: f64, lp: bool) {
    if f.int {
        let _ = write!(out, "{}", v.round() as i64);
        if lp {
            out.push(b'i');
        }
    } else {
        let _ = write!(out, "{v:.2}");
    }
}

/// A use case the generic writer can stream.
pub trait UseCase {
    fn measurements(&self) -> &'static [Measurement];
    /// The CSV tag columns of measurement `m`, in the order of [`Series::csv_tags`].
    fn tag_keys(&self, m: usize) -> Vec<&'static str>;
    /// Number of time steps.
    fn steps(&self) -> i64;
    /// Appends time step `step` (every host or truck) to `out`.
    fn write_step(&mut self, step: i64, out: &mut Rows);
    /// Appends rows still held back after the last step (late points).
    fn finish(&mut self, _out: &mut Rows) {}
}

/// Streams a whole use case: each step is written to `outs` (one writer for line protocol,
/// one per measurement for CSV) before the next is made. Returns the rows written.
pub fn write_all(
    uc: &mut impl UseCase,
    format: Format,
    outs: &mut [Box<dyn Write>],
) -> std::io::Result<u64> {
    let ms = uc.measurements();
    let mut rows = Rows::new(format, ms.len());
    assert_eq!(outs.len(), rows.bufs.len(), "one writer per output buffer");
    if format == Format::Csv {
        for (m, out) in ms.iter().enumerate() {
            outs[m].write_all(out.csv_header(&uc.tag_keys(m)).as_bytes())?;
        }
    }
    for step in 0..=uc.steps() {
        if step < uc.steps() {
            uc.write_step(step, &mut rows);
        } else {
            uc.finish(&mut rows);
        }
        for (buf, out) in rows.bufs.iter_mut().zip(outs.iter_mut()) {
            out.write_all(buf)?;
            buf.clear();
        }
    }
    Ok(rows.rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    const M: Measurement = Measurement {
        name: "m",
        extra_tags: &[],
        fields: &[gauge("g", 0.0, 10.0, 1.0), fgauge("f", -1.0, 1.0, 0.5)],
    };

    #[test]
    fn rows_are_written_per_format_and_empty_rows_dropped() {
        let s = Series::new(0, "m", &[("host", "a".into())]);
        for (name, format, values, want) in [
            (
                "line protocol, both values",
                Format::LineProtocol,
                [Some(3.4), Some(-0.25)],
                "m,host=a g=3i,f=-0.25 7\n",
            ),
            (
                "line protocol, the first value missing",
                Format::LineProtocol,
                [None, Some(0.5)],
                "m,host=a f=0.50 7\n",
            ),
            (
                "line protocol, nothing",
                Format::LineProtocol,
                [None, None],
                "",
            ),
            ("csv", Format::Csv, [Some(9.6), None], "7,a,10,\n"),
            ("csv, nothing", Format::Csv, [None, None], ""),
        ] {
            let mut rows = Rows::new(format, 1);
            let written = rows.push(&s, M.fields, &values, 7);
            assert_eq!(String::from_utf8_lossy(&rows.bufs[0]), want, "{name}");
            assert_eq!(written, !want.is_empty(), "{name}");
        }
    }

    #[test]
    fn walks_stay_in_range_and_counters_never_fall() {
        const MS: Measurement = Measurement {
            name: "x",
            extra_tags: &[],
            fields: &[gauge("g", 5.0, 6.0, 3.0), counter("c", 10.0)],
        };
        let ms = MS;
        let mut rng = Rng::new(9);
        let mut v = ms.start(&mut rng);
        for _ in 0..1000 {
            let before = v[1];
            ms.advance(&mut v, &mut rng);
            assert!((5.0..=6.0).contains(&v[0]), "{}", v[0]);
            assert!(v[1] >= before && v[1] - before < 10.0);
        }
    }
}
