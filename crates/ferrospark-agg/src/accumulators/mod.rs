//! Vectorised per-group accumulators: one object per aggregate holds the buffers of every group.
//!
//! An accumulator is fed a batch of values together with the group index of each row (from the
//! hash table or from sorted-key boundaries) and updates the buffer of that group. The same
//! object serves the four modes: `update_batch` consumes raw input (Partial, Complete),
//! `merge_batch` consumes intermediate states (PartialMerge, Final); `state` hands buffers out
//! as plain Arrow columns and `evaluate` hands out final values.

use arrow_array::{Array, ArrayRef};
use arrow_buffer::NullBuffer;
use ferrospark_common::Result;

pub mod approx_percentile;
pub mod bits;
pub mod bool_ops;
pub mod collect;
pub mod comoment;
pub mod count;
pub mod distinct;
pub mod extreme_by;
pub mod first_last;
pub mod histogram;
pub mod hll;
pub mod hll_acc;
pub mod min_max;
pub mod moments;
pub mod percentile;
pub mod sum_avg;
pub mod variance;

/// Which groups to hand out: all of them, or the first `n` (the rest move down to index 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmitTo {
    /// Every group; the accumulator is empty afterwards.
    All,
    /// Groups `0..n`; group `n` becomes group 0.
    First(usize),
}

impl EmitTo {
    /// Removes the emitted part of `v` and returns it.
    pub fn take<T>(self, v: &mut Vec<T>) -> Vec<T> {
        match self {
            EmitTo::All => std::mem::take(v),
            EmitTo::First(n) => {
                let rest = v.split_off(n.min(v.len()));
                std::mem::replace(v, rest)
            }
        }
    }
}

/// The buffers of one aggregate function for every group.
pub trait GroupsAccumulator: Send {
    /// Adds raw input rows: `values[i]` are the function's arguments, `groups[row]` the group of
    /// each row, `total_groups` the number of groups that now exist.
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        groups: &[u32],
        total_groups: usize,
    ) -> Result<()>;

    /// Merges intermediate states (the columns `state` produced) into the groups.
    fn merge_batch(
        &mut self,
        states: &[ArrayRef],
        groups: &[u32],
        total_groups: usize,
    ) -> Result<()>;

    /// The final values of the emitted groups.
    fn evaluate(&mut self, emit: EmitTo) -> Result<ArrayRef>;

    /// The intermediate state of the emitted groups, one array per state field.
    fn state(&mut self, emit: EmitTo) -> Result<Vec<ArrayRef>>;

    /// Bytes held (for the memory pool).
    fn size(&self) -> usize;

    /// A hint that about `rows` more input rows are coming, so buffers that keep every value
    /// can be sized once instead of growing (and being copied) step by step.
    fn reserve_rows(&mut self, _rows: usize) {}

    /// A hint that about `groups` groups are coming, so per-group buffers can be sized once.
    fn reserve_groups(&mut self, _groups: usize) {}
}

/// A validity combined over several argument columns: a row counts only when all are valid.
pub(crate) fn combined_nulls(values: &[ArrayRef]) -> Option<NullBuffer> {
    values.iter().fold(None, |acc: Option<NullBuffer>, v| {
        NullBuffer::union(acc.as_ref(), v.logical_nulls().as_ref())
    })
}

/// Calls `f(row, group)` for every row whose arguments are all non-NULL.
#[inline]
pub(crate) fn for_each_valid(
    nulls: Option<&NullBuffer>,
    groups: &[u32],
    mut f: impl FnMut(usize, usize),
) {
    match nulls {
        None => groups
            .iter()
            .enumerate()
            .for_each(|(r, &g)| f(r, g as usize)),
        Some(n) if n.null_count() == 0 => groups
            .iter()
            .enumerate()
            .for_each(|(r, &g)| f(r, g as usize)),
        Some(n) => {
            for r in n.valid_indices() {
                f(r, groups[r] as usize)
            }
        }
    }
}

/// A validity buffer from per-group `seen` flags (`None` when all are set).
pub(crate) fn nulls_from(seen: &[bool]) -> Option<NullBuffer> {
    if seen.iter().all(|&s| s) {
        None
    } else {
        Some(NullBuffer::from(seen.to_vec()))
    }
}
