//! Casts to STRING that print values the way Spark does, where Arrow's text differs: doubles
//! as Java's `Double.toString` (`1.0`, `1.0E10`, `1.0E-5`), timestamps without a zero
//! fraction and in the column's zone (`2020-01-01 10:00:00`, `... 10:00:00.5`).

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, TimestampMicrosecondType};
use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, TimeUnit};
use ferrospark_common::{FerroError, Result};

use crate::functions::build_strings;

/// Java's `Double.toString` for a finite or special value.
pub fn java_double_string(v: f64) -> String {
    java_float_text(v, |x| format!("{x}"), |x| format!("{x:e}"))
}

/// Java's `Float.toString`: the shortest text of the float, not of its double.
fn java_f32_string(v: f32) -> String {
    java_float_text(v as f64, |_| format!("{v}"), |_| format!("{v:e}"))
}

/// Java's layout of a float's shortest digits: plain between 1e-3 and 1e7, `d.dddE±n`
/// otherwise, always with a fraction. `plain` / `sci` give the shortest text of the value.
fn java_float_text(v: f64, plain: impl Fn(f64) -> String, sci: impl Fn(f64) -> String) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    if (1e-3..1e7).contains(&v.abs()) {
        let s = plain(v);
        return if s.contains('.') { s } else { format!("{s}.0") };
    }
    let s = sci(v);
    let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
    if m.contains('.') {
        format!("{m}E{e}")
    } else {
        format!("{m}.0E{e}")
    }
}

/// The Spark text of `a` when Arrow would print it differently; `None` to let Arrow cast.
pub fn to_spark_string(a: &ArrayRef) -> Result<Option<ArrayRef>> {
    let n = a.len();
    Ok(Some(match a.data_type() {
        // Every year a DATE holds, also past chrono's (`+999999-03-18`).
        DataType::Date32 => {
            let days = a.as_primitive::<arrow_array::types::Date32Type>();
            build_strings(n, |i, out| {
                if days.is_null(i) {
                    return Ok(false);
                }
                out.push_str(&crate::functions::datetime::date_text(days.value(i)));
                Ok(true)
            })?
        }
        DataType::Float64 => {
            let f = a.as_primitive::<Float64Type>();
            build_strings(n, |i, out| {
                if f.is_null(i) {
                    return Ok(false);
                }
                out.push_str(&java_double_string(f.value(i)));
                Ok(true)
            })?
        }
        DataType::Float32 => {
            let f = a.as_primitive::<Float32Type>();
            build_strings(n, |i, out| {
                if f.is_null(i) {
                    return Ok(false);
                }
                out.push_str(&java_f32_string(f.value(i)));
                Ok(true)
            })?
        }
        DataType::Timestamp(TimeUnit::Microsecond, tz) => {
            let t = a.as_primitive::<TimestampMicrosecondType>();
            let zone = match tz {
                Some(z) => Some(crate::functions::datetime::zone(z)?),
                None => None,
            };
            build_strings(n, |i, out| {
                if t.is_null(i) {
                    return Ok(false);
                }
                let us = t.value(i);
                let local = match &zone {
                    Some(z) => crate::functions::datetime::local(us, z),
                    None => chrono::DateTime::from_timestamp_micros(us).map(|d| d.naive_utc()),
                };
                let Some(l) = local else {
                    return Ok(false);
                };
                out.push_str(&l.format("%Y-%m-%d %H:%M:%S").to_string());
                let frac = us.rem_euclid(1_000_000);
                if frac != 0 {
                    let f = format!(".{frac:06}");
                    out.push_str(f.trim_end_matches('0'));
                }
                Ok(true)
            })?
        }
        // Spark's `new String(bytes, UTF_8)`: malformed bytes become U+FFFD.
        DataType::Binary => {
            let b = a.as_binary::<i32>();
            build_strings(n, |i, out| {
                if b.is_null(i) {
                    return Ok(false);
                }
                out.push_str(&String::from_utf8_lossy(b.value(i)));
                Ok(true)
            })?
        }
        _ => return Ok(None),
    }))
}

/// Whether Spark's analyzer allows `CAST(from AS to)` (Arrow allows more: dates to
/// numbers, booleans to dates).
pub fn spark_allows(from: &DataType, to: &DataType) -> bool {
    use crate::types::is_numeric;
    let date = |t: &DataType| matches!(t, DataType::Date32);
    let temporal = |t: &DataType| matches!(t, DataType::Date32 | DataType::Timestamp(..));
    !((date(from) && (is_numeric(to) || to == &DataType::Boolean))
        || ((is_numeric(from) || from == &DataType::Boolean) && date(to))
        || (from == &DataType::Boolean && temporal(to))
        || (temporal(from) && to == &DataType::Boolean && date(from)))
}

