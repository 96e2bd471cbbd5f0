//! Spark's miscellaneous functions: `width_bucket`, `raise_error`, `assert_true`.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, ArrayRef, Int64Array};
use arrow_schema::DataType;
use ferrospark_common::{FerroError, Result};

use super::{Args, Bound, Call, ScalarFunction};
use crate::bind::cast_to;
use crate::physical::PhysicalExpr;
use crate::types::spark_equivalent;

/// The functions of this family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MiscFn {
    /// `width_bucket(v, min, max, n)`: which of `n` equal buckets between `min` and `max` holds
    /// `v` (0 below, `n + 1` above)
    WidthBucket,
    /// `raise_error(message)`: `USER_RAISED_EXCEPTION` on every row it is evaluated for
    RaiseError,
    /// `assert_true(condition[, message])`: NULL, or `USER_RAISED_EXCEPTION`
    AssertTrue,
}

impl MiscFn {
    /// Spark's name.
    pub fn name(self) -> &'static str {
        match self {
            MiscFn::WidthBucket => "width_bucket",
            MiscFn::RaiseError => "raise_error",
            MiscFn::AssertTrue => "assert_true",
        }
    }

    /// Evaluates over `args`.
    pub(crate) fn evaluate(self, args: &Args) -> Result<ArrayRef> {
        let a = args.full(0)?;
        match self {
            MiscFn::WidthBucket => {
                let (lo, hi, n) = (args.full(1)?, args.full(2)?, args.full(3)?);
                let (v, lo, hi) = (
                    a.as_primitive::<Float64Type>(),
                    lo.as_primitive::<Float64Type>(),
                    hi.as_primitive::<Float64Type>(),
                );
                let n = n.as_primitive::<Int64Type>();
                let out: Int64Array = (0..a.len())
                    .map(|i| {
                        if v.is_null(i) || lo.is_null(i) || hi.is_null(i) || n.is_null(i) {
                            return None;
                        }
                        width_bucket(v.value(i), lo.value(i), hi.value(i), n.value(i))
                    })
                    .collect();
                Ok(Arc::new(out))
            }
            MiscFn::RaiseError => {
                let msg = a.as_string::<i32>();
                match (0..msg.len()).next() {
                    Some(i) => Err(user_raised(if msg.is_null(i) {
                        "null"
                    } else {
                        msg.value(i)
                    })),
                    None => Ok(arrow_array::new_null_array(&DataType::Null, 0)),
                }
            }
            MiscFn::AssertTrue => {
                let c = a.as_boolean();
                let msg = if args.len() > 1 {
                    Some(args.full(1)?)
                } else {
                    None
                };
                for i in 0..c.len() {
                    if c.is_null(i) || !c.value(i) {
                        let m = match &msg {
                            Some(m) if m.is_valid(i) => m.as_string::<i32>().value(i).to_string(),
                            _ => "'condition' is not true!".to_string(),
                        };
                        return Err(user_raised(&m));
                    }
                }
                Ok(arrow_array::new_null_array(&DataType::Null, c.len()))
            }
        }
    }
}

fn user_raised(message: &str) -> FerroError {
    FerroError::Arithmetic(format!("[USER_RAISED_EXCEPTION] {message} SQLSTATE: P0001"))
}

/// Spark's `WidthBucket.computeBucketNumber`.
fn width_bucket(v: f64, min: f64, max: f64, n: i64) -> Option<i64> {
    if n <= 0 || n == i64::MAX || v.is_nan() || min == max || !min.is_finite() || !max.is_finite() {
        return None;
    }
    let (lower, upper) = (min.min(max), min.max(max));
    Some(if min < max {
        if v < lower {
            0
        } else if v >= upper {
            n + 1
        } else {
            (n as f64 * (v - lower) / (upper - lower)) as i64 + 1
        }
    } else if v > upper {
        0
    } else if v <= lower {
        n + 1
    } else {
        (n as f64 * (upper - v) / (upper - lower)) as i64 + 1
    })
}

/// Binds this family's functions.
pub(crate) fn bind(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    let e = match call.name {
        "width_bucket" => {
            call.arity(&args, 4, 4)?;
            // Intervals count their months or microseconds.
            let number = |i: usize, a: PhysicalExpr| -> Result<PhysicalExpr> {
                let t = spark_equivalent(&a.data_type());
                if super::interval::is_interval(&t) {
                    let raw = match t {
                        DataType::Interval(arrow_schema::IntervalUnit::YearMonth) => {
                            super::interval::node(
                                super::interval::IntervalFn::Months,
                                vec![a],
                                DataType::Int64,
                            )
                        }
                        _ => super::interval::node(
                            super::interval::IntervalFn::Micros,
                            vec![a],
                            DataType::Int64,
                        ),
                    };
                    Ok(cast_to(raw, &DataType::Float64))
                } else {
                    call.double_arg(i, a)
                }
            };
            let mut it = args.into_iter();
            let mut bound = Vec::with_capacity(4);
            for i in 0..3 {
                let Some(a) = it.next() else {
                    return Err(FerroError::Internal("width_bucket arguments".into()));
                };
                bound.push(number(i, a)?);
            }
            let Some(n) = it.next() else {
                return Err(FerroError::Internal("width_bucket arguments".into()));
            };
            let nt = spark_equivalent(&n.data_type());
            bound.push(if nt == DataType::Utf8 {
                cast_to(cast_to(n, &DataType::Float64), &DataType::Int64)
            } else if crate::types::is_numeric(&nt) || nt == DataType::Null {
                cast_to(n, &DataType::Int64)
            } else {
                return Err(call.wrong_type(3, &n, "the \"BIGINT\" type"));
            });
            call.function(
                ScalarFunction::Misc(MiscFn::WidthBucket),
                bound,
                DataType::Int64,
            )
        }
        "raise_error" => {
            call.arity(&args, 1, 1)?;
            let m = call.string_arg(0, args[0].clone())?;
            call.function(
                ScalarFunction::Misc(MiscFn::RaiseError),
                vec![m],
                DataType::Null,
            )
        }
        "assert_true" => {
            call.arity(&args, 1, 2)?;
            let mut a = vec![crate::bind::cast_boolean(call.expr, args[0].clone())?];
            if let Some(m) = args.get(1) {
                a.push(call.string_arg(1, m.clone())?);
            }
            call.function(ScalarFunction::Misc(MiscFn::AssertTrue), a, DataType::Null)
        }
        _ => return Ok(Bound::NotMine(args)),
    };
    Ok(Bound::Done(e))
}
