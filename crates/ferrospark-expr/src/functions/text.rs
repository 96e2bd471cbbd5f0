//! More of Spark's string functions: `split_part`, `luhn_check`, the UTF-8 checks
//! (`is_valid_utf8`, `make_valid_utf8`, `validate_utf8`, `try_validate_utf8`), `lpad` /
//! `rpad` of bytes, `to_number` / `try_to_number` ([`super::number_format`]),
//! `format_string` / `printf` ([`super::printf`]) and `uuid`.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::GenericBinaryType;
use arrow_array::types::Int32Type;
use arrow_array::{Array, ArrayRef, BinaryArray, BooleanArray, GenericByteArray, StringArray};
use arrow_schema::DataType;
use ferrospark_common::{FerroError, Result};

use super::{Args, Bound, Call, ScalarFunction};
use crate::bind::cast_to;
use crate::physical::PhysicalExpr;
use crate::types::{is_binary, spark_equivalent};

/// The functions of this family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextFn {
    /// `split_part(s, delimiter, n)`: the n-th piece (negative from the end), `''` past the end
    SplitPart,
    /// `luhn_check(s)`: whether the digits pass the Luhn checksum
    LuhnCheck,
    /// `is_valid_utf8(s)`
    IsValidUtf8,
    /// `make_valid_utf8(s)`: invalid sequences replaced by U+FFFD
    MakeValidUtf8,
    /// `validate_utf8(s)`: `s`, or `INVALID_UTF8_STRING`
    ValidateUtf8,
    /// `try_validate_utf8(s)`: `s`, or NULL
    TryValidateUtf8,
    /// `lpad(bytes, n[, pad])`: zero bytes by default
    LPadBytes,
    /// `rpad(bytes, n[, pad])`
    RPadBytes,
    /// `to_number(s, fmt)` / `try_to_number(s, fmt)` with a folded format; `fail` raises on
    /// text the format does not match (else NULL)
    ToNumber {
        /// `to_number` (true) or `try_to_number`
        fail: bool,
    },
    /// `format_string(fmt, args...)` / `printf`: Java's `String.format`
    FormatString,
    /// `uuid()`: a random version-4 UUID per row; never folded or shared
    Uuid,
}

