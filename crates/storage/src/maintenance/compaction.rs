//! Time-window compaction: each window of a region ends up in one file, without duplicates.
//! Windows count from the partition's start. They are `compaction_window_ns` wide (or a
//! twelfth of the partition, when wider) while a partition is current, and the whole
//! partition once it has ended ([`region_window`]).
//!
//! The picker is a pure function over file metadata. A file whose rows span several windows,
//! or a closed window holding two or more files, or the active window holding `trigger` files,
//! starts a job; the job takes every file overlapping the same windows (transitively), merges
//! them (newest write wins field by field), and writes one file per window. The manifest edit
//! that swaps inputs for outputs is the commit point; inputs are deleted once no reader holds
//! them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use arrow::array::{AsArray, BooleanArray};
use arrow::datatypes::Int64Type;

use parking_lot::Mutex;

use crate::catalog::{FileHandle, Region, Table};
use crate::clock::Clock;
use crate::error::Result;
use crate::error::StorageError;
use crate::files::manifest::Edit;
use crate::files::sst::{SstFilter, read_sst};
use crate::maintenance::Output;
use crate::maintenance::output::PendingFile;
use crate::maintenance::slices;
use crate::maintenance::tombstone;
use crate::metrics::Metrics;
use crate::read::run::{SortedRun, merge_runs};
use crate::read::sst_cache::CachedSst;
use bytes::Bytes;
use std::sync::atomic::Ordering;

/// Time and key range of a file, for the picker.
#[derive(Debug, Clone, PartialEq)]
pub struct FileSpan {
    pub id: u64,
    pub min_time: i64,
    pub max_time: i64,
    /// Smallest and largest key; `None`: every key.
    pub keys: Option<(Vec<u8>, Vec<u8>)>,
}

/// The most files of `files` one key falls in (a file without a key range holds every key).
/// Files written slice by slice (`slices`) share a window without overlapping: depth 1.
fn key_depth(files: &[&FileSpan]) -> usize {
    // The deepest point of a set of ranges is the start of one of them.
    let holds = |g: &FileSpan, k: Option<&[u8]>| match (&g.keys, k) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some((lo, hi)), Some(k)) => lo.as_slice() <= k && k <= hi.as_slice(),
    };
    files
        .iter()
        .map(|f| {
            let start = f.keys.as_ref().map(|(lo, _)| lo.as_slice());
            files.iter().filter(|g| holds(g, start)).count()
        })
        .max()
        .unwrap_or(0)
}

/// Groups of file ids to compact together. `active_window` is the window index of "now":
/// windows at or after it need `trigger` files, older ones two.
pub fn pick(
    files: &[FileSpan],
    window_ns: i64,
    active_window: i64,
    trigger: usize,
) -> Vec<Vec<u64>> {
    assert!(window_ns > 0 && trigger >= 2);
    let span = |f: &FileSpan| {
        (
            f.min_time.div_euclid(window_ns),
            f.max_time.div_euclid(window_ns),
        )
    };
    let mut per_window: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
    for (i, f) in files.iter().enumerate() {
        let (a, b) = span(f);
        for w in a..=b.min(a + 10_000) {
            per_window.entry(w).or_default().push(i);
        }
    }
    // Files of a window that overlap by key, at most: the reads a key costs there.
    let needs = |w: i64, v: &[usize]| {
        let in_window: Vec<&FileSpan> = v.iter().map(|&i| &files[i]).collect();
        let depth = key_depth(&in_window);
        if w >= active_window {
            depth >= trigger
        } else {
            depth >= 2
        }
    };
    let mut seeds: BTreeSet<usize> = files
        .iter()
        .enumerate()
        .filter(|(_, f)| span(f).0 != span(f).1)
        .map(|(i, _)| i)
        .collect();
    for (w, v) in &per_window {
        if needs(*w, v) {
            seeds.extend(v.iter().copied());
        }
    }
    // Connected components of seed files through shared windows.
    let mut taken = vec![false; files.len()];
    let mut groups = Vec::new();
    for s in seeds {
        if taken[s] {
            continue;
        }
        let mut stack = vec![s];
        taken[s] = true;
        let mut group = Vec::new();
        while let Some(i) = stack.pop() {
            group.push(files[i].id);
            let (a, b) = span(&files[i]);
            for w in a..=b.min(a + 10_000) {
                for &j in &per_window[&w] {
                    if !taken[j] {
                        taken[j] = true;
                        stack.push(j);
                    }
                }
            }
        }
        group.sort_unstable();
        groups.push(group);
    }
    groups
}

