//! The damage table: every byte of the last segment truncated, bit-flipped and zero-filled,
//! every record length corrupted, and seeded random damage in older segments. After each,
//! `Wal::open` must return exactly the valid prefix (tail damage) or `Corrupt` naming the
//! segment and the offset of the bad header/frame (damage that valid data follows).

mod common;

use common::*;
use tempora_wal::{LogScan, SeqNo, SyncPolicy, Wal, WalError, WalOptions, scan_log};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Expect {
    /// The first `n` records of the model.
    Prefix(usize),
    Corrupt {
        segment: String,
        offset: u64,
    },
}

struct Fixture {
    b: Backend,
    opts: WalOptions,
    recs: Records,
    snap: Vec<(String, Vec<u8>)>,
    names: Vec<String>,
    units: Vec<Vec<(usize, usize, Unit)>>,
    /// Records in all segments before segment `i`.
    before: Vec<usize>,
    cases: usize,
}

impl Fixture {
    fn new(b: Backend) -> Fixture {
        let opts = WalOptions {
            segment_size: 400,
            max_record_size: 4096,
            sync: SyncPolicy::Sync,
        };
        let recs = make_records(3, 60, 2, 40);
        let mut wal = Wal::open(b.store(), opts.clone()).unwrap();
        let mut rng = Rng(7);
        let mut i = 0;
        while i < recs.len() {
            let n = 1 + rng.below(3) as usize;
            for (seq, p) in recs[i..(i + n).min(recs.len())].iter() {
                wal.append(SeqNo(*seq), p).unwrap();
            }
            wal.commit().unwrap();
            i += n;
        }
        drop(wal);
        let names = b.segments();
        let units: Vec<_> = names.iter().map(|n| layout(&b.get(n).unwrap())).collect();
        let mut before = vec![0];
        for u in &units {
            let n = u
                .iter()
                .filter(|x| matches!(x.2, Unit::Record { .. }))
                .count();
            before.push(before.last().unwrap() + n);
        }
        assert!(names.len() >= 3, "{} segments", names.len());
        assert!(
            before[names.len()] - before[names.len() - 1] >= 3,
            "records in last"
        );
        let snap = b.snapshot();
        Fixture {
            b,
            opts,
            recs,
            snap,
            names,
            units,
            before,
            cases: 0,
        }
    }

    fn last(&self) -> usize {
        self.names.len() - 1
    }

    /// Records of the model that lie wholly before byte `b` of segment `seg`.
    fn prefix_before(&self, seg: usize, b: usize) -> usize {
        let in_seg = self.units[seg]
            .iter()
            .filter(|u| matches!(u.2, Unit::Record { .. }) && u.1 <= b)
            .count();
        self.before[seg] + in_seg
    }

    /// The expected outcome of damage to segment `seg` (`orig` -> `damaged`). `to_end`: the
    /// damage destroys everything from its first changed byte on (truncation, zero fill);
    /// otherwise it changes one unit and leaves the rest intact.
    fn expect(&self, seg: usize, orig: &[u8], damaged: &[u8], to_end: bool) -> Expect {
        let Some(d) = first_change(orig, damaged) else {
            return Expect::Prefix(self.recs.len());
        };
        let start = unit_start(&self.units[seg], d);
        if seg != self.last() {
            return self.corrupt(seg, start as u64);
        }
        let last_unit = self.units[seg].last().unwrap().0;
        if to_end {
            Expect::Prefix(self.prefix_before(seg, d))
        } else if start == last_unit && start != 0 {
            Expect::Prefix(self.prefix_before(seg, start))
        } else {
            self.corrupt(seg, start as u64)
        }
    }

    fn corrupt(&self, seg: usize, offset: u64) -> Expect {
        Expect::Corrupt {
            segment: self.names[seg].clone(),
            offset,
        }
    }