impl TextFn {
    /// Spark's name.
    pub fn name(self) -> &'static str {
        match self {
            TextFn::SplitPart => "split_part",
            TextFn::LuhnCheck => "luhn_check",
            TextFn::IsValidUtf8 => "is_valid_utf8",
            TextFn::MakeValidUtf8 => "make_valid_utf8",
            TextFn::ValidateUtf8 => "validate_utf8",
            TextFn::TryValidateUtf8 => "try_validate_utf8",
            TextFn::LPadBytes => "lpad",
            TextFn::RPadBytes => "rpad",
            TextFn::ToNumber { fail: true } => "to_number",
            TextFn::ToNumber { fail: false } => "try_to_number",
            TextFn::FormatString => "format_string",
            TextFn::Uuid => "uuid",
        }
    }

    /// Evaluates over `args`.
    pub(crate) fn evaluate(self, args: &Args) -> Result<ArrayRef> {
        match self {
            TextFn::ToNumber { fail } => return super::number_format::to_number(args, fail),
            TextFn::FormatString => return super::printf::format_string(args),
            TextFn::Uuid => return Ok(uuids(args.rows())),
            _ => {}
        }
        let a = args.full(0)?;
        match self {
            TextFn::SplitPart => {
                let (d, k) = (args.full(1)?, args.full(2)?);
                let (s, d, k) = (
                    a.as_string::<i32>(),
                    d.as_string::<i32>(),
                    k.as_primitive::<Int32Type>(),
                );
                let mut out = Vec::with_capacity(s.len());
                for i in 0..s.len() {
                    if s.is_null(i) || d.is_null(i) || k.is_null(i) {
                        out.push(None);
                        continue;
                    }
                    let n = k.value(i);
                    if n == 0 {
                        return Err(FerroError::Arithmetic(
                            "[INVALID_INDEX_OF_ZERO] The index 0 is invalid. An index shall be either < 0 or > 0 (the first element has index 1).".into(),
                        ));
                    }
                    let (text, delim) = (s.value(i), d.value(i));
                    // A positive part is found without collecting the pieces. A negative one
                    // counts the left-to-right pieces (`rsplit` would match an overlapping
                    // delimiter differently).
                    let k = n.unsigned_abs() as usize - 1;
                    let piece = match (delim.is_empty(), n > 0) {
                        (true, _) => (k == 0).then_some(text),
                        (false, true) => text.split(delim).nth(k),
                        (false, false) => {
                            let pieces: Vec<&str> = text.split(delim).collect();
                            pieces.len().checked_sub(k + 1).map(|j| pieces[j])
                        }
                    };
                    out.push(Some(piece.unwrap_or("").to_string()));
                }
                Ok(Arc::new(StringArray::from(out)))
            }
            TextFn::LuhnCheck => {
                let out: BooleanArray = a.as_string::<i32>().iter().map(|v| v.map(luhn)).collect();
                Ok(Arc::new(out))
            }
            TextFn::IsValidUtf8 => {
                let out: BooleanArray = bytes_of(&a)
                    .iter()
                    .map(|v| v.map(|b| std::str::from_utf8(b).is_ok()))
                    .collect();
                Ok(Arc::new(out))
            }
            TextFn::MakeValidUtf8 => {
                let out: StringArray = bytes_of(&a)
                    .iter()
                    .map(|v| v.map(|b| String::from_utf8_lossy(b).into_owned()))
                    .collect();
                Ok(Arc::new(out))
            }
            TextFn::ValidateUtf8 | TextFn::TryValidateUtf8 => {
                let mut out = Vec::with_capacity(a.len());
                for v in bytes_of(&a).iter() {
                    out.push(match v.map(std::str::from_utf8) {
                        None => None,
                        Some(Ok(s)) => Some(s.to_string()),
                        Some(Err(_)) if self == TextFn::TryValidateUtf8 => None,
                        Some(Err(_)) => {
                            let hex: String = v
                                .unwrap_or_default()
                                .iter()
                                .map(|b| format!("\\x{b:02X}"))
                                .collect();
                            return Err(FerroError::Arithmetic(format!(
                                "[INVALID_UTF8_STRING] Invalid UTF8 byte sequence found in string: {hex}."
                            )));
                        }
                    });
                }
                Ok(Arc::new(StringArray::from(out)))
            }
            TextFn::LPadBytes | TextFn::RPadBytes => {
                let n = args.full(1)?;
                let pad = if args.len() > 2 {
                    Some(args.full(2)?)
                } else {
                    None
                };
                let (b, n) = (bytes_of(&a), n.as_primitive::<Int32Type>());
                let pad = pad.as_ref().map(bytes_of);
                let mut out: Vec<Option<Vec<u8>>> = Vec::with_capacity(b.len());
                for i in 0..b.len() {
                    let p: &[u8] = match &pad {
                        Some(p) if p.is_null(i) => {
                            out.push(None);
                            continue;
                        }
                        Some(p) => p.value(i),
                        None => &[0u8],
                    };
                    if b.is_null(i) || n.is_null(i) {
                        out.push(None);
                        continue;
                    }
                    let (v, len) = (b.value(i), n.value(i).max(0) as usize);
                    if v.len() >= len || p.is_empty() {
                        out.push(Some(v[..len.min(v.len())].to_vec()));
                        continue;
                    }
                    let fill: Vec<u8> = p.iter().copied().cycle().take(len - v.len()).collect();
                    out.push(Some(if self == TextFn::LPadBytes {
                        [fill.as_slice(), v].concat()
                    } else {
                        [v, fill.as_slice()].concat()
                    }));
                }
                Ok(Arc::new(BinaryArray::from_iter(out)))
            }
            TextFn::ToNumber { .. } | TextFn::FormatString | TextFn::Uuid => Err(
                FerroError::Internal(format!("{} evaluated above", self.name())),
            ),
        }
    }
}

/// A string or binary column's bytes.
fn bytes_of(a: &ArrayRef) -> GenericByteArray<GenericBinaryType<i32>> {
    match a.data_type() {
        DataType::Binary => a.as_binary::<i32>().clone(),
        // Text is UTF-8 bytes already: the same buffers, read as binary.
        _ => BinaryArray::from(a.as_string::<i32>().clone()),
    }
}

