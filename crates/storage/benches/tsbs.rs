//! TSBS cpu-only-shaped rows as engine batches: 10 tags and 10 fields per host, random-walk
//! values. Names and tags come from the suite's generator (`tempora-bench`); this file adds
//! the `RowBatch` form the in-process benches write.

use tempora_model::{FieldValue, RowBatch, RowBatchBuilder, Timestamp};

pub use tempora_bench::tsbs::FIELDS;

/// The tags of host `h`, as TSBS derives them (the suite's generator, `tempora-bench`).
pub fn host_tags(h: usize) -> Vec<(String, String)> {
    tempora_bench::tsbs::TAG_KEYS
        .iter()
        .zip(tempora_bench::tsbs::host_tags(h))
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

/// Deterministic generator of cpu rows.
pub struct Gen {
    values: Vec<[f64; 10]>,
    state: u64,
    pub interval_ns: i64,
    pub start_ns: i64,
}

impl Gen {
    pub fn new(hosts: usize, seed: u64) -> Self {
        Self {
            values: vec![[50.0; 10]; hosts],
            state: seed | 1,
            interval_ns: 10_000_000_000,
            start_ns: 1_451_606_400_000_000_000, // 2016-01-01, as TSBS
        }
    }

    fn next(&mut self) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state
    }

    /// Rows for hosts `hosts` at step `step`: each field walks by -1, 0 or +1 within 0..=100
    /// (TSBS cpu values are integral percentages).
    pub fn batch(&mut self, step: i64, hosts: std::ops::Range<usize>) -> RowBatch {
        let mut b = RowBatchBuilder::new("cpu").unwrap();
        let t = Timestamp(self.start_ns + step * self.interval_ns);
        for h in hosts {
            let mut fields = Vec::with_capacity(10);
            for (j, name) in FIELDS.iter().enumerate() {
                let d = (self.next() % 3) as f64 - 1.0;
                let v = (self.values[h][j] + d).clamp(0.0, 100.0);
                self.values[h][j] = v;
                fields.push((*name, FieldValue::F64(v)));
            }
            let owned = host_tags(h);
            let tags: Vec<(&str, &str)> = owned
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            b.push(&tags, &fields, t).unwrap();
        }
        b.finish()
    }
}
