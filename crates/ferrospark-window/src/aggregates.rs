//! Aggregates over window frames, each in one pass per partition:
//!
//! - `count` and integral / decimal `sum` from prefix sums (exact arithmetic, so the frame's
//!   result is the same in any order);
//! - floating `sum` by a running sum when every frame starts at the partition's first row
//!   (Spark's own order of additions), else added up frame by frame in row order as Spark's
//!   sliding and shrinking frames do, so the result matches Spark's to the last bit;
//! - `min` / `max` with a monotonic deque of candidate rows (frames only move forward);
//! - `avg` from the same sums, divided as Spark divides.

use std::collections::VecDeque;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Decimal128Type, Float64Type, Int64Type};
use arrow_array::{Array, ArrayRef, Decimal128Array, Float64Array, Int64Array, UInt32Array};
use arrow_buffer::i256;
use arrow_schema::{DataType, SortOptions};
use ferrospark_common::decimal::decimal_average;
use ferrospark_common::{FerroError, Result};
use ferrospark_expr::normalize_key;

use crate::statistics::{bool_frames, collect_frames, moments, Moment};

/// How frame aggregates compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FrameOptions {
    /// An integral or decimal overflow is an error (`spark.sql.ansi.enabled`); else it wraps
    /// (integral) or is NULL (decimal), as Spark's legacy mode.
    pub ansi: bool,
    /// Doubles on sliding frames are added in Spark's order, frame by frame (O(n·w), Spark's
    /// last bit); `false` (`ferrospark.window.exactFloatFrames=false`): one compensated
    /// running sum that rows enter and leave (O(n), equal to Spark's up to rounding).
    pub exact_floats: bool,
}

/// An aggregate function over a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameAggregate {
    /// Rows in the frame (`count(*)`), or rows where the value is not NULL.
    Count,
    /// The sum of the frame's non-NULL values; NULL when there are none.
    Sum,
    /// The smallest non-NULL value.
    Min,
    /// The largest non-NULL value.
    Max,
    /// The mean of the frame's non-NULL values; NULL when there are none.
    Avg,
    /// `var_samp` / `variance`; NULL for fewer than two values.
    VarSamp,
    /// `var_pop`; NULL without values.
    VarPop,
    /// `stddev_samp` / `stddev` / `std`; NULL for fewer than two values.
    StddevSamp,
    /// `stddev_pop`; NULL without values.
    StddevPop,
    /// `bool_and` / `every`: whether every non-NULL value is true.
    BoolAnd,
    /// `bool_or` / `some` / `any`: whether any non-NULL value is true.
    BoolOr,
    /// The frame's non-NULL values in row order (an empty list, not NULL, for none).
    CollectList,
    /// The frame's distinct non-NULL values, each at its first occurrence.
    CollectSet,
}

