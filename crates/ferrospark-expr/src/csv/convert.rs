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
use arrow_array::{Array, ArrayRef, StringArray};
use arrow_schema::DataType;
use ferrospark_common::{Config, Result};

use super::options::CsvOptions;

/// Java's `Long.parseLong`: an optional sign, then ASCII digits only.
pub fn java_long(s: &str) -> Option<i64> {
    java_long_bytes(s.as_bytes())
}

/// [`java_long`] of text as bytes.
pub fn java_long_bytes(b: &[u8]) -> Option<i64> {
    let (negative, digits) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        Some(b'+') => (false, &b[1..]),
        _ => (false, b),
    };
    if digits.is_empty() {
        return None;
    }
    // Accumulated negative, so that i64::MIN reads too.
    let mut v: i64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_sub(i64::from(c - b'0'))?;
    }
    if negative {
        Some(v)
    } else {
        v.checked_neg()
    }
}

/// Java's `Double.parseDouble` (decimal forms): surrounding whitespace trimmed, a trailing
/// `d` / `f` type letter allowed, `NaN` and `Infinity` spelled as Java spells them.
pub fn java_double(s: &str) -> Option<f64> {
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
pub fn decimal_field(s: &str, precision: u8, scale: i8) -> Option<i128> {
    decimal_bytes(s.as_bytes(), precision, scale)
}

/// [`decimal_field`] of text as bytes.
pub fn decimal_bytes(b: &[u8], precision: u8, scale: i8) -> Option<i128> {
    // Byte by byte, without copying: this runs for every decimal field of every record.
    plain_decimal(b, precision, scale).or_else(|| any_decimal(b, precision, scale))
}

/// [`decimal_field`] for any text Java's `BigDecimal` reads.
fn any_decimal(b: &[u8], precision: u8, scale: i8) -> Option<i128> {
    let (mantissa, exp) = match b.iter().position(|&c| c == b'e' || c == b'E') {
        Some(i) => (
            &b[..i],
            std::str::from_utf8(&b[i + 1..]).ok()?.parse::<i32>().ok()?,
        ),
        None => (b, 0),
    };
    let negative = mantissa.first() == Some(&b'-');
    let m = match mantissa.first() {
        Some(b'+' | b'-') => &mantissa[1..],
        _ => mantissa,
    };
    let (int, frac): (&[u8], &[u8]) = match m.iter().position(|&c| c == b'.') {
        Some(i) => (&m[..i], &m[i + 1..]),
        None => (m, &[]),
    };
    let int = || int.iter().copied().filter(|&c| c != b',');
    let frac = || frac.iter().copied().filter(|&c| c != b',');
    if (int().next().is_none() && frac().next().is_none())
        || !int().chain(frac()).all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let frac_len = frac().count() as i32;
    // value = digits * 10^(exp - frac_len); wanted: value * 10^scale.
    let shift = exp - frac_len + i32::from(scale);
    let digits = || int().chain(frac()).skip_while(|&c| c == b'0');
    let mut v: i128 = 0;
    if shift >= 0 {
        for c in digits() {
            v = v.checked_mul(10)?.checked_add(i128::from(c - b'0'))?;
        }
        for _ in 0..shift {
            v = v.checked_mul(10)?;
        }
    } else {
        let cut = (-shift) as usize;
        let len = digits().count();
        let keep = len.saturating_sub(cut);
        for c in digits().take(keep) {
            v = v.checked_mul(10)?.checked_add(i128::from(c - b'0'))?;
        }
        if len >= cut && digits().nth(keep).is_some_and(|c| c >= b'5') {
            v += 1;
        }
    }
    if v >= 10i128.pow(u32::from(precision)) {
        return None;
    }
    Some(if negative { -v } else { v })
}

/// The common case of [`decimal_field`] in one pass: `-?digits[.digits]` with at most
/// `scale` fractional digits and 18 digits in all, so that nothing rounds and an `i64`
/// holds it; `None` for anything else (the general parse decides).
fn plain_decimal(b: &[u8], precision: u8, scale: i8) -> Option<i128> {
    let (negative, digits) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        _ => (false, b),
    };
    if digits.len() > 19 || scale < 0 {
        return None;
    }
    let (mut v, mut frac_len, mut dot, mut n) = (0i64, 0i32, false, 0);
    for &c in digits {
        match c {
            b'0'..=b'9' if n < 18 => {
                v = v * 10 + i64::from(c - b'0');
                n += 1;
                if dot {
                    frac_len += 1;
                }
            }
            b'.' if !dot => dot = true,
            _ => return None,
        }
    }
    let shift = i32::from(scale) - frac_len;
    if n == 0 || shift < 0 {
        return None;
    }
    let v = i128::from(v) * 10i128.pow(shift as u32);
    if v >= 10i128.pow(u32::from(precision)) {
        return None;
    }
    Some(if negative { -v } else { v })
}

/// Column `values` converted to `to`: the array, and which rows did not convert (a non-NULL
/// field whose value is NULL).
pub fn convert_column(
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
        // Dates and timestamps: by the user's pattern, else Spark's own parsing of the text,
        // in the session time zone.
        other => o.formats.read(values, other, cfg)?,
    };
    let bad = (0..n)
        .map(|i| values.is_valid(i) && out.is_null(i))
        .collect();
    Ok((out, bad))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one-pass parse of plain decimals agrees with the general one wherever it answers.
    #[test]
    fn plain_decimals_parse_as_the_general_parse_does() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let chars = b"0123456789.-+e,";
        let mut answered = 0;
        for _ in 0..200_000 {
            let len = 1 + (next() % 22) as usize;
            let text: Vec<u8> = (0..len)
                .map(|_| {
                    let r = next() as usize;
                    // Mostly digits, some dots and signs, rarely the rest.
                    if r % 10 < 8 {
                        chars[r % 10]
                    } else {
                        chars[r % chars.len()]
                    }
                })
                .collect();
            let (precision, scale) = (1 + (next() % 38) as u8, (next() % 12) as i8);
            if let Some(v) = plain_decimal(&text, precision, scale) {
                answered += 1;
                assert_eq!(
                    Some(v),
                    any_decimal(&text, precision, scale),
                    "{:?} ({precision}, {scale})",
                    String::from_utf8_lossy(&text)
                );
            }
        }
        assert!(answered > 1000, "{answered}");
        assert_eq!(decimal_field("-12.5", 9, 2), Some(-1250));
        assert_eq!(decimal_field("12.345", 9, 2), Some(1235));
        assert_eq!(decimal_field("1e2", 9, 2), Some(10000));
        assert_eq!(decimal_field("1000.00", 5, 2), None);
        for (text, want) in [
            ("0", Some(0)),
            ("+12", Some(12)),
            ("-9223372036854775808", Some(i64::MIN)),
            ("9223372036854775807", Some(i64::MAX)),
            ("9223372036854775808", None),
            ("-", None),
            ("1 ", None),
            ("", None),
        ] {
            assert_eq!(java_long(text), want, "{text:?}");
        }
    }
}
