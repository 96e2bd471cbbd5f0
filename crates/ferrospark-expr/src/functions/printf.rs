//! `format_string(fmt, args...)` / `printf`: Java's `String.format` as Spark calls it, over
//! the values Spark hands Java (an INT is an `Integer`, a DECIMAL Spark's own `Decimal`, a
//! DATE its day number). Conversions `s S b B c C d o x X e E f g G % n`, with argument
//! indexes (`%2$s`), the flags `- # + 0 , (` and space, widths and precisions.
//!
//! A conversion the value's Java class does not take fails as Java does
//! (`f != org.apache.spark.sql.types.Decimal`); floating-point digits come from the shortest
//! representation and round half-up, as Java's `Formatter` rounds them.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    Int8Type, TimestampMicrosecondType,
};
use arrow_array::{Array, ArrayRef, StringArray};
use arrow_schema::{DataType, TimeUnit};
use ferrospark_common::{FerroError, Result};

use super::{Args, Bound, Call, LastCompiled, ScalarFunction, TextFn};
use crate::physical::PhysicalExpr;
use crate::types::spark_equivalent;

/// One argument as the Java object Spark passes.
#[derive(Debug, Clone)]
enum Value {
    Null,
    /// an integer and its Java width in bits (8 `Byte`, 16 `Short`, 32 `Integer`, 64 `Long`)
    Int(i64, u32),
    /// a `Double` (or a `Float` when the flag is set)
    Float(f64, bool),
    /// Spark's `Decimal`: unscaled value and scale
    Decimal(i128, i8),
    Bool(bool),
    Str(String),
}

impl Value {
    fn class(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Int(_, 8) => "java.lang.Byte",
            Value::Int(_, 16) => "java.lang.Short",
            Value::Int(_, 32) => "java.lang.Integer",
            Value::Int(..) => "java.lang.Long",
            Value::Float(_, true) => "java.lang.Float",
            Value::Float(..) => "java.lang.Double",
            Value::Decimal(..) => "org.apache.spark.sql.types.Decimal",
            Value::Bool(_) => "java.lang.Boolean",
            Value::Str(_) => "org.apache.spark.unsafe.types.UTF8String",
        }
    }

    /// Java's `toString()`.
    fn text(&self) -> String {
        match self {
            Value::Null => "null".into(),
            Value::Int(v, _) => v.to_string(),
            Value::Float(v, true) => java_float(*v as f32),
            Value::Float(v, false) => crate::cast::java_double_string(*v),
            Value::Decimal(v, s) => crate::expr::format_decimal(*v, *s),
            Value::Bool(b) => b.to_string(),
            Value::Str(s) => s.clone(),
        }
    }
}

fn java_float(v: f32) -> String {
    if v.is_nan() || v.is_infinite() || v == 0.0 || (1e-3..1e7).contains(&v.abs()) {
        return crate::cast::java_double_string(v.to_string().parse().unwrap_or(v as f64));
    }
    let s = format!("{v:E}");
    match s.split_once('E') {
        Some((m, e)) if !m.contains('.') => format!("{m}.0E{e}"),
        _ => s,
    }
}

/// A piece of a format string.
#[derive(Debug, Clone, PartialEq)]
enum Piece {
    Text(String),
    Spec(Spec),
}

#[derive(Debug, Clone, PartialEq)]
struct Spec {
    /// `None`: the next ordinary argument; `Some(0)`: the previous one (`<`); else 1-based
    index: Option<usize>,
    flags: String,
    width: Option<usize>,
    precision: Option<usize>,
    conversion: char,
    /// the specifier as written, for Java's messages
    written: String,
}