impl FrameAggregate {
    /// Spark's lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            FrameAggregate::Count => "count",
            FrameAggregate::Sum => "sum",
            FrameAggregate::Min => "min",
            FrameAggregate::Max => "max",
            FrameAggregate::Avg => "avg",
            FrameAggregate::VarSamp => "var_samp",
            FrameAggregate::VarPop => "var_pop",
            FrameAggregate::StddevSamp => "stddev_samp",
            FrameAggregate::StddevPop => "stddev_pop",
            FrameAggregate::BoolAnd => "bool_and",
            FrameAggregate::BoolOr => "bool_or",
            FrameAggregate::CollectList => "collect_list",
            FrameAggregate::CollectSet => "collect_set",
        }
    }

    /// The aggregate Spark calls `name` (any of its aliases), if windows run it.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "count" => FrameAggregate::Count,
            "sum" => FrameAggregate::Sum,
            "min" => FrameAggregate::Min,
            "max" => FrameAggregate::Max,
            "avg" | "mean" => FrameAggregate::Avg,
            "var_samp" | "variance" => FrameAggregate::VarSamp,
            "var_pop" => FrameAggregate::VarPop,
            "stddev_samp" | "stddev" | "std" => FrameAggregate::StddevSamp,
            "stddev_pop" => FrameAggregate::StddevPop,
            "bool_and" | "every" => FrameAggregate::BoolAnd,
            "bool_or" | "some" | "any" => FrameAggregate::BoolOr,
            "collect_list" | "array_agg" => FrameAggregate::CollectList,
            "collect_set" => FrameAggregate::CollectSet,
            _ => return None,
        })
    }

    /// Spark's result type for an input of type `input` (`None`: `count(*)`).
    pub fn result_type(self, input: Option<&DataType>) -> Result<DataType> {
        use DataType as D;
        Ok(match (self, input) {
            (FrameAggregate::Count, _) => D::Int64,
            (FrameAggregate::Sum, Some(D::Int8 | D::Int16 | D::Int32 | D::Int64)) => D::Int64,
            (FrameAggregate::Sum, Some(D::Float32 | D::Float64)) => D::Float64,
            (FrameAggregate::Sum, Some(D::Decimal128(p, s))) => {
                D::Decimal128((*p + 10).min(38), *s)
            }
            (FrameAggregate::Min | FrameAggregate::Max, Some(t)) if !t.is_nested() => t.clone(),
            (
                FrameAggregate::Avg,
                Some(D::Int8 | D::Int16 | D::Int32 | D::Int64 | D::Float32 | D::Float64),
            ) => D::Float64,
            (FrameAggregate::Avg, Some(D::Decimal128(p, s))) => {
                D::Decimal128((*p + 4).min(38), (*s + 4).min(38))
            }
            (
                FrameAggregate::VarSamp
                | FrameAggregate::VarPop
                | FrameAggregate::StddevSamp
                | FrameAggregate::StddevPop,
                Some(t),
            ) if t.is_numeric() => D::Float64,
            (FrameAggregate::BoolAnd | FrameAggregate::BoolOr, Some(D::Boolean)) => D::Boolean,
            (FrameAggregate::CollectList | FrameAggregate::CollectSet, Some(t)) => D::List(
                Arc::new(arrow_schema::Field::new_list_field(t.clone(), true)),
            ),
            (f, t) => {
                return Err(FerroError::Analysis(format!(
                    "{}({}) over a window is not supported yet",
                    f.name(),
                    t.map_or("*".to_string(), |t| t.to_string())
                )))
            }
        })
    }
}

/// `agg` of `values` (all rows of the sorted batch) over each row's frame `lo[i]..hi[i]`, for
/// the rows of `partitions`. `ansi`: an integral or decimal overflow is an error, else it
/// wraps (integral) or is NULL (decimal), as Spark's legacy mode.
pub(crate) fn frame_aggregate(
    agg: FrameAggregate,
    values: Option<&ArrayRef>,
    partitions: &[(usize, usize)],
    lo: &[u32],
    hi: &[u32],
    n: usize,
    opts: FrameOptions,
) -> Result<ArrayRef> {
    let Some(values) = values else {
        // count(*)
        let out: Int64Array = (0..n).map(|i| Some(i64::from(hi[i] - lo[i]))).collect();
        return Ok(Arc::new(out));
    };
    match agg {
        FrameAggregate::Count => {
            let prefix = prefix_counts(values);
            let out: Int64Array = (0..n)
                .map(|i| Some(prefix[hi[i] as usize] - prefix[lo[i] as usize]))
                .collect();
            Ok(Arc::new(out))
        }
        FrameAggregate::Sum => sum(values, partitions, lo, hi, n, opts),
        FrameAggregate::Avg => avg(values, partitions, lo, hi, n, opts),
        FrameAggregate::Min | FrameAggregate::Max => {
            extreme(values, partitions, lo, hi, agg == FrameAggregate::Max)
        }
        FrameAggregate::VarSamp => moments(
            Moment::VarSamp,
            values,
            partitions,
            lo,
            hi,
            opts.exact_floats,
        ),
        FrameAggregate::VarPop => moments(
            Moment::VarPop,
            values,
            partitions,
            lo,
            hi,
            opts.exact_floats,
        ),
        FrameAggregate::StddevSamp => moments(
            Moment::StddevSamp,
            values,
            partitions,
            lo,
            hi,
            opts.exact_floats,
        ),
        FrameAggregate::StddevPop => moments(
            Moment::StddevPop,
            values,
            partitions,
            lo,
            hi,
            opts.exact_floats,
        ),
        FrameAggregate::BoolAnd | FrameAggregate::BoolOr => {
            bool_frames(agg == FrameAggregate::BoolAnd, values, lo, hi)
        }
        FrameAggregate::CollectList | FrameAggregate::CollectSet => collect_frames(
            agg == FrameAggregate::CollectSet,
            values,
            partitions,
            lo,
            hi,
        ),
    }
}

