//! `sequence(start, stop[, step])`: the integers, dates or timestamps from `start` to `stop`
//! by `step`, as Spark's `Sequence` computes them.
//!
//! Integers step by an integer of their type (1 or -1 by default). Dates and timestamps step
//! by an interval (a day or minus a day by default): element `i` is `start` plus `i` times
//! the interval's months, days and microseconds, each added as Spark adds them (months to the
//! local date with the month's end kept, days to the local date in the session's zone, then
//! the microseconds), and the sequence stops at the first element past `stop`.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, DurationMicrosecondType, Int64Type, IntervalDayTimeType, IntervalMonthDayNanoType,
    IntervalYearMonthType, TimestampMicrosecondType,
};
use arrow_array::{Array, ArrayRef, Int64Array, ListArray};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, IntervalUnit, TimeUnit};
use ferrospark_common::{FerroError, Result};

use super::collections::list_of;
use super::datetime::{add_months, date_of, days_of, from_local, local, zone};
use super::{Args, Bound, Call, ScalarFunction};
use crate::bind::cast_to;
use crate::expr::Literal;
use crate::physical::PhysicalExpr;
use crate::types::{is_integral, spark_equivalent};

/// Spark's largest array: `Integer.MAX_VALUE - 15` elements.
const MAX_ARRAY_LENGTH: i128 = i32::MAX as i128 - 15;

const MICROS_PER_DAY: i64 = 86_400_000_000;

/// How a bound `sequence` counts.
#[derive(Debug, Clone, PartialEq)]
pub enum SequenceFn {
    /// Integers of the element type, computed as BIGINT.
    Integral(DataType),
    /// Dates, by an interval.
    Dates,
    /// Timestamps (`Some(zone)`: TIMESTAMP in the session's zone, `None`: TIMESTAMP_NTZ).
    Timestamps(Option<String>),
}

impl SequenceFn {
    /// Evaluates over `start`, `stop`, `step` (the step as BIGINT for integers, an interval
    /// for dates and timestamps).
    pub(crate) fn evaluate(&self, args: &Args) -> Result<ArrayRef> {
        let n = args.rows();
        let step = args.full(2)?;
        match self {
            SequenceFn::Integral(t) => {
                let start = args.full(0)?;
                let stop = args.full(1)?;
                let (a, b, s) = (
                    start.as_primitive::<Int64Type>(),
                    stop.as_primitive::<Int64Type>(),
                    step.as_primitive::<Int64Type>(),
                );
                let mut values: Vec<i64> = Vec::new();
                let mut offsets = vec![0i32];
                let mut valid = Vec::with_capacity(n);
                for r in 0..n {
                    if a.is_null(r) || b.is_null(r) || s.is_null(r) {
                        valid.push(false);
                        offsets.push(values.len() as i32);
                        continue;
                    }
                    let (a, b, s) = (a.value(r), b.value(r), s.value(r));
                    check_bounds(a >= b, a <= b, s.signum(), &a, &b, &s)?;
                    let len = if s == 0 {
                        1
                    } else {
                        (i128::from(b) - i128::from(a)) / i128::from(s) + 1
                    };
                    check_length(len)?;
                    values.extend((0..len as i64).map(|i| a + i * s));
                    valid.push(true);
                    offsets.push(values.len() as i32);
                }
                let values =
                    arrow_cast::cast(&(Arc::new(Int64Array::from(values)) as ArrayRef), t)?;
                list(values, offsets, valid)
            }
            SequenceFn::Dates | SequenceFn::Timestamps(_) => {
                let dates = matches!(self, SequenceFn::Dates);
                let tz = match self {
                    SequenceFn::Timestamps(Some(z)) => zone(z)?,
                    _ => zone("UTC")?,
                };
                let micros_of = |a: &ArrayRef| -> Vec<Option<i64>> {
                    if dates {
                        a.as_primitive::<Date32Type>()
                            .iter()
                            .map(|d| d.map(|d| i64::from(d) * MICROS_PER_DAY))
                            .collect()
                    } else {
                        a.as_primitive::<TimestampMicrosecondType>()
                            .iter()
                            .collect()
                    }
                };
                let starts = micros_of(&args.full(0)?);
                let stops = micros_of(&args.full(1)?);
                let steps = interval_parts(&step)?;
                let mut values: Vec<i64> = Vec::new();
                let mut offsets = vec![0i32];
                let mut valid = Vec::with_capacity(n);
                for r in 0..n {
                    let (Some(a), Some(b), Some(step)) = (starts[r], stops[r], steps[r]) else {
                        valid.push(false);
                        offsets.push(values.len() as i32);
                        continue;
                    };
                    temporal(a, b, step, dates, &tz, &mut values)?;
                    valid.push(true);
                    offsets.push(values.len() as i32);
                }
                let values: ArrayRef = if dates {
                    let days: Vec<i32> = values
                        .iter()
                        .map(|us| us.div_euclid(MICROS_PER_DAY) as i32)
                        .collect();
                    Arc::new(arrow_array::Date32Array::from(days))
                } else {
                    let tz = match self {
                        SequenceFn::Timestamps(z) => z.clone(),
                        SequenceFn::Dates | SequenceFn::Integral(_) => None,
                    };
                    Arc::new(
                        arrow_array::TimestampMicrosecondArray::from(values)
                            .with_timezone_opt(tz.map(Arc::<str>::from)),
                    )
                };
                list(values, offsets, valid)
            }
        }
    }
}

