//! Sorting the rows of several batches without concatenating them first: the order is
//! computed over the batches where they are, as `(batch, row)` positions of the rows their
//! masks keep, and the output is gathered once (block by block, or row by row with
//! `interleave`).
//!
//! Keys are Arrow's row format (`RowConverter`): each row's sort key becomes one byte string
//! that compares with `memcmp` in the order DataFusion sorts (NULLs first or last, floats by
//! total order, strings by bytes). A scan hands each series' rows over in time order, so under
//! `ORDER BY tag, time` the rows are blocks (equal tag, rising time) that only need putting in
//! order: the blocks are found (`partition` on every key but the last, and wherever a key
//! falls), ordered by their first key and, if they do not overlap, concatenated. Otherwise the
//! rows are sorted with Rust's stable, run-adaptive sort.
//!
//! Tags may come as dictionaries (`tempora_storage::TagForm::Dictionary`: a value per series,
//! the rows' keys): they are sorted by value and written out as strings by the gather, so each
//! output row's strings are copied once.
//!
//! Invariants:
//! - The positions are exactly those of a stable sort of the kept rows of the concatenated
//!   batches, cut to the limit; rows with equal keys keep their input order.
//! - The gathered columns have the output schema's types (a dictionary becomes its values).

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, DictionaryArray, NullBufferBuilder, RecordBatch,
    UInt32Array, new_empty_array,
};
use arrow::compute::{SortOptions, cast, concat, interleave, partition, take};
use arrow::datatypes::{DataType, SchemaRef, UInt32Type};
use arrow::error::{ArrowError, Result};
use arrow::row::{RowConverter, Rows, SortField};

/// One sort key: a column of every batch, and its direction.
pub struct SortKey<'a> {
    pub column: &'a str,
    pub options: SortOptions,
}

/// The `(batch, row)` positions of the rows of `batches` that their masks keep (a missing
/// mask keeps every row, a NULL in one drops its row) in the order of `keys`, at most `limit`.
pub fn sorted_positions(
    batches: &[RecordBatch],
    masks: &[Option<&BooleanArray>],
    keys: &[SortKey],
    limit: Option<usize>,
) -> Result<Vec<(usize, usize)>> {
    let kept = |b: usize, r: usize| {
        masks
            .get(b)
            .copied()
            .flatten()
            .is_none_or(|m| m.is_valid(r) && m.value(r))
    };
    let mut all: Vec<(usize, usize)> = batches
        .iter()
        .enumerate()
        .flat_map(|(b, batch)| {
            (0..batch.num_rows())
                .filter(move |&r| kept(b, r))
                .map(move |r| (b, r))
        })
        .collect();
    if batches.is_empty() {
        return Ok(all);
    }
    let rows = key_rows(batches, keys)?;
    let key = |&(b, r): &(usize, usize)| rows[b].row(r);
    match limit {
        Some(l) if l < all.len() => {
            // Ties broken by position, so the first `l` are those of the stable full sort.
            let by_key_then_position =
                |x: &(usize, usize), y: &(usize, usize)| key(x).cmp(&key(y)).then_with(|| x.cmp(y));
            if l > 0 {
                all.select_nth_unstable_by(l - 1, by_key_then_position);
            }
            all.truncate(l);
            all.sort_unstable_by(by_key_then_position);
        }
        _ => {
            let groups = group_ids(batches, &all, keys)?;
            if let Some(order) = ordered_runs(&all, &groups, &key) {
                return Ok(order);
            }
            all.sort_by(|x, y| key(x).cmp(&key(y)));
        }
    }
    Ok(all)
}

