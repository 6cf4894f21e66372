//! Aggregate states of the fold ([`crate::exec::fold`]): a state per (group, aggregate),
//! started for the field's type, folded over a segment of a column, and merged with the state
//! of another fold of the same query.
//!
//! The states compute what DataFusion's aggregates do: `min`/`max` order floats totally (NaN
//! above every number, -0.0 below 0.0), integer sums wrap, `avg` sums floats, `count` counts
//! non-NULL values (`count(*)` every row). A column without NULLs is read in place (float sums
//! in [`LANES`] running sums); float sums may differ from DataFusion's in the last bits, as
//! DataFusion's own do between runs, since the order of additions differs.

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{DataType, Float64Type, Int64Type, UInt64Type};

use crate::nodes::aggregate::AggFunc;
use tempora_storage::rollup::partial::PartialRun;

/// One aggregate's running state.
#[derive(Debug, Clone, Copy)]
pub(super) enum Acc {
    I(Option<i64>),
    U(Option<u64>),
    F(Option<f64>),
    Avg { sum: f64, n: i64 },
    Count(i64),
}

/// Running value `x` of `max`, `min` or `sum` combined with `y`, a later part's (`y` wins a
/// tie of max or min only when strictly above or below, as row by row).
fn pick<T: Copy>(
    x: Option<T>,
    y: Option<T>,
    func: AggFunc,
    add: impl Fn(T, T) -> T,
    cmp: impl Fn(&T, &T) -> std::cmp::Ordering,
) -> Option<T> {
    let (Some(x), Some(y)) = (x, y) else {
        return x.or(y);
    };
    Some(match func {
        AggFunc::Max if cmp(&y, &x).is_gt() => y,
        AggFunc::Min if cmp(&y, &x).is_lt() => y,
        AggFunc::Max | AggFunc::Min => x,
        _ => add(x, y),
    })
}

/// Merges state `b` of aggregate `func` into `a` (states of one aggregate, so one variant).
pub(super) fn merge_acc(a: &mut Acc, b: Acc, func: AggFunc) {
    match (a, b) {
        (Acc::Count(x), Acc::Count(y)) => *x += y,
        (Acc::Avg { sum, n }, Acc::Avg { sum: s, n: k }) => {
            *sum += s;
            *n += k;
        }
        (Acc::I(x), Acc::I(y)) => *x = pick(*x, y, func, i64::wrapping_add, Ord::cmp),
        (Acc::U(x), Acc::U(y)) => *x = pick(*x, y, func, u64::wrapping_add, Ord::cmp),
        (Acc::F(x), Acc::F(y)) => *x = pick(*x, y, func, |p, q| p + q, f64::total_cmp),
        (a, b) => unreachable!("merging {b:?} into {a:?}"),
    }
}

/// The state of aggregate `func` over field `input` (index among the partial run's fields;
/// `None`: `count(*)`) of row `i` of a partial run holding `rows` rows.
pub(super) fn partial_acc(
    func: AggFunc,
    input: Option<usize>,
    p: &PartialRun,
    i: usize,
    rows: u64,
) -> Acc {
    let Some(f) = input else {
        return Acc::Count(rows as i64);
    };
    let count = p.stat(f, 0).as_primitive::<UInt64Type>().value(i);
    let stat = match func {
        AggFunc::Count => return Acc::Count(count as i64),
        AggFunc::Sum | AggFunc::Avg => p.stat(f, 1),
        AggFunc::Min => p.stat(f, 2),
        AggFunc::Max => p.stat(f, 3),
    };
    let valid = count > 0 && stat.is_valid(i);
    match (func, stat.data_type()) {
        (AggFunc::Avg, DataType::Float64) => Acc::Avg {
            sum: if valid {
                stat.as_primitive::<Float64Type>().value(i)
            } else {
                0.0
            },
            n: count as i64,
        },
        (AggFunc::Avg, DataType::Int64) => Acc::Avg {
            sum: if valid {
                stat.as_primitive::<Int64Type>().value(i) as f64
            } else {
                0.0
            },
            n: count as i64,
        },
        (AggFunc::Avg, _) => Acc::Avg {
            sum: if valid {
                stat.as_primitive::<UInt64Type>().value(i) as f64
            } else {
                0.0
            },
            n: count as i64,
        },
        (_, DataType::Float64) => {
            Acc::F(valid.then(|| stat.as_primitive::<Float64Type>().value(i)))
        }
        (_, DataType::Int64) => Acc::I(valid.then(|| stat.as_primitive::<Int64Type>().value(i))),
        _ => Acc::U(valid.then(|| stat.as_primitive::<UInt64Type>().value(i))),
    }
}

/// A new state for an aggregate over a field of type `ty` (`None`: `count(*)`).
pub(super) fn start(func: AggFunc, ty: Option<&DataType>) -> Acc {
    match (func, ty) {
        (AggFunc::Count, _) | (_, None) => Acc::Count(0),
        (AggFunc::Avg, _) => Acc::Avg { sum: 0.0, n: 0 },
        (_, Some(DataType::UInt64)) => Acc::U(None),
        (_, Some(DataType::Float64)) => Acc::F(None),
        (_, Some(_)) => Acc::I(None),
    }
}