/// `prefix[k]`: non-NULL values among the first `k` rows.
fn prefix_counts(values: &ArrayRef) -> Vec<i64> {
    let mut prefix = Vec::with_capacity(values.len() + 1);
    let mut c = 0i64;
    prefix.push(0);
    // Logical nulls: a NULL literal's NullArray has no validity buffer, yet every row is NULL.
    let nulls = values.logical_nulls();
    for r in 0..values.len() {
        c += i64::from(nulls.as_ref().is_none_or(|n| n.is_valid(r)));
        prefix.push(c);
    }
    prefix
}

fn long_overflow() -> FerroError {
    FerroError::Arithmetic(
        "[ARITHMETIC_OVERFLOW] long overflow. Use 'try_sum' to tolerate overflow and return NULL instead. If necessary set \"spark.sql.ansi.enabled\" to \"false\" to bypass this error.".into(),
    )
}

fn sum(
    values: &ArrayRef,
    partitions: &[(usize, usize)],
    lo: &[u32],
    hi: &[u32],
    n: usize,
    opts: FrameOptions,
) -> Result<ArrayRef> {
    use DataType as D;
    let ansi = opts.ansi;
    let counts = prefix_counts(values);
    let nonempty = |i: usize| counts[hi[i] as usize] > counts[lo[i] as usize];
    match values.data_type() {
        D::Int8 | D::Int16 | D::Int32 | D::Int64 => {
            let wide = arrow_cast::cast(values, &D::Int64)?;
            let ints = wide.as_primitive::<Int64Type>();
            let mut prefix = vec![0i128; n + 1];
            for r in 0..n {
                let v = if ints.is_valid(r) {
                    i128::from(ints.value(r))
                } else {
                    0
                };
                prefix[r + 1] = prefix[r] + v;
            }
            let mut out = Vec::with_capacity(n);
            for i in 0..n {
                if !nonempty(i) {
                    out.push(None);
                    continue;
                }
                let s = prefix[hi[i] as usize] - prefix[lo[i] as usize];
                match i64::try_from(s) {
                    Ok(v) => out.push(Some(v)),
                    Err(_) if ansi => return Err(long_overflow()),
                    Err(_) => out.push(Some(s as i64)),
                }
            }
            Ok(Arc::new(Int64Array::from(out)))
        }
        D::Decimal128(p, s) => {
            let (p, s) = ((*p + 10).min(38), *s);
            let bound = i256::from_i128(10).wrapping_pow(u32::from(p));
            let mut out = Vec::with_capacity(n);
            for v in decimal_frame_sums(values, lo, hi, &nonempty) {
                match v {
                    None => out.push(None),
                    Some(v) if v.wrapping_abs() < bound => out.push(v.to_i128()),
                    Some(_) if ansi => return Err(decimal_out_of_range("sum", p, s)),
                    Some(_) => out.push(None),
                }
            }
            Ok(Arc::new(
                Decimal128Array::from(out).with_precision_and_scale(p, s)?,
            ))
        }
        D::Float32 | D::Float64 => {
            let f = as_f64(values)?;
            let sums =
                float_frame_sums(&f, values, partitions, lo, hi, &nonempty, opts.exact_floats);
            Ok(Arc::new(Float64Array::from(sums)))
        }
        other => Err(FerroError::Analysis(format!(
            "sum({other}) over a window is not supported yet"
        ))),
    }
}

fn decimal_out_of_range(what: &str, p: u8, s: i8) -> FerroError {
    FerroError::Arithmetic(format!(
        "[NUMERIC_VALUE_OUT_OF_RANGE.WITH_SUGGESTION] a window {what} does not fit decimal({p},{s}). If necessary set \"spark.sql.ansi.enabled\" to \"false\" to bypass this error."
    ))
}

