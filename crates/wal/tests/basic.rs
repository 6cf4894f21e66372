//! The log's API on both backends: round trips, rolling, truncation, replay.

mod common;

use common::*;
use tempora_wal::{SeqNo, SyncPolicy, Wal, WalError, WalOptions};

fn small(segment_size: u64) -> WalOptions {
    WalOptions {
        segment_size,
        max_record_size: 4096,
        sync: SyncPolicy::Sync,
    }
}

#[test]
fn round_trip_and_reopen() {
    for (backend_name, b) in Backend::both() {
        let opts = small(1 << 20);
        let recs = make_records(1, 100, 1, 300);
        let mut wal = Wal::open(b.store(), opts.clone()).unwrap();
        assert_eq!(wal.last_seq(), None);
        assert_eq!(replay_all(&wal, 2).unwrap(), vec![]);
        write(&mut wal, &recs, 7);
        assert_eq!(wal.last_seq(), Some(SeqNo(100)));
        assert_eq!(
            replay_all(&wal, 2).unwrap(),
            recs,
            "{backend_name} before reopen"
        );
        let st = wal.stats();
        assert_eq!((st.commits, st.records, st.segments), (15, 100, 1));
        assert_eq!(st.syncs, 15, "{backend_name}: one fsync per commit");
        assert_eq!(st.bytes_written, st.log_bytes);
        drop(wal);
        assert_eq!(
            open_records(b.store(), &opts).unwrap(),
            recs,
            "{backend_name}"
        );
        // Appending after a reopen continues the same log.
        let mut wal = Wal::open(b.store(), opts.clone()).unwrap();
        let more = make_records(101, 10, 2, 300);
        write(&mut wal, &more, 3);
        drop(wal);
        let all: Records = recs.iter().chain(&more).cloned().collect();
        assert_eq!(
            open_records(b.store(), &opts).unwrap(),
            all,
            "{backend_name}"
        );
    }
}

#[test]
fn segments_roll_at_segment_size() {
    for (backend_name, b) in Backend::both() {
        let opts = small(1000);
        let recs = make_records(10, 200, 3, 100);
        let mut wal = Wal::open(b.store(), opts.clone()).unwrap();
        write(&mut wal, &recs, 2);
        let names = b.segments();
        assert!(
            names.len() >= 10,
            "{backend_name}: {} segments",
            names.len()
        );
        assert_eq!(wal.stats().segments, names.len());
        // Named by their first record's seq; all but the last end with a seal; sizes bounded.
        for (i, name) in names.iter().enumerate() {
            let data = b.get(name).unwrap();
            let units = layout(&data);
            let Unit::Record { seq } = units[1].2 else {
                panic!("{name}: no first record")
            };
            assert_eq!(name, &format!("{seq:020}.wal"));
            let last = i == names.len() - 1;
            assert_eq!(
                units.last().unwrap().2 == Unit::Seal,
                !last,
                "{name} sealed"
            );
            assert!(data.len() <= 1000, "{name} has {} bytes", data.len());
        }
        drop(wal);
        assert_eq!(
            open_records(b.store(), &opts).unwrap(),
            recs,
            "{backend_name}"
        );
    }
}

#[test]
fn one_commit_larger_than_a_segment_stays_whole() {
    let b = Backend::mem();
    let opts = small(200);
    let recs = make_records(1, 30, 1, 100);
    let mut wal = Wal::open(b.store(), opts.clone()).unwrap();
    write(&mut wal, &recs, 30);
    assert_eq!(b.segments().len(), 1);
    write(&mut wal, &make_records(31, 1, 1, 10), 1);
    assert_eq!(b.segments().len(), 2, "the next commit rolls");
}

#[test]
fn remove_all_before_empties_a_flushed_log_only() {
    for (backend_name, b) in Backend::both() {
        let opts = small(600);
        let recs = make_records(1, 120, 1, 60);
        let mut wal = Wal::open(b.store(), opts.clone()).unwrap();
        write(&mut wal, &recs, 3);
        assert!(b.segments().len() >= 4, "{backend_name}");
        for (case, seq) in [("record 120 is not below 120", 120), ("nor below 1", 1)] {
            assert!(
                !wal.remove_all_before(SeqNo(seq)).unwrap(),
                "{backend_name}: {case}"
            );
            assert_eq!(replay_all(&wal, 2).unwrap(), recs, "{backend_name}: {case}");
        }
        assert!(wal.remove_all_before(SeqNo(121)).unwrap(), "{backend_name}");
        assert!(b.segments().is_empty(), "{backend_name}: no segment stays");
        // Appending goes on in a new segment, which a reopen reads.
        let more = make_records(121, 130, 1, 60);
        write(&mut wal, &more, 2);
        drop(wal);
        let wal = Wal::open(b.store(), opts.clone()).unwrap();
        assert_eq!(replay_all(&wal, 2).unwrap(), more, "{backend_name}");
    }
}

