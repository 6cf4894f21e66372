//! Number and boolean parsing with hand-written fast paths.
//!
//! Grammar (InfluxDB's): integers `-?[0-9]+i`, unsigned `[0-9]+u`, floats
//! `-?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?` (no `+` sign, no NaN or infinity, and a
//! value that overflows `f64` is out of range), timestamps `-?[0-9]+`. Floats with few digits
//! are computed exactly as `mantissa / 10^k` (one correctly rounded division); everything else
//! falls back to `str::parse::<f64>`, which is correctly rounded too.

use tempora_model::FieldValue;

/// Why a scalar token was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScalarError {
    /// Not valid syntax for any field type.
    Invalid,
    /// Valid syntax, but the value does not fit the type named.
    OutOfRange(&'static str),
}

/// Parses an unquoted field value: integer, unsigned, boolean or float.
#[inline]
pub(crate) fn parse_scalar(tok: &[u8]) -> Result<FieldValue, ScalarError> {
    let Some((&last, body)) = tok.split_last() else {
        return Err(ScalarError::Invalid);
    };
    match last {
        b'i' => parse_i64(body)
            .map(FieldValue::I64)
            .map_err(|e| e.of("integer")),
        b'u' => parse_u64(body)
            .map(FieldValue::U64)
            .map_err(|e| e.of("unsigned")),
        _ => match tok[0] {
            b't' | b'T' | b'f' | b'F' => parse_bool(tok)
                .map(FieldValue::Bool)
                .ok_or(ScalarError::Invalid),
            _ => parse_f64(tok).map(FieldValue::F64),
        },
    }
}

/// Integer parse failure, before the type is known.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IntError {
    Invalid,
    Overflow,
}

impl IntError {
    fn of(self, kind: &'static str) -> ScalarError {
        match self {
            IntError::Invalid => ScalarError::Invalid,
            IntError::Overflow => ScalarError::OutOfRange(kind),
        }
    }
}

/// Parses `[0-9]+` into a `u64`.
#[inline]
fn parse_digits(digits: &[u8]) -> Result<u64, IntError> {
    if digits.is_empty() {
        return Err(IntError::Invalid);
    }
    let mut v: u64 = 0;
    if digits.len() <= 19 {
        // 19 digits always fit in a u64: no overflow checks needed.
        for &d in digits {
            let x = d.wrapping_sub(b'0');
            if x > 9 {
                return Err(IntError::Invalid);
            }
            v = v * 10 + x as u64;
        }
        return Ok(v);
    }
    let mut overflow = false;
    for &d in digits {
        let x = d.wrapping_sub(b'0');
        if x > 9 {
            return Err(IntError::Invalid);
        }
        match v.checked_mul(10).and_then(|v| v.checked_add(x as u64)) {
            Some(n) => v = n,
            None => overflow = true,
        }
    }
    if overflow {
        Err(IntError::Overflow)
    } else {
        Ok(v)
    }
}

/// Parses `-?[0-9]+` into an `i64`.
#[inline]
pub(crate) fn parse_i64(tok: &[u8]) -> Result<i64, IntError> {
    let (neg, digits) = match tok.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, tok),
    };
    let v = parse_digits(digits)?;
    if neg {
        if v > i64::MAX as u64 + 1 {
            return Err(IntError::Overflow);
        }
        Ok((v as i64).wrapping_neg())
    } else {
        i64::try_from(v).map_err(|_| IntError::Overflow)
    }
}

/// Parses `[0-9]+` into a `u64` (a leading `-` is invalid).
#[inline]
pub(crate) fn parse_u64(tok: &[u8]) -> Result<u64, IntError> {
    parse_digits(tok)
}

/// The booleans InfluxDB accepts.
pub(crate) fn parse_bool(tok: &[u8]) -> Option<bool> {
    match tok {
        b"t" | b"T" | b"true" | b"True" | b"TRUE" => Some(true),
        b"f" | b"F" | b"false" | b"False" | b"FALSE" => Some(false),
        _ => None,
    }
}

/// Powers of ten that are exact in an `f64`.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// Largest mantissa that is exact in an `f64`.
const MAX_EXACT: u64 = 1 << 53;

