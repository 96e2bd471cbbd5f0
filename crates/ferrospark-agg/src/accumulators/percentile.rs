//! `percentile(x, p)` / `percentile(x, array(p1, ...))`: exact, with Spark's linear
//! interpolation between the two values around position `(n - 1) * p`; also
//! `percentile_cont` / `percentile_disc(p) WITHIN GROUP (ORDER BY x [DESC])` ([`PercentileKind`]).

use std::sync::Arc;

use arrow_array::builder::{Float64Builder, ListBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{Array, ArrayRef, Float64Array};
use arrow_schema::{DataType, IntervalUnit, TimeUnit};
use ferrospark_common::Result;

use super::min_max::f64_order_key;
use super::{for_each_valid, EmitTo, GroupsAccumulator};

/// How a percentile reads a group's ordered values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PercentileKind {
    /// `percentile_disc`: the first value whose cumulative share reaches `p` (index
    /// `ceil(n * p) - 1`), rather than an interpolation at `(n - 1) * p`.
    pub discrete: bool,
    /// `WITHIN GROUP (ORDER BY x DESC)`: positions count from the largest value.
    pub descending: bool,
}

impl PercentileKind {
    /// Spark's percentile `p` of `n` values, `value_at(k)` the k-th smallest; `same(a, b)`
    /// says when two neighbours count as one value (no interpolation between them).
    pub fn percentile(
        self,
        n: usize,
        p: f64,
        value_at: impl Fn(usize) -> f64,
        same: impl Fn(f64, f64) -> bool,
    ) -> f64 {
        let at = |k: usize| {
            if self.descending {
                value_at(n - 1 - k)
            } else {
                value_at(k)
            }
        };
        if self.discrete {
            let k = ((n as f64 * p).ceil() as usize).clamp(1, n) - 1;
            return at(k);
        }
        let pos = (n - 1) as f64 * p;
        let (lo, hi) = (pos.floor(), pos.ceil());
        let (a, b) = (at(lo as usize), at(hi as usize));
        if lo == hi || same(a, b) {
            a
        } else {
            // Spark 4's form: -inf next to a finite value interpolates to NaN, as in Spark.
            a + (pos - lo) * (b - a)
        }
    }
}

/// The values of every group (as doubles), kept until the percentiles are asked for.
pub struct PercentileAccumulator {
    /// `(group, value)` in arrival order.
    entries: Vec<(u32, f64)>,
    percentages: Vec<f64>,
    /// Hand out `array<double>` (percentages given as an array) instead of one double.
    as_array: bool,
    kind: PercentileKind,
    groups: usize,
    /// The interval type the values are units of (months, microseconds), when they are.
    interval: Option<DataType>,
}

impl PercentileAccumulator {
    /// Percentiles `percentages` (each in `[0, 1]`).
    pub fn new(percentages: Vec<f64>, as_array: bool, kind: PercentileKind) -> Self {
        Self {
            entries: Vec::new(),
            percentages,
            as_array,
            kind,
            groups: 0,
            interval: None,
        }
    }

    /// The same over intervals of type `interval` (`None`: doubles).
    pub fn of_intervals(mut self, interval: Option<DataType>) -> Self {
        self.interval = interval;
        self
    }

    fn add(&mut self, values: &Float64Array, groups: impl Fn(usize) -> u32, total: usize) {
        self.groups = self.groups.max(total);
        let v = values.values();
        let entries = &mut self.entries;
        let rows: Vec<u32> = (0..values.len()).map(&groups).collect();
        for_each_valid(values.nulls(), &rows, |r, g| entries.push((g as u32, v[r])));
    }

