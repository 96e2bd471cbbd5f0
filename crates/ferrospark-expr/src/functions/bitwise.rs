//! Bitwise operators and functions on integers, with Java's semantics as Spark computes them:
//! `a & b`, `a | b`, `a ^ b`, `~a`, `a << n` / `shiftleft`, `a >> n` / `shiftright`,
//! `a >>> n` / `shiftrightunsigned` (the shift count taken modulo the width, as Java's
//! shifts do), `bit_count` and `getbit` / `bit_get`.
//!
//! The operators bind under their symbols as function names (`"&"`, `"<<"`, ...), so plans
//! print them as Spark names their columns (`(a & b)`, `(20181117 >> 2)`).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int16Type, Int32Type, Int64Type, Int8Type};
use arrow_array::{Array, ArrayRef, Int32Array, Int8Array, PrimitiveArray};
use arrow_schema::DataType;
use ferrospark_common::{FerroError, Result};

use super::{Args, Bound, Call, ScalarFunction};
use crate::physical::PhysicalExpr;
use crate::types::{is_integral, spark_equivalent};

/// The bitwise functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BitwiseFn {
    /// `a & b`
    And,
    /// `a | b`
    Or,
    /// `a ^ b`
    Xor,
    /// `~a`
    Not,
    /// `a << n`
    ShiftLeft,
    /// `a >> n` (arithmetic)
    ShiftRight,
    /// `a >>> n` (logical)
    ShiftRightUnsigned,
    /// `bit_count(a)`: set bits of the value sign-extended to 64 bits
    BitCount,
    /// `getbit(a, pos)`: bit `pos` (0 is the lowest) as a TINYINT
    GetBit,
}

impl BitwiseFn {
    /// Spark's name (the operator's symbol for operators).
    pub fn name(self) -> &'static str {
        match self {
            BitwiseFn::And => "&",
            BitwiseFn::Or => "|",
            BitwiseFn::Xor => "^",
            BitwiseFn::Not => "~",
            BitwiseFn::ShiftLeft => "shiftleft",
            BitwiseFn::ShiftRight => "shiftright",
            BitwiseFn::ShiftRightUnsigned => "shiftrightunsigned",
            BitwiseFn::BitCount => "bit_count",
            BitwiseFn::GetBit => "getbit",
        }
    }

    /// Evaluates over `args` (bound to a common integer type, shift counts to INT).
    pub(crate) fn evaluate(self, args: &Args) -> Result<ArrayRef> {
        let a = args.full(0)?;
        match self {
            BitwiseFn::BitCount => bit_count(&a),
            BitwiseFn::GetBit => get_bit(&a, &args.full(1)?),
            BitwiseFn::Not => unary_not(&a),
            _ => {
                let b = args.full(1)?;
                binary(self, &a, &b)
            }
        }
    }
}

/// Names this family binds.
pub(crate) fn function_of(name: &str) -> Option<BitwiseFn> {
    Some(match name {
        "&" => BitwiseFn::And,
        "|" => BitwiseFn::Or,
        "^" => BitwiseFn::Xor,
        "~" => BitwiseFn::Not,
        "<<" | "shiftleft" => BitwiseFn::ShiftLeft,
        ">>" | "shiftright" => BitwiseFn::ShiftRight,
        ">>>" | "shiftrightunsigned" => BitwiseFn::ShiftRightUnsigned,
        "bit_count" => BitwiseFn::BitCount,
        "getbit" | "bit_get" => BitwiseFn::GetBit,
        _ => return None,
    })
}

fn integral_arg(call: &Call<'_, '_>, i: usize, a: &PhysicalExpr) -> Result<DataType> {
    let t = spark_equivalent(&a.data_type());
    if is_integral(&t) {
        Ok(t)
    } else if t == DataType::Null {
        Ok(DataType::Int32)
    } else {
        Err(call.wrong_type(i, a, "the \"INTEGRAL\" type"))
    }
}

fn wider(a: &DataType, b: &DataType) -> DataType {
    let rank = |t: &DataType| match t {
        DataType::Int8 => 1,
        DataType::Int16 => 2,
        DataType::Int32 => 3,
        _ => 4,
    };
    if rank(a) >= rank(b) {
        a.clone()
    } else {
        b.clone()
    }
}

/// Binds this family's calls; other names are returned.
pub(crate) fn bind(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    let Some(f) = function_of(call.name) else {
        return Ok(Bound::NotMine(args));
    };
    let cast = crate::bind::cast_to;
    let func = |f| ScalarFunction::Bitwise(f);
    Ok(Bound::Done(match f {
        BitwiseFn::And | BitwiseFn::Or | BitwiseFn::Xor => {
            call.arity(&args, 2, 2)?;
            let t = wider(
                &integral_arg(call, 0, &args[0])?,
                &integral_arg(call, 1, &args[1])?,
            );
            let v = args.into_iter().map(|a| cast(a, &t)).collect();
            call.function(func(f), v, t)
        }
        BitwiseFn::Not => {
            call.arity(&args, 1, 1)?;
            let t = integral_arg(call, 0, &args[0])?;
            call.function(func(f), vec![cast(args[0].clone(), &t)], t)
        }
        BitwiseFn::ShiftLeft | BitwiseFn::ShiftRight | BitwiseFn::ShiftRightUnsigned => {
            call.arity(&args, 2, 2)?;
            let base = integral_arg(call, 0, &args[0])?;
            // Spark shifts INT and BIGINT; narrower integers are read as INT.
            let t = if base == DataType::Int64 {
                DataType::Int64
            } else {
                DataType::Int32
            };
            let count = call.int_arg(1, args[1].clone(), &DataType::Int32)?;
            call.function(func(f), vec![cast(args[0].clone(), &t), count], t)
        }
        BitwiseFn::BitCount => {
            call.arity(&args, 1, 1)?;
            let t = spark_equivalent(&args[0].data_type());
            let a = if t == DataType::Boolean || is_integral(&t) {
                args[0].clone()
            } else if t == DataType::Null {
                cast(args[0].clone(), &DataType::Int64)
            } else {
                return Err(call.wrong_type(0, &args[0], "(\"INTEGRAL\" or \"BOOLEAN\") type"));
            };
            call.function(func(f), vec![a], DataType::Int32)
        }
        BitwiseFn::GetBit => {
            call.arity(&args, 2, 2)?;
            let t = integral_arg(call, 0, &args[0])?;
            let pos = call.int_arg(1, args[1].clone(), &DataType::Int32)?;
            call.function(
                func(f),
                vec![cast(args[0].clone(), &t), pos],
                DataType::Int8,
            )
        }
    }))
}

