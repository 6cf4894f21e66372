//! The salvage plan of the engine's write-ahead logs: which records to keep, which rows of
//! them cannot be kept, and what each damaged range costs.
//!
//! Why rows and not only records are lost: a record names a series by its region-local id
//! once the key is durable, and replay assigns ids in log order (`write/replay.rs`). A lost
//! record may have introduced ids; the records after it that name those ids — or any id the
//! lost record may have shifted — cannot be resolved with certainty. So after a damaged range
//! that may have held records (seqs in (P, N)), every region whose flushed seq is below
//! N - 1 is *opened* at its current id count B: its later rows that name an id ≥ B are dropped
//! and listed, rows that name an id < B or carry their key are kept. A region whose index is
//! rebuilt from its data files (numbered anew) keeps only rows that carry their key.
//!
//! Invariants:
//! - The simulation follows replay: logs in id order, records in log order, records at or
//!   below a region's flushed seq skipped, a new key takes the next id.
//! - Kept rows keep their encoding (an id below B names the same key after repair), so a
//!   rewritten record is never larger than the original.
//! - Pure: the caller reads files and supplies each region's persisted keys.

use std::collections::HashMap;

use tempora_model::RowBatch;
use tempora_wal::{Damage, Item, LogScan};

use super::report::{Finding, LostRow, Report};
use crate::files::manifest::{LegacyLayout, RegionKey};
use crate::write::wal::record_region;

/// What the manifest and the index files say about one region before its log records.
#[derive(Debug, Clone, Default)]
pub(crate) struct RegionBase {
    pub table: Option<String>,
    pub flushed_seq: u64,
    /// The persisted (or rebuilt) index's keys in id order.
    pub keys: Vec<Vec<u8>>,
    /// The index is rebuilt: ids in the log no longer name the same keys.
    pub rebuilt: bool,
}

/// One region during the simulation.
struct Sim {
    base: RegionBase,
    ids: HashMap<Vec<u8>, u32>,
    /// Ids at or above this may be wrong (a lost record before them).
    boundary: Option<u32>,
}

impl Sim {
    fn new(base: RegionBase) -> Sim {
        let ids = base
            .keys
            .iter()
            .enumerate()
            .map(|(i, k)| (k.clone(), i as u32))
            .collect();
        Sim {
            base,
            ids,
            boundary: None,
        }
    }
    fn count(&self) -> u32 {
        self.base.keys.len() as u32
    }
}

/// The plan of one log.
#[derive(Debug, Clone, Default)]
pub(crate) struct LogPlan {
    /// The log's directory relative to the engine directory (`wal/0`).
    pub log: String,
    /// Records to write, in order.
    pub keep: Vec<(u64, Vec<u8>)>,
    /// The log must be rewritten (damage, or rows dropped).
    pub rewrite: bool,
}

/// Simulates replay over the engine's logs (in id order) and plans what to keep; findings
/// and lost rows go to `report`. `base` gives a region's state before its log records.
pub(crate) struct Planner<'a> {
    pub legacy: LegacyLayout,
    pub base: &'a mut dyn FnMut(&RegionKey) -> RegionBase,
    sims: HashMap<String, Sim>,
    /// The first seq after each damaged range that may have held records.
    gaps: Vec<u64>,
    /// Keep every record as it is (dense tables' self-contained records, or a directory
    /// whose manifest cannot be read): findings only.
    pub keep_all: bool,
}

impl<'a> Planner<'a> {
    pub fn new(legacy: LegacyLayout, base: &'a mut dyn FnMut(&RegionKey) -> RegionBase) -> Self {
        Planner {
            legacy,
            base,
            sims: HashMap::new(),
            gaps: Vec::new(),
            keep_all: false,
        }
    }

