//! Casts to STRING that print values the way Spark does, where Arrow's text differs: doubles
//! as Java's `Double.toString` (`1.0`, `1.0E10`, `1.0E-5`), timestamps without a zero
//! fraction and in the column's zone (`2020-01-01 10:00:00`, `... 10:00:00.5`).

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type, TimestampMicrosecondType};
use arrow_array::{Array, ArrayRef};
use arrow_schema::{DataType, TimeUnit};
use ferrospark_common::Result;

use crate::functions::build_strings;

/// Java's `Double.toString` for a finite or special value.
pub fn java_double_string(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0.0" } else { "0.0" }.into();
    }
    let a = v.abs();
    if (1e-3..1e7).contains(&a) {
        let s = format!("{v}");
        if s.contains('.') {
            s
        } else {
            format!("{s}.0")
        }
    } else {
        let s = format!("{v:e}");
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let m = if m.contains('.') {
            m.to_string()
        } else {
            format!("{m}.0")
        };
        format!("{m}E{e}")
    }
}

/// The Spark text of `a` when Arrow would print it differently; `None` to let Arrow cast.
pub fn to_spark_string(a: &ArrayRef) -> Result<Option<ArrayRef>> {
    let n = a.len();
    Ok(Some(match a.data_type() {
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
                // Float.toString: the shortest text of the float, not of its double.
                let v = f.value(i);
                let text = java_double_string(v as f64);
                let short = format!("{v}");
                if (1e-3..1e7).contains(&v.abs()) {
                    out.push_str(&if short.contains('.') {
                        short
                    } else {
                        format!("{short}.0")
                    });
                } else if v.is_finite() && v != 0.0 {
                    let s = format!("{v:e}");
                    let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
                    let m = if m.contains('.') {
                        m.to_string()
                    } else {
                        format!("{m}.0")
                    };
                    out.push_str(&format!("{m}E{e}"));
                } else {
                    out.push_str(&text);
                }
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
        _ => return Ok(None),
    }))
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
