//! String functions with Spark's rules: positions count characters (not bytes) from 1,
//! `trim` strips only spaces, `concat` is NULL when any argument is, `concat_ws` skips NULLs,
//! out-of-range substrings are empty strings rather than NULL.

use std::sync::Arc;

use arrow_array::types::Int32Type;
use arrow_array::ArrayRef;
use arrow_schema::DataType;
use ferrospark_common::Result;

use super::{build_prims, build_str_slices, build_strings, Args, Bound, Call, ScalarFunction};
use crate::physical::PhysicalExpr;

/// A string function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StringFn {
    /// `upper(s)`
    Upper,
    /// `lower(s)`
    Lower,
    /// `length(s)` in characters
    Length,
    /// `concat(a, b, ...)`, `a || b`
    Concat,
    /// `concat_ws(sep, a, b, ...)`
    ConcatWs,
    /// `substring(s, pos[, len])`
    Substring,
    /// `trim(s)` / `btrim(s)`, or `trim(s, chars)`
    Trim,
    /// `ltrim(s[, chars])`
    LTrim,
    /// `rtrim(s[, chars])`
    RTrim,
    /// `lpad(s, len[, pad])`
    LPad,
    /// `rpad(s, len[, pad])`
    RPad,
    /// `replace(s, search[, replacement])`
    Replace,
    /// `instr(s, sub)`: 1-based position, 0 when absent
    Instr,
    /// `locate(sub, s[, pos])`
    Locate,
    /// `initcap(s)`
    InitCap,
    /// `reverse(s)`
    Reverse,
    /// `repeat(s, n)`
    Repeat,
    /// `ascii(s)`
    Ascii,
    /// `translate(s, from, to)`
    Translate,
    /// `octet_length(s)`: UTF-8 bytes
    OctetLength,
    /// `bit_length(s)`: UTF-8 bits
    BitLength,
}

