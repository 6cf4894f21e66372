//! Distribution functions the detectors need: the standard normal quantile (Acklam's
//! rational approximation, relative error below 1.2e-9) and Student's t quantile from it
//! (Cornish–Fisher expansion in 1/ν, within 1e-3 of the exact value for ν ≥ 8).

/// The standard normal quantile of `p` (0 < p < 1).
pub(crate) fn normal_quantile(p: f64) -> f64 {
    assert!(p > 0.0 && p < 1.0, "a probability strictly between 0 and 1");
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.38357751867269e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] = [
        -5.447609879822406e1,
        1.615858368580409e2,
        -1.556989798598866e2,
        6.680131188771972e1,
        -1.328068155288572e1,
    ];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [
        7.784695709041462e-3,
        3.224671290700398e-1,
        2.445134137142996,
        3.754408661907416,
    ];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// Student's t quantile of `p` with `nu` degrees of freedom.
pub(crate) fn t_quantile(p: f64, nu: f64) -> f64 {
    let z = normal_quantile(p);
    let (z2, z3) = (z * z, z * z * z);
    let (z5, z7) = (z3 * z2, z3 * z2 * z2);
    z + (z3 + z) / (4.0 * nu)
        + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * nu * nu)
        + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * nu * nu * nu)
}

/// The generalized ESD test's critical value for the most extreme of `n` points at
/// significance `alpha` (Rosner 1983, i = 1).
pub(crate) fn esd_critical(n: usize, alpha: f64) -> f64 {
    assert!(n >= 3, "the test needs at least three points");
    let n = n as f64;
    let p = 1.0 - alpha / (2.0 * n);
    let t = t_quantile(p, n - 2.0);
    (n - 1.0) * t / ((n - 2.0 + t * t) * n).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_match_tables() {
        // (name, value, reference from R's qnorm / qt)
        for (name, got, want, tol) in [
            ("qnorm(0.5)", normal_quantile(0.5), 0.0, 1e-9),
            (
                "qnorm(0.975)",
                normal_quantile(0.975),
                1.959963984540054,
                1e-8,
            ),
            (
                "qnorm(0.001)",
                normal_quantile(0.001),
                -3.090232306167813,
                1e-8,
            ),
            (
                "qnorm(1e-9)",
                normal_quantile(1e-9),
                -5.997807015007686,
                1e-7,
            ),
            (
                "qt(0.975, 10)",
                t_quantile(0.975, 10.0),
                2.228138851986274,
                2e-3,
            ),
            (
                "qt(0.999, 30)",
                t_quantile(0.999, 30.0),
                3.385184866867583,
                2e-3,
            ),
            (
                "qt(0.9995, 100)",
                t_quantile(0.9995, 100.0),
                3.390491311768506,
                1e-3,
            ),
        ] {
            assert!((got - want).abs() < tol, "{name}: {got} vs {want}");
        }
    }

    #[test]
    fn esd_critical_values_match_rosner() {
        // Rosner's table (alpha 0.05): n = 20 → 2.709, n = 100 → 3.384.
        assert!(
            (esd_critical(20, 0.05) - 2.709).abs() < 0.01,
            "{}",
            esd_critical(20, 0.05)
        );
        assert!(
            (esd_critical(100, 0.05) - 3.384).abs() < 0.01,
            "{}",
            esd_critical(100, 0.05)
        );
    }
}