    /// Replaces segment `seg` with `damaged`, opens, checks, restores.
    fn run(&mut self, case: &str, seg: usize, damaged: Vec<u8>, want: Expect) {
        self.cases += 1;
        let name = self.names[seg].clone();
        self.b.put(&name, damaged.clone());
        // The forgiving scan of `tempora check`/`repair` reads the same bytes first (opening
        // may cut a torn tail).
        let scan = scan_log(&self.b.snapshot(), self.opts.max_record_size);
        self.check_scan(case, seg, &damaged, &want, &scan);
        let got = open_records(self.b.store(), &self.opts);
        match (&want, &got) {
            (Expect::Prefix(n), Ok(recs)) => {
                assert!(
                    recs == &self.recs[..*n],
                    "{case}: got {} records, want {n}",
                    recs.len()
                );
                self.check_cut(case, *n);
                if self.cases.is_multiple_of(4) || matches!(self.b, Backend::Mem(_)) {
                    self.append_after(case, *n);
                }
            }
            (
                Expect::Corrupt { segment, offset },
                Err(WalError::Corrupt {
                    segment: s,
                    offset: o,
                    reason,
                }),
            ) => {
                assert_eq!((s, o), (segment, offset), "{case}: {reason}");
            }
            _ => panic!("{case}: want {want:?}, got {:?}", got.map(|r| r.len())),
        }
        self.b.restore(&self.snap);
    }

    /// The scan refuses exactly what `Wal::open` refuses, at the same place, and salvages
    /// every record whose bytes the damage did not touch (and only the model's records); a
    /// fresh log written from them opens with exactly them.
    fn check_scan(&self, case: &str, seg: usize, damaged: &[u8], want: &Expect, scan: &LogScan) {
        match want {
            Expect::Prefix(_) => assert!(!scan.refuses_open(), "{case}: {:?}", scan_damage(scan)),
            Expect::Corrupt { segment, offset } => {
                assert!(scan.refuses_open(), "{case}: scan accepts");
                assert!(
                    scan.damage()
                        .any(|d| !d.torn_tail && &d.segment == segment && d.start == *offset),
                    "{case}: no damage at {segment}:{offset} in {:?}",
                    scan_damage(scan)
                );
            }
        }
        let orig = &self
            .snap
            .iter()
            .find(|(n, _)| n == &self.names[seg])
            .unwrap()
            .1;
        let touched = changed_range(orig, damaged);
        let mut want_kept = Vec::new();
        for (i, units) in self.units.iter().enumerate() {
            let mut k = self.before[i];
            for &(start, end, unit) in units {
                if let Unit::Record { .. } = unit {
                    let hit = i == seg && touched.is_some_and(|(a, b)| start < b && a < end);
                    if !hit {
                        want_kept.push(self.recs[k].clone());
                    }
                    k += 1;
                }
            }
        }
        let kept: Vec<(u64, Vec<u8>)> =
            scan.records().map(|r| (r.seq, r.payload.clone())).collect();
        assert!(
            kept.iter().all(|r| self.recs.contains(r)),
            "{case}: a record not written"
        );
        assert!(
            want_kept.iter().all(|r| kept.contains(r)),
            "{case}: salvaged {} records, {} were untouched",
            kept.len(),
            want_kept.len()
        );
        if matches!(self.b, Backend::Mem(_)) && self.cases.is_multiple_of(16) {
            let fresh = Backend::mem();
            let mut wal = Wal::open(fresh.store(), self.opts.clone()).unwrap();
            write(&mut wal, &kept, 3);
            drop(wal);
            assert_eq!(
                open_records(fresh.store(), &self.opts).unwrap(),
                kept,
                "{case}"
            );
        }
    }

    /// After recovering `n` records the last segment ends right after record `n`, or is gone.
    fn check_cut(&self, case: &str, n: usize) {
        let last = self.last();
        let tail_name = &self.names[last];
        match self.b.get(tail_name) {
            None => assert!(n <= self.before[last], "{case}: last segment removed"),
            Some(data) => {
                let kept = n - self.before[last];
                assert!(kept > 0, "{case}: empty last segment kept");
                let end = self.units[last][kept].1;
                assert_eq!(data.len(), end, "{case}: cut length");
            }
        }
    }

    /// The recovered log accepts new records, and they follow the prefix without garbage.
    fn append_after(&self, case: &str, n: usize) {
        let mut wal = Wal::open(self.b.store(), self.opts.clone()).unwrap();
        let new = (1000, b"after recovery".to_vec());
        wal.append(SeqNo(new.0), &new.1).unwrap();
        wal.commit().unwrap();
        drop(wal);
        let mut want = self.recs[..n].to_vec();
        want.push(new);
        let got = open_records(self.b.store(), &self.opts).unwrap();
        assert!(got == want, "{case}: append after recovery");
    }
}