fn as_i64(a: &ArrayRef) -> Result<(Vec<Option<i64>>, u32)> {
    macro_rules! read {
        ($t:ty, $bits:expr) => {{
            let p = a.as_primitive::<$t>();
            Ok((p.iter().map(|v| v.map(|x| x as i64)).collect(), $bits))
        }};
    }
    match a.data_type() {
        DataType::Int8 => read!(Int8Type, 8),
        DataType::Int16 => read!(Int16Type, 16),
        DataType::Int32 => read!(Int32Type, 32),
        DataType::Int64 => read!(Int64Type, 64),
        other => Err(FerroError::Internal(format!(
            "a bitwise function over {other}"
        ))),
    }
}

/// Values of `like`'s integer type from i64s (the bit patterns truncated to its width).
fn of_type(like: &DataType, values: Vec<Option<i64>>) -> ArrayRef {
    match like {
        DataType::Int8 => Arc::new(
            values
                .into_iter()
                .map(|v| v.map(|x| x as i8))
                .collect::<PrimitiveArray<Int8Type>>(),
        ),
        DataType::Int16 => Arc::new(
            values
                .into_iter()
                .map(|v| v.map(|x| x as i16))
                .collect::<PrimitiveArray<Int16Type>>(),
        ),
        DataType::Int32 => Arc::new(
            values
                .into_iter()
                .map(|v| v.map(|x| x as i32))
                .collect::<PrimitiveArray<Int32Type>>(),
        ),
        _ => Arc::new(values.into_iter().collect::<PrimitiveArray<Int64Type>>()),
    }
}

fn binary(f: BitwiseFn, a: &ArrayRef, b: &ArrayRef) -> Result<ArrayRef> {
    let (x, bits) = as_i64(a)?;
    let (y, _) = as_i64(b)?;
    let out = x
        .iter()
        .zip(&y)
        .map(|(l, r)| {
            let (l, r) = ((*l)?, (*r)?);
            Some(match f {
                BitwiseFn::And => l & r,
                BitwiseFn::Or => l | r,
                BitwiseFn::Xor => l ^ r,
                // Java masks the count to the width: `1 << 33` is `1 << 1` for an INT.
                BitwiseFn::ShiftLeft if bits == 32 => ((l as i32).wrapping_shl(r as u32)) as i64,
                BitwiseFn::ShiftLeft => l.wrapping_shl(r as u32),
                BitwiseFn::ShiftRight if bits == 32 => ((l as i32).wrapping_shr(r as u32)) as i64,
                BitwiseFn::ShiftRight => l.wrapping_shr(r as u32),
                BitwiseFn::ShiftRightUnsigned if bits == 32 => {
                    ((l as i32 as u32).wrapping_shr(r as u32)) as i32 as i64
                }
                BitwiseFn::ShiftRightUnsigned => ((l as u64).wrapping_shr(r as u32)) as i64,
                _ => return None,
            })
        })
        .collect();
    Ok(of_type(a.data_type(), out))
}

fn unary_not(a: &ArrayRef) -> Result<ArrayRef> {
    let (x, _) = as_i64(a)?;
    Ok(of_type(
        a.data_type(),
        x.into_iter().map(|v| v.map(|x| !x)).collect(),
    ))
}

fn bit_count(a: &ArrayRef) -> Result<ArrayRef> {
    if let Some(b) = a.as_boolean_opt() {
        let out: Int32Array = b.iter().map(|v| v.map(i32::from)).collect();
        return Ok(Arc::new(out));
    }
    let (x, _) = as_i64(a)?;
    let out: Int32Array = x
        .into_iter()
        .map(|v| v.map(|x| x.count_ones() as i32))
        .collect();
    Ok(Arc::new(out))
}

fn get_bit(a: &ArrayRef, pos: &ArrayRef) -> Result<ArrayRef> {
    let (x, bits) = as_i64(a)?;
    let p = pos.as_primitive::<Int32Type>();
    let mut out = Vec::with_capacity(x.len());
    for (i, v) in x.iter().enumerate() {
        if p.is_null(i) || v.is_none() {
            out.push(None);
            continue;
        }
        let at = p.value(i);
        if at < 0 || at as u32 >= bits {
            return Err(FerroError::Arithmetic(format!(
                "[INVALID_PARAMETER_VALUE.BIT_POSITION_RANGE] The value of parameter(s) `pos` in `getbit` is invalid: expects an integer value in [0, {bits}), but got {at}. SQLSTATE: 22023"
            )));
        }
        out.push(v.map(|x| ((x >> at) & 1) as i8));
    }
    Ok(Arc::new(Int8Array::from(out)))
}
