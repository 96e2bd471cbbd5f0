//! Casts to and from Spark's interval types: interval texts (Spark's ANSI forms and the
//! calendar text), numbers as a count of the type's last field (months, days or seconds),
//! day intervals widened to day-time ones, and intervals printed as Spark prints them.
//!
//! A year-month or day-time interval cast to a number is refused: its value counts the type's
//! last field, and a column typed `INTERVAL YEAR TO MONTH` here may be Spark's
//! `INTERVAL YEAR` (see `interval.rs`), so the count could differ from Spark's.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Decimal128Type, DurationMicrosecondType, Int64Type, IntervalDayTimeType,
    IntervalMonthDayNanoType, IntervalYearMonthType,
};
use arrow_array::{
    Array, ArrayRef, DurationMicrosecondArray, IntervalDayTimeArray, IntervalMonthDayNanoArray,
    IntervalYearMonthArray, StringArray,
};
use arrow_buffer::IntervalDayTime;
use arrow_schema::{DataType, IntervalUnit, TimeUnit};
use ferrospark_common::{FerroError, Result};

use crate::cast::{invalid, overflow};
use crate::interval::{
    day_sql, day_time_from_text, day_time_sql, parse_calendar, year_month_from_text,
    year_month_sql, AnsiInterval, CalendarInterval, Unit, MICROS_PER_DAY,
};
use crate::physical::CastMode;
use crate::types::{is_decimal, is_integral, is_string, spark_type_name};

fn is_interval(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Interval(_) | DataType::Duration(TimeUnit::Microsecond)
    )
}

/// Whether a cast involving an interval is one ferrospark makes; `None` when neither side is
/// an interval.
pub fn castable(from: &DataType, to: &DataType) -> Option<bool> {
    if !is_interval(from) && !is_interval(to) {
        return None;
    }
    let ym = DataType::Interval(IntervalUnit::YearMonth);
    let day = DataType::Interval(IntervalUnit::DayTime);
    let dt = DataType::Duration(TimeUnit::Microsecond);
    let exact = |t: &DataType| is_integral(t) || is_decimal(t);
    Some(
        from == to
            || from == &DataType::Null
            || is_string(from)
            || to == &DataType::Utf8
            || (exact(from) && (to == &ym || to == &day || to == &dt))
            || (from == &day && (to == &dt || exact(to))),
    )
}

/// The body of an ANSI interval text: `INTERVAL '1-2' YEAR TO MONTH` and `'1-2'` read as `1-2`.
fn ansi_body(text: &str) -> String {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    match lower.strip_prefix("interval") {
        Some(_) => {
            let rest = t[8..].trim();
            match (rest.find('\''), rest.rfind('\'')) {
                (Some(a), Some(b)) if b > a => {
                    let sign = rest[..a].trim();
                    format!("{sign}{}", &rest[a + 1..b])
                }
                _ => rest.to_string(),
            }
        }
        None => t.to_string(),
    }
}

fn parse_ansi(text: &str, to: &DataType) -> Option<AnsiInterval> {
    let body = ansi_body(text);
    match to {
        DataType::Interval(IntervalUnit::YearMonth) => year_month_from_text(&body, false)
            .ok()
            .or_else(|| body.trim().parse::<i32>().ok().map(AnsiInterval::YearMonth)),
        DataType::Interval(IntervalUnit::DayTime) => {
            body.trim().parse::<i32>().ok().map(AnsiInterval::Day)
        }
        _ => day_time_from_text(&body, Unit::Day, Unit::Second, false)
            .ok()
            .or_else(|| {
                crate::interval::interval_text_micros(text)
                    .ok()
                    .flatten()
                    .map(AnsiInterval::DayTime)
            }),
    }
}

/// Decimal `unscaled / 10^scale * per` rounded half up to an integer.
fn decimal_times(unscaled: i128, scale: i8, per: i128) -> Option<i128> {
    let p = 10i128.checked_pow(scale.max(0) as u32)?;
    Some(crate::functions::interval::div_half_up(
        unscaled.checked_mul(per)?,
        p,
    ))
}