/// The first byte where `damaged` differs from `orig` (its end, if it is a shorter prefix).
fn first_change(orig: &[u8], damaged: &[u8]) -> Option<usize> {
    let common = orig.iter().zip(damaged).take_while(|(a, b)| a == b).count();
    (common < orig.len().max(damaged.len())).then_some(common)
}

/// The bytes of `orig` that `damaged` changed, `[first, last]` as a half-open range (to the
/// end of `orig` when `damaged` is shorter).
fn changed_range(orig: &[u8], damaged: &[u8]) -> Option<(usize, usize)> {
    let first = first_change(orig, damaged)?;
    if damaged.len() < orig.len() {
        return Some((first, orig.len()));
    }
    let last = (0..orig.len()).rev().find(|&i| orig[i] != damaged[i]);
    Some((first, last.map_or(first, |l| l + 1)))
}

fn scan_damage(scan: &LogScan) -> Vec<(String, u64, String)> {
    scan.damage()
        .map(|d| (d.segment.clone(), d.start, d.reason.clone()))
        .collect()
}

fn flip(data: &[u8], b: usize) -> Vec<u8> {
    let mut d = data.to_vec();
    d[b] ^= 1 << (b % 8);
    d
}

fn zero_from(data: &[u8], b: usize) -> Vec<u8> {
    let mut d = data.to_vec();
    d[b..].fill(0);
    d
}

fn set_len(data: &[u8], at: usize, len: u32) -> Vec<u8> {
    let mut d = data.to_vec();
    d[at..at + 4].copy_from_slice(&len.to_le_bytes());
    d
}

fn record_len(data: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(data[at..at + 4].try_into().unwrap())
}

/// Applies `damaged` to segment `seg` and checks the outcome `Fixture::expect` predicts.
fn damage(fx: &mut Fixture, case: String, seg: usize, orig: &[u8], damaged: Vec<u8>, to_end: bool) {
    let want = fx.expect(seg, orig, &damaged, to_end);
    fx.run(&case, seg, damaged, want);
}

fn last_segment_every_byte(fx: &mut Fixture) {
    let seg = fx.last();
    let data = fx.b.get(&fx.names[seg]).unwrap();
    for b in 0..data.len() {
        damage(
            fx,
            format!("last: truncate at {b}"),
            seg,
            &data,
            data[..b].to_vec(),
            true,
        );
        damage(
            fx,
            format!("last: zero from {b}"),
            seg,
            &data,
            zero_from(&data, b),
            true,
        );
        damage(
            fx,
            format!("last: flip bit at {b}"),
            seg,
            &data,
            flip(&data, b),
            false,
        );
    }
}

fn every_frame_length(fx: &mut Fixture, seg: usize) {
    let data = fx.b.get(&fx.names[seg]).unwrap();
    let frames: Vec<_> = fx.units[seg]
        .iter()
        .filter(|u| u.2 != Unit::Header)
        .cloned()
        .collect();
    for (start, _, unit) in frames {
        let len = record_len(&data, start);
        let values = [
            0,
            8,
            4097,
            u32::MAX - 1,
            u32::MAX,
            len.wrapping_sub(1),
            len.wrapping_add(1),
        ];
        for v in values
            .into_iter()
            .chain([len.wrapping_add(1000)])
            .filter(|&v| v != len)
        {
            let case = format!("segment {seg} {unit:?} at {start}: length {len} -> {v}");
            damage(fx, case, seg, &data, set_len(&data, start, v), false);
        }
    }
}

fn older_segments_random(fx: &mut Fixture, seed: u64) {
    let mut rng = Rng(seed);
    for seg in 0..fx.last() {
        let data = fx.b.get(&fx.names[seg]).unwrap();
        for _ in 0..25 {
            let b = rng.below(data.len() as u64) as usize;
            damage(
                fx,
                format!("older {seg}: truncate at {b}"),
                seg,
                &data,
                data[..b].to_vec(),
                true,
            );
            damage(
                fx,
                format!("older {seg}: zero from {b}"),
                seg,
                &data,
                zero_from(&data, b),
                true,
            );
            damage(
                fx,
                format!("older {seg}: flip bit at {b}"),
                seg,
                &data,
                flip(&data, b),
                false,
            );
        }
    }
}

