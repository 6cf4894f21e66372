//! The fold of [`crate::exec::aggregate::AggregateExec`]: rows sorted by series, then time
//! (as a region's scan returns them) into one aggregate state per group.
//!
//! A group is (time key, tag tuple). Rows of one series with one time key are contiguous, so
//! the fold finds each such segment, looks its group up once, and folds every aggregate over
//! the segment's slice of the column: a hash lookup per (series, bucket), not per row.
//!
//! The states and their arithmetic (what each aggregate computes, as DataFusion's do) are in
//! [`crate::exec::acc`].

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Float64Array, Int64Array, StringArray, UInt64Array};
use arrow::datatypes::DataType;

use super::acc::{Acc, fold_segment, merge_acc, partial_acc, start};
use crate::nodes::aggregate::{AggFunc, AggSpec};
use crate::rules::time_key::{Overflow, TimeKey};
use tempora_storage::rollup::partial::PartialRun;

/// An aggregate as the fold runs it: its function and the index of its input column.
#[derive(Debug, Clone, Copy)]
struct Agg {
    func: AggFunc,
    input: Option<usize>,
}

/// The groups of a query and their aggregate states.
pub struct Fold {
    time: Option<TimeKey>,
    aggs: Vec<Agg>,
    /// Tag tuples seen, by id.
    tuples: Vec<Vec<Option<String>>>,
    tuple_ids: HashMap<Vec<Option<String>>, u32>,
    /// (time key, tuple id) → group index.
    groups: HashMap<(u64, u32), usize>,
    keys: Vec<(u64, u32)>,
    /// A time of each group (one of its rows'), for the output's time column.
    times: Vec<i64>,
    /// `aggs.len()` states per group.
    states: Vec<Acc>,
    /// Time spans known to share one key (monotone keys other than bins): see [`Span`].
    spans: Vec<Span>,
}

/// Times `lo..=hi` whose key is `key`: two rows' times in one bucket of a monotone key, so
/// every time between them is in it too. Series sampled at the same instants (as monitoring
/// agents are) find their segment's bucket here instead of evaluating the key again.
#[derive(Debug, Clone, Copy)]
struct Span {
    lo: i64,
    hi: i64,
    key: u64,
}

/// Most spans a fold remembers; a full list is emptied before the next one is added.
const SPANS_MAX: usize = 256;

impl Fold {
    /// An empty fold. `inputs[i]` is the column index, among the fold's input columns, of
    /// aggregate `i`'s field (`None`: `count(*)`); `types[i]` the field's type. Without any
    /// group (`grouped == false`) the result has its one row even when no row comes.
    pub fn new(
        time: Option<TimeKey>,
        specs: &[AggSpec],
        inputs: &[Option<usize>],
        types: &[Option<DataType>],
        grouped: bool,
    ) -> Self {
        let aggs = specs
            .iter()
            .zip(inputs)
            .map(|(s, &input)| Agg {
                func: s.func,
                input,
            })
            .collect();
        let mut fold = Self {
            time,
            aggs,
            tuples: Vec::new(),
            tuple_ids: HashMap::new(),
            groups: HashMap::new(),
            keys: Vec::new(),
            times: Vec::new(),
            states: Vec::new(),
            spans: Vec::new(),
        };
        if !grouped {
            let t = fold.tuple_id(Vec::new());
            fold.group((0, t), 0, types);
        }
        fold
    }

    /// The id of a tag tuple (a series' values of the grouped tags, in group order).
    pub fn tuple_id(&mut self, values: Vec<Option<String>>) -> u32 {
        if let Some(&id) = self.tuple_ids.get(&values) {
            return id;
        }
        let id = self.tuples.len() as u32;
        self.tuples.push(values.clone());
        self.tuple_ids.insert(values, id);
        id
    }

    fn group(&mut self, key: (u64, u32), time: i64, types: &[Option<DataType>]) -> usize {
        if let Some(&g) = self.groups.get(&key) {
            return g;
        }
        let g = self.keys.len();
        self.keys.push(key);
        self.times.push(time);
        self.groups.insert(key, g);
        let starts: Vec<Acc> = self
            .aggs
            .iter()
            .enumerate()
            .map(|(i, a)| start(a.func, types.get(i).cloned().flatten().as_ref()))
            .collect();
        self.states.extend(starts);
        g
    }

