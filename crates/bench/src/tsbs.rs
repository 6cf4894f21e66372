//! TSBS `cpu-only` data: one `cpu` row per host and time step, 10 tags and 10 fields, as the
//! Time Series Benchmark Suite generates it. Values are integral percentages that walk by
//! -1, 0 or +1 per step within 0..=100 (TSBS writes them as integers, `58i`).

use std::io::Write;

pub const FIELDS: [&str; 10] = [
    "usage_user",
    "usage_system",
    "usage_idle",
    "usage_nice",
    "usage_iowait",
    "usage_irq",
    "usage_softirq",
    "usage_steal",
    "usage_guest",
    "usage_guest_nice",
];

pub const TAG_KEYS: [&str; 10] = [
    "hostname",
    "region",
    "datacenter",
    "rack",
    "os",
    "arch",
    "team",
    "service",
    "service_version",
    "service_environment",
];

/// The regions TSBS spreads hosts over.
pub const REGIONS: [&str; 9] = [
    "us-east-1",
    "us-west-1",
    "us-west-2",
    "eu-west-1",
    "eu-central-1",
    "ap-southeast-1",
    "ap-southeast-2",
    "ap-northeast-1",
    "sa-east-1",
];

/// 2016-01-01T00:00:00Z, TSBS's default start.
pub const TSBS_START_NS: i64 = 1_451_606_400_000_000_000;

/// The tag values of host `h`, in the order of [`TAG_KEYS`].
pub fn host_tags(h: usize) -> [String; 10] {
    let r = REGIONS[h % REGIONS.len()];
    [
        format!("host_{h}"),
        r.into(),
        format!("{r}{}", ["a", "b", "c"][h % 3]),
        format!("{}", h % 100),
        ["Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"][h % 3].into(),
        ["x86", "x64"][h % 2].into(),
        ["SF", "NYC", "LON", "CHI"][h % 4].into(),
        format!("{}", h % 20),
        format!("{}", h % 2),
        ["production", "staging", "test"][h % 3].into(),
    ]
}

/// What to generate.
#[derive(Debug, Clone)]
pub struct Scale {
    pub hosts: usize,
    pub start_ns: i64,
    pub interval_ns: i64,
    pub steps: i64,
    pub seed: u64,
}

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    LineProtocol,
    Csv,
}

/// Streams cpu-only rows, one time step (all hosts) at a time.
pub struct CpuOnly {
    scale: Scale,
    values: Vec<[u8; 10]>,
    state: u64,
    /// Each host's `cpu,tag=…` prefix, built once.
    prefixes: Vec<String>,
}

impl CpuOnly {
    pub fn new(scale: Scale) -> Self {
        assert!(
            scale.hosts > 0 && scale.interval_ns > 0,
            "scale must be positive"
        );
        let prefixes = (0..scale.hosts)
            .map(|h| {
                let mut p = String::from("cpu");
                for (k, v) in TAG_KEYS.iter().zip(host_tags(h)) {
                    p.push_str(&format!(",{k}={v}"));
                }
                p
            })
            .collect();
        Self {
            values: vec![[50; 10]; scale.hosts],
            state: scale.seed | 1,
            prefixes,
            scale,
        }
    }

    pub fn scale(&self) -> &Scale {
        &self.scale
    }

    fn next(&mut self) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state
    }

    /// Advances host `h` one step and returns its field values.
    fn step_host(&mut self, h: usize) -> [u8; 10] {
        for j in 0..10 {
            let d = (self.next() % 3) as i16 - 1;
            self.values[h][j] = (self.values[h][j] as i16 + d).clamp(0, 100) as u8;
        }
        self.values[h]
    }

    /// The CSV header (for [`Format::Csv`]).
    pub fn csv_header() -> String {
        format!("time,{},{}\n", TAG_KEYS.join(","), FIELDS.join(","))
    }

    /// Appends step `step` (every host) to `out`.
    pub fn write_step(&mut self, step: i64, format: Format, out: &mut Vec<u8>) {
        let t = self.scale.start_ns + step * self.scale.interval_ns;
        for h in 0..self.scale.hosts {
            let v = self.step_host(h);
            match format {
                Format::LineProtocol => {
                    out.extend_from_slice(self.prefixes[h].as_bytes());
                    for (j, name) in FIELDS.iter().enumerate() {
                        let sep = if j == 0 { ' ' } else { ',' };
                        let _ = write!(out, "{sep}{name}={}i", v[j]);
                    }
                    let _ = writeln!(out, " {t}");
                }
                Format::Csv => {
                    let _ = write!(out, "{t},{}", host_tags(h).join(","));
                    for x in v {
                        let _ = write!(out, ",{x}");
                    }
                    out.push(b'\n');
                }
            }
        }
    }

    /// Writes every step to `w`; returns the rows written.
    pub fn write_all(&mut self, format: Format, w: &mut impl Write) -> std::io::Result<u64> {
        if format == Format::Csv {
            w.write_all(Self::csv_header().as_bytes())?;
        }
        let mut buf = Vec::with_capacity(self.scale.hosts * 400);
        for step in 0..self.scale.steps {
            buf.clear();
            self.write_step(step, format, &mut buf);
            w.write_all(&buf)?;
        }
        Ok(self.scale.steps as u64 * self.scale.hosts as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn generate(seed: u64, format: Format) -> Vec<u8> {
        let mut out = Vec::new();
        CpuOnly::new(Scale {
            hosts: 3,
            start_ns: TSBS_START_NS,
            interval_ns: 10_000_000_000,
            steps: 4,
            seed,
        })
        .write_all(format, &mut out)
        .unwrap();
        out
    }

    #[test]
    fn the_same_seed_gives_the_same_bytes() {
        assert_eq!(
            generate(7, Format::LineProtocol),
            generate(7, Format::LineProtocol)
        );
        assert_ne!(
            generate(7, Format::LineProtocol),
            generate(8, Format::LineProtocol)
        );
    }

    #[test]
    fn lines_have_the_tsbs_shape() {
        let lp = String::from_utf8(generate(1, Format::LineProtocol)).unwrap();
        let lines: Vec<&str> = lp.lines().collect();
        assert_eq!(lines.len(), 12);
        assert!(lines[0].starts_with(
            "cpu,hostname=host_0,region=us-east-1,datacenter=us-east-1a,rack=0,os=Ubuntu16.10,\
             arch=x86,team=SF,service=0,service_version=0,service_environment=production usage_user="
        ));
        assert!(lines[0].ends_with(" 1451606400000000000"), "{}", lines[0]);
        assert!(lines[11].ends_with(" 1451606430000000000"), "{}", lines[11]);
        for l in &lines {
            assert_eq!(l.matches('=').count(), 20, "{l}");
            assert_eq!(l.matches("i,").count() + 1, 10, "{l}");
        }
        let csv = String::from_utf8(generate(1, Format::Csv)).unwrap();
        assert_eq!(csv.lines().count(), 13);
        assert_eq!(csv.lines().nth(1).unwrap().split(',').count(), 21);
    }
}
