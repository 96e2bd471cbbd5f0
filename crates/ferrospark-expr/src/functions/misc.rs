//! Spark's miscellaneous functions: `width_bucket`, `raise_error`, `assert_true`, `conv`,
//! `bin`, `make_timestamp`.

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
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MiscFn {
    /// `width_bucket(v, min, max, n)`: which of `n` equal buckets between `min` and `max` holds
    /// `v` (0 below, `n + 1` above)
    WidthBucket,
    /// `raise_error(message)`: `USER_RAISED_EXCEPTION` on every row it is evaluated for
    RaiseError,
    /// `assert_true(condition[, message])`: NULL, or `USER_RAISED_EXCEPTION`
    AssertTrue,
    /// `conv(num, from_base, to_base)`: Spark's `NumberConverter` (64-bit unsigned; a negative
    /// target base prints signed)
    Conv {
        /// ANSI mode: an overflow is an error
        ansi: bool,
    },
    /// `bin(n)`: the two's complement bits of a BIGINT
    Bin,
    /// A scalar subquery's value from its row count and one of its rows:
    /// `SCALAR_SUBQUERY_TOO_MANY_ROWS` where the count is over one (Spark's single join)
    SingleValue,
    /// `make_timestamp(y, mo, d, h, mi, sec[, zone])` in the session zone
    MakeTimestamp {
        /// the session zone
        tz: String,
        /// ANSI mode: a field out of range is an error
        ansi: bool,
    },
}

impl MiscFn {
    /// Spark's name.
    pub fn name(&self) -> &'static str {
        match self {
            MiscFn::WidthBucket => "width_bucket",
            MiscFn::RaiseError => "raise_error",
            MiscFn::AssertTrue => "assert_true",
            MiscFn::Conv { .. } => "conv",
            MiscFn::Bin => "bin",
            MiscFn::MakeTimestamp { .. } => "make_timestamp",
            MiscFn::SingleValue => "scalarsubquery",
        }
    }

    /// Evaluates over `args`.
    pub(crate) fn evaluate(&self, args: &Args) -> Result<ArrayRef> {
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
            MiscFn::SingleValue => {
                let counts = a.as_primitive::<Int64Type>();
                if counts.iter().any(|c| c.is_some_and(|c| c > 1)) {
                    return Err(FerroError::Arithmetic(
                        "[SCALAR_SUBQUERY_TOO_MANY_ROWS] More than one row returned by a subquery used as an expression. SQLSTATE: 21000".into(),
                    ));
                }
                args.full(1)
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
            MiscFn::Conv { ansi } => {
                let ansi = *ansi;
                let (from, to) = (args.full(1)?, args.full(2)?);
                let (s, from, to) = (
                    a.as_string::<i32>(),
                    from.as_primitive::<arrow_array::types::Int32Type>(),
                    to.as_primitive::<arrow_array::types::Int32Type>(),
                );
                let mut out = Vec::with_capacity(s.len());
                for i in 0..s.len() {
                    if s.is_null(i) || from.is_null(i) || to.is_null(i) {
                        out.push(None);
                        continue;
                    }
                    out.push(conv(s.value(i), from.value(i), to.value(i), ansi)?);
                }
                Ok(Arc::new(arrow_array::StringArray::from(out)))
            }
            MiscFn::Bin => {
                let out: arrow_array::StringArray = a
                    .as_primitive::<Int64Type>()
                    .iter()
                    .map(|v| v.map(|v| format!("{:b}", v as u64)))
                    .collect();
                Ok(Arc::new(out))
            }
            MiscFn::MakeTimestamp { tz, ansi } => {
                let ansi = *ansi;
                let cols: Vec<ArrayRef> = (0..args.len())
                    .map(|i| args.full(i))
                    .collect::<Result<_>>()?;
                let ints: Vec<_> = cols[..5]
                    .iter()
                    .map(|c| c.as_primitive::<arrow_array::types::Int32Type>())
                    .collect();
                let secs = cols[5].as_primitive::<arrow_array::types::Decimal128Type>();
                let zones = cols.get(6).map(|z| z.as_string::<i32>().clone());
                let session = super::datetime::zone(tz)?;
                // A zone column usually repeats one zone: parsed once while it does.
                let mut zone_of = super::LastCompiled::new(super::datetime::zone);
                let mut out: Vec<Option<i64>> = Vec::with_capacity(a.len());
                for i in 0..a.len() {
                    if ints.iter().any(|c| c.is_null(i))
                        || secs.is_null(i)
                        || zones.as_ref().is_some_and(|z| z.is_null(i))
                    {
                        out.push(None);
                        continue;
                    }
                    let zone = match &zones {
                        Some(z) => *zone_of.get(z.value(i))?,
                        None => session,
                    };
                    let v = |k: usize| ints[k].value(i);
                    match make_timestamp(v(0), v(1), v(2), v(3), v(4), secs.value(i), &zone) {
                        Ok(t) => out.push(t),
                        Err(_) if !ansi => out.push(None),
                        Err(e) => return Err(e),
                    }
                }
                Ok(Arc::new(
                    arrow_array::TimestampMicrosecondArray::from(out).with_timezone(tz.clone()),
                ))
            }
        }
    }
}

