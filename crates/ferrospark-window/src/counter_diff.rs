//! `counter_diff(value [, startTime])`: a cumulative counter turned into deltas, row by row in
//! each ordered partition, as Spark 4.3's `CounterDiff` window function computes them.
//!
//! Per partition, over the rows in order (rows whose value is NULL give NULL and are skipped,
//! their start time unread):
//!
//! ```text
//!   value < 0                        -> COUNTER_DIFF_NEGATIVE_COUNTER_VALUE
//!   start < previous start           -> COUNTER_DIFF_START_TIME_DECREASED (both not NULL)
//!   first value, start advanced,
//!   or value < previous value        -> NULL (a reset)
//!   otherwise                        -> value - previous value
//! ```
//!
//! "Previous" is the last row with a value; its start time may be NULL, which disables the
//! start-time check for the next row. Values compare in Spark's order (NaN above every
//! number, -0.0 equal to 0.0), so a counter that reaches NaN resets on its next number.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Decimal128Type, Float64Type, Int64Type, TimestampMicrosecondType};
use arrow_array::{Array, ArrayRef, PrimitiveArray};
use arrow_schema::DataType;
use ferrospark_common::{FerroError, Result};

use crate::functions::Layout;

/// A counter's value: compared in Spark's order, subtracted in its own type.
trait CounterValue: arrow_buffer::ArrowNativeType {
    fn is_negative(self) -> bool;
    fn less_than(self, other: Self) -> bool;
    fn minus(self, other: Self) -> Self;
}

macro_rules! integer_counter {
    ($($t:ty),*) => {$(
        impl CounterValue for $t {
            fn is_negative(self) -> bool {
                self < 0
            }
            fn less_than(self, other: Self) -> bool {
                self < other
            }
            fn minus(self, other: Self) -> Self {
                // Both are non-negative, so the difference cannot overflow.
                self - other
            }
        }
    )*};
}

// Integers widened to BIGINT, decimals as their unscaled 128-bit values.
integer_counter!(i64, i128);

impl CounterValue for f64 {
    fn is_negative(self) -> bool {
        self < 0.0
    }
    fn less_than(self, other: Self) -> bool {
        // Spark's order: NaN is the largest value and equals itself; -0.0 equals 0.0.
        match (self.is_nan(), other.is_nan()) {
            (true, _) => false,
            (false, true) => true,
            (false, false) => self < other,
        }
    }
    fn minus(self, other: Self) -> Self {
        self - other
    }
}

/// `counter_diff` of `values` (numeric, already evaluated) for every row of `layout`, with the
/// optional start times (microsecond timestamps); the result has the values' type.
pub(crate) fn counter_diffs(
    values: &ArrayRef,
    start: Option<&ArrayRef>,
    layout: &Layout,
) -> Result<ArrayRef> {
    let t = values.data_type().clone();
    Ok(match &t {
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => {
            let wide = arrow_cast::cast(values, &DataType::Int64)?;
            let out = run::<i64, Int64Type>(wide.as_primitive(), start, layout, values)?;
            arrow_cast::cast(&(Arc::new(out) as ArrayRef), &t)?
        }
        DataType::Float32 | DataType::Float64 => {
            // The difference of two FLOATs is exact as a DOUBLE, so rounding it back to FLOAT
            // gives FLOAT subtraction's own result.
            let wide = arrow_cast::cast(values, &DataType::Float64)?;
            let out = run::<f64, Float64Type>(wide.as_primitive(), start, layout, values)?;
            arrow_cast::cast(&(Arc::new(out) as ArrayRef), &t)?
        }
        DataType::Decimal128(p, s) => {
            let out = run::<i128, Decimal128Type>(values.as_primitive(), start, layout, values)?;
            Arc::new(out.with_precision_and_scale(*p, *s)?)
        }
        other => {
            return Err(FerroError::Internal(format!(
                "counter_diff over {other}: the analyzer admits numbers only"
            )))
        }
    })
}