/// The Luhn checksum over a text of digits only (an empty text fails).
fn luhn(s: &str) -> bool {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let sum: u32 = s
        .bytes()
        .rev()
        .enumerate()
        .map(|(i, b)| {
            let d = (b - b'0') as u32;
            if i % 2 == 1 {
                let x = d * 2;
                if x > 9 {
                    x - 9
                } else {
                    x
                }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// `n` random version-4 UUIDs. The generator is seeded from the process's random hash keys
/// and the clock, and advances on every call, so no two calls share values.
fn uuids(n: usize) -> ArrayRef {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    h.write_u64(nanos);
    let mut state = h.finish();
    // splitmix64: small, fast and well mixed, enough for identifiers.
    let mut next = move || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let out: StringArray = (0..n)
        .map(|_| {
            let hi = (next() & !0xF000) | 0x4000;
            let lo = (next() & !(0xC000_u64 << 48)) | (0x8000_u64 << 48);
            Some(format!(
                "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
                hi >> 32,
                (hi >> 16) & 0xFFFF,
                hi & 0xFFFF,
                lo >> 48,
                lo & 0xFFFF_FFFF_FFFF
            ))
        })
        .collect();
    Arc::new(out)
}

/// Binds `to_number` / `try_to_number`: the format must fold to a constant, which fixes the
/// result type; a NULL format gives NULL as DECIMAL(10,0).
fn bind_to_number(call: &Call<'_, '_>, args: Vec<PhysicalExpr>, fail: bool) -> Result<Bound> {
    call.arity(&args, 2, 2)?;
    let Some(fmt) = super::binary::foldable_text(call, &args[1], "format")? else {
        let t = DataType::Decimal128(10, 0);
        return Ok(Bound::Done(PhysicalExpr::Literal(
            crate::expr::Literal::null(&t),
        )));
    };
    let format = super::number_format::NumberFormat::parse(&fmt)?;
    let s = call.string_arg(0, args[0].clone())?;
    let f = PhysicalExpr::Literal(crate::expr::Literal::string(&fmt));
    Ok(Bound::Done(call.function(
        ScalarFunction::Text(TextFn::ToNumber { fail }),
        vec![s, f],
        format.data_type(),
    )))
}

/// Binds this family's functions.
pub(crate) fn bind(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    let f = match call.name {
        "to_number" => return bind_to_number(call, args, true),
        "try_to_number" => return bind_to_number(call, args, false),
        "format_string" | "printf" => return super::printf::bind(call, args),
        "uuid" => {
            call.arity(&args, 0, 0)?;
            return Ok(Bound::Done(call.function(
                ScalarFunction::Text(TextFn::Uuid),
                Vec::new(),
                DataType::Utf8,
            )));
        }
        "split_part" => TextFn::SplitPart,
        "luhn_check" => TextFn::LuhnCheck,
        "is_valid_utf8" => TextFn::IsValidUtf8,
        "make_valid_utf8" => TextFn::MakeValidUtf8,
        "validate_utf8" => TextFn::ValidateUtf8,
        "try_validate_utf8" => TextFn::TryValidateUtf8,
        "lpad" | "rpad"
            if args
                .first()
                .is_some_and(|a| is_binary(&spark_equivalent(&a.data_type())))
                && args.get(2).is_none_or(|p| {
                    let t = spark_equivalent(&p.data_type());
                    is_binary(&t) || t == DataType::Null
                }) =>
        {
            if call.name == "lpad" {
                TextFn::LPadBytes
            } else {
                TextFn::RPadBytes
            }
        }
        _ => return Ok(Bound::NotMine(args)),
    };
    let (lo, hi) = match f {
        TextFn::SplitPart => (3, 3),
        TextFn::LPadBytes | TextFn::RPadBytes => (2, 3),
        _ => (1, 1),
    };
    call.arity(&args, lo, hi)?;
    let bytes_or_text = |i: usize, a: PhysicalExpr| -> Result<PhysicalExpr> {
        if is_binary(&spark_equivalent(&a.data_type())) {
            Ok(cast_to(a, &DataType::Binary))
        } else {
            call.string_arg(i, a)
        }
    };
    let (args, t) = match f {
        TextFn::SplitPart => {
            let mut it = args.into_iter();
            let (s, d, k) = (it.next(), it.next(), it.next());
            let (Some(s), Some(d), Some(k)) = (s, d, k) else {
                return Err(FerroError::Internal("split_part arguments".into()));
            };
            (
                vec![
                    call.string_arg(0, s)?,
                    call.string_arg(1, d)?,
                    call.int_arg(2, k, &DataType::Int32)?,
                ],
                DataType::Utf8,
            )
        }
        TextFn::LuhnCheck => (
            vec![call.string_arg(0, args[0].clone())?],
            DataType::Boolean,
        ),
        TextFn::IsValidUtf8 => (vec![bytes_or_text(0, args[0].clone())?], DataType::Boolean),
        TextFn::LPadBytes | TextFn::RPadBytes => {
            let mut out = Vec::with_capacity(args.len());
            for (i, a) in args.into_iter().enumerate() {
                out.push(if i == 1 {
                    call.int_arg(1, a, &DataType::Int32)?
                } else {
                    cast_to(a, &DataType::Binary)
                });
            }
            (out, DataType::Binary)
        }
        _ => (vec![bytes_or_text(0, args[0].clone())?], DataType::Utf8),
    };
    Ok(Bound::Done(call.function(ScalarFunction::Text(f), args, t)))
}
