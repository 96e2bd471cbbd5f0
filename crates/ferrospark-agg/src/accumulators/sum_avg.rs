//! `sum` and `avg` with Spark's result types and overflow rules.
//!
//! * integral `sum` is a bigint: ANSI mode raises on overflow, legacy mode wraps;
//! * floating `sum`/`avg` add in double;
//! * decimal `sum` keeps an `i128` of scale `s` and checks the result precision
//!   `min(38, p + 10)` when it is handed out; decimal `avg` divides like Spark's
//!   `DecimalDivideWithOverflowCheck` (to scale 38, HALF_UP) and rounds to `(p + 4, s + 4)`.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Decimal128Type, Float64Type, Int64Type};
use arrow_array::{Array, ArrayRef, Decimal128Array, Float64Array, Int64Array, PrimitiveArray};
use arrow_buffer::i256;
use ferrospark_common::decimal::decimal_average;
use ferrospark_common::{FerroError, Result};

use super::{for_each_valid, nulls_from, EmitTo, GroupsAccumulator};

fn long_overflow() -> FerroError {
    FerroError::Arithmetic(
        "[ARITHMETIC_OVERFLOW] long overflow. Use 'try_sum' to tolerate overflow and return NULL instead. If necessary set \"spark.sql.ansi.enabled\" to \"false\" to bypass this error.".into(),
    )
}

/// What an integral sum does on overflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OnOverflow {
    /// raise `ARITHMETIC_OVERFLOW` (`sum` under ANSI, Spark 4's default)
    Raise,
    /// wrap around (`sum` with ANSI off)
    Wrap,
    /// give NULL for the group (`try_sum`); the state carries an `overflowed` flag
    Null,
}

/// `sum` of integral input in bigint.
#[derive(Debug)]
pub struct SumIntAccumulator {
    sums: Vec<i64>,
    seen: Vec<bool>,
    overflowed: Vec<bool>,
    on_overflow: OnOverflow,
}

impl SumIntAccumulator {
    /// `ansi`: raise on overflow (Spark 4's default) instead of wrapping.
    pub fn new(ansi: bool) -> Self {
        Self {
            sums: Vec::new(),
            seen: Vec::new(),
            overflowed: Vec::new(),
            on_overflow: if ansi {
                OnOverflow::Raise
            } else {
                OnOverflow::Wrap
            },
        }
    }

    /// `try_sum`: a group whose sum overflows is NULL.
    pub fn try_sum() -> Self {
        Self {
            on_overflow: OnOverflow::Null,
            ..Self::new(true)
        }
    }

    fn add(&mut self, values: &Int64Array, groups: &[u32], total: usize) -> Result<()> {
        self.sums.resize(total, 0);
        self.seen.resize(total, false);
        let (sums, seen, vals) = (&mut self.sums, &mut self.seen, values.values());
        if self.on_overflow == OnOverflow::Null {
            self.overflowed.resize(total, false);
            let over = &mut self.overflowed;
            for_each_valid(values.nulls(), groups, |r, g| {
                let (s, o) = sums[g].overflowing_add(vals[r]);
                sums[g] = s;
                over[g] |= o;
                seen[g] = true;
            });
        } else if self.on_overflow == OnOverflow::Raise {
            let mut overflow = false;
            for_each_valid(values.nulls(), groups, |r, g| {
                let (s, o) = sums[g].overflowing_add(vals[r]);
                sums[g] = s;
                overflow |= o;
                seen[g] = true;
            });
            if overflow {
                return Err(long_overflow());
            }
        } else {
            for_each_valid(values.nulls(), groups, |r, g| {
                sums[g] = sums[g].wrapping_add(vals[r]);
                seen[g] = true;
            });
        }
        Ok(())
    }
}