/// Folds rows `a..b` of `col` (`None`: `count(*)`) into `acc`.
pub(super) fn fold_segment(
    acc: &mut Acc,
    func: AggFunc,
    col: Option<&ArrayRef>,
    a: usize,
    b: usize,
) {
    let Some(col) = col else {
        if let Acc::Count(c) = acc {
            *c += (b - a) as i64;
        }
        return;
    };
    if col.null_count() == 0 && fold_dense(acc, func, col, a, b) {
        return;
    }
    let slice = col.slice(a, b - a);
    match acc {
        Acc::Count(c) => *c += (slice.len() - slice.null_count()) as i64,
        Acc::Avg { sum, n } => {
            let (s, k) = match slice.data_type() {
                DataType::Int64 => sum_f64(
                    slice
                        .as_primitive::<Int64Type>()
                        .iter()
                        .map(|v| v.map(|x| x as f64)),
                ),
                DataType::UInt64 => sum_f64(
                    slice
                        .as_primitive::<UInt64Type>()
                        .iter()
                        .map(|v| v.map(|x| x as f64)),
                ),
                _ => sum_f64(slice.as_primitive::<Float64Type>().iter()),
            };
            *sum += s;
            *n += k;
        }
        Acc::I(v) => {
            let it = slice.as_primitive::<Int64Type>().iter().flatten();
            *v = combine(*v, it, func, |x, y| x.wrapping_add(y), |x, y| x.cmp(y));
        }
        Acc::U(v) => {
            let it = slice.as_primitive::<UInt64Type>().iter().flatten();
            *v = combine(*v, it, func, |x, y| x.wrapping_add(y), |x, y| x.cmp(y));
        }
        Acc::F(v) => {
            let it = slice.as_primitive::<Float64Type>().iter().flatten();
            *v = combine(*v, it, func, |x, y| x + y, |x, y| x.total_cmp(y));
        }
    }
}

/// [`fold_segment`] over a column without NULLs, reading its values in place: float sums in
/// [`LANES`] running sums (independent additions the CPU overlaps), max and min by the same
/// total order as the general path. False when the state and type have no such path.
fn fold_dense(acc: &mut Acc, func: AggFunc, col: &ArrayRef, a: usize, b: usize) -> bool {
    match (acc, col.data_type()) {
        (Acc::Count(c), _) => *c += (b - a) as i64,
        (Acc::Avg { sum, n }, DataType::Float64) => {
            *sum += sum_lanes(&col.as_primitive::<Float64Type>().values()[a..b]);
            *n += (b - a) as i64;
        }
        (Acc::Avg { sum, n }, DataType::Int64) => {
            let x = &col.as_primitive::<Int64Type>().values()[a..b];
            *sum += sum_lanes_of(x, |v| v as f64);
            *n += (b - a) as i64;
        }
        (Acc::F(v), DataType::Float64) => {
            let x = &col.as_primitive::<Float64Type>().values()[a..b];
            *v = dense_f64(*v, x, func);
        }
        (Acc::I(v), DataType::Int64) => {
            let x = &col.as_primitive::<Int64Type>().values()[a..b];
            *v = dense_i64(*v, x, func);
        }
        _ => return false,
    }
    true
}

/// Running sums a dense float sum keeps.
const LANES: usize = 8;

/// The sum of `x`, lane `i` summing the values at `i mod LANES`. The lanes start at -0.0,
/// which adds nothing to any value (so a sum of -0.0 stays -0.0, as a sequential one does).
fn sum_lanes(x: &[f64]) -> f64 {
    sum_lanes_of(x, |v| v)
}

/// [`sum_lanes`] of `x` made floats by `f`.
fn sum_lanes_of<T: Copy>(x: &[T], f: impl Fn(T) -> f64) -> f64 {
    let mut l = [-0.0f64; LANES];
    let chunks = x.chunks_exact(LANES);
    let rest = chunks.remainder();
    for c in chunks {
        for (acc, &v) in l.iter_mut().zip(c) {
            *acc += f(v);
        }
    }
    let mut s = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
    for &v in rest {
        s += f(v);
    }
    s
}

fn dense_f64(v: Option<f64>, x: &[f64], func: AggFunc) -> Option<f64> {
    let best = |keep_new: fn(std::cmp::Ordering) -> bool| {
        x.iter()
            .copied()
            .reduce(|m, y| if keep_new(y.total_cmp(&m)) { y } else { m })
    };
    let seg = match func {
        AggFunc::Max => best(std::cmp::Ordering::is_gt),
        AggFunc::Min => best(std::cmp::Ordering::is_lt),
        _ => (!x.is_empty()).then(|| sum_lanes(x)),
    };
    pick(v, seg, func, |p, q| p + q, f64::total_cmp)
}

fn dense_i64(v: Option<i64>, x: &[i64], func: AggFunc) -> Option<i64> {
    let seg = match func {
        AggFunc::Max => x.iter().copied().max(),
        AggFunc::Min => x.iter().copied().min(),
        _ => x.iter().copied().reduce(i64::wrapping_add),
    };
    pick(v, seg, func, i64::wrapping_add, Ord::cmp)
}

