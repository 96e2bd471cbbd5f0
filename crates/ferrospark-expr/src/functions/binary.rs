//! Bytes and their text forms: `hex`, `unhex`, `to_binary` (`hex`, `utf-8`, `base64`),
//! `encode` / `decode` (the charsets of [`super::charset`], constant or one per row),
//! `base64` / `unbase64`, and `elt`, as Spark computes them (`hex` of an integer is its two's
//! complement in upper-case digits; `unhex` of text that is not hex is NULL; base64 text is
//! checked as Spark's `to_binary` checks it).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, BinaryArray, StringArray};
use arrow_schema::DataType;
use ferrospark_common::{FerroError, Result};

use super::charset::{decode, encode, Charset};
use super::{Args, Bound, Call, ScalarFunction};
use crate::physical::PhysicalExpr;
use crate::types::{is_integral, spark_equivalent};

/// The byte functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinaryFn {
    /// `hex(x)` of an integer (BIGINT bound)
    HexNumber,
    /// `hex(x)` of text or bytes (bytes bound)
    HexBytes,
    /// `unhex(s)`
    Unhex,
    /// `to_binary(s, fmt)` with a constant format
    ToBinary(TextForm),
    /// `try_to_binary(s, fmt)`: NULL for malformed text
    TryToBinary(TextForm),
    /// `unbase64(s)`: base64 as Java's lenient decoder reads it
    Unbase64,
    /// `encode(s, charset)`
    Encode(Coding),
    /// `decode(b, charset)`
    Decode(Coding),
    /// `base64(b)`
    Base64,
    /// `concat(b1, b2, ...)` of bytes: bytes, NULL when one is
    ConcatBytes,
    /// `to_base32(b)`: RFC 4648 base32, padded
    ToBase32,
    /// `from_base32(s)`: either case, characters outside the alphabet skipped
    FromBase32,
    /// `elt(n, s1, s2, ...)`: the n-th string (1-based)
    Elt {
        /// an index out of range is an error (else NULL)
        ansi: bool,
    },
}

/// How `to_binary` reads text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextForm {
    /// hexadecimal digits
    Hex,
    /// the text's UTF-8 bytes
    Utf8,
    /// base64
    Base64,
}

/// How `encode` / `decode` pick and apply their charset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Coding {
    /// The constant charset; `None` reads one per row from the second argument.
    pub charset: Option<Charset>,
    /// `spark.sql.legacy.codingErrorAction`: write `?` / read U+FFFD for what the charset
    /// cannot code instead of raising
    pub replace: bool,
    /// `spark.sql.legacy.javaCharsets`: Java's other charset names are accepted
    pub java_names: bool,
}

