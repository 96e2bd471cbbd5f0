//! `f(DISTINCT x)` kept as the set of distinct values per group (an object buffer), with `f`
//! applied to each group's set at the end. Used when one aggregation has DISTINCT aggregates
//! over different arguments, which Spark plans with an Expand; the answers are the same.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, StructArray};
use arrow_schema::DataType;
use ferrospark_common::{FerroError, Result};

use super::{combined_nulls, EmitTo, GroupsAccumulator};
use crate::functions::AggregateExpr;
use crate::group_values::normalize_key;

/// The distinct values of every group, and the aggregate to apply to them.
pub struct DistinctSetAccumulator {
    set: Box<dyn GroupsAccumulator>,
    inner: AggregateExpr,
}

impl DistinctSetAccumulator {
    /// `inner` over the distinct values kept by `set` (a collect_set accumulator).
    pub fn new(set: Box<dyn GroupsAccumulator>, inner: AggregateExpr) -> Self {
        Self { set, inner }
    }
}

impl GroupsAccumulator for DistinctSetAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        if values.len() < 2 {
            if values
                .first()
                .is_some_and(|v| v.data_type() == &DataType::Null)
            {
                // `count(DISTINCT NULL)`: NULLs never enter the set; the groups still exist.
                let empty = arrow_array::new_empty_array(&self.inner.input_type);
                return self.set.update_batch(&[empty], &[], total);
            }
            return self.set.update_batch(values, groups, total);
        }
        // Several arguments: one tuple per row, NULL (skipped) when any part is NULL.
        let DataType::Struct(fields) = &self.inner.input_type else {
            return Err(FerroError::Internal(
                "distinct tuple without its struct type".into(),
            ));
        };
        let nulls = combined_nulls(values);
        // Tuples compare as Spark groups them: one NaN, -0.0 = 0.0 in every part.
        let parts: Vec<ArrayRef> = values.iter().map(normalize_key).collect();
        let tuples = StructArray::try_new(fields.clone(), parts, nulls)?;
        self.set.update_batch(&[Arc::new(tuples)], groups, total)
    }

    fn merge_batch(&mut self, states: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.set.merge_batch(states, groups, total)
    }

    fn evaluate(&mut self, emit: EmitTo) -> Result<ArrayRef> {
        let sets = self.set.evaluate(emit)?;
        let lists = sets.as_list::<i32>();
        let offsets = lists.value_offsets();
        let (first, last) = (offsets[0] as usize, offsets[lists.len()] as usize);
        let values = lists.values().slice(first, last - first);
        let mut owner = Vec::with_capacity(values.len());
        for g in 0..lists.len() {
            let n = (offsets[g + 1] - offsets[g]) as usize;
            owner.extend(std::iter::repeat_n(g as u32, n));
        }
        let mut acc = self.inner.create_accumulator()?;
        // A tuple of several arguments (`corr(DISTINCT x, y)`) goes back in as its parts.
        let args = match values.as_struct_opt() {
            Some(tuples) if self.inner.args.len() > 1 => tuples.columns().to_vec(),
            _ => vec![values],
        };
        acc.update_batch(&args, &owner, lists.len())?;
        acc.evaluate(EmitTo::All)
    }

    fn state(&mut self, emit: EmitTo) -> Result<Vec<ArrayRef>> {
        self.set.state(emit)
    }

    fn size(&self) -> usize {
        self.set.size()
    }
}