fn list(values: ArrayRef, offsets: Vec<i32>, valid: Vec<bool>) -> Result<ArrayRef> {
    let field = Arc::new(Field::new("element", values.data_type().clone(), true));
    Ok(Arc::new(ListArray::try_new(
        field,
        OffsetBuffer::new(offsets.into()),
        values,
        Some(NullBuffer::from(valid)),
    )?))
}

/// Spark's `require` on the direction of the step.
fn check_bounds(
    down: bool,
    up: bool,
    sign: i64,
    a: &dyn std::fmt::Display,
    b: &dyn std::fmt::Display,
    s: &dyn std::fmt::Display,
) -> Result<()> {
    let ok = (sign > 0 && up) || (sign < 0 && down) || (sign == 0 && up && down);
    if ok {
        Ok(())
    } else {
        Err(FerroError::Arithmetic(format!(
            "requirement failed: Illegal sequence boundaries: {a} to {b} by {s}"
        )))
    }
}

fn check_length(len: i128) -> Result<()> {
    if len > MAX_ARRAY_LENGTH {
        return Err(FerroError::Arithmetic(format!(
            "[COLLECTION_SIZE_LIMIT_EXCEEDED.PARAMETER] Can't create array with {len} elements which exceeding the array size limit {MAX_ARRAY_LENGTH}, the value of parameter(s) `count` is invalid. SQLSTATE: 54000"
        )));
    }
    Ok(())
}

/// A step's months, days and microseconds per row (`None`: NULL).
type Step = (i32, i32, i64);

fn interval_parts(step: &ArrayRef) -> Result<Vec<Option<Step>>> {
    Ok(match step.data_type() {
        DataType::Interval(IntervalUnit::YearMonth) => step
            .as_primitive::<IntervalYearMonthType>()
            .iter()
            .map(|m| m.map(|m| (m, 0, 0)))
            .collect(),
        DataType::Interval(IntervalUnit::DayTime) => step
            .as_primitive::<IntervalDayTimeType>()
            .iter()
            .map(|v| v.map(|v| (0, v.days, i64::from(v.milliseconds) * 1000)))
            .collect(),
        DataType::Duration(_) => step
            .as_primitive::<DurationMicrosecondType>()
            .iter()
            .map(|us| us.map(|us| (0, 0, us)))
            .collect(),
        DataType::Interval(IntervalUnit::MonthDayNano) => step
            .as_primitive::<IntervalMonthDayNanoType>()
            .iter()
            .map(|v| v.map(|v| (v.months, v.days, v.nanoseconds / 1000)))
            .collect(),
        other => {
            return Err(FerroError::Internal(format!(
                "a sequence stepping by {other}"
            )))
        }
    })
}

