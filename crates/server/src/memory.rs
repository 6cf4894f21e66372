//! One memory budget for the process, split into the parts that hold memory.
//!
//! `memory_budget` (a size, or `auto`: three quarters of the machine's memory or of the
//! cgroup's `memory.max`) bounds the whole server. Each part that holds memory has a share of
//! it ([`PARTS`]); a part whose own key is set (`decoded_cache_bytes = ...`) keeps that value
//! and the others share what is left in proportion to their shares, each within its bounds.
//! [`HEADROOM_PERMILLE`] of the budget is never handed out: it covers what no part counts (the
//! runtime's threads and buffers, WAL buffers, encoding a flush, a query's untracked batches).
//!
//! Invariants (checked by [`plan`]): the parts and the headroom add up to at most the budget;
//! a budget below [`MIN_BUDGET`], or keys set so high that the other parts cannot have their
//! minimum, is an error naming the keys.
//!
//! Pure: the machine's memory is an argument; `config.rs` reads it.

/// Smallest budget accepted.
pub const MIN_BUDGET: usize = 256 << 20;
/// The budget `auto` gives when the machine's memory cannot be read.
pub const FALLBACK_BUDGET: usize = 4 << 30;
/// Thousandths of the budget no part is given.
pub const HEADROOM_PERMILLE: usize = 100;

/// A part of the process that holds memory, with its configuration key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// Rows written and not yet flushed; writes wait above it (`memtable_bytes`; a region
    /// flushes at half of its worker's share).
    Memtables,
    /// Request bodies and their parsed rows on their way to the engine (`ingest_buffer_bytes`).
    IngestBuffers,
    /// Rows a compaction holds decoded at once (`compaction_memory_bytes`).
    Compaction,
    /// Decoded column chunks queries read (`decoded_cache_bytes`).
    DecodedCache,
    /// Data files and footers recently read (`file_cache_bytes`).
    FileCache,
    /// Series indexes of cold regions (`series_cache_bytes`).
    SeriesCache,
    /// Memory all queries' operators may hold together (`query_memory_bytes`).
    QueryPool,
}

/// A part's share of the budget (thousandths) and the bounds of a value derived from it.
#[derive(Debug, Clone, Copy)]
pub struct PartSpec {
    pub part: Part,
    pub key: &'static str,
    pub share_permille: usize,
    pub min: usize,
    pub max: usize,
}

const MIB: usize = 1 << 20;
const GIB: usize = 1 << 30;

/// The parts, their shares and bounds. The upper bounds are the sizes past which a part stops
/// paying for itself (a bigger memtable only makes replay longer; the series cache holds every
/// cold index of a large server in 1 GiB); what they leave unused stays unused.
pub const PARTS: [PartSpec; 7] = [
    spec(Part::Memtables, "memtable_bytes", 200, 16 * MIB, GIB),
    spec(
        Part::IngestBuffers,
        "ingest_buffer_bytes",
        50,
        8 * MIB,
        512 * MIB,
    ),
    spec(
        Part::Compaction,
        "compaction_memory_bytes",
        100,
        16 * MIB,
        GIB,
    ),
    spec(
        Part::DecodedCache,
        "decoded_cache_bytes",
        250,
        16 * MIB,
        16 * GIB,
    ),
    spec(Part::FileCache, "file_cache_bytes", 50, 4 * MIB, 256 * MIB),
    spec(Part::SeriesCache, "series_cache_bytes", 100, 16 * MIB, GIB),
    spec(
        Part::QueryPool,
        "query_memory_bytes",
        150,
        32 * MIB,
        64 * GIB,
    ),
];

const fn spec(part: Part, key: &'static str, share: usize, min: usize, max: usize) -> PartSpec {
    PartSpec {
        part,
        key,
        share_permille: share,
        min,
        max,
    }
}

/// Where a part's value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Its own key was set.
    Set,
    /// Derived from the budget.
    Derived,
}

/// The budget and every part's bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryPlan {
    pub budget: usize,
    /// Parts in [`PARTS`] order.
    pub parts: Vec<(PartSpec, usize, Source)>,
}

impl PartialEq for PartSpec {
    fn eq(&self, other: &Self) -> bool {
        self.part == other.part
    }
}

