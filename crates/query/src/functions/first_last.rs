//! `first(v [, ts])` and `last(v [, ts])`: the value of `v` at the earliest (latest) `ts` of
//! each group, as TimescaleDB spells them; with one argument, `ts` is the table's `time`
//! column (the [`FirstLastTimeRule`] analyzer rule adds it).
//!
//! Rules: rows whose `v` or `ts` is NULL are skipped (a sparse field's last reading is its
//! last non-NULL one); a group with no such row gives NULL; between rows with the same `ts`,
//! `first` keeps the one seen first and `last` the one seen last.
//!
//! Speed for many groups: the [`GroupsAccumulator`] finds each group's winning row of a
//! batch by comparing integers, and converts at most one value per group and batch.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, FieldRef, Int64Type};
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Result, ScalarValue, plan_err};
use datafusion::config::ConfigOptions;
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDFImpl, EmitTo, Expr, GroupsAccumulator, LogicalPlan, Signature,
    TypeSignature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;

/// The name of the implicit time column.
pub const TIME: &str = "time";

#[derive(Debug, PartialEq, Eq, Hash)]
pub struct FirstLast {
    last: bool,
    signature: Signature,
}

impl FirstLast {
    pub fn first() -> Self {
        Self::new(false)
    }
    pub fn last() -> Self {
        Self::new(true)
    }
    fn new(last: bool) -> Self {
        Self {
            last,
            signature: Signature::one_of(
                vec![TypeSignature::Any(1), TypeSignature::Any(2)],
                Volatility::Immutable,
            ),
        }
    }
}

impl AggregateUDFImpl for FirstLast {
    fn name(&self) -> &str {
        if self.last { "last" } else { "first" }
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        if let Some(t) = arg_types.get(1)
            && !matches!(
                t,
                DataType::Timestamp(..) | DataType::Int64 | DataType::Date32
            )
        {
            return plan_err!(
                "{}(value, time): the second argument must be a timestamp, got {t}",
                self.name()
            );
        }
        Ok(arg_types[0].clone())
    }
    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![
            Arc::new(Field::new(
                "value",
                args.return_field.data_type().clone(),
                true,
            )),
            Arc::new(Field::new("ts", DataType::Int64, true)),
        ])
    }
    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(One {
            inner: Groups::new(self.last, args.return_field.data_type().clone()),
        }))
    }
    fn groups_accumulator_supported(&self, _args: AccumulatorArgs) -> bool {
        true
    }
    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn GroupsAccumulator>> {
        Ok(Box::new(Groups::new(
            self.last,
            args.return_field.data_type().clone(),
        )))
    }
}

/// Each group's winning value and its time.
#[derive(Debug)]
pub struct Groups {
    last: bool,
    data_type: DataType,
    ts: Vec<Option<i64>>,
    values: Vec<ScalarValue>,
    /// Scratch: the best (ts, row) of the current batch per group, and the groups touched.
    best: Vec<Option<(i64, usize)>>,
    touched: Vec<usize>,
}

impl Groups {
    fn new(last: bool, data_type: DataType) -> Self {
        Self {
            last,
            data_type,
            ts: Vec::new(),
            values: Vec::new(),
            best: Vec::new(),
            touched: Vec::new(),
        }
    }

    /// Does `t` beat `old`? Ties go to the later row for `last`, the earlier for `first`.
    fn beats(&self, t: i64, old: i64) -> bool {
        if self.last { t >= old } else { t < old }
    }

    fn absorb(
        &mut self,
        values: &ArrayRef,
        ts: &ArrayRef,
        groups: &[usize],
        filter: Option<&BooleanArray>,
        total: usize,
    ) -> Result<()> {
        let null = ScalarValue::try_from(&self.data_type)?;
        self.ts.resize(total, None);
        self.values.resize(total, null);
        self.best.resize(total, None);
        let ts = cast(ts, &DataType::Int64)?;
        let ts = ts.as_primitive::<Int64Type>();
        for (row, &g) in groups.iter().enumerate() {
            if values.is_null(row)
                || ts.is_null(row)
                || filter.is_some_and(|f| !f.is_valid(row) || !f.value(row))
            {
                continue;
            }
            let t = ts.value(row);
            match self.best[g] {
                None => {
                    self.best[g] = Some((t, row));
                    self.touched.push(g);
                }
                Some((old, _)) if self.beats(t, old) => self.best[g] = Some((t, row)),
                Some(_) => {}
            }
        }
        for g in std::mem::take(&mut self.touched) {
            let (t, row) = self.best[g].take().expect("touched groups have a best row");
            if self.ts[g].is_none_or(|old| self.beats(t, old)) {
                self.ts[g] = Some(t);
                self.values[g] = ScalarValue::try_from_array(values, row)?;
            }
        }
        Ok(())
    }

