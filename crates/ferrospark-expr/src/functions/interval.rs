//! Arithmetic on Spark's ANSI intervals and the functions that make them: `i ± j`, `-i`,
//! `i * n`, `i / n`, `abs`, `signum`, `div`, `make_ym_interval`, `make_dt_interval`,
//! `make_interval`, and the interval a difference of timestamps or dates is.
//!
//! Intervals compute on their integer form (months, days or microseconds) with Spark's
//! overflow checks (`INTERVAL_ARITHMETIC_OVERFLOW`), and Spark's rounding: a product or
//! quotient is rounded half up to a whole month or microsecond.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Decimal128Type, DurationMicrosecondType, Float64Type, Int32Type, Int64Type,
    IntervalDayTimeType, IntervalYearMonthType,
};
use arrow_array::{
    Array, ArrayRef, DurationMicrosecondArray, Float64Array, Int64Array, IntervalDayTimeArray,
    IntervalMonthDayNanoArray, IntervalYearMonthArray,
};
use arrow_buffer::IntervalDayTime;
use arrow_schema::{DataType, IntervalUnit, TimeUnit};
use ferrospark_common::{FerroError, Result};

use super::{Args, Bound, Call, ScalarFunction};
use crate::bind::cast_to;
use crate::interval::{overflow_error, CalendarInterval, MICROS_PER_DAY};
use crate::physical::PhysicalExpr;
use crate::types::{
    is_ansi_interval as is_interval, is_decimal, is_floating, is_integral, is_string,
    spark_equivalent,
};

/// The interval functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntervalFn {
    /// `i + j` (both of one interval type)
    Add,
    /// `i - j`
    Subtract,
    /// `-i`
    Negate,
    /// `abs(i)`
    Abs,
    /// `i * n`
    Multiply,
    /// `i / n`
    Divide,
    /// `signum(i)`: -1.0, 0.0 or 1.0
    Signum,
    /// `div(i, j)`: how many whole `j` fit in `i`
    Div,
    /// A day or day-time interval as a count of microseconds (`timestamp + i`).
    Micros,
    /// A year-month interval as a count of months.
    Months,
    /// A count of days as a day interval (`date - date`).
    FromDays,
    /// A count of microseconds as a day-time interval (`timestamp - timestamp`).
    FromMicros,
    /// `make_ym_interval(years, months)`
    MakeYm,
    /// `make_dt_interval(days, hours, mins, secs)`
    MakeDt,
    /// `make_interval(years, months, weeks, days, hours, mins, secs)`
    MakeInterval,
}