/// The compaction window of a region whose partition is `[start, end)`: `window_ns` (or a
/// twelfth of the partition, when wider: a year-wide partition of hourly points would
/// otherwise be cut into files of two points per series) while the partition can still take
/// current writes, the whole partition once it has ended (so a past partition is one file per
/// region, and a scan over it opens one file instead of one per window).
pub fn region_window(start: i64, end: i64, window_ns: i64, now_ns: i64) -> i64 {
    let width = end.saturating_sub(start).max(1);
    if end <= now_ns {
        width
    } else {
        window_ns.max(width / 12)
    }
}

/// When compaction runs and how wide its windows are.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CompactionOptions {
    pub window_ns: i64,
    /// Files in the active window that start a compaction.
    pub trigger_files: usize,
    /// Rows a compaction holds decoded at once, in bytes (`slices`).
    pub memory_bytes: usize,
    /// An output file past this size is closed and the next begun.
    pub target_file_bytes: usize,
}

/// What compaction needs: where it writes and commits, its options, the clock that says
/// which partitions have ended, and counters. Holds the lock that keeps two compactions from
/// touching the same files.
pub(crate) struct Compactor {
    pub out: Output,
    pub opts: CompactionOptions,
    pub clock: Arc<dyn Clock>,
    pub metrics: Arc<Metrics>,
    only_one: Mutex<()>,
}

impl Compactor {
    pub fn new(
        out: Output,
        opts: CompactionOptions,
        clock: Arc<dyn Clock>,
        metrics: Arc<Metrics>,
    ) -> Self {
        Self {
            out,
            opts,
            clock,
            metrics,
            only_one: Mutex::new(()),
        }
    }
}

/// Compacts every region that needs it; returns the number of jobs run.
pub(crate) fn compact_all(c: &Compactor) -> Result<usize> {
    let _only_one = c.only_one.lock();
    let mut jobs = 0;
    let now = c.clock.now_ns();
    for table in c.out.catalog.tables() {
        for region in table.all_regions() {
            let origin = region.key.start;
            let window = region_window(origin, region.key.end, c.opts.window_ns, now);
            let active = now.saturating_sub(origin).div_euclid(window);
            let files = region.files.read().clone();
            // Times relative to the partition's start, so windows count from it.
            let spans: Vec<FileSpan> = files
                .iter()
                .map(|f| FileSpan {
                    id: f.meta.id,
                    min_time: f.meta.min_time.saturating_sub(origin),
                    max_time: f.meta.max_time.saturating_sub(origin),
                    keys: f.meta.keys(),
                })
                .collect();
            for group in pick(&spans, window, active, c.opts.trigger_files) {
                let inputs: Vec<Arc<FileHandle>> = files
                    .iter()
                    .filter(|f| group.contains(&f.meta.id))
                    .cloned()
                    .collect();
                let started = std::time::Instant::now();
                compact_group(c, &table, &region, &inputs, window)?;
                c.metrics
                    .compaction_micros
                    .add(started.elapsed().as_micros() as u64);
                jobs += 1;
            }
            jobs += purge(c, &table, &region, window)?;
        }
    }
    Ok(jobs)
}