/// Each frame's exact sum of a decimal column (`None` for a frame without a value): prefix
/// sums in i128 when no partial sum leaves it (the usual case), else in i256.
fn decimal_frame_sums(
    values: &ArrayRef,
    lo: &[u32],
    hi: &[u32],
    nonempty: &dyn Fn(usize) -> bool,
) -> Vec<Option<i256>> {
    let dec = values.as_primitive::<Decimal128Type>();
    let n = dec.len();
    let value = |r: usize| if dec.is_valid(r) { dec.value(r) } else { 0 };
    let mut small = Vec::with_capacity(n + 1);
    small.push(0i128);
    let mut acc = 0i128;
    for r in 0..n {
        match acc.checked_add(value(r)) {
            Some(v) => acc = v,
            None => break,
        }
        small.push(acc);
    }
    let frame = |i: usize, prefix: &dyn Fn(usize) -> i256| {
        nonempty(i).then(|| prefix(hi[i] as usize).wrapping_sub(prefix(lo[i] as usize)))
    };
    if small.len() == n + 1 {
        return (0..n)
            .map(|i| frame(i, &|k| i256::from_i128(small[k])))
            .collect();
    }
    let mut wide = vec![i256::ZERO; n + 1];
    for r in 0..n {
        wide[r + 1] = wide[r].wrapping_add(i256::from_i128(value(r)));
    }
    (0..n).map(|i| frame(i, &|k| wide[k])).collect()
}

/// The values as doubles (integral and floating inputs).
fn as_f64(values: &ArrayRef) -> Result<Vec<f64>> {
    let doubles = arrow_cast::cast(values, &DataType::Float64)?;
    Ok(doubles.as_primitive::<Float64Type>().values().to_vec())
}

/// Each frame's sum of `f` (where `values` is not NULL) in double, added in Spark's order: a
/// running sum when every frame of a partition starts at its first row, else each frame's rows
/// added up again in order.
fn float_frame_sums(
    f: &[f64],
    values: &ArrayRef,
    partitions: &[(usize, usize)],
    lo: &[u32],
    hi: &[u32],
    nonempty: &dyn Fn(usize) -> bool,
    exact: bool,
) -> Vec<Option<f64>> {
    let mut out = vec![None; f.len()];
    let mut sliding: Vec<(usize, usize)> = Vec::new();
    for &(start, end) in partitions {
        if growing(start, end, lo) {
            // Spark's own order of additions: one running sum.
            let mut running = Vec::with_capacity(end - start + 1);
            let mut acc = 0.0f64;
            running.push(acc);
            for (r, x) in f.iter().enumerate().take(end).skip(start) {
                if values.is_valid(r) {
                    acc += x;
                }
                running.push(acc);
            }
            for (i, o) in out.iter_mut().enumerate().take(end).skip(start) {
                if nonempty(i) {
                    *o = Some(running[hi[i] as usize - start]);
                }
            }
        } else {
            sliding.push((start, end));
        }
    }
    if sliding.is_empty() {
        return out;
    }
    if let Some((scaled, unit)) = exactly_summable(f, values) {
        // Every partial sum is exact, so the frame's sum is the same in any order: prefix
        // sums, O(1) per frame whatever its shape.
        let mut prefix = Vec::with_capacity(f.len() + 1);
        let mut acc = 0i64;
        prefix.push(acc);
        for v in &scaled {
            acc += v;
            prefix.push(acc);
        }
        for &(start, end) in &sliding {
            for i in start..end {
                if nonempty(i) {
                    out[i] = Some((prefix[hi[i] as usize] - prefix[lo[i] as usize]) as f64 * unit);
                }
            }
        }
        return out;
    }
    // A NULL adds 0.0, which changes no sum: Spark's sum starts at 0.0 and adds values to
    // it, so it is never -0.0, the one value 0.0 would change.
    let dense: Vec<f64> = (0..f.len())
        .map(|r| if values.is_valid(r) { f[r] } else { 0.0 })
        .collect();
    let sums = if exact {
        sliding_sums(&dense, lo, hi, &sliding)
    } else {
        let mut sums = vec![0.0f64; dense.len()];
        for &(s, e) in &sliding {
            moving_sums(&dense, lo, hi, s..e, &mut sums);
        }
        sums
    };
    for &(start, end) in &sliding {
        for i in start..end {
            if nonempty(i) {
                out[i] = Some(sums[i]);
            }
        }
    }
    out
}

