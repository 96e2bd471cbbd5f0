//! Text fields to typed values as Spark's CSV parser converts them (`UnivocityParser`), not as
//! a cast does: integers as Java parses them (a sign, digits, no spaces), doubles as Java's
//! `parseDouble` (spaces trimmed, `1e2`, `1.5d`) or the `nanValue` / `positiveInf` /
//! `negativeInf` texts, booleans `true` / `false` in any case, decimals rounded half up to
//! their scale (a value that does not fit its precision is malformed), dates and timestamps by
//! Spark's own parsing in the session time zone. A field that does not convert is NULL and
//! makes its record malformed.

use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, Decimal128Builder, PrimitiveBuilder};
use arrow_array::types::{Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type};
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use ferrospark_common::{Config, Result};
use ferrospark_expr::{evaluate, CastMode, PhysicalExpr};

use super::options::CsvOptions;

/// Java's `Long.parseLong`: an optional sign, then ASCII digits only.
pub(crate) fn java_long(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Java's `Double.parseDouble` (decimal forms): surrounding whitespace trimmed, a trailing
/// `d` / `f` type letter allowed, `NaN` and `Infinity` spelled as Java spells them.
pub(crate) fn java_double(s: &str) -> Option<f64> {
    let t = s.trim_matches(|c: char| c <= ' ');
    let unsigned = t.strip_prefix(['+', '-']).unwrap_or(t);
    let negative = t.starts_with('-');
    match unsigned {
        "NaN" => return Some(f64::NAN),
        "Infinity" => {
            return Some(if negative {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            })
        }
        _ => {}
    }
    let body = t.strip_suffix(['d', 'D', 'f', 'F']).unwrap_or(t);
    let ok = !body.is_empty()
        && body
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'+' | b'-' | b'.' | b'e' | b'E'))
        && body.bytes().any(|b| b.is_ascii_digit());
    if !ok {
        return None;
    }
    body.parse().ok()
}

/// A double field: the options' special texts first, then Java's parsing.
fn double_field(s: &str, o: &CsvOptions) -> Option<f64> {
    if s == o.nan_value {
        Some(f64::NAN)
    } else if s == o.positive_inf {
        Some(f64::INFINITY)
    } else if s == o.negative_inf {
        Some(f64::NEG_INFINITY)
    } else {
        java_double(s)
    }
}

/// Java's `BigDecimal` text (commas dropped, as Spark's US-locale parser drops them) at
/// `scale`, rounded half up; `None` when it is not a number or needs more than `precision`
/// digits.
pub(crate) fn decimal_field(s: &str, precision: u8, scale: i8) -> Option<i128> {
    let t: String = s.chars().filter(|&c| c != ',').collect();
    let (mantissa, exp) = match t.find(['e', 'E']) {
        Some(i) => (&t[..i], t[i + 1..].parse::<i32>().ok()?),
        None => (t.as_str(), 0),
    };
    let negative = mantissa.starts_with('-');
    let m = mantissa.strip_prefix(['+', '-']).unwrap_or(mantissa);
    let (int, frac) = match m.split_once('.') {
        Some((a, b)) => (a, b),
        None => (m, ""),
    };
    if (int.is_empty() && frac.is_empty())
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let digits: String = format!("{int}{frac}");
    // value = digits * 10^(exp - frac.len()); wanted: value * 10^scale.
    let shift = exp - frac.len() as i32 + i32::from(scale);
    let digits = digits.trim_start_matches('0');
    let mut v: i128 = 0;
    if shift >= 0 {
        for b in digits.bytes() {
            v = v.checked_mul(10)?.checked_add(i128::from(b - b'0'))?;
        }
        for _ in 0..shift {
            v = v.checked_mul(10)?;
        }
    } else {
        let cut = (-shift) as usize;
        let keep = digits.len().saturating_sub(cut);
        for b in digits[..keep].bytes() {
            v = v.checked_mul(10)?.checked_add(i128::from(b - b'0'))?;
        }
        let dropped = &digits[keep..];
        let first_dropped = if digits.len() >= cut {
            dropped.bytes().next()
        } else {
            None
        };
        if first_dropped.is_some_and(|b| b >= b'5') {
            v += 1;
        }
    }
    if v >= 10i128.pow(u32::from(precision)) {
        return None;
    }
    Some(if negative { -v } else { v })
}