/// Rewrites the files of a region that hold rows its tombstones hide, then drops the
/// tombstones nothing needs any more. Returns the number of rewrite jobs (0 or 1).
fn purge(c: &Compactor, table: &Table, region: &Arc<Region>, window_ns: i64) -> Result<usize> {
    let tombs = region.tombstones.read().clone();
    if tombs.is_empty() {
        return Ok(0);
    }
    let dirty: Vec<Arc<FileHandle>> = region
        .files
        .read()
        .iter()
        .filter(|f| !tombstone::for_file(&tombs, &f.meta).is_empty())
        .cloned()
        .collect();
    let jobs = if dirty.is_empty() {
        0
    } else {
        compact_group(c, table, region, &dirty, window_ns)?;
        1
    };
    // Memtable state first, files second: a flush adds its file before it advances
    // flushed_seq and releases its parts, so a flush seen finished here has its file in the
    // list read below, and that file is checked like the others.
    let empty = region.active.lock().is_empty() && region.frozen.read().is_empty();
    let flushed = match empty {
        true => u64::MAX,
        false => region.flushed_seq.load(Ordering::SeqCst),
    };
    let files = region.files.read().clone();
    let metas: Vec<&crate::files::manifest::FileMeta> = files.iter().map(|f| &f.meta).collect();
    let seqs = tombstone::droppable(&tombs, &metas, flushed);
    if !seqs.is_empty() {
        c.out.catalog.commit(vec![Edit::DropTombstones {
            region: region.key,
            seqs: seqs.clone(),
        }])?;
        let mut live = region.tombstones.write();
        *live = Arc::new(
            live.iter()
                .filter(|t| !seqs.contains(&t.seq))
                .cloned()
                .collect(),
        );
        tracing::debug!(region = ?region.key, dropped = seqs.len(), "tombstones compacted away");
    }
    Ok(jobs)
}

fn compact_group(
    c: &Compactor,
    table: &Table,
    region: &Arc<Region>,
    inputs: &[Arc<FileHandle>],
    window_ns: i64,
) -> Result<()> {
    let fields = table.fields();
    let tags = table.tags();
    let tombs = region.tombstones.read().clone();
    let purged = tombs.iter().map(|t| t.seq).max().unwrap_or(0);
    let files = inputs
        .iter()
        .map(|f| CachedSst::decode(&f.meta.path, c.out.store.get(&f.meta.path)?))
        .collect::<Result<Vec<_>>>()?;
    let rows: u64 = inputs.iter().map(|f| f.meta.rows).sum();
    // Merging every file of the region: the output's rows can share its newest sequence.
    let whole = region
        .files
        .read()
        .iter()
        .all(|f| inputs.iter().any(|i| i.meta.id == f.meta.id));
    let newest = inputs.iter().map(|f| f.meta.max_seq).max().unwrap_or(0);
    let keys = slice_keys(region, rows, fields.len(), c.opts.memory_bytes)?;
    let mut added = Vec::new();
    let mut written = Vec::new();
    if keys.len() > 1 {
        c.metrics.compaction_slices.add(keys.len() as u64);
    }
    let rollups = table.effective().rollups;
    let new_file = || PendingFile::new(&tags, &fields, &c.out.sst, &rollups, c.out.rollup_min_rows);
    let result = (|| -> Result<()> {
        let mut read = 0u64;
        // One file being written per window; slices append to it in key order.
        let mut pending: BTreeMap<i64, PendingFile> = BTreeMap::new();
        for slice in &keys {
            let filter = SstFilter {
                keys: slice.clone(),
                ..SstFilter::default()
            };
            let mut runs = Vec::with_capacity(inputs.len());
            for (f, file) in inputs.iter().zip(&files) {
                let run = read_sst(&f.meta.path, file, &fields, &filter)?;
                read += run.num_rows() as u64;
                // Each file's rows are single-version: tombstones apply before the merge.
                runs.push(tombstone::apply_to_run(
                    run,
                    &tombstone::for_file(&tombs, &f.meta),
                )?);
            }
            // Deletes may have taken every row of a key.
            let mut merged = merge_runs(&runs, &fields)?.without_empty_keys()?;
            if whole {
                merged = merged.with_one_seq(newest)?;
            }
            drop(runs);
            for (w, part) in split_by_window(&merged, region.key.start, window_ns)? {
                if part.num_rows() == 0 {
                    continue;
                }
                let file = pending.entry(w).or_insert_with(new_file);
                if !file.fits(&part) || file.data.bytes_written() >= c.opts.target_file_bytes {
                    let full = std::mem::replace(file, new_file());
                    added.extend(c.out.put_pending(region.key, full, purged, &mut written)?);
                }
                file.append(&part)?;
            }
        }
        for (_, file) in pending {
            added.extend(c.out.put_pending(region.key, file, purged, &mut written)?);
        }
        // Slices come from the region's series index: a key it lacked would lose rows.
        if read != rows {
            return Err(StorageError::Compaction {
                region: region.key.dir(),
                reason: format!(
                    "compaction read {read} of its inputs' {rows} rows; nothing was changed"
                ),
            });
        }
        let removed: Vec<u64> = inputs.iter().map(|f| f.meta.id).collect();
        c.out.catalog.commit(vec![Edit::Compact {
            region: region.key,
            added: added.clone(),
            removed,
        }])
    })();
    if let Err(e) = result {
        for p in written {
            let _ = c.out.store.delete(&p);
        }
        return Err(e);
    }
    let mut files = region.files.write();
    files.retain(|f| !inputs.iter().any(|i| i.meta.id == f.meta.id));
    files.extend(
        added
            .into_iter()
            .map(|m| FileHandle::new(m, c.out.store.clone())),
    );
    for f in inputs {
        f.mark_obsolete();
    }
    c.metrics.compactions.inc();
    Ok(())
}