/// Each batch's sort keys in Arrow's row format, from one converter (so rows of different
/// batches compare).
fn key_rows(batches: &[RecordBatch], keys: &[SortKey]) -> Result<Vec<Rows>> {
    let Some(first) = batches.first() else {
        return Ok(Vec::new());
    };
    let fields = keys
        .iter()
        .map(|k| {
            let ty = first
                .schema()
                .field_with_name(k.column)?
                .data_type()
                .clone();
            Ok(SortField::new_with_options(ty, k.options))
        })
        .collect::<Result<Vec<_>>>()?;
    let converter = RowConverter::new(fields)?;
    batches
        .iter()
        .map(|b| converter.convert_columns(&key_columns(b, keys)?))
        .collect()
}

/// The columns of `b` that `keys` name, in key order.
fn key_columns(b: &RecordBatch, keys: &[SortKey]) -> Result<Vec<ArrayRef>> {
    keys.iter()
        .map(|k| Ok(b.column(b.schema().index_of(k.column)?).clone()))
        .collect()
}

/// For each of `positions` (in batch and row order), a number that changes exactly where a
/// new batch begins or the values of every key but the last change: a series' rows under
/// `ORDER BY tag, time` share one.
fn group_ids(
    batches: &[RecordBatch],
    positions: &[(usize, usize)],
    keys: &[SortKey],
) -> Result<Vec<usize>> {
    let prefix = keys.split_last().map_or(&[][..], |(_, p)| p);
    // Per batch, the rows where a group starts, ascending.
    let starts = batches
        .iter()
        .map(|b| {
            if prefix.is_empty() || b.num_rows() == 0 {
                return Ok(vec![0]);
            }
            Ok(partition(&key_columns(b, prefix)?)?
                .ranges()
                .iter()
                .map(|r| r.start)
                .collect())
        })
        .collect::<Result<Vec<Vec<usize>>>>()?;
    let mut base = vec![0; batches.len()];
    for b in 1..batches.len() {
        base[b] = base[b - 1] + starts[b - 1].len();
    }
    Ok(positions
        .iter()
        .map(|&(b, r)| base[b] + starts[b].partition_point(|&s| s <= r) - 1)
        .collect())
}

/// `positions` in key order when they split into sorted runs (wherever the group id changes
/// and wherever a key is below the one before) that do not overlap once ordered by their first
/// key: the runs concatenated in that order, about `n` comparisons instead of a merge of every
/// row. `None` when runs overlap. Equal keys in two runs are accepted only when the earlier
/// run comes first, so the answer is still the stable sort's.
fn ordered_runs<'r>(
    positions: &[(usize, usize)],
    groups: &[usize],
    key: &impl Fn(&(usize, usize)) -> arrow::row::Row<'r>,
) -> Option<Vec<(usize, usize)>> {
    let mut starts = vec![0];
    starts
        .extend((1..positions.len()).filter(|&i| {
            groups[i] != groups[i - 1] || key(&positions[i]) < key(&positions[i - 1])
        }));
    let runs: Vec<std::ops::Range<usize>> = starts
        .iter()
        .zip(starts.iter().skip(1).chain([&positions.len()]))
        .map(|(&a, &b)| a..b)
        .filter(|r| !r.is_empty())
        .collect();
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by(|&a, &b| key(&positions[runs[a].start]).cmp(&key(&positions[runs[b].start])));
    for w in order.windows(2) {
        let last = key(&positions[runs[w[0]].end - 1]);
        let next = key(&positions[runs[w[1]].start]);
        if last > next || (last == next && w[0] > w[1]) {
            return None;
        }
    }
    Some(
        order
            .iter()
            .flat_map(|&r| positions[runs[r].clone()].iter().copied())
            .collect(),
    )
}

/// The columns `columns` (by position in every batch) of the rows at `positions`, in that
/// order, as one batch of `schema`. Positions that mostly continue one another (blocks of a
/// batch's rows, as [`ordered_runs`] gives) are copied a block at a time.
pub fn gather(
    batches: &[RecordBatch],
    columns: &[usize],
    positions: &[(usize, usize)],
    schema: SchemaRef,
) -> Result<RecordBatch> {
    let blocks = blocks(positions);
    if blocks.len().saturating_mul(BLOCK_ROWS_MIN) <= positions.len() {
        gather_blocks(batches, columns, &blocks, schema)
    } else {
        gather_rows(batches, columns, positions, schema)
    }
}

