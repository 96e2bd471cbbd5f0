//! Frame aggregates beyond sums and extremes: the variance family (Spark's central-moment
//! buffer `(n, avg, m2)` updated in row order, so results round exactly as Spark's),
//! `bool_and` / `bool_or` (counts, so any frame is O(1)), and `collect_list` /
//! `collect_set` (the frame's non-NULL values in row order; the set keeps each value's first
//! occurrence, NaN equal to NaN and -0.0 to 0.0).
//!
//! Frames that all start at the partition's first row are evaluated from one running pass,
//! as Spark's growing frames are; other frames are computed again from their rows, as Spark's
//! sliding frames are (for the variance family that is the only way to round as Spark does;
//! for the collections the output itself is as large as the frames).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{Array, ArrayRef, BooleanArray, Float64Array, ListArray, UInt32Array};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{DataType, Field};
use ferrospark_agg::accumulators::percentile::PercentileKind;
use ferrospark_common::order::f64_order_key;
use ferrospark_common::{FerroError, Result};
use ferrospark_expr::normalize_key;
use hashbrown::HashSet;

use crate::aggregates::{growing, on_two_threads};

/// Which statistic of the central moments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Moment {
    VarSamp,
    VarPop,
    StddevSamp,
    StddevPop,
}

/// Spark's `(n, avg, m2)` buffer.
#[derive(Debug, Clone, Copy, Default)]
struct Moments {
    n: f64,
    avg: f64,
    m2: f64,
}

impl Moments {
    fn add(&mut self, x: f64) {
        let n = self.n + 1.0;
        let delta = x - self.avg;
        let delta_n = delta / n;
        self.avg += delta_n;
        self.m2 += delta * (delta - delta_n);
        self.n = n;
    }

    /// The buffer of both buffers' rows (Spark's `merge` of central moments).
    fn merged(&self, other: &Moments) -> Moments {
        let n = self.n + other.n;
        if n == 0.0 {
            return Moments::default();
        }
        let delta = other.avg - self.avg;
        let delta_n = delta / n;
        Moments {
            n,
            avg: self.avg + delta_n * other.n,
            m2: self.m2 + other.m2 + delta * delta_n * self.n * other.n,
        }
    }

    /// The statistic; `None` where Spark gives NULL (no value, or one for a sample).
    fn value(&self, m: Moment) -> Option<f64> {
        let (n, m2) = (self.n, self.m2);
        match m {
            Moment::VarPop => (n > 0.0).then(|| m2 / n),
            Moment::StddevPop => (n > 0.0).then(|| (m2 / n).sqrt()),
            Moment::VarSamp => (n > 1.0).then(|| m2 / (n - 1.0)),
            Moment::StddevSamp => (n > 1.0).then(|| (m2 / (n - 1.0)).sqrt()),
        }
    }
}

/// `m` of each row's frame over the values as doubles (NULLs skipped).
pub(crate) fn moments(
    m: Moment,
    values: &ArrayRef,
    partitions: &[(usize, usize)],
    lo: &[u32],
    hi: &[u32],
    exact: bool,
) -> Result<ArrayRef> {
    let doubles = arrow_cast::cast(values, &DataType::Float64)?;
    let x = doubles.as_primitive::<Float64Type>();
    let mut out: Vec<Option<f64>> = vec![None; x.len()];
    let mut sliding: Vec<(usize, usize)> = Vec::new();
    for &(start, end) in partitions {
        if growing(start, end, lo) {
            // The buffer after each prefix of the partition, in row order.
            let mut prefix = Vec::with_capacity(end - start + 1);
            let mut acc = Moments::default();
            prefix.push(acc);
            for r in start..end {
                if x.is_valid(r) {
                    acc.add(x.value(r));
                }
                prefix.push(acc);
            }
            for i in start..end {
                out[i] = prefix[hi[i] as usize - start].value(m);
            }
        } else {
            sliding.push((start, end));
        }
    }
    if !sliding.is_empty() && !exact {
        for &(start, end) in &sliding {
            moving_moments(m, x, lo, hi, start..end, &mut out);
        }
    } else if !sliding.is_empty() {
        let valid: Vec<bool> = (0..x.len()).map(|r| x.is_valid(r)).collect();
        let mut buffers = vec![Moments::default(); x.len()];
        on_two_threads(&sliding, &mut buffers, &|(s, e), buf, offset| {
            frame_moments_into(x.values(), &valid, lo, hi, s..e, buf, offset)
        });
        for &(start, end) in &sliding {
            for i in start..end {
                out[i] = buffers[i].value(m);
            }
        }
    }
    Ok(Arc::new(Float64Array::from(out)))
}