#[test]
fn truncate_before_removes_whole_old_segments() {
    for (backend_name, b) in Backend::both() {
        let opts = small(600);
        let recs = make_records(1, 120, 1, 60);
        let mut wal = Wal::open(b.store(), opts.clone()).unwrap();
        write(&mut wal, &recs, 3);
        let before = b.segments();
        assert!(before.len() >= 4, "{backend_name}");
        let third_first: u64 = before[2][..20].parse().unwrap();
        let cases = [
            ("nothing below the first", 1, before.len()),
            (
                "inside segment 1 keeps it",
                third_first - 1,
                before.len() - 1,
            ),
            (
                "at segment 2's first removes 0 and 1",
                third_first,
                before.len() - 2,
            ),
            ("beyond the end keeps the last", 10_000, 1),
        ];
        for (case, seq, want) in cases {
            wal.truncate_before(SeqNo(seq)).unwrap();
            assert_eq!(b.segments().len(), want, "{backend_name}: {case}");
            assert_eq!(wal.stats().segments, want, "{backend_name}: {case}");
            let got = replay_all(&wal, 2).unwrap();
            assert!(
                got.first().unwrap().0 <= seq.min(120),
                "{backend_name}: {case}"
            );
            assert_eq!(got.last(), recs.last(), "{backend_name}: {case}");
        }
        drop(wal);
        let wal = Wal::open(b.store(), opts.clone()).unwrap();
        assert_eq!(
            wal.last_seq(),
            Some(SeqNo(120)),
            "{backend_name}: last_seq survives"
        );
    }
}

#[test]
fn replay_from_the_middle_and_thread_counts_agree() {
    let b = Backend::fs();
    let opts = small(700);
    let recs = make_records(5, 300, 2, 120);
    let mut wal = Wal::open(b.store(), opts.clone()).unwrap();
    write(&mut wal, &recs, 4);
    let one = replay_all(&wal, 1).unwrap();
    assert_eq!(one, recs);
    for threads in [0, 2, 3, 8] {
        assert_eq!(replay_all(&wal, threads).unwrap(), one, "threads {threads}");
    }
    let cases = [
        ("before the first", 0, 0),
        ("exact first", 5, 0),
        ("between seqs", 100, 48),
        ("exact middle", 301, 148),
        ("last", 603, 299),
        ("after the last", 604, 300),
    ];
    for (case, from, skip) in cases {
        for threads in [1, 2] {
            let got = replay_from(&wal, from, threads).unwrap();
            assert_eq!(got, recs[skip..], "{case} threads {threads}");
        }
    }
}