    /// Groups so far.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Bytes the fold holds, roughly (for the query's memory limit).
    pub fn bytes(&self) -> usize {
        let per_group = 56 + self.aggs.len() * std::mem::size_of::<Acc>();
        self.keys.len() * per_group
            + self
                .tuples
                .iter()
                .flatten()
                .flatten()
                .map(String::len)
                .sum::<usize>()
    }

    /// Folds rows sorted by series rank, then time. `tuple_of_rank[r]` is the tag tuple of
    /// rank `r` (`None`: the series is left out); `columns` are the fold's input columns.
    pub fn add(
        &mut self,
        ranks: &[u32],
        times: &[i64],
        tuple_of_rank: &[Option<u32>],
        columns: &[ArrayRef],
        types: &[Option<DataType>],
    ) -> Result<(), Overflow> {
        assert_eq!(ranks.len(), times.len(), "one time per row");
        assert!(
            columns.iter().all(|c| c.len() == ranks.len()),
            "one value per row"
        );
        let n = ranks.len();
        let mut a = 0;
        let mut last: Option<((u64, u32), usize)> = None;
        while a < n {
            let rank = ranks[a];
            let Some(tuple) = tuple_of_rank[rank as usize] else {
                a += 1;
                while a < n && ranks[a] == rank {
                    a += 1;
                }
                continue;
            };
            let (key, b) = self.segment(ranks, times, a)?;
            let gk = (key, tuple);
            let g = match last {
                Some((k, g)) if k == gk => g,
                _ => self.group(gk, times[a], types),
            };
            last = Some((gk, g));
            let width = self.aggs.len();
            for (k, agg) in self.aggs.iter().enumerate() {
                let acc = &mut self.states[g * width + k];
                let col = agg.input.map(|i| &columns[i]);
                fold_segment(acc, agg.func, col, a, b);
            }
            a = b;
        }
        Ok(())
    }

    /// Folds per (series, bucket) states (each bucket's rows share one key: the caller
    /// checked). `tuple_of_rank` as in [`Fold::add`]; `inputs[i]` of aggregate `i` indexes the
    /// partial run's fields.
    pub fn add_partials(
        &mut self,
        p: &PartialRun,
        tuple_of_rank: &[Option<u32>],
        types: &[Option<DataType>],
    ) -> Result<(), Overflow> {
        let (ranks, first, rows) = (p.ranks(), p.first_times(), p.rows());
        let mut last: Option<((u64, u32), usize)> = None;
        for i in 0..p.num_rows() {
            let Some(tuple) = tuple_of_rank[ranks[i] as usize] else {
                continue;
            };
            let key = match &self.time {
                None => 0,
                Some(k) => k.key(first[i])?,
            };
            let gk = (key, tuple);
            let g = match last {
                Some((k, g)) if k == gk => g,
                _ => self.group(gk, first[i], types),
            };
            last = Some((gk, g));
            let width = self.aggs.len();
            for (k, agg) in self.aggs.iter().enumerate() {
                let part = partial_acc(agg.func, agg.input, p, i, rows[i]);
                merge_acc(&mut self.states[g * width + k], part, agg.func);
            }
        }
        Ok(())
    }

    /// The time key of row `a` and the end of its segment (same series, same key).
    fn segment(
        &mut self,
        ranks: &[u32],
        times: &[i64],
        a: usize,
    ) -> Result<(u64, usize), Overflow> {
        let n = ranks.len();
        let rank = ranks[a];
        let mut b = a + 1;
        match &self.time {
            None => {
                while b < n && ranks[b] == rank {
                    b += 1;
                }
                Ok((0, b))
            }
            Some(TimeKey::Bin { width, origin }) => {
                let start = crate::functions::date_trunc::truncate(times[a], (*width, *origin));
                let end = start.saturating_add(*width);
                while b < n && ranks[b] == rank && times[b] < end {
                    b += 1;
                }
                Ok((start as u64, b))
            }
            Some(k) if k.monotone() => monotone_segment(k, &mut self.spans, ranks, times, a),
            Some(k) => {
                let key = k.key(times[a])?;
                self.linear_segment(k, ranks, times, a, key)
            }
        }
    }

