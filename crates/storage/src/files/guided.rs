//! Searches over a data file's sorted columns that start from a guess.
//!
//! A row group holds its series one after another (one run of equal dictionary ids per
//! series), each run in time order, and monitoring series are regular: runs are about as long
//! as the one before, and times about a fixed step apart. A plain binary search over a column
//! of a million rows costs about twenty cache misses; at 4,000 series a query reading a
//! five-minute window spent most of its time there. These searches check a guess first and
//! widen from it (galloping), so a right guess costs one or two reads and a wrong one at most
//! about twice a binary search.
//!
//! Invariant: every function returns exactly what `partition_point` with the same predicate
//! returns, whatever the guess (tested against it).

/// The partition point of `pred` over `s` (`pred` true for a prefix, false after), searched
/// from `guess` outwards.
pub fn gallop<T>(s: &[T], guess: usize, pred: impl Fn(&T) -> bool) -> usize {
    let n = s.len();
    let g = guess.min(n);
    if g < n && pred(&s[g]) {
        // The point is past g: widen rightwards.
        let mut lo = g + 1;
        let mut step = 1;
        while lo + step <= n && pred(&s[lo + step - 1]) {
            lo += step;
            step = step.saturating_mul(2);
        }
        let hi = (lo + step - 1).min(n);
        lo + s[lo..hi].partition_point(&pred)
    } else if g > 0 && !pred(&s[g - 1]) {
        // The point is before g: widen leftwards. `pred` is false at `hi`.
        let mut hi = g - 1;
        let mut step = 1;
        while hi >= step && !pred(&s[hi - step]) {
            hi -= step;
            step = step.saturating_mul(2);
        }
        let lo = (hi + 1).saturating_sub(step);
        lo + s[lo..hi].partition_point(&pred)
    } else {
        g
    }
}

/// The end of the run of `ids[start]` (the first index after `start` holding another id),
/// guessing the run is `hint` long (the previous run's length is a good guess).
pub fn run_end(ids: &[u32], start: usize, hint: usize) -> usize {
    let s = &ids[start..];
    let Some(&id) = s.first() else {
        return start;
    };
    start + gallop(s, hint, |&x| x == id)
}

/// How many leading values of `run` (ascending; `first` and `last` are its ends, kept
/// elsewhere so that a search whose answer lies inside the run reads only the values near its
/// guess) are below `x`, guessing by interpolation between the ends (exact for a series at a
/// fixed step).
pub fn count_below_within(run: &[i64], first: i64, last: i64, x: i64) -> usize {
    if run.is_empty() {
        return 0;
    }
    debug_assert_eq!(
        (run[0], run[run.len() - 1]),
        (first, last),
        "the run's ends"
    );
    if x <= first {
        return 0;
    }
    if x > last {
        return run.len();
    }
    // first < x <= last, so last > first and the quotient is within 1..=len-1.
    let span = i128::from(last) - i128::from(first);
    let steps = (run.len() - 1) as i128;
    let guess = ((i128::from(x) - i128::from(first)) * steps + span - 1) / span;
    gallop(run, usize::try_from(guess).unwrap_or(run.len()), |&t| t < x)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_guess_agrees(name: &str, s: &[i64], x: i64) {
        let want = s.partition_point(|&t| t < x);
        for guess in 0..=s.len() + 2 {
            assert_eq!(
                gallop(s, guess, |&t| t < x),
                want,
                "{name}: x {x} guess {guess}"
            );
        }
        let (first, last) = (s.first().copied(), s.last().copied());
        let got = count_below_within(s, first.unwrap_or(0), last.unwrap_or(0), x);
        assert_eq!(got, want, "{name}: count_below_within x {x}");
    }

    #[test]
    fn gallop_and_count_below_within_equal_partition_point() {
        let regular: Vec<i64> = (0..100).map(|i| 1_000 + i * 10).collect();
        let gappy: Vec<i64> = (0..100).map(|i| i * i * 7 - 300).collect();
        let dupes = vec![5, 5, 5, 6, 6, 9, 9, 9, 9, 20];
        let extremes = vec![i64::MIN, -1, 0, 1, i64::MAX];
        let cases: Vec<(&str, Vec<i64>)> = vec![
            ("empty", vec![]),
            ("one value", vec![42]),
            ("two values", vec![1, 2]),
            ("all equal", vec![7; 9]),
            ("regular step", regular),
            ("growing gaps", gappy),
            ("duplicates", dupes),
            ("i64 extremes", extremes),
        ];
        for (name, s) in &cases {
            let mut xs = vec![i64::MIN, i64::MAX, 0, -1, 1];
            for &v in s {
                xs.extend([v.saturating_sub(1), v, v.saturating_add(1)]);
            }
            for x in xs {
                every_guess_agrees(name, s, x);
            }
        }
    }

    #[test]
    fn run_end_finds_each_run_whatever_the_hint() {
        let cases: Vec<(&str, Vec<u32>)> = vec![
            ("one run", vec![3; 10]),
            (
                "equal runs",
                [0u32, 1, 2].iter().flat_map(|&i| [i; 4]).collect(),
            ),
            ("short then long", vec![0, 1, 1, 1, 1, 1, 1, 1, 2]),
            ("singletons", vec![0, 1, 2, 3, 4]),
            ("one row", vec![9]),
        ];
        for (name, ids) in &cases {
            let mut start = 0;
            while start < ids.len() {
                let want = start + ids[start..].partition_point(|&x| x == ids[start]);
                for hint in 0..=ids.len() + 1 {
                    assert_eq!(
                        run_end(ids, start, hint),
                        want,
                        "{name}: {start} hint {hint}"
                    );
                }
                start = want;
            }
            assert_eq!(run_end(ids, ids.len(), 3), ids.len(), "{name}: at the end");
        }
    }
}