impl MemoryPlan {
    pub fn get(&self, part: Part) -> usize {
        self.parts
            .iter()
            .find(|(s, ..)| s.part == part)
            .map(|(_, v, _)| *v)
            .expect("every part is planned")
    }

    /// What the parts leave of the budget (at least the headroom).
    pub fn unassigned(&self) -> usize {
        self.budget - self.parts.iter().map(|(_, v, _)| v).sum::<usize>()
    }
}

/// `auto`'s budget: three quarters of the memory this process may use.
pub fn auto_budget(memory: Option<usize>) -> usize {
    memory.map_or(FALLBACK_BUDGET, |m| (m / 4 * 3).max(MIN_BUDGET))
}

/// Splits `budget` among the parts; `set` holds the parts whose keys were given.
pub fn plan(budget: usize, set: &[(Part, usize)]) -> Result<MemoryPlan, String> {
    if budget < MIN_BUDGET {
        return Err(format!(
            "memory_budget of {} is below the smallest accepted, {}",
            human(budget),
            human(MIN_BUDGET)
        ));
    }
    let given = |p: Part| set.iter().find(|(q, _)| *q == p).map(|(_, v)| *v);
    let handed = budget - budget / 1000 * HEADROOM_PERMILLE;
    let fixed: usize = set.iter().map(|(_, v)| v).sum();
    let unset: Vec<&PartSpec> = PARTS.iter().filter(|s| given(s.part).is_none()).collect();
    let need: usize = unset.iter().map(|s| s.min).sum();
    if fixed.saturating_add(need) > handed {
        let keys: Vec<&str> = PARTS
            .iter()
            .filter(|s| given(s.part).is_some())
            .map(|s| s.key)
            .collect();
        return Err(format!(
            "{} set to {} in all leave less than the other parts' minimum of {} within \
             memory_budget {} (less {}% headroom): lower them or raise memory_budget",
            keys.join(" + "),
            human(fixed),
            human(need),
            human(budget),
            HEADROOM_PERMILLE / 10
        ));
    }
    let derived = share_out(handed - fixed, &unset);
    let parts = PARTS
        .iter()
        .map(|s| match given(s.part) {
            Some(v) => (*s, v, Source::Set),
            None => {
                let v = derived
                    .iter()
                    .find(|(p, _)| *p == s.part)
                    .expect("derived")
                    .1;
                (*s, v, Source::Derived)
            }
        })
        .collect();
    let plan = MemoryPlan { budget, parts };
    assert!(
        plan.parts.iter().map(|(_, v, _)| v).sum::<usize>() <= handed,
        "the parts fit in the budget"
    );
    Ok(plan)
}

/// Shares `left` among `parts` in proportion to their shares: a part whose share falls below
/// its minimum gets the minimum and leaves the sharing (the rest share what remains), and
/// none gets more than its maximum. The caller has checked that the minimums fit.
fn share_out(left: usize, parts: &[&PartSpec]) -> Vec<(Part, usize)> {
    let mut fixed: Vec<(Part, usize)> = Vec::new();
    loop {
        let open: Vec<&&PartSpec> = parts
            .iter()
            .filter(|s| !fixed.iter().any(|(p, _)| *p == s.part))
            .collect();
        let rest = left - fixed.iter().map(|(_, v)| v).sum::<usize>();
        let shares: usize = open.iter().map(|s| s.share_permille).sum::<usize>().max(1);
        let share =
            |s: &PartSpec| (rest as u128 * s.share_permille as u128 / shares as u128) as usize;
        let below: Vec<(Part, usize)> = open
            .iter()
            .filter(|s| share(s) < s.min)
            .map(|s| (s.part, s.min))
            .collect();
        if below.is_empty() {
            fixed.extend(open.iter().map(|s| (s.part, share(s).min(s.max))));
            return fixed;
        }
        fixed.extend(below);
    }
}