impl GroupsAccumulator for SumIntAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.add(values[0].as_primitive::<Int64Type>(), groups, total)
    }

    fn merge_batch(&mut self, states: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.add(states[0].as_primitive::<Int64Type>(), groups, total)?;
        if let Some(flags) = states.get(1) {
            let flags = flags.as_boolean();
            for (r, &g) in groups.iter().enumerate() {
                if flags.is_valid(r) && flags.value(r) {
                    self.overflowed[g as usize] = true;
                }
            }
        }
        Ok(())
    }

    fn evaluate(&mut self, emit: EmitTo) -> Result<ArrayRef> {
        let mut seen = emit.take(&mut self.seen);
        let sums = emit.take(&mut self.sums);
        if self.on_overflow == OnOverflow::Null {
            let over = emit.take(&mut self.overflowed);
            for (s, o) in seen.iter_mut().zip(over) {
                *s &= !o;
            }
        }
        Ok(Arc::new(Int64Array::new(sums.into(), nulls_from(&seen))))
    }

    fn state(&mut self, emit: EmitTo) -> Result<Vec<ArrayRef>> {
        if self.on_overflow != OnOverflow::Null {
            return Ok(vec![self.evaluate(emit)?]);
        }
        let seen = emit.take(&mut self.seen);
        let sums = emit.take(&mut self.sums);
        let mut over = emit.take(&mut self.overflowed);
        over.resize(seen.len(), false);
        Ok(vec![
            Arc::new(Int64Array::new(sums.into(), nulls_from(&seen))),
            Arc::new(arrow_array::BooleanArray::from(over)),
        ])
    }

    fn size(&self) -> usize {
        self.sums.capacity() * 9
    }

    fn reserve_groups(&mut self, groups: usize) {
        let more = groups.saturating_sub(self.sums.len());
        self.sums.reserve(more);
        self.seen.reserve(more);
    }
}

/// `sum` of floating input (or `avg` when `count` is kept) in double.
#[derive(Debug)]
pub struct FloatSumAccumulator {
    sums: Vec<f64>,
    seen: Vec<bool>,
    /// `Some` for `avg`: the number of values per group.
    counts: Option<Vec<i64>>,
}

impl FloatSumAccumulator {
    /// `sum(double)`.
    pub fn sum() -> Self {
        Self {
            sums: Vec::new(),
            seen: Vec::new(),
            counts: None,
        }
    }

    /// `avg` of numeric input (already cast to double).
    pub fn avg() -> Self {
        Self {
            counts: Some(Vec::new()),
            ..Self::sum()
        }
    }

    fn grow(&mut self, total: usize) {
        self.sums.resize(total, 0.0);
        self.seen.resize(total, false);
        if let Some(c) = &mut self.counts {
            c.resize(total, 0);
        }
    }
}

impl GroupsAccumulator for FloatSumAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.grow(total);
        let v = values[0].as_primitive::<Float64Type>();
        let (sums, seen, vals) = (&mut self.sums, &mut self.seen, v.values());
        match &mut self.counts {
            None => for_each_valid(v.nulls(), groups, |r, g| {
                sums[g] += vals[r];
                seen[g] = true;
            }),
            Some(counts) => for_each_valid(v.nulls(), groups, |r, g| {
                sums[g] += vals[r];
                counts[g] += 1;
            }),
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.grow(total);
        let s = states[0].as_primitive::<Float64Type>();
        let (sums, seen, vals) = (&mut self.sums, &mut self.seen, s.values());
        match &mut self.counts {
            None => for_each_valid(s.nulls(), groups, |r, g| {
                sums[g] += vals[r];
                seen[g] = true;
            }),
            Some(counts) => {
                let c = states[1].as_primitive::<Int64Type>().values();
                for_each_valid(s.nulls(), groups, |r, g| {
                    sums[g] += vals[r];
                    counts[g] += c[r];
                })
            }
        }
        Ok(())
    }

    fn evaluate(&mut self, emit: EmitTo) -> Result<ArrayRef> {
        let sums = emit.take(&mut self.sums);
        let seen = emit.take(&mut self.seen);
        Ok(match &mut self.counts {
            None => Arc::new(Float64Array::new(sums.into(), nulls_from(&seen))),
            Some(counts) => {
                let counts = emit.take(counts);
                let avg: Vec<f64> = sums
                    .iter()
                    .zip(&counts)
                    .map(|(s, &c)| s / c as f64)
                    .collect();
                let valid: Vec<bool> = counts.iter().map(|&c| c > 0).collect();
                Arc::new(Float64Array::new(avg.into(), nulls_from(&valid)))
            }
        })
    }

    fn state(&mut self, emit: EmitTo) -> Result<Vec<ArrayRef>> {
        let sums = emit.take(&mut self.sums);
        let seen = emit.take(&mut self.seen);
        Ok(match &mut self.counts {
            None => vec![Arc::new(Float64Array::new(sums.into(), nulls_from(&seen)))],
            Some(counts) => {
                let counts = emit.take(counts);
                vec![
                    Arc::new(Float64Array::from(sums)),
                    Arc::new(Int64Array::from(counts)),
                ]
            }
        })
    }

    fn size(&self) -> usize {
        self.sums.capacity() * 17
    }
}

