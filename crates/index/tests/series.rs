//! Forward-index behaviour: idempotent inserts, limits, rejected keys, and a proptest of
//! `select` against a brute-force model.

mod common;

use std::collections::BTreeMap;

use common::key;
use proptest::prelude::*;
use tempora_index::{IndexError, IndexLimits, Matcher, SeriesId, SeriesIndex};

#[test]
fn get_or_insert_is_idempotent() {
    let mut idx = SeriesIndex::new(IndexLimits::default());
    let keys = [
        key(&[("host", "a")]),
        key(&[("host", "b")]),
        key(&[]),
        key(&[("dc", "x"), ("host", "a")]),
    ];
    for round in 0..3 {
        for (i, k) in keys.iter().enumerate() {
            let (id, created) = idx.get_or_insert(k).unwrap();
            assert_eq!(id, SeriesId(i as u32), "round {round}");
            assert_eq!(created, round == 0, "round {round}");
            assert_eq!(idx.get(k), Some(id));
            assert_eq!(idx.key(id), Some(k.as_slice()));
        }
    }
    assert_eq!(idx.len(), keys.len());
    assert_eq!(idx.get(&key(&[("host", "zz")])), None);
    assert_eq!(idx.key(SeriesId(99)), None);
    assert_eq!(idx.select(&Matcher::eq("host", "a")).len(), 2);
}

#[test]
fn max_series_limit() {
    let mut idx = SeriesIndex::new(IndexLimits { max_series: 2 });
    idx.get_or_insert(&key(&[("h", "1")])).unwrap();
    idx.get_or_insert(&key(&[("h", "2")])).unwrap();
    let err = idx.get_or_insert(&key(&[("h", "3")])).unwrap_err();
    assert_eq!(err, IndexError::TooManySeries { limit: 2 });
    assert!(err.to_string().contains("series limit"));
    // Existing series are still found at the limit.
    assert_eq!(
        idx.get_or_insert(&key(&[("h", "2")])).unwrap(),
        (SeriesId(1), false)
    );
    assert_eq!(idx.len(), 2);
    assert_eq!(idx.tag_values("h"), vec!["1", "2"]);
}

#[test]
fn bad_keys_rejected_without_side_effects() {
    let mut idx = SeriesIndex::new(IndexLimits::default());
    let cases: &[(&str, &[u8])] = &[
        ("unterminated", b"abc"),
        ("key only", b"a\0\0"),
        ("bad escape", b"a\0\x01"),
        ("not utf8", b"\xFF\0\0a\0\0"),
        ("unsorted", b"b\0\0\x31\0\0a\0\0\x32\0\0"),
        ("duplicate tag", b"a\0\0\x31\0\0a\0\0\x32\0\0"),
    ];
    for (name, bytes) in cases {
        let err = idx.get_or_insert(bytes).unwrap_err();
        assert!(
            matches!(
                err,
                IndexError::CorruptKey(_) | IndexError::NonCanonicalKey { .. }
            ),
            "{name}: {err:?}"
        );
        assert!(idx.is_empty(), "{name}");
        assert!(idx.tag_keys().is_empty(), "{name}");
    }
}

type Tags = BTreeMap<String, String>;

fn tags_strategy() -> impl Strategy<Value = Tags> {
    prop::collection::btree_map("[abc]", "[xyz]{0,2}", 0..4)
}

fn matcher_strategy() -> impl Strategy<Value = Matcher> {
    let tag = "[abcd]";
    let val = "[xyz]{0,2}";
    let leaf = prop_oneof![
        Just(Matcher::All),
        (tag, val).prop_map(|(k, v)| Matcher::Eq(k, v)),
        (tag, val).prop_map(|(k, v)| Matcher::NotEq(k, v)),
        (tag, prop::collection::vec(val, 0..3)).prop_map(|(k, v)| Matcher::In(k, v)),
        (tag, prop::collection::vec(val, 0..3)).prop_map(|(k, v)| Matcher::NotIn(k, v)),
        (tag, "[xyz^$.]{0,3}").prop_filter_map("valid regex", |(k, p)| Matcher::regex(k, &p).ok()),
        (tag, "[xyz^$.]{0,3}")
            .prop_filter_map("valid regex", |(k, p)| Matcher::not_regex(k, &p).ok()),
        tag.prop_map(Matcher::Exists),
        tag.prop_map(Matcher::NotExists),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Matcher::And),
            prop::collection::vec(inner.clone(), 0..4).prop_map(Matcher::Or),
            inner.prop_map(|m| Matcher::Not(Box::new(m))),
        ]
    })
}

proptest! {
    #[test]
    fn select_matches_brute_force(series in prop::collection::vec(tags_strategy(), 0..40),
                                  m in matcher_strategy()) {
        let mut idx = SeriesIndex::new(IndexLimits::default());
        let mut model: Vec<Tags> = Vec::new();
        for tags in &series {
            let pairs: Vec<(&str, &str)> = tags.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let (id, created) = idx.get_or_insert(&key(&pairs)).unwrap();
            if created {
                prop_assert_eq!(id.0 as usize, model.len());
                model.push(tags.clone());
            }
        }
        let want: Vec<u32> = (0..model.len() as u32)
            .filter(|&i| m.matches(&|k: &str| model[i as usize].get(k).map(String::as_str)))
            .collect();
        let got: Vec<u32> = idx.select(&m).iter().collect();
        prop_assert_eq!(got, want, "matcher {:?}", m);
    }
}

#[test]
fn index_and_cache_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<SeriesIndex>();
    check::<tempora_index::LruCache<u64, std::sync::Arc<SeriesIndex>>>();
}