fn named_cases(fx: &mut Fixture) {
    let last = fx.last();
    let n = fx.recs.len();
    let tail = fx.b.get(&fx.names[last]).unwrap();
    let with = |extra: &[u8]| [&tail[..], extra].concat();
    let garbage: Vec<u8> = (0..1000u64).map(|i| splitmix(i) as u8).collect();
    let stale_frame = tail[fx.units[last][1].0..fx.units[last][1].1].to_vec();
    let older = fx.b.get(&fx.names[0]).unwrap();
    let cases: Vec<(&str, usize, Vec<u8>, Expect)> = vec![
        (
            "last: preallocated zeros",
            last,
            with(&[0; 4096]),
            Expect::Prefix(n),
        ),
        (
            "last: garbage after",
            last,
            with(&garbage),
            Expect::Prefix(n),
        ),
        (
            "last: a stale older frame after",
            last,
            with(&stale_frame),
            fx.corrupt(last, tail.len() as u64),
        ),
        (
            "last: empty file",
            last,
            vec![],
            Expect::Prefix(fx.before[last]),
        ),
        (
            "last: header only",
            last,
            tail[..HEADER_LEN].to_vec(),
            Expect::Prefix(fx.before[last]),
        ),
        (
            "older: garbage after the seal",
            0,
            [&older[..], &garbage].concat(),
            fx.corrupt(0, older.len() as u64),
        ),
        ("older: empty file", 0, vec![], fx.corrupt(0, 0)),
    ];
    for (case, seg, data, want) in cases {
        fx.run(case, seg, data, want);
    }
}

fn missing_segments(fx: &mut Fixture) {
    // Removing the oldest segment is what truncate_before does: the rest opens.
    fx.b.remove(&fx.names[0]);
    let got = open_records(fx.b.store(), &fx.opts).unwrap();
    assert_eq!(got, fx.recs[fx.before[1]..], "without the first segment");
    fx.b.restore(&fx.snap);
    // A missing segment in the middle is named by the segment after the gap.
    fx.b.remove(&fx.names[1]);
    let scan = scan_log(&fx.b.snapshot(), fx.opts.max_record_size);
    let gap: Vec<_> = scan.damage().filter(|d| !d.torn_tail).collect();
    assert_eq!(gap.len(), 1, "{:?}", scan_damage(&scan));
    assert_eq!((&gap[0].segment, gap[0].start), (&fx.names[2], 0));
    assert!(
        gap[0].reason.contains("a segment is missing"),
        "{}",
        gap[0].reason
    );
    let kept: Vec<_> = scan.records().map(|r| (r.seq, r.payload.clone())).collect();
    let want: Vec<_> = [&fx.recs[..fx.before[1]], &fx.recs[fx.before[2]..]].concat();
    assert_eq!(kept, want, "every record of the other segments is salvaged");
    let got = open_records(fx.b.store(), &fx.opts);
    match got {
        Err(WalError::Corrupt {
            segment, offset: 0, ..
        }) => assert_eq!(segment, fx.names[2]),
        other => panic!("missing middle segment: {:?}", other.map(|r| r.len())),
    }
    fx.b.restore(&fx.snap);
}

#[test]
fn damage_table_mem() {
    let mut fx = Fixture::new(Backend::mem());
    last_segment_every_byte(&mut fx);
    let last = fx.last();
    every_frame_length(&mut fx, last);
    every_frame_length(&mut fx, 0);
    older_segments_random(&mut fx, 1);
    named_cases(&mut fx);
    missing_segments(&mut fx);
    assert!(fx.cases > 1000, "{} cases", fx.cases);
}

#[test]
fn damage_table_fs() {
    let mut fx = Fixture::new(Backend::fs());
    last_segment_every_byte(&mut fx);
    let last = fx.last();
    every_frame_length(&mut fx, last);
    older_segments_random(&mut fx, 2);
    named_cases(&mut fx);
    missing_segments(&mut fx);
}