/// 10^n for n <= 38.
pub(crate) fn pow10(n: u8) -> i128 {
    10i128.pow(n as u32)
}

/// `sum` or `avg` of decimal input, exact in `i128`.
#[derive(Debug)]
pub struct DecimalSumAccumulator {
    sums: Vec<i128>,
    /// A value was added (Spark's `isEmpty` is its negation).
    seen: Vec<bool>,
    /// The sum left `i128` (it is then far beyond any decimal precision).
    overflowed: Vec<bool>,
    counts: Option<Vec<i64>>,
    /// Input scale.
    scale: i8,
    /// Precision and scale of the buffer: `(min(38, p + 10), s)`.
    state_precision: u8,
    /// Precision and scale of the result.
    result: (u8, i8),
    ansi: bool,
    /// Per-batch partial sums and counts, [`LANES`] per group (see [`Self::add_in_lanes`]).
    lanes: Vec<i128>,
    lanes64: Vec<i64>,
    lane_counts: Vec<u32>,
}

/// Rows of a batch are spread over this many partial sums per group.
const LANES: usize = 4;
/// Groups up to which a batch is added through lanes (a few cache lines per lane set).
const LANE_GROUPS: usize = 256;

impl DecimalSumAccumulator {
    /// `sum(decimal(p, s))`: result `decimal(min(38, p + 10), s)`.
    pub fn sum(precision: u8, scale: i8, ansi: bool) -> Self {
        let p = (precision + 10).min(38);
        Self {
            sums: Vec::new(),
            seen: Vec::new(),
            overflowed: Vec::new(),
            counts: None,
            scale,
            state_precision: p,
            result: (p, scale),
            ansi,
            lanes: Vec::new(),
            lanes64: Vec::new(),
            lane_counts: Vec::new(),
        }
    }

    /// `avg(decimal(p, s))`: result `decimal(min(38, p + 4), min(38, s + 4))`.
    pub fn avg(precision: u8, scale: i8, ansi: bool) -> Self {
        Self {
            counts: Some(Vec::new()),
            result: ((precision + 4).min(38), (scale + 4).min(38)),
            ..Self::sum(precision, scale, ansi)
        }
    }

    fn grow(&mut self, total: usize) {
        self.sums.resize(total, 0);
        self.seen.resize(total, false);
        self.overflowed.resize(total, false);
        if let Some(c) = &mut self.counts {
            c.resize(total, 0);
        }
    }