    fn emit(&mut self, emit_to: EmitTo) -> Result<(ArrayRef, ArrayRef)> {
        let values = emit_to.take_needed(&mut self.values);
        let ts = emit_to.take_needed(&mut self.ts);
        let n = values.len();
        self.best.truncate(self.ts.len());
        let values = if n == 0 {
            arrow::array::new_empty_array(&self.data_type)
        } else {
            ScalarValue::iter_to_array(values)?
        };
        Ok((values, Arc::new(arrow::array::Int64Array::from(ts))))
    }
}

impl GroupsAccumulator for Groups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        let Some(ts) = values.get(1) else {
            return plan_err!("first/last: the time argument is missing");
        };
        self.absorb(&values[0], ts, group_indices, opt_filter, total_num_groups)
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        Ok(self.emit(emit_to)?.0)
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        let (v, t) = self.emit(emit_to)?;
        Ok(vec![v, t])
    }

    fn merge_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        total_num_groups: usize,
    ) -> Result<()> {
        self.absorb(
            &values[0],
            &values[1],
            group_indices,
            None,
            total_num_groups,
        )
    }

    fn convert_to_state(
        &self,
        values: &[ArrayRef],
        opt_filter: Option<&BooleanArray>,
    ) -> Result<Vec<ArrayRef>> {
        // Each row is its own state; filtered-out rows become NULL (and are skipped).
        let v = match opt_filter {
            None => values[0].clone(),
            Some(f) => {
                let drop: BooleanArray = f.iter().map(|x| Some(!x.unwrap_or(false))).collect();
                arrow::compute::nullif(&values[0], &drop)?
            }
        };
        Ok(vec![v, cast(&values[1], &DataType::Int64)?])
    }

    fn size(&self) -> usize {
        self.values.iter().map(ScalarValue::size).sum::<usize>()
            + self.ts.capacity() * 16
            + self.best.capacity() * 24
    }
}

/// The ungrouped form: one group.
#[derive(Debug)]
struct One {
    inner: Groups,
}

impl Accumulator for One {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let groups = vec![0; values[0].len()];
        GroupsAccumulator::update_batch(&mut self.inner, values, &groups, None, 1)
    }
    fn evaluate(&mut self) -> Result<ScalarValue> {
        match self.inner.values.first() {
            Some(v) => Ok(v.clone()),
            None => ScalarValue::try_from(&self.inner.data_type),
        }
    }
    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.inner.size()
    }
    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let v = self.evaluate()?;
        let t = ScalarValue::Int64(self.inner.ts.first().copied().flatten());
        Ok(vec![v, t])
    }
    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let groups = vec![0; states[0].len()];
        GroupsAccumulator::merge_batch(&mut self.inner, states, &groups, 1)
    }
}

/// Rewrites `first(v)` / `last(v)` (and `increase`, `rate`, `delta`) to `first(v, time)` …,
/// with `time` the input's column of that name.
#[derive(Debug, Default)]
pub struct FirstLastTimeRule;

impl AnalyzerRule for FirstLastTimeRule {
    fn name(&self) -> &str {
        "tempora_first_last_time"
    }

    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up(|node| {
            let LogicalPlan::Aggregate(agg) = node else {
                return Ok(Transformed::no(node));
            };
            let time = agg
                .input
                .schema()
                .columns()
                .into_iter()
                .find(|c| c.name == TIME);
            let needs = |e: &Expr| match e {
                Expr::AggregateFunction(f) => is_one_arg_first_last(f),
                Expr::Alias(a) => {
                    matches!(&*a.expr, Expr::AggregateFunction(f) if is_one_arg_first_last(f))
                }
                _ => false,
            };
            let Some(time) = time.filter(|_| agg.aggr_expr.iter().any(needs)) else {
                return Ok(Transformed::no(LogicalPlan::Aggregate(agg)));
            };
            let aggr_expr = agg
                .aggr_expr
                .iter()
                .map(|e| add_time(e, &time))
                .collect::<Result<Vec<_>>>()?;
            let new = datafusion::logical_expr::Aggregate::try_new(
                agg.input.clone(),
                agg.group_expr.clone(),
                aggr_expr,
            )?;
            Ok(Transformed::yes(LogicalPlan::Aggregate(new)))
        })
        .map(|t| t.data)
    }
}

/// Aggregates whose one-argument form means "ordered by `time`".
const TIME_ORDERED: [&str; 5] = ["first", "last", "increase", "rate", "delta"];

