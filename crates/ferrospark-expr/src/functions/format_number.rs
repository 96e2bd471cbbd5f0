//! `format_number(x, d)`: a number with thousands separators and `d` decimal places (or a
//! `DecimalFormat` pattern of `#`, `0`, `,` and `.`), as Spark formats it through Java's
//! `DecimalFormat` in the US locale.
//!
//! Written here because the digits are Java's: a DOUBLE is rounded from its shortest
//! round-trip digits (`Double.toString`'s), HALF_EVEN, a tie among those digits settled by
//! the exact binary value (as Java 8 onwards does); a DECIMAL is rounded from its exact
//! digits. A negative number that rounds to zero keeps its sign (`-0`), NaN is `NaN` and
//! infinities are `∞` / `-∞`.

use arrow_array::cast::AsArray;
use arrow_array::types::{Decimal128Type, Float64Type, Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;
use ferrospark_common::{FerroError, Result};

use super::{build_strings, Args, Bound, Call, ScalarFunction};
use crate::bind::cast_to;
use crate::physical::PhysicalExpr;
use crate::types::{is_decimal, is_integral, spark_equivalent};

/// How `format_number` reads its number (bound to one of these types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormatNumberFn {
    /// A BIGINT (every integral type).
    Integer,
    /// A DOUBLE (FLOAT widened).
    Double,
    /// A DECIMAL.
    Decimal,
}

/// A parsed format: grouping size, minimum integer digits, minimum and maximum fraction
/// digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Format {
    grouping: usize,
    min_int: usize,
    min_frac: usize,
    max_frac: usize,
}

impl Format {
    fn places(d: i32) -> Self {
        let d = d.max(0) as usize;
        Format {
            grouping: 3,
            min_int: 1,
            min_frac: d,
            max_frac: d,
        }
    }

    /// A `DecimalFormat` pattern of `#`, `0`, `,` and `.` (empty: Spark's default).
    fn pattern(p: &str) -> Result<Self> {
        if p.is_empty() {
            return Ok(Format::places(0));
        }
        if !p.chars().all(|c| matches!(c, '#' | '0' | ',' | '.')) || p.matches('.').count() > 1 {
            return Err(FerroError::Unsupported(format!(
                "format_number pattern '{p}': only patterns of '#', '0', ',' and '.' are supported; use a number of decimal places or printf"
            )));
        }
        let (int, frac) = p.split_once('.').unwrap_or((p, ""));
        let grouping = match int.rfind(',') {
            Some(i) => int.len() - i - 1,
            None => 0,
        };
        Ok(Format {
            grouping,
            min_int: int.chars().filter(|&c| c == '0').count(),
            min_frac: frac.chars().filter(|&c| c == '0').count(),
            max_frac: frac.chars().filter(|&c| c == '0' || c == '#').count(),
        })
    }

    /// `digits` (no leading zeros needed) with the point after `point` of them, rounded
    /// HALF_EVEN to the format's places (`tie`: how a 5 followed by nothing compares with
    /// the exact value), grouped and signed.
    fn write(
        &self,
        negative: bool,
        digits: &[u8],
        point: i64,
        tie: std::cmp::Ordering,
        out: &mut String,
    ) {
        // Pad so that every integer digit and `max_frac` fraction digits exist.
        let lead = (-point).max(0) as usize;
        let mut d: Vec<u8> = std::iter::repeat_n(0u8, lead)
            .chain(digits.iter().copied())
            .collect();
        let point = point.max(0) as usize;
        let keep = point + self.max_frac;
        if d.len() < keep {
            d.resize(keep, 0);
        }
        let round_up = match d.get(keep) {
            None => false,
            Some(&next) => {
                let rest_nonzero = d[keep + 1..].iter().any(|&x| x != 0);
                match next.cmp(&5) {
                    std::cmp::Ordering::Greater => true,
                    std::cmp::Ordering::Less => false,
                    std::cmp::Ordering::Equal if rest_nonzero => true,
                    std::cmp::Ordering::Equal => match tie {
                        std::cmp::Ordering::Greater => true,
                        std::cmp::Ordering::Less => false,
                        std::cmp::Ordering::Equal => keep > 0 && d[keep - 1] % 2 == 1,
                    },
                }
            }
        };
        d.truncate(keep);
        let mut point = point;
        if round_up {
            let mut i = d.len();
            loop {
                if i == 0 {
                    d.insert(0, 1);
                    point += 1;
                    break;
                }
                i -= 1;
                if d[i] == 9 {
                    d[i] = 0;
                } else {
                    d[i] += 1;
                    break;
                }
            }
        }
        let (int, frac) = d.split_at(point);
        let first = int.iter().position(|&x| x != 0).unwrap_or(int.len());
        let mut int: Vec<u8> = int[first..].to_vec();
        while int.len() < self.min_int {
            int.insert(0, 0);
        }
        let mut frac = frac.to_vec();
        while frac.len() > self.min_frac && frac.last() == Some(&0) {
            frac.pop();
        }
        if negative {
            out.push('-');
        }
        for (i, x) in int.iter().enumerate() {
            let left = int.len() - i;
            if i > 0 && self.grouping > 0 && left.is_multiple_of(self.grouping) {
                out.push(',');
            }
            out.push(char::from(b'0' + x));
        }
        if !frac.is_empty() {
            out.push('.');
            out.extend(frac.iter().map(|x| char::from(b'0' + x)));
        }
        if int.is_empty() && frac.is_empty() {
            out.push('0');
        }
    }
}