    fn add(
        &mut self,
        values: &Decimal128Array,
        counts_in: Option<&Int64Array>,
        groups: &[u32],
        total: usize,
    ) {
        self.grow(total);
        let vals = values.values();
        if counts_in.is_none()
            && values.null_count() == 0
            && total <= LANE_GROUPS
            && lanes_cannot_overflow(values.precision(), vals.len())
        {
            self.add_in_lanes(vals, groups, values.precision());
            return;
        }
        let (sums, seen, over) = (&mut self.sums, &mut self.seen, &mut self.overflowed);
        let mut add = |r: usize, g: usize| {
            let (s, o) = sums[g].overflowing_add(vals[r]);
            sums[g] = s;
            over[g] |= o;
            seen[g] = true;
        };
        match (&mut self.counts, counts_in) {
            (None, _) => for_each_valid(values.nulls(), groups, add),
            (Some(c), None) => for_each_valid(values.nulls(), groups, |r, g| {
                add(r, g);
                c[g] += 1;
            }),
            (Some(c), Some(ci)) => {
                let ci = ci.values();
                for_each_valid(values.nulls(), groups, |r, g| {
                    add(r, g);
                    c[g] += ci[r];
                })
            }
        }
    }

    /// Adds a batch of few groups: consecutive rows go to different partial sums of their
    /// group, so additions to one group do not wait on each other through memory; the
    /// partials are then added to the group's sum (with its overflow check) once per batch.
    /// When the batch's values are small enough that no partial can leave 64 bits (the usual
    /// case), the partials are 64-bit: one add per row instead of a 128-bit pair.
    fn add_in_lanes(&mut self, vals: &[i128], groups: &[u32], precision: u8) {
        let total = self.sums.len();
        self.lane_counts.clear();
        self.lane_counts.resize(total * LANES, 0);
        let parts = if fits_i64_lanes(vals.len(), precision) {
            lane_sums(
                &mut self.lanes64,
                &mut self.lane_counts,
                groups,
                vals,
                total,
                |s, v| s.wrapping_add(v as i64),
            )
        } else {
            lane_sums(
                &mut self.lanes,
                &mut self.lane_counts,
                groups,
                vals,
                total,
                |s, v| s.wrapping_add(v),
            )
        };
        for (g, (part, c)) in parts
            .into_iter()
            .zip(self.lane_counts.chunks_exact(LANES))
            .enumerate()
        {
            let n: u32 = c.iter().sum();
            if n == 0 {
                continue;
            }
            let (sum, o) = self.sums[g].overflowing_add(part);
            self.sums[g] = sum;
            self.overflowed[g] |= o;
            self.seen[g] = true;
            if let Some(counts) = &mut self.counts {
                counts[g] += n as i64;
            }
        }
    }

    fn overflow_error(&self) -> FerroError {
        FerroError::Arithmetic(format!(
            "[NUMERIC_VALUE_OUT_OF_RANGE.WITH_SUGGESTION] The sum cannot be represented as Decimal({}, {}). If necessary set \"spark.sql.ansi.enabled\" to \"false\" to bypass this error, and return NULL instead.",
            self.result.0, self.result.1
        ))
    }

    /// Per group: the sum if it fits `precision` digits, `None` when it does not (an error in
    /// ANSI mode) or when no value was added.
    fn checked_sums(&mut self, emit: EmitTo, precision: u8) -> Result<(Vec<i128>, Vec<bool>)> {
        let sums = emit.take(&mut self.sums);
        let seen = emit.take(&mut self.seen);
        let over = emit.take(&mut self.overflowed);
        let bound = pow10(precision);
        let mut valid = Vec::with_capacity(sums.len());
        for i in 0..sums.len() {
            let fits = !over[i] && sums[i].abs() < bound;
            if seen[i] && !fits && self.ansi {
                return Err(self.overflow_error());
            }
            valid.push(seen[i] && fits);
        }
        Ok((sums, valid))
    }
}