/// Whether every frame of the partition `start..end` starts at its first row.
pub(crate) fn growing(start: usize, end: usize, lo: &[u32]) -> bool {
    lo[start..end].iter().all(|&l| l as usize == start)
}

/// Each frame's sum from one running sum that rows enter and leave as the frame moves
/// forward (frames only move forward): Neumaier-compensated over the finite values, with
/// NaN and infinities counted apart so that they leave again. O(n).
fn moving_sums(d: &[f64], lo: &[u32], hi: &[u32], rows: std::ops::Range<usize>, out: &mut [f64]) {
    #[derive(Default)]
    struct Moving {
        sum: f64,
        carry: f64,
        nan: u32,
        pos_inf: u32,
        neg_inf: u32,
    }
    impl Moving {
        fn add(&mut self, x: f64, sign: f64) {
            if x.is_nan() {
                self.nan = self.nan.wrapping_add_signed(sign as i32);
            } else if x == f64::INFINITY {
                self.pos_inf = self.pos_inf.wrapping_add_signed(sign as i32);
            } else if x == f64::NEG_INFINITY {
                self.neg_inf = self.neg_inf.wrapping_add_signed(sign as i32);
            } else {
                let x = x * sign;
                let t = self.sum + x;
                if self.sum.abs() >= x.abs() {
                    self.carry += (self.sum - t) + x;
                } else {
                    self.carry += (x - t) + self.sum;
                }
                self.sum = t;
            }
        }
        fn value(&self) -> f64 {
            if self.nan > 0 || (self.pos_inf > 0 && self.neg_inf > 0) {
                f64::NAN
            } else if self.pos_inf > 0 {
                f64::INFINITY
            } else if self.neg_inf > 0 {
                f64::NEG_INFINITY
            } else {
                // Spark's sum starts at 0.0: never -0.0.
                (self.sum + self.carry) + 0.0
            }
        }
    }
    let mut m = Moving::default();
    let (mut cur_lo, mut cur_hi) = (rows.start, rows.start);
    for i in rows {
        while cur_hi < hi[i] as usize {
            m.add(d[cur_hi], 1.0);
            cur_hi += 1;
        }
        while cur_lo < lo[i] as usize {
            m.add(d[cur_lo], -1.0);
            cur_lo += 1;
        }
        out[i] = m.value();
    }
}

/// Frames summed in row order, as Spark sums them: whole partitions split between two
/// threads, eight frames at a time per thread (eight independent chains of additions keep the
/// floating-point unit busy; each frame's own additions stay in order).
fn sliding_sums(d: &[f64], lo: &[u32], hi: &[u32], partitions: &[(usize, usize)]) -> Vec<f64> {
    let mut sums = vec![0.0f64; d.len()];
    on_two_threads(partitions, &mut sums, &|(s, e), out, offset| {
        frame_sums_into(d, lo, hi, s..e, out, offset)
    });
    sums
}

/// Work on one partition `(start, end)`, writing its rows' results into a slice that starts at
/// row `offset`.
pub(crate) type PartitionWork<'a, T> = dyn Fn((usize, usize), &mut [T], usize) + Sync + 'a;

/// Runs `work(partition, out, offset)` over whole partitions split between two threads by
/// row count; `out` is the part of `results` (indexed by row) holding the thread's rows, and
/// `offset` the row number of its first element.
pub(crate) fn on_two_threads<T: Send>(
    partitions: &[(usize, usize)],
    results: &mut [T],
    work: &PartitionWork<'_, T>,
) {
    let n = results.len();
    // The first partition starting past half of the work goes to the second thread.
    let total: usize = partitions.iter().map(|&(s, e)| e - s).sum();
    let mut done = 0;
    let mut cut = partitions.len();
    for (k, &(s, e)) in partitions.iter().enumerate() {
        if done >= total / 2 {
            cut = k;
            break;
        }
        done += e - s;
    }
    let (first, second) = partitions.split_at(cut);
    let split_row = second.first().map_or(n, |&(s, _)| s);
    let (left, right) = results.split_at_mut(split_row);
    ferrospark_common::workers::join(
        || {
            for &p in first {
                work(p, left, 0);
            }
        },
        || {
            for &p in second {
                work(p, right, split_row);
            }
        },
    );
}