/// `m` of each frame from buffers that rows enter and leave as the frame moves forward, kept
/// as a two-stack queue of Spark's `(n, avg, m2)` buffers merged pairwise (as Spark merges
/// partial buffers): nothing is ever subtracted, so no cancellation builds up. O(n) amortised,
/// equal to Spark's up to rounding.
fn moving_moments(
    m: Moment,
    x: &arrow_array::Float64Array,
    lo: &[u32],
    hi: &[u32],
    rows: std::ops::Range<usize>,
    out: &mut [Option<f64>],
) {
    let one = |r: usize| {
        let mut b = Moments::default();
        if x.is_valid(r) {
            b.add(x.value(r));
        }
        b
    };
    // `front`: (row, buffer of that row and every row after it in `front`), oldest on top.
    let mut front: Vec<Moments> = Vec::new();
    let mut back_rows: Vec<usize> = Vec::new();
    let mut back = Moments::default();
    let (mut cur_lo, mut cur_hi) = (rows.start, rows.start);
    for i in rows {
        while cur_hi < hi[i] as usize {
            back = back.merged(&one(cur_hi));
            back_rows.push(cur_hi);
            cur_hi += 1;
        }
        while cur_lo < lo[i] as usize {
            if front.is_empty() {
                // Move the back rows over, newest first, each buffer holding the rows after it.
                let mut acc = Moments::default();
                for &r in back_rows.iter().rev() {
                    acc = one(r).merged(&acc);
                    front.push(acc);
                }
                back_rows.clear();
                back = Moments::default();
            }
            front.pop();
            cur_lo += 1;
        }
        let total = match front.last() {
            Some(f) => f.merged(&back),
            None => back,
        };
        out[i] = total.value(m);
    }
}

/// Each row's frame buffer, built in row order as Spark builds it; four frames side by side
/// (independent chains of divisions keep the floating-point unit busy).
fn frame_moments_into(
    x: &[f64],
    valid: &[bool],
    lo: &[u32],
    hi: &[u32],
    rows: std::ops::Range<usize>,
    out: &mut [Moments],
    offset: usize,
) {
    const LANES: usize = 4;
    let mut i = rows.start;
    while i + LANES <= rows.end {
        let len = |k: usize| (hi[i + k] - lo[i + k]) as usize;
        let common = (0..LANES).map(len).min().unwrap_or(0);
        let mut acc = [Moments::default(); LANES];
        for r in 0..common {
            for (k, a) in acc.iter_mut().enumerate() {
                let at = lo[i + k] as usize + r;
                if valid[at] {
                    a.add(x[at]);
                }
            }
        }
        for (k, a) in acc.iter().enumerate() {
            let mut a = *a;
            for at in lo[i + k] as usize + common..hi[i + k] as usize {
                if valid[at] {
                    a.add(x[at]);
                }
            }
            out[i + k - offset] = a;
        }
        i += LANES;
    }
    for i in i..rows.end {
        let mut a = Moments::default();
        for at in lo[i] as usize..hi[i] as usize {
            if valid[at] {
                a.add(x[at]);
            }
        }
        out[i - offset] = a;
    }
}

/// `bool_and` (`all`) or `bool_or` of each row's frame; NULL for a frame without a value.
pub(crate) fn bool_frames(
    all: bool,
    values: &ArrayRef,
    lo: &[u32],
    hi: &[u32],
) -> Result<ArrayRef> {
    let b = values.as_boolean_opt().ok_or_else(|| {
        FerroError::Analysis(format!(
            "{}({}) over a window needs a boolean argument",
            if all { "bool_and" } else { "bool_or" },
            values.data_type()
        ))
    })?;
    let n = b.len();
    let (mut valid, mut trues) = (vec![0u32; n + 1], vec![0u32; n + 1]);
    for r in 0..n {
        let v = b.is_valid(r);
        valid[r + 1] = valid[r] + u32::from(v);
        trues[r + 1] = trues[r] + u32::from(v && b.value(r));
    }
    let out: BooleanArray = (0..n)
        .map(|i| {
            let (l, h) = (lo[i] as usize, hi[i] as usize);
            let (v, t) = (valid[h] - valid[l], trues[h] - trues[l]);
            (v > 0).then_some(if all { t == v } else { t > 0 })
        })
        .collect();
    Ok(Arc::new(out))
}