/// The key filters of a compaction's slices (`slices`): `[None]` (every key at once) when
/// its rows fit in `memory`, else consecutive runs of the region's sorted keys.
fn slice_keys(
    region: &Arc<Region>,
    rows: u64,
    fields: usize,
    memory: usize,
) -> Result<Vec<Option<Arc<Vec<Bytes>>>>> {
    let row_bytes = slices::row_bytes(fields);
    let series = region.series_count().max(1);
    if slices::key_slices(series, rows, row_bytes, memory).len() <= 1 {
        return Ok(vec![None]);
    }
    let mut keys: Vec<Bytes> = region
        .index_read()?
        .keys()
        .map(Bytes::copy_from_slice)
        .collect();
    keys.sort_unstable();
    Ok(slices::key_slices(keys.len(), rows, row_bytes, memory)
        .into_iter()
        .map(|r| Some(Arc::new(keys[r].to_vec())))
        .collect())
}

/// Splits a sorted run into one run per time window counted from `origin` (each still sorted
/// by key and time).
fn split_by_window(run: &SortedRun, origin: i64, window_ns: i64) -> Result<Vec<(i64, SortedRun)>> {
    let times = run.batch.column(1).as_primitive::<Int64Type>().values();
    let window = |t: &i64| t.saturating_sub(origin).div_euclid(window_ns);
    let windows: BTreeSet<i64> = times.iter().map(window).collect();
    if windows.len() <= 1 {
        let w = windows.first().copied().unwrap_or(0);
        return Ok(vec![(w, run.clone())]);
    }
    let mut out = Vec::new();
    for w in windows {
        let mask: BooleanArray = times.iter().map(|t| Some(window(t) == w)).collect();
        out.push((w, run.filter(&mask)?));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(id: u64, min_time: i64, max_time: i64) -> FileSpan {
        FileSpan {
            id,
            min_time,
            max_time,
            keys: None,
        }
    }

    /// A file of keys `lo..=hi`.
    fn k(mut f: FileSpan, lo: &str, hi: &str) -> FileSpan {
        f.keys = Some((lo.as_bytes().to_vec(), hi.as_bytes().to_vec()));
        f
    }

    #[test]
    fn picker_cases() {
        // window 10, active window index 5 (times 50..60), trigger 3
        type Case = (&'static str, Vec<FileSpan>, Vec<Vec<u64>>);
        let cases: Vec<Case> = vec![
            ("nothing", vec![], vec![]),
            (
                "one file per closed window",
                vec![f(1, 0, 9), f(2, 10, 19)],
                vec![],
            ),
            (
                "two files in a closed window",
                vec![f(1, 0, 5), f(2, 3, 9)],
                vec![vec![1, 2]],
            ),
            (
                "file spanning windows is split",
                vec![f(1, 0, 15)],
                vec![vec![1]],
            ),
            (
                "spanning pulls in neighbours",
                vec![f(1, 5, 15), f(2, 10, 12), f(3, 30, 35)],
                vec![vec![1, 2]],
            ),
            (
                "active window below trigger",
                vec![f(1, 50, 51), f(2, 52, 53)],
                vec![],
            ),
            (
                "active window at trigger",
                vec![f(1, 50, 51), f(2, 52, 53), f(3, 54, 55)],
                vec![vec![1, 2, 3]],
            ),
            (
                "closed window, files side by side by key: left be",
                vec![k(f(1, 0, 5), "a", "f"), k(f(2, 3, 9), "g", "m")],
                vec![],
            ),
            (
                "closed window, keys overlap: merged",
                vec![k(f(1, 0, 5), "a", "g"), k(f(2, 3, 9), "g", "m")],
                vec![vec![1, 2]],
            ),
            (
                "closed window, a file without a key range overlaps all",
                vec![k(f(1, 0, 5), "a", "f"), f(2, 3, 9)],
                vec![vec![1, 2]],
            ),
            (
                "active window, slices do not count toward the trigger",
                vec![
                    k(f(1, 50, 51), "a", "b"),
                    k(f(2, 52, 53), "c", "d"),
                    k(f(3, 54, 55), "e", "f"),
                ],
                vec![],
            ),
            (
                "active window, three files over one key: at the trigger",
                vec![
                    k(f(1, 50, 51), "a", "z"),
                    k(f(2, 52, 53), "c", "d"),
                    k(f(3, 54, 55), "c", "c"),
                ],
                vec![vec![1, 2, 3]],
            ),
            (
                "negative times",
                vec![f(1, -5, -1), f(2, -9, -6)],
                vec![vec![1, 2]],
            ),
        ];
        for (name, files, want) in cases {
            assert_eq!(pick(&files, 10, 5, 3), want, "{name}");
        }
    }

    #[test]
    fn a_partition_that_has_ended_is_one_window() {
        // Windows of 10; partitions given by start and end.
        for (name, (start, end), now, want) in [
            ("current partition", (300, 400), 350, 10),
            ("future partition", (500, 600), 350, 10),
            ("ended just now", (300, 400), 400, 100),
            ("long past", (0, 100), 350, 100),
            ("negative partition, ended", (-100, 0), 0, 100),
            ("a partition cut short, ended", (130, 170), 350, 40),
            (
                "a wide current partition: a twelfth of it",
                (0, 1200),
                350,
                100,
            ),
        ] {
            assert_eq!(region_window(start, end, 10, now), want, "{name}");
        }
    }

    #[test]
    fn each_window_of_a_split_keeps_only_its_own_keys() {
        use arrow::array::{Float64Array, Int64Array, RecordBatch, UInt32Array, UInt64Array};
        use tempora_model::FieldType;
        let fields = vec![("v".to_string(), FieldType::F64)];
        // Key a only in window 0; key b in windows 0 and 1 (windows of 10 from origin 100).
        let batch = RecordBatch::try_new(
            crate::read::run::run_schema(&fields),
            vec![
                Arc::new(UInt32Array::from(vec![0, 1, 1])),
                Arc::new(Int64Array::from(vec![101, 102, 115])),
                Arc::new(UInt64Array::from(vec![1, 1, 1])),
                Arc::new(Float64Array::from(vec![1.0, 2.0, 3.0])),
            ],
        )
        .unwrap();
        let run = SortedRun {
            keys: Arc::new(vec![bytes::Bytes::from("a"), bytes::Bytes::from("b")]),
            batch,
        };
        let parts: Vec<SortedRun> = split_by_window(&run, 100, 10)
            .unwrap()
            .into_iter()
            .map(|(w, p)| {
                assert!(w == 0 || w == 1);
                p
            })
            .collect();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].keys.len(), 2);
        assert_eq!(parts[1].keys.as_slice(), &[bytes::Bytes::from("b")]);
        assert_eq!(parts[1].ranks(), &[0]);
        // Every key of a part has a row: its newest rows are one per key.
        assert_eq!(parts[1].last_per_key().num_rows(), 1);
    }
}