/// Parses a float (see the module docs for the grammar).
#[inline]
pub(crate) fn parse_f64(tok: &[u8]) -> Result<f64, ScalarError> {
    let (neg, rest) = match tok.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, tok),
    };
    // Fast path: up to 19 digits with an optional '.', no exponent.
    let mut m: u64 = 0;
    let mut i = 0;
    while i < rest.len() && rest[i].is_ascii_digit() {
        m = m.wrapping_mul(10).wrapping_add((rest[i] - b'0') as u64);
        i += 1;
    }
    let int_digits = i;
    let mut frac_digits = 0;
    if i < rest.len() && rest[i] == b'.' {
        i += 1;
        while i < rest.len() && rest[i].is_ascii_digit() {
            m = m.wrapping_mul(10).wrapping_add((rest[i] - b'0') as u64);
            i += 1;
        }
        frac_digits = i - int_digits - 1;
    }
    let digits = int_digits + frac_digits;
    // `i == rest.len() && digits > 0` means the token is `-?[0-9]*\.?[0-9]*`: valid syntax.
    let plain = i == rest.len() && digits > 0;
    if plain && digits <= 19 && m <= MAX_EXACT && frac_digits < POW10.len() {
        let v = m as f64 / POW10[frac_digits];
        return Ok(if neg { -v } else { v });
    }
    slow_f64(tok, rest, plain)
}

/// Checks the full grammar (unless `plain` says it holds), then lets the standard library
/// round.
#[cold]
fn slow_f64(tok: &[u8], rest: &[u8], plain: bool) -> Result<f64, ScalarError> {
    if !plain && !valid_float_syntax(rest) {
        return Err(ScalarError::Invalid);
    }
    // The syntax check admits only ASCII digits, '.', 'e', 'E', '+' and '-'.
    let s = std::str::from_utf8(tok).map_err(|_| ScalarError::Invalid)?;
    let v: f64 = s.parse().map_err(|_| ScalarError::Invalid)?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(ScalarError::OutOfRange("float"))
    }
}

/// `([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?`
fn valid_float_syntax(b: &[u8]) -> bool {
    let digits = |mut i: usize| {
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        (i, i - start)
    };
    let (mut i, int_digits) = digits(0);
    let mut frac_digits = 0;
    if i < b.len() && b[i] == b'.' {
        (i, frac_digits) = digits(i + 1);
    }
    if int_digits + frac_digits == 0 {
        return false;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let (end, exp_digits) = digits(i);
        if exp_digits == 0 {
            return false;
        }
        i = end;
    }
    i == b.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_match_std() {
        let cases = [
            "0",
            "1",
            "-1",
            "1.5",
            "1.",
            ".5",
            "-.5",
            "-0",
            "0.1",
            "3.14159",
            "123456789012345678",
            "9007199254740993",
            "1234567890.0987654321",
            "1e10",
            "-1E-10",
            "1.5e+3",
            "0.000000000000000000000001",
            "1.7976931348623157e308",
            "4.9e-324",
            "58.5",
        ];
        for c in cases {
            let want: f64 = c.parse().unwrap();
            let got = parse_f64(c.as_bytes()).unwrap();
            assert_eq!(got.to_bits(), want.to_bits(), "{c}");
        }
    }

    #[test]
    fn floats_rejected() {
        let cases = [
            ("double dot", "1.2.3", ScalarError::Invalid),
            ("empty", "", ScalarError::Invalid),
            ("minus only", "-", ScalarError::Invalid),
            ("dot only", ".", ScalarError::Invalid),
            ("plus", "+1", ScalarError::Invalid),
            ("nan", "NaN", ScalarError::Invalid),
            ("inf", "inf", ScalarError::Invalid),
            ("infinity", "-Infinity", ScalarError::Invalid),
            ("exp no digits", "1e", ScalarError::Invalid),
            ("exp sign only", "1e+", ScalarError::Invalid),
            ("hex", "0x10", ScalarError::Invalid),
            ("space", "1 ", ScalarError::Invalid),
            ("overflow", "1e400", ScalarError::OutOfRange("float")),
        ];
        for (name, tok, want) in cases {
            assert_eq!(parse_f64(tok.as_bytes()), Err(want), "{name}");
        }
    }

    #[test]
    fn integers() {
        let cases: [(&str, Result<i64, IntError>); 9] = [
            ("0", Ok(0)),
            ("-0", Ok(0)),
            ("9223372036854775807", Ok(i64::MAX)),
            ("-9223372036854775808", Ok(i64::MIN)),
            ("9223372036854775808", Err(IntError::Overflow)),
            ("-9223372036854775809", Err(IntError::Overflow)),
            ("99999999999999999999999", Err(IntError::Overflow)),
            ("", Err(IntError::Invalid)),
            ("1a", Err(IntError::Invalid)),
        ];
        for (tok, want) in cases {
            assert_eq!(parse_i64(tok.as_bytes()), want, "{tok}");
        }
        assert_eq!(parse_u64(b"18446744073709551615"), Ok(u64::MAX));
        assert_eq!(parse_u64(b"18446744073709551616"), Err(IntError::Overflow));
        assert_eq!(parse_u64(b"-1"), Err(IntError::Invalid));
    }
}