pub(crate) fn overflow(
    value: impl std::fmt::Display,
    from: &DataType,
    to: &DataType,
) -> FerroError {
    FerroError::Arithmetic(format!(
        "[CAST_OVERFLOW] The value {value} of the type \"{}\" cannot be cast to \"{}\" due to an overflow. Use `try_cast` to tolerate overflow and return NULL instead. If necessary set \"spark.sql.ansi.enabled\" to \"false\" to bypass this error.",
        crate::types::spark_type_name(from),
        crate::types::spark_type_name(to)
    ))
}

pub(crate) fn invalid(value: &str, to: &DataType) -> FerroError {
    FerroError::Arithmetic(format!(
        "[CAST_INVALID_INPUT] The value '{value}' of the type \"STRING\" cannot be cast to \"{}\" because it is malformed. Correct the value as per the syntax, or change its target type. Use `try_cast` to tolerate malformed input and return NULL instead.",
        crate::types::spark_type_name(to)
    ))
}

fn overflow_micros(us: i64) -> ferrospark_common::FerroError {
    ferrospark_common::FerroError::Arithmetic(format!(
        "[DATETIME_OVERFLOW] The timestamp of {us} microseconds is out of the supported range."
    ))
}

/// Spark's text-to-DATE rule: `[+-]yyyy[-m[m][-d[d]]]`, then optionally `T` or a space and
/// anything (a time); surrounding white space ignored.
pub fn parse_spark_date(s: &str) -> Option<i32> {
    let t = s.trim_matches(|c: char| c.is_whitespace() || c.is_control());
    let (t, _) = match t.find(['T', ' ']) {
        Some(i) => (&t[..i], &t[i..]),
        None => (t, ""),
    };
    let (neg, body) = match t.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let mut parts = body.split('-');
    let y = parts.next()?;
    if y.len() < 4 || y.len() > 7 || !y.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let num = |p: Option<&str>| -> Option<Option<u32>> {
        match p {
            None => Some(None),
            Some(v) if (1..=2).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_digit()) => {
                Some(v.parse().ok())
            }
            Some(_) => None,
        }
    };
    let m = num(parts.next())?.unwrap_or(1);
    let d = num(parts.next())?.unwrap_or(1);
    if parts.next().is_some() {
        return None;
    }
    let y: i64 = y.parse().ok()?;
    let y = if neg { -y } else { y };
    crate::functions::datetime::civil_days(y, m, d)
}

/// The micros of day `day`'s midnight in `zone` (UTC without one).
fn midnight_micros(day: i32, zone: Option<&arrow_array::timezone::Tz>) -> Option<i64> {
    let local = crate::functions::datetime::date_of(day)?.and_hms_opt(0, 0, 0)?;
    match zone {
        Some(z) => crate::functions::datetime::from_local(&local, z),
        None => Some(local.and_utc().timestamp_micros()),
    }
}

/// The micros of zone-less timestamp text `read` in `zone` (UTC without one, for a
/// TIMESTAMP_NTZ); a time alone is today's, in `zone` (Spark's `LocalDate.now(zone)`).
fn local_text_micros(
    read: &crate::timestamp_text::TimestampText<'_>,
    zone: Option<&arrow_array::timezone::Tz>,
) -> Option<i64> {
    let today = || {
        let now = chrono::Utc::now();
        match zone {
            Some(z) => now.with_timezone(z).date_naive(),
            None => now.date_naive(),
        }
    };
    let local = read.local(today)?;
    match zone {
        Some(z) => crate::functions::datetime::from_local(&local, z),
        None => Some(local.and_utc().timestamp_micros()),
    }
}

/// Text read as Spark reads a TIMESTAMP (in `zone`) or, without a zone, a TIMESTAMP_NTZ:
/// Spark's segments (one-digit fields, no seconds, a time alone, a bare date at midnight) and
/// a zone written after the seconds, read as Spark reads zone ids (a TIMESTAMP_NTZ ignores
/// it). `None`: not a timestamp.
pub(crate) fn timestamp_text_micros(
    text: &str,
    zone: Option<&arrow_array::timezone::Tz>,
) -> Option<i64> {
    let t = text.trim_matches(|c: char| c.is_whitespace() || c.is_control());
    if let Some(d) = parse_spark_date(t).filter(|_| !t.contains([':', 'T', ' '])) {
        return midnight_micros(d, zone);
    }
    let read = crate::timestamp_text::read_timestamp_text(t)?;
    match (read.zone, zone) {
        (None, _) | (Some(_), None) => local_text_micros(&read, zone),
        (Some(written), Some(_)) => {
            let z = crate::timestamp_text::spark_zone_id(written)?
                .parse::<arrow_array::timezone::Tz>()
                .ok()?;
            local_text_micros(&read, Some(&z))
        }
    }
}