/// `start + i * step` for `i = 0, 1, ...` while not past `stop`, appended to `out`, as Spark's
/// `TemporalSequenceImpl` steps.
fn temporal(
    start: i64,
    stop: i64,
    (months, days, micros): Step,
    dates: bool,
    tz: &arrow_array::timezone::Tz,
    out: &mut Vec<i64>,
) -> Result<()> {
    if dates && micros % MICROS_PER_DAY != 0 {
        return Err(FerroError::Arithmetic(
            "[INVALID_INTERVAL_FORMAT.DAY_TIME_PARSING] sequence step must be a day interval if start and end values are dates".into(),
        ));
    }
    // Spark estimates a month as 28 days only to size its buffer and decide the direction.
    let estimate = i128::from(micros)
        + i128::from(months) * 28 * i128::from(MICROS_PER_DAY)
        + i128::from(days) * i128::from(MICROS_PER_DAY);
    let sign = estimate.signum() as i64;
    let show = |us: i64| -> String {
        if dates {
            super::datetime::date_text(us.div_euclid(MICROS_PER_DAY) as i32)
        } else {
            us.to_string()
        }
    };
    check_bounds(
        start >= stop,
        start <= stop,
        sign,
        &show(start),
        &show(stop),
        &format!("{months} months {days} days {micros} microseconds"),
    )?;
    if sign == 0 {
        out.push(start);
        return Ok(());
    }
    let at = |i: i64| -> Result<i64> {
        let overflow = || {
            FerroError::Arithmetic("[ARITHMETIC_OVERFLOW] long overflow. SQLSTATE: 22003".into())
        };
        let m = i32::try_from(i * i64::from(months)).map_err(|_| overflow())?;
        let d = i * i64::from(days);
        let us = i.checked_mul(micros).ok_or_else(overflow)?;
        let base = if m == 0 && d == 0 {
            start
        } else {
            let l = local(start, tz).ok_or_else(overflow)?;
            let date = add_months(l.date(), m).ok_or_else(overflow)?;
            let date = date_of(days_of(date) + d as i32).ok_or_else(overflow)?;
            from_local(&date.and_time(l.time()), tz).ok_or_else(overflow)?
        };
        base.checked_add(us).ok_or_else(overflow)
    };
    let mut i = 0i64;
    loop {
        let t = at(i)?;
        if (sign > 0 && t > stop) || (sign < 0 && t < stop) {
            break;
        }
        check_length(i128::from(i) + 1)?;
        out.push(t);
        i += 1;
    }
    Ok(())
}

