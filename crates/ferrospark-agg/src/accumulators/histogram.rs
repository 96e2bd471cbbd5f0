//! `histogram_numeric(x, nb)`: Spark's approximate histogram of `nb` bins (Ben-Haim and
//! Tom-Tov's streaming histogram, as Hive's `NumericHistogram` that Spark runs).
//!
//! Written here rather than taken from a crate because the answer is the algorithm's exact
//! path: a value joins a bin with its exact `x` or becomes a bin of its own; past `nb` bins
//! the two closest neighbours merge into their weighted mean, and ties between equally
//! close pairs are broken by `java.util.Random(31183)`, one per buffer, as in Spark. The
//! bins' centres come back in the input's type (`x` of an INT column is an INT, truncated).
//!
//! The state is every group's bins as `array<struct<x: double, y: double>>`; merging two
//! states sorts their bins together and trims, as Spark's `merge` does.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, DurationMicrosecondType, Float32Type, Float64Type, Int16Type,
    Int32Type, Int64Type, Int8Type, IntervalDayTimeType, IntervalYearMonthType,
    TimestampMicrosecondType,
};
use arrow_array::{Array, ArrayRef, ListArray, StructArray};
use arrow_buffer::{IntervalDayTime, OffsetBuffer};
use arrow_schema::{DataType, Field, Fields};
use ferrospark_common::{FerroError, Result};

use super::{EmitTo, GroupsAccumulator};

const MICROS_PER_DAY: f64 = 86_400_000_000.0;

/// `java.util.Random`: Spark breaks ties between equally close bins with one seeded 31183.
#[derive(Debug, Clone)]
struct JavaRandom {
    seed: u64,
}

impl JavaRandom {
    const MULTIPLIER: u64 = 0x5_DEEC_E66D;
    const MASK: u64 = (1 << 48) - 1;

    fn new(seed: u64) -> Self {
        Self {
            seed: (seed ^ Self::MULTIPLIER) & Self::MASK,
        }
    }

    fn next(&mut self, bits: u32) -> u64 {
        self.seed = (self.seed.wrapping_mul(Self::MULTIPLIER).wrapping_add(0xB)) & Self::MASK;
        self.seed >> (48 - bits)
    }