/// `collect_list` or (`distinct`) `collect_set` of each row's frame: a list of the frame's
/// non-NULL values, never NULL itself.
pub(crate) fn collect_frames(
    distinct: bool,
    values: &ArrayRef,
    partitions: &[(usize, usize)],
    lo: &[u32],
    hi: &[u32],
) -> Result<ArrayRef> {
    let n = values.len();
    // Equal values share an id (normalised as Spark's set compares them).
    let ids: Option<Vec<u32>> = if distinct {
        Some(value_ids(values)?)
    } else {
        None
    };
    let mut indices: Vec<u32> = Vec::new();
    let mut offsets: Vec<i32> = Vec::with_capacity(n + 1);
    offsets.push(0);
    let mut seen: HashSet<u32> = HashSet::new();
    let mut out_of_range = false;
    let mut close = |indices: &Vec<u32>, offsets: &mut Vec<i32>| match i32::try_from(indices.len())
    {
        Ok(o) => offsets.push(o),
        Err(_) => out_of_range = true,
    };
    for &(start, end) in partitions {
        if growing(start, end, lo) {
            // The partition's non-NULL rows (first occurrences for a set) in order; each row's
            // list is the part of them inside its frame.
            let mut kept: Vec<u32> = Vec::new();
            let mut upto = Vec::with_capacity(end - start + 1);
            upto.push(0usize);
            seen.clear();
            for r in start..end {
                if values.is_valid(r) && ids.as_ref().is_none_or(|ids| seen.insert(ids[r])) {
                    kept.push(r as u32);
                }
                upto.push(kept.len());
            }
            for i in start..end {
                indices.extend_from_slice(&kept[..upto[hi[i] as usize - start]]);
                close(&indices, &mut offsets);
            }
        } else {
            for i in start..end {
                seen.clear();
                for r in lo[i] as usize..hi[i] as usize {
                    if values.is_valid(r) && ids.as_ref().is_none_or(|ids| seen.insert(ids[r])) {
                        indices.push(r as u32);
                    }
                }
                close(&indices, &mut offsets);
            }
        }
    }
    if out_of_range {
        return Err(FerroError::MemoryLimit(
            "a window collect_list / collect_set result has over 2^31 values; use a smaller frame"
                .into(),
        ));
    }
    let taken = arrow_select::take::take(values.as_ref(), &UInt32Array::from(indices), None)?;
    let field = Arc::new(Field::new_list_field(values.data_type().clone(), true));
    let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
    Ok(Arc::new(ListArray::try_new(field, offsets, taken, None)?))
}

/// An id per row such that equal values (NaN = NaN, -0.0 = 0.0) share it.
fn value_ids(values: &ArrayRef) -> Result<Vec<u32>> {
    let normal = normalize_key(values);
    let converter = RowConverter::new(vec![SortField::new(normal.data_type().clone())])?;
    let rows = converter.convert_columns(&[normal])?;
    let mut ids: hashbrown::HashMap<arrow_row::Row<'_>, u32> = hashbrown::HashMap::new();
    Ok((0..rows.num_rows())
        .map(|r| {
            let next = ids.len() as u32;
            *ids.entry(rows.row(r)).or_insert(next)
        })
        .collect())
}

/// Counts per rank, with the `k`-th smallest found by binary lifting: O(log n) to add, remove
/// or select.
struct Fenwick {
    tree: Vec<u32>,
    top: usize,
}

impl Fenwick {
    fn new(n: usize) -> Self {
        Self {
            tree: vec![0; n + 1],
            top: if n == 0 {
                0
            } else {
                1 << (usize::BITS - 1 - n.leading_zeros())
            },
        }
    }

    fn add(&mut self, rank: usize, delta: i32) {
        let mut i = rank + 1;
        while i < self.tree.len() {
            self.tree[i] = self.tree[i].wrapping_add_signed(delta);
            i += i & i.wrapping_neg();
        }
    }

    /// The rank of the `k`-th smallest counted value (from 0).
    fn select(&self, k: u32) -> usize {
        let (mut pos, mut rest, mut step) = (0usize, k + 1, self.top);
        while step > 0 {
            let next = pos + step;
            if next < self.tree.len() && self.tree[next] < rest {
                pos = next;
                rest -= self.tree[next];
            }
            step >>= 1;
        }
        pos
    }
}