/// `out[i - offset]` = the in-order sum of `d[lo[i]..hi[i]]`, for the rows `rows`.
fn frame_sums_into(
    d: &[f64],
    lo: &[u32],
    hi: &[u32],
    rows: std::ops::Range<usize>,
    out: &mut [f64],
    offset: usize,
) {
    const LANES: usize = 8;
    let mut i = rows.start;
    while i + LANES <= rows.end {
        let l0 = lo[i] as usize;
        let len = |k: usize| (hi[i + k] - lo[i + k]) as usize;
        let common = (0..LANES).map(len).min().unwrap_or(0);
        let mut acc = [0.0f64; LANES];
        if (0..LANES).all(|k| lo[i + k] as usize == l0 + k) {
            // Frames one row apart (a sliding ROWS frame): lane k reads base[r + k].
            let base = &d[l0..l0 + LANES - 1 + common];
            for r in 0..common {
                let w = &base[r..r + LANES];
                for k in 0..LANES {
                    acc[k] += w[k];
                }
            }
        } else {
            for r in 0..common {
                for (k, a) in acc.iter_mut().enumerate() {
                    *a += d[lo[i + k] as usize + r];
                }
            }
        }
        for (k, a) in acc.iter_mut().enumerate() {
            let l = lo[i + k] as usize;
            for x in &d[l + common..hi[i + k] as usize] {
                *a += x;
            }
            out[i + k - offset] = *a;
        }
        i += LANES;
    }
    for i in i..rows.end {
        let mut a = 0.0f64;
        for x in &d[lo[i] as usize..hi[i] as usize] {
            a += x;
        }
        out[i - offset] = a;
    }
}

/// The values as integers times a power of two `unit` when that is exact and their absolute
/// values add up below 2^53 units: then every sum of any of them, in any order, is exact in
/// double (NULL rows count as 0). `None` for NaN, infinities, or values too fine or too large.
fn exactly_summable(f: &[f64], values: &ArrayRef) -> Option<(Vec<i64>, f64)> {
    const LIMIT: f64 = 9_007_199_254_740_992.0; // 2^53
    let valid = |r: usize| values.is_valid(r);
    // The finest binary fraction any value needs.
    let mut frac_bits = 0i32;
    for (r, &v) in f.iter().enumerate() {
        if !valid(r) || v == 0.0 {
            continue;
        }
        if !v.is_finite() {
            return None;
        }
        let bits = v.to_bits();
        let exp = ((bits >> 52) & 0x7ff) as i32;
        let mantissa = bits & ((1u64 << 52) - 1);
        let (m, e) = if exp == 0 {
            (mantissa, -1074)
        } else {
            (mantissa | (1u64 << 52), exp - 1075)
        };
        // v = m * 2^e; its finest bit is 2^(e + trailing zeros of m).
        let finest = e + m.trailing_zeros() as i32;
        frac_bits = frac_bits.max(-finest);
        if frac_bits > 60 {
            return None;
        }
    }
    let scale = 2f64.powi(frac_bits);
    let mut total = 0.0f64;
    let mut scaled = Vec::with_capacity(f.len());
    for (r, &v) in f.iter().enumerate() {
        if !valid(r) {
            scaled.push(0);
            continue;
        }
        let x = v * scale;
        total += x.abs();
        if total >= LIMIT {
            return None;
        }
        scaled.push(x as i64);
    }
    Some((scaled, 1.0 / scale))
}

