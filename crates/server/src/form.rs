//! `application/x-www-form-urlencoded` text: query strings and form bodies (`k=v&k=v`,
//! `+` a space, `%XX` a byte), decoded by the crates the `url` crate uses.
//!
//! Two readings: [`pairs`] is lenient as browsers and InfluxDB are (a bad escape stays as
//! written, bytes that are not UTF-8 become U+FFFD); [`strict`] refuses a bad escape or a
//! value that is not UTF-8, for credentials, where a silently altered password would only
//! ever be refused later with a less useful message.

/// The `name=value` pairs of `s`, decoded; a part without `=` is a name with an empty value.
pub fn pairs(s: &str) -> impl Iterator<Item = (String, String)> + '_ {
    form_urlencoded::parse(s.as_bytes()).map(|(k, v)| (k.into_owned(), v.into_owned()))
}

/// One value, decoded; a `%` not followed by two hex digits or bytes that are not UTF-8
/// are errors that say so.
pub fn strict(v: &str) -> Result<String, String> {
    let b = v.as_bytes();
    for (i, _) in v.match_indices('%') {
        let hex = b.get(i + 1..i + 3);
        if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
            return Err(format!("a query parameter has a bad %-escape at byte {i}"));
        }
    }
    let spaced = v.replace('+', " ");
    percent_encoding::percent_decode_str(&spaced)
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| "a query parameter is not UTF-8".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lenient_pairs() {
        let got: Vec<(String, String)> =
            pairs("q=SHOW%20DATABASES&db=a+b&pct=100%&bad=%zz&short=%4&flag&=v&x=%C3%A9").collect();
        let want = [
            ("q", "SHOW DATABASES"),
            ("db", "a b"),
            ("pct", "100%"),
            ("bad", "%zz"),
            ("short", "%4"),
            ("flag", ""),
            ("", "v"),
            ("x", "é"),
        ];
        let want: Vec<(String, String)> = want
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(got, want);
        assert_eq!(pairs("").count(), 0);
    }

    #[test]
    fn strict_values() {
        for (raw, want) in [
            ("tmp%5Fabc", Ok("tmp_abc")),
            ("a+b", Ok("a b")),
            ("%2B", Ok("+")),
            ("plain", Ok("plain")),
            ("%C3%A9", Ok("é")),
            ("%zz", Err("bad %-escape at byte 0")),
            ("ab%4", Err("bad %-escape at byte 2")),
            ("%", Err("bad %-escape")),
            ("%FF", Err("not UTF-8")),
        ] {
            match (strict(raw), want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{raw}"),
                (Err(e), Err(want)) => assert!(e.contains(want), "{raw}: {e}"),
                (got, want) => panic!("{raw}: got {got:?}, want {want:?}"),
            }
        }
    }
}
