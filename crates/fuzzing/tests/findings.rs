//! The long fuzz runs' findings (docs/fuzzing.md), replayed through the same target bodies
//! the fuzzers run: each input once crashed or stalled its target and must now pass through
//! it. A new finding is added here, as the fuzzer saved it, when it is fixed (inputs that
//! are not plain text are files under `findings/`).

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
        (
            "prometheus",
            "slow (4 s): a topk over 15 chained `or`s — each `or` read its left side twice, \
             doubling the plan, and topk's window normalised its columns over all of it",
            concat!(
                r#"tOpk(3, cpupcu_usagE_systystem or abssystem or ystem or abseem or au_bsssagE_sys"#,
                r#"tem or abssystem or ystem or absent(x{a="b"})--a-a_n-----------ar0o-_a----a_nama"#,
                r#"m --------------ar0o-_a----a_namage_user-p4l--c--p2l--c-a-a_n/mm_ / ilabt /emlam"#,
                r#" or us or us__ /pm_ /ilabto-pm_ /emlam or us or us_ /habszz3haceo-pm_ /emlam or "#,
                r#"us or us__ /pm_ /ilabto-pm_ /emlam or us or us_ /habszz3hace-zzzzzam ---------A-"#,
                r#"---ario-_a----a_a-a_nam --ri/-_a---ar_o{a="b"})"#,
            )
            .as_bytes()
            .to_vec(),
        ),
        (
            "influxql",
            "slow (3 s): `=~` chained on `=~`; the left side's SQL was written twice per level",
            include_bytes!("findings/influxql-regex-chain").to_vec(),
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