/// The mean of each frame, typed as Spark's `avg`: double for numbers (their sum added in
/// double, as Spark adds it), `decimal(p + 4, s + 4)` for decimals (the exact sum divided as
/// Spark divides it).
fn avg(
    values: &ArrayRef,
    partitions: &[(usize, usize)],
    lo: &[u32],
    hi: &[u32],
    n: usize,
    opts: FrameOptions,
) -> Result<ArrayRef> {
    use DataType as D;
    let ansi = opts.ansi;
    let counts = prefix_counts(values);
    let count = |i: usize| counts[hi[i] as usize] - counts[lo[i] as usize];
    let nonempty = |i: usize| count(i) > 0;
    match values.data_type() {
        D::Decimal128(p, s) => {
            let (sp, rp, rs) = ((*p + 10).min(38), (*p + 4).min(38), (*s + 4).min(38));
            let ten = i256::from_i128(10);
            let (sum_bound, bound) = (
                ten.wrapping_pow(u32::from(sp)),
                ten.wrapping_pow(u32::from(rp)),
            );
            let mut out = Vec::with_capacity(n);
            for (i, sum) in decimal_frame_sums(values, lo, hi, &nonempty)
                .into_iter()
                .enumerate()
            {
                let Some(sum) = sum else {
                    out.push(None);
                    continue;
                };
                let q = (sum.wrapping_abs() < sum_bound)
                    .then(|| decimal_average(sum, count(i), *s, rs))
                    .filter(|q| q.wrapping_abs() < bound);
                match q {
                    Some(q) => out.push(q.to_i128()),
                    None if ansi => return Err(decimal_out_of_range("average", rp, rs)),
                    None => out.push(None),
                }
            }
            Ok(Arc::new(
                Decimal128Array::from(out).with_precision_and_scale(rp, rs)?,
            ))
        }
        D::Int8 | D::Int16 | D::Int32 | D::Int64 | D::Float32 | D::Float64 => {
            let f = as_f64(values)?;
            let integral = !matches!(values.data_type(), D::Float32 | D::Float64);
            // Integers whose absolute values add up below 2^53: every partial sum is exact in
            // double, so the exact sum is Spark's, in any order.
            let small = integral && {
                let total: f64 = (0..n)
                    .filter(|&r| values.is_valid(r))
                    .map(|r| f[r].abs())
                    .sum();
                total < 9.0e15
            };
            let sums: Vec<Option<f64>> = if small {
                let mut prefix = vec![0i128; n + 1];
                for r in 0..n {
                    prefix[r + 1] = prefix[r] + if values.is_valid(r) { f[r] as i128 } else { 0 };
                }
                (0..n)
                    .map(|i| {
                        nonempty(i)
                            .then(|| (prefix[hi[i] as usize] - prefix[lo[i] as usize]) as f64)
                    })
                    .collect()
            } else {
                float_frame_sums(&f, values, partitions, lo, hi, &nonempty, opts.exact_floats)
            };
            let out: Float64Array = (0..n)
                .map(|i| sums[i].map(|s| s / count(i) as f64))
                .collect();
            Ok(Arc::new(out))
        }
        other => Err(FerroError::Analysis(format!(
            "avg({other}) over a window is not supported yet"
        ))),
    }
}

/// `min` (or `max`) of each frame: a deque of rows whose values could still be the answer,
/// the answer at its front. Values compare as Spark orders them (-0.0 = 0.0, NaN largest);
/// among equal values the earliest row is kept, as Spark's in-order update keeps it.
fn extreme(
    values: &ArrayRef,
    partitions: &[(usize, usize)],
    lo: &[u32],
    hi: &[u32],
    max: bool,
) -> Result<ArrayRef> {
    let keys = normalize_key(values);
    let cmp =
        arrow_ord::ord::make_comparator(keys.as_ref(), keys.as_ref(), SortOptions::default())?;
    // `a` beats `b` when strictly better.
    let beats = |a: usize, b: usize| {
        let o = cmp(a, b);
        if max {
            o.is_gt()
        } else {
            o.is_lt()
        }
    };
    let n = values.len();
    let mut idx: Vec<Option<u32>> = vec![None; n];
    for &(start, end) in partitions {
        let mut deque: VecDeque<usize> = VecDeque::new();
        let mut next = start;
        for i in start..end {
            let (l, h) = (lo[i] as usize, hi[i] as usize);
            while next < h {
                if values.is_valid(next) {
                    while deque.back().is_some_and(|&b| beats(next, b)) {
                        deque.pop_back();
                    }
                    deque.push_back(next);
                }
                next += 1;
            }
            while deque.front().is_some_and(|&f| f < l) {
                deque.pop_front();
            }
            idx[i] = deque.front().filter(|&&f| f < h).map(|&f| f as u32);
        }
    }
    Ok(arrow_select::take::take(
        values.as_ref(),
        &UInt32Array::from(idx),
        None,
    )?)
}