/// Column `values` converted to `to`: the array, and which rows did not convert (a non-NULL
/// field whose value is NULL).
pub(crate) fn convert_column(
    values: &StringArray,
    to: &DataType,
    o: &CsvOptions,
    cfg: &Config,
) -> Result<(ArrayRef, Vec<bool>)> {
    let n = values.len();
    macro_rules! ints {
        ($t:ty, $native:ty) => {{
            let mut b = PrimitiveBuilder::<$t>::with_capacity(n);
            for v in values.iter() {
                b.append_option(
                    v.and_then(java_long)
                        .and_then(|x| <$native>::try_from(x).ok()),
                );
            }
            Arc::new(b.finish()) as ArrayRef
        }};
    }
    let out: ArrayRef = match to {
        DataType::Utf8 => Arc::new(values.clone()),
        DataType::Int8 => ints!(Int8Type, i8),
        DataType::Int16 => ints!(Int16Type, i16),
        DataType::Int32 => ints!(Int32Type, i32),
        DataType::Int64 => ints!(Int64Type, i64),
        DataType::Float64 => {
            let mut b = PrimitiveBuilder::<Float64Type>::with_capacity(n);
            for v in values.iter() {
                b.append_option(v.and_then(|s| double_field(s, o)));
            }
            Arc::new(b.finish())
        }
        DataType::Float32 => {
            let mut b = PrimitiveBuilder::<Float32Type>::with_capacity(n);
            for v in values.iter() {
                b.append_option(v.and_then(|s| double_field(s, o)).map(|x| x as f32));
            }
            Arc::new(b.finish())
        }
        DataType::Boolean => {
            let mut b = BooleanBuilder::with_capacity(n);
            for v in values.iter() {
                b.append_option(v.and_then(|s| {
                    if s.eq_ignore_ascii_case("true") {
                        Some(true)
                    } else if s.eq_ignore_ascii_case("false") {
                        Some(false)
                    } else {
                        None
                    }
                }));
            }
            Arc::new(b.finish())
        }
        DataType::Decimal128(p, s) => {
            let mut b = Decimal128Builder::with_capacity(n);
            for v in values.iter() {
                b.append_option(v.and_then(|t| decimal_field(t, *p, *s)));
            }
            Arc::new(b.finish().with_precision_and_scale(*p, *s)?)
        }
        // Dates and timestamps: Spark's own parsing of the text, in the session time zone.
        other => {
            let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Utf8, true)]));
            let batch = RecordBatch::try_new(schema, vec![Arc::new(values.clone())])?;
            let cast = PhysicalExpr::Cast {
                expr: Box::new(PhysicalExpr::Column {
                    index: 0,
                    name: "v".into(),
                    data_type: DataType::Utf8,
                }),
                to: with_session_zone(other, cfg),
                mode: CastMode::Try,
            };
            evaluate(&cast, &batch)?.into_array(n)?
        }
    };
    let bad = (0..n)
        .map(|i| values.is_valid(i) && out.is_null(i))
        .collect();
    Ok((out, bad))
}

/// Timestamps of the session's zone.
fn with_session_zone(t: &DataType, cfg: &Config) -> DataType {
    match t {
        DataType::Timestamp(u, Some(_)) => {
            DataType::Timestamp(*u, Some(cfg.session_time_zone().into()))
        }
        other => other.clone(),
    }
}

/// Rows of `mask` (true) only.
pub(crate) fn keep(values: &ArrayRef, mask: &BooleanArray) -> Result<ArrayRef> {
    Ok(arrow_select::filter::filter(values.as_ref(), mask)?)
}