#[test]
fn replay_stops_at_the_callback_error() {
    let b = Backend::mem();
    let mut wal = Wal::open(b.store(), small(300)).unwrap();
    write(&mut wal, &make_records(1, 100, 1, 50), 1);
    #[derive(Debug)]
    enum E {
        Wal(#[allow(dead_code)] WalError),
        Stop(u64),
    }
    impl From<WalError> for E {
        fn from(e: WalError) -> E {
            E::Wal(e)
        }
    }
    let mut seen = 0;
    let r = wal.replay(SeqNo(0), 2, |seq, _| {
        seen += 1;
        if seq.0 == 40 {
            Err(E::Stop(seq.0))
        } else {
            Ok(())
        }
    });
    assert!(matches!(r, Err(E::Stop(40))), "{r:?}");
    assert_eq!(seen, 40);
}

#[test]
fn append_rejects_bad_input() {
    let b = Backend::mem();
    let mut wal = Wal::open(b.store(), small(1000)).unwrap();
    wal.append(SeqNo(5), b"a").unwrap();
    let too_big = vec![0u8; 4097];
    let cases: [(&str, u64, &[u8]); 3] = [
        ("equal seq", 5, b"x"),
        ("lower seq", 4, b"x"),
        ("too large", 6, &too_big),
    ];
    for (case, seq, p) in cases {
        let e = wal.append(SeqNo(seq), p).unwrap_err();
        let ok = match case {
            "too large" => matches!(
                e,
                WalError::RecordTooLarge {
                    size: 4097,
                    limit: 4096
                }
            ),
            _ => matches!(e, WalError::SeqNotIncreasing { last: SeqNo(5), .. }),
        };
        assert!(ok, "{case}: {e}");
    }
    wal.append(SeqNo(6), &[]).unwrap();
    wal.commit().unwrap();
    assert_eq!(
        replay_all(&wal, 1).unwrap(),
        vec![(5, b"a".to_vec()), (6, vec![])]
    );
    assert!(
        wal.append(SeqNo(6), b"").is_err(),
        "committed seqs count too"
    );
}

#[test]
fn invalid_options_are_named() {
    let b = Backend::mem();
    let cases = [
        (
            "zero segment",
            WalOptions {
                segment_size: 0,
                ..WalOptions::default()
            },
        ),
        (
            "huge records",
            WalOptions {
                max_record_size: 2 << 30,
                ..WalOptions::default()
            },
        ),
    ];
    for (case, opts) in cases {
        let r = Wal::open(b.store(), opts);
        assert!(matches!(r, Err(WalError::InvalidOptions(_))), "{case}");
    }
    let d = WalOptions::default();
    assert_eq!(
        (d.segment_size, d.max_record_size, d.sync),
        (64 << 20, 64 << 20, SyncPolicy::Sync)
    );
}

#[test]
fn empty_commits_and_foreign_files_are_harmless() {
    let b = Backend::fs();
    b.put("README", b"not a segment".to_vec());
    b.put("42.wal", b"short name, not a segment".to_vec());
    let mut wal = Wal::open(b.store(), small(1000)).unwrap();
    wal.commit().unwrap();
    assert!(b.segments().iter().all(|n| n == "42.wal"));
    write(&mut wal, &make_records(1, 3, 1, 10), 3);
    wal.commit().unwrap();
    assert_eq!(wal.stats().commits, 1);
    drop(wal);
    assert_eq!(open_records(b.store(), &small(1000)).unwrap().len(), 3);
    assert_eq!(b.get("README").unwrap(), b"not a segment");
}

#[test]
fn sync_policies() {
    let cases = [
        ("sync", SyncPolicy::Sync, 10),
        ("none", SyncPolicy::None, 0),
        (
            "long interval",
            SyncPolicy::Interval(std::time::Duration::from_secs(3600)),
            0,
        ),
        (
            "zero interval",
            SyncPolicy::Interval(std::time::Duration::ZERO),
            10,
        ),
    ];
    for (case, sync, syncs) in cases {
        let b = Backend::mem();
        let opts = WalOptions {
            sync,
            ..small(1 << 20)
        };
        let mut wal = Wal::open(b.store(), opts).unwrap();
        write(&mut wal, &make_records(1, 10, 1, 10), 1);
        assert_eq!(wal.stats().syncs, syncs, "{case}");
        wal.sync().unwrap();
        let Backend::Mem(m) = &b else { unreachable!() };
        m.crash();
        assert_eq!(
            open_records(b.store(), &small(1 << 20)).unwrap().len(),
            10,
            "{case}"
        );
    }
}

#[test]
fn sealed_last_segment_reopens_and_rolls() {
    // A crash right after sealing, before the next segment exists.
    let b = Backend::mem();
    let opts = small(300);
    let mut wal = Wal::open(b.store(), opts.clone()).unwrap();
    let recs = make_records(1, 20, 1, 40);
    write(&mut wal, &recs, 1);
    drop(wal);
    let names = b.segments();
    let last = names.last().unwrap().clone();
    b.remove(&last);
    let kept: Records = recs
        .iter()
        .filter(|r| format!("{:020}.wal", r.0) < last)
        .cloned()
        .collect();
    let mut wal = Wal::open(b.store(), opts.clone()).unwrap();
    assert_eq!(replay_all(&wal, 2).unwrap(), kept);
    write(&mut wal, &make_records(100, 2, 1, 40), 1);
    drop(wal);
    let mut all = kept.clone();
    all.extend(make_records(100, 2, 1, 40));
    assert_eq!(open_records(b.store(), &opts).unwrap(), all);
}