fn is_one_arg_first_last(f: &AggregateFunction) -> bool {
    TIME_ORDERED.contains(&f.func.name()) && f.params.args.len() == 1
}

/// `first(v)` → `first(v, time) AS "first(v)"`, keeping the name the plan above refers to.
fn add_time(e: &Expr, time: &datafusion::common::Column) -> Result<Expr> {
    match e {
        Expr::AggregateFunction(f) if is_one_arg_first_last(f) => {
            let name = e.schema_name().to_string();
            let mut f = f.clone();
            f.params.args.push(Expr::Column(time.clone()));
            Ok(Expr::AggregateFunction(f).alias(name))
        }
        Expr::Alias(a) => Ok(add_time(&a.expr, time)?
            .unalias()
            .alias_qualified(a.relation.clone(), a.name.clone())),
        e => Ok(e.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Float64Array, Int64Array};

    fn run(
        last: bool,
        v: Vec<Option<f64>>,
        ts: Vec<Option<i64>>,
        g: Vec<usize>,
    ) -> Vec<Option<f64>> {
        let mut acc = Groups::new(last, DataType::Float64);
        let n = g.iter().max().map_or(0, |m| m + 1);
        let v: ArrayRef = Arc::new(Float64Array::from(v));
        let t: ArrayRef = Arc::new(Int64Array::from(ts));
        // Two halves, to cross a batch boundary.
        let mid = g.len() / 2;
        for (lo, hi) in [(0, mid), (mid, g.len())] {
            acc.update_batch(
                &[v.slice(lo, hi - lo), t.slice(lo, hi - lo)],
                &g[lo..hi],
                None,
                n,
            )
            .unwrap();
        }
        let out = acc.evaluate(EmitTo::All).unwrap();
        out.as_primitive::<arrow::datatypes::Float64Type>()
            .iter()
            .collect()
    }

    #[test]
    fn picks_by_time_not_by_arrival() {
        let v = vec![
            Some(1.0),
            Some(2.0),
            Some(3.0),
            Some(4.0),
            Some(5.0),
            Some(6.0),
        ];
        let ts = vec![Some(30), Some(10), Some(20), Some(5), Some(50), Some(40)];
        let g = vec![0, 0, 0, 1, 1, 1];
        assert_eq!(
            run(false, v.clone(), ts.clone(), g.clone()),
            vec![Some(2.0), Some(4.0)]
        );
        assert_eq!(run(true, v, ts, g), vec![Some(1.0), Some(5.0)]);
    }

    #[test]
    fn nulls_are_skipped_and_empty_groups_are_null() {
        let v = vec![Some(1.0), None, Some(3.0), None];
        let ts = vec![Some(1), Some(9), None, Some(1)];
        let g = vec![0, 0, 0, 2];
        assert_eq!(
            run(true, v.clone(), ts.clone(), g.clone()),
            vec![Some(1.0), None, None]
        );
        assert_eq!(run(false, v, ts, g), vec![Some(1.0), None, None]);
    }

    #[test]
    fn ties_go_to_the_first_seen_for_first_and_the_last_seen_for_last() {
        let v = vec![Some(1.0), Some(2.0), Some(3.0), Some(4.0)];
        let ts = vec![Some(7), Some(7), Some(7), Some(7)];
        let g = vec![0, 0, 0, 0];
        assert_eq!(
            run(false, v.clone(), ts.clone(), g.clone()),
            vec![Some(1.0)]
        );
        assert_eq!(run(true, v, ts, g), vec![Some(4.0)]);
    }

    #[test]
    fn partial_states_merge() {
        let mut a = Groups::new(true, DataType::Float64);
        let mut b = Groups::new(true, DataType::Float64);
        let arr = |v: Vec<f64>| -> ArrayRef { Arc::new(Float64Array::from(v)) };
        let ts = |t: Vec<i64>| -> ArrayRef { Arc::new(Int64Array::from(t)) };
        a.update_batch(&[arr(vec![1.0, 2.0]), ts(vec![5, 50])], &[0, 1], None, 2)
            .unwrap();
        b.update_batch(&[arr(vec![3.0, 4.0]), ts(vec![9, 40])], &[0, 1], None, 2)
            .unwrap();
        let state = b.state(EmitTo::All).unwrap();
        a.merge_batch(&state, &[0, 1], 2).unwrap();
        let out = a.evaluate(EmitTo::All).unwrap();
        let got: Vec<_> = out
            .as_primitive::<arrow::datatypes::Float64Type>()
            .iter()
            .collect();
        assert_eq!(got, vec![Some(3.0), Some(2.0)]);
    }
}
