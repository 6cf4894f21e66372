//! The φ-quantile of values (`quantile`, `quantile_over_time`) and of a classic histogram's
//! cumulative buckets (`histogram_quantile`), as Prometheus 2.42 computes them.

/// The φ-quantile of `values` by linear interpolation between the closest ranks; NaN for no
/// values or a NaN φ, −Inf below 0, +Inf above 1. Sorts `values` (NaN first).
pub fn quantile(q: f64, values: &mut [f64]) -> f64 {
    if values.is_empty() || q.is_nan() {
        return f64::NAN;
    }
    if q < 0.0 {
        return f64::NEG_INFINITY;
    }
    if q > 1.0 {
        return f64::INFINITY;
    }
    values.sort_by(|a, b| match (a.is_nan(), b.is_nan()) {
        (true, true) => std::cmp::Ordering::Equal,
        (true, false) => std::cmp::Ordering::Less,
        (false, true) => std::cmp::Ordering::Greater,
        _ => a.partial_cmp(b).expect("neither is NaN"),
    });
    let n = values.len() as f64;
    let rank = q * (n - 1.0);
    let lower = rank.floor().max(0.0);
    let upper = (lower + 1.0).min(n - 1.0);
    let weight = rank - rank.floor();
    values[lower as usize] * (1.0 - weight) + values[upper as usize] * weight
}

/// The φ-quantile of a histogram given as `(upper bound, cumulative count)` buckets in any
/// order. Needs a `+Inf` bucket (else NaN); buckets with the same bound are merged and counts
/// made monotonic first; a rank in the `+Inf` bucket gives the largest finite bound.
pub fn bucket_quantile(q: f64, buckets: &mut Vec<(f64, f64)>) -> f64 {
    if q.is_nan() {
        return f64::NAN;
    }
    if q < 0.0 {
        return f64::NEG_INFINITY;
    }
    if q > 1.0 {
        return f64::INFINITY;
    }
    if buckets.is_empty() {
        return f64::NAN;
    }
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    if buckets.last().expect("not empty").0 != f64::INFINITY {
        return f64::NAN;
    }
    // Merge equal bounds, then take the running maximum of the counts.
    buckets.dedup_by(|later, kept| {
        if later.0 == kept.0 {
            kept.1 += later.1;
            true
        } else {
            false
        }
    });
    let mut max = buckets[0].1;
    for b in buckets.iter_mut().skip(1) {
        if b.1 > max {
            max = b.1;
        } else if b.1 < max {
            b.1 = max;
        }
    }
    if buckets.len() < 2 {
        return f64::NAN;
    }
    let observations = buckets.last().expect("not empty").1;
    if observations == 0.0 {
        return f64::NAN;
    }
    let mut rank = q * observations;
    let last = buckets.len() - 1;
    let b = buckets[..last]
        .iter()
        .position(|x| x.1 >= rank)
        .unwrap_or(last);
    if b == last {
        return buckets[last - 1].0;
    }
    if b == 0 && buckets[0].0 <= 0.0 {
        return buckets[0].0;
    }
    let (mut start, end, mut count) = (0.0, buckets[b].0, buckets[b].1);
    if b > 0 {
        start = buckets[b - 1].0;
        count -= buckets[b - 1].1;
        rank -= buckets[b - 1].1;
    }
    start + (end - start) * (rank / count)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same(a: f64, b: f64) -> bool {
        (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-12 * b.abs().max(1.0) || a == b
    }

    #[test]
    fn quantiles_of_values() {
        let cases: [(f64, &[f64], f64); 8] = [
            (0.5, &[1.0, 2.0, 3.0, 4.0], 2.5),
            (0.0, &[3.0, 1.0, 2.0], 1.0),
            (1.0, &[3.0, 1.0, 2.0], 3.0),
            (0.9, &[10.0], 10.0),
            (0.5, &[], f64::NAN),
            (f64::NAN, &[1.0], f64::NAN),
            (-0.1, &[1.0], f64::NEG_INFINITY),
            (1.1, &[1.0], f64::INFINITY),
        ];
        for (q, values, want) in cases {
            let got = quantile(q, &mut values.to_vec());
            assert!(
                same(got, want),
                "quantile({q}, {values:?}) = {got}, want {want}"
            );
        }
    }

    #[test]
    fn bucket_quantiles() {
        let inf = f64::INFINITY;
        type Case<'a> = (&'a str, f64, &'a [(f64, f64)], f64);
        let cases: [Case; 10] = [
            // 100 observations: 50 ≤ 0.1, 90 ≤ 0.5, 100 ≤ 1.
            (
                "median in the first bucket",
                0.5,
                &[(0.1, 50.0), (0.5, 90.0), (1.0, 100.0), (inf, 100.0)],
                0.1,
            ),
            (
                "interpolated in the second bucket",
                0.7,
                &[(0.1, 50.0), (0.5, 90.0), (1.0, 100.0), (inf, 100.0)],
                0.1 + 0.4 * (20.0 / 40.0),
            ),
            (
                "any order",
                0.7,
                &[(inf, 100.0), (1.0, 100.0), (0.1, 50.0), (0.5, 90.0)],
                0.3,
            ),
            (
                "a rank in +Inf gives the largest finite bound",
                0.99,
                &[(0.1, 50.0), (0.5, 90.0), (inf, 100.0)],
                0.5,
            ),
            ("no +Inf bucket", 0.5, &[(0.1, 1.0), (0.5, 2.0)], f64::NAN),
            ("no observations", 0.5, &[(0.1, 0.0), (inf, 0.0)], f64::NAN),
            ("one bucket", 0.5, &[(inf, 10.0)], f64::NAN),
            (
                "non-monotonic counts are evened out",
                0.5,
                &[(1.0, 10.0), (2.0, 8.0), (3.0, 20.0), (inf, 20.0)],
                1.0,
            ),
            (
                "duplicate bounds merge",
                0.5,
                &[(1.0, 5.0), (1.0, 5.0), (2.0, 20.0), (inf, 20.0)],
                1.0,
            ),
            (
                "a first bound at or below zero",
                0.1,
                &[(-1.0, 5.0), (1.0, 10.0), (inf, 10.0)],
                -1.0,
            ),
        ];
        for (name, q, buckets, want) in cases {
            let got = bucket_quantile(q, &mut buckets.to_vec());
            assert!(same(got, want), "{name}: {got}, want {want}");
        }
        assert_eq!(bucket_quantile(-1.0, &mut vec![]), f64::NEG_INFINITY);
        assert_eq!(bucket_quantile(2.0, &mut vec![]), f64::INFINITY);
    }
}