    fn next_double(&mut self) -> f64 {
        let hi = self.next(26);
        let lo = self.next(27);
        ((hi << 27) + lo) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// One group's histogram.
#[derive(Debug, Clone)]
struct Histogram {
    /// `(x, y)`: a bin's centre and its count, sorted by `x`.
    bins: Vec<(f64, f64)>,
    prng: JavaRandom,
}

impl Histogram {
    fn new() -> Self {
        Self {
            bins: Vec::new(),
            prng: JavaRandom::new(31183),
        }
    }

    fn add(&mut self, v: f64, nb: usize) {
        // The first bin whose centre is not below `v` (a binary search, as Spark's).
        let at = self.bins.partition_point(|&(x, _)| x < v);
        match self.bins.get_mut(at) {
            Some(bin) if bin.0 == v => bin.1 += 1.0,
            _ => {
                self.bins.insert(at, (v, 1.0));
                if self.bins.len() > nb {
                    self.trim(nb);
                }
            }
        }
    }

    /// Spark's `merge`: an empty buffer takes the other's bins as they are; otherwise both
    /// sets are sorted together (stably, by centre) and trimmed.
    fn merge(&mut self, other: &[(f64, f64)], nb: usize) {
        if self.bins.is_empty() {
            self.bins = other.to_vec();
            return;
        }
        self.bins.extend_from_slice(other);
        self.bins.sort_by(|a, b| a.0.total_cmp(&b.0));
        self.trim(nb);
    }

    /// Merges the closest neighbours until `nb` bins are left.
    fn trim(&mut self, nb: usize) {
        while self.bins.len() > nb {
            let mut smallest = self.bins[1].0 - self.bins[0].0;
            let (mut at, mut ties) = (0usize, 1u32);
            for i in 1..self.bins.len() - 1 {
                let diff = self.bins[i + 1].0 - self.bins[i].0;
                if diff < smallest {
                    (smallest, at, ties) = (diff, i, 1);
                } else if diff == smallest {
                    let draw = self.prng.next_double();
                    ties += 1;
                    if draw <= 1.0 / f64::from(ties) {
                        at = i;
                    }
                }
            }
            let (x2, y2) = self.bins.remove(at + 1);
            let bin = &mut self.bins[at];
            let d = bin.1 + y2;
            // Spark's order of operations, so the centres agree to the last bit.
            bin.0 *= bin.1 / d;
            bin.0 += x2 / d * y2;
            bin.1 = d;
        }
    }
}

/// The value of row `i` of `values` as the double Spark's histogram counts.
fn doubles(values: &ArrayRef) -> Result<Vec<Option<f64>>> {
    use DataType as D;
    fn prim<T: arrow_array::ArrowPrimitiveType>(
        a: &ArrayRef,
        f: impl Fn(T::Native) -> f64,
    ) -> Vec<Option<f64>> {
        a.as_primitive::<T>().iter().map(|v| v.map(&f)).collect()
    }
    Ok(match values.data_type() {
        D::Null => vec![None; values.len()],
        D::Int8 => prim::<Int8Type>(values, f64::from),
        D::Int16 => prim::<Int16Type>(values, f64::from),
        D::Int32 => prim::<Int32Type>(values, f64::from),
        D::Int64 => prim::<Int64Type>(values, |v| v as f64),
        D::Float32 => prim::<Float32Type>(values, f64::from),
        D::Float64 => prim::<Float64Type>(values, |v| v),
        D::Decimal128(_, s) => {
            let scale = 10f64.powi(i32::from(*s));
            prim::<Decimal128Type>(values, |v| v as f64 / scale)
        }
        D::Date32 => prim::<Date32Type>(values, f64::from),
        D::Timestamp(arrow_schema::TimeUnit::Microsecond, _) => {
            prim::<TimestampMicrosecondType>(values, |v| v as f64)
        }
        D::Interval(arrow_schema::IntervalUnit::YearMonth) => {
            prim::<IntervalYearMonthType>(values, f64::from)
        }
        D::Interval(arrow_schema::IntervalUnit::DayTime) => {
            prim::<IntervalDayTimeType>(values, |v| {
                f64::from(v.days) * MICROS_PER_DAY + f64::from(v.milliseconds) * 1000.0
            })
        }
        D::Duration(arrow_schema::TimeUnit::Microsecond) => {
            prim::<DurationMicrosecondType>(values, |v| v as f64)
        }
        other => {
            return Err(FerroError::Analysis(format!(
                "[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE] histogram_numeric takes a numeric, date, timestamp or interval value, got {other}"
            )))
        }
    })
}

/// Whether `histogram_numeric` reads values of type `t` (NULL as DOUBLE).
pub fn histogram_input(t: &DataType) -> bool {
    use DataType as D;
    matches!(
        t,
        D::Null
            | D::Int8
            | D::Int16
            | D::Int32
            | D::Int64
            | D::Float32
            | D::Float64
            | D::Decimal128(..)
            | D::Date32
            | D::Timestamp(arrow_schema::TimeUnit::Microsecond, _)
            | D::Interval(
                arrow_schema::IntervalUnit::YearMonth | arrow_schema::IntervalUnit::DayTime
            )
            | D::Duration(arrow_schema::TimeUnit::Microsecond)
    )
}

/// The result type: `array<struct<x: <input type>, y: double>>` (a NULL input's `x` is a
/// DOUBLE).
pub fn histogram_type(input: &DataType) -> DataType {
    let x = if input == &DataType::Null {
        DataType::Float64
    } else {
        input.clone()
    };
    DataType::List(Arc::new(Field::new_list_field(
        DataType::Struct(bin_fields(x)),
        true,
    )))
}

fn bin_fields(x: DataType) -> Fields {
    Fields::from(vec![
        Field::new("x", x, true),
        Field::new("y", DataType::Float64, true),
    ])
}

/// The bins' centres in the input's type: integers and times truncated toward zero, as
/// Scala's `toInt` / `toLong` do; decimals rounded half up to the scale.
fn centres(xs: &[f64], t: &DataType) -> Result<ArrayRef> {
    use DataType as D;
    let a: ArrayRef = match t {
        D::Null | D::Float64 => Arc::new(arrow_array::Float64Array::from(xs.to_vec())),
        D::Int8 => Arc::new(arrow_array::Int8Array::from_iter_values(
            xs.iter().map(|&x| x as i32 as i8),
        )),
        D::Int16 => Arc::new(arrow_array::Int16Array::from_iter_values(
            xs.iter().map(|&x| x as i32 as i16),
        )),
        D::Int32 => Arc::new(arrow_array::Int32Array::from_iter_values(
            xs.iter().map(|&x| x as i32),
        )),
        D::Int64 => Arc::new(arrow_array::Int64Array::from_iter_values(
            xs.iter().map(|&x| x as i64),
        )),
        D::Float32 => Arc::new(arrow_array::Float32Array::from_iter_values(
            xs.iter().map(|&x| x as f32),
        )),
        D::Decimal128(p, s) => {
            let scale = 10f64.powi(i32::from(*s));
            Arc::new(
                arrow_array::Decimal128Array::from_iter_values(
                    xs.iter().map(|&x| (x * scale).round() as i128),
                )
                .with_precision_and_scale(*p, *s)?,
            )
        }
        D::Date32 => Arc::new(arrow_array::Date32Array::from_iter_values(
            xs.iter().map(|&x| x as i32),
        )),
        D::Timestamp(arrow_schema::TimeUnit::Microsecond, tz) => Arc::new(
            arrow_array::TimestampMicrosecondArray::from_iter_values(xs.iter().map(|&x| x as i64))
                .with_timezone_opt(tz.clone()),
        ),
        D::Interval(arrow_schema::IntervalUnit::YearMonth) => Arc::new(
            arrow_array::IntervalYearMonthArray::from_iter_values(xs.iter().map(|&x| x as i32)),
        ),
        D::Interval(arrow_schema::IntervalUnit::DayTime) => Arc::new(
            arrow_array::IntervalDayTimeArray::from_iter_values(xs.iter().map(|&x| {
                let micros = x as i64;
                let day = MICROS_PER_DAY as i64;
                IntervalDayTime::new((micros / day) as i32, ((micros % day) / 1000) as i32)
            })),
        ),
        D::Duration(arrow_schema::TimeUnit::Microsecond) => Arc::new(
            arrow_array::DurationMicrosecondArray::from_iter_values(xs.iter().map(|&x| x as i64)),
        ),
        other => {
            return Err(FerroError::Internal(format!(
                "histogram_numeric has no result for {other}"
            )))
        }
    };
    Ok(a)
}

/// Every group's histogram of at most `nb` bins.
pub struct HistogramAccumulator {
    groups: Vec<Histogram>,
    nb: usize,
    input: DataType,
}

impl HistogramAccumulator {
    /// Histograms of `nb` bins over values of type `input`.
    pub fn new(nb: usize, input: DataType) -> Self {
        Self {
            groups: Vec::new(),
            nb,
            input,
        }
    }

    fn grow(&mut self, total: usize) {
        if self.groups.len() < total {
            self.groups.resize_with(total, Histogram::new);
        }
    }

    fn take(&mut self, emit: EmitTo) -> Vec<Histogram> {
        emit.take(&mut self.groups)
    }

    fn lists(
        groups: &[Histogram],
        x_type: DataType,
        xs: impl Fn(&[f64]) -> Result<ArrayRef>,
        empty_is_null: bool,
    ) -> Result<ArrayRef> {
        let mut offsets = Vec::with_capacity(groups.len() + 1);
        offsets.push(0i32);
        let (mut x, mut y) = (Vec::new(), Vec::new());
        let mut valid = Vec::with_capacity(groups.len());
        for g in groups {
            for &(a, b) in &g.bins {
                x.push(a);
                y.push(b);
            }
            offsets.push(i32::try_from(x.len()).map_err(|_| {
                FerroError::Internal("histogram_numeric: more bins than a list holds".into())
            })?);
            valid.push(!(empty_is_null && g.bins.is_empty()));
        }
        let fields = bin_fields(x_type);
        let values = StructArray::try_new(
            fields.clone(),
            vec![xs(&x)?, Arc::new(arrow_array::Float64Array::from(y))],
            None,
        )?;
        let nulls = valid
            .iter()
            .any(|v| !v)
            .then(|| arrow_buffer::NullBuffer::from(valid));
        Ok(Arc::new(ListArray::try_new(
            Arc::new(Field::new_list_field(DataType::Struct(fields), true)),
            OffsetBuffer::new(offsets.into()),
            Arc::new(values),
            nulls,
        )?))
    }
}

impl GroupsAccumulator for HistogramAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.grow(total);
        for (v, &g) in doubles(&values[0])?.into_iter().zip(groups) {
            if let Some(v) = v {
                self.groups[g as usize].add(v, self.nb);
            }
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.grow(total);
        let lists = states[0].as_list::<i32>();
        for (r, &g) in groups.iter().enumerate() {
            if lists.is_null(r) {
                continue;
            }
            let bins = lists.value(r);
            let bins = bins.as_struct();
            let (x, y) = (
                bins.column(0).as_primitive::<Float64Type>(),
                bins.column(1).as_primitive::<Float64Type>(),
            );
            let other: Vec<(f64, f64)> =
                (0..bins.len()).map(|i| (x.value(i), y.value(i))).collect();
            if !other.is_empty() {
                self.groups[g as usize].merge(&other, self.nb);
            }
        }
        Ok(())
    }

    fn evaluate(&mut self, emit: EmitTo) -> Result<ArrayRef> {
        let groups = self.take(emit);
        let x_type = match &self.input {
            DataType::Null => DataType::Float64,
            t => t.clone(),
        };
        let t = x_type.clone();
        Self::lists(&groups, x_type, |xs| centres(xs, &t), true)
    }

    fn state(&mut self, emit: EmitTo) -> Result<Vec<ArrayRef>> {
        let groups = self.take(emit);
        Ok(vec![Self::lists(
            &groups,
            DataType::Float64,
            |xs| Ok(Arc::new(arrow_array::Float64Array::from(xs.to_vec()))),
            false,
        )?])
    }

    fn size(&self) -> usize {
        self.groups.capacity() * std::mem::size_of::<Histogram>()
            + self
                .groups
                .iter()
                .map(|g| g.bins.capacity() * 16)
                .sum::<usize>()
    }
}

/// The state's type: every group's bins as doubles.
pub fn histogram_state_type() -> DataType {
    histogram_type(&DataType::Float64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn java_random_matches_the_jdk() {
        // `new java.util.Random(31183).nextDouble()` twice, from the JDK.
        let mut r = JavaRandom::new(31183);
        let (a, b) = (r.next_double(), r.next_double());
        assert!((0.0..1.0).contains(&a) && (0.0..1.0).contains(&b) && a != b);
        // `new Random(42).nextDouble()` is 0.7275636800328681 in every JDK.
        assert_eq!(JavaRandom::new(42).next_double(), 0.7275636800328681);
    }

    #[test]
    fn few_values_keep_a_bin_each_and_many_merge_to_nb() {
        let mut h = Histogram::new();
        for v in [3.0, 1.0, 2.0, 2.0] {
            h.add(v, 3);
        }
        assert_eq!(h.bins, vec![(1.0, 1.0), (2.0, 2.0), (3.0, 1.0)]);
        h.add(10.0, 3);
        // 1, 2, 3 are equally close: the merged pair is one of them; the total stays 5.
        assert_eq!(h.bins.len(), 3);
        assert_eq!(h.bins.iter().map(|b| b.1).sum::<f64>(), 5.0);
        assert_eq!(h.bins[2], (10.0, 1.0));
    }
}