impl BinaryFn {
    /// Spark's name.
    pub fn name(self) -> &'static str {
        match self {
            BinaryFn::HexNumber | BinaryFn::HexBytes => "hex",
            BinaryFn::Unhex => "unhex",
            BinaryFn::ToBinary(_) => "to_binary",
            BinaryFn::TryToBinary(_) => "try_to_binary",
            BinaryFn::Unbase64 => "unbase64",
            BinaryFn::Encode(..) => "encode",
            BinaryFn::Decode(..) => "decode",
            BinaryFn::Base64 => "base64",
            BinaryFn::ConcatBytes => "concat",
            BinaryFn::ToBase32 => "to_base32",
            BinaryFn::FromBase32 => "from_base32",
            BinaryFn::Elt { .. } => "elt",
        }
    }

    pub(crate) fn evaluate(self, args: &Args) -> Result<ArrayRef> {
        let n = args.rows();
        Ok(match self {
            BinaryFn::HexNumber => {
                let a = args.full(0)?;
                let v = a.as_primitive::<Int64Type>();
                let out: StringArray = v
                    .iter()
                    .map(|x| x.map(|x| format!("{:X}", x as u64)))
                    .collect();
                Arc::new(out)
            }
            BinaryFn::HexBytes => {
                let a = args.full(0)?;
                let out: StringArray = bytes_of(&a)?
                    .into_iter()
                    .map(|b| b.map(|b| b.iter().map(|x| format!("{x:02X}")).collect::<String>()))
                    .collect();
                Arc::new(out)
            }
            BinaryFn::Unhex => {
                let s = args.str(0)?;
                let out: BinaryArray = (0..n).map(|i| s.get(i).and_then(unhex)).collect();
                Arc::new(out)
            }
            BinaryFn::ToBinary(form) | BinaryFn::TryToBinary(form) => {
                let s = args.str(0)?;
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    let Some(t) = s.get(i) else {
                        out.push(None);
                        continue;
                    };
                    let bytes = match form {
                        TextForm::Utf8 => Some(t.as_bytes().to_vec()),
                        TextForm::Hex => unhex(t),
                        TextForm::Base64 => valid_base64(t).then(|| base64_decode(t)).flatten(),
                    };
                    match bytes {
                        Some(b) => out.push(Some(b)),
                        None if matches!(self, BinaryFn::TryToBinary(_)) => out.push(None),
                        None => {
                            let fmt = match form {
                                TextForm::Hex => "HEX",
                                TextForm::Utf8 => "UTF-8",
                                TextForm::Base64 => "BASE64",
                            };
                            return Err(FerroError::Arithmetic(format!(
                                "[CONVERSION_INVALID_INPUT] The value '{t}' ({fmt}) cannot be converted to BINARY because it is malformed. Correct the value as per the syntax, or change its format. Use 'try_to_binary' to tolerate malformed input and return NULL instead. SQLSTATE: 22018"
                            )));
                        }
                    }
                }
                Arc::new(BinaryArray::from_iter(out))
            }
            BinaryFn::Unbase64 => {
                let s = args.str(0)?;
                let out: BinaryArray = (0..n).map(|i| s.get(i).and_then(base64_decode)).collect();
                Arc::new(out)
            }
            BinaryFn::Encode(coding) => {
                let s = args.str(0)?;
                let names = charsets_of(args, coding, "encode")?;
                let out = (0..n)
                    .map(|i| match (s.get(i), names[i.min(names.len() - 1)]) {
                        (Some(t), Some(cs)) => encode(t, cs, coding.replace).map(Some),
                        _ => Ok(None),
                    })
                    .collect::<Result<Vec<_>>>()?;
                Arc::new(BinaryArray::from_iter(out))
            }
            BinaryFn::Decode(coding) => {
                let a = args.full(0)?;
                let names = charsets_of(args, coding, "decode")?;
                let out = bytes_of(&a)?
                    .into_iter()
                    .enumerate()
                    .map(|(i, b)| match (b, names[i.min(names.len() - 1)]) {
                        (Some(b), Some(cs)) => decode(&b, cs, coding.replace).map(Some),
                        _ => Ok(None),
                    })
                    .collect::<Result<Vec<_>>>()?;
                Arc::new(StringArray::from(out))
            }
            BinaryFn::Base64 => {
                let a = args.full(0)?;
                let out: StringArray = bytes_of(&a)?
                    .into_iter()
                    .map(|b| b.map(|b| base64_encode(&b)))
                    .collect();
                Arc::new(out)
            }
            BinaryFn::ConcatBytes => {
                let cols = (0..args.len())
                    .map(|i| args.full(i))
                    .collect::<Result<Vec<_>>>()?;
                let cols: Vec<&BinaryArray> = cols.iter().map(|c| c.as_binary::<i32>()).collect();
                let mut out = arrow_array::builder::BinaryBuilder::with_capacity(n, n * 8);
                let mut buf = Vec::new();
                for i in 0..n {
                    if cols.iter().any(|c| c.is_null(i)) {
                        out.append_null();
                        continue;
                    }
                    buf.clear();
                    for c in &cols {
                        buf.extend_from_slice(c.value(i));
                    }
                    out.append_value(&buf);
                }
                Arc::new(out.finish())
            }
            BinaryFn::ToBase32 => {
                let a = args.full(0)?;
                let out: StringArray = bytes_of(&a)?
                    .into_iter()
                    .map(|b| b.map(|b| base32_encode(&b)))
                    .collect();
                Arc::new(out)
            }
            BinaryFn::FromBase32 => {
                let s = args.str(0)?;
                let out: BinaryArray = (0..n).map(|i| s.get(i).map(base32_decode)).collect();
                Arc::new(out)
            }
            BinaryFn::Elt { ansi } => {
                let idx = args.full(0)?;
                let idx = idx.as_primitive::<arrow_array::types::Int32Type>();
                let strings: Vec<ArrayRef> = (1..args.len())
                    .map(|i| args.full(i))
                    .collect::<Result<_>>()?;
                let mut out = Vec::with_capacity(n);
                for r in 0..n {
                    if idx.is_null(r) {
                        out.push(None);
                        continue;
                    }
                    let k = idx.value(r);
                    if k < 1 || k as usize > strings.len() {
                        if ansi {
                            return Err(FerroError::Arithmetic(format!(
                                "[INVALID_ARRAY_INDEX] The index {k} is out of bounds. The array has {} elements. Use the SQL function `get()` to tolerate accessing element at invalid index and return NULL instead. SQLSTATE: 22003",
                                strings.len()
                            )));
                        }
                        out.push(None);
                        continue;
                    }
                    let col = strings[k as usize - 1].as_string::<i32>();
                    out.push(col.is_valid(r).then(|| col.value(r).to_string()));
                }
                Arc::new(StringArray::from(out))
            }
        })
    }
}

