//! `first` / `last` (optionally ignoring NULLs): Spark's buffer is the value plus `valueSet`.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BooleanArray};
use arrow_schema::DataType;
use ferrospark_common::Result;

use super::min_max::RowValues;
use super::{EmitTo, GroupsAccumulator};

/// First or last value per group, in input order.
pub struct FirstLastAccumulator {
    values: RowValues,
    set: Vec<bool>,
    is_last: bool,
    ignore_nulls: bool,
}

impl FirstLastAccumulator {
    /// `first(x)` (`is_last = false`) or `last(x)` over values of `dt`.
    pub fn new(dt: &DataType, is_last: bool, ignore_nulls: bool) -> Result<Self> {
        Ok(Self {
            values: RowValues::new(dt)?,
            set: Vec::new(),
            is_last,
            ignore_nulls,
        })
    }

    /// `value_set[r]` says whether row `r` carries a value (raw input: always).
    fn add(
        &mut self,
        array: &ArrayRef,
        value_set: Option<&BooleanArray>,
        groups: &[u32],
        total: usize,
    ) -> Result<()> {
        self.values.resize(total);
        self.set.resize(total, false);
        let rows = self.values.rows(array)?;
        let nulls = array.logical_nulls();
        for (r, &g) in groups.iter().enumerate() {
            let g = g as usize;
            if value_set.is_some_and(|s| !s.value(r)) {
                continue;
            }
            if self.ignore_nulls && nulls.as_ref().is_some_and(|n| n.is_null(r)) {
                continue;
            }
            if self.is_last || !self.set[g] {
                self.values.set(g, rows.row(r).as_ref());
                self.set[g] = true;
            }
        }
        Ok(())
    }
}

impl GroupsAccumulator for FirstLastAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.add(&values[0], None, groups, total)
    }

    fn merge_batch(&mut self, states: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.add(&states[0], Some(states[1].as_boolean()), groups, total)
    }

    fn evaluate(&mut self, emit: EmitTo) -> Result<ArrayRef> {
        emit.take(&mut self.set);
        self.values.emit(emit)
    }

    fn state(&mut self, emit: EmitTo) -> Result<Vec<ArrayRef>> {
        let set = emit.take(&mut self.set);
        Ok(vec![
            self.values.emit(emit)?,
            Arc::new(BooleanArray::from(set)),
        ])
    }

    fn size(&self) -> usize {
        self.values.size() + self.set.capacity()
    }
}