/// Spark's `NumberConverter.convert`.
fn conv(text: &str, from: i32, to: i32, ansi: bool) -> Result<Option<String>> {
    if !(2..=36).contains(&from) || !(2..=36).contains(&to.abs()) {
        return Ok(None);
    }
    let t = text.trim();
    let (negative, digits) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t),
    };
    let mut v: u128 = 0;
    let mut any = false;
    for c in digits.chars() {
        let Some(d) = c.to_digit(36).filter(|d| *d < from as u32) else {
            break;
        };
        any = true;
        v = v * from as u128 + d as u128;
        if v > u64::MAX as u128 {
            if ansi {
                return Err(FerroError::Arithmetic(
                    "[ARITHMETIC_OVERFLOW] Overflow in function conv(). If necessary set \"spark.sql.ansi.enabled\" to \"false\" to bypass this error. SQLSTATE: 22003".into(),
                ));
            }
            v = u64::MAX as u128;
            break;
        }
    }
    // A text with no digit of the base reads as 0; an empty one is NULL.
    if !any && t.is_empty() {
        return Ok(None);
    }
    let mut u = v as u64;
    if negative {
        u = u.wrapping_neg();
    }
    let (sign, mag) = if to < 0 && (u as i64) < 0 {
        ("-", (u as i64).unsigned_abs())
    } else {
        ("", u)
    };
    let base = to.unsigned_abs() as u64;
    let mut out = Vec::new();
    let mut m = mag;
    loop {
        let d = (m % base) as u32;
        out.push(
            std::char::from_digit(d, 36)
                .unwrap_or('0')
                .to_ascii_uppercase(),
        );
        m /= base;
        if m == 0 {
            break;
        }
    }
    out.reverse();
    Ok(Some(format!(
        "{sign}{}",
        out.into_iter().collect::<String>()
    )))
}

fn out_of_bounds(what: &str) -> FerroError {
    FerroError::Arithmetic(format!(
        "[DATETIME_FIELD_OUT_OF_BOUNDS] {what}. If necessary set \"spark.sql.ansi.enabled\" to \"false\" to bypass this error. SQLSTATE: 22023"
    ))
}