    /// Adds `other`'s groups into this fold: its states merged into those of the same
    /// (time key, tag tuple), its new groups appended in its order. Both folds must have been
    /// made by the same [`Fold::new`] call's arguments.
    pub fn merge(&mut self, other: Fold, types: &[Option<DataType>]) {
        assert_eq!(self.aggs.len(), other.aggs.len(), "folds of one query");
        let width = self.aggs.len();
        let mut ids: Vec<Option<u32>> = vec![None; other.tuples.len()];
        for (g, &(key, tuple)) in other.keys.iter().enumerate() {
            let id = match ids[tuple as usize] {
                Some(id) => id,
                None => {
                    let id = self.tuple_id(other.tuples[tuple as usize].clone());
                    ids[tuple as usize] = Some(id);
                    id
                }
            };
            let mine = self.group((key, id), other.times[g], types);
            for k in 0..width {
                let func = self.aggs[k].func;
                merge_acc(
                    &mut self.states[mine * width + k],
                    other.states[g * width + k],
                    func,
                );
            }
        }
    }

    /// The end of the segment from `a` of a key that may not be contiguous: row by row.
    fn linear_segment(
        &self,
        k: &TimeKey,
        ranks: &[u32],
        times: &[i64],
        a: usize,
        key: u64,
    ) -> Result<(u64, usize), Overflow> {
        let mut b = a + 1;
        while b < ranks.len() && ranks[b] == ranks[a] && k.key(times[b])? == key {
            b += 1;
        }
        Ok((key, b))
    }

    /// The groups' times (one per group, in group order), for the time column.
    pub fn group_times(&self) -> &[i64] {
        &self.times
    }

    /// The values of grouped tag `tag` (index in group order), one per group.
    pub fn tag_column(&self, tag: usize) -> ArrayRef {
        Arc::new(StringArray::from_iter(
            self.keys
                .iter()
                .map(|k| self.tuples[k.1 as usize][tag].as_deref()),
        ))
    }

    /// The result column of aggregate `i`, of type `ty`, one value per group.
    pub fn agg_column(&self, i: usize, ty: &DataType) -> ArrayRef {
        let width = self.aggs.len();
        let states = (0..self.keys.len()).map(|g| self.states[g * width + i]);
        match ty {
            DataType::Int64 => Arc::new(Int64Array::from_iter(states.map(|s| match s {
                Acc::I(v) => v,
                Acc::Count(c) => Some(c),
                other => unreachable!("an Int64 result from {other:?}"),
            }))),
            DataType::UInt64 => Arc::new(UInt64Array::from_iter(states.map(|s| match s {
                Acc::U(v) => v,
                other => unreachable!("a UInt64 result from {other:?}"),
            }))),
            DataType::Float64 => Arc::new(Float64Array::from_iter(states.map(|s| match s {
                Acc::F(v) => v,
                Acc::Avg { sum, n } => (n > 0).then(|| sum / n as f64),
                other => unreachable!("a Float64 result from {other:?}"),
            }))),
            other => unreachable!("aggregate result type {other}"),
        }
    }
}