/// The digits of an integer's magnitude.
fn digits_of(v: u128) -> Vec<u8> {
    v.to_string().bytes().map(|b| b - b'0').collect()
}

/// A double's shortest round-trip digits and point position, and how its exact value
/// compares with a tie placed after those digits.
fn double_digits(x: f64) -> (Vec<u8>, i64) {
    let s = format!("{:e}", x.abs());
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i64 = exp.parse().unwrap_or(0);
    let digits: Vec<u8> = mantissa
        .bytes()
        .filter(u8::is_ascii_digit)
        .map(|b| b - b'0')
        .collect();
    (digits, exp + 1)
}

/// How the exact value of `x` compares with its shortest digits followed by a 5 at
/// `position` (an index into the digits): the tie rule for a 5 that ends the digits.
fn exact_vs_shortest(x: f64) -> std::cmp::Ordering {
    let (short, point) = double_digits(x);
    let exact = format!("{:.1100}", x.abs());
    let exact: Vec<u8> = exact
        .bytes()
        .filter(u8::is_ascii_digit)
        .map(|b| b - b'0')
        .collect();
    // `exact` has all integer digits then 1100 fraction digits; align both at the point.
    let int_len = exact.len() - 1100;
    let shift = int_len as i64 - point;
    let aligned: Vec<u8> = if shift >= 0 {
        exact[shift as usize..].to_vec()
    } else {
        std::iter::repeat_n(0u8, (-shift) as usize)
            .chain(exact.iter().copied())
            .collect()
    };
    for (i, &s) in short.iter().enumerate() {
        match aligned.get(i).copied().unwrap_or(0).cmp(&s) {
            std::cmp::Ordering::Equal => continue,
            other => return other,
        }
    }
    if aligned[short.len().min(aligned.len())..]
        .iter()
        .any(|&d| d != 0)
    {
        std::cmp::Ordering::Greater
    } else {
        std::cmp::Ordering::Equal
    }
}

