// Shared helpers for the integration tests (included with `mod common;`).
#![allow(dead_code)]

use tempora_index::{IndexLimits, SeriesIndex};
use tempora_model::encode_series_key;

pub fn key(tags: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_series_key(tags, &mut out).unwrap();
    out
}

/// The fixture used by the matcher table: id = position.
pub fn fixture() -> (SeriesIndex, Vec<Vec<(&'static str, &'static str)>>) {
    let series: Vec<Vec<(&str, &str)>> = vec![
        vec![("host", "a"), ("dc", "east"), ("os", "linux")], // 0
        vec![("host", "b"), ("dc", "east")],                  // 1
        vec![("host", "c"), ("dc", "west"), ("os", "bsd")],   // 2
        vec![("dc", "west")],                                 // 3: no host
        vec![("host", ""), ("dc", "")],                       // 4: empty values
        vec![],                                               // 5: no tags
        vec![("host", "a.b*c"), ("os", "linux")],             // 6: regex chars
        vec![("host", "x\0y"), ("dc", "east")],               // 7: NUL inside
    ];
    let mut idx = SeriesIndex::new(IndexLimits::default());
    for (i, tags) in series.iter().enumerate() {
        let (id, created) = idx.get_or_insert(&key(tags)).unwrap();
        assert!(created);
        assert_eq!(id.0 as usize, i);
    }
    (idx, series)
}