fn sum_f64(values: impl Iterator<Item = Option<f64>>) -> (f64, i64) {
    values.flatten().fold((0.0, 0), |(s, n), x| (s + x, n + 1))
}

/// `max`, `min` or `sum` of values into a running value.
fn combine<T: Copy>(
    mut v: Option<T>,
    values: impl Iterator<Item = T>,
    func: AggFunc,
    add: impl Fn(T, T) -> T,
    cmp: impl Fn(&T, &T) -> std::cmp::Ordering,
) -> Option<T> {
    for x in values {
        v = Some(match (func, v) {
            (_, None) => x,
            (AggFunc::Max, Some(y)) => {
                if cmp(&x, &y).is_gt() {
                    x
                } else {
                    y
                }
            }
            (AggFunc::Min, Some(y)) => {
                if cmp(&x, &y).is_lt() {
                    x
                } else {
                    y
                }
            }
            (_, Some(y)) => add(y, x),
        });
    }
    v
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Float64Array, Int64Array};

    use super::*;

    fn f64s(v: &[Option<f64>]) -> ArrayRef {
        Arc::new(Float64Array::from(v.to_vec()))
    }

    /// The dense path (a column without NULLs, read in place) and the general one (the same
    /// values in a column that has a NULL outside the segment) give the same states.
    #[test]
    fn dense_segments_equal_the_general_path() {
        let nan = f64::NAN;
        let floats: &[(&str, Vec<f64>)] = &[
            ("one value", vec![3.0]),
            (
                "integral values",
                (0..37).map(|i| (i * 7 % 11) as f64).collect(),
            ),
            ("negative zero alone", vec![-0.0]),
            ("zeros of both signs", vec![0.0, -0.0, -0.0]),
            ("a NaN among numbers", vec![1.0, nan, -2.0]),
            ("infinities", vec![f64::INFINITY, 1.0, f64::NEG_INFINITY]),
            ("ties", vec![2.0, 2.0, 1.0, 2.0]),
        ];
        let funcs = [
            AggFunc::Max,
            AggFunc::Min,
            AggFunc::Sum,
            AggFunc::Avg,
            AggFunc::Count,
        ];
        for (name, values) in floats {
            let dense: ArrayRef = Arc::new(Float64Array::from(values.clone()));
            let mut with_null: Vec<Option<f64>> = values.iter().copied().map(Some).collect();
            with_null.push(None);
            let general = f64s(&with_null);
            for func in funcs {
                for prior in [None, Some(-1.5)] {
                    let ty = Some(DataType::Float64);
                    let mut d = start(func, ty.as_ref());
                    let mut g = start(func, ty.as_ref());
                    if let (Some(p), Acc::F(dv), Acc::F(gv)) = (prior, &mut d, &mut g) {
                        (*dv, *gv) = (Some(p), Some(p));
                    }
                    fold_segment(&mut d, func, Some(&dense), 0, values.len());
                    fold_segment(&mut g, func, Some(&general), 0, values.len());
                    assert_eq!(
                        format!("{d:?}"),
                        format!("{g:?}"),
                        "{name}, {func:?}, prior {prior:?}"
                    );
                }
            }
        }
        let ints: &[(&str, Vec<i64>)] = &[
            ("wrapping sum", vec![i64::MAX, 1, 5]),
            ("mixed signs", vec![-3, 9, 0, -12]),
            (
                "more than the lanes",
                (0..29).map(|i| i * 13 % 7 - 3).collect(),
            ),
        ];
        for (name, values) in ints {
            let dense: ArrayRef = Arc::new(Int64Array::from(values.clone()));
            let mut with_null: Vec<Option<i64>> = values.iter().copied().map(Some).collect();
            with_null.push(None);
            let general: ArrayRef = Arc::new(Int64Array::from(with_null));
            for func in [
                AggFunc::Max,
                AggFunc::Min,
                AggFunc::Sum,
                AggFunc::Avg,
                AggFunc::Count,
            ] {
                let ty = Some(DataType::Int64);
                let (mut d, mut g) = (start(func, ty.as_ref()), start(func, ty.as_ref()));
                fold_segment(&mut d, func, Some(&dense), 0, values.len());
                fold_segment(&mut g, func, Some(&general), 0, values.len());
                assert_eq!(format!("{d:?}"), format!("{g:?}"), "{name}, {func:?}");
            }
        }
    }

    #[test]
    fn sums_wrap_and_minimums_order_zeros() {
        let it = [i64::MAX, 1].into_iter();
        assert_eq!(
            combine(
                None,
                it,
                AggFunc::Sum,
                |x: i64, y| x.wrapping_add(y),
                |x, y| x.cmp(y)
            ),
            Some(i64::MIN)
        );
        let z = [0.0f64, -0.0].into_iter();
        let m = combine(
            None,
            z,
            AggFunc::Min,
            |x: f64, y| x + y,
            |x, y| x.total_cmp(y),
        );
        assert!(m.unwrap().is_sign_negative());
    }
}