impl FormatNumberFn {
    pub(crate) fn evaluate(self, args: &Args) -> Result<ArrayRef> {
        let x = args.full(0)?;
        let fmt_arg = args.full(1)?;
        let formats: Vec<Option<Format>> = match fmt_arg.data_type() {
            DataType::Int32 => fmt_arg
                .as_primitive::<Int32Type>()
                .iter()
                .map(|d| d.filter(|&d| d >= 0).map(Format::places))
                .collect(),
            _ => {
                let mut last: Option<(String, Format)> = None;
                let mut out = Vec::with_capacity(fmt_arg.len());
                for p in fmt_arg.as_string::<i32>().iter() {
                    out.push(match p {
                        None => None,
                        Some(p) => {
                            if last.as_ref().is_none_or(|(t, _)| t != p) {
                                last = Some((p.to_string(), Format::pattern(p)?));
                            }
                            last.as_ref().map(|(_, f)| *f)
                        }
                    });
                }
                out
            }
        };
        build_strings(args.rows(), |i, out| {
            if x.is_null(i) {
                return Ok(false);
            }
            let Some(f) = formats[i] else {
                return Ok(false);
            };
            match self {
                FormatNumberFn::Integer => {
                    let v = x.as_primitive::<Int64Type>().value(i);
                    f.write(
                        v < 0,
                        &digits_of(v.unsigned_abs().into()),
                        digits_of(v.unsigned_abs().into()).len() as i64,
                        std::cmp::Ordering::Equal,
                        out,
                    );
                }
                FormatNumberFn::Decimal => {
                    let a = x.as_primitive::<Decimal128Type>();
                    let scale = i64::from(a.scale());
                    let v = a.value(i);
                    let digits = digits_of(v.unsigned_abs());
                    let point = digits.len() as i64 - scale;
                    f.write(v < 0, &digits, point, std::cmp::Ordering::Equal, out);
                }
                FormatNumberFn::Double => {
                    let v = x.as_primitive::<Float64Type>().value(i);
                    if v.is_nan() {
                        out.push_str("NaN");
                    } else if v.is_infinite() {
                        out.push_str(if v < 0.0 { "-∞" } else { "∞" });
                    } else if v == 0.0 {
                        f.write(
                            v.is_sign_negative(),
                            &[0],
                            1,
                            std::cmp::Ordering::Equal,
                            out,
                        );
                    } else {
                        let (digits, point) = double_digits(v);
                        f.write(v < 0.0, &digits, point, exact_vs_shortest(v), out);
                    }
                }
            }
            Ok(true)
        })
        .map(|a| a as ArrayRef)
    }
}

/// Binds `format_number`; other names are not this family's.
pub(crate) fn bind(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    if call.name != "format_number" {
        return Ok(Bound::NotMine(args));
    }
    call.arity(&args, 2, 2)?;
    let t = spark_equivalent(&args[0].data_type());
    let (f, x) = if is_integral(&t) {
        (
            FormatNumberFn::Integer,
            cast_to(args[0].clone(), &DataType::Int64),
        )
    } else if is_decimal(&t) {
        (FormatNumberFn::Decimal, args[0].clone())
    } else if matches!(t, DataType::Float64 | DataType::Float32 | DataType::Null) {
        (
            FormatNumberFn::Double,
            cast_to(args[0].clone(), &DataType::Float64),
        )
    } else {
        return Err(call.wrong_type(0, &args[0], "the \"NUMERIC\" type"));
    };
    let dt = spark_equivalent(&args[1].data_type());
    let d = if is_integral(&dt) || dt == DataType::Null {
        cast_to(args[1].clone(), &DataType::Int32)
    } else if dt == DataType::Utf8 {
        args[1].clone()
    } else {
        return Err(call.wrong_type(1, &args[1], "(\"INT\" or \"STRING\") type"));
    };
    Ok(Bound::Done(call.function(
        ScalarFunction::FormatNumber(f),
        vec![x, d],
        DataType::Utf8,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn double(x: f64, f: Format) -> String {
        let mut s = String::new();
        let (d, p) = double_digits(x);
        f.write(x < 0.0, &d, p, exact_vs_shortest(x), &mut s);
        s
    }

    /// Java's `DecimalFormat` answers (Spark 4.3's `format_number`).
    #[test]
    fn doubles_format_as_java_does() {
        assert_eq!(double(12332.123456, Format::places(4)), "12,332.1235");
        assert_eq!(double(12332.1, Format::places(0)), "12,332");
        assert_eq!(double(-0.5, Format::places(0)), "-0");
        assert_eq!(double(0.125, Format::places(2)), "0.12");
        assert_eq!(double(1.005, Format::places(2)), "1.00");
        assert_eq!(
            double(1e20, Format::places(1)),
            "100,000,000,000,000,000,000.0"
        );
        assert_eq!(double(0.000123, Format::places(5)), "0.00012");
        assert_eq!(double(999.9996, Format::places(3)), "1,000.000");
        let p = Format::pattern("#,###.00").expect("pattern");
        assert_eq!(double(1234.5, p), "1,234.50");
    }
}