impl StringFn {
    /// Spark's name.
    pub fn name(self) -> &'static str {
        match self {
            StringFn::Upper => "upper",
            StringFn::Lower => "lower",
            StringFn::Length => "length",
            StringFn::Concat => "concat",
            StringFn::ConcatWs => "concat_ws",
            StringFn::Substring => "substring",
            StringFn::Trim => "trim",
            StringFn::LTrim => "ltrim",
            StringFn::RTrim => "rtrim",
            StringFn::LPad => "lpad",
            StringFn::RPad => "rpad",
            StringFn::Replace => "replace",
            StringFn::Instr => "instr",
            StringFn::Locate => "locate",
            StringFn::InitCap => "initcap",
            StringFn::Reverse => "reverse",
            StringFn::Repeat => "repeat",
            StringFn::Ascii => "ascii",
            StringFn::Translate => "translate",
            StringFn::OctetLength => "octet_length",
            StringFn::BitLength => "bit_length",
        }
    }

    pub(crate) fn evaluate(self, a: &Args) -> Result<ArrayRef> {
        let n = a.rows();
        match self {
            StringFn::Upper => map1(a, |s, out| out.push_str(&s.to_uppercase())),
            StringFn::Lower => map1(a, |s, out| out.push_str(&s.to_lowercase())),
            StringFn::OctetLength | StringFn::BitLength => {
                let s = a.str(0)?;
                let k = if self == StringFn::BitLength { 8 } else { 1 };
                build_prims::<Int32Type>(n, |i| Ok(s.get(i).map(|v| (v.len() * k) as i32)))
            }
            StringFn::Length => {
                let s = a.str(0)?;
                build_prims::<Int32Type>(n, |i| Ok(s.get(i).map(|v| v.chars().count() as i32)))
            }
            StringFn::Concat => {
                let views = (0..a.len()).map(|i| a.str(i)).collect::<Result<Vec<_>>>()?;
                build_strings(n, |i, out| {
                    for v in &views {
                        match v.get(i) {
                            Some(s) => out.push_str(s),
                            None => return Ok(false),
                        }
                    }
                    Ok(true)
                })
            }
            StringFn::ConcatWs => {
                let sep = a.str(0)?;
                let views = (1..a.len()).map(|i| a.str(i)).collect::<Result<Vec<_>>>()?;
                build_strings(n, |i, out| {
                    let Some(sep) = sep.get(i) else {
                        return Ok(false);
                    };
                    let mut first = true;
                    for v in &views {
                        if let Some(s) = v.get(i) {
                            if !first {
                                out.push_str(sep);
                            }
                            out.push_str(s);
                            first = false;
                        }
                    }
                    Ok(true)
                })
            }
            StringFn::Substring => {
                let s = a.str(0)?;
                let pos = a.prim::<Int32Type>(1)?;
                let len = if a.len() > 2 {
                    Some(a.prim::<Int32Type>(2)?)
                } else {
                    None
                };
                // A constant length bounds the bytes of an ASCII result.
                let hint = match &len {
                    Some(l) if a.is_scalar(2) => n * l.get(0).unwrap_or(0).clamp(0, 64) as usize,
                    _ => n * 8,
                };
                build_str_slices(n, hint, |i| {
                    let (Some(v), Some(p)) = (s.get(i), pos.get(i)) else {
                        return Ok(None);
                    };
                    let l = match &len {
                        Some(l) => match l.get(i) {
                            Some(l) => l,
                            None => return Ok(None),
                        },
                        None => i32::MAX,
                    };
                    Ok(Some(substring_sql(v, p, l)))
                })
            }
            StringFn::Trim | StringFn::LTrim | StringFn::RTrim => {
                let s = a.str(0)?;
                let chars = if a.len() > 1 { Some(a.str(1)?) } else { None };
                build_strings(n, |i, out| {
                    let Some(v) = s.get(i) else {
                        return Ok(false);
                    };
                    let set = match &chars {
                        Some(c) => match c.get(i) {
                            Some(c) => c,
                            None => return Ok(false),
                        },
                        None => " ",
                    };
                    let strip = |c: char| set.contains(c);
                    out.push_str(match self {
                        StringFn::Trim => v.trim_matches(strip),
                        StringFn::LTrim => v.trim_start_matches(strip),
                        _ => v.trim_end_matches(strip),
                    });
                    Ok(true)
                })
            }
            StringFn::LPad | StringFn::RPad => {
                let s = a.str(0)?;
                let len = a.prim::<Int32Type>(1)?;
                let pad = if a.len() > 2 { Some(a.str(2)?) } else { None };
                build_strings(n, |i, out| {
                    let (Some(v), Some(l)) = (s.get(i), len.get(i)) else {
                        return Ok(false);
                    };
                    let p = match &pad {
                        Some(p) => match p.get(i) {
                            Some(p) => p,
                            None => return Ok(false),
                        },
                        None => " ",
                    };
                    pad_to(v, l, p, self == StringFn::LPad, out);
                    Ok(true)
                })
            }
            StringFn::Replace => {
                let s = a.str(0)?;
                let search = a.str(1)?;
                let rep = if a.len() > 2 { Some(a.str(2)?) } else { None };
                build_strings(n, |i, out| {
                    let (Some(v), Some(f)) = (s.get(i), search.get(i)) else {
                        return Ok(false);
                    };
                    let r = match &rep {
                        Some(r) => match r.get(i) {
                            Some(r) => r,
                            None => return Ok(false),
                        },
                        None => "",
                    };
                    if f.is_empty() {
                        out.push_str(v);
                    } else {
                        out.push_str(&v.replace(f, r));
                    }
                    Ok(true)
                })
            }
            StringFn::Instr => {
                let s = a.str(0)?;
                let sub = a.str(1)?;
                build_prims::<Int32Type>(n, |i| {
                    Ok(match (s.get(i), sub.get(i)) {
                        (Some(v), Some(f)) => Some(char_position(v, f, 0)),
                        _ => None,
                    })
                })
            }
            StringFn::Locate => {
                let sub = a.str(0)?;
                let s = a.str(1)?;
                let pos = if a.len() > 2 {
                    Some(a.prim::<Int32Type>(2)?)
                } else {
                    None
                };
                build_prims::<Int32Type>(n, |i| {
                    let p = match &pos {
                        Some(p) => match p.get(i) {
                            Some(p) => p,
                            // Spark: a NULL start position gives 0, not NULL.
                            None => return Ok(Some(0)),
                        },
                        None => 1,
                    };
                    Ok(match (sub.get(i), s.get(i)) {
                        (Some(f), Some(v)) if p >= 1 => Some(char_position(v, f, p as usize - 1)),
                        (Some(_), Some(_)) => Some(0),
                        _ => None,
                    })
                })
            }
            StringFn::InitCap => map1(a, |s, out| {
                let mut after_space = true;
                for c in s.chars() {
                    if after_space {
                        out.extend(c.to_uppercase());
                    } else {
                        out.extend(c.to_lowercase());
                    }
                    after_space = c == ' ';
                }
            }),
            StringFn::Reverse => map1(a, |s, out| out.extend(s.chars().rev())),
            StringFn::Repeat => {
                let s = a.str(0)?;
                let times = a.prim::<Int32Type>(1)?;
                build_strings(n, |i, out| {
                    let (Some(v), Some(t)) = (s.get(i), times.get(i)) else {
                        return Ok(false);
                    };
                    for _ in 0..t.max(0) {
                        out.push_str(v);
                    }
                    Ok(true)
                })
            }
            StringFn::Ascii => {
                let s = a.str(0)?;
                build_prims::<Int32Type>(n, |i| {
                    Ok(s.get(i).map(|v| v.chars().next().map_or(0, |c| c as i32)))
                })
            }
            StringFn::Translate => {
                let s = a.str(0)?;
                let from = a.str(1)?;
                let to = a.str(2)?;
                build_strings(n, |i, out| {
                    let (Some(v), Some(f), Some(t)) = (s.get(i), from.get(i), to.get(i)) else {
                        return Ok(false);
                    };
                    let t: Vec<char> = t.chars().collect();
                    let mut map: Vec<(char, Option<char>)> = Vec::new();
                    for (k, c) in f.chars().enumerate() {
                        if !map.iter().any(|(m, _)| *m == c) {
                            map.push((c, t.get(k).copied()));
                        }
                    }
                    for c in v.chars() {
                        match map.iter().find(|(m, _)| *m == c) {
                            Some((_, Some(r))) => out.push(*r),
                            Some((_, None)) => {}
                            None => out.push(c),
                        }
                    }
                    Ok(true)
                })
            }
        }
    }
}

