//! Newtypes for ids, timestamps and sequence numbers.

use serde::{Deserialize, Serialize};

/// Nanoseconds since the Unix epoch, UTC.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
pub struct Timestamp(pub i64);

impl Timestamp {
    pub const MIN: Timestamp = Timestamp(i64::MIN);
    pub const MAX: Timestamp = Timestamp(i64::MAX);

    /// The start of the window of `width` nanoseconds that holds this timestamp
    /// (floor division, so negative timestamps fall in the window below).
    pub fn window_start(self, width: i64) -> Timestamp {
        assert!(width > 0, "window width must be positive");
        Timestamp(self.0.div_euclid(width) * width)
    }
}

/// Series id, unique within one region's index.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
pub struct SeriesId(pub u32);

/// Table id, unique within one engine.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
pub struct TableId(pub u32);

/// Write sequence number: every acknowledged write batch gets a larger one than the last.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
pub struct SeqNo(pub u64);

impl SeqNo {
    pub fn next(self) -> SeqNo {
        SeqNo(self.0.checked_add(1).expect("sequence number overflow"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_start_floors() {
        let cases = [
            ("zero", 0, 10, 0),
            ("inside", 15, 10, 10),
            ("edge", 20, 10, 20),
            ("negative", -1, 10, -10),
            ("negative edge", -10, 10, -10),
        ];
        for (name, ts, width, want) in cases {
            assert_eq!(Timestamp(ts).window_start(width), Timestamp(want), "{name}");
        }
    }
}