fn bytes_of(a: &ArrayRef) -> Result<Vec<Option<Vec<u8>>>> {
    if let Some(b) = a.as_binary_opt::<i32>() {
        return Ok(b.iter().map(|x| x.map(<[u8]>::to_vec)).collect());
    }
    if let Some(s) = a.as_string_opt::<i32>() {
        return Ok(s.iter().map(|x| x.map(|t| t.as_bytes().to_vec())).collect());
    }
    Err(FerroError::Internal(format!("bytes of {}", a.data_type())))
}

/// Hex digits to bytes (an odd count reads a leading 0, as Spark's); `None` for other text.
fn unhex(t: &str) -> Option<Vec<u8>> {
    let digits: Vec<u8> = t
        .bytes()
        .map(|c| (c as char).to_digit(16).map(|d| d as u8))
        .collect::<Option<_>>()?;
    let mut out = Vec::with_capacity(digits.len().div_ceil(2));
    let mut it = digits.iter();
    if digits.len() % 2 == 1 {
        out.push(*it.next()?);
    }
    while let (Some(h), Some(l)) = (it.next(), it.next()) {
        out.push(h * 16 + l);
    }
    Some(out)
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn base64_encode(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len().div_ceil(3) * 4);
    for chunk in b.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &x)| acc | (x as u32) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn base64_decode(t: &str) -> Option<Vec<u8>> {
    let clean: Vec<u8> = t.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
    let body = clean
        .strip_suffix(b"==")
        .or_else(|| clean.strip_suffix(b"="))
        .unwrap_or(&clean);
    let mut bits = 0u32;
    let mut count = 0;
    let mut out = Vec::with_capacity(body.len() * 3 / 4);
    for &c in body {
        let v = B64.iter().position(|&x| x == c)? as u32;
        bits = bits << 6 | v;
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push((bits >> count) as u8);
            bits &= (1 << count) - 1;
        }
    }
    Some(out)
}

/// The charset of each row (one entry when it is a constant); NULL names read as `None`.
fn charsets_of(args: &Args, coding: Coding, function: &str) -> Result<Vec<Option<Charset>>> {
    if let Some(cs) = coding.charset {
        return Ok(vec![Some(cs)]);
    }
    let names = args.str(1)?;
    let rows = if args.is_scalar(1) { 1 } else { args.rows() };
    let mut last: Option<(&str, Charset)> = None;
    (0..rows.max(1))
        .map(|i| {
            let Some(name) = names.get(i) else {
                return Ok(None);
            };
            if let Some((n, cs)) = last.filter(|(n, _)| *n == name) {
                let _ = n;
                return Ok(Some(cs));
            }
            let cs = Charset::parse(name, coding.java_names, function)?;
            last = Some((name, cs));
            Ok(Some(cs))
        })
        .collect()
}

