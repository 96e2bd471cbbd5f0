//! `count(*)` and `count(expr, ...)`: a bigint per group, never NULL.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{ArrayRef, Int64Array};
use ferrospark_common::Result;

use super::{combined_nulls, for_each_valid, EmitTo, GroupsAccumulator};

/// Counts rows whose arguments are all non-NULL (every row when there are none).
#[derive(Debug, Default)]
pub struct CountAccumulator {
    counts: Vec<i64>,
}

impl GroupsAccumulator for CountAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.counts.resize(total, 0);
        let counts = &mut self.counts;
        let nulls = combined_nulls(values);
        if total == 1 {
            // One group (a global aggregate): its rows less the NULL ones.
            let nulls = nulls.as_ref().map_or(0, |n| n.null_count());
            counts[0] += (groups.len() - nulls) as i64;
            return Ok(());
        }
        for_each_valid(nulls.as_ref(), groups, |_, g| counts[g] += 1);
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.counts.resize(total, 0);
        let partial = states[0].as_primitive::<Int64Type>();
        for (&g, &c) in groups.iter().zip(partial.values().iter()) {
            self.counts[g as usize] += c;
        }
        Ok(())
    }

    fn evaluate(&mut self, emit: EmitTo) -> Result<ArrayRef> {
        Ok(Arc::new(Int64Array::from(emit.take(&mut self.counts))))
    }

    fn state(&mut self, emit: EmitTo) -> Result<Vec<ArrayRef>> {
        Ok(vec![self.evaluate(emit)?])
    }

    fn reserve_groups(&mut self, groups: usize) {
        self.counts
            .reserve(groups.saturating_sub(self.counts.len()));
    }

    fn size(&self) -> usize {
        self.counts.capacity() * 8
    }
}