fn compile(format: &str) -> Result<Vec<Piece>> {
    let chars: Vec<char> = format.chars().collect();
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '%' {
            text.push(chars[i]);
            i += 1;
            continue;
        }
        let start = i;
        i += 1;
        let digits = |i: &mut usize| {
            let s = *i;
            while *i < chars.len() && chars[*i].is_ascii_digit() {
                *i += 1;
            }
            chars[s..*i].iter().collect::<String>()
        };
        // `n$` is an index only when the digits end in `$`.
        let mut index = None;
        let save = i;
        let d = digits(&mut i);
        if !d.is_empty() && chars.get(i) == Some(&'$') {
            index = d.parse::<usize>().ok();
            i += 1;
        } else {
            i = save;
        }
        let mut flags = String::new();
        while i < chars.len() && "-#+ 0,(<".contains(chars[i]) {
            if chars[i] == '<' {
                index = Some(0);
            } else {
                flags.push(chars[i]);
            }
            i += 1;
        }
        let w = digits(&mut i);
        let width = w.parse::<usize>().ok();
        let mut precision = None;
        if chars.get(i) == Some(&'.') {
            i += 1;
            let p = digits(&mut i);
            if p.is_empty() {
                return Err(java_error(format!(
                    "Conversion = '{}'",
                    chars.get(i).copied().unwrap_or('.')
                )));
            }
            precision = p.parse::<usize>().ok();
        }
        let Some(&conversion) = chars.get(i) else {
            return Err(java_error(format!(
                "Format specifier '{}'",
                chars[start..].iter().collect::<String>()
            )));
        };
        i += 1;
        if !"sSbBcCdoxXeEfgG%nhH".contains(conversion) {
            return Err(java_error(format!("Conversion = '{conversion}'")));
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(std::mem::take(&mut text)));
        }
        pieces.push(Piece::Spec(Spec {
            index,
            flags,
            width,
            precision,
            conversion,
            written: chars[start..i].iter().collect(),
        }));
    }
    if !text.is_empty() {
        pieces.push(Piece::Text(text));
    }
    Ok(pieces)
}

/// Java's exceptions from `String.format` carry no Spark error class.
fn java_error(message: String) -> FerroError {
    FerroError::Arithmetic(message)
}

fn mismatch(conversion: char, v: &Value) -> FerroError {
    java_error(format!("{conversion} != {}", v.class()))
}

/// Pads `s` to `width` with spaces (on the right under `-`); Java counts UTF-16 units.
fn pad(s: String, spec: &Spec) -> String {
    let n = s.encode_utf16().count();
    match spec.width {
        Some(w) if w > n => {
            let fill = " ".repeat(w - n);
            if spec.flags.contains('-') {
                s + &fill
            } else {
                fill + &s
            }
        }
        _ => s,
    }
}

