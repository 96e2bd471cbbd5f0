//! Bytes and their text forms: `hex`, `unhex`, `to_binary` (`hex`, `utf-8`, `base64`),
//! `encode` / `decode` (UTF-8, US-ASCII, ISO-8859-1), `base64` / `unbase64`, and `elt`, as
//! Spark computes them (`hex` of an integer is its two's complement in upper-case digits;
//! `unhex` of text that is not hex is NULL; a character a charset cannot hold is Spark 4's
//! `MALFORMED_CHARACTER_CODING`).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, BinaryArray, StringArray};
use arrow_schema::DataType;
use ferrospark_common::{FerroError, Result};

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
    /// `encode(s, charset, replace)` with a constant charset; `replace` writes `?` for a
    /// character the charset cannot hold (Spark's legacy coding) instead of raising
    Encode(Charset, bool),
    /// `decode(b, charset, replace)`; `replace` reads a malformed byte as U+FFFD
    Decode(Charset, bool),
    /// `base64(b)`
    Base64,
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

/// Character sets of `encode` / `decode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Charset {
    /// UTF-8
    Utf8,
    /// US-ASCII: other characters become `?`
    Ascii,
    /// ISO-8859-1: characters past U+00FF become `?`
    Latin1,
}

impl BinaryFn {
    /// Spark's name.
    pub fn name(self) -> &'static str {
        match self {
            BinaryFn::HexNumber | BinaryFn::HexBytes => "hex",
            BinaryFn::Unhex => "unhex",
            BinaryFn::ToBinary(_) => "to_binary",
            BinaryFn::Encode(..) => "encode",
            BinaryFn::Decode(..) => "decode",
            BinaryFn::Base64 => "base64",
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
            BinaryFn::ToBinary(form) => {
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
                        TextForm::Base64 => base64_decode(t),
                    };
                    match bytes {
                        Some(b) => out.push(Some(b)),
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
            BinaryFn::Encode(cs, replace) => {
                let s = args.str(0)?;
                let out = (0..n)
                    .map(|i| s.get(i).map(|t| encode(t, cs, replace)).transpose())
                    .collect::<Result<Vec<_>>>()?;
                Arc::new(BinaryArray::from_iter(out))
            }
            BinaryFn::Decode(cs, replace) => {
                let a = args.full(0)?;
                let out = bytes_of(&a)?
                    .into_iter()
                    .map(|b| b.map(|b| decode(&b, cs, replace)).transpose())
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

fn charset_name(cs: Charset) -> &'static str {
    match cs {
        Charset::Utf8 => "UTF-8",
        Charset::Ascii => "US-ASCII",
        Charset::Latin1 => "ISO-8859-1",
    }
}

/// Spark 4 reports a character its charset cannot hold (its legacy mode wrote `?`).
fn malformed(what: &str, cs: Charset) -> FerroError {
    FerroError::Arithmetic(format!(
        "[MALFORMED_CHARACTER_CODING] Invalid value found when performing `{what}` with {} SQLSTATE: 22000",
        charset_name(cs)
    ))
}

fn encode(t: &str, cs: Charset, replace: bool) -> Result<Vec<u8>> {
    let limit = match cs {
        Charset::Utf8 => return Ok(t.as_bytes().to_vec()),
        Charset::Ascii => 128,
        Charset::Latin1 => 256,
    };
    t.chars()
        .map(|c| {
            if (c as u32) < limit {
                Ok(c as u32 as u8)
            } else if replace {
                Ok(b'?')
            } else {
                Err(malformed("encode", cs))
            }
        })
        .collect()
}

fn decode(b: &[u8], cs: Charset, replace: bool) -> Result<String> {
    match cs {
        Charset::Utf8 if replace => Ok(String::from_utf8_lossy(b).into_owned()),
        Charset::Utf8 => String::from_utf8(b.to_vec()).map_err(|_| malformed("decode", cs)),
        Charset::Ascii => b
            .iter()
            .map(|&x| {
                if x < 128 {
                    Ok(x as char)
                } else if replace {
                    Ok('\u{FFFD}')
                } else {
                    Err(malformed("decode", cs))
                }
            })
            .collect(),
        Charset::Latin1 => Ok(b.iter().map(|&x| x as char).collect()),
    }
}

fn constant_text(call: &Call<'_, '_>, a: &PhysicalExpr, what: &str) -> Result<String> {
    let text = match a {
        PhysicalExpr::Literal(l) if !l.is_null() => l
            .array()
            .as_string_opt::<i32>()
            .map(|s| s.value(0).to_string()),
        _ => None,
    };
    match text {
        Some(t) => Ok(t),
        None => Err(FerroError::Unsupported(format!(
            "{}: the {what} must be a constant in \"{}\"",
            call.name, call.expr
        ))),
    }
}

fn charset(call: &Call<'_, '_>, a: &PhysicalExpr) -> Result<Charset> {
    let name = constant_text(call, a, "charset")?;
    match name.to_ascii_uppercase().replace('_', "-").as_str() {
        "UTF-8" | "UTF8" => Ok(Charset::Utf8),
        "US-ASCII" | "ASCII" => Ok(Charset::Ascii),
        "ISO-8859-1" | "LATIN1" => Ok(Charset::Latin1),
        _ => Err(FerroError::Analysis(format!(
            "[INVALID_PARAMETER_VALUE.CHARSET] The value of parameter(s) `charset` in `{}` is invalid: expects one of the charsets 'US-ASCII', 'ISO-8859-1', 'UTF-8', but got {name}. SQLSTATE: 22023",
            call.name
        ))),
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
        "to_binary" => {
            call.arity(&args, 1, 2)?;
            let form = match args.get(1) {
                None => TextForm::Hex,
                Some(a) => match constant_text(call, a, "format")?.to_ascii_lowercase().as_str() {
                    "hex" => TextForm::Hex,
                    "utf-8" | "utf8" => TextForm::Utf8,
                    "base64" => TextForm::Base64,
                    other => {
                        return Err(FerroError::Analysis(format!(
                            "[INVALID_PARAMETER_VALUE.BINARY_FORMAT] The value of parameter(s) `format` in `to_binary` is invalid: expects one of binary formats 'base64', 'hex', 'utf-8', but got '{other}'. SQLSTATE: 22023"
                        )))
                    }
                },
            };
            let s = call.string_arg(0, args[0].clone())?;
            call.function(f(BinaryFn::ToBinary(form)), vec![s], DataType::Binary)
        }
        "encode" => {
            call.arity(&args, 2, 2)?;
            let cs = charset(call, &args[1])?;
            let s = call.string_arg(0, args[0].clone())?;
            call.function(
                f(BinaryFn::Encode(cs, call.ctx.legacy_coding)),
                vec![s],
                DataType::Binary,
            )
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
            let cs = charset(call, &args[1])?;
            let t = spark_equivalent(&args[0].data_type());
            let b = if matches!(t, DataType::Binary) {
                args[0].clone()
            } else {
                call.string_arg(0, args[0].clone())?
            };
            call.function(
                f(BinaryFn::Decode(cs, call.ctx.legacy_coding)),
                vec![b],
                DataType::Utf8,
            )
        }
        "base64" => {
            call.arity(&args, 1, 1)?;
            let t = spark_equivalent(&args[0].data_type());
            let b = if matches!(t, DataType::Binary) {
                args[0].clone()
            } else {
                call.string_arg(0, args[0].clone())?
            };
            call.function(f(BinaryFn::Base64), vec![b], DataType::Utf8)
        }
        "unbase64" => {
            call.arity(&args, 1, 1)?;
            let s = call.string_arg(0, args[0].clone())?;
            call.function(
                f(BinaryFn::ToBinary(TextForm::Base64)),
                vec![s],
                DataType::Binary,
            )
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
