//! `percentile_approx` / `approx_percentile(x, p, accuracy)`: one Greenwald-Khanna summary per
//! group, built, compressed, merged and queried as Spark's `QuantileSummaries` does.
//!
//! Written here because Spark's answers are its summary's: with the relative error
//! `1 / accuracy`, values wait in a head buffer of 50,000, are sorted into the samples
//! (`(value, g, delta)`), and the samples are compressed whenever 10,000 accumulate and before
//! each merge or query. A query returns a sample's value, so the result is one of the input
//! values. Whenever fewer than `accuracy / 2` values reach a summary, nothing is merged and the
//! answer is the exact order statistic at rank `ceil(p * n)`.
//!
//! The state between partial and final aggregation is the compressed summary as bytes: its
//! count, relative error and samples.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{Array, ArrayRef, BinaryArray};
use arrow_schema::{DataType, IntervalUnit};
use ferrospark_common::{FerroError, Result};

use super::{EmitTo, GroupsAccumulator};

/// Spark's `QuantileSummaries.defaultHeadSize`.
const HEAD_SIZE: usize = 50_000;
/// Spark's `QuantileSummaries.defaultCompressThreshold`.
const COMPRESS_THRESHOLD: usize = 10_000;

/// One sample: a value, the least number of values since the previous sample (`g`) and the
/// uncertainty of its rank (`delta`).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Stats {
    value: f64,
    g: i64,
    delta: i64,
}

/// One group's summary.
#[derive(Debug, Clone, Default)]
pub struct QuantileSummary {
    relative_error: f64,
    sampled: Vec<Stats>,
    head: Vec<f64>,
    /// Values in `sampled` (the head not counted).
    count: i64,
}

impl QuantileSummary {
    fn new(relative_error: f64) -> Self {
        Self {
            relative_error,
            ..Self::default()
        }
    }

    fn insert(&mut self, x: f64) {
        self.head.push(x);
        if self.head.len() >= HEAD_SIZE {
            self.insert_head();
            if self.sampled.len() >= COMPRESS_THRESHOLD {
                self.compress();
            }
        }
    }

    /// Spark's `withHeadBufferInserted`: the sorted head merged into the samples.
    fn insert_head(&mut self) {
        if self.head.is_empty() {
            return;
        }
        let mut sorted = std::mem::take(&mut self.head);
        sorted.sort_by(f64::total_cmp);
        let mut out = Vec::with_capacity(self.sampled.len() + sorted.len());
        let mut count = self.count;
        let mut i = 0;
        for (k, &x) in sorted.iter().enumerate() {
            while i < self.sampled.len() && self.sampled[i].value <= x {
                out.push(self.sampled[i]);
                i += 1;
            }
            count += 1;
            let delta = if out.is_empty() || (i == self.sampled.len() && k == sorted.len() - 1) {
                0
            } else {
                (2.0 * self.relative_error * count as f64).floor() as i64
            };
            out.push(Stats {
                value: x,
                g: 1,
                delta,
            });
        }
        out.extend_from_slice(&self.sampled[i..]);
        self.sampled = out;
        self.count = count;
    }

    /// Spark's `compress`: the head inserted, then neighbouring samples merged while their
    /// `g + g' + delta'` stays under `2 * relative_error * count`.
    fn compress(&mut self) {
        self.insert_head();
        let threshold = 2.0 * self.relative_error * self.count as f64;
        self.sampled = compress_samples(&self.sampled, threshold);
    }

    /// Spark's `merge`: the two sample lists interleaved, each sample's delta widened by the
    /// other side's error where it falls between the other side's samples, then compressed.
    fn merge(&mut self, other: &QuantileSummary) {
        self.compress();
        if other.count == 0 {
            return;
        }
        if self.count == 0 {
            let mut o = other.clone();
            o.compress();
            *self = o;
            return;
        }
        let (a, b) = (&self.sampled, &other.sampled);
        let extra_self = (2.0 * other.relative_error * other.count as f64).floor() as i64;
        let extra_other = (2.0 * self.relative_error * self.count as f64).floor() as i64;
        let mut out = Vec::with_capacity(a.len() + b.len());
        let (mut i, mut j) = (0, 0);
        while i < a.len() && j < b.len() {
            if a[i].value < b[j].value {
                let extra = if j > 0 { extra_self } else { 0 };
                out.push(Stats {
                    delta: a[i].delta + extra,
                    ..a[i]
                });
                i += 1;
            } else {
                let extra = if i > 0 { extra_other } else { 0 };
                out.push(Stats {
                    delta: b[j].delta + extra,
                    ..b[j]
                });
                j += 1;
            }
        }
        out.extend_from_slice(&a[i..]);
        out.extend_from_slice(&b[j..]);
        let relative_error = self.relative_error.max(other.relative_error);
        let count = self.count + other.count;
        self.sampled = compress_samples(&out, 2.0 * relative_error * count as f64);
        self.relative_error = relative_error;
        self.count = count;
    }