    /// The percentiles of the emitted groups as doubles (a list per group for an array).
    fn evaluate_doubles(&mut self, emit: EmitTo) -> Result<ArrayRef> {
        let groups = self.split(emit);
        if self.as_array {
            let mut b = ListBuilder::new(Float64Builder::new());
            for v in &groups {
                if v.is_empty() {
                    b.append_null();
                } else {
                    for &p in &self.percentages {
                        b.values().append_value(percentile_of(v, p, self.kind));
                    }
                    b.append(true);
                }
            }
            return Ok(Arc::new(b.finish()));
        }
        let p = self.percentages.first().copied().unwrap_or(0.5);
        let kind = self.kind;
        Ok(Arc::new(Float64Array::from_iter(groups.iter().map(|v| {
            (!v.is_empty()).then(|| percentile_of(v, p, kind))
        }))))
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

/// An interval column as the doubles a percentile ranks (months, or microseconds; a day
/// interval's days as microseconds); `None` for a column of doubles.
fn interval_units(a: &ArrayRef) -> Option<ArrayRef> {
    use arrow_array::types::{DurationMicrosecondType, IntervalDayTimeType, IntervalYearMonthType};
    let out: Float64Array = match a.data_type() {
        DataType::Interval(IntervalUnit::YearMonth) => {
            a.as_primitive::<IntervalYearMonthType>().unary(f64::from)
        }
        DataType::Interval(IntervalUnit::DayTime) => a
            .as_primitive::<IntervalDayTimeType>()
            .unary(|v| f64::from(v.days) * 86_400e6 + f64::from(v.milliseconds) * 1e3),
        DataType::Duration(TimeUnit::Microsecond) => a
            .as_primitive::<DurationMicrosecondType>()
            .unary(|v| v as f64),
        _ => return None,
    };
    Some(Arc::new(out))
}

/// Percentiles (in units) back as intervals of type `t`, truncated as Spark's `toInt` /
/// `toLong` do.
fn intervals_of(v: &Float64Array, t: &DataType) -> ArrayRef {
    match t {
        DataType::Interval(IntervalUnit::YearMonth) => {
            Arc::new(v.unary::<_, arrow_array::types::IntervalYearMonthType>(|x| x as i32))
        }
        DataType::Interval(IntervalUnit::DayTime) => {
            Arc::new(v.unary::<_, arrow_array::types::IntervalDayTimeType>(|x| {
                let us = x as i64;
                arrow_buffer::IntervalDayTime::new(
                    (us / 86_400_000_000) as i32,
                    ((us % 86_400_000_000) / 1000) as i32,
                )
            }))
        }
        _ => Arc::new(v.unary::<_, arrow_array::types::DurationMicrosecondType>(|x| x as i64)),
    }
}

/// Spark's `getPercentile` over sorted values.
fn percentile_of(sorted: &[f64], p: f64, kind: PercentileKind) -> f64 {
    kind.percentile(
        sorted.len(),
        p,
        |k| sorted[k],
        |a, b| f64_order_key(a) == f64_order_key(b),
    )
}

impl GroupsAccumulator for PercentileAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        let units = interval_units(&values[0]);
        let doubles = units.as_ref().unwrap_or(&values[0]);
        self.add(doubles.as_primitive::<Float64Type>(), |r| groups[r], total);
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
        let out = self.evaluate_doubles(emit)?;
        match &self.interval {
            None => Ok(out),
            Some(t) if self.as_array => {
                let l = out.as_list::<i32>();
                Ok(Arc::new(arrow_array::ListArray::try_new(
                    Arc::new(arrow_schema::Field::new_list_field(t.clone(), true)),
                    l.offsets().clone(),
                    intervals_of(l.values().as_primitive::<Float64Type>(), t),
                    l.nulls().cloned(),
                )?))
            }
            Some(t) => Ok(intervals_of(out.as_primitive::<Float64Type>(), t)),
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Expectations read from PySpark 4.3 over the values 1..=10.
    #[test]
    fn ordered_percentiles_match_spark() {
        let sorted: Vec<f64> = (1..=10).map(f64::from).collect();
        let disc = PercentileKind {
            discrete: true,
            descending: false,
        };
        let disc_desc = PercentileKind {
            discrete: true,
            descending: true,
        };
        let cont_desc = PercentileKind {
            discrete: false,
            descending: true,
        };
        let cases = [
            (0.0, 1.0, 10.0, 10.0),
            (0.05, 1.0, 10.0, 9.55),
            (0.15, 2.0, 9.0, 8.65),
            (0.33, 4.0, 7.0, 7.029999999999999),
            (0.5, 5.0, 6.0, 5.5),
            (0.95, 10.0, 1.0, 1.450000000000001),
            (1.0, 10.0, 1.0, 1.0),
        ];
        for (p, d, dd, cd) in cases {
            assert_eq!(percentile_of(&sorted, p, disc), d, "disc {p}");
            assert_eq!(percentile_of(&sorted, p, disc_desc), dd, "disc desc {p}");
            assert_eq!(percentile_of(&sorted, p, cont_desc), cd, "cont desc {p}");
        }
        assert_eq!(
            percentile_of(&sorted, 0.25, PercentileKind::default()),
            3.25
        );
    }
}