/// Spark's `MakeTimestamp`: seconds with a fraction (60 with no fraction is the next minute).
fn make_timestamp(
    y: i32,
    mo: i32,
    d: i32,
    h: i32,
    mi: i32,
    sec_unscaled: i128,
    zone: &arrow_array::timezone::Tz,
) -> Result<Option<i64>> {
    let whole = sec_unscaled.div_euclid(1_000_000);
    let micros = sec_unscaled.rem_euclid(1_000_000) as i64;
    if whole == 60 && micros != 0 {
        return Err(FerroError::Arithmetic(
            "[INVALID_FRACTION_OF_SECOND] Valid range for seconds is [0, 60] (inclusive), but the provided value is not. Use `try_make_timestamp` to return NULL instead. SQLSTATE: 22023".into(),
        ));
    }
    if !(0..=60).contains(&whole) {
        return Err(out_of_bounds(&format!(
            "Invalid value for SecondOfMinute (valid values 0 - 59): {whole}"
        )));
    }
    let date = chrono::NaiveDate::from_ymd_opt(y, mo as u32, d as u32)
        .ok_or_else(|| out_of_bounds(&format!("Invalid date {y}-{mo}-{d}")))?;
    let (carry, s) = if whole == 60 {
        (1, 0)
    } else {
        (0, whole as u32)
    };
    let time = chrono::NaiveTime::from_hms_micro_opt(h as u32, mi as u32, s, micros as u32)
        .ok_or_else(|| out_of_bounds(&format!("Invalid time {h}:{mi}:{whole}")))?;
    let local = date.and_time(time) + chrono::Duration::minutes(carry);
    Ok(super::datetime::from_local(&local, zone))
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
                if crate::types::is_ansi_interval(&t) {
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
        "conv" => {
            call.arity(&args, 3, 3)?;
            let s = call.string_arg(0, args[0].clone())?;
            let from = call.int_arg(1, args[1].clone(), &DataType::Int32)?;
            let to = call.int_arg(2, args[2].clone(), &DataType::Int32)?;
            call.function(
                ScalarFunction::Misc(MiscFn::Conv {
                    ansi: call.ctx.ansi,
                }),
                vec![s, from, to],
                DataType::Utf8,
            )
        }
        "bin" => {
            call.arity(&args, 1, 1)?;
            let t = spark_equivalent(&args[0].data_type());
            if !(crate::types::is_numeric(&t) || t == DataType::Null || t == DataType::Utf8) {
                return Err(call.wrong_type(0, &args[0], "the \"BIGINT\" type"));
            }
            let n = cast_to(args[0].clone(), &DataType::Int64);
            call.function(ScalarFunction::Misc(MiscFn::Bin), vec![n], DataType::Utf8)
        }
        // The fields taken as a UTC wall clock, then read as a TIMESTAMP_NTZ.
        "make_timestamp_ntz" => {
            call.arity(&args, 6, 6)?;
            let mut a = Vec::with_capacity(args.len());
            for (i, x) in args.into_iter().enumerate() {
                a.push(match i {
                    5 => cast_to(x, &DataType::Decimal128(16, 6)),
                    _ => call.int_arg(i, x, &DataType::Int32)?,
                });
            }
            let ts = call.function(
                ScalarFunction::Misc(MiscFn::MakeTimestamp {
                    tz: "UTC".into(),
                    ansi: call.ctx.ansi,
                }),
                a,
                super::datetime::timestamp_type("UTC"),
            );
            cast_to(
                ts,
                &DataType::Timestamp(arrow_schema::TimeUnit::Microsecond, None),
            )
        }
        "make_timestamp" => {
            call.arity(&args, 6, 7)?;
            let mut a = Vec::with_capacity(args.len());
            for (i, x) in args.into_iter().enumerate() {
                a.push(match i {
                    5 => cast_to(x, &DataType::Decimal128(16, 6)),
                    6 => call.string_arg(6, x)?,
                    _ => call.int_arg(i, x, &DataType::Int32)?,
                });
            }
            let tz = call.ctx.session_tz.to_string();
            call.function(
                ScalarFunction::Misc(MiscFn::MakeTimestamp {
                    tz: tz.clone(),
                    ansi: call.ctx.ansi,
                }),
                a,
                super::datetime::timestamp_type(&tz),
            )
        }
        super::SINGLE_VALUE_FN => {
            call.arity(&args, 2, 2)?;
            let t = args[1].data_type();
            let n = crate::bind::cast_in(args[0].clone(), &DataType::Int64, call.ctx);
            call.function(
                ScalarFunction::Misc(MiscFn::SingleValue),
                vec![n, args[1].clone()],
                t,
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
