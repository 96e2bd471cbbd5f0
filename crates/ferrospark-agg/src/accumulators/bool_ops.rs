//! `bool_and` (`every`) and `bool_or` (`some`, `any`): NULL when no non-NULL value was seen.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BooleanArray};
use ferrospark_common::Result;

use super::{EmitTo, GroupsAccumulator};

/// AND (`is_or = false`) or OR of the values of every group.
#[derive(Debug)]
pub struct BoolAccumulator {
    /// 0 = false, 1 = true, 2 = no value yet.
    values: Vec<u8>,
    is_or: bool,
}

impl BoolAccumulator {
    /// `bool_and` or (`is_or`) `bool_or`.
    pub fn new(is_or: bool) -> Self {
        Self {
            values: Vec::new(),
            is_or,
        }
    }

    fn add(&mut self, array: &ArrayRef, groups: &[u32], total: usize) {
        self.values.resize(total, 2);
        let a = array.as_boolean();
        for (r, &g) in groups.iter().enumerate() {
            if a.is_null(r) {
                continue;
            }
            let v = a.value(r) as u8;
            let cur = &mut self.values[g as usize];
            *cur = match (*cur, self.is_or) {
                (2, _) => v,
                (c, true) => c | v,
                (c, false) => c & v,
            };
        }
    }
}

impl GroupsAccumulator for BoolAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.add(&values[0], groups, total);
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.add(&states[0], groups, total);
        Ok(())
    }

    fn evaluate(&mut self, emit: EmitTo) -> Result<ArrayRef> {
        let v = emit.take(&mut self.values);
        Ok(Arc::new(BooleanArray::from_iter(
            v.iter().map(|&b| (b != 2).then_some(b == 1)),
        )))
    }

    fn state(&mut self, emit: EmitTo) -> Result<Vec<ArrayRef>> {
        Ok(vec![self.evaluate(emit)?])
    }

    fn size(&self) -> usize {
        self.values.capacity()
    }
}