/// Binds `sequence`; other names are not this family's.
pub(crate) fn bind(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    if call.name != "sequence" {
        return Ok(Bound::NotMine(args));
    }
    call.arity(&args, 2, 3)?;
    let (st, et) = (
        spark_equivalent(&args[0].data_type()),
        spark_equivalent(&args[1].data_type()),
    );
    let mismatch = || {
        FerroError::Analysis(format!(
            "[DATATYPE_MISMATCH.SEQUENCE_WRONG_INPUT_TYPES] Cannot resolve \"{}\" due to data type mismatch: `sequence` uses the wrong parameter type. The parameter type must conform to:\n1. The start and stop expressions must resolve to the same type.\n2. If start and stop expressions resolve to the \"DATE\" or \"TIMESTAMP\" type then the step expression must resolve to the \"INTERVAL\" or \"INTERVAL YEAR TO MONTH\" or \"INTERVAL DAY TO SECOND\" type, otherwise to the same type as the start and stop expressions. SQLSTATE: 42K09",
            call.expr
        ))
    };
    let integral = |t: &DataType| is_integral(t) || *t == DataType::Null;
    // Text beside an integer reads as a BIGINT (Spark's ANSI coercion; `'a'` then fails).
    let text = |t: &DataType| *t == DataType::Utf8;
    let (st, et) = match (text(&st), text(&et)) {
        (true, false) if integral(&et) => (DataType::Int64, et),
        (false, true) if integral(&st) => (st, DataType::Int64),
        _ => (st, et),
    };
    if integral(&st) && integral(&et) {
        let mut t = crate::types::wider_numeric(&st, &et).unwrap_or(DataType::Int32);
        if t == DataType::Null {
            t = DataType::Int32;
        }
        let step = match args.get(2) {
            Some(s) => {
                let stt = spark_equivalent(&s.data_type());
                if !integral(&stt) {
                    return Err(mismatch());
                }
                cast_to(s.clone(), &DataType::Int64)
            }
            None => default_integral_step(&args[0], &args[1]),
        };
        let out = list_of(&t);
        let args = vec![
            cast_to(args[0].clone(), &DataType::Int64),
            cast_to(args[1].clone(), &DataType::Int64),
            step,
        ];
        return Ok(Bound::Done(call.function(
            ScalarFunction::Sequence(SequenceFn::Integral(t)),
            args,
            out,
        )));
    }
    let temporal_type = |t: &DataType| matches!(t, DataType::Date32 | DataType::Timestamp(..));
    if !temporal_type(&st) || !temporal_type(&et) {
        return Err(mismatch());
    }
    let t = match (&st, &et) {
        (DataType::Date32, DataType::Date32) => DataType::Date32,
        (DataType::Timestamp(_, a), DataType::Timestamp(_, b)) if a.is_none() && b.is_none() => {
            st.clone()
        }
        _ => DataType::Timestamp(TimeUnit::Microsecond, Some(call.ctx.session_tz.into())),
    };
    let step = match args.get(2) {
        Some(s) => {
            let stt = spark_equivalent(&s.data_type());
            if !matches!(stt, DataType::Interval(_) | DataType::Duration(_)) {
                return Err(mismatch());
            }
            s.clone()
        }
        None => default_day_step(&args[0], &args[1], &t),
    };
    let f = match &t {
        DataType::Date32 => SequenceFn::Dates,
        DataType::Timestamp(_, z) => SequenceFn::Timestamps(z.as_ref().map(|z| z.to_string())),
        _ => return Err(mismatch()),
    };
    let out = list_of(&t);
    let args = vec![
        cast_to(args[0].clone(), &t),
        cast_to(args[1].clone(), &t),
        step,
    ];
    Ok(Bound::Done(call.function(
        ScalarFunction::Sequence(f),
        args,
        out,
    )))
}

/// `if (start <= stop) 1 else -1`, as Spark's default step.
fn default_integral_step(start: &PhysicalExpr, stop: &PhysicalExpr) -> PhysicalExpr {
    let up = PhysicalExpr::Compare {
        op: crate::expr::BinaryOp::LtEq,
        left: Box::new(cast_to(start.clone(), &DataType::Int64)),
        right: Box::new(cast_to(stop.clone(), &DataType::Int64)),
    };
    PhysicalExpr::Case {
        branches: vec![(up, PhysicalExpr::Literal(Literal::bigint(1)))],
        otherwise: Some(Box::new(PhysicalExpr::Literal(Literal::bigint(-1)))),
        data_type: DataType::Int64,
    }
}

/// A day, or minus a day when `start > stop`, as a calendar interval.
fn default_day_step(start: &PhysicalExpr, stop: &PhysicalExpr, t: &DataType) -> PhysicalExpr {
    let day = |d: i32| {
        PhysicalExpr::Literal(crate::interval::calendar_literal(
            crate::interval::CalendarInterval {
                months: 0,
                days: d,
                micros: 0,
            },
        ))
    };
    let up = PhysicalExpr::Compare {
        op: crate::expr::BinaryOp::LtEq,
        left: Box::new(cast_to(start.clone(), t)),
        right: Box::new(cast_to(stop.clone(), t)),
    };
    let dt = day(1).data_type();
    PhysicalExpr::Case {
        branches: vec![(up, day(1))],
        otherwise: Some(Box::new(day(-1))),
        data_type: dt,
    }
}