/// Each group's sum of a batch through [`LANES`] partial sums per group: row `r` of group
/// `g` goes to partial `g * LANES + r % LANES` (counted in `counts`), then each group's
/// partials are added up.
fn lane_sums<T: Copy + Default + Into<i128>>(
    lanes: &mut Vec<T>,
    counts: &mut [u32],
    groups: &[u32],
    vals: &[i128],
    total: usize,
    add: impl Fn(T, i128) -> T,
) -> Vec<i128> {
    lanes.clear();
    lanes.resize(total * LANES, T::default());
    for (r, (&g, &v)) in groups.iter().zip(vals).enumerate() {
        let i = g as usize * LANES + r % LANES;
        if let (Some(s), Some(c)) = (lanes.get_mut(i), counts.get_mut(i)) {
            *s = add(*s, v);
            *c += 1;
        }
    }
    lanes
        .chunks_exact(LANES)
        .map(|l| l.iter().fold(0i128, |a, &x| a.wrapping_add(x.into())))
        .collect()
}

/// Whether the sum of any subset of `rows` values of `precision` digits stays within 64
/// bits. (Checking wider columns value by value costs about what 128-bit lanes save.)
fn fits_i64_lanes(rows: usize, precision: u8) -> bool {
    (rows.max(1) as f64) * 10f64.powi(i32::from(precision)) < 9.2e18
}

/// Whether `rows` values of `precision` digits add up within `i128` in any order (so lane
/// partial sums need no overflow check).
fn lanes_cannot_overflow(precision: u8, rows: usize) -> bool {
    // |v| < 10^precision; i128 holds up to 1.7e38.
    (rows as f64) * 10f64.powi(precision as i32) < 1.0e38
}

fn decimal_array(values: Vec<i128>, valid: &[bool], p: u8, s: i8) -> Result<ArrayRef> {
    let a = PrimitiveArray::<Decimal128Type>::new(values.into(), nulls_from(valid))
        .with_precision_and_scale(p, s)?;
    Ok(Arc::new(a))
}

