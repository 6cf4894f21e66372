//! The long fuzz runs' findings (docs/fuzzing.md), replayed through the same target bodies
//! the fuzzers run: each input once crashed or stalled its target and must now pass through
//! it. A new finding is added here, as the fuzzer saved it, when it is fixed.

use std::time::{Duration, Instant};

/// (target, what the fuzzer found, the input).
fn findings() -> Vec<(&'static str, &'static str, Vec<u8>)> {
    vec![
        (
            "sql",
            "panic: a setting's name sliced inside a multi-byte letter",
            "SET K.E11S1϶=L".as_bytes().to_vec(),
        ),
        (
            "prometheus",
            "slow: 114 chained vector comparisons planned in quadratic time",
            "ab>l>b>b>l>b>l>b>b>l>b>ab>b>l>l>b>b>ob>ab>b>l>o_r>ob>ab>b>l>o>b>l>ob>ab>b>l>o>ab\
             >b>l>o>b>l>_r>ob>l>b>l>b>b>l>b>aj>b>l>ob>ab>b>l>o_r>ob>ab>b>b>l>b>b>l>b>abb>b>l>\
             b>ab>b>l>l>b>b>l>b>l>b>b>l>b>aj>b>l>ob>ab>b>l>o_r>ob>ab>b>l>o>b>l>ob>ab>b>l>o>ab\
             >b>l>o>b>l>_r>ob>ab>b>l>o_r"
                .as_bytes()
                .to_vec(),
        ),
        (
            "prometheus",
            "panic in promql-parser: a 56-digit number of seconds after `offset`",
            format!(
                r#"sum by (job) (ratu(ep{{job=~"a.*", insta!=""}}[0m] offset 1e))[5m] offset {}"#,
                "5".repeat(56)
            )
            .into_bytes(),
        ),
    ]
}

#[test]
fn every_finding_passes_through_its_target() {
    for (name, what, input) in findings() {
        let (_, target) = tempora_fuzzing::TARGETS
            .iter()
            .find(|(n, _)| *n == name)
            .expect("a target of that name");
        let started = Instant::now();
        target(&input);
        let took = started.elapsed();
        assert!(
            took < Duration::from_secs(10),
            "{name} ({what}): took {took:?}"
        );
    }
}