/// The casts involving intervals; `None` when neither side is one.
pub fn cast(a: &ArrayRef, to: &DataType, mode: CastMode) -> Result<Option<ArrayRef>> {
    let from = a.data_type().clone();
    if !is_interval(&from) && !is_interval(to) {
        return Ok(None);
    }
    let safe = mode != CastMode::Ansi;
    let n = a.len();
    if from == DataType::Null {
        return Ok(Some(arrow_array::new_null_array(to, n)));
    }
    if to == &DataType::Utf8 {
        let text = |i: usize| -> String {
            match &from {
                DataType::Interval(IntervalUnit::YearMonth) => {
                    year_month_sql(a.as_primitive::<IntervalYearMonthType>().value(i))
                }
                DataType::Interval(IntervalUnit::DayTime) => {
                    day_sql(a.as_primitive::<IntervalDayTimeType>().value(i).days)
                }
                DataType::Interval(IntervalUnit::MonthDayNano) => CalendarInterval::from_arrow(
                    a.as_primitive::<IntervalMonthDayNanoType>().value(i),
                )
                .text(),
                _ => day_time_sql(a.as_primitive::<DurationMicrosecondType>().value(i)),
            }
        };
        let out: StringArray = (0..n).map(|i| a.is_valid(i).then(|| text(i))).collect();
        return Ok(Some(Arc::new(out)));
    }
    if is_string(&from) {
        let s = arrow_cast::cast(a, &DataType::Utf8)?;
        let s = s.as_string::<i32>();
        if let DataType::Interval(IntervalUnit::MonthDayNano) = to {
            let out: IntervalMonthDayNanoArray = s
                .iter()
                .map(|v| {
                    v.and_then(|t| parse_calendar(t).ok())
                        .map(|(c, _)| c.arrow())
                })
                .collect();
            return Ok(Some(Arc::new(out)));
        }
        let mut vals: Vec<Option<AnsiInterval>> = Vec::with_capacity(n);
        for v in s.iter() {
            vals.push(match v {
                None => None,
                Some(t) => match parse_ansi(t, to) {
                    Some(iv) => Some(iv),
                    None if safe => None,
                    None => return Err(invalid(t, to)),
                },
            });
        }
        return Ok(Some(ansi_array(&vals, to)));
    }
    match (&from, to) {
        (DataType::Interval(IntervalUnit::DayTime), DataType::Duration(_)) => {
            Ok(Some(Arc::new(crate::interval::day_time_as_duration(
                a.as_primitive::<IntervalDayTimeType>(),
            ))))
        }
        (DataType::Interval(IntervalUnit::DayTime), t) if is_integral(t) || is_decimal(t) => {
            let d = a.as_primitive::<IntervalDayTimeType>();
            let days: arrow_array::Int32Array = d.iter().map(|v| v.map(|v| v.days)).collect();
            let days: ArrayRef = Arc::new(days);
            Ok(Some(crate::eval::cast_value(&days, t, mode)?))
        }
        (f, t) if (is_integral(f) || is_decimal(f)) && is_interval(t) => {
            let per: i128 = match t {
                DataType::Duration(_) => 1_000_000,
                _ => 1,
            };
            let wide: Vec<Option<i128>> = if is_decimal(f) {
                let (DataType::Decimal128(_, s) | DataType::Decimal256(_, s)) = f else {
                    return Err(FerroError::Internal(format!("decimal type {f}")));
                };
                let d = arrow_cast::cast(a, &DataType::Decimal128(38, *s))?;
                d.as_primitive::<Decimal128Type>()
                    .iter()
                    .map(|v| v.and_then(|v| decimal_times(v, *s, per)))
                    .collect()
            } else {
                let i = arrow_cast::cast(a, &DataType::Int64)?;
                i.as_primitive::<Int64Type>()
                    .iter()
                    .map(|v| v.map(|v| v as i128 * per))
                    .collect()
            };
            let mut vals = Vec::with_capacity(n);
            for (i, w) in wide.into_iter().enumerate() {
                let Some(w) = w else {
                    vals.push(None);
                    continue;
                };
                let iv = match t {
                    DataType::Interval(IntervalUnit::YearMonth) => {
                        i32::try_from(w).ok().map(AnsiInterval::YearMonth)
                    }
                    DataType::Interval(IntervalUnit::DayTime) => {
                        i32::try_from(w).ok().map(AnsiInterval::Day)
                    }
                    _ => i64::try_from(w).ok().map(AnsiInterval::DayTime),
                };
                match iv {
                    Some(v) => vals.push(Some(v)),
                    None if safe => vals.push(None),
                    None => {
                        let text = arrow_cast::display::ArrayFormatter::try_new(
                            a.as_ref(),
                            &Default::default(),
                        )?
                        .value(i)
                        .to_string();
                        let suffix = match f {
                            DataType::Int64 => "L",
                            DataType::Int16 => "S",
                            DataType::Int8 => "Y",
                            _ => "",
                        };
                        return Err(overflow(format!("{text}{suffix}"), f, t));
                    }
                }
            }
            Ok(Some(ansi_array(&vals, t)))
        }
        (DataType::Interval(_) | DataType::Duration(_), t) => Err(FerroError::Unsupported(format!(
            "CAST of an {} to {}: the value counts the type's last field, which ferrospark does not keep for intervals; extract it instead (extract(MONTH FROM i), extract(SECOND FROM i))",
            spark_type_name(&from),
            spark_type_name(t)
        ))),
        _ => Ok(None),
    }
}

fn ansi_array(vals: &[Option<AnsiInterval>], to: &DataType) -> ArrayRef {
    match to {
        DataType::Interval(IntervalUnit::YearMonth) => Arc::new(
            vals.iter()
                .map(|v| match v {
                    Some(AnsiInterval::YearMonth(m)) => Some(*m),
                    _ => None,
                })
                .collect::<IntervalYearMonthArray>(),
        ),
        DataType::Interval(IntervalUnit::DayTime) => Arc::new(
            vals.iter()
                .map(|v| match v {
                    Some(AnsiInterval::Day(d)) => Some(IntervalDayTime::new(*d, 0)),
                    _ => None,
                })
                .collect::<IntervalDayTimeArray>(),
        ),
        _ => Arc::new(
            vals.iter()
                .map(|v| match v {
                    Some(AnsiInterval::DayTime(us)) => Some(*us),
                    Some(AnsiInterval::Day(d)) => Some(*d as i64 * MICROS_PER_DAY),
                    _ => None,
                })
                .collect::<DurationMicrosecondArray>(),
        ),
    }
}