impl IntervalFn {
    /// Spark's name.
    pub fn name(self) -> &'static str {
        match self {
            IntervalFn::Add => "+",
            IntervalFn::Subtract => "-",
            IntervalFn::Negate => "negative",
            IntervalFn::Abs => "abs",
            IntervalFn::Multiply => "*",
            IntervalFn::Divide => "/",
            IntervalFn::Signum => "signum",
            IntervalFn::Div => "div",
            IntervalFn::FromDays | IntervalFn::FromMicros => "-",
            IntervalFn::Micros => "micros",
            IntervalFn::Months => "months",
            IntervalFn::MakeYm => "make_ym_interval",
            IntervalFn::MakeDt => "make_dt_interval",
            IntervalFn::MakeInterval => "make_interval",
        }
    }

    /// Evaluates over `args`.
    pub(crate) fn evaluate(self, args: &Args) -> Result<ArrayRef> {
        let a = args.full(0)?;
        match self {
            IntervalFn::Add | IntervalFn::Subtract => {
                let b = args.full(1)?;
                let (x, y) = (raw(&a)?, raw(&b)?);
                let t = a.data_type().clone();
                let out = x
                    .iter()
                    .zip(&y)
                    .map(|(x, y)| match (x, y) {
                        (Some(x), Some(y)) => {
                            let v = if self == IntervalFn::Add {
                                x + y
                            } else {
                                x - y
                            };
                            fit(v, &t).map(Some).ok_or_else(|| overflow_error(true))
                        }
                        _ => Ok(None),
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok(build(&out, &t))
            }
            IntervalFn::Negate | IntervalFn::Abs => {
                let t = a.data_type().clone();
                let out = raw(&a)?
                    .into_iter()
                    .map(|v| match v {
                        Some(v) => {
                            let r = if self == IntervalFn::Negate || v < 0 {
                                -v
                            } else {
                                v
                            };
                            fit(r, &t).map(Some).ok_or_else(|| overflow_error(false))
                        }
                        None => Ok(None),
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok(build(&out, &t))
            }
            IntervalFn::Multiply | IntervalFn::Divide => scale(self, &a, &args.full(1)?),
            IntervalFn::Signum => {
                let out: Float64Array = raw(&a)?
                    .into_iter()
                    .map(|v| v.map(|v| v.signum() as f64))
                    .collect();
                Ok(Arc::new(out))
            }
            IntervalFn::Div => {
                let (x, y) = (raw(&a)?, raw(&args.full(1)?)?);
                let out = x
                    .iter()
                    .zip(&y)
                    .map(|(x, y)| match (x, y) {
                        (Some(_), Some(0)) => Err(FerroError::Arithmetic(
                            "[INTERVAL_DIVIDED_BY_ZERO] Division by zero. Use `try_divide` to tolerate divisor being 0 and return NULL instead.".into(),
                        )),
                        (Some(x), Some(y)) => i64::try_from(x / y)
                            .map(Some)
                            .map_err(|_| overflow_error(false)),
                        _ => Ok(None),
                    })
                    .collect::<Result<Int64Array>>()?;
                Ok(Arc::new(out))
            }
            IntervalFn::Micros => {
                let us: Int64Array = match a.data_type() {
                    DataType::Interval(IntervalUnit::DayTime) => {
                        crate::interval::day_time_as_duration(a.as_primitive())
                            .reinterpret_cast::<Int64Type>()
                    }
                    _ => a
                        .as_primitive::<DurationMicrosecondType>()
                        .reinterpret_cast::<Int64Type>(),
                };
                Ok(Arc::new(us))
            }
            IntervalFn::Months => {
                let m: Int64Array = a
                    .as_primitive::<IntervalYearMonthType>()
                    .iter()
                    .map(|v| v.map(|v| v as i64))
                    .collect();
                Ok(Arc::new(m))
            }
            IntervalFn::FromDays => {
                let d = a.as_primitive::<Int32Type>();
                let out: IntervalDayTimeArray = d
                    .iter()
                    .map(|v| v.map(|v| IntervalDayTime::new(v, 0)))
                    .collect();
                Ok(Arc::new(out))
            }
            IntervalFn::FromMicros => {
                let us = a.as_primitive::<Int64Type>();
                Ok(Arc::new(us.reinterpret_cast::<DurationMicrosecondType>()))
            }
            IntervalFn::MakeYm => {
                let m = args.full(1)?;
                let (y, m) = (a.as_primitive::<Int32Type>(), m.as_primitive::<Int32Type>());
                let out = y
                    .iter()
                    .zip(m.iter())
                    .map(|(y, m)| match (y, m) {
                        (Some(y), Some(m)) => (y as i64 * 12 + m as i64)
                            .try_into()
                            .map(Some)
                            .map_err(|_| overflow_error(false)),
                        _ => Ok(None),
                    })
                    .collect::<Result<IntervalYearMonthArray>>()?;
                Ok(Arc::new(out))
            }
            IntervalFn::MakeDt => {
                let (h, mi, s) = (args.full(1)?, args.full(2)?, args.full(3)?);
                let (d, h, mi) = (
                    a.as_primitive::<Int32Type>(),
                    h.as_primitive::<Int32Type>(),
                    mi.as_primitive::<Int32Type>(),
                );
                let s = s.as_primitive::<Decimal128Type>();
                let out = (0..a.len())
                    .map(|i| {
                        if d.is_null(i) || h.is_null(i) || mi.is_null(i) || s.is_null(i) {
                            return Ok(None);
                        }
                        let us = d.value(i) as i128 * MICROS_PER_DAY as i128
                            + h.value(i) as i128 * 3_600_000_000
                            + mi.value(i) as i128 * 60_000_000
                            + s.value(i);
                        i64::try_from(us)
                            .map(Some)
                            .map_err(|_| overflow_error(false))
                    })
                    .collect::<Result<DurationMicrosecondArray>>()?;
                Ok(Arc::new(out))
            }
            IntervalFn::MakeInterval => {
                let cols: Vec<ArrayRef> = (0..7).map(|i| args.full(i)).collect::<Result<_>>()?;
                let ints: Vec<_> = cols[..6]
                    .iter()
                    .map(|c| c.as_primitive::<Int32Type>())
                    .collect();
                let secs = cols[6].as_primitive::<Decimal128Type>();
                let out = (0..a.len())
                    .map(|i| {
                        if ints.iter().any(|c| c.is_null(i)) || secs.is_null(i) {
                            return Ok(None);
                        }
                        let v = |k: usize| ints[k].value(i) as i64;
                        let overflow = || {
                            FerroError::Arithmetic(
                                "[ARITHMETIC_OVERFLOW] Integer overflow in make_interval. Use `try_make_interval` to tolerate overflow and return NULL instead.".into(),
                            )
                        };
                        let months = i32::try_from(v(0) * 12 + v(1)).map_err(|_| overflow())?;
                        let days = i32::try_from(v(2) * 7 + v(3)).map_err(|_| overflow())?;
                        let micros =
                            v(4) as i128 * 3_600_000_000 + v(5) as i128 * 60_000_000 + secs.value(i);
                        let micros = i64::try_from(micros).map_err(|_| overflow())?;
                        Ok(Some(
                            CalendarInterval {
                                months,
                                days,
                                micros,
                            }
                            .arrow(),
                        ))
                    })
                    .collect::<Result<IntervalMonthDayNanoArray>>()?;
                Ok(Arc::new(out))
            }
        }
    }
}

/// An interval column's integer form: months, days or microseconds.
fn raw(a: &ArrayRef) -> Result<Vec<Option<i128>>> {
    Ok(match a.data_type() {
        DataType::Interval(IntervalUnit::YearMonth) => a
            .as_primitive::<IntervalYearMonthType>()
            .iter()
            .map(|v| v.map(|v| v as i128))
            .collect(),
        DataType::Interval(IntervalUnit::DayTime) => a
            .as_primitive::<IntervalDayTimeType>()
            .iter()
            .map(|v| v.map(|v| v.days as i128))
            .collect(),
        DataType::Duration(TimeUnit::Microsecond) => a
            .as_primitive::<DurationMicrosecondType>()
            .iter()
            .map(|v| v.map(|v| v as i128))
            .collect(),
        other => {
            return Err(FerroError::Internal(format!(
                "interval arithmetic on {other}"
            )))
        }
    })
}

/// `v` when it fits the interval type.
fn fit(v: i128, t: &DataType) -> Option<i128> {
    let ok = match t {
        DataType::Duration(_) => i64::try_from(v).is_ok(),
        _ => i32::try_from(v).is_ok(),
    };
    ok.then_some(v)
}

fn build(vals: &[Option<i128>], t: &DataType) -> ArrayRef {
    match t {
        DataType::Interval(IntervalUnit::YearMonth) => Arc::new(
            vals.iter()
                .map(|v| v.map(|v| v as i32))
                .collect::<IntervalYearMonthArray>(),
        ),
        DataType::Interval(IntervalUnit::DayTime) => Arc::new(
            vals.iter()
                .map(|v| v.map(|v| IntervalDayTime::new(v as i32, 0)))
                .collect::<IntervalDayTimeArray>(),
        ),
        _ => Arc::new(
            vals.iter()
                .map(|v| v.map(|v| v as i64))
                .collect::<DurationMicrosecondArray>(),
        ),
    }
}

/// `x / d` rounded half up (away from zero at a half).
pub(crate) fn div_half_up(x: i128, d: i128) -> i128 {
    let q = x / d;
    let r = x % d;
    if r.abs() * 2 >= d.abs() {
        q + if (x < 0) != (d < 0) { -1 } else { 1 }
    } else {
        q
    }
}

/// `i * n` and `i / n` for a number `n` (BIGINT, DECIMAL or DOUBLE).
fn scale(f: IntervalFn, a: &ArrayRef, n: &ArrayRef) -> Result<ArrayRef> {
    let divide = f == IntervalFn::Divide;
    let t = a.data_type().clone();
    let x = raw(a)?;
    let by_zero = || {
        FerroError::Arithmetic(
            "[INTERVAL_DIVIDED_BY_ZERO] Division by zero. Use `try_divide` to tolerate divisor being 0 and return NULL instead.".into(),
        )
    };
    let mut out: Vec<Option<i128>> = Vec::with_capacity(x.len());
    for (i, x) in x.iter().enumerate() {
        let (Some(x), true) = (x, n.is_valid(i)) else {
            out.push(None);
            continue;
        };
        let x = *x;
        let v: Option<i128> = match n.data_type() {
            DataType::Int64 => {
                let k = n.as_primitive::<Int64Type>().value(i) as i128;
                if divide {
                    if k == 0 {
                        return Err(by_zero());
                    }
                    Some(div_half_up(x, k))
                } else {
                    x.checked_mul(k)
                }
            }
            DataType::Decimal128(_, s) => {
                let u = n.as_primitive::<Decimal128Type>().value(i);
                let p = 10i128.pow(*s as u32);
                if divide {
                    if u == 0 {
                        return Err(by_zero());
                    }
                    x.checked_mul(p).map(|xp| div_half_up(xp, u))
                } else {
                    x.checked_mul(u).map(|xu| div_half_up(xu, p))
                }
            }
            _ => {
                let k = n.as_primitive::<Float64Type>().value(i);
                if divide && k == 0.0 {
                    return Err(by_zero());
                }
                let r = if divide { x as f64 / k } else { x as f64 * k };
                // Java's Math.round: floor(r + 0.5).
                let r = (r + 0.5).floor();
                (r.is_finite() && r.abs() < 1.7e38).then_some(r as i128)
            }
        };
        out.push(Some(
            v.and_then(|v| fit(v, &t))
                .ok_or_else(|| overflow_error(true))?,
        ));
    }
    Ok(build(&out, &t))
}

/// The interval function node.
pub(crate) fn node(f: IntervalFn, args: Vec<PhysicalExpr>, data_type: DataType) -> PhysicalExpr {
    PhysicalExpr::Function {
        func: ScalarFunction::Interval(f),
        args,
        data_type,
    }
}

/// `i ± j`, `i * n`, `n * i`, `i / n` with an ANSI interval on a side; `None` for the pairs
/// dates and timestamps take (`date + i`, `ts - ts`) and for the ones Spark refuses as
/// incompatible.
pub(crate) fn bind_arithmetic(
    expr: &crate::expr::Expr,
    op: crate::expr::BinaryOp,
    l: &PhysicalExpr,
    r: &PhysicalExpr,
    lt: &DataType,
    rt: &DataType,
) -> Result<Option<PhysicalExpr>> {
    use crate::expr::BinaryOp;
    let (li, ri) = (is_interval(lt), is_interval(rt));
    if !li && !ri {
        return Ok(None);
    }
    let kind = |t: &DataType| match t {
        DataType::Interval(IntervalUnit::YearMonth) => 0,
        DataType::Interval(IntervalUnit::DayTime) => 1,
        _ => 2,
    };
    match op {
        BinaryOp::Multiply | BinaryOp::Divide => {
            let (iv, n, t) = if li { (l, r, lt) } else { (r, l, rt) };
            if (li && ri) || (!li && op == BinaryOp::Divide) {
                return Ok(None);
            }
            let Some(n) = number_operand(n.clone()) else {
                return Ok(None);
            };
            // A day interval scaled has a time part.
            let t = if kind(t) == 1 {
                DataType::Duration(TimeUnit::Microsecond)
            } else {
                t.clone()
            };
            let f = if op == BinaryOp::Multiply {
                IntervalFn::Multiply
            } else {
                IntervalFn::Divide
            };
            Ok(Some(node(f, vec![cast_to(iv.clone(), &t), n], t)))
        }
        BinaryOp::Plus | BinaryOp::Minus => {
            let null_l = *lt == DataType::Null;
            let null_r = *rt == DataType::Null;
            if !(li || null_l) || !(ri || null_r) {
                let (iv_t, other) = if li { (lt, (r, rt)) } else { (rt, (l, lt)) };
                if kind(iv_t) == 0 && (crate::types::is_numeric(other.1) || is_string(other.1)) {
                    return Err(diff_types(expr, lt, rt));
                }
                if crate::types::is_numeric(other.1) {
                    return Err(FerroError::Analysis(format!(
                        "[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE] Cannot resolve \"{expr}\" due to data type mismatch: the {} parameter requires the (\"TIMESTAMP\" or \"TIMESTAMP WITHOUT TIME ZONE\" or \"DATE\") type, however \"{}\" has the type \"{}\".",
                        if li { "second" } else { "first" },
                        other.0,
                        crate::types::spark_type_name(other.1)
                    )));
                }
                return Ok(None);
            }
            let t = match (null_l, null_r) {
                (true, _) => rt.clone(),
                (_, true) => lt.clone(),
                _ if lt == rt => lt.clone(),
                _ if kind(lt) > 0 && kind(rt) > 0 => DataType::Duration(TimeUnit::Microsecond),
                // Spark reads `day-time - year-month` as a subtraction of mismatched types.
                _ if op == BinaryOp::Minus && kind(lt) > 0 => return Err(diff_types(expr, lt, rt)),
                _ => {
                    return Err(FerroError::Analysis(format!(
                        "[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE] Cannot resolve \"{expr}\" due to data type mismatch: the intervals \"{l}\" ({}) and \"{r}\" ({}) are of different kinds; Spark adds a year-month interval only to a year-month interval.",
                        crate::types::spark_type_name(lt),
                        crate::types::spark_type_name(rt)
                    )))
                }
            };
            let f = if op == BinaryOp::Plus {
                IntervalFn::Add
            } else {
                IntervalFn::Subtract
            };
            Ok(Some(node(
                f,
                vec![cast_to(l.clone(), &t), cast_to(r.clone(), &t)],
                t,
            )))
        }
        _ => Ok(None),
    }
}

fn diff_types(expr: &crate::expr::Expr, lt: &DataType, rt: &DataType) -> FerroError {
    FerroError::Analysis(format!(
        "[DATATYPE_MISMATCH.BINARY_OP_DIFF_TYPES] Cannot resolve \"{expr}\" due to data type mismatch: the left and right operands of the binary operator have incompatible types (\"{}\" and \"{}\").",
        crate::types::spark_type_name(lt),
        crate::types::spark_type_name(rt)
    ))
}

/// The number operand of `i * n` / `i / n`, as the kernel reads it.
pub(crate) fn number_operand(n: PhysicalExpr) -> Option<PhysicalExpr> {
    let t = spark_equivalent(&n.data_type());
    Some(if is_integral(&t) || t == DataType::Null {
        cast_to(n, &DataType::Int64)
    } else if is_decimal(&t) {
        n
    } else if is_floating(&t) || is_string(&t) {
        cast_to(n, &DataType::Float64)
    } else {
        return None;
    })
}

/// `abs`, `signum`, `div` of intervals and the `make_*interval` functions.
pub(crate) fn bind(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    let first = args.first().map(|a| spark_equivalent(&a.data_type()));
    let on_interval = first.as_ref().is_some_and(is_interval);
    let int = |a: PhysicalExpr| cast_to(a, &DataType::Int32);
    let secs = |a: PhysicalExpr| cast_to(a, &DataType::Decimal128(18, 6));
    let zero = || PhysicalExpr::Literal(crate::expr::Literal::integer(0));
    let zero_secs = || {
        PhysicalExpr::Literal(crate::expr::Literal::new(Arc::new(
            arrow_array::Decimal128Array::from(vec![0i128])
                .with_precision_and_scale(18, 6)
                .expect("valid decimal"),
        )))
    };
    // A `make_*interval` call's `n` arguments, the missing ones 0, the last the seconds (a
    // DECIMAL(18,6)) when `with_secs`.
    let fields = |args: Vec<PhysicalExpr>, n: usize, with_secs: bool| -> Vec<PhysicalExpr> {
        let mut given = args.into_iter();
        (0..n)
            .map(|i| match (given.next(), with_secs && i == n - 1) {
                (Some(x), true) => secs(x),
                (Some(x), false) => int(x),
                (None, true) => zero_secs(),
                (None, false) => zero(),
            })
            .collect()
    };
    let e = match call.name {
        "abs" if on_interval => {
            call.arity(&args, 1, 1)?;
            let t = first.unwrap_or(DataType::Null);
            node(IntervalFn::Abs, args, t)
        }
        "signum" | "sign" if on_interval => {
            call.arity(&args, 1, 1)?;
            node(IntervalFn::Signum, args, DataType::Float64)
        }
        "div" if on_interval => {
            call.arity(&args, 2, 2)?;
            let (l, r) = (args[0].clone(), args[1].clone());
            let (lt, rt) = (
                spark_equivalent(&l.data_type()),
                spark_equivalent(&r.data_type()),
            );
            let t = crate::types::comparison_type(&lt, &rt)
                .filter(is_interval)
                .ok_or_else(|| diff_types(call.expr, &lt, &rt))?;
            node(
                IntervalFn::Div,
                vec![cast_to(l, &t), cast_to(r, &t)],
                DataType::Int64,
            )
        }
        "make_ym_interval" => {
            call.arity(&args, 0, 2)?;
            node(
                IntervalFn::MakeYm,
                fields(args, 2, false),
                DataType::Interval(IntervalUnit::YearMonth),
            )
        }
        "make_dt_interval" => {
            call.arity(&args, 0, 4)?;
            node(
                IntervalFn::MakeDt,
                fields(args, 4, true),
                DataType::Duration(TimeUnit::Microsecond),
            )
        }
        "make_interval" => {
            call.arity(&args, 0, 7)?;
            node(
                IntervalFn::MakeInterval,
                fields(args, 7, true),
                DataType::Interval(IntervalUnit::MonthDayNano),
            )
        }
        _ => return Ok(Bound::NotMine(args)),
    };
    Ok(Bound::Done(e))
}