    /// Spark's `query` over a compressed summary.
    fn query(&self, quantile: f64) -> Option<f64> {
        let first = self.sampled.first()?;
        let last = self.sampled.last()?;
        if quantile <= self.relative_error {
            return Some(first.value);
        }
        if quantile >= 1.0 - self.relative_error {
            return Some(last.value);
        }
        let rank = (quantile * self.count as f64).ceil() as i64;
        let target_error = self
            .sampled
            .iter()
            .map(|s| s.delta + s.g)
            .max()
            .unwrap_or(i64::MIN)
            / 2;
        let mut min_rank = 0i64;
        for s in &self.sampled[..self.sampled.len() - 1] {
            min_rank += s.g;
            let max_rank = min_rank + s.delta;
            if max_rank - target_error <= rank && rank <= min_rank + target_error {
                return Some(s.value);
            }
        }
        Some(last.value)
    }

    fn to_bytes(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.count.to_le_bytes());
        out.extend_from_slice(&self.relative_error.to_le_bytes());
        for s in &self.sampled {
            out.extend_from_slice(&s.value.to_le_bytes());
            out.extend_from_slice(&s.g.to_le_bytes());
            out.extend_from_slice(&s.delta.to_le_bytes());
        }
    }

    fn from_bytes(b: &[u8]) -> Result<Self> {
        let bad = || FerroError::Internal("a percentile_approx state of the wrong length".into());
        if b.len() < 16 || !(b.len() - 16).is_multiple_of(24) {
            return Err(bad());
        }
        let word = |i: usize| -> [u8; 8] {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[i..i + 8]);
            w
        };
        let sampled = (16..b.len())
            .step_by(24)
            .map(|i| Stats {
                value: f64::from_le_bytes(word(i)),
                g: i64::from_le_bytes(word(i + 8)),
                delta: i64::from_le_bytes(word(i + 16)),
            })
            .collect();
        Ok(Self {
            count: i64::from_le_bytes(word(0)),
            relative_error: f64::from_le_bytes(word(8)),
            sampled,
            head: Vec::new(),
        })
    }
}

/// Spark's `compressImmut`: from the last sample back, each sample folded into the one after
/// it while their weights stay under `threshold`; the first and last samples always kept.
fn compress_samples(samples: &[Stats], threshold: f64) -> Vec<Stats> {
    let Some(&last) = samples.last() else {
        return Vec::new();
    };
    let mut reversed = Vec::with_capacity(samples.len());
    let mut head = last;
    let mut i = samples.len() as isize - 2;
    while i >= 1 {
        let s = samples[i as usize];
        if ((s.g + head.g + head.delta) as f64) < threshold {
            head.g += s.g;
        } else {
            reversed.push(head);
            head = s;
        }
        i -= 1;
    }
    reversed.push(head);
    let first = samples[0];
    if first.value <= head.value && samples.len() > 1 {
        reversed.push(first);
    }
    reversed.reverse();
    reversed
}

/// The summaries of every group, and the percentages asked for.
pub struct ApproxPercentileAccumulator {
    relative_error: f64,
    percentages: Vec<f64>,
    as_array: bool,
    /// The input's type, which each result value takes back.
    out: DataType,
    groups: Vec<QuantileSummary>,
}

/// The values a summary holds, as DOUBLEs: numbers cast, dates as day numbers, timestamps as
/// microseconds, intervals as their count of months, days or microseconds.
fn to_f64(a: &ArrayRef) -> Result<ArrayRef> {
    if let DataType::Interval(IntervalUnit::DayTime) = a.data_type() {
        let v: arrow_array::Float64Array = a
            .as_primitive::<arrow_array::types::IntervalDayTimeType>()
            .iter()
            .map(|v| v.map(|v| v.days as f64 * 86_400_000_000.0 + v.milliseconds as f64 * 1000.0))
            .collect();
        return Ok(Arc::new(v));
    }
    let through = match a.data_type() {
        DataType::Date32 | DataType::Interval(IntervalUnit::YearMonth) => Some(DataType::Int32),
        DataType::Timestamp(..) | DataType::Duration(_) => Some(DataType::Int64),
        _ => None,
    };
    let a = match through {
        Some(t) => reinterpret(a, &t)?,
        None => a.clone(),
    };
    Ok(arrow_cast::cast(&a, &DataType::Float64)?)
}

/// `values` back in the input's type, as Spark converts a summary's double (truncated).
fn from_f64(values: ArrayRef, out: &DataType) -> Result<ArrayRef> {
    let through = match out {
        DataType::Date32 | DataType::Interval(IntervalUnit::YearMonth) => Some(DataType::Int32),
        DataType::Timestamp(..) | DataType::Duration(_) => Some(DataType::Int64),
        _ => None,
    };
    match (through, out) {
        (Some(t), _) => reinterpret(&arrow_cast::cast(&values, &t)?, out),
        // A DAY interval back from microseconds, truncated to whole days.
        (None, DataType::Interval(IntervalUnit::DayTime)) => {
            let v: arrow_array::IntervalDayTimeArray = values
                .as_primitive::<Float64Type>()
                .iter()
                .map(|v| {
                    v.map(|us| {
                        arrow_array::types::IntervalDayTime::new(
                            (us / 86_400_000_000.0).trunc() as i32,
                            0,
                        )
                    })
                })
                .collect();
            Ok(Arc::new(v))
        }
        // Spark's `Decimal(double)` reads the double's shortest digits (`Double.toString`),
        // not its binary value.
        (None, DataType::Decimal128(..)) => {
            let text: arrow_array::StringArray = values
                .as_primitive::<Float64Type>()
                .iter()
                .map(|v| v.map(|v| v.to_string()))
                .collect();
            Ok(arrow_cast::cast(&text, out)?)
        }
        (None, _) => Ok(arrow_cast::cast(&values, out)?),
    }
}