/// Each text of string array `a` read by `parse` (NULL stays NULL). Text `parse` cannot
/// read (`None`) is NULL when `safe`, else Spark's CAST_INVALID_INPUT naming `to`.
fn parse_texts<T>(
    a: &ArrayRef,
    to: &DataType,
    safe: bool,
    mut parse: impl FnMut(&str) -> Result<Option<T>>,
) -> Result<Vec<Option<T>>> {
    let s = arrow_cast::cast(a, &DataType::Utf8)?;
    s.as_string::<i32>()
        .iter()
        .map(|v| match v {
            None => Ok(None),
            Some(text) => match parse(text)? {
                Some(x) => Ok(Some(x)),
                None if safe => Ok(None),
                None => Err(invalid(text, to)),
            },
        })
        .collect()
}

/// Casts Spark does differently from Arrow; `None` hands the cast to Arrow.
pub fn spark_cast(
    a: &ArrayRef,
    to: &DataType,
    mode: crate::physical::CastMode,
) -> Result<Option<ArrayRef>> {
    use crate::physical::CastMode;
    let safe = mode != CastMode::Ansi;
    let legacy = mode == CastMode::Legacy;
    use arrow_array::types::{Date32Type, Decimal128Type, Int64Type};
    use arrow_array::PrimitiveArray;
    use std::sync::Arc;
    let from = a.data_type();
    let n = a.len();
    Ok(Some(match (from, to) {
        // A TIMESTAMP to a TIMESTAMP_NTZ is its wall-clock time in its zone (Arrow's cast keeps
        // the instant's UTC value instead).
        (
            DataType::Timestamp(TimeUnit::Microsecond, Some(zone)),
            DataType::Timestamp(TimeUnit::Microsecond, None),
        ) => {
            let z: arrow_array::timezone::Tz = zone.parse()?;
            let t = a.as_primitive::<arrow_array::types::TimestampMicrosecondType>();
            let mut out = Vec::with_capacity(n);
            for v in t.iter() {
                out.push(match v {
                    None => None,
                    Some(us) => Some(
                        crate::functions::datetime::local(us, &z)
                            .map(|l| l.and_utc().timestamp_micros())
                            .ok_or_else(|| overflow_micros(us))?,
                    ),
                });
            }
            Arc::new(PrimitiveArray::<arrow_array::types::TimestampMicrosecondType>::from(out))
        }
        // A date is its midnight in the zone. Arrow converts each row through the zone's
        // rules; a date column holds few distinct days, so each is converted once.
        (DataType::Date32, DataType::Timestamp(TimeUnit::Microsecond, tz)) => {
            const MICROS_PER_DAY: i64 = 86_400_000_000;
            let days = a.as_primitive::<Date32Type>();
            let utc = tz
                .as_deref()
                .is_none_or(|z| matches!(z, "UTC" | "utc" | "Etc/UTC" | "Z" | "+00:00" | "GMT"));
            let out: PrimitiveArray<arrow_array::types::TimestampMicrosecondType> = if utc {
                days.unary(|d| i64::from(d) * MICROS_PER_DAY)
            } else {
                let Ok(zone) = crate::functions::datetime::zone(tz.as_deref().unwrap_or("UTC"))
                else {
                    return Ok(None);
                };
                let mut seen: std::collections::HashMap<i32, Option<i64>> =
                    std::collections::HashMap::new();
                days.iter()
                    .map(|d| {
                        d.and_then(|d| {
                            *seen
                                .entry(d)
                                .or_insert_with(|| midnight_micros(d, Some(&zone)))
                        })
                    })
                    .collect()
            };
            Arc::new(out.with_timezone_opt(tz.clone()))
        }
        (DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View, DataType::Date32) => {
            let out = parse_texts(a, to, safe, |text| Ok(parse_spark_date(text)))?;
            Arc::new(PrimitiveArray::<Date32Type>::from(out))
        }
        (
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View,
            DataType::Timestamp(TimeUnit::Microsecond, tz),
        ) => {
            let zone = match tz {
                Some(z) => Some(crate::functions::datetime::zone(z)?),
                None => None,
            };
            let out = parse_texts(a, to, safe, |text| {
                Ok(timestamp_text_micros(text, zone.as_ref()))
            })?;
            Arc::new(
                PrimitiveArray::<arrow_array::types::TimestampMicrosecondType>::from(out)
                    .with_timezone_opt(tz.clone()),
            )
        }
        // A timestamp as a number is seconds since the epoch (floored for integers).
        (DataType::Timestamp(TimeUnit::Microsecond, _), t) if crate::types::is_integral(t) => {
            let us = a.as_primitive::<arrow_array::types::TimestampMicrosecondType>();
            let secs: PrimitiveArray<Int64Type> = us.unary(|v| v.div_euclid(1_000_000));
            return integral_narrow(&(Arc::new(secs) as ArrayRef), to, mode).map(Some);
        }
        // A number as a timestamp is seconds since the epoch (fractions truncated to micros).
        (t, DataType::Timestamp(TimeUnit::Microsecond, tz)) if crate::types::is_numeric(t) => {
            let secs = arrow_cast::cast(a, &DataType::Float64)?;
            let secs = secs.as_primitive::<arrow_array::types::Float64Type>();
            let exact_ints = crate::types::is_integral(t);
            let ints = if exact_ints {
                Some(arrow_cast::cast(a, &DataType::Int64)?)
            } else {
                None
            };
            let mut out = Vec::with_capacity(n);
            for i in 0..n {
                if secs.is_null(i) {
                    out.push(None);
                    continue;
                }
                let v = match &ints {
                    Some(ints) => ints
                        .as_primitive::<Int64Type>()
                        .value(i)
                        .checked_mul(1_000_000),
                    None => {
                        let x = secs.value(i);
                        (x.is_finite() && (x * 1e6).abs() < 9.2e18).then_some((x * 1e6) as i64)
                    }
                };
                match v {
                    Some(v) => out.push(Some(v)),
                    None if safe => out.push(None),
                    // NaN and the infinities are no time at all (Spark's CAST_INVALID_INPUT).
                    None if !secs.value(i).is_finite() => {
                        return Err(FerroError::Arithmetic(format!(
                            "[CAST_INVALID_INPUT] The value {} of the type \"{}\" cannot be cast to \"{}\" because it is malformed. Correct the value as per the syntax, or change its target type. Use `try_cast` to tolerate malformed input and return NULL instead. SQLSTATE: 22018",
                            java_double_string(secs.value(i)),
                            crate::types::spark_type_name(t),
                            crate::types::spark_type_name(to)
                        )))
                    }
                    None => return Err(overflow(secs.value(i), t, to)),
                }
            }
            Arc::new(
                PrimitiveArray::<arrow_array::types::TimestampMicrosecondType>::from(out)
                    .with_timezone_opt(tz.clone()),
            )
        }
        // Doubles to decimals round their decimal text HALF_UP (Spark goes through BigDecimal).
        (DataType::Float64 | DataType::Float32, DataType::Decimal128(p, s)) => {
            let f = arrow_cast::cast(a, &DataType::Float64)?;
            let f = f.as_primitive::<arrow_array::types::Float64Type>();
            let mut out = Vec::with_capacity(n);
            for i in 0..n {
                if f.is_null(i) {
                    out.push(None);
                    continue;
                }
                let x = f.value(i);
                let v = crate::functions::math::round_f64(x, *s as i32, false);
                let unscaled = decimal_unscaled(v, *s);
                match unscaled.filter(|u| u.unsigned_abs() < 10u128.pow(*p as u32)) {
                    Some(u) => out.push(Some(u)),
                    None if safe => out.push(None),
                    None => return Err(overflow(x, from, to)),
                }
            }
            Arc::new(PrimitiveArray::<Decimal128Type>::from(out).with_precision_and_scale(*p, *s)?)
        }
        // Decimals to doubles through their text: one correct rounding (BigDecimal.doubleValue).
        (DataType::Decimal128(_, s), DataType::Float64) => {
            let d = a.as_primitive::<Decimal128Type>();
            let out: arrow_array::Float64Array = d
                .iter()
                .map(|v| {
                    v.map(|v| {
                        crate::expr::format_decimal(v, *s)
                            .parse::<f64>()
                            .unwrap_or(f64::NAN)
                    })
                })
                .collect();
            Arc::new(out)
        }
        // Legacy casts of text to integers read a decimal number and truncate it ('1.5' is 1).
        (DataType::Utf8, t) if legacy && crate::types::is_integral(t) => {
            let s = a.as_string::<i32>();
            let (lo, hi) = int_range(t);
            let out: PrimitiveArray<Int64Type> = s
                .iter()
                .map(|v| {
                    let v = v?.trim_matches(|c: char| c.is_whitespace() || c.is_control());
                    if let Ok(i) = v.parse::<i64>() {
                        return (lo..=hi).contains(&i).then_some(i);
                    }
                    let lit = crate::expr::Literal::decimal_from_str(v)?;
                    let DataType::Decimal128(_, sc) = lit.data_type() else {
                        return None;
                    };
                    let u = lit.array().as_primitive::<Decimal128Type>().value(0);
                    let whole = u / 10i128.checked_pow(*sc as u32)?;
                    i64::try_from(whole).ok().filter(|i| (lo..=hi).contains(i))
                })
                .collect();
            arrow_cast::cast(&(Arc::new(out) as ArrayRef), to)?
        }
        (f, t) if crate::types::is_integral(f) && crate::types::is_integral(t) => {
            return integral_narrow(a, to, mode).map(Some)
        }
        (DataType::Float64 | DataType::Float32, t) if crate::types::is_integral(t) => {
            let f = arrow_cast::cast(a, &DataType::Float64)?;
            let f = f.as_primitive::<arrow_array::types::Float64Type>();
            let (lo, hi) = int_range(t);
            let mut out = Vec::with_capacity(n);
            for i in 0..n {
                if f.is_null(i) {
                    out.push(None);
                    continue;
                }
                let x = f.value(i).trunc();
                if x.is_nan() || x < lo as f64 || x > hi as f64 {
                    if !legacy && safe {
                        out.push(None);
                        continue;
                    }
                    if legacy {
                        // Java's (int) / (long) of a double saturates; NaN is 0.
                        out.push(Some((f.value(i) as i64).clamp(lo, hi)));
                        continue;
                    }
                    return Err(overflow(java_double_string(f.value(i)), from, to));
                }
                out.push(Some(x as i64));
            }
            let wide: ArrayRef = Arc::new(PrimitiveArray::<Int64Type>::from(out));
            arrow_cast::cast(&wide, to)?
        }
        _ => return Ok(None),
    }))
}