    /// Plans one engine log.
    pub fn plan_log(&mut self, log: &str, scan: &LogScan, report: &mut Report) -> LogPlan {
        let mut plan = LogPlan {
            log: log.to_string(),
            ..Default::default()
        };
        let mut last_seq: Option<u64> = None;
        let mut open_damage: Vec<usize> = Vec::new();
        for item in &scan.items {
            match item {
                Item::Damage(d) => {
                    plan.rewrite |= !d.torn_tail;
                    report.findings.push(damage_finding(log, d, last_seq));
                    if d.may_hold_records && !d.torn_tail {
                        open_damage.push(report.findings.len() - 1);
                    }
                }
                Item::Record(r) => {
                    report.records_checked += 1;
                    for f in open_damage.drain(..) {
                        let effect = &mut report.findings[f].effect;
                        effect.push_str(&format!(" and before seq {}", r.seq));
                        self.gap(r.seq);
                    }
                    last_seq = Some(r.seq);
                    if self.keep_all {
                        plan.keep.push((r.seq, r.payload.clone()));
                    } else {
                        let dropped = self.record(log, r.seq, &r.payload, &mut plan, report);
                        plan.rewrite |= dropped;
                    }
                }
            }
        }
        if !open_damage.is_empty() {
            // Damage at the log's end may still have introduced ids that records in a later
            // log name.
            self.gap(u64::MAX);
        }
        plan
    }

    /// A damaged range before seq `next`: opens every region it may have written to.
    fn gap(&mut self, next: u64) {
        self.gaps.push(next);
        for s in self.sims.values_mut() {
            if s.base.flushed_seq.saturating_add(1) < next && s.boundary.is_none() {
                s.boundary = Some(s.count());
            }
        }
    }

    fn sim(&mut self, key: &RegionKey) -> &mut Sim {
        let name = key.dir();
        if !self.sims.contains_key(&name) {
            let mut s = Sim::new((self.base)(key));
            if self
                .gaps
                .iter()
                .any(|&n| s.base.flushed_seq.saturating_add(1) < n)
            {
                s.boundary = Some(s.count());
            }
            self.sims.insert(name.clone(), s);
        }
        self.sims.get_mut(&name).expect("inserted")
    }

    /// Plans one record; returns whether it changed (rows dropped or record dropped).
    fn record(
        &mut self,
        log: &str,
        seq: u64,
        payload: &[u8],
        plan: &mut LogPlan,
        report: &mut Report,
    ) -> bool {
        let Ok((key, alen)) = record_region(payload, self.legacy) else {
            report.findings.push(Finding {
                file: log.to_string(),
                bytes: None,
                reason: format!("record seq {seq} verifies but has no valid region address"),
                effect: "its rows cannot be read; it is not kept".into(),
                blocks_start: true,
                repairable: true,
            });
            return true;
        };
        let sim = self.sim(&key);
        if sim.base.table.is_none() || seq <= sim.base.flushed_seq {
            plan.keep.push((seq, payload.to_vec()));
            return false; // replay skips it
        }
        let empty: &[u8] = &[];
        let decoded = RowBatch::decode_with_refs(&payload[alen..], |id| {
            Some(
                sim.base
                    .keys
                    .get(id as usize)
                    .map_or(empty, |k| k.as_slice()),
            )
        });
        let Ok((batch, refs)) = decoded else {
            report.findings.push(Finding {
                file: log.to_string(),
                bytes: None,
                reason: format!("record seq {seq} verifies but its rows do not decode"),
                effect: "its rows cannot be read; it is not kept".into(),
                blocks_start: true,
                repairable: true,
            });
            return true;
        };
        let mut kept = Vec::with_capacity(refs.len());
        let mut flagged = false;
        for (i, r) in refs.iter().enumerate() {
            let why = match *r {
                None => {
                    let k = batch.row(i).key;
                    if !sim.ids.contains_key(k) {
                        let id = sim.count();
                        sim.ids.insert(k.to_vec(), id);
                        sim.base.keys.push(k.to_vec());
                    }
                    None
                }
                Some(_) if sim.base.rebuilt => {
                    Some("its region's index was rebuilt, so the series id it names is unknown")
                }
                Some(id) if sim.boundary.is_some_and(|b| id >= b) => {
                    Some("a lost record before it may have introduced the series id it names")
                }
                Some(id) if id >= sim.count() => Some("it names a series id nothing introduced"),
                Some(_) => None,
            };
            if why.is_some() && !flagged {
                flagged = true;
                report.findings.push(Finding {
                    file: log.to_string(),
                    bytes: None,
                    reason: format!("record seq {seq} names series that cannot be attributed"),
                    effect:
                        "those rows are listed as lost and the record is rewritten without them"
                            .into(),
                    blocks_start: why == Some("it names a series id nothing introduced"),
                    repairable: true,
                });
            }
            match why {
                None => kept.push(i as u32),
                Some(reason) => report.lost_rows.push(LostRow {
                    log: log.to_string(),
                    seq,
                    table: sim.base.table.clone().unwrap_or_default(),
                    region: key.dir(),
                    series_id: r.unwrap_or(0),
                    time: batch.row(i).time.0,
                    reason: reason.to_string(),
                }),
            }
        }
        if kept.len() == refs.len() {
            plan.keep.push((seq, payload.to_vec()));
            return false;
        }
        if !kept.is_empty() {
            let mut out = payload[..alen].to_vec();
            batch.encode_rows_keyed(Some(&kept), |i| refs[i], &mut out);
            debug_assert!(out.len() <= payload.len(), "kept rows keep their encoding");
            plan.keep.push((seq, out));
        }
        true
    }
}