impl GroupsAccumulator for DecimalSumAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.add(
            values[0].as_primitive::<Decimal128Type>(),
            None,
            groups,
            total,
        );
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        let sums = states[0].as_primitive::<Decimal128Type>();
        if self.counts.is_some() {
            let counts_in = states[1].as_primitive::<Int64Type>();
            self.add(sums, Some(counts_in), groups, total);
            // A NULL sum with values behind it is a partial step's overflow (legacy mode):
            // the average stays NULL, as in Spark.
            if sums.null_count() > 0 {
                for (r, &g) in groups.iter().enumerate() {
                    if sums.is_null(r) && counts_in.value(r) > 0 {
                        let g = g as usize;
                        self.seen[g] = true;
                        self.overflowed[g] = true;
                        if let Some(c) = &mut self.counts {
                            c[g] += counts_in.value(r);
                        }
                    }
                }
            }
            return Ok(());
        }
        // sum's state: (sum, isEmpty). A NULL sum in a non-empty state is an overflow that a
        // legacy-mode partial step already turned into NULL: the result stays NULL.
        let empty = states[1].as_boolean();
        self.grow(total);
        let vals = sums.values();
        for (r, &g) in groups.iter().enumerate() {
            let g = g as usize;
            if empty.value(r) {
                continue;
            }
            self.seen[g] = true;
            if sums.is_null(r) {
                self.overflowed[g] = true;
            } else {
                match self.sums[g].checked_add(vals[r]) {
                    Some(s) => self.sums[g] = s,
                    None => self.overflowed[g] = true,
                }
            }
        }
        Ok(())
    }

    fn evaluate(&mut self, emit: EmitTo) -> Result<ArrayRef> {
        let Some(counts) = &mut self.counts else {
            let (sums, valid) = self.checked_sums(emit, self.result.0)?;
            return decimal_array(sums, &valid, self.result.0, self.result.1);
        };
        let counts = emit.take(counts);
        let (sums, valid) = self.checked_sums(emit, self.state_precision)?;
        let (rp, rs) = self.result;
        let bound = i256::from_i128(pow10(rp));
        let mut out = Vec::with_capacity(sums.len());
        let mut ok = Vec::with_capacity(sums.len());
        for i in 0..sums.len() {
            if !valid[i] || counts[i] == 0 {
                out.push(0);
                ok.push(false);
                continue;
            }
            let q = decimal_average(i256::from_i128(sums[i]), counts[i], self.scale, rs);
            if q.wrapping_abs() >= bound {
                if self.ansi {
                    return Err(self.overflow_error());
                }
                out.push(0);
                ok.push(false);
            } else {
                out.push(q.as_i128());
                ok.push(true);
            }
        }
        decimal_array(out, &ok, rp, rs)
    }

    fn state(&mut self, emit: EmitTo) -> Result<Vec<ArrayRef>> {
        let sp = self.state_precision;
        let seen: Vec<bool> = match emit {
            EmitTo::All => self.seen.clone(),
            EmitTo::First(n) => self.seen[..n.min(self.seen.len())].to_vec(),
        };
        let counts = self.counts.as_mut().map(|c| emit.take(c));
        let (sums, valid) = self.checked_sums(emit, sp)?;
        let sum = decimal_array(sums, &valid, sp, self.scale)?;
        Ok(match counts {
            Some(c) => vec![sum, Arc::new(Int64Array::from(c))],
            None => {
                let empty: Vec<bool> = seen.iter().map(|s| !s).collect();
                vec![sum, Arc::new(arrow_array::BooleanArray::from(empty))]
            }
        })
    }

    fn size(&self) -> usize {
        self.sums.capacity() * 26
    }

    fn reserve_groups(&mut self, groups: usize) {
        let more = groups.saturating_sub(self.sums.len());
        self.sums.reserve(more);
        self.seen.reserve(more);
        self.overflowed.reserve(more);
        if let Some(c) = &mut self.counts {
            c.reserve(more);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::Decimal128Array;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    #[test]
    fn sixty_four_bit_lanes_are_taken_only_when_no_partial_can_leave_64_bits() {
        assert!(fits_i64_lanes(8192, 15));
        assert!(!fits_i64_lanes(8192, 16));
        assert!(fits_i64_lanes(1, 18));
        assert!(!fits_i64_lanes(1, 19));
    }

    #[test]
    fn decimal_sums_match_the_exact_sum_whichever_lanes_run() -> Result<()> {
        let mut rng = StdRng::seed_from_u64(5);
        for (precision, batch, huge_every) in [
            (15u8, 8192usize, 0usize),
            (18, 1, 0),
            (38, 8192, 3000),
            (38, 7, 5),
        ] {
            let n = 20_000;
            let groups: Vec<u32> = (0..n).map(|_| rng.random_range(0..6)).collect();
            let vals: Vec<i128> = (0..n)
                .map(|i| {
                    if huge_every > 0 && i % huge_every == 0 {
                        rng.random_range(-(1i128 << 100)..(1i128 << 100))
                    } else {
                        let max = 10i128.pow(u32::from(precision)).min(1 << 45);
                        rng.random_range(-max + 1..max)
                    }
                })
                .collect();
            let mut want = [0i128; 6];
            for (g, v) in groups.iter().zip(&vals) {
                want[*g as usize] += v;
            }
            let mut acc = DecimalSumAccumulator::sum(precision, 0, true);
            for at in (0..n).step_by(batch) {
                let end = (at + batch).min(n);
                let a = Decimal128Array::from(vals[at..end].to_vec())
                    .with_precision_and_scale(precision, 0)?;
                let total = groups[..end].iter().max().map_or(0, |m| *m as usize + 1);
                acc.add(&a, None, &groups[at..end], total);
            }
            let got = acc.state(EmitTo::All)?;
            let sums = got[0].as_primitive::<Decimal128Type>();
            for (g, want) in want.iter().enumerate() {
                assert_eq!(sums.value(g), *want, "batch {batch}, group {g}");
            }
        }
        Ok(())
    }
}