/// `percentile` of each row's frame. Frames only move forward, so each partition's values
/// enter and leave a count per rank once: O(n log n) for every frame kind.
pub(crate) fn percentile_frames(
    values: &ArrayRef,
    percentages: &[f64],
    as_array: bool,
    kind: PercentileKind,
    partitions: &[(usize, usize)],
    lo: &[u32],
    hi: &[u32],
) -> Result<ArrayRef> {
    let doubles = arrow_cast::cast(values, &DataType::Float64)?;
    let x = doubles.as_primitive::<Float64Type>();
    let n = x.len();
    let mut results: Vec<Option<Vec<f64>>> = vec![None; n];
    let mut rank = vec![0usize; n];
    for &(start, end) in partitions {
        let mut valid: Vec<usize> = (start..end).filter(|&r| x.is_valid(r)).collect();
        // Spark keeps -0.0 and 0.0 apart in its percentile counts (boxed doubles), -0.0 first.
        valid.sort_by_key(|&r| {
            let v = x.value(r);
            (f64_order_key(v), v == 0.0 && v.is_sign_positive())
        });
        let sorted: Vec<f64> = valid.iter().map(|&r| x.value(r)).collect();
        for (k, &r) in valid.iter().enumerate() {
            rank[r] = k;
        }
        let mut counts = Fenwick::new(valid.len());
        let (mut cur_lo, mut cur_hi, mut count) = (start, start, 0u32);
        for i in start..end {
            while cur_hi < hi[i] as usize {
                if x.is_valid(cur_hi) {
                    counts.add(rank[cur_hi], 1);
                    count += 1;
                }
                cur_hi += 1;
            }
            while cur_lo < lo[i] as usize {
                if x.is_valid(cur_lo) {
                    counts.add(rank[cur_lo], -1);
                    count -= 1;
                }
                cur_lo += 1;
            }
            if count > 0 {
                let value_at = |k: usize| sorted[counts.select(k as u32)];
                // Spark compares two keys as boxed doubles: NaN equals NaN, -0.0 differs
                // from 0.0.
                let same =
                    |a: f64, b: f64| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan());
                results[i] = Some(
                    percentages
                        .iter()
                        .map(|&p| kind.percentile(count as usize, p, value_at, same))
                        .collect(),
                );
            }
        }
    }
    if as_array {
        let mut b =
            arrow_array::builder::ListBuilder::new(arrow_array::builder::Float64Builder::new());
        for r in results {
            match r {
                Some(v) => {
                    b.values().append_slice(&v);
                    b.append(true);
                }
                None => b.append(false),
            }
        }
        Ok(Arc::new(b.finish()))
    } else {
        let out: Float64Array = results
            .into_iter()
            .map(|r| r.and_then(|v| v.first().copied()))
            .collect();
        Ok(Arc::new(out))
    }
}

/// `approx_count_distinct` of each row's frame: Spark's HyperLogLog++ registers over Spark's
/// xxhash64 (seed 42) of the non-NULL values. Growing frames update one set of registers
/// row by row, and the estimate is computed again only when a register changed. Other frames
/// build their registers again per frame, as Spark does.
pub(crate) fn approx_distinct_frames(
    values: &ArrayRef,
    relative_sd: f64,
    partitions: &[(usize, usize)],
    lo: &[u32],
    hi: &[u32],
) -> Result<ArrayRef> {
    use ferrospark_agg::accumulators::hll::{
        spark_xxhash64_column, HyperLogLogPlusPlus, SPARK_HASH_SEED,
    };
    let hll = HyperLogLogPlusPlus::new(relative_sd).map_err(FerroError::Analysis)?;
    let hashes = spark_xxhash64_column(values.as_ref(), SPARK_HASH_SEED)
        .map_err(|e| FerroError::Unsupported(format!("approx_count_distinct: {e}")))?;
    let mut out = vec![0i64; values.len()];
    for &(start, end) in partitions {
        if growing(start, end, lo) {
            let mut registers = hll.new_registers();
            let mut added = start;
            let mut estimate = 0i64;
            let mut stale = false;
            for i in start..end {
                while added < hi[i] as usize {
                    if let Some(h) = hashes[added] {
                        // Only the hash's own register can change.
                        let at = (h >> (64 - hll.precision())) as usize;
                        let before = registers.get(at).copied();
                        hll.update(&mut registers, h);
                        stale |= registers.get(at).copied() != before;
                    }
                    added += 1;
                }
                if stale {
                    estimate = hll.estimate(&registers);
                    stale = false;
                }
                out[i] = estimate;
            }
        } else {
            for i in start..end {
                let mut registers = hll.new_registers();
                for h in hashes[lo[i] as usize..hi[i] as usize].iter().flatten() {
                    hll.update(&mut registers, *h);
                }
                out[i] = hll.estimate(&registers);
            }
        }
    }
    Ok(Arc::new(arrow_array::Int64Array::from(out)))
}