/// The finding for one damaged range of a log; the effect names the lost seqs (completed
/// with the next good seq once it is read).
fn damage_finding(log: &str, d: &Damage, last_seq: Option<u64>) -> Finding {
    let after = last_seq.map_or("the log's start".to_string(), |s| format!("seq {s}"));
    let effect = if d.torn_tail {
        format!(
            "an unfinished write at the log's end, which the server cuts itself; a record after {after} there, if it was acknowledged, is lost"
        )
    } else if !d.may_hold_records {
        "no record lost (every record around it verifies)".to_string()
    } else {
        let next = d.next.map_or(String::new(), |(o, s)| {
            format!(" (next valid frame at offset {o}, seq {s})")
        });
        format!("records written after {after}{next} are lost")
    };
    Finding {
        file: format!("{log}/{}", d.segment),
        bytes: Some([d.start, d.end]),
        reason: d.reason.clone(),
        effect,
        blocks_start: !d.torn_tail,
        repairable: !d.torn_tail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tempora_model::{FieldValue, RowBatchBuilder, TableId, Timestamp};
    use tempora_wal::ScannedRecord;

    const REGION: RegionKey = RegionKey {
        table: TableId(3),
        start: 0,
        end: 1000,
        bucket: 0,
        buckets: 1,
    };

    /// A record of rows `(series, by_id)`: `by_id` names the series by that id.
    fn record(seq: u64, rows: &[(&str, Option<u32>)]) -> Item {
        let mut b = RowBatchBuilder::new("m").unwrap();
        for (i, (s, _)) in rows.iter().enumerate() {
            let v = [("v", FieldValue::I64(i as i64))];
            b.push(&[("s", s)], &v, Timestamp(seq as i64 * 10 + i as i64))
                .unwrap();
        }
        let b = b.finish();
        let mut out = Vec::new();
        out.extend_from_slice(&(REGION.table.0 | crate::write::wal::SPAN_FLAG).to_le_bytes());
        out.extend_from_slice(&REGION.start.to_le_bytes());
        out.extend_from_slice(&REGION.end.to_le_bytes());
        out.extend_from_slice(&REGION.bucket.to_le_bytes());
        out.extend_from_slice(&REGION.buckets.to_le_bytes());
        b.encode_rows_keyed(None, |i| rows[i].1, &mut out);
        Item::Record(ScannedRecord {
            segment: "00000000000000000001.wal".into(),
            offset: 0,
            seq,
            payload: out,
        })
    }

    fn damage() -> Item {
        Item::Damage(tempora_wal::Damage {
            segment: "00000000000000000001.wal".into(),
            start: 100,
            end: 150,
            reason: "frame checksum mismatch".into(),
            next: Some((150, 9)),
            torn_tail: false,
            may_hold_records: true,
        })
    }

    fn key(s: &str) -> Vec<u8> {
        let mut b = RowBatchBuilder::new("m").unwrap();
        b.push(&[("s", s)], &[("v", FieldValue::I64(0))], Timestamp(0))
            .unwrap();
        b.finish().row(0).key.to_vec()
    }

    /// (kept records as (seq, row count), lost rows as (seq, series id)).
    type Outcome = (Vec<(u64, usize)>, Vec<(u64, u32)>);

    fn run(base: RegionBase, items: Vec<Item>) -> (Outcome, Report) {
        let mut f = |_: &RegionKey| base.clone();
        let mut p = Planner::new(LegacyLayout::default(), &mut f);
        let mut report = Report::default();
        let plan = p.plan_log("wal/0", &LogScan { items }, &mut report);
        let kept = plan
            .keep
            .iter()
            .map(|(seq, payload)| {
                let rows = RowBatch::decode_keyed(&payload[28..], |_| Some(&b"x"[..]))
                    .unwrap()
                    .len();
                (*seq, rows)
            })
            .collect();
        let lost = report
            .lost_rows
            .iter()
            .map(|r| (r.seq, r.series_id))
            .collect();
        ((kept, lost), report)
    }

    #[test]
    fn cases() {
        let table = || RegionBase {
            table: Some("db.m".into()),
            ..Default::default()
        };
        let cases: Vec<(&str, RegionBase, Vec<Item>, Outcome)> = vec![
            (
                "no damage keeps every record as it is",
                table(),
                vec![
                    record(1, &[("a", None), ("b", None)]),
                    record(2, &[("a", Some(0)), ("c", None)]),
                ],
                (vec![(1, 2), (2, 2)], vec![]),
            ),
            (
                "after a lost record, ids from the region's count on are dropped",
                table(),
                vec![
                    record(1, &[("a", None), ("b", None)]),
                    damage(),
                    record(9, &[("a", Some(0)), ("c", Some(2)), ("d", None)]),
                    record(10, &[("d", Some(3)), ("b", Some(1))]),
                ],
                (vec![(1, 2), (9, 2), (10, 1)], vec![(9, 2), (10, 3)]),
            ),
            (
                "a region flushed past the loss keeps its ids",
                RegionBase {
                    flushed_seq: 8,
                    keys: vec![key("a"), key("b"), key("c")],
                    ..table()
                },
                vec![damage(), record(9, &[("c", Some(2))])],
                (vec![(9, 1)], vec![]),
            ),
            (
                "records at or below the flushed seq are kept untouched",
                RegionBase {
                    flushed_seq: 5,
                    ..table()
                },
                vec![record(4, &[("z", Some(7))])],
                (vec![(4, 1)], vec![]),
            ),
            (
                "a rebuilt index keeps only rows that carry their key",
                RegionBase {
                    keys: vec![key("a")],
                    rebuilt: true,
                    ..table()
                },
                vec![record(1, &[("a", Some(0)), ("b", None)])],
                (vec![(1, 1)], vec![(1, 0)]),
            ),
            (
                "an id nothing introduced is dropped, and a record left empty goes",
                table(),
                vec![record(1, &[("q", Some(4))])],
                (vec![], vec![(1, 4)]),
            ),
            (
                "a dropped table's records are kept for replay to skip",
                RegionBase::default(),
                vec![record(1, &[("q", Some(4))])],
                (vec![(1, 1)], vec![]),
            ),
        ];
        for (name, base, items, want) in cases {
            let damaged = items.iter().any(|i| matches!(i, Item::Damage(_)));
            let (got, report) = run(base, items);
            assert_eq!(got, want, "{name}");
            // Every loss is a finding (check's exit code), and nothing else is.
            let findings = report.findings.iter().filter(|f| f.repairable).count();
            assert_eq!(findings > 0, damaged || !want.1.is_empty(), "{name}");
        }
    }
}
