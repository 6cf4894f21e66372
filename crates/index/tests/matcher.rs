//! Table tests for every `Matcher` kind on a small fixture (see `common::fixture`).

mod common;

use tempora_index::{IndexError, Matcher};

fn s(v: &str) -> String {
    v.to_string()
}

fn re(tag: &str, p: &str) -> Matcher {
    Matcher::regex(tag, p).unwrap()
}

fn nre(tag: &str, p: &str) -> Matcher {
    Matcher::not_regex(tag, p).unwrap()
}

fn cases() -> Vec<(&'static str, Matcher, Vec<u32>)> {
    use Matcher::*;
    vec![
        ("all", All, vec![0, 1, 2, 3, 4, 5, 6, 7]),
        ("eq", Matcher::eq("host", "a"), vec![0]),
        ("eq empty value", Matcher::eq("host", ""), vec![4]),
        ("eq missing value", Matcher::eq("host", "zz"), vec![]),
        ("eq unknown tag", Matcher::eq("nope", "a"), vec![]),
        ("eq nul inside", Matcher::eq("host", "x\0y"), vec![7]),
        (
            "not eq skips missing tag",
            Matcher::not_eq("host", "a"),
            vec![1, 2, 4, 6, 7],
        ),
        (
            "not eq empty",
            Matcher::not_eq("dc", ""),
            vec![0, 1, 2, 3, 7],
        ),
        ("not eq unknown tag", Matcher::not_eq("nope", "a"), vec![]),
        (
            "in",
            In(s("host"), vec![s("a"), s("c"), s("zz")]),
            vec![0, 2],
        ),
        ("in empty list", In(s("host"), vec![]), vec![]),
        (
            "in with empty value",
            In(s("dc"), vec![s(""), s("west")]),
            vec![2, 3, 4],
        ),
        ("not in", NotIn(s("dc"), vec![s("east")]), vec![2, 3, 4]),
        ("not in empty list", NotIn(s("os"), vec![]), vec![0, 2, 6]),
        ("not in absent tag", NotIn(s("nope"), vec![s("a")]), vec![]),
        ("regex unanchored", re("dc", "as"), vec![0, 1, 7]),
        ("regex anchored", re("host", "^[ab]$"), vec![0, 1]),
        ("regex matches empty", re("host", "^$"), vec![4]),
        (
            "regex empty pattern",
            re("host", ""),
            vec![0, 1, 2, 4, 6, 7],
        ),
        ("regex special chars", re("host", r"a\.b\*c"), vec![6]),
        ("regex dot", re("host", r"^a.b"), vec![6]),
        ("regex nul", re("host", "\x00"), vec![7]),
        ("regex unknown tag", re("nope", ".*"), vec![]),
        ("not regex skips missing", nre("os", "^lin"), vec![2]),
        ("not regex any", nre("host", ".*"), vec![]),
        ("exists", Exists(s("os")), vec![0, 2, 6]),
        (
            "exists includes empty",
            Exists(s("dc")),
            vec![0, 1, 2, 3, 4, 7],
        ),
        ("exists unknown", Exists(s("nope")), vec![]),
        ("not exists", NotExists(s("host")), vec![3, 5]),
        (
            "not exists unknown",
            NotExists(s("nope")),
            vec![0, 1, 2, 3, 4, 5, 6, 7],
        ),
        (
            "and",
            And(vec![Matcher::eq("dc", "east"), Exists(s("os"))]),
            vec![0],
        ),
        ("and empty", And(vec![]), vec![0, 1, 2, 3, 4, 5, 6, 7]),
        (
            "and disjoint",
            And(vec![Matcher::eq("host", "a"), Matcher::eq("host", "b")]),
            vec![],
        ),
        (
            "or",
            Or(vec![Matcher::eq("host", "a"), Matcher::eq("dc", "west")]),
            vec![0, 2, 3],
        ),
        ("or empty", Or(vec![]), vec![]),
        (
            "not is plain complement",
            Not(Box::new(Matcher::eq("host", "a"))),
            vec![1, 2, 3, 4, 5, 6, 7],
        ),
        (
            "not of not eq",
            Not(Box::new(Matcher::not_eq("host", "a"))),
            vec![0, 3, 5],
        ),
        ("not all", Not(Box::new(All)), vec![]),
        (
            "nested",
            And(vec![
                Or(vec![Matcher::eq("dc", "east"), Matcher::eq("dc", "west")]),
                Not(Box::new(Or(vec![Exists(s("os")), re("host", "^x")]))),
            ]),
            vec![1, 3],
        ),
        (
            "double not",
            Not(Box::new(Not(Box::new(In(s("os"), vec![s("bsd")]))))),
            vec![2],
        ),
    ]
}

#[test]
fn select_table() {
    let (idx, series) = common::fixture();
    for (name, m, want) in cases() {
        let got: Vec<u32> = idx.select(&m).iter().collect();
        assert_eq!(got, want, "{name}");
        // The reference evaluator agrees on every series.
        let model: Vec<u32> = (0..series.len() as u32)
            .filter(|&i| {
                let tags = &series[i as usize];
                m.matches(&|k: &str| tags.iter().find(|(tk, _)| *tk == k).map(|(_, v)| *v))
            })
            .collect();
        assert_eq!(model, want, "{name} (model)");
    }
}

#[test]
fn bad_regexes_are_named_errors() {
    let huge = format!("(a{{1000}}){{1000}}{}", "");
    let cases: &[(&str, &str, &str)] = &[
        ("syntax", "(", "regex parse error"),
        ("too big", huge.as_str(), "size limit"),
    ];
    for (name, pattern, want) in cases {
        let err = Matcher::regex("host", pattern).unwrap_err();
        let IndexError::BadRegex { tag, reason, .. } = &err else {
            panic!("{name}: {err:?}");
        };
        assert_eq!(tag, "host", "{name}");
        assert!(err.to_string().contains(want), "{name}: {reason}");
        assert!(Matcher::not_regex("host", pattern).is_err(), "{name}");
    }
}

#[test]
fn tag_keys_and_values_sorted() {
    let (idx, _) = common::fixture();
    assert_eq!(idx.tag_keys(), vec!["dc", "host", "os"]);
    assert_eq!(idx.tag_values("dc"), vec!["", "east", "west"]);
    assert_eq!(
        idx.tag_values("host"),
        vec!["", "a", "a.b*c", "b", "c", "x\0y"]
    );
    assert!(idx.tag_values("nope").is_empty());
    assert_eq!(idx.tag_cardinality("os"), 2);
}
