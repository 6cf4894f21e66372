//! Table-driven tests of `parse`: escapes, value types, precisions, line handling, errors.

mod common;

use common::{Row, rows, same_value};
use tempora_lineproto::{ParseOptions, Precision, parse};
use tempora_model::FieldValue::{self, Bool, F64, I64, Str, U64};

fn opts() -> ParseOptions {
    ParseOptions::new(Precision::Ns, 42)
}

fn row(
    line: usize,
    table: &str,
    tags: &[(&str, &str)],
    fields: &[(&str, FieldValue)],
    time: i64,
) -> Row {
    let mut tags: Vec<(String, String)> = tags
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    tags.sort();
    Row {
        line,
        table: table.to_string(),
        tags,
        fields: fields
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
        time,
    }
}

fn assert_rows(name: &str, got: &[Row], want: &[Row]) {
    assert_eq!(got.len(), want.len(), "{name}: {got:#?}");
    for (g, w) in got.iter().zip(want) {
        let same = g.line == w.line
            && g.table == w.table
            && g.tags == w.tags
            && g.time == w.time
            && g.fields.len() == w.fields.len()
            && g.fields
                .iter()
                .zip(&w.fields)
                .all(|(a, b)| a.0 == b.0 && same_value(&a.1, &b.1));
        assert!(same, "{name}:\n got {g:?}\nwant {w:?}");
    }
}

/// Parses `body` and checks it gives exactly `want` and no errors.
fn check_ok(name: &str, body: &str, o: &ParseOptions, want: &[Row]) {
    let p = parse(body.as_bytes(), o);
    assert!(p.errors.is_empty(), "{name}: {:?}", p.errors);
    assert_rows(name, &rows(&p), want);
}