/// Spark's check of base64 text before `to_binary` decodes it (RFC 4648 with whitespace
/// allowed between the characters): padding ends the text, with nothing after it (not even
/// whitespace) and completes a group of four; without padding a group may be cut short, but
/// not to one character.
fn valid_base64(t: &str) -> bool {
    let mut chars = 0usize;
    let mut pads = 0usize;
    for c in t.chars() {
        if c == '=' {
            pads += 1;
        } else if pads > 0 {
            return false;
        } else if c.is_ascii_alphanumeric() || c == '+' || c == '/' {
            chars += 1;
        } else if !c.is_ascii_whitespace() {
            return false;
        }
    }
    match pads {
        0 => chars % 4 != 1,
        1 | 2 => (chars + pads).is_multiple_of(4),
        _ => false,
    }
}

/// The value of a foldable argument (no column, lambda variable or user function), computed
/// now on one row; `None` when it depends on the rows.
pub(crate) fn fold_argument(a: &PhysicalExpr) -> Result<Option<ArrayRef>> {
    let mut rows = false;
    a.walk(&mut |n| {
        rows |= matches!(
            n,
            PhysicalExpr::Column { .. }
                | PhysicalExpr::LambdaVariable { .. }
                | PhysicalExpr::Lambda { .. }
                | PhysicalExpr::Udf { .. }
        ) || matches!(n, PhysicalExpr::Function { func, .. } if !func.deterministic());
    });
    if rows {
        return Ok(None);
    }
    let schema = Arc::new(arrow_schema::Schema::empty());
    let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(1));
    let batch = arrow_array::RecordBatch::try_new_with_options(schema, vec![], &options)?;
    Ok(Some(crate::eval::evaluate(a, &batch)?.into_array(1)?))
}

/// A foldable argument's value as text (`None` for NULL); a non-foldable one is Spark's
/// `DATATYPE_MISMATCH.NON_FOLDABLE_INPUT`.
pub(crate) fn foldable_text(
    call: &Call<'_, '_>,
    a: &PhysicalExpr,
    input: &str,
) -> Result<Option<String>> {
    let Some(value) = fold_argument(a)? else {
        return Err(FerroError::Analysis(format!(
            "[DATATYPE_MISMATCH.NON_FOLDABLE_INPUT] Cannot resolve \"{}\" due to data type mismatch: the input `{input}` should be a foldable \"STRING\" expression; however, got \"{a}\". SQLSTATE: 42K09",
            call.expr
        )));
    };
    let text = arrow_cast::cast(&value, &DataType::Utf8)?;
    let text = text.as_string::<i32>();
    Ok(text.is_valid(0).then(|| text.value(0).to_string()))
}

/// The coding of `encode` / `decode`: a foldable charset is checked now, a column's per row.
fn coding(call: &Call<'_, '_>, a: &PhysicalExpr) -> Result<(Coding, Option<PhysicalExpr>)> {
    let mut coding = Coding {
        charset: None,
        replace: call.ctx.legacy_coding,
        java_names: call.ctx.legacy_charsets,
    };
    match fold_argument(a)? {
        Some(v) => {
            let v = arrow_cast::cast(&v, &DataType::Utf8)?;
            let v = v.as_string::<i32>();
            if v.is_null(0) {
                return Ok((
                    coding,
                    Some(PhysicalExpr::Literal(crate::expr::Literal::null(
                        &DataType::Utf8,
                    ))),
                ));
            }
            coding.charset = Some(Charset::parse(v.value(0), coding.java_names, call.name)?);
            Ok((coding, None))
        }
        None => Ok((coding, Some(call.string_arg(1, a.clone())?))),
    }
}

