//! Skewed sources across worker queue sets: TS-PMEM's frequency rule against hash placement.
//!
//! Sources write with intervals drawn from a heavy-tailed distribution (a few very chatty
//! sources, many quiet ones). Reported: max/mean load (writes/s) per set; 1.0 is perfect.
//! Run: `cargo bench -p tempora-storage --bench placement`.

use tempora_storage::write::placement::{FrequencyBalancer, Policy, imbalance};

fn main() {
    for (sets, sources) in [(2usize, 64usize), (2, 1024), (4, 1024), (8, 4096)] {
        let mut state = 0x9E3779B97F4A7C15u64;
        let mut rnd = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        // Pareto-like intervals: 10 ms .. ~100 s.
        let intervals: Vec<f64> = (0..sources).map(|_| 1e7 / rnd().max(1e-4)).collect();
        let mut freq = FrequencyBalancer::new(sets);
        let mut literal = FrequencyBalancer::with_policy(sets, Policy::PerSourceMean);
        let mut hash = vec![0.0f64; sets];
        for (i, &iv) in intervals.iter().enumerate() {
            freq.assign(iv);
            literal.assign(iv);
            let h = (i as u64).wrapping_mul(0x9E3779B97F4A7C15) >> 32;
            hash[(h % sets as u64) as usize] += 1e9 / iv;
        }
        // Greedy by measured rate (least-loaded set), for reference.
        let mut greedy = vec![0.0f64; sets];
        for &iv in &intervals {
            let i = (0..sets)
                .min_by(|&a, &b| greedy[a].total_cmp(&greedy[b]))
                .unwrap();
            greedy[i] += 1e9 / iv;
        }
        println!(
            "sets={sets} sources={sources}: max/mean load  K arrival-interval (default)={:.3}  K per-source-mean (literal)={:.3}  hash={:.3}  least-rate={:.3}",
            freq.imbalance(),
            literal.imbalance(),
            imbalance(hash.into_iter()),
            imbalance(greedy.into_iter())
        );
    }
}