#[test]
fn escaping_rules() {
    let f1 = [("f", F64(1.0))];
    let cases: Vec<(&str, &str, Row)> = vec![
        (
            "measurement space and comma",
            r"a\ b\,c f=1",
            row(1, "a b,c", &[], &f1, 42),
        ),
        (
            "measurement equals is literal",
            r"a\=b f=1",
            row(1, r"a\=b", &[], &f1, 42),
        ),
        (
            "measurement literal backslash",
            r"a\b f=1",
            row(1, r"a\b", &[], &f1, 42),
        ),
        (
            "measurement escaped backslash",
            r"a\\ f=1",
            row(1, r"a\", &[], &f1, 42),
        ),
        (
            "measurement unescaped equals",
            "a=b f=1",
            row(1, "a=b", &[], &f1, 42),
        ),
        (
            "measurement with quote",
            "\"m\" f=1",
            row(1, "\"m\"", &[], &f1, 42),
        ),
        (
            "tag key escapes",
            r"m,a\ b\,c\=d=v f=1",
            row(1, "m", &[("a b,c=d", "v")], &f1, 42),
        ),
        (
            "tag value escapes",
            r"m,t=a\ b\,c\=d f=1",
            row(1, "m", &[("t", "a b,c=d")], &f1, 42),
        ),
        (
            "tag value literal backslash",
            r"m,t=a\b f=1",
            row(1, "m", &[("t", r"a\b")], &f1, 42),
        ),
        (
            "tag value escaped backslash",
            r"m,t=a\\ f=1",
            row(1, "m", &[("t", r"a\")], &f1, 42),
        ),
        (
            "tag value with quote",
            "m,t=\"x\" f=1",
            row(1, "m", &[("t", "\"x\"")], &f1, 42),
        ),
        (
            "field key escapes",
            r"m a\ b\,c\=d=1",
            row(1, "m", &[], &[("a b,c=d", F64(1.0))], 42),
        ),
        (
            "string escapes",
            r#"m s="a\"b\\c\d""#,
            row(1, "m", &[], &[("s", Str(r#"a"b\c\d"#.into()))], 42),
        ),
        (
            "string with separators",
            r#"m s="a, b=c",g=1i"#,
            row(
                1,
                "m",
                &[],
                &[("s", Str("a, b=c".into())), ("g", I64(1))],
                42,
            ),
        ),
        (
            "string with newline",
            "m s=\"a\nb\",g=2i 7",
            row(1, "m", &[], &[("s", Str("a\nb".into())), ("g", I64(2))], 7),
        ),
        (
            "empty string",
            r#"m s="""#,
            row(1, "m", &[], &[("s", Str(String::new()))], 42),
        ),
        (
            "unicode",
            "mé,tü=vö fé=1 5",
            row(1, "mé", &[("tü", "vö")], &[("fé", F64(1.0))], 5),
        ),
        (
            "escaped unicode",
            r"m\ é,t\ ü=v\,ö f=1",
            row(1, "m é", &[("t ü", "v,ö")], &f1, 42),
        ),
        (
            "hash inside",
            "m#,t=#x f#=1",
            row(1, "m#", &[("t", "#x")], &[("f#", F64(1.0))], 42),
        ),
    ];
    for (name, body, want) in cases {
        check_ok(name, body, &opts(), &[want]);
    }
}

#[test]
fn field_types() {
    let cases: Vec<(&str, FieldValue)> = vec![
        ("1i", I64(1)),
        ("-1i", I64(-1)),
        ("0i", I64(0)),
        ("9223372036854775807i", I64(i64::MAX)),
        ("-9223372036854775808i", I64(i64::MIN)),
        ("1u", U64(1)),
        ("0u", U64(0)),
        ("18446744073709551615u", U64(u64::MAX)),
        ("1", F64(1.0)),
        ("1.5", F64(1.5)),
        ("-1e10", F64(-1e10)),
        ("1e-7", F64(1e-7)),
        ("1.5E+3", F64(1500.0)),
        ("1.", F64(1.0)),
        (".5", F64(0.5)),
        ("-.5", F64(-0.5)),
        ("-0", F64(-0.0)),
        ("58.5", F64(58.5)),
        ("0.1", F64(0.1)),
        ("1.7976931348623157e308", F64(f64::MAX)),
        ("123456789012345678901234567890", F64(1.2345678901234568e29)),
        ("t", Bool(true)),
        ("T", Bool(true)),
        ("true", Bool(true)),
        ("True", Bool(true)),
        ("TRUE", Bool(true)),
        ("f", Bool(false)),
        ("F", Bool(false)),
        ("false", Bool(false)),
        ("False", Bool(false)),
        ("FALSE", Bool(false)),
        ("\"hi\"", Str("hi".into())),
    ];
    for (text, want) in cases {
        let body = format!("m v={text}");
        check_ok(
            text,
            &body,
            &opts(),
            &[row(1, "m", &[], &[("v", want)], 42)],
        );
    }
}

#[test]
fn precisions() {
    let cases: Vec<(&str, &str, Result<i64, &str>)> = vec![
        ("ns", "123", Ok(123)),
        ("n", "-123", Ok(-123)),
        ("us", "123", Ok(123_000)),
        ("u", "123", Ok(123_000)),
        ("µ", "123", Ok(123_000)),
        ("ms", "123", Ok(123_000_000)),
        ("s", "123", Ok(123_000_000_000)),
        ("m", "2", Ok(120_000_000_000)),
        ("h", "2", Ok(7_200_000_000_000)),
        ("ns", "9223372036854775807", Ok(i64::MAX)),
        ("ns", "-9223372036854775808", Ok(i64::MIN)),
        (
            "ns",
            "9223372036854775808",
            Err("overflows i64 nanoseconds"),
        ),
        (
            "us",
            "9223372036854776",
            Err("timestamp \"9223372036854776\" at precision us overflows"),
        ),
        ("ms", "-9223372036855", Err("at precision ms overflows")),
        ("s", "9223372037", Err("at precision s overflows")),
        ("s", "9223372036", Ok(9_223_372_036_000_000_000)),
        ("m", "153722868", Err("at precision m overflows")),
        ("h", "2562048", Err("at precision h overflows")),
        ("h", "-2562047", Ok(-2_562_047 * 3_600_000_000_000)),
    ];
    for (prec, ts, want) in cases {
        let name = format!("{prec} {ts}");
        let o = ParseOptions::new(prec.parse().unwrap(), 0);
        let p = parse(format!("m f=1 {ts}").as_bytes(), &o);
        match want {
            Ok(t) => {
                assert!(p.errors.is_empty(), "{name}: {:?}", p.errors);
                assert_eq!(rows(&p)[0].time, t, "{name}");
            }
            Err(msg) => {
                assert_eq!(p.rows, 0, "{name}");
                assert!(p.errors[0].message.contains(msg), "{name}: {:?}", p.errors);
            }
        }
    }
    assert!("x".parse::<Precision>().is_err());
    assert!("NS".parse::<Precision>().is_err());
    for p in [
        Precision::Ns,
        Precision::Us,
        Precision::Ms,
        Precision::S,
        Precision::M,
        Precision::H,
    ] {
        assert_eq!(p.name().parse::<Precision>().unwrap(), p);
    }
}

#[test]
fn default_time() {
    let cases = [
        ("ns keeps all", Precision::Ns, 1_234_567_891, 1_234_567_891),
        ("us truncates", Precision::Us, 1_234_567_891, 1_234_567_000),
        ("s truncates", Precision::S, 1_234_567_891, 1_000_000_000),
        ("negative floors", Precision::S, -1, -1_000_000_000),
    ];
    for (name, prec, now, want) in cases {
        let o = ParseOptions::new(prec, now);
        let p = parse(b"m f=1\nm f=2 5", &o);
        let r = rows(&p);
        assert_eq!(r[0].time, want, "{name}");
        assert_eq!(r[1].time, 5 * prec.nanos(), "{name}");
    }
}

#[test]
fn line_handling() {
    let f = |v: f64| [("f", F64(v))];
    let cases: Vec<(&str, &str, Vec<Row>)> = vec![
        (
            "crlf",
            "m f=1 1\r\nm f=2 2\r\n",
            vec![row(1, "m", &[], &f(1.0), 1), row(2, "m", &[], &f(2.0), 2)],
        ),
        (
            "crlf no timestamp",
            "m f=1\r\n",
            vec![row(1, "m", &[], &f(1.0), 42)],
        ),
        (
            "comments and blanks",
            "# c\n\n   \n\t# x\nm f=1\n\n",
            vec![row(5, "m", &[], &f(1.0), 42)],
        ),
        (
            "leading blanks",
            "  \tm f=1",
            vec![row(1, "m", &[], &f(1.0), 42)],
        ),
        (
            "extra spaces",
            "m,t=1   f=1   7   ",
            vec![row(1, "m", &[("t", "1")], &f(1.0), 7)],
        ),
        (
            "no final newline",
            "m f=1\nm f=2",
            vec![row(1, "m", &[], &f(1.0), 42), row(2, "m", &[], &f(2.0), 42)],
        ),
        (
            "out of order kept",
            "m f=1 30\nm f=2 10\nm f=3 20",
            vec![
                row(1, "m", &[], &f(1.0), 30),
                row(2, "m", &[], &f(2.0), 10),
                row(3, "m", &[], &f(3.0), 20),
            ],
        ),
        (
            "duplicate field last wins",
            "m a=1,b=2,a=3i",
            vec![row(1, "m", &[], &[("a", I64(3)), ("b", F64(2.0))], 42)],
        ),
        (
            "tags unsorted",
            "m,z=1,a=2,m=3 f=1",
            vec![row(
                1,
                "m",
                &[("a", "2"), ("m", "3"), ("z", "1")],
                &f(1.0),
                42,
            )],
        ),
        (
            "multi-line string keeps line numbers",
            "m s=\"a\nb\nc\" 1\nm f=2 2",
            vec![
                row(1, "m", &[], &[("s", Str("a\nb\nc".into()))], 1),
                row(4, "m", &[], &f(2.0), 2),
            ],
        ),
        (
            "string with crlf inside",
            "m s=\"a\r\nb\"\r\nm f=1",
            vec![
                row(1, "m", &[], &[("s", Str("a\r\nb".into()))], 42),
                row(3, "m", &[], &f(1.0), 42),
            ],
        ),
    ];
    for (name, body, want) in cases {
        check_ok(name, body, &opts(), &want);
    }
}

#[test]
fn many_measurements_one_batch_each() {
    let body = "b f=1 1\na f=2 2\nb,t=x f=3 3\nc f=4 4\na f=5 5\n";
    let p = parse(body.as_bytes(), &opts());
    let tables: Vec<&str> = p.batches.iter().map(|b| b.table()).collect();
    assert_eq!(tables, ["b", "a", "c"]);
    assert_eq!(p.line_numbers, vec![vec![1, 3], vec![2, 5], vec![4]]);
    assert_eq!(p.rows, 5);
    let times: Vec<i64> = rows(&p).iter().map(|r| r.time).collect();
    assert_eq!(times, [1, 3, 2, 5, 4]);
}

#[test]
fn bad_lines() {
    // Each bad line sits between two good ones; the good ones must survive.
    let cases: &[(&str, &str, &str)] = &[
        ("missing fields", "m", "missing fields at column 2"),
        (
            "missing fields after tags",
            "m,t=1",
            "missing fields at column 6",
        ),
        (
            "missing fields after space",
            "m,t=1  ",
            "missing fields at column 8",
        ),
        (
            "missing measurement",
            ",t=1 f=1",
            "missing measurement at column 1",
        ),
        (
            "missing = field",
            "m f",
            "missing '=' after field key \"f\" at column 4",
        ),
        (
            "missing = field before comma",
            "m f,g=1",
            "missing '=' after field key \"f\" at column 4",
        ),
        (
            "missing = tag",
            "m,t f=1",
            "missing '=' after tag key \"t\" at column 4",
        ),
        ("empty tag key", "m,=v f=1", "empty tag key at column 3"),
        ("empty field key", "m =1", "empty field key at column 3"),
        (
            "empty field key after comma",
            "m a=1,=2",
            "empty field key at column 7",
        ),
        (
            "missing tag value",
            "m,t= f=1",
            "missing value for tag \"t\" at column 5",
        ),
        (
            "equals in tag value",
            "m,t=a=b f=1",
            "unescaped '=' in the value of tag \"t\" at column 6",
        ),
        (
            "missing field value",
            "m f=",
            "missing value for field \"f\" at column 5",
        ),
        (
            "missing field value before comma",
            "m f=,g=1",
            "missing value for field \"f\" at column 5",
        ),
        (
            "double dot",
            "cpu,host=abcd x=1.2.3",
            "invalid field value \"1.2.3\" for field \"x\" at column 17",
        ),
        ("nan", "m f=NaN", "invalid field value \"NaN\""),
        ("inf", "m f=inf", "invalid field value \"inf\""),
        ("plus sign", "m f=+1", "invalid field value \"+1\""),
        ("bad bool", "m f=tru", "invalid field value \"tru\""),
        ("word", "m f=yes", "invalid field value \"yes\""),
        ("float with i", "m f=1.5i", "invalid field value \"1.5i\""),
        (
            "i64 overflow",
            "m f=9223372036854775808i",
            "integer field value \"9223372036854775808i\" for field \"f\" is out of range at column 5",
        ),
        (
            "i64 underflow",
            "m f=-9223372036854775809i",
            "integer field value",
        ),
        ("u64 negative", "m f=-1u", "invalid field value \"-1u\""),
        (
            "u64 overflow",
            "m f=18446744073709551616u",
            "unsigned field value",
        ),
        (
            "float overflow",
            "m f=1e400",
            "float field value \"1e400\" for field \"f\" is out of range",
        ),
        (
            "unterminated string",
            "m s=\"abc",
            "unterminated string value for field \"s\" starting at column 5",
        ),
        (
            "garbage after string",
            "m s=\"a\"b",
            "unexpected \"b\" after the field value at column 8",
        ),
        (
            "bad timestamp",
            "m f=1 12a",
            "invalid timestamp \"12a\" at column 7",
        ),
        ("float timestamp", "m f=1 1.5", "invalid timestamp \"1.5\""),
        (
            "timestamp overflow",
            "m f=1 99999999999999999999",
            "overflows i64 nanoseconds at column 7",
        ),
        (
            "trailing garbage",
            "m f=1 123 456",
            "unexpected \"456\" after the timestamp at column 11",
        ),
        (
            "escape at end in measurement",
            "m\\",
            "backslash at the end of the line escapes nothing at column 2",
        ),
        (
            "escape at end in tag",
            "m,t=a\\",
            "backslash at the end of the line escapes nothing at column 6",
        ),
        (
            "measurement time",
            "time f=1",
            "invalid measurement \"time\" at column 1",
        ),
        (
            "measurement reserved",
            "__m f=1",
            "invalid measurement \"__m\" at column 1",
        ),
        (
            "tag time",
            "m,time=1 f=1",
            "invalid tag key \"time\" at column 3",
        ),
        (
            "tag reserved",
            "m,__x=1 f=1",
            "invalid tag key \"__x\" at column 3: names starting with `__` are reserved",
        ),
        (
            "field time",
            "m time=1",
            "invalid field key \"time\" at column 3",
        ),
        (
            "field reserved",
            "m a=1,__x=1",
            "invalid field key \"__x\" at column 7",
        ),
        (
            "duplicate tag",
            "m,a=1,b=2,a=3 f=1",
            "duplicate tag key \"a\" at column 11",
        ),
    ];
    for (name, bad, want) in cases {
        let body = format!("ok f=1\n{bad}\nok f=2\n");
        let p = parse(body.as_bytes(), &opts());
        assert_eq!(p.errors.len(), 1, "{name}: {:?}", p.errors);
        assert_eq!(p.errors[0].line, 2, "{name}");
        assert!(
            p.errors[0].message.contains(want),
            "{name}: {:?} lacks {want:?}",
            p.errors[0].message
        );
        assert_eq!(p.line_numbers, vec![vec![1, 3]], "{name}");
    }
}

#[test]
fn invalid_utf8_rejects_its_line_only() {
    let p = parse(b"m f=1\nm s=\"\xff\"\nm f=2", &opts());
    assert_eq!(p.rows, 2);
    assert_eq!(p.errors.len(), 1);
    assert_eq!(p.errors[0].line, 2);
    assert_eq!(p.errors[0].message, "invalid UTF-8 at column 6");
}

#[test]
fn limits() {
    let o = ParseOptions {
        max_line_bytes: 10,
        ..opts()
    };
    let p = parse(b"m f=1\nm,t=abcdef f=1\nm f=2", &o);
    assert_eq!(p.rows, 2);
    assert_eq!(p.errors[0].line, 2);
    assert!(
        p.errors[0]
            .message
            .contains("line is 14 bytes, longer than the limit of 10")
    );

    let o = ParseOptions {
        max_lines: 2,
        ..opts()
    };
    let p = parse(b"m f=1\n# c\n\nm f=2\nm f=3\nm f=4", &o);
    assert_eq!(p.line_numbers, vec![vec![1, 4]]);
    assert_eq!(p.errors.len(), 1);
    assert_eq!(p.errors[0].line, 5);
    assert!(
        p.errors[0]
            .message
            .contains("too many lines: the limit is 2")
    );
}

#[test]
fn unterminated_string_ends_at_newline() {
    // The unterminated string cannot swallow the following lines.
    let p = parse(b"m s=\"abc\nm f=1\nm f=2", &opts());
    assert_eq!(p.errors.len(), 1);
    assert_eq!(p.errors[0].line, 1);
    assert_eq!(p.line_numbers, vec![vec![2, 3]]);
}

#[test]
fn empty_and_blank_bodies() {
    for body in ["", "\n", "\r\n", "# only a comment", "\n\n  \n"] {
        let p = parse(body.as_bytes(), &opts());
        assert_eq!(
            (p.rows, p.errors.len(), p.batches.len()),
            (0, 0, 0),
            "{body:?}"
        );
    }
}
