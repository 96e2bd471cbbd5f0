//! Timestamps counted in units: `timestamp_seconds` (of any number, the fraction kept to the
//! microsecond), `timestamp_millis`, `timestamp_micros`, and `timestampdiff(unit, a, b)` (the
//! SQL planner's form of `timestampdiff` / `datediff` / `date_diff` / `timediff` with a unit),
//! each with Spark's rules: counts multiplied exactly (an overflow raises), a decimal with
//! more than six fraction digits raises, a DOUBLE or FLOAT is truncated to the microsecond,
//! and differences are Java's `ChronoUnit.between` of the local date-times in the session zone.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Decimal128Type, Float64Type, Int64Type, TimestampMicrosecondType};
use arrow_array::{Array, ArrayRef, PrimitiveArray};
use arrow_schema::DataType;
use chrono::{Datelike, NaiveDateTime};
use ferrospark_common::{FerroError, Result};

use super::datetime::{local, timestamp_arg, timestamp_type, zone, DateFn};
use super::{build_prims, Args, Bound, Call, ScalarFunction};
use crate::bind::cast_to;
use crate::physical::PhysicalExpr;
use crate::types::spark_equivalent;

/// The units `timestampdiff` and `timestampadd` take, as Spark's grammar lists them.
pub const DATETIME_UNITS: &[&str] = &[
    "YEAR",
    "QUARTER",
    "MONTH",
    "WEEK",
    "DAY",
    "DAYOFYEAR",
    "HOUR",
    "MINUTE",
    "SECOND",
    "MILLISECOND",
    "MICROSECOND",
];

/// Binds the functions of this module; other names are not its.
pub(crate) fn bind(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    let tz = call.ctx.session_tz.to_string();
    let per = match call.name {
        "timestamp_seconds" => 1_000_000,
        "timestamp_millis" => 1_000,
        "timestamp_micros" => 1,
        "timestampdiff" => return bind_diff(call, args).map(Bound::Done),
        _ => return Ok(Bound::NotMine(args)),
    };
    call.arity(&args, 1, 1)?;
    let a = args[0].clone();
    let t = spark_equivalent(&a.data_type());
    // timestamp_seconds takes any number; the others integers only (Spark's input types).
    let counted = match t {
        DataType::Null | DataType::Int8 | DataType::Int16 | DataType::Int32 => {
            cast_to(a, &DataType::Int64)
        }
        DataType::Int64 => a,
        DataType::Decimal128(..) if per == 1_000_000 => a,
        DataType::Float32 | DataType::Float64 if per == 1_000_000 => cast_to(a, &DataType::Float64),
        _ => {
            let wanted = if per == 1_000_000 {
                "the \"NUMERIC\" type"
            } else {
                "the \"INTEGRAL\" type"
            };
            return Err(call.wrong_type(0, &a, wanted));
        }
    };
    let out = timestamp_type(&tz);
    Ok(Bound::Done(call.function(
        ScalarFunction::Date(DateFn::EpochToTimestamp { per, tz }),
        vec![counted],
        out,
    )))
}