fn group(int: &str) -> String {
    let mut out = String::with_capacity(int.len() + int.len() / 3);
    for (k, c) in int.chars().enumerate() {
        if k > 0 && (int.len() - k).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A signed number's text: sign or parentheses, zero padding after the sign, then width.
fn number(negative: bool, body: String, spec: &Spec) -> String {
    let f = &spec.flags;
    let (prefix, suffix) = if negative {
        if f.contains('(') {
            ("(", ")")
        } else {
            ("-", "")
        }
    } else if f.contains('+') {
        ("+", "")
    } else if f.contains(' ') {
        (" ", "")
    } else {
        ("", "")
    };
    let mut body = body;
    if f.contains('0') {
        if let Some(w) = spec.width {
            let n = prefix.len() + body.chars().count() + suffix.len();
            if w > n {
                body = "0".repeat(w - n) + &body;
            }
        }
    }
    pad(format!("{prefix}{body}{suffix}"), spec)
}

/// The shortest decimal digits of `v` (positive, finite) and where the point goes:
/// `v = 0.d1d2... * 10^point`.
fn shortest_digits(v: f64, single: bool) -> (Vec<u8>, i32) {
    let s = if single {
        format!("{:e}", v as f32)
    } else {
        format!("{v:e}")
    };
    let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
    let digits: Vec<u8> = m
        .bytes()
        .filter(u8::is_ascii_digit)
        .map(|b| b - b'0')
        .collect();
    (digits, e.parse::<i32>().unwrap_or(0) + 1)
}

/// `digits` (with `point`) rounded half-up to `keep` digits; the point moves on a carry.
fn round_half_up(digits: &[u8], point: i32, keep: i32) -> (Vec<u8>, i32) {
    let mut point = point;
    if keep < 0 {
        return (Vec::new(), point);
    }
    let keep = keep as usize;
    let mut kept: Vec<u8> = (0..keep)
        .map(|k| digits.get(k).copied().unwrap_or(0))
        .collect();
    if digits.get(keep).is_some_and(|&d| d >= 5) && super::math::add_one_ulp(&mut kept) {
        point += 1;
    }
    (kept, point)
}

fn digit_text(d: &[u8]) -> String {
    d.iter().map(|&x| (b'0' + x) as char).collect()
}

/// `%f` digits: integer part and `precision` decimals.
fn fixed(v: f64, single: bool, precision: usize) -> (String, String) {
    if v == 0.0 {
        return ("0".into(), "0".repeat(precision));
    }
    let (digits, point) = shortest_digits(v, single);
    let (kept, point) = round_half_up(&digits, point, point + precision as i32);
    let int = if point > 0 {
        let p = point as usize;
        let mut int: Vec<u8> = kept.iter().take(p).copied().collect();
        int.resize(p, 0);
        digit_text(&int)
    } else {
        "0".into()
    };
    let mut frac: Vec<u8> = vec![0; (-point).max(0) as usize];
    frac.extend(kept.iter().skip(point.max(0) as usize));
    frac.resize(precision, 0);
    (int, digit_text(&frac))
}

/// `%e` text of a positive finite `v` with `precision` decimals in the mantissa.
fn scientific(v: f64, single: bool, precision: usize, upper: bool) -> String {
    let (kept, point) = if v == 0.0 {
        (vec![0; precision + 1], 1)
    } else {
        let (digits, point) = shortest_digits(v, single);
        round_half_up(&digits, point, precision as i32 + 1)
    };
    let exp = point - 1;
    let mut m = digit_text(&kept[..1]);
    if precision > 0 {
        m.push('.');
        m.push_str(&digit_text(&kept[1..]));
    }
    let e = if upper { 'E' } else { 'e' };
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{m}{e}{sign}{:02}", exp.abs())
}

fn format_float(v: f64, single: bool, spec: &Spec) -> String {
    let c = spec.conversion;
    let upper = c.is_ascii_uppercase();
    if v.is_nan() || v.is_infinite() {
        let t = if v.is_nan() { "NaN" } else { "Infinity" };
        let negative = v.is_sign_negative() && !v.is_nan();
        let mut plain = spec.clone();
        plain.flags = plain.flags.replace('0', "");
        let t = if upper { t.to_uppercase() } else { t.into() };
        return number(negative, t, &plain);
    }
    // Java compares with `Double.compare`, so -0.0 prints a minus sign.
    let negative = v.is_sign_negative();
    let a = v.abs();
    let grouped = |int: String| {
        if spec.flags.contains(',') {
            group(&int)
        } else {
            int
        }
    };
    let body = match c.to_ascii_lowercase() {
        'f' => {
            let p = spec.precision.unwrap_or(6);
            let (int, frac) = fixed(a, single, p);
            let int = grouped(int);
            if p == 0 {
                if spec.flags.contains('#') {
                    format!("{int}.")
                } else {
                    int
                }
            } else {
                format!("{int}.{frac}")
            }
        }
        'e' => scientific(a, single, spec.precision.unwrap_or(6), upper),
        _ => {
            // `%g`: the precision counts significant digits; small and large magnitudes
            // go scientific.
            let p = spec.precision.unwrap_or(6).max(1);
            let exp = if a == 0.0 {
                0
            } else {
                let (digits, point) = shortest_digits(a, single);
                round_half_up(&digits, point, p as i32).1 - 1
            };
            if a != 0.0 && (exp < -4 || exp >= p as i32) {
                scientific(a, single, p - 1, upper)
            } else {
                let decimals = (p as i32 - 1 - exp).max(0) as usize;
                let (int, frac) = fixed(a, single, decimals);
                let int = grouped(int);
                if decimals == 0 {
                    int
                } else {
                    format!("{int}.{frac}")
                }
            }
        }
    };
    number(negative, body, spec)
}

fn format_int(v: i64, bits: u32, spec: &Spec) -> String {
    match spec.conversion {
        'd' => {
            let digits = v.unsigned_abs().to_string();
            let digits = if spec.flags.contains(',') {
                group(&digits)
            } else {
                digits
            };
            number(v < 0, digits, spec)
        }
        c => {
            // Java shows a negative number as the unsigned value of its own width.
            let u = if bits >= 64 {
                v as u64
            } else {
                (v as u64) & ((1u64 << bits) - 1)
            };
            let (mut body, prefix) = match c {
                'o' => (format!("{u:o}"), "0"),
                'x' => (format!("{u:x}"), "0x"),
                _ => (format!("{u:X}"), "0X"),
            };
            if spec.flags.contains('#') {
                body = format!("{prefix}{body}");
            }
            if spec.flags.contains('0') {
                if let Some(w) = spec.width {
                    let n = body.chars().count();
                    if w > n {
                        body = "0".repeat(w - n) + &body;
                    }
                }
            }
            pad(body, spec)
        }
    }
}

fn format_one(spec: &Spec, v: &Value) -> Result<String> {
    let c = spec.conversion;
    let upper = |s: String| {
        if c.is_ascii_uppercase() {
            s.to_uppercase()
        } else {
            s
        }
    };
    // Java cuts at a UTF-16 unit; a character is kept whole or dropped.
    let truncate = |s: String| match spec.precision {
        Some(p) => {
            let mut units = 0;
            s.chars()
                .take_while(|c| {
                    units += c.len_utf16();
                    units <= p
                })
                .collect()
        }
        None => s,
    };
    // Java prints a NULL as the text "null" whatever the conversion, cut to the precision.
    if matches!(v, Value::Null) && !matches!(c, 'b' | 'B') {
        return Ok(pad(upper(truncate("null".into())), spec));
    }
    Ok(match c.to_ascii_lowercase() {
        's' => pad(upper(truncate(v.text())), spec),
        'b' => {
            let b = match v {
                Value::Null => false,
                Value::Bool(b) => *b,
                _ => true,
            };
            pad(upper(truncate(b.to_string())), spec)
        }
        'c' => match v {
            Value::Null => pad(upper("null".into()), spec),
            Value::Int(x, bits) if *bits <= 32 => {
                let ch = u32::try_from(*x)
                    .ok()
                    .and_then(char::from_u32)
                    .ok_or_else(|| java_error(format!("Code point = 0x{:x}", *x as u32)))?;
                pad(upper(ch.to_string()), spec)
            }
            other => return Err(mismatch(c, other)),
        },
        'd' | 'o' | 'x' => match v {
            Value::Null => pad(upper("null".into()), spec),
            Value::Int(x, bits) => format_int(*x, *bits, spec),
            other => return Err(mismatch(c, other)),
        },
        'e' | 'f' | 'g' => match v {
            Value::Null => pad(upper("null".into()), spec),
            Value::Float(x, single) => format_float(*x, *single, spec),
            other => return Err(mismatch(c, other)),
        },
        'h' => match v {
            Value::Null => pad(upper("null".into()), spec),
            // Java's hash codes of Spark's values are not reproduced.
            _ => {
                return Err(FerroError::Unsupported(
                    "format_string: %h of a value is not supported".into(),
                ))
            }
        },
        _ => unreachable_conversion(c)?,
    })
}

fn unreachable_conversion(c: char) -> Result<String> {
    Err(java_error(format!("Conversion = '{c}'")))
}

fn format_row(pieces: &[Piece], values: &[Value]) -> Result<String> {
    let mut out = String::new();
    let mut ordinary = 0;
    let mut last: Option<usize> = None;
    for p in pieces {
        let spec = match p {
            Piece::Text(t) => {
                out.push_str(t);
                continue;
            }
            Piece::Spec(s) => s,
        };
        match spec.conversion {
            '%' => {
                out.push_str(&pad("%".into(), spec));
                continue;
            }
            'n' => {
                out.push('\n');
                continue;
            }
            _ => {}
        }
        let at = match spec.index {
            Some(0) => last,
            Some(k) => Some(k - 1),
            None => {
                ordinary += 1;
                Some(ordinary - 1)
            }
        };
        let value = at
            .and_then(|k| values.get(k))
            .ok_or_else(|| java_error(format!("Format specifier '{}'", spec.written)))?;
        last = at;
        out.push_str(&format_one(spec, value)?);
    }
    Ok(out)
}

/// The values of argument `i` as Java objects.
fn values_of(a: &ArrayRef) -> Result<Vec<Value>> {
    let n = a.len();
    let get = |i: usize| -> Value {
        if a.is_null(i) {
            return Value::Null;
        }
        match a.data_type() {
            DataType::Int8 => Value::Int(a.as_primitive::<Int8Type>().value(i) as i64, 8),
            DataType::Int16 => Value::Int(a.as_primitive::<Int16Type>().value(i) as i64, 16),
            DataType::Int32 => Value::Int(a.as_primitive::<Int32Type>().value(i) as i64, 32),
            DataType::Date32 => Value::Int(a.as_primitive::<Date32Type>().value(i) as i64, 32),
            DataType::Int64 => Value::Int(a.as_primitive::<Int64Type>().value(i), 64),
            DataType::Timestamp(TimeUnit::Microsecond, _) => {
                Value::Int(a.as_primitive::<TimestampMicrosecondType>().value(i), 64)
            }
            DataType::Float32 => {
                Value::Float(a.as_primitive::<Float32Type>().value(i) as f64, true)
            }
            DataType::Float64 => Value::Float(a.as_primitive::<Float64Type>().value(i), false),
            DataType::Decimal128(_, s) => {
                Value::Decimal(a.as_primitive::<Decimal128Type>().value(i), *s)
            }
            DataType::Boolean => Value::Bool(a.as_boolean().value(i)),
            _ => Value::Str(a.as_string::<i32>().value(i).to_string()),
        }
    };
    Ok((0..n).map(get).collect())
}

/// Evaluates `format_string` over a batch.
pub(crate) fn format_string(args: &Args) -> Result<ArrayRef> {
    let n = args.rows();
    let fmt = args.str(0)?;
    let cols: Vec<(Vec<Value>, bool)> = (1..args.len())
        .map(|i| Ok((values_of(&args.full(i)?)?, args.is_scalar(i))))
        .collect::<Result<_>>()?;
    let mut cache = LastCompiled::new(compile);
    let mut out = Vec::with_capacity(n);
    let mut row = Vec::with_capacity(cols.len());
    for i in 0..n {
        let Some(f) = fmt.get(i) else {
            out.push(None);
            continue;
        };
        row.clear();
        row.extend(cols.iter().map(|(v, scalar)| {
            let k = if *scalar { 0 } else { i };
            v.get(k).cloned().unwrap_or(Value::Null)
        }));
        let pieces = cache.get(f)?;
        out.push(Some(format_row(pieces, &row)?));
    }
    Ok(Arc::new(StringArray::from(out)))
}

/// Binds `format_string` / `printf`: the format as text, then the values as Spark hands them
/// to Java (numbers, booleans, DECIMALs, dates and timestamps as they are; anything else as
/// its text).
pub(crate) fn bind(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    if args.is_empty() {
        return Err(FerroError::Analysis(format!(
            "[WRONG_NUM_ARGS.WITHOUT_SUGGESTION] The `{}` requires > 0 parameters but the actual number is 0. Please, refer to 'https://spark.apache.org/docs/latest/sql-ref-functions.html' for a fix. SQLSTATE: 42605",
            call.name
        )));
    }
    let mut bound = Vec::with_capacity(args.len());
    for (i, a) in args.into_iter().enumerate() {
        let t = spark_equivalent(&a.data_type());
        let keep = i > 0
            && matches!(
                t,
                DataType::Int8
                    | DataType::Int16
                    | DataType::Int32
                    | DataType::Int64
                    | DataType::Float32
                    | DataType::Float64
                    | DataType::Decimal128(..)
                    | DataType::Boolean
                    | DataType::Date32
                    | DataType::Timestamp(TimeUnit::Microsecond, _)
            );
        bound.push(if keep {
            a
        } else if i > 0 && t == DataType::Null {
            crate::bind::cast_to(a, &DataType::Utf8)
        } else {
            call.string_arg(i, a)?
        });
    }
    Ok(Bound::Done(call.function(
        ScalarFunction::Text(TextFn::FormatString),
        bound,
        DataType::Utf8,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fmt(f: &str, values: &[Value]) -> String {
        format_row(&compile(f).expect("compile"), values).expect("format")
    }

    #[test]
    fn java_conversions() {
        use Value::*;
        assert_eq!(
            fmt(
                "%-5s|%05d|%+d|%,d",
                &[Str("ab".into()), Int(42, 32), Int(7, 32), Int(1234567, 32)]
            ),
            "ab   |00042|+7|1,234,567"
        );
        assert_eq!(fmt("%2$s %1$s", &[Str("a".into()), Str("b".into())]), "b a");
        assert_eq!(
            fmt("%x %X %o", &[Int(-1, 32), Int(255, 64), Int(8, 32)]),
            "ffffffff FF 10"
        );
        assert_eq!(
            fmt(
                "%.1f %.2f %f",
                &[Float(0.25, false), Float(0.125, false), Float(1.5, false)]
            ),
            "0.3 0.13 1.500000"
        );
        assert_eq!(
            fmt("%e|%10.3e", &[Float(1234.5, false), Float(0.00012, false)]),
            "1.234500e+03| 1.200e-04"
        );
        assert_eq!(
            fmt("%g %g", &[Float(0.0001, false), Float(1234567.0, false)]),
            "0.000100000 1.23457e+06"
        );
        assert_eq!(fmt("%s %d %b %%", &[Null, Null, Null]), "null null false %");
        assert_eq!(
            fmt("%.2f|%08.3f|%-3s|", &[Null, Null, Str("😀".into())]),
            "nu|     nul|😀 |"
        );
        assert_eq!(fmt("%s %c", &[Float(2.0, false), Int(97, 32)]), "2.0 a");
        assert_eq!(fmt("%s", &[Decimal(150, 2)]), "1.50");
    }

    #[test]
    fn java_errors() {
        let f = compile("%f").expect("compile");
        let e = format_row(&f, &[Value::Decimal(1, 0)]).expect_err("decimal");
        assert!(e
            .to_string()
            .contains("f != org.apache.spark.sql.types.Decimal"));
        let f = compile("%s").expect("compile");
        let e = format_row(&f, &[]).expect_err("missing");
        assert!(e.to_string().contains("Format specifier '%s'"));
    }
}
