//! `percentile(x, p)` / `percentile(x, array(p1, ...))`: exact, with Spark's linear
//! interpolation between the two values around position `(n - 1) * p`.

use std::sync::Arc;

use arrow_array::builder::{Float64Builder, ListBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{Array, ArrayRef, Float64Array};
use ferrospark_common::Result;

use super::min_max::f64_order_key;
use super::{for_each_valid, EmitTo, GroupsAccumulator};

/// The values of every group (as doubles), kept until the percentiles are asked for.
pub struct PercentileAccumulator {
    /// `(group, value)` in arrival order.
    entries: Vec<(u32, f64)>,
    percentages: Vec<f64>,
    /// Hand out `array<double>` (percentages given as an array) instead of one double.
    as_array: bool,
    groups: usize,
}

impl PercentileAccumulator {
    /// Percentiles `percentages` (each in `[0, 1]`).
    pub fn new(percentages: Vec<f64>, as_array: bool) -> Self {
        Self {
            entries: Vec::new(),
            percentages,
            as_array,
            groups: 0,
        }
    }

    fn add(&mut self, values: &Float64Array, groups: impl Fn(usize) -> u32, total: usize) {
        self.groups = self.groups.max(total);
        let v = values.values();
        let entries = &mut self.entries;
        let rows: Vec<u32> = (0..values.len()).map(&groups).collect();
        for_each_valid(values.nulls(), &rows, |r, g| entries.push((g as u32, v[r])));
    }

    /// Sorted values per emitted group, and what remains.
    fn split(&mut self, emit: EmitTo) -> Vec<Vec<f64>> {
        let n = match emit {
            EmitTo::All => self.groups,
            EmitTo::First(n) => n,
        };
        let mut per_group = vec![Vec::new(); n];
        let mut kept = Vec::new();
        for &(g, v) in &self.entries {
            if (g as usize) < n {
                per_group[g as usize].push(v);
            } else {
                kept.push((g - n as u32, v));
            }
        }
        self.entries = kept;
        self.groups = self.groups.saturating_sub(n);
        for v in &mut per_group {
            v.sort_unstable_by_key(|&x| f64_order_key(x));
        }
        per_group
    }
}

/// Spark's `getPercentile` over sorted values.
fn percentile_of(sorted: &[f64], p: f64) -> f64 {
    let pos = (sorted.len() - 1) as f64 * p;
    let (lo, hi) = (pos.floor(), pos.ceil());
    let (a, b) = (sorted[lo as usize], sorted[hi as usize]);
    if lo == hi || f64_order_key(a) == f64_order_key(b) {
        a
    } else {
        // Spark 4's form: -inf next to a finite value interpolates to NaN, as in Spark.
        a + (pos - lo) * (b - a)
    }
}

impl GroupsAccumulator for PercentileAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.add(
            values[0].as_primitive::<Float64Type>(),
            |r| groups[r],
            total,
        );
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        let lists = states[0].as_list::<i32>();
        let offsets = lists.value_offsets();
        let (first, last) = (offsets[0] as usize, offsets[lists.len()] as usize);
        let values = lists.values().slice(first, last - first);
        let mut owner = Vec::with_capacity(last - first);
        for r in 0..lists.len() {
            let n = (offsets[r + 1] - offsets[r]) as usize;
            owner.extend(std::iter::repeat_n(groups[r], n));
        }
        self.add(values.as_primitive::<Float64Type>(), |i| owner[i], total);
        Ok(())
    }

    fn evaluate(&mut self, emit: EmitTo) -> Result<ArrayRef> {
        let groups = self.split(emit);
        if self.as_array {
            let mut b = ListBuilder::new(Float64Builder::new());
            for v in &groups {
                if v.is_empty() {
                    b.append_null();
                } else {
                    for &p in &self.percentages {
                        b.values().append_value(percentile_of(v, p));
                    }
                    b.append(true);
                }
            }
            return Ok(Arc::new(b.finish()));
        }
        let p = self.percentages.first().copied().unwrap_or(0.5);
        Ok(Arc::new(Float64Array::from_iter(
            groups
                .iter()
                .map(|v| (!v.is_empty()).then(|| percentile_of(v, p))),
        )))
    }

    fn state(&mut self, emit: EmitTo) -> Result<Vec<ArrayRef>> {
        let groups = self.split(emit);
        let mut b = ListBuilder::new(Float64Builder::new());
        for v in &groups {
            b.values().append_slice(v);
            b.append(true);
        }
        Ok(vec![Arc::new(b.finish())])
    }

    fn size(&self) -> usize {
        self.entries.capacity() * 16
    }
}