/// `timestampdiff(unit, start, end)`: the unit a string literal the parser wrote (from the
/// unquoted word), both ends timestamps of the session zone.
fn bind_diff(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<PhysicalExpr> {
    call.arity(&args, 3, 3)?;
    let unit = match &args[0] {
        PhysicalExpr::Literal(l) if !l.is_null() => l
            .array()
            .as_string_opt::<i32>()
            .map(|s| s.value(0).to_ascii_uppercase()),
        _ => None,
    };
    let Some(unit) = unit.filter(|u| DATETIME_UNITS.contains(&u.as_str())) else {
        return Err(invalid_unit("timestampdiff", &args[0].to_string()));
    };
    // The grammar takes DAYOFYEAR, but Spark's difference has no such unit and refuses it.
    if unit == "DAYOFYEAR" {
        return Err(invalid_unit("TIMESTAMPDIFF", "'DAYOFYEAR'"));
    }
    let a = timestamp_arg(call, 1, args[1].clone())?;
    let b = timestamp_arg(call, 2, args[2].clone())?;
    let tz = call.ctx.session_tz.to_string();
    Ok(call.function(
        ScalarFunction::Date(DateFn::TimestampDiff { unit, tz }),
        vec![a, b],
        DataType::Int64,
    ))
}

/// `[INVALID_PARAMETER_VALUE.DATETIME_UNIT]`: a unit written as a string (`'MINUTE'`) or one
/// Spark does not know, for function `name`.
pub fn invalid_unit(name: &str, written: &str) -> FerroError {
    FerroError::Analysis(format!(
        "[INVALID_PARAMETER_VALUE.DATETIME_UNIT] The value of parameter(s) `unit` in `{name}` is invalid: expects one of the units without quotes YEAR, QUARTER, MONTH, WEEK, DAY, DAYOFYEAR, HOUR, MINUTE, SECOND, MILLISECOND, MICROSECOND, but got the string literal {written}."
    ))
}

/// Evaluates [`DateFn::EpochToTimestamp`]: argument 0 (BIGINT, DECIMAL or DOUBLE) counts
/// units of `per` microseconds since the epoch.
pub(crate) fn epoch_to_timestamp(per: i64, tz: &str, a: &Args) -> Result<ArrayRef> {
    let n = a.rows();
    let overflow = || FerroError::Arithmetic("long overflow".into());
    let micros: ArrayRef = match a.array(0).data_type().clone() {
        DataType::Int64 => {
            let v = a.prim::<Int64Type>(0)?;
            build_prims::<TimestampMicrosecondType>(n, |i| {
                v.get(i)
                    .map(|x| x.checked_mul(per).ok_or_else(overflow))
                    .transpose()
            })?
        }
        DataType::Decimal128(_, scale) => {
            let v = a.prim::<Decimal128Type>(0)?;
            build_prims::<TimestampMicrosecondType>(n, |i| {
                v.get(i).map(|x| decimal_micros(x, scale, per)).transpose()
            })?
        }
        DataType::Float64 => {
            // Java's `(x * 1e6).toLong`: truncated, saturating; NaN and infinities are NULL.
            let v = a.prim::<Float64Type>(0)?;
            build_prims::<TimestampMicrosecondType>(n, |i| {
                Ok(v.get(i)
                    .filter(|x| x.is_finite())
                    .map(|x| (x * per as f64) as i64))
            })?
        }
        other => {
            return Err(FerroError::Internal(format!(
                "timestamp from a count of type {other}"
            )))
        }
    };
    let out = micros
        .as_any()
        .downcast_ref::<PrimitiveArray<TimestampMicrosecondType>>()
        .ok_or_else(|| FerroError::Internal("timestamp micros array".into()))?
        .clone()
        .with_timezone(tz);
    Ok(Arc::new(out))
}

/// `unscaled / 10^scale` seconds (times `per` microseconds) as whole microseconds, exactly as
/// Java's `BigDecimal.longValueExact`: a fraction left over or an overflow raises.
fn decimal_micros(unscaled: i128, scale: i8, per: i64) -> Result<i64> {
    let product = unscaled
        .checked_mul(per as i128)
        .ok_or_else(|| FerroError::Arithmetic("long overflow".into()))?;
    let exact = if scale <= 0 {
        10i128
            .checked_pow((-scale) as u32)
            .and_then(|m| product.checked_mul(m))
    } else {
        let d = 10i128.pow(scale as u32);
        if product % d != 0 {
            return Err(FerroError::Arithmetic(
                "Rounding necessary: the seconds have a fraction finer than a microsecond".into(),
            ));
        }
        Some(product / d)
    };
    exact
        .and_then(|v| i64::try_from(v).ok())
        .ok_or_else(|| FerroError::Arithmetic("long overflow".into()))
}

/// Evaluates [`DateFn::TimestampDiff`] over two session timestamps.
pub(crate) fn timestamp_diff(unit: &str, tz: &str, a: &Args) -> Result<ArrayRef> {
    let z = zone(tz)?;
    let s = a.prim::<TimestampMicrosecondType>(0)?;
    let e = a.prim::<TimestampMicrosecondType>(1)?;
    build_prims::<Int64Type>(a.rows(), |i| {
        Ok(
            match (
                s.get(i).and_then(|v| local(v, &z)),
                e.get(i).and_then(|v| local(v, &z)),
            ) {
                (Some(x), Some(y)) => units_between(unit, &x, &y),
                _ => None,
            },
        )
    })
}

/// Whole `unit`s from `start` to `end`, as Java's `LocalDateTime.until`: time units truncate
/// the difference toward zero; date units count whole days (an end whose time of day has not
/// reached the start's counts one day less) and then whole months.
pub fn units_between(unit: &str, start: &NaiveDateTime, end: &NaiveDateTime) -> Option<i64> {
    let micros = |u: i64| {
        let d = end.signed_duration_since(*start).num_microseconds()?;
        Some(d / u)
    };
    match unit {
        "MICROSECOND" => micros(1),
        "MILLISECOND" => micros(1_000),
        "SECOND" => micros(1_000_000),
        "MINUTE" => micros(60_000_000),
        "HOUR" => micros(3_600_000_000),
        _ => {
            let (sd, st) = (start.date(), start.time());
            let mut ed = end.date();
            if ed > sd && end.time() < st {
                ed = ed.pred_opt()?;
            } else if ed < sd && end.time() > st {
                ed = ed.succ_opt()?;
            }
            let days = (ed - sd).num_days();
            // Java's `LocalDate.monthsUntil`: months and days packed so a day of month not
            // yet reached takes one month off.
            let packed = |d: chrono::NaiveDate| {
                (d.year() as i64 * 12 + d.month0() as i64) * 32 + d.day() as i64
            };
            let months = (packed(ed) - packed(sd)) / 32;
            match unit {
                "DAY" => Some(days),
                "WEEK" => Some(days / 7),
                "MONTH" => Some(months),
                "QUARTER" => Some(months / 3),
                "YEAR" => Some(months / 12),
                _ => None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S").expect("test timestamp")
    }

    #[test]
    fn month_units_count_whole_months_as_java_does() {
        let between = |u: &str, a: &str, b: &str| units_between(u, &t(a), &t(b));
        assert_eq!(
            between("MONTH", "2022-02-25 01:02:03", "2022-01-25 01:02:03"),
            Some(-1)
        );
        assert_eq!(
            between("MONTH", "2022-01-25 01:02:03", "2022-02-25 01:02:02"),
            Some(0)
        );
        assert_eq!(
            between("QUARTER", "2022-02-25 00:00:00", "2023-05-25 00:00:00"),
            Some(5)
        );
        assert_eq!(
            between("QUARTER", "2023-08-10 01:02:03", "2022-01-14 01:02:03"),
            Some(-6)
        );
        assert_eq!(
            between("YEAR", "2022-02-15 00:00:00", "2023-02-15 00:00:00"),
            Some(1)
        );
        assert_eq!(
            between("YEAR", "2020-02-29 00:00:00", "2021-02-28 00:00:00"),
            Some(0)
        );
        assert_eq!(
            between("WEEK", "2022-02-01 00:00:00", "2022-02-15 00:00:00"),
            Some(2)
        );
    }

    #[test]
    fn time_units_truncate_toward_zero() {
        let between = |u: &str, a: &str, b: &str| units_between(u, &t(a), &t(b));
        assert_eq!(
            between("HOUR", "2022-02-14 01:02:03", "2022-02-14 12:00:03"),
            Some(10)
        );
        assert_eq!(
            between("SECOND", "2022-02-15 00:00:00", "2022-02-14 23:59:59"),
            Some(-1)
        );
        assert_eq!(
            between("DAY", "2022-02-15 12:00:00", "2022-02-14 13:00:00"),
            Some(0)
        );
    }

    #[test]
    fn decimal_seconds_are_exact_to_the_microsecond() {
        assert_eq!(decimal_micros(123, 2, 1_000_000).ok(), Some(1_230_000));
        assert!(decimal_micros(1_234_567, 7, 1_000_000).is_err());
        assert_eq!(decimal_micros(-5, 0, 1_000_000).ok(), Some(-5_000_000));
        assert!(decimal_micros(i64::MAX as i128, 0, 1_000_000).is_err());
    }
}