/// The key of row `a` and the end of its segment (same series, same key) for a monotone key
/// evaluated row by row. Rows of one series and one key are contiguous. A row inside a
/// remembered span takes its key and runs to the span's end by comparing times; past it, and
/// without a span, the key is evaluated: row by row past a span (extending it), galloping
/// (a few rows instead of every one) otherwise, and the rows' span is remembered.
fn monotone_segment(
    k: &TimeKey,
    spans: &mut Vec<Span>,
    ranks: &[u32],
    times: &[i64],
    a: usize,
) -> Result<(u64, usize), Overflow> {
    let (n, rank, t) = (ranks.len(), ranks[a], times[a]);
    if let Some(span) = spans.iter_mut().find(|s| s.lo <= t && t <= s.hi) {
        let mut b = a + 1;
        while b < n && ranks[b] == rank && times[b] <= span.hi {
            b += 1;
        }
        while b < n && ranks[b] == rank && k.key(times[b])? == span.key {
            span.hi = times[b];
            b += 1;
        }
        return Ok((span.key, b));
    }
    let key = k.key(t)?;
    if key == crate::rules::time_key::NULL_KEY {
        let mut b = a + 1;
        while b < n && ranks[b] == rank && k.key(times[b])? == key {
            b += 1;
        }
        return Ok((key, b));
    }
    let same =
        |i: usize| -> Result<bool, Overflow> { Ok(ranks[i] == rank && k.key(times[i])? == key) };
    let (mut hit, mut step) = (a, 1usize);
    let miss = loop {
        let probe = hit + step;
        if probe >= n {
            break n;
        }
        if same(probe)? {
            hit = probe;
            step *= 2;
        } else {
            break probe;
        }
    };
    let (mut lo, mut hi) = (hit, miss);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if mid < n && same(mid)? {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    if spans.len() >= SPANS_MAX {
        spans.clear();
    }
    spans.push(Span {
        lo: t,
        hi: times[hi - 1],
        key,
    });
    Ok((key, hi))
}

#[cfg(test)]
mod tests {
    use arrow::array::AsArray;
    use arrow::datatypes::{Float64Type, Int64Type};

    use super::*;

    fn f64s(v: &[Option<f64>]) -> ArrayRef {
        Arc::new(Float64Array::from(v.to_vec()))
    }

    #[test]
    fn segments_follow_series_and_buckets() {
        let specs = [
            AggSpec {
                func: AggFunc::Count,
                field: None,
            },
            AggSpec {
                func: AggFunc::Max,
                field: Some("v".into()),
            },
        ];
        let types = [None, Some(DataType::Float64)];
        let mut fold = Fold::new(
            Some(TimeKey::Bin {
                width: 10,
                origin: 0,
            }),
            &specs,
            &[None, Some(0)],
            &types,
            true,
        );
        let t0 = fold.tuple_id(vec![Some("a".into())]);
        let t1 = fold.tuple_id(vec![Some("b".into())]);
        // rank 0 (a): times 1, 5, 12; rank 1 (b): time 3; rank 2: left out.
        let ranks = [0, 0, 0, 1, 2];
        let times = [1, 5, 12, 3, 4];
        let v = f64s(&[Some(1.0), Some(f64::NAN), Some(2.0), Some(-0.0), Some(9.0)]);
        fold.add(&ranks, &times, &[Some(t0), Some(t1), None], &[v], &types)
            .unwrap();
        assert_eq!(fold.len(), 3);
        let counts = fold.agg_column(0, &DataType::Int64);
        let counts: Vec<i64> = counts.as_primitive::<Int64Type>().values().to_vec();
        assert_eq!(counts, [2, 1, 1]);
        let max = fold.agg_column(1, &DataType::Float64);
        let max = max.as_primitive::<Float64Type>();
        assert!(max.value(0).is_nan(), "NaN is above every number");
        assert_eq!((max.value(1), max.value(2)), (2.0, -0.0));
        assert_eq!(fold.group_times(), [1, 12, 3]);
    }

    #[test]
    fn galloping_segments_are_the_row_by_row_ones() {
        use crate::rules::time_key::{Scalar, Value};
        use datafusion::logical_expr::Operator;
        // floor(epoch / 7) * 7 over times a few seconds apart, three series.
        let key = TimeKey::Scalar(Arc::new(Scalar::Arith(
            Box::new(Scalar::Floor(Box::new(Scalar::Arith(
                Box::new(Scalar::Epoch(Box::new(Scalar::Time))),
                Operator::Divide,
                Value::F(7.0),
            )))),
            Operator::Multiply,
            Value::F(7.0),
        )));
        assert!(key.monotone());
        let specs = [AggSpec {
            func: AggFunc::Count,
            field: None,
        }];
        // Series sampled at other instants each, then at the same instants (remembered spans).
        for offset in [999_999_937i64, 0] {
            gallop_case(&key, &specs, offset);
        }
    }

    fn gallop_case(key: &TimeKey, specs: &[AggSpec], offset: i64) {
        let mut ranks = Vec::new();
        let mut times = Vec::new();
        for r in 0..3u32 {
            let mut t = 1_451_606_400_000_000_000i64 + i64::from(r) * offset;
            for i in 0..500 {
                ranks.push(r);
                times.push(t);
                t += 1_000_000_000 + (i * 7_919 % 3_000_000_000);
            }
        }
        let mut fold = Fold::new(Some(key.clone()), specs, &[None], &[None], true);
        let tuples: Vec<Option<u32>> = (0..3)
            .map(|r| Some(fold.tuple_id(vec![Some(r.to_string())])))
            .collect();
        fold.add(&ranks, &times, &tuples, &[], &[None]).unwrap();
        // The expected groups: (series, key) → rows, row by row.
        let mut want: HashMap<(u32, u64), i64> = HashMap::new();
        for (r, t) in ranks.iter().zip(&times) {
            *want.entry((*r, key.key(*t).unwrap())).or_default() += 1;
        }
        assert_eq!(fold.len(), want.len());
        let counts = fold.agg_column(0, &DataType::Int64);
        let counts = counts.as_primitive::<Int64Type>();
        for (g, k) in fold.keys.iter().enumerate() {
            assert_eq!(
                counts.value(g),
                want[&(k.1, k.0)],
                "group {g}, offset {offset}"
            );
        }
    }

    #[test]
    fn an_ungrouped_fold_has_its_row_without_input() {
        let specs = [AggSpec {
            func: AggFunc::Count,
            field: None,
        }];
        let fold = Fold::new(None, &specs, &[None], &[None], false);
        assert_eq!(fold.len(), 1);
    }

    /// A region's rows for [`merged_folds_equal_one_fold`]: series names by rank, then each
    /// row's rank, time and value.
    type Part = (
        &'static [&'static str],
        &'static [u32],
        &'static [i64],
        &'static [Option<f64>],
    );

    /// Rows split between two folds, merged, give the groups and states of one fold over all
    /// of them (integral values, so float sums are exact in any order).
    #[test]
    fn merged_folds_equal_one_fold() {
        let funcs = [
            AggFunc::Count,
            AggFunc::Max,
            AggFunc::Min,
            AggFunc::Sum,
            AggFunc::Avg,
        ];
        let specs: Vec<AggSpec> = funcs
            .iter()
            .map(|&func| AggSpec {
                func,
                field: (func != AggFunc::Count).then(|| "v".into()),
            })
            .collect();
        let inputs: Vec<Option<usize>> = funcs
            .iter()
            .map(|&f| (f != AggFunc::Count).then_some(0))
            .collect();
        let types: Vec<Option<DataType>> = funcs
            .iter()
            .map(|&f| (f != AggFunc::Count).then_some(DataType::Float64))
            .collect();
        let new = |grouped| {
            let key = Some(TimeKey::Bin {
                width: 10,
                origin: 0,
            });
            Fold::new(key, &specs, &inputs, &types, grouped)
        };
        // Two "regions": series a and b in the first, a (again) and c in the second.
        let parts: [Part; 2] = [
            (
                &["a", "b"],
                &[0, 0, 1],
                &[1, 15, 2],
                &[Some(4.0), None, Some(-3.0)],
            ),
            (
                &["a", "c"],
                &[0, 1, 1],
                &[3, 5, 25],
                &[Some(7.0), Some(1.0), Some(f64::NAN)],
            ),
        ];
        let add = |fold: &mut Fold, (names, ranks, times, v): Part| {
            let ids: Vec<Option<u32>> = names
                .iter()
                .map(|n| Some(fold.tuple_id(vec![Some(n.to_string())])))
                .collect();
            fold.add(ranks, times, &ids, &[f64s(v)], &types).unwrap();
        };
        for grouped in [true, false] {
            let mut one = new(grouped);
            add(&mut one, parts[0]);
            add(&mut one, parts[1]);
            let (mut first, mut second) = (new(grouped), new(grouped));
            add(&mut first, parts[0]);
            add(&mut second, parts[1]);
            first.merge(second, &types);
            assert_eq!(first.len(), one.len(), "groups, grouped {grouped}");
            assert_eq!(
                first.group_times(),
                one.group_times(),
                "times, grouped {grouped}"
            );
            for (k, ty) in types.iter().enumerate() {
                let ty = ty.clone().unwrap_or(DataType::Int64);
                assert_eq!(
                    format!("{:?}", first.agg_column(k, &ty)),
                    format!("{:?}", one.agg_column(k, &ty)),
                    "{:?}, grouped {grouped}",
                    funcs[k]
                );
            }
        }
    }
}