/// Blocks of at least this many rows on average are copied by block, else row by row.
const BLOCK_ROWS_MIN: usize = 8;

/// `positions` as `(batch, first row, rows)` blocks of consecutive rows of one batch.
fn blocks(positions: &[(usize, usize)]) -> Vec<(usize, usize, usize)> {
    let mut out: Vec<(usize, usize, usize)> = Vec::new();
    for &(b, r) in positions {
        match out.last_mut() {
            Some((lb, start, len)) if *lb == b && *start + *len == r => *len += 1,
            _ => out.push((b, r, 1)),
        }
    }
    out
}

fn gather_blocks(
    batches: &[RecordBatch],
    columns: &[usize],
    blocks: &[(usize, usize, usize)],
    schema: SchemaRef,
) -> Result<RecordBatch> {
    let cols = columns
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let ty = schema.field(i).data_type();
            if let Some(dicts) = dictionaries(batches, c) {
                return conform(expand_blocks(&dicts, blocks)?, ty);
            }
            let parts: Vec<ArrayRef> = blocks
                .iter()
                .map(|&(b, start, len)| batches[b].column(c).slice(start, len))
                .collect();
            let parts: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
            match parts.as_slice() {
                [] => Ok(new_empty_array(ty)),
                _ => conform(concat(&parts)?, ty),
            }
        })
        .collect::<Result<Vec<ArrayRef>>>()?;
    RecordBatch::try_new(schema, cols)
}

fn gather_rows(
    batches: &[RecordBatch],
    columns: &[usize],
    positions: &[(usize, usize)],
    schema: SchemaRef,
) -> Result<RecordBatch> {
    let cols = columns
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let arrays: Vec<&dyn Array> = batches.iter().map(|b| b.column(c).as_ref()).collect();
            conform(interleave(&arrays, positions)?, schema.field(i).data_type())
        })
        .collect::<Result<Vec<ArrayRef>>>()?;
    RecordBatch::try_new(schema, cols)
}

/// `a` as type `ty` (a dictionary as its values); `a` itself when it has that type.
pub fn conform(a: ArrayRef, ty: &DataType) -> Result<ArrayRef> {
    if a.data_type() == ty {
        return Ok(a);
    }
    cast(&a, ty)
}

/// Column `c` of every batch as a dictionary with `UInt32` keys, or `None` if one is not.
fn dictionaries(batches: &[RecordBatch], c: usize) -> Option<Vec<&DictionaryArray<UInt32Type>>> {
    batches
        .iter()
        .map(|b| b.column(c).as_dictionary_opt::<UInt32Type>())
        .collect::<Option<Vec<_>>>()
        .filter(|d| !d.is_empty())
}

/// The rows of `blocks` of dictionary columns as their values: every batch's values
/// concatenated once (a value per series, few), then one `take` of them by the blocks' keys,
/// so each row's value is copied once.
fn expand_blocks(
    dicts: &[&DictionaryArray<UInt32Type>],
    blocks: &[(usize, usize, usize)],
) -> Result<ArrayRef> {
    let mut base = Vec::with_capacity(dicts.len());
    let mut at = 0u32;
    for d in dicts {
        base.push(at);
        at = u32::try_from(d.values().len())
            .ok()
            .and_then(|n| at.checked_add(n))
            .ok_or_else(|| ArrowError::ComputeError("dictionary values past u32".into()))?;
    }
    let values: Vec<&dyn Array> = dicts.iter().map(|d| d.values().as_ref()).collect();
    let values = concat(&values)?;
    let rows: usize = blocks.iter().map(|b| b.2).sum();
    let mut keys: Vec<u32> = Vec::with_capacity(rows);
    let mut nulls = NullBufferBuilder::new(rows);
    for &(b, start, len) in blocks {
        let k = dicts[b].keys();
        // Wrapping: a NULL key's slot may hold anything, and `take` never reads it.
        keys.extend(
            k.values()[start..start + len]
                .iter()
                .map(|v| v.wrapping_add(base[b])),
        );
        match k.nulls() {
            Some(n) => (start..start + len).for_each(|r| nulls.append(n.is_valid(r))),
            None => nulls.append_n_non_nulls(len),
        }
    }
    // A NULL key's value (whatever its slot holds) is dropped by `take`: its row is NULL.
    take(
        &values,
        &UInt32Array::new(keys.into(), nulls.finish()),
        None,
    )
}