fn decimal_unscaled(v: f64, scale: i8) -> Option<i128> {
    let text = format!("{v}");
    let lit = crate::expr::Literal::decimal_from_str(&text)?;
    let (digits_scale, unscaled) = match lit.data_type() {
        DataType::Decimal128(_, s) => (
            *s,
            lit.array()
                .as_primitive::<arrow_array::types::Decimal128Type>()
                .value(0),
        ),
        _ => return None,
    };
    let diff = scale as i32 - digits_scale as i32;
    if diff >= 0 {
        unscaled.checked_mul(10i128.checked_pow(diff as u32)?)
    } else {
        Some(unscaled / 10i128.checked_pow((-diff) as u32)?)
    }
}

fn int_range(t: &DataType) -> (i64, i64) {
    match t {
        DataType::Int8 => (i8::MIN as i64, i8::MAX as i64),
        DataType::Int16 => (i16::MIN as i64, i16::MAX as i64),
        DataType::Int32 => (i32::MIN as i64, i32::MAX as i64),
        _ => (i64::MIN, i64::MAX),
    }
}

/// Integer to integer: ANSI raises CAST_OVERFLOW, legacy keeps the low bits (Java's cast).
fn integral_narrow(
    a: &ArrayRef,
    to: &DataType,
    mode: crate::physical::CastMode,
) -> Result<ArrayRef> {
    use crate::physical::CastMode;
    use arrow_array::types::Int64Type;
    let wide = arrow_cast::cast(a, &DataType::Int64)?;
    let wide = wide.as_primitive::<Int64Type>();
    let (lo, hi) = int_range(to);
    let mut out = Vec::with_capacity(wide.len());
    for v in wide.iter() {
        out.push(match v {
            Some(x) if x < lo || x > hi => {
                if mode == CastMode::Ansi {
                    return Err(overflow(x, a.data_type(), to));
                }
                if mode == CastMode::Try {
                    out.push(None);
                    continue;
                }
                Some(match to {
                    DataType::Int8 => x as i8 as i64,
                    DataType::Int16 => x as i16 as i64,
                    DataType::Int32 => x as i32 as i64,
                    _ => x,
                })
            }
            other => other,
        });
    }
    let out: ArrayRef = std::sync::Arc::new(arrow_array::PrimitiveArray::<Int64Type>::from(out));
    Ok(arrow_cast::cast(&out, to)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_print_as_java() {
        assert_eq!(java_double_string(1.0), "1.0");
        assert_eq!(java_double_string(1e10), "1.0E10");
        assert_eq!(java_double_string(1.5e-5), "1.5E-5");
        assert_eq!(java_double_string(123.456), "123.456");
        assert_eq!(java_double_string(-0.0), "-0.0");
        assert_eq!(java_double_string(1234567.0), "1234567.0");
    }
}