fn map1(a: &Args, f: impl Fn(&str, &mut String)) -> Result<ArrayRef> {
    let s = a.str(0)?;
    build_strings(a.rows(), |i, out| match s.get(i) {
        Some(v) => {
            f(v, out);
            Ok(true)
        }
        None => Ok(false),
    })
}

/// Spark's `UTF8String.substringSQL`: `pos` counts characters from 1 (negative from the end,
/// 0 as 1), the result is clipped to the string and empty when nothing is left.
pub fn substring_sql(s: &str, pos: i32, len: i32) -> &str {
    let ascii = s.is_ascii();
    let chars = if ascii { s.len() } else { s.chars().count() } as i64;
    let start: i64 = if pos > 0 {
        pos as i64 - 1
    } else if pos < 0 {
        chars + pos as i64
    } else {
        0
    };
    let end = (start + len as i64).min(chars);
    let start = start.max(0);
    if start >= end {
        return "";
    }
    if ascii {
        return &s[start as usize..end as usize];
    }
    let byte_at = |k: i64| s.char_indices().nth(k as usize).map_or(s.len(), |(b, _)| b);
    &s[byte_at(start)..byte_at(end)]
}

/// 1-based character position of `f` in `v` at or after character `from`, 0 when absent.
fn char_position(v: &str, f: &str, from: usize) -> i32 {
    // Spark's `UTF8String.indexOf` finds the empty string at 0 whatever the start.
    if f.is_empty() {
        return 1;
    }
    let start_byte = match v.char_indices().nth(from) {
        Some((b, _)) => b,
        None if from == v.chars().count() => v.len(),
        None => return 0,
    };
    match v[start_byte..].find(f) {
        Some(b) => (v[..start_byte + b].chars().count() + 1) as i32,
        None => 0,
    }
}

/// Spark's `lpad` / `rpad`: the result has exactly `len` characters (the string cut when
/// longer); an empty pad leaves a short string as it is.
fn pad_to(v: &str, len: i32, pad: &str, left: bool, out: &mut String) {
    if len <= 0 {
        return;
    }
    let len = len as usize;
    let n = v.chars().count();
    if n >= len || pad.is_empty() {
        out.push_str(substring_sql(v, 1, len as i32));
        return;
    }
    let need = len - n;
    let filler: String = pad.chars().cycle().take(need).collect();
    if left {
        out.push_str(&filler);
        out.push_str(v);
    } else {
        out.push_str(v);
        out.push_str(&filler);
    }
}