/// The bytes `batch` takes once its dictionary columns are written out: at most a 4-byte
/// offset and the longest value per row for each of those, the memory size of the others.
pub fn expanded_size(batch: &RecordBatch) -> usize {
    batch
        .columns()
        .iter()
        .map(|c| {
            let Some(d) = c.as_dictionary_opt::<UInt32Type>() else {
                return c.get_array_memory_size();
            };
            match d.values().as_string_opt::<i32>() {
                Some(v) => {
                    let longest = v.offsets().lengths().max().unwrap_or(0);
                    d.len().saturating_mul(4 + longest) + v.get_array_memory_size()
                }
                None => c.get_array_memory_size(),
            }
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Float64Array, Int64Array, StringArray, UInt64Array};
    use arrow::compute::{
        SortColumn, concat_batches, filter_record_batch, lexsort_to_indices, take_record_batch,
    };
    use arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    fn schema() -> SchemaRef {
        Arc::new(Schema::new(vec![
            Field::new("host", DataType::Utf8, true),
            Field::new("t", DataType::Int64, true),
            Field::new("v", DataType::Float64, true),
        ]))
    }

    type Row = (Option<&'static str>, Option<i64>, Option<f64>);

    fn batch(rows: &[Row]) -> RecordBatch {
        RecordBatch::try_new(
            schema(),
            vec![
                Arc::new(StringArray::from_iter(rows.iter().map(|r| r.0))),
                Arc::new(Int64Array::from_iter(rows.iter().map(|r| r.1))),
                Arc::new(Float64Array::from_iter(rows.iter().map(|r| r.2))),
            ],
        )
        .unwrap()
    }

    /// What the positions must equal: a stable lexicographic sort of the concatenation, then
    /// the limit. (`lexsort_to_indices` is not stable: the row number is its last key.)
    fn reference(batches: &[RecordBatch], keys: &[SortKey], limit: Option<usize>) -> RecordBatch {
        let all = concat_batches(&schema(), batches).unwrap();
        let mut cols: Vec<SortColumn> = keys
            .iter()
            .map(|k| SortColumn {
                values: all.column(all.schema().index_of(k.column).unwrap()).clone(),
                options: Some(k.options),
            })
            .collect();
        let n = all.num_rows() as u64;
        cols.push(SortColumn {
            values: Arc::new(UInt64Array::from_iter_values(0..n)),
            options: None,
        });
        let idx = lexsort_to_indices(&cols, None).unwrap();
        let sorted = take_record_batch(&all, &idx).unwrap();
        match limit {
            Some(l) if l < sorted.num_rows() => sorted.slice(0, l),
            _ => sorted,
        }
    }

    fn asc(nulls_first: bool) -> SortOptions {
        SortOptions {
            descending: false,
            nulls_first,
        }
    }

    fn desc(nulls_first: bool) -> SortOptions {
        SortOptions {
            descending: true,
            nulls_first,
        }
    }

    #[test]
    fn positions_equal_a_stable_sort_of_the_concatenation() {
        let runs = vec![
            // A scan's output: each series in time order, series after series.
            batch(&[
                (Some("b"), Some(1), Some(1.0)),
                (Some("b"), Some(5), Some(2.0)),
                (Some("a"), Some(2), Some(f64::NAN)),
                (Some("a"), Some(7), Some(-0.0)),
            ]),
            batch(&[]),
            batch(&[
                (Some("a"), Some(3), Some(0.0)),
                (None, Some(4), None),
                (Some("b"), Some(5), Some(3.0)),
                (Some("é"), None, Some(f64::INFINITY)),
                (Some("a"), Some(3), Some(-1.0)),
            ]),
        ];
        let host_time = [asc(false), asc(true), desc(false), desc(true)];
        let cases: Vec<(&str, Vec<SortKey>)> = vec![
            (
                "host, time",
                vec![key("host", asc(false)), key("t", asc(false))],
            ),
            ("value only (NaN, -0.0, inf)", vec![key("v", asc(false))]),
            ("value desc nulls first", vec![key("v", desc(true))]),
            (
                "time desc, host",
                vec![key("t", desc(false)), key("host", asc(true))],
            ),
        ];
        for (name, keys) in cases {
            for limit in [None, Some(0), Some(1), Some(3), Some(9), Some(100)] {
                let positions = sorted_positions(&runs, &[], &keys, limit).unwrap();
                let got = gather(&runs, &[0, 1, 2], &positions, schema()).unwrap();
                let want = reference(&runs, &keys, limit);
                assert_eq!(got, want, "{name}, limit {limit:?}");
            }
        }
        for o in host_time {
            let keys = [key("host", o), key("t", o)];
            let got = sorted_positions(&runs, &[], &keys, None).unwrap();
            let want = reference(&runs, &keys, None);
            assert_eq!(gather(&runs, &[0, 1, 2], &got, schema()).unwrap(), want);
        }
    }

    /// Inputs named by what their runs are, whether the runs path answers (else the full
    /// sort does), and either way the stable sort's order.
    #[test]
    fn sorted_runs_are_concatenated_only_when_that_is_the_stable_order() {
        let r = |h, t| (Some(h), Some(t), None);
        let cases: Vec<(&str, Vec<RecordBatch>, &[&str], bool)> = vec![
            (
                "series blocks in another order, across batches",
                vec![
                    batch(&[r("c", 1), r("c", 2), r("c", 3), r("a", 1), r("a", 2)]),
                    batch(&[r("b", 1), r("a", 5)]),
                ],
                &["host", "t"],
                true,
            ),
            (
                "series blocks whose names happen to ascend (one maximal sorted run)",
                vec![
                    batch(&[r("a", 1), r("a", 2), r("c", 1), r("c", 2)]),
                    batch(&[r("b", 1), r("b", 2)]),
                ],
                &["host", "t"],
                true,
            ),
            (
                "a series out of time order",
                vec![batch(&[r("b", 1), r("b", 0), r("a", 2)])],
                &["host", "t"],
                true,
            ),
            (
                "a run ends past the next run's start",
                vec![batch(&[r("a", 1), r("b", 1), r("b", 1), r("a", 0)])],
                &["host"],
                false,
            ),
            (
                "equal keys at the edge of two runs, the later run first",
                vec![batch(&[r("b", 1), r("c", 2), r("a", 3), r("b", 4)])],
                &["host"],
                false,
            ),
            (
                "one run",
                vec![batch(&[r("a", 1), r("a", 1), r("b", 0)])],
                &["host", "t"],
                true,
            ),
            (
                "overlapping runs",
                vec![batch(&[r("a", 1), r("c", 1), r("b", 1), r("d", 1)])],
                &["host"],
                false,
            ),
            (
                "ties inside a run",
                vec![batch(&[r("c", 1), r("a", 1), r("b", 1), r("b", 2)])],
                &["host"],
                true,
            ),
        ];
        for (name, batches, columns, by_runs) in cases {
            let keys: Vec<SortKey> = columns.iter().map(|c| key(c, asc(false))).collect();
            let positions = sorted_positions(&batches, &[], &keys, None).unwrap();
            let got = gather(&batches, &[0, 1, 2], &positions, schema()).unwrap();
            assert_eq!(got, reference(&batches, &keys, None), "{name}");
            // Both ways of gathering give the same batch.
            let by_blocks = gather_blocks(&batches, &[0, 1, 2], &blocks(&positions), schema());
            assert_eq!(by_blocks.unwrap(), got, "{name}");
            // Whether the runs path took it.
            let rows = key_rows(&batches, &keys).unwrap();
            let all: Vec<(usize, usize)> = batches
                .iter()
                .enumerate()
                .flat_map(|(b, x)| (0..x.num_rows()).map(move |r| (b, r)))
                .collect();
            let groups = group_ids(&batches, &all, &keys).unwrap();
            let runs = ordered_runs(&all, &groups, &|&(b, r): &(usize, usize)| rows[b].row(r));
            assert_eq!(runs.is_some(), by_runs, "{name}");
            if let Some(runs) = runs {
                assert_eq!(runs, positions, "{name}");
            }
        }
    }

    /// `b` with its host column as a dictionary with `UInt32` keys, as a scan gives tags:
    /// values in another order than the rows, one unused, and a missing host as a NULL key
    /// (`null_keys`) or as a key to a NULL value.
    fn dictionary_hosts(b: &RecordBatch, null_keys: bool) -> RecordBatch {
        let hosts = b.column(0).as_string::<i32>();
        let mut values: Vec<Option<&str>> = vec![Some("unused"), None];
        for h in hosts.iter().flatten() {
            if !values.contains(&Some(h)) {
                values.insert(1, Some(h));
            }
        }
        let null_at = values.iter().position(Option::is_none).unwrap() as u32;
        let keys: UInt32Array = hosts
            .iter()
            .map(|h| match h {
                Some(h) => Some(values.iter().position(|v| *v == Some(h)).unwrap() as u32),
                None => (!null_keys).then_some(null_at),
            })
            .collect();
        let dict =
            DictionaryArray::<UInt32Type>::try_new(keys, Arc::new(StringArray::from(values)))
                .unwrap();
        let ty = dict.data_type().clone();
        let schema = Arc::new(Schema::new(vec![
            Field::new("host", ty, true),
            Field::new("t", DataType::Int64, true),
            Field::new("v", DataType::Float64, true),
        ]));
        let mut cols = b.columns().to_vec();
        cols[0] = Arc::new(dict);
        RecordBatch::try_new(schema, cols).unwrap()
    }

    /// Hosts as dictionaries sort by their values and are gathered as strings (by block and
    /// row by row), exactly as the same rows with the hosts written out.
    #[test]
    fn dictionary_tags_sort_and_gather_as_their_strings() {
        let r = |h, t| (h, Some(t), Some(t as f64));
        let plain = vec![
            batch(&[
                r(Some("c"), 1),
                r(Some("c"), 2),
                r(None, 1),
                r(Some("a"), 1),
            ]),
            batch(&[]),
            batch(&[
                r(Some("b"), 1),
                r(Some("a"), 5),
                r(Some("é"), 0),
                r(None, 2),
            ]),
            batch(&[r(Some("a"), 3), r(Some("a"), 4)]),
        ];
        let m0 = BooleanArray::from(vec![Some(true), None, Some(true), Some(true)]);
        let mask_sets: [&[Option<&BooleanArray>]; 2] = [&[], &[Some(&m0)]];
        let key_sets = [
            vec![key("host", asc(false)), key("t", asc(false))],
            vec![key("host", desc(true)), key("t", asc(false))],
            vec![key("t", asc(false)), key("host", asc(true))],
        ];
        for null_keys in [true, false] {
            let dict: Vec<RecordBatch> = plain
                .iter()
                .map(|b| dictionary_hosts(b, null_keys))
                .collect();
            for keys in &key_sets {
                for masks in mask_sets {
                    for limit in [None, Some(3)] {
                        let name = format!(
                            "null keys {null_keys}, keys {:?}, {} masks, limit {limit:?}",
                            keys.iter().map(|k| k.column).collect::<Vec<_>>(),
                            masks.len()
                        );
                        let want_pos = sorted_positions(&plain, masks, keys, limit).unwrap();
                        let pos = sorted_positions(&dict, masks, keys, limit).unwrap();
                        assert_eq!(pos, want_pos, "{name}");
                        let want = gather_rows(&plain, &[0, 1, 2], &pos, schema()).unwrap();
                        let by_rows = gather_rows(&dict, &[0, 1, 2], &pos, schema()).unwrap();
                        assert_eq!(by_rows, want, "{name}, row by row");
                        let blocks = blocks(&pos);
                        let by_blocks = gather_blocks(&dict, &[0, 1, 2], &blocks, schema());
                        assert_eq!(by_blocks.unwrap(), want, "{name}, by block");
                    }
                }
            }
        }
        // No rows: an empty batch of the plain schema.
        let dict = [dictionary_hosts(&plain[1], true)];
        let got = gather(&dict, &[0, 1, 2], &[], schema()).unwrap();
        assert_eq!(got, batch(&[]));
    }

    /// A NULL key whose slot holds `u32::MAX`, in a batch whose values are offset by the one
    /// before: the row is NULL, and nothing overflows.
    #[test]
    fn a_null_key_is_a_null_row_whatever_its_slot_holds() {
        let dict = |keys: Vec<u32>, valid: Vec<bool>, values: Vec<&str>| -> RecordBatch {
            let keys = UInt32Array::new(keys.into(), Some(valid.into()));
            let d =
                DictionaryArray::<UInt32Type>::try_new(keys, Arc::new(StringArray::from(values)))
                    .unwrap();
            let schema = Arc::new(Schema::new(vec![Field::new(
                "host",
                d.data_type().clone(),
                true,
            )]));
            RecordBatch::try_new(schema, vec![Arc::new(d)]).unwrap()
        };
        let batches = [
            dict(vec![0, 1], vec![true, true], vec!["a", "b"]),
            dict(vec![0, u32::MAX], vec![true, false], vec!["c"]),
        ];
        let plain = Arc::new(Schema::new(vec![Field::new("host", DataType::Utf8, true)]));
        let got = gather_blocks(&batches, &[0], &[(0, 0, 2), (1, 0, 2)], plain).unwrap();
        let hosts = got.column(0).as_string::<i32>();
        assert_eq!(
            hosts.iter().collect::<Vec<_>>(),
            [Some("a"), Some("b"), Some("c"), None]
        );
    }

    #[test]
    fn expanded_size_bounds_the_written_out_tags() {
        let hosts: Vec<String> = (0..1000).map(|i| "h".repeat(1 + i % 37)).collect();
        let rows: Vec<Row> = (0..1000).map(|i| (None, Some(i as i64), None)).collect();
        let mut b = batch(&rows);
        let strings: ArrayRef = Arc::new(StringArray::from_iter_values(&hosts));
        b = RecordBatch::try_new(
            schema(),
            vec![strings.clone(), b.column(1).clone(), b.column(2).clone()],
        )
        .unwrap();
        let dict = dictionary_hosts(&b, true);
        let written = strings.as_string::<i32>();
        let string_bytes = written.value_data().len() + 4 * (written.len() + 1);
        let others = b.column(1).get_array_memory_size() + b.column(2).get_array_memory_size();
        let size = expanded_size(&dict);
        assert!(
            size >= string_bytes + others,
            "{size} < {string_bytes} + {others}"
        );
        assert!(
            size <= 2 * (string_bytes + others) + (64 << 10),
            "{size}: not a bound"
        );
        assert_eq!(expanded_size(&b), b.get_array_memory_size());
    }

    #[test]
    fn no_batches_and_a_projection() {
        assert!(
            sorted_positions(&[], &[], &[key("host", asc(false))], None)
                .unwrap()
                .is_empty()
        );
        let b = [batch(&[
            (Some("z"), Some(1), None),
            (Some("y"), Some(2), Some(1.0)),
        ])];
        let positions = sorted_positions(&b, &[], &[key("host", asc(false))], None).unwrap();
        assert_eq!(positions, [(0, 1), (0, 0)]);
        let only_v = Arc::new(Schema::new(vec![Field::new("v", DataType::Float64, true)]));
        let got = gather(&b, &[2], &positions, only_v).unwrap();
        let v = got
            .column(0)
            .as_any()
            .downcast_ref::<Float64Array>()
            .unwrap();
        assert_eq!(v.iter().collect::<Vec<_>>(), [Some(1.0), None]);
    }

    #[test]
    fn masked_rows_are_left_out() {
        let r = |h, t| (Some(h), Some(t), None);
        let batches = vec![
            batch(&[r("c", 1), r("c", 2), r("a", 1), r("a", 2), r("a", 3)]),
            batch(&[r("b", 1), r("b", 2)]),
            batch(&[r("d", 1)]),
        ];
        let m0 = BooleanArray::from(vec![Some(true), Some(false), None, Some(true), Some(true)]);
        let m2 = BooleanArray::from(vec![false]);
        let masks = [Some(&m0), None, Some(&m2)];
        let filtered: Vec<RecordBatch> = batches
            .iter()
            .zip(&masks)
            .map(|(b, m)| m.map_or(b.clone(), |m| filter_record_batch(b, m).unwrap()))
            .collect();
        let keys = [key("host", asc(false)), key("t", asc(false))];
        for limit in [None, Some(2), Some(4), Some(10)] {
            let positions = sorted_positions(&batches, &masks, &keys, limit).unwrap();
            let got = gather(&batches, &[0, 1, 2], &positions, schema()).unwrap();
            assert_eq!(got, reference(&filtered, &keys, limit), "limit {limit:?}");
        }
        // Every row masked out: nothing.
        let none = BooleanArray::from(vec![false; 5]);
        let p = sorted_positions(&batches[..1], &[Some(&none)], &keys, None).unwrap();
        assert!(p.is_empty());
    }

    #[test]
    fn positions_become_blocks_of_consecutive_rows() {
        type Case = (
            &'static str,
            Vec<(usize, usize)>,
            Vec<(usize, usize, usize)>,
        );
        let cases: Vec<Case> = vec![
            ("none", vec![], vec![]),
            ("one block", vec![(0, 3), (0, 4), (0, 5)], vec![(0, 3, 3)]),
            ("a gap", vec![(0, 3), (0, 5)], vec![(0, 3, 1), (0, 5, 1)]),
            (
                "backwards",
                vec![(0, 5), (0, 4)],
                vec![(0, 5, 1), (0, 4, 1)],
            ),
            (
                "the same rows of another batch",
                vec![(0, 0), (0, 1), (1, 2), (1, 3), (0, 2)],
                vec![(0, 0, 2), (1, 2, 2), (0, 2, 1)],
            ),
        ];
        for (name, positions, want) in cases {
            assert_eq!(blocks(&positions), want, "{name}");
        }
        // No rows at all: an empty batch of the schema.
        let got = gather(&[], &[0, 1, 2], &[], schema()).unwrap();
        assert_eq!((got.num_rows(), got.schema()), (0, schema()));
    }

    #[test]
    fn an_unknown_key_column_is_an_error() {
        let b = [batch(&[(Some("z"), Some(1), None)])];
        assert!(sorted_positions(&b, &[], &[key("nope", asc(false))], None).is_err());
    }

    fn key(column: &'static str, options: SortOptions) -> SortKey<'static> {
        SortKey { column, options }
    }
}