/// Bytes as the largest whole unit that keeps three digits (`1.5 GiB`, `300 MiB`).
pub fn human(n: usize) -> String {
    const UNITS: [(&str, usize); 4] = [("TiB", 1 << 40), ("GiB", GIB), ("MiB", MIB), ("KiB", 1024)];
    for (unit, size) in UNITS {
        if n >= size {
            let v = n as f64 / size as f64;
            return match v.fract() == 0.0 {
                true => format!("{v:.0} {unit}"),
                false => format!("{v:.1} {unit}"),
            };
        }
    }
    format!("{n} B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_split_into_parts() {
        type Case = (&'static str, usize, Vec<(Part, usize)>, Vec<(Part, usize)>);
        let cases: Vec<Case> = vec![
            (
                "1 GiB, nothing set: shares of 90 %",
                GIB,
                vec![],
                vec![
                    (Part::Memtables, 214_748_383),
                    (Part::IngestBuffers, 53_687_095),
                    (Part::Compaction, 107_374_191),
                    (Part::DecodedCache, 268_435_478),
                    (Part::FileCache, 53_687_095),
                    (Part::SeriesCache, 107_374_191),
                    (Part::QueryPool, 161_061_287),
                ],
            ),
            (
                "18 GiB: the capped parts stop at their maximum",
                18 * GIB,
                vec![],
                vec![
                    (Part::Memtables, GIB),
                    (Part::IngestBuffers, 512 * MIB),
                    (Part::Compaction, GIB),
                    (Part::DecodedCache, 4_831_838_231),
                    (Part::FileCache, 256 * MIB),
                    (Part::SeriesCache, GIB),
                    (Part::QueryPool, 2_899_102_938),
                ],
            ),
            (
                "a set key keeps its value, the rest share what is left",
                GIB,
                vec![(Part::DecodedCache, 500 * MIB)],
                vec![
                    (Part::DecodedCache, 500 * MIB),
                    (Part::Memtables, 136_024_530),
                    (Part::QueryPool, 102_018_397),
                ],
            ),
            (
                "what is left is small: a part gets its minimum",
                256 * MIB,
                vec![(Part::DecodedCache, 135 * MIB)],
                // 100,034,196 left: ingest (7.7 MB), the query pool (23 MB), then compaction
                // and the series cache (12.9 MB each) fall to their minimums;
                // memtables and the file cache share the 24,536,724 bytes that remain 4:1.
                vec![
                    (Part::IngestBuffers, 8 * MIB),
                    (Part::QueryPool, 32 * MIB),
                    (Part::Compaction, 16 * MIB),
                    (Part::SeriesCache, 16 * MIB),
                    (Part::FileCache, 4_907_344),
                    (Part::Memtables, 19_629_379),
                ],
            ),
        ];
        for (name, budget, set, want) in cases {
            let p = plan(budget, &set).unwrap_or_else(|e| panic!("{name}: {e}"));
            for (part, bytes) in want {
                assert_eq!(p.get(part), bytes, "{name}: {part:?}");
            }
            assert!(
                p.unassigned() >= budget / 10 - 1000,
                "{name}: headroom kept"
            );
        }
    }

    #[test]
    fn impossible_budgets_are_errors_that_name_the_keys() {
        for (name, budget, set, words) in [
            (
                "too small",
                100 * MIB,
                vec![],
                vec!["memory_budget", "256 MiB"],
            ),
            (
                "one key takes it all",
                GIB,
                vec![(Part::DecodedCache, GIB)],
                vec!["decoded_cache_bytes", "1 GiB", "headroom"],
            ),
            (
                "two keys take it all",
                GIB,
                vec![(Part::QueryPool, 600 * MIB), (Part::Memtables, 400 * MIB)],
                vec!["memtable_bytes + query_memory_bytes", "1000 MiB"],
            ),
        ] {
            let e = plan(budget, &set).unwrap_err();
            for w in words {
                assert!(e.contains(w), "{name}: {e:?} lacks {w:?}");
            }
        }
    }

    #[test]
    fn auto_is_three_quarters_of_memory() {
        assert_eq!(auto_budget(Some(24 * GIB)), 18 * GIB);
        assert_eq!(
            auto_budget(Some(128 * MIB)),
            MIN_BUDGET,
            "never below the minimum"
        );
        assert_eq!(auto_budget(None), FALLBACK_BUDGET);
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        for (n, want) in [
            (0, "0 B"),
            (1536, "1.5 KiB"),
            (300 * MIB, "300 MiB"),
            (3 * GIB / 2, "1.5 GiB"),
        ] {
            assert_eq!(human(n), want);
        }
    }
}