pub(crate) fn bind(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    let (f, lo, hi) = match call.name {
        "upper" | "ucase" => (StringFn::Upper, 1, 1),
        "lower" | "lcase" => (StringFn::Lower, 1, 1),
        "length" | "char_length" | "character_length" | "len" => (StringFn::Length, 1, 1),
        "octet_length" | "bit_length" => {
            call.arity(&args, 1, 1)?;
            let s = call.string_arg(0, args[0].clone())?;
            let f = if call.name == "octet_length" {
                StringFn::OctetLength
            } else {
                StringFn::BitLength
            };
            return Ok(Bound::Done(call.function(
                ScalarFunction::Str(f),
                vec![s],
                DataType::Int32,
            )));
        }
        "concat" => (StringFn::Concat, 0, usize::MAX),
        "concat_ws" => (StringFn::ConcatWs, 1, usize::MAX),
        "substring" | "substr" => (StringFn::Substring, 2, 3),
        "left" | "right" => {
            call.arity(&args, 2, 2)?;
            let mut it = args.into_iter();
            let (s, k) = (it.next(), it.next());
            let (Some(s), Some(k)) = (s, k) else {
                return Ok(Bound::NotMine(Vec::new()));
            };
            let s = call.string_arg(0, s)?;
            let k = call.int_arg(1, k, &DataType::Int32)?;
            return Ok(Bound::Done(left_right(call, s, k)));
        }
        "trim" | "btrim" => (StringFn::Trim, 1, 2),
        "ltrim" => (StringFn::LTrim, 1, 2),
        "rtrim" => (StringFn::RTrim, 1, 2),
        "lpad" => (StringFn::LPad, 2, 3),
        "rpad" => (StringFn::RPad, 2, 3),
        "replace" => (StringFn::Replace, 2, 3),
        "instr" => (StringFn::Instr, 2, 2),
        "locate" | "position" => (StringFn::Locate, 2, 3),
        "initcap" => (StringFn::InitCap, 1, 1),
        "reverse" => (StringFn::Reverse, 1, 1),
        "repeat" => (StringFn::Repeat, 2, 2),
        "ascii" => (StringFn::Ascii, 1, 1),
        "translate" => (StringFn::Translate, 3, 3),
        _ => return Ok(Bound::NotMine(args)),
    };
    call.arity(&args, lo, hi)?;
    // Spark's SQL `trim(chars, s)` / `ltrim(chars, s)` / `rtrim(chars, s)` name the characters
    // first (btrim takes the string first); evaluation takes the string first.
    let mut args = args;
    if matches!(call.name, "trim" | "ltrim" | "rtrim") && args.len() == 2 {
        args.swap(0, 1);
    }
    let int_at: &[usize] = match f {
        StringFn::Substring => &[1, 2],
        StringFn::LPad | StringFn::RPad | StringFn::Repeat => &[1],
        StringFn::Locate => &[2],
        _ => &[],
    };
    let args = args
        .into_iter()
        .enumerate()
        .map(|(i, a)| {
            if int_at.contains(&i) {
                call.int_arg(i, a, &DataType::Int32)
            } else {
                call.string_arg(i, a)
            }
        })
        .collect::<Result<Vec<_>>>()?;
    let t = match f {
        StringFn::Length | StringFn::Instr | StringFn::Locate | StringFn::Ascii => DataType::Int32,
        _ => DataType::Utf8,
    };
    Ok(Bound::Done(call.function(ScalarFunction::Str(f), args, t)))
}

/// `left(s, n)` is `substring(s, 1, n)` and `right(s, n)` `substring(s, -n)`, both empty for
/// `n <= 0`, as Spark rewrites them.
fn left_right(call: &Call<'_, '_>, s: PhysicalExpr, k: PhysicalExpr) -> PhysicalExpr {
    use crate::expr::{BinaryOp, Literal};
    let lit = |v: i64| {
        PhysicalExpr::Literal(Literal::new(Arc::new(arrow_array::Int32Array::from(vec![
            v as i32,
        ]))))
    };
    let sub = |args| {
        call.function(
            ScalarFunction::Str(StringFn::Substring),
            args,
            DataType::Utf8,
        )
    };
    if call.name == "left" {
        return sub(vec![s, lit(1), k]);
    }
    let neg = PhysicalExpr::Negative(Box::new(k.clone()));
    // Spark's `right` is `if(len <= 0, '', substring(s, -len, len))`: a NULL length fails
    // the test and takes the substring, which is NULL.
    let len_null = PhysicalExpr::IsNull(Box::new(k.clone()));
    let positive = PhysicalExpr::Compare {
        op: BinaryOp::Gt,
        left: Box::new(k),
        right: Box::new(lit(0)),
    };
    let is_null = PhysicalExpr::IsNull(Box::new(s.clone()));
    PhysicalExpr::Case {
        branches: vec![
            (
                is_null,
                PhysicalExpr::Literal(Literal::null(&DataType::Utf8)),
            ),
            (
                len_null,
                PhysicalExpr::Literal(Literal::null(&DataType::Utf8)),
            ),
            (positive, sub(vec![s, neg, lit(i32::MAX as i64)])),
        ],
        otherwise: Some(Box::new(PhysicalExpr::Literal(Literal::string("")))),
        data_type: DataType::Utf8,
    }
}