fn run<V, T>(
    values: &PrimitiveArray<T>,
    start: Option<&ArrayRef>,
    layout: &Layout,
    original: &ArrayRef,
) -> Result<PrimitiveArray<T>>
where
    V: CounterValue,
    T: arrow_array::ArrowPrimitiveType<Native = V>,
{
    let times = start.map(|s| s.as_primitive::<TimestampMicrosecondType>());
    let start_at = |row: usize| times.and_then(|t| t.is_valid(row).then(|| t.value(row)));
    let mut out: Vec<Option<V>> = vec![None; values.len()];
    for &(first, end) in &layout.partitions {
        // The last row with a value, and that value.
        let mut previous: Option<(usize, V)> = None;
        for (i, slot) in out.iter_mut().enumerate().take(end).skip(first) {
            if values.is_null(i) {
                continue;
            }
            let v = values.value(i);
            if v.is_negative() {
                return Err(FerroError::Arithmetic(format!(
                    "[COUNTER_DIFF_NEGATIVE_COUNTER_VALUE] A negative counter value {} was provided to function `counter_diff`. Negative counter values are not allowed. SQLSTATE: 22003",
                    text_at(original, i)?
                )));
            }
            *slot = match previous {
                None => None,
                Some((row, p)) => {
                    let advanced = match (start_at(i), start_at(row)) {
                        (Some(now), Some(before)) if now < before => {
                            let s = start.expect("a start time was read");
                            return Err(FerroError::Arithmetic(format!(
                                "[COUNTER_DIFF_START_TIME_DECREASED] Start time provided to function `counter_diff` decreased from {} to {}. Start time is required to be non-decreasing. SQLSTATE: 22023",
                                text_at(s, row)?,
                                text_at(s, i)?
                            )));
                        }
                        (Some(now), Some(before)) => now > before,
                        _ => false,
                    };
                    (!advanced && !v.less_than(p)).then(|| v.minus(p))
                }
            };
            previous = Some((i, v));
        }
    }
    Ok(out.into_iter().collect())
}

/// Row `i` of `a` as Spark prints the value in a message.
fn text_at(a: &ArrayRef, i: usize) -> Result<String> {
    let one = a.slice(i, 1);
    let text = match ferrospark_expr::to_spark_string(&one)? {
        Some(t) => t,
        None => arrow_cast::cast(&one, &DataType::Utf8)?,
    };
    Ok(text.as_string::<i32>().value(0).to_string())
}

#[cfg(test)]
mod tests {
    use arrow_array::{Float64Array, Int32Array, TimestampMicrosecondArray};

    use super::*;

    fn layout(partitions: Vec<(usize, usize)>, n: usize) -> Layout {
        Layout {
            partitions,
            peer_start: (0..n as u32).collect(),
            peer_end: (1..=n as u32).collect(),
            range_key: None,
            ansi: true,
            exact_floats: true,
        }
    }

    #[test]
    fn resets_on_a_decrease_skip_nulls_and_restart_per_partition() {
        let v: ArrayRef = Arc::new(Int32Array::from(vec![
            Some(100),
            Some(200),
            None,
            Some(250),
            Some(50),
            Some(60),
            Some(5),
            Some(5),
        ]));
        let out = counter_diffs(&v, None, &layout(vec![(0, 6), (6, 8)], 8)).expect("a result");
        let got: Vec<Option<i32>> = out
            .as_primitive::<arrow_array::types::Int32Type>()
            .iter()
            .collect();
        assert_eq!(
            got,
            vec![
                None,
                Some(100),
                None,
                Some(50),
                None,
                Some(10),
                None,
                Some(0)
            ]
        );
    }

    #[test]
    fn nan_is_the_largest_value_and_negative_zero_is_zero() {
        let v: ArrayRef = Arc::new(Float64Array::from(vec![
            1.0,
            f64::NAN,
            5.0,
            f64::INFINITY,
            2.0,
            -0.0,
            0.0,
        ]));
        let out = counter_diffs(&v, None, &layout(vec![(0, 7)], 7)).expect("a result");
        let got: Vec<Option<f64>> = out.as_primitive::<Float64Type>().iter().collect();
        assert_eq!(got[0], None);
        assert!(got[1].expect("a result").is_nan());
        assert_eq!(got[2], None);
        assert_eq!(got[3], Some(f64::INFINITY));
        assert_eq!((got[4], got[5], got[6]), (None, None, Some(0.0)));
    }

    #[test]
    fn start_times_reset_unless_null_and_must_not_decrease() {
        let v: ArrayRef = Arc::new(Int32Array::from(vec![10, 20, 30, 40, 45]));
        let t: ArrayRef = Arc::new(TimestampMicrosecondArray::from(vec![
            Some(0),
            None,
            Some(60_000_000),
            Some(60_000_000),
            Some(0),
        ]));
        let l = layout(vec![(0, 4)], 5);
        let out = counter_diffs(&v, Some(&t), &l).expect("a result");
        let got: Vec<Option<i32>> = out
            .as_primitive::<arrow_array::types::Int32Type>()
            .iter()
            .collect();
        // A NULL start time leaves the next row unchecked.
        assert_eq!(got[..4], [None, Some(10), Some(10), Some(10)]);
        let err = counter_diffs(&v, Some(&t), &layout(vec![(0, 5)], 5)).expect_err("an error");
        assert!(
            err.to_string()
                .contains("COUNTER_DIFF_START_TIME_DECREASED")
                && err
                    .to_string()
                    .contains("from 1970-01-01 00:01:00 to 1970-01-01 00:00:00"),
            "{err}"
        );
        let negative: ArrayRef = Arc::new(Float64Array::from(vec![-0.0, -1.0]));
        let err = counter_diffs(&negative, None, &layout(vec![(0, 2)], 2)).expect_err("an error");
        assert!(
            err.to_string().contains("negative counter value -1.0"),
            "{err}"
        );
    }
}