/// The same values under another type of the same width.
fn reinterpret(a: &ArrayRef, to: &DataType) -> Result<ArrayRef> {
    let data = a.to_data().into_builder().data_type(to.clone()).build()?;
    Ok(arrow_array::make_array(data))
}

impl ApproxPercentileAccumulator {
    /// `percentile_approx(x, percentages, accuracy)` over input of type `out`; `as_array`:
    /// the result is an array.
    pub fn new(percentages: Vec<f64>, as_array: bool, accuracy: i64, out: DataType) -> Self {
        Self {
            relative_error: 1.0 / accuracy as f64,
            percentages,
            as_array,
            out,
            groups: Vec::new(),
        }
    }

    fn grow(&mut self, total: usize) {
        if self.groups.len() < total {
            let fresh = QuantileSummary::new(self.relative_error);
            self.groups.resize(total, fresh);
        }
    }
}

impl GroupsAccumulator for ApproxPercentileAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.grow(total);
        let v = to_f64(&values[0])?;
        let v = v.as_primitive::<Float64Type>();
        for (r, &g) in groups.iter().enumerate() {
            if v.is_valid(r) {
                self.groups[g as usize].insert(v.value(r));
            }
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.grow(total);
        let s = states[0].as_binary::<i32>();
        for (r, &g) in groups.iter().enumerate() {
            if s.is_valid(r) {
                let other = QuantileSummary::from_bytes(s.value(r))?;
                self.groups[g as usize].merge(&other);
            }
        }
        Ok(())
    }

    fn evaluate(&mut self, emit: EmitTo) -> Result<ArrayRef> {
        let groups = emit.take(&mut self.groups);
        let mut values: Vec<Option<f64>> = Vec::new();
        let mut offsets = vec![0i32];
        let mut valid = Vec::with_capacity(groups.len());
        for mut g in groups {
            g.compress();
            let empty = g.count == 0;
            valid.push(!empty);
            if !empty {
                values.extend(self.percentages.iter().map(|&p| g.query(p)));
            } else if !self.as_array {
                values.push(None);
            }
            offsets.push(values.len() as i32);
        }
        let values = Arc::new(arrow_array::Float64Array::from(values)) as ArrayRef;
        let values = from_f64(values, &self.out)?;
        if !self.as_array {
            return Ok(values);
        }
        Ok(Arc::new(arrow_array::ListArray::try_new(
            Arc::new(arrow_schema::Field::new("element", self.out.clone(), false)),
            arrow_buffer::OffsetBuffer::new(offsets.into()),
            values,
            Some(arrow_buffer::NullBuffer::from(valid)),
        )?))
    }

    fn state(&mut self, emit: EmitTo) -> Result<Vec<ArrayRef>> {
        let groups = emit.take(&mut self.groups);
        let mut bytes = Vec::new();
        let mut offsets = vec![0i32];
        for mut g in groups {
            g.compress();
            g.to_bytes(&mut bytes);
            offsets.push(bytes.len() as i32);
        }
        Ok(vec![Arc::new(BinaryArray::try_new(
            arrow_buffer::OffsetBuffer::new(offsets.into()),
            bytes.into(),
            None,
        )?)])
    }

    fn size(&self) -> usize {
        self.groups
            .iter()
            .map(|g| g.sampled.capacity() * 24 + g.head.capacity() * 8 + 64)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(values: impl IntoIterator<Item = f64>, accuracy: f64) -> QuantileSummary {
        let mut s = QuantileSummary::new(1.0 / accuracy);
        for v in values {
            s.insert(v);
        }
        s.compress();
        s
    }

    /// Spark 4.3's answers over `range(1, 1001)`.
    #[test]
    fn queries_give_sparks_answers() {
        let s = summary((1..=1000).map(f64::from), 10_000.0);
        assert_eq!(s.query(0.5), Some(500.0));
        assert_eq!(s.query(0.1), Some(100.0));
        assert_eq!(s.query(0.9), Some(900.0));
        let coarse = summary((1..=1000).map(f64::from), 100.0);
        assert_eq!(coarse.query(0.25), Some(251.0));
    }

    #[test]
    fn a_state_round_trips_and_merges() {
        let a = summary((1..=500).map(f64::from), 10_000.0);
        let b = summary((501..=1000).map(f64::from), 10_000.0);
        let mut bytes = Vec::new();
        b.to_bytes(&mut bytes);
        let mut m = a.clone();
        m.merge(&QuantileSummary::from_bytes(&bytes).expect("state"));
        assert_eq!(m.count, 1000);
        assert_eq!(m.query(0.5), Some(500.0));
    }
}