/// Binds this family's calls; other names are returned.
pub(crate) fn bind(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    let f = ScalarFunction::Binary;
    let cast = crate::bind::cast_to;
    Ok(Bound::Done(match call.name {
        "hex" => {
            call.arity(&args, 1, 1)?;
            let t = spark_equivalent(&args[0].data_type());
            if is_integral(&t) {
                call.function(
                    f(BinaryFn::HexNumber),
                    vec![cast(args[0].clone(), &DataType::Int64)],
                    DataType::Utf8,
                )
            } else if matches!(t, DataType::Binary | DataType::Utf8) {
                call.function(f(BinaryFn::HexBytes), args, DataType::Utf8)
            } else if t == DataType::Null {
                call.function(
                    f(BinaryFn::HexNumber),
                    vec![cast(args[0].clone(), &DataType::Int64)],
                    DataType::Utf8,
                )
            } else {
                return Err(call.wrong_type(
                    0,
                    &args[0],
                    "(\"BIGINT\" or \"BINARY\" or \"STRING\") type",
                ));
            }
        }
        "unhex" => {
            call.arity(&args, 1, 1)?;
            let s = call.string_arg(0, args[0].clone())?;
            call.function(f(BinaryFn::Unhex), vec![s], DataType::Binary)
        }
        // `try_to_binary` also gives NULL for a format it does not know.
        "to_binary" | "try_to_binary" => {
            call.arity(&args, 1, 2)?;
            let tolerant = call.name == "try_to_binary";
            let form = match args.get(1) {
                None => Some(TextForm::Hex),
                Some(a) => match foldable_text(call, a, "fmt")? {
                    None => None,
                    Some(t) => match t.to_ascii_lowercase().as_str() {
                        "hex" => Some(TextForm::Hex),
                        "utf-8" | "utf8" => Some(TextForm::Utf8),
                        "base64" => Some(TextForm::Base64),
                        _ if tolerant => None,
                        other => {
                            return Err(FerroError::Analysis(format!(
                                "[DATATYPE_MISMATCH.INVALID_ARG_VALUE] Cannot resolve \"{}\" due to data type mismatch: The fmt value must to be a case-insensitive \"STRING\" literal of 'hex', 'utf-8', 'utf8', or 'base64', but got '{other}'. SQLSTATE: 42K09",
                                call.expr
                            )))
                        }
                    },
                },
            };
            let s = call.string_arg(0, args[0].clone())?;
            match form {
                Some(form) if tolerant => {
                    call.function(f(BinaryFn::TryToBinary(form)), vec![s], DataType::Binary)
                }
                Some(form) => call.function(f(BinaryFn::ToBinary(form)), vec![s], DataType::Binary),
                // A NULL format gives NULL.
                None => PhysicalExpr::Literal(crate::expr::Literal::null(&DataType::Binary)),
            }
        }
        "encode" => {
            call.arity(&args, 2, 2)?;
            let (coding, names) = coding(call, &args[1])?;
            let s = call.string_arg(0, args[0].clone())?;
            let args = std::iter::once(s).chain(names).collect();
            call.function(f(BinaryFn::Encode(coding)), args, DataType::Binary)
        }
        // `decode(expr, search, result [, search, result]* [, default])`: Oracle's CASE, the
        // search values compared null-safely.
        "decode" if args.len() != 2 => {
            call.arity(&args, 2, usize::MAX)?;
            let mut it = args.into_iter();
            let Some(subject) = it.next() else {
                return Ok(Bound::NotMine(Vec::new()));
            };
            let rest: Vec<PhysicalExpr> = it.collect();
            let mut branches = Vec::new();
            let mut pairs = rest.chunks_exact(2);
            for pair in pairs.by_ref() {
                let t = call.common_type(&[&subject, &pair[0]])?;
                let eq = PhysicalExpr::Compare {
                    op: crate::expr::BinaryOp::EqNullSafe,
                    left: Box::new(crate::bind::cast_to(subject.clone(), &t)),
                    right: Box::new(crate::bind::cast_to(pair[0].clone(), &t)),
                };
                branches.push((eq, pair[1].clone()));
            }
            let otherwise = pairs.remainder().first().cloned();
            super::case(call, branches, otherwise)?
        }
        "decode" if args.len() == 2 => {
            let (coding, names) = coding(call, &args[1])?;
            let t = spark_equivalent(&args[0].data_type());
            let b = if matches!(t, DataType::Binary) {
                args[0].clone()
            } else {
                call.string_arg(0, args[0].clone())?
            };
            let args = std::iter::once(b).chain(names).collect();
            call.function(f(BinaryFn::Decode(coding)), args, DataType::Utf8)
        }
        // `concat` of bytes only is bytes (any text among them makes it text, bound elsewhere).
        "concat"
            if !args.is_empty()
                && args.iter().all(|a| {
                    matches!(
                        spark_equivalent(&a.data_type()),
                        DataType::Binary | DataType::Null
                    )
                })
                && args
                    .iter()
                    .any(|a| spark_equivalent(&a.data_type()) == DataType::Binary) =>
        {
            let args = args
                .into_iter()
                .map(|a| crate::bind::cast_to(a, &DataType::Binary))
                .collect();
            call.function(f(BinaryFn::ConcatBytes), args, DataType::Binary)
        }
        "base64" | "to_base32" => {
            call.arity(&args, 1, 1)?;
            let t = spark_equivalent(&args[0].data_type());
            let b = if matches!(t, DataType::Binary) {
                args[0].clone()
            } else {
                call.string_arg(0, args[0].clone())?
            };
            let func = if call.name == "base64" {
                BinaryFn::Base64
            } else {
                BinaryFn::ToBase32
            };
            call.function(f(func), vec![b], DataType::Utf8)
        }
        "unbase64" | "from_base32" => {
            call.arity(&args, 1, 1)?;
            let s = call.string_arg(0, args[0].clone())?;
            let func = if call.name == "unbase64" {
                BinaryFn::Unbase64
            } else {
                BinaryFn::FromBase32
            };
            call.function(f(func), vec![s], DataType::Binary)
        }
        "elt" => {
            call.arity(&args, 2, usize::MAX)?;
            let mut v = vec![call.int_arg(0, args[0].clone(), &DataType::Int32)?];
            for (i, a) in args.iter().enumerate().skip(1) {
                v.push(call.string_arg(i, a.clone())?);
            }
            call.function(
                f(BinaryFn::Elt {
                    ansi: call.ctx.ansi,
                }),
                v,
                DataType::Utf8,
            )
        }
        _ => return Ok(Bound::NotMine(args)),
    }))
}

const BASE32_ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// RFC 4648 base32 with `=` padding to a multiple of eight characters.
fn base32_encode(b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len().div_ceil(5) * 8);
    for chunk in b.chunks(5) {
        let mut buf = [0u8; 5];
        buf[..chunk.len()].copy_from_slice(chunk);
        let bits = buf.iter().fold(0u64, |acc, &x| (acc << 8) | u64::from(x));
        let chars = (chunk.len() * 8).div_ceil(5);
        for i in 0..8 {
            if i < chars {
                let v = (bits >> (35 - 5 * i)) & 31;
                out.push(char::from(BASE32_ALPHABET[v as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Base32 text to bytes as commons-codec's `Base32` decodes it for Spark: either case, other
/// characters skipped, `=` ending the text, a partial last byte dropped.
fn base32_decode(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() * 5 / 8);
    let (mut acc, mut bits) = (0u64, 0u32);
    for c in s.bytes() {
        if c == b'=' {
            break;
        }
        let v = match c.to_ascii_uppercase() {
            c @ b'A'..=b'Z' => c - b'A',
            c @ b'2'..=b'7' => c - b'2' + 26,
            _ => continue,
        };
        acc = (acc << 5) | u64::from(v);
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    out
}
