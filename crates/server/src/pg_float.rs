//! Floats as PostgreSQL writes them in text (`float8out`/`float4out` with
//! `extra_float_digits` ≥ 1, the default since PostgreSQL 12): the shortest digits that read
//! back to the same value, in fixed notation when the decimal exponent is in
//! [-4, 15) (float4: [-4, 6)) and as `d.ddde+XX` otherwise; `NaN`, `Infinity`, `-Infinity`,
//! and `-0` for negative zero. So `3` (not `3.0`), `1e+20`, `1e-05`, `0.1`.
//!
//! Pure; the shortest digits come from `ryu`, only the layout is PostgreSQL's.

/// A float type as PostgreSQL writes it.
pub trait PgFloat: Copy {
    /// The text PostgreSQL writes for the value.
    fn pg_text(self) -> String;
}

impl PgFloat for f64 {
    fn pg_text(self) -> String {
        special(self).unwrap_or_else(|| layout(ryu::Buffer::new().format_finite(self), 15))
    }
}

impl PgFloat for f32 {
    fn pg_text(self) -> String {
        special(f64::from(self))
            .unwrap_or_else(|| layout(ryu::Buffer::new().format_finite(self), 6))
    }
}

fn special(v: f64) -> Option<String> {
    Some(
        if v.is_nan() {
            "NaN"
        } else if v == f64::INFINITY {
            "Infinity"
        } else if v == f64::NEG_INFINITY {
            "-Infinity"
        } else if v == 0.0 {
            if v.is_sign_negative() { "-0" } else { "0" }
        } else {
            return None;
        }
        .to_string(),
    )
}

/// Re-lays ryu's shortest text (`123.45`, `1.5e-5`, `1e20`, `3.0`) as PostgreSQL does, with
/// fixed notation for decimal exponents in [-4, `max_fixed`).
fn layout(ryu: &str, max_fixed: i32) -> String {
    let (neg, body) = match ryu.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, ryu),
    };
    let (mantissa, exp_part) = match body.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().expect("ryu writes an integer exponent")),
        None => (body, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let all: String = format!("{int}{frac}");
    let lead = all.len() - all.trim_start_matches('0').len();
    let digits = all.trim_matches('0');
    // The decimal exponent of the first significant digit.
    let exp = exp_part + int.len() as i32 - 1 - lead as i32;
    let mut out = String::with_capacity(digits.len() + 8);
    if neg {
        out.push('-');
    }
    if (-4..max_fixed).contains(&exp) {
        if exp < 0 {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-exp - 1) as usize));
            out.push_str(digits);
        } else {
            let point = exp as usize + 1;
            if digits.len() <= point {
                out.push_str(digits);
                out.extend(std::iter::repeat_n('0', point - digits.len()));
            } else {
                out.push_str(&digits[..point]);
                out.push('.');
                out.push_str(&digits[point..]);
            }
        }
    } else {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push_str(&format!(
            "e{}{:02}",
            if exp < 0 { '-' } else { '+' },
            exp.abs()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expected texts are PostgreSQL 16's (`SELECT x::float8`).
    #[test]
    fn like_postgres() {
        let cases: &[(&str, f64, &str)] = &[
            ("whole", 3.0, "3"),
            ("fraction", 1.5, "1.5"),
            ("tenth", 0.1, "0.1"),
            ("negative", -2.25, "-2.25"),
            ("large whole", 123456789012345.0, "123456789012345"),
            ("at the limit", 1e15, "1e+15"),
            ("large", 1e20, "1e+20"),
            ("large with digits", 1.2345e20, "1.2345e+20"),
            ("small fixed", 0.0001, "0.0001"),
            ("small", 0.00001, "1e-05"),
            ("small with digits", 1.5e-7, "1.5e-07"),
            ("tiny", 5e-324, "5e-324"),
            ("max", f64::MAX, "1.7976931348623157e+308"),
            ("third", 1.0 / 3.0, "0.3333333333333333"),
            ("zero", 0.0, "0"),
            ("negative zero", -0.0, "-0"),
            ("nan", f64::NAN, "NaN"),
            ("infinity", f64::INFINITY, "Infinity"),
            ("minus infinity", f64::NEG_INFINITY, "-Infinity"),
            ("hundred", 100.0, "100"),
            ("twelve and a half thousand", 12500.0, "12500"),
        ];
        for (name, v, want) in cases {
            assert_eq!(v.pg_text(), *want, "{name}");
        }
        let f4: &[(&str, f32, &str)] = &[
            ("float4 whole", 3.0, "3"),
            ("float4 tenth", 0.1, "0.1"),
            ("float4 below the limit", 100000.0, "100000"),
            ("float4 at the limit", 1e6, "1e+06"),
        ];
        for (name, v, want) in f4 {
            assert_eq!(v.pg_text(), *want, "{name}");
        }
    }
}
