//! Mathematical functions with Spark's result types and edge cases: `floor` / `ceil` give
//! BIGINT (or DECIMAL(p-s+1, 0)), `ln` of a non-positive number is NULL, `round` rounds the
//! decimal text of a double half-up (so `round(2.675, 2)` is 2.68, as in Spark), `greatest`
//! skips NULLs and ranks NaN above every number.
//!
//! Decimal rounding is written here rather than taken from arrow: Spark's precision rules and
//! HALF_UP / HALF_EVEN on the unscaled value decide the exact digits.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::ArrowPrimitiveType;
use arrow_array::types::{
    Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
};
use arrow_array::{Array, ArrayRef, BooleanArray, Float64Array, PrimitiveArray};
use arrow_schema::DataType;
use ferrospark_common::{FerroError, Result};

use super::{build_prims, Args, Bound, Call, ScalarFunction};
use crate::bind::cast_to;
use crate::expr::{BinaryOp, Literal};
use crate::physical::PhysicalExpr;
use crate::types::{is_floating, is_integral, is_numeric, spark_equivalent};

/// A mathematical function.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MathFn {
    /// `abs(x)`; without ANSI the minimum integer stays itself (Java's wrap)
    Abs {
        /// raise on overflow
        ansi: bool,
    },
    /// `isnan(x)`
    IsNan,
    /// `round(x, d)` (HALF_UP) or `bround(x, d)` (HALF_EVEN); `d` is a literal.
    Round {
        /// digits after the point (negative: before it)
        scale: i32,
        /// banker's rounding
        half_even: bool,
        /// an integer rounded past its type's range is ARITHMETIC_OVERFLOW (else it wraps)
        ansi: bool,
    },
    /// `floor(x, d)` or `ceil(x, d)`: DECIMAL rounded toward -inf / +inf at `d` digits.
    FloorCeilScale {
        /// digits after the point (negative: before it)
        scale: i32,
        /// ceil rather than floor
        ceil: bool,
    },
    /// `floor(x)` or `ceil(x)`
    FloorCeil {
        /// ceil rather than floor
        ceil: bool,
    },
    /// A DOUBLE -> DOUBLE function (`sqrt`, `exp`, `sin`, ...).
    Unary(UnaryFn),
    /// `pow(x, y)`
    Pow,
    /// `atan2(y, x)`
    Atan2,
    /// `hypot(a, b)`
    Hypot,
    /// `factorial(n)`: a BIGINT, NULL outside 0..=20
    Factorial,
    /// `log(base, x)`: NULL when either is not positive.
    LogBase,
    /// `pmod(a, b)`
    Pmod {
        /// ANSI: division by zero raises
        ansi: bool,
        /// The result's precision for decimals (whose operands come on one scale at 38).
        precision: Option<u8>,
    },
    /// `a div b`: integral division, BIGINT
    IntDiv {
        /// ANSI: division by zero raises
        ansi: bool,
        /// the operands are decimals of one scale (else BIGINTs)
        decimal: bool,
    },
    /// `greatest(...)` or `least(...)`
    Extreme {
        /// greatest rather than least
        greatest: bool,
    },
    /// `signum(x)`: -1.0, 0.0 or 1.0
    Signum,
    /// `nanvl(a, b)`: `b` where `a` is NaN
    NanVl,
    /// `pi()` / `e()`
    Constant(f64),
}

/// DOUBLE -> DOUBLE functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnaryFn {
    /// `sqrt`
    Sqrt,
    /// `cbrt`
    Cbrt,
    /// `exp`
    Exp,
    /// `expm1`
    Expm1,
    /// `ln` / `log(x)`: NULL for x <= 0
    Ln,
    /// `log10`
    Log10,
    /// `log2`
    Log2,
    /// `log1p`: NULL for x <= -1
    Log1p,
    /// `sin`
    Sin,
    /// `cos`
    Cos,
    /// `tan`
    Tan,
    /// `asin`
    Asin,
    /// `acos`
    Acos,
    /// `atan`
    Atan,
    /// `degrees`
    Degrees,
    /// `radians`
    Radians,
    /// `rint`
    Rint,
    /// `sec`: 1 / cos
    Sec,
    /// `csc`: 1 / sin
    Csc,
    /// `cot`: 1 / tan
    Cot,
    /// `sinh`
    Sinh,
    /// `cosh`
    Cosh,
    /// `tanh`
    Tanh,
    /// `asinh`
    Asinh,
    /// `acosh`
    Acosh,
    /// `atanh`
    Atanh,
}

impl UnaryFn {
    fn apply(self, x: f64) -> Option<f64> {
        Some(match self {
            UnaryFn::Sqrt => x.sqrt(),
            UnaryFn::Cbrt => x.cbrt(),
            UnaryFn::Exp => x.exp(),
            UnaryFn::Expm1 => x.exp_m1(),
            UnaryFn::Ln if x <= 0.0 => return None,
            UnaryFn::Ln => x.ln(),
            UnaryFn::Log10 if x <= 0.0 => return None,
            UnaryFn::Log10 => x.log10(),
            UnaryFn::Log2 if x <= 0.0 => return None,
            UnaryFn::Log2 => x.log2(),
            UnaryFn::Log1p if x <= -1.0 => return None,
            UnaryFn::Log1p => x.ln_1p(),
            UnaryFn::Sin => x.sin(),
            UnaryFn::Cos => x.cos(),
            UnaryFn::Tan => x.tan(),
            UnaryFn::Asin => x.asin(),
            UnaryFn::Acos => x.acos(),
            UnaryFn::Atan => x.atan(),
            UnaryFn::Degrees => x.to_degrees(),
            UnaryFn::Radians => x.to_radians(),
            UnaryFn::Sec => 1.0 / x.cos(),
            UnaryFn::Csc => 1.0 / x.sin(),
            UnaryFn::Cot => 1.0 / x.tan(),
            UnaryFn::Sinh => x.sinh(),
            UnaryFn::Cosh => x.cosh(),
            UnaryFn::Tanh => x.tanh(),
            UnaryFn::Asinh => x.asinh(),
            UnaryFn::Acosh => x.acosh(),
            // Spark's formula: its bits differ from libm's atanh in the last place.
            UnaryFn::Atanh => 0.5 * (x.ln_1p() - (-x).ln_1p()),
            UnaryFn::Rint => {
                let r = x.round();
                // Java's rint rounds half to even.
                if (x - x.trunc()).abs() == 0.5 {
                    2.0 * (x / 2.0).round()
                } else {
                    r
                }
            }
        })
    }

    fn name(self) -> &'static str {
        match self {
            UnaryFn::Sqrt => "sqrt",
            UnaryFn::Cbrt => "cbrt",
            UnaryFn::Exp => "exp",
            UnaryFn::Expm1 => "expm1",
            UnaryFn::Ln => "ln",
            UnaryFn::Log10 => "log10",
            UnaryFn::Log2 => "log2",
            UnaryFn::Log1p => "log1p",
            UnaryFn::Sin => "sin",
            UnaryFn::Cos => "cos",
            UnaryFn::Tan => "tan",
            UnaryFn::Asin => "asin",
            UnaryFn::Acos => "acos",
            UnaryFn::Atan => "atan",
            UnaryFn::Degrees => "degrees",
            UnaryFn::Radians => "radians",
            UnaryFn::Rint => "rint",
            UnaryFn::Sec => "sec",
            UnaryFn::Csc => "csc",
            UnaryFn::Cot => "cot",
            UnaryFn::Sinh => "sinh",
            UnaryFn::Cosh => "cosh",
            UnaryFn::Tanh => "tanh",
            UnaryFn::Asinh => "asinh",
            UnaryFn::Acosh => "acosh",
            UnaryFn::Atanh => "atanh",
        }
    }
}

impl MathFn {
    /// Spark's name.
    pub fn name(self) -> &'static str {
        match self {
            MathFn::Abs { .. } => "abs",
            MathFn::IsNan => "isnan",
            MathFn::Round {
                half_even: false, ..
            } => "round",
            MathFn::Round { .. } => "bround",
            MathFn::FloorCeil { ceil: false } | MathFn::FloorCeilScale { ceil: false, .. } => {
                "floor"
            }
            MathFn::FloorCeilScale { .. } => "ceil",
            MathFn::FloorCeil { ceil: true } => "ceil",
            MathFn::Unary(u) => u.name(),
            MathFn::Pow => "power",
            MathFn::Atan2 => "atan2",
            MathFn::Hypot => "hypot",
            MathFn::Factorial => "factorial",
            MathFn::LogBase => "log",
            MathFn::Pmod { .. } => "pmod",
            MathFn::IntDiv { .. } => "div",
            MathFn::Extreme { greatest: true } => "greatest",
            MathFn::Extreme { greatest: false } => "least",
            MathFn::Signum => "signum",
            MathFn::NanVl => "nanvl",
            MathFn::Constant(_) => "pi",
        }
    }

    pub(crate) fn evaluate(self, a: &Args) -> Result<ArrayRef> {
        let n = a.rows();
        match self {
            MathFn::Abs { ansi: true } => crate::eval::abs(a.array(0)),
            MathFn::Abs { ansi: false } => wrapping_abs(a.array(0)),
            MathFn::IsNan => {
                let f = a.array(0).as_primitive::<Float64Type>();
                Ok(Arc::new(BooleanArray::from_iter(
                    (0..f.len()).map(|i| Some(f.is_valid(i) && f.value(i).is_nan())),
                )))
            }
            MathFn::Round {
                scale,
                half_even,
                ansi,
            } => round(&a.full(0)?, scale, half_even, ansi),
            MathFn::FloorCeil { ceil } => floor_ceil(&a.full(0)?, ceil),
            MathFn::FloorCeilScale { scale, ceil } => decimal_floor_ceil(&a.full(0)?, scale, ceil),
            MathFn::Unary(u) => {
                let x = a.prim::<Float64Type>(0)?;
                build_prims::<Float64Type>(n, |i| Ok(x.get(i).and_then(|v| u.apply(v))))
            }
            MathFn::Factorial => {
                let x = a.prim::<arrow_array::types::Int32Type>(0)?;
                build_prims::<arrow_array::types::Int64Type>(n, |i| {
                    Ok(x.get(i)
                        .filter(|v| (0..=20).contains(v))
                        .map(|v| (1..=i64::from(v)).product::<i64>()))
                })
            }
            MathFn::Pow | MathFn::Atan2 | MathFn::LogBase | MathFn::Hypot => {
                let x = a.prim::<Float64Type>(0)?;
                let y = a.prim::<Float64Type>(1)?;
                build_prims::<Float64Type>(n, |i| {
                    Ok(match (x.get(i), y.get(i)) {
                        (Some(x), Some(y)) => match self {
                            MathFn::Pow => Some(x.powf(y)),
                            MathFn::Atan2 => Some(x.atan2(y + 0.0)),
                            MathFn::Hypot => Some(hypot(x, y)),
                            _ if x <= 0.0 || y <= 0.0 => None,
                            _ => Some(y.ln() / x.ln()),
                        },
                        _ => None,
                    })
                })
            }
            MathFn::Pmod { ansi, precision } => pmod(&a.full(0)?, &a.full(1)?, ansi, precision),
            MathFn::IntDiv {
                ansi,
                decimal: false,
            } => int_div(&a.full(0)?, &a.full(1)?, ansi),
            MathFn::IntDiv {
                ansi,
                decimal: true,
            } => decimal_int_div(&a.full(0)?, &a.full(1)?, ansi),
            MathFn::Extreme { greatest } => {
                let mut acc = a.full(0)?;
                for i in 1..a.len() {
                    let next = a.full(i)?;
                    // Spark's order: -0.0 equals 0.0 (ties keep the earlier argument).
                    let (nk, ak) = (crate::normalize_key(&next), crate::normalize_key(&acc));
                    let better = if greatest {
                        arrow_ord::cmp::gt(&nk, &ak)?
                    } else {
                        arrow_ord::cmp::lt(&nk, &ak)?
                    };
                    let take: BooleanArray = (0..acc.len())
                        .map(|r| {
                            Some(
                                next.is_valid(r)
                                    && (acc.is_null(r) || (better.is_valid(r) && better.value(r))),
                            )
                        })
                        .collect();
                    acc = arrow_select::zip::zip(&take, &next, &acc)?;
                }
                Ok(acc)
            }
            MathFn::Signum => {
                let x = a.prim::<Float64Type>(0)?;
                build_prims::<Float64Type>(n, |i| {
                    Ok(x.get(i).map(|v| {
                        if v == 0.0 || v.is_nan() {
                            v
                        } else {
                            v.signum()
                        }
                    }))
                })
            }
            MathFn::NanVl => {
                let x = a.prim::<Float64Type>(0)?;
                let y = a.prim::<Float64Type>(1)?;
                build_prims::<Float64Type>(n, |i| {
                    Ok(match x.get(i) {
                        Some(v) if v.is_nan() => y.get(i),
                        other => other,
                    })
                })
            }
            MathFn::Constant(c) => Ok(Arc::new(Float64Array::from(vec![c; n.max(1)]))),
        }
    }
}

/// Rounds a double the way Spark does: through its shortest decimal text.
pub fn round_f64(x: f64, scale: i32, half_even: bool) -> f64 {
    let r = round_f64_signed(x, scale, half_even);
    // Spark rounds through BigDecimal, which has no negative zero.
    if r == 0.0 {
        0.0
    } else {
        r
    }
}

fn round_f64_signed(x: f64, scale: i32, half_even: bool) -> f64 {
    if !x.is_finite() {
        return x;
    }
    let text = format!("{:e}", x.abs());
    let (mantissa, exp) = match text.split_once('e') {
        Some((m, e)) => (m.replace('.', ""), e.parse::<i32>().unwrap_or(0)),
        None => return x,
    };
    let digits: Vec<u8> = mantissa.bytes().map(|b| b - b'0').collect();
    // Digits kept: those at or above 10^-scale; digit k has weight 10^(exp - k).
    let keep = exp + 1 + scale;
    if keep >= digits.len() as i32 {
        return x;
    }
    let sign = if x < 0.0 { -1.0 } else { 1.0 };
    if keep < 0 {
        return 0.0 * sign;
    }
    let keep = keep as usize;
    let first_dropped = digits[keep];
    let rest_nonzero = digits[keep + 1..].iter().any(|&d| d != 0);
    let mut kept: Vec<u8> = digits[..keep].to_vec();
    let last_odd = kept.last().is_some_and(|d| d % 2 == 1);
    let up = if half_even {
        first_dropped > 5 || (first_dropped == 5 && (rest_nonzero || last_odd))
    } else {
        first_dropped >= 5
    };
    let mut carry_exp = exp;
    if up && add_one_ulp(&mut kept) {
        carry_exp += 1;
    }
    if kept.is_empty() {
        return 0.0 * sign;
    }
    let body: String = kept.iter().map(|d| (d + b'0') as char).collect();
    let value: f64 = format!("{}e{}", body, carry_exp - kept.len() as i32 + 1)
        .parse()
        .unwrap_or(x.abs());
    value * sign
}

/// Adds one to the last of the decimal `digits`, carrying leftwards; true when the carry
/// left a new leading 1 (`999` -> `1000`), which moves the decimal point.
pub(crate) fn add_one_ulp(digits: &mut Vec<u8>) -> bool {
    for d in digits.iter_mut().rev() {
        if *d == 9 {
            *d = 0;
        } else {
            *d += 1;
            return false;
        }
    }
    digits.insert(0, 1);
    true
}

fn pow10_i128(k: u32) -> Option<i128> {
    10i128.checked_pow(k)
}

/// Rounds an unscaled decimal from scale `from` to scale `to` (`to < from`).
fn round_unscaled(v: i128, from: i32, to: i32, half_even: bool) -> Option<i128> {
    let drop = (from - to) as u32;
    let Some(d) = pow10_i128(drop) else {
        return Some(0);
    };
    let q = v / d;
    let r = v % d;
    let twice = r.abs().checked_mul(2)?;
    let up = match twice.cmp(&d) {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Equal => !half_even || q % 2 != 0,
        std::cmp::Ordering::Less => false,
    };
    Some(if up { q + v.signum() } else { q })
}

/// Spark's `RoundBase.dataType` for DECIMAL(p, s) rounded to `scale` digits.
pub fn round_decimal_type(p: u8, s: i8, scale: i32) -> DataType {
    let (p, s) = (p as i32, s as i32);
    let integral = p - s + 1;
    if scale < 0 {
        let np = integral.max(-scale + 1).min(38);
        DataType::Decimal128(np as u8, 0)
    } else {
        let ns = s.min(scale);
        DataType::Decimal128((integral + ns).min(38) as u8, ns as i8)
    }
}

fn round(a: &ArrayRef, scale: i32, half_even: bool, ansi: bool) -> Result<ArrayRef> {
    macro_rules! int_round {
        ($t:ty, $name:expr) => {{
            if scale >= 0 {
                return Ok(a.clone());
            }
            // An integer is a decimal of scale 0, rounded to `scale` and scaled back up; past
            // 10^38 every integer rounds to 0. A result past the type's range wraps as
            // Spark's legacy mode does, or is refused under ANSI.
            let d = pow10_i128((-scale) as u32).unwrap_or(0);
            let out = a
                .as_primitive::<$t>()
                .iter()
                .map(|v| {
                    v.map(|v| {
                        let r = round_unscaled(v as i128, 0, scale, half_even).unwrap_or(0) * d;
                        match <<$t as arrow_array::ArrowPrimitiveType>::Native>::try_from(r) {
                            Ok(x) => Ok(x),
                            Err(_) if ansi => Err(FerroError::Arithmetic(format!(
                                "[ARITHMETIC_OVERFLOW] Overflow in {}({v}, {scale}). If necessary set \"spark.sql.ansi.enabled\" to \"false\" to bypass this error. SQLSTATE: 22003",
                                $name
                            ))),
                            Err(_) => Ok(r as _),
                        }
                    })
                    .transpose()
                })
                .collect::<Result<PrimitiveArray<$t>>>()?;
            Arc::new(out) as ArrayRef
        }};
    }
    let name = if half_even { "bround" } else { "round" };
    Ok(match a.data_type() {
        DataType::Float64 => Arc::new(
            a.as_primitive::<Float64Type>()
                .unary::<_, Float64Type>(|v| round_f64(v, scale, half_even)),
        ),
        DataType::Float32 => Arc::new(
            a.as_primitive::<Float32Type>()
                .unary::<_, Float32Type>(|v| round_f64(v as f64, scale, half_even) as f32),
        ),
        DataType::Int8 => int_round!(Int8Type, name),
        DataType::Int16 => int_round!(Int16Type, name),
        DataType::Int32 => int_round!(Int32Type, name),
        DataType::Int64 => int_round!(Int64Type, name),
        DataType::Decimal128(p, s) => {
            let out_t = round_decimal_type(*p, *s, scale);
            let DataType::Decimal128(op, os) = out_t else {
                return Err(FerroError::Internal("round type".into()));
            };
            let s = *s as i32;
            let arr = a.as_primitive::<Decimal128Type>();
            let out: PrimitiveArray<Decimal128Type> = arr
                .iter()
                .map(|v| {
                    v.and_then(|v| {
                        if scale >= s {
                            return Some(v);
                        }
                        let r = round_unscaled(v, s, scale, half_even)?;
                        if scale < 0 {
                            r.checked_mul(pow10_i128((-scale) as u32)?)
                        } else {
                            Some(r)
                        }
                    })
                })
                .collect();
            Arc::new(out.with_precision_and_scale(op, os)?)
        }
        other => return Err(FerroError::Internal(format!("round of {other}"))),
    })
}

fn decimal_floor_ceil(a: &ArrayRef, scale: i32, ceil: bool) -> Result<ArrayRef> {
    let DataType::Decimal128(p, s) = a.data_type() else {
        return Err(FerroError::Internal(format!(
            "floor/ceil with a scale of {}",
            a.data_type()
        )));
    };
    let DataType::Decimal128(op, os) = round_decimal_type(*p, *s, scale) else {
        return Err(FerroError::Internal("floor/ceil type".into()));
    };
    let s = *s as i32;
    let out: PrimitiveArray<Decimal128Type> = a
        .as_primitive::<Decimal128Type>()
        .iter()
        .map(|v| {
            v.and_then(|v| {
                if scale >= s {
                    return Some(v);
                }
                let d = pow10_i128((s - scale) as u32)?;
                let q = v.div_euclid(d);
                let q = if ceil && v.rem_euclid(d) != 0 {
                    q + 1
                } else {
                    q
                };
                if scale < 0 {
                    q.checked_mul(pow10_i128((-scale) as u32)?)
                } else {
                    Some(q)
                }
            })
        })
        .collect();
    Ok(Arc::new(out.with_precision_and_scale(op, os)?))
}

fn wrapping_abs(a: &ArrayRef) -> Result<ArrayRef> {
    macro_rules! wrap {
        ($t:ty) => {
            Arc::new(a.as_primitive::<$t>().unary::<_, $t>(|x| x.wrapping_abs())) as ArrayRef
        };
    }
    Ok(match a.data_type() {
        DataType::Int8 => wrap!(Int8Type),
        DataType::Int16 => wrap!(Int16Type),
        DataType::Int32 => wrap!(Int32Type),
        DataType::Int64 => wrap!(Int64Type),
        _ => crate::eval::abs(a)?,
    })
}

fn floor_ceil(a: &ArrayRef, ceil: bool) -> Result<ArrayRef> {
    Ok(match a.data_type() {
        DataType::Float64 => Arc::new(
            a.as_primitive::<Float64Type>()
                .unary::<_, Int64Type>(|v| if ceil { v.ceil() } else { v.floor() } as i64),
        ),
        DataType::Int64 => a.clone(),
        DataType::Decimal128(p, s) => {
            let s = *s as i32;
            if s == 0 {
                return Ok(a.clone());
            }
            let d = pow10_i128(s as u32).unwrap_or(i128::MAX);
            let out: PrimitiveArray<Decimal128Type> = a
                .as_primitive::<Decimal128Type>()
                .iter()
                .map(|v| {
                    v.map(|v| {
                        let q = v.div_euclid(d);
                        if ceil && v.rem_euclid(d) != 0 {
                            q + 1
                        } else {
                            q
                        }
                    })
                })
                .collect();
            let p = (*p as i32 - s + 1).clamp(1, 38) as u8;
            Arc::new(out.with_precision_and_scale(p, 0)?)
        }
        other => return Err(FerroError::Internal(format!("floor/ceil of {other}"))),
    })
}

fn remainder_by_zero() -> FerroError {
    FerroError::Arithmetic(
        "[REMAINDER_BY_ZERO] Remainder by zero. Use `try_mod` to tolerate divisor being 0 and return NULL instead. If necessary set \"spark.sql.ansi.enabled\" to \"false\" to bypass this error.".into(),
    )
}

fn divide_by_zero() -> FerroError {
    FerroError::Arithmetic(
        "[DIVIDE_BY_ZERO] Division by zero. Use `try_divide` to tolerate divisor being 0 and return NULL instead. If necessary set \"spark.sql.ansi.enabled\" to \"false\" to bypass this error.".into(),
    )
}

/// Spark's `pmod` row by row: `r = a % n; if r < 0 { (r + n) % n } else { r }`; a zero
/// divisor raises under ANSI, NULL otherwise.
fn pmod_rows<T: ArrowPrimitiveType>(
    a: &ArrayRef,
    b: &ArrayRef,
    ansi: bool,
    zero: T::Native,
    pmod: impl Fn(T::Native, T::Native) -> T::Native,
) -> Result<ArrayRef>
where
    T::Native: PartialEq,
{
    let (x, y) = (a.as_primitive::<T>(), b.as_primitive::<T>());
    let mut out = Vec::with_capacity(x.len());
    for i in 0..x.len() {
        if x.is_null(i) || y.is_null(i) {
            out.push(None);
        } else if y.value(i) == zero {
            if ansi {
                return Err(remainder_by_zero());
            }
            out.push(None);
        } else {
            out.push(Some(pmod(x.value(i), y.value(i))));
        }
    }
    Ok(Arc::new(out.into_iter().collect::<PrimitiveArray<T>>()))
}

fn pmod(a: &ArrayRef, b: &ArrayRef, ansi: bool, precision: Option<u8>) -> Result<ArrayRef> {
    macro_rules! int_pmod {
        ($t:ty) => {
            pmod_rows::<$t>(a, b, ansi, 0, |v, m| {
                let r = v.wrapping_rem(m);
                if r < 0 {
                    r.wrapping_add(m).wrapping_rem(m)
                } else {
                    r
                }
            })
        };
    }
    match a.data_type() {
        DataType::Int8 => int_pmod!(Int8Type),
        DataType::Int16 => int_pmod!(Int16Type),
        DataType::Int32 => int_pmod!(Int32Type),
        DataType::Int64 => int_pmod!(Int64Type),
        DataType::Float64 => pmod_rows::<Float64Type>(a, b, ansi, 0.0, |v, m| {
            let r = v % m;
            if r < 0.0 {
                (r + m) % m
            } else {
                r
            }
        }),
        DataType::Float32 => pmod_rows::<Float32Type>(a, b, ansi, 0.0, |v, m| {
            let r = v % m;
            if r < 0.0 {
                (r + m) % m
            } else {
                r
            }
        }),
        // Both on one scale: their unscaled values' remainder is the decimal remainder.
        DataType::Decimal128(p, s) => {
            let r = pmod_rows::<Decimal128Type>(a, b, ansi, 0, |v, m| {
                let r = v % m;
                if r < 0 {
                    (r + m) % m
                } else {
                    r
                }
            })?;
            Ok(Arc::new(
                r.as_primitive::<Decimal128Type>()
                    .clone()
                    .with_precision_and_scale(precision.unwrap_or(*p), *s)?,
            ))
        }
        other => Err(FerroError::Internal(format!("pmod of {other}"))),
    }
}

/// `a div b` of BIGINTs.
fn int_div(a: &ArrayRef, b: &ArrayRef, ansi: bool) -> Result<ArrayRef> {
    let (x, y) = (a.as_primitive::<Int64Type>(), b.as_primitive::<Int64Type>());
    quotients(
        (0..x.len()).map(|i| {
            (x.is_valid(i) && y.is_valid(i)).then(|| (x.value(i).into(), y.value(i).into()))
        }),
        ansi,
    )
}

/// `a div b` of decimals on one scale: their unscaled values divide.
fn decimal_int_div(a: &ArrayRef, b: &ArrayRef, ansi: bool) -> Result<ArrayRef> {
    let (x, y) = (
        a.as_primitive::<Decimal128Type>(),
        b.as_primitive::<Decimal128Type>(),
    );
    quotients(
        (0..x.len()).map(|i| (x.is_valid(i) && y.is_valid(i)).then(|| (x.value(i), y.value(i)))),
        ansi,
    )
}

/// The BIGINT quotients (truncated) of `(dividend, divisor)` pairs, NULL where either is:
/// a zero divisor is DIVIDE_BY_ZERO and a quotient past BIGINT ARITHMETIC_OVERFLOW under
/// ANSI; otherwise NULL and the quotient's low 64 bits (Java's `Long.MIN_VALUE / -1`).
fn quotients(pairs: impl Iterator<Item = Option<(i128, i128)>>, ansi: bool) -> Result<ArrayRef> {
    let mut out = Vec::with_capacity(pairs.size_hint().0);
    for pair in pairs {
        let Some((v, d)) = pair else {
            out.push(None);
            continue;
        };
        if d == 0 {
            if ansi {
                return Err(divide_by_zero());
            }
            out.push(None);
            continue;
        }
        let q = v / d;
        match i64::try_from(q) {
            Ok(q) => out.push(Some(q)),
            Err(_) if ansi => {
                return Err(FerroError::Arithmetic(
                    "[ARITHMETIC_OVERFLOW] Overflow in integral divide. Use 'try_divide' to tolerate overflow and return NULL instead.".into(),
                ))
            }
            Err(_) => out.push(Some(q as i64)),
        }
    }
    Ok(Arc::new(PrimitiveArray::<Int64Type>::from(out)))
}

/// The literal integer of a `round` scale argument.
fn literal_int(call: &Call<'_, '_>, e: &PhysicalExpr) -> Result<i32> {
    if let PhysicalExpr::Literal(l) = e {
        let a = l.array();
        if a.is_valid(0) {
            if let Ok(v) = arrow_cast::cast(a, &DataType::Int32) {
                return Ok(v.as_primitive::<Int32Type>().value(0));
            }
        }
    }
    Err(FerroError::Analysis(format!(
        "[DATATYPE_MISMATCH.NON_FOLDABLE_INPUT] Cannot resolve \"{}\": the scale of `{}` must be a constant integer, got \"{e}\".",
        call.expr, call.name
    )))
}

/// `sqrt(x² + y²)` while the squares neither overflow nor vanish (libm's `hypot` and Java's
/// `StrictMath.hypot` may round the last bit differently; this form gave Spark's bits on the
/// tested values), `f64::hypot` (no intermediate overflow) for the others.
fn hypot(x: f64, y: f64) -> f64 {
    let s = x * x + y * y;
    if s.is_finite() && s > f64::MIN_POSITIVE {
        s.sqrt()
    } else {
        x.hypot(y)
    }
}

pub(crate) fn bind(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    let ansi = call.ctx.ansi;
    let numeric = |i: usize, a: &PhysicalExpr| -> Result<DataType> {
        let t = spark_equivalent(&a.data_type());
        match t {
            DataType::Null => Ok(DataType::Float64),
            DataType::Utf8 => Ok(DataType::Float64),
            t if is_numeric(&t) => Ok(t),
            _ => Err(call.wrong_type(i, a, "the \"NUMERIC\" type")),
        }
    };
    let unary = |u: UnaryFn| -> Option<MathFn> { Some(MathFn::Unary(u)) };
    // `a % b` as the operator binds it (its decimal type is also `pmod`'s).
    let remainder = |args: &[PhysicalExpr]| {
        crate::bind::arithmetic(
            call.expr,
            BinaryOp::Modulo,
            args[0].clone(),
            args[1].clone(),
            call.ctx,
            ansi,
        )
    };
    let simple = match call.name {
        "sqrt" => unary(UnaryFn::Sqrt),
        "cbrt" => unary(UnaryFn::Cbrt),
        "exp" => unary(UnaryFn::Exp),
        "expm1" => unary(UnaryFn::Expm1),
        "ln" => unary(UnaryFn::Ln),
        "log" if args.len() == 1 => unary(UnaryFn::Ln),
        "log10" => unary(UnaryFn::Log10),
        "log2" => unary(UnaryFn::Log2),
        "log1p" => unary(UnaryFn::Log1p),
        "sin" => unary(UnaryFn::Sin),
        "cos" => unary(UnaryFn::Cos),
        "tan" => unary(UnaryFn::Tan),
        "asin" => unary(UnaryFn::Asin),
        "acos" => unary(UnaryFn::Acos),
        "atan" => unary(UnaryFn::Atan),
        "degrees" => unary(UnaryFn::Degrees),
        "radians" => unary(UnaryFn::Radians),
        "rint" => unary(UnaryFn::Rint),
        "sec" => unary(UnaryFn::Sec),
        "csc" => unary(UnaryFn::Csc),
        "cot" => unary(UnaryFn::Cot),
        "sinh" => unary(UnaryFn::Sinh),
        "cosh" => unary(UnaryFn::Cosh),
        "tanh" => unary(UnaryFn::Tanh),
        "asinh" => unary(UnaryFn::Asinh),
        "acosh" => unary(UnaryFn::Acosh),
        "atanh" => unary(UnaryFn::Atanh),
        "signum" | "sign" => Some(MathFn::Signum),
        _ => None,
    };
    if let Some(f) = simple {
        call.arity(&args, 1, 1)?;
        let x = call.double_arg(0, args[0].clone())?;
        return Ok(Bound::Done(call.function(
            ScalarFunction::Math(f),
            vec![x],
            DataType::Float64,
        )));
    }
    if call.name == "factorial" {
        call.arity(&args, 1, 1)?;
        let x = call.int_arg(0, args[0].clone(), &DataType::Int32)?;
        return Ok(Bound::Done(call.function(
            ScalarFunction::Math(MathFn::Factorial),
            vec![x],
            DataType::Int64,
        )));
    }
    let two_doubles = match call.name {
        "pow" | "power" => Some(MathFn::Pow),
        "atan2" => Some(MathFn::Atan2),
        "hypot" => Some(MathFn::Hypot),
        "log" => Some(MathFn::LogBase),
        "nanvl" => Some(MathFn::NanVl),
        _ => None,
    };
    if let Some(f) = two_doubles {
        call.arity(&args, 2, 2)?;
        let x = call.double_arg(0, args[0].clone())?;
        let y = call.double_arg(1, args[1].clone())?;
        if f == MathFn::NanVl {
            // `y` only where `x` is NaN, as Spark evaluates it: `nanvl(1, 1 / 0)` is 1.
            let nan = call.function(
                ScalarFunction::Math(MathFn::IsNan),
                vec![x.clone()],
                DataType::Boolean,
            );
            return Ok(Bound::Done(PhysicalExpr::Case {
                branches: vec![(nan, y)],
                otherwise: Some(Box::new(x)),
                data_type: DataType::Float64,
            }));
        }
        return Ok(Bound::Done(call.function(
            ScalarFunction::Math(f),
            vec![x, y],
            DataType::Float64,
        )));
    }
    Ok(Bound::Done(match call.name {
        "abs" => {
            call.arity(&args, 1, 1)?;
            let t = numeric(0, &args[0])?;
            call.function(
                ScalarFunction::Math(MathFn::Abs { ansi }),
                vec![cast_to(args[0].clone(), &t)],
                t,
            )
        }
        "isnan" => {
            call.arity(&args, 1, 1)?;
            numeric(0, &args[0])?;
            call.function(
                ScalarFunction::Math(MathFn::IsNan),
                vec![cast_to(args[0].clone(), &DataType::Float64)],
                DataType::Boolean,
            )
        }
        "negative" => {
            call.arity(&args, 1, 1)?;
            // PySpark's `-col` is `negative(col)`: an interval negates as `-i` does.
            let it = crate::types::spark_equivalent(&args[0].data_type());
            if crate::types::is_ansi_interval(&it) {
                return Ok(Bound::Done(crate::functions::interval::node(
                    crate::functions::IntervalFn::Negate,
                    vec![args[0].clone()],
                    it,
                )));
            }
            let t = numeric(0, &args[0])?;
            PhysicalExpr::Negative(Box::new(cast_to(args[0].clone(), &t)))
        }
        "positive" => {
            call.arity(&args, 1, 1)?;
            // `+x` is `x` for numbers and intervals; Spark refuses it on other types.
            if matches!(
                args[0].data_type(),
                DataType::Interval(_) | DataType::Duration(_)
            ) {
                return Ok(Bound::Done(args[0].clone()));
            }
            let t = numeric(0, &args[0])?;
            cast_to(args[0].clone(), &t)
        }
        "pi" | "e" => {
            call.arity(&args, 0, 0)?;
            let v = if call.name == "pi" {
                std::f64::consts::PI
            } else {
                std::f64::consts::E
            };
            PhysicalExpr::Literal(Literal::double(v))
        }
        "round" | "bround" => {
            call.arity(&args, 1, 2)?;
            let scale = match args.get(1) {
                Some(s) => literal_int(call, s)?,
                None => 0,
            };
            let t = numeric(0, &args[0])?;
            let out = match &t {
                DataType::Decimal128(p, s) => round_decimal_type(*p, *s, scale),
                t => t.clone(),
            };
            call.function(
                ScalarFunction::Math(MathFn::Round {
                    scale,
                    half_even: call.name == "bround",
                    ansi,
                }),
                vec![cast_to(args[0].clone(), &t)],
                out,
            )
        }
        "floor" | "ceil" | "ceiling" if args.len() == 2 => {
            let scale = literal_int(call, &args[1])?;
            let t = numeric(0, &args[0])?;
            let input = match &t {
                DataType::Decimal128(..) => t.clone(),
                DataType::Int8 => DataType::Decimal128(3, 0),
                DataType::Int16 => DataType::Decimal128(5, 0),
                DataType::Int32 => DataType::Decimal128(10, 0),
                DataType::Int64 => DataType::Decimal128(20, 0),
                _ => DataType::Decimal128(30, 15),
            };
            let DataType::Decimal128(p, s) = input else {
                return Err(FerroError::Internal("floor/ceil input".into()));
            };
            call.function(
                ScalarFunction::Math(MathFn::FloorCeilScale {
                    scale,
                    ceil: call.name != "floor",
                }),
                vec![cast_to(args[0].clone(), &input)],
                round_decimal_type(p, s, scale),
            )
        }
        "floor" | "ceil" | "ceiling" => {
            call.arity(&args, 1, 1)?;
            let t = numeric(0, &args[0])?;
            let (input, out) = match &t {
                DataType::Decimal128(p, s) if *s > 0 => (
                    t.clone(),
                    DataType::Decimal128((*p as i32 - *s as i32 + 1).clamp(1, 38) as u8, 0),
                ),
                DataType::Decimal128(..) => (t.clone(), t.clone()),
                t if is_integral(t) => (DataType::Int64, DataType::Int64),
                _ => (DataType::Float64, DataType::Int64),
            };
            call.function(
                ScalarFunction::Math(MathFn::FloorCeil {
                    ceil: call.name != "floor",
                }),
                vec![cast_to(args[0].clone(), &input)],
                out,
            )
        }
        "pmod" => {
            call.arity(&args, 2, 2)?;
            let (lt, rt) = (numeric(0, &args[0])?, numeric(1, &args[1])?);
            let t = crate::types::wider_numeric(&lt, &rt).unwrap_or(DataType::Float64);
            if let DataType::Decimal128(..) = t {
                // Decimals keep the remainder's type (Spark's rule for `%`), computed on one
                // scale.
                let out = remainder(&args)?.data_type();
                let DataType::Decimal128(precision, scale) = out else {
                    return Err(FerroError::Internal(format!("pmod of decimals as {out}")));
                };
                let operand = DataType::Decimal128(crate::types::MAX_DECIMAL_PRECISION, scale);
                return Ok(Bound::Done(call.function(
                    ScalarFunction::Math(MathFn::Pmod {
                        ansi,
                        precision: Some(precision),
                    }),
                    vec![
                        cast_to(args[0].clone(), &operand),
                        cast_to(args[1].clone(), &operand),
                    ],
                    out,
                )));
            }
            let t = if is_floating(&t) && t != DataType::Float32 {
                DataType::Float64
            } else {
                t
            };
            call.function(
                ScalarFunction::Math(MathFn::Pmod {
                    ansi,
                    precision: None,
                }),
                vec![cast_to(args[0].clone(), &t), cast_to(args[1].clone(), &t)],
                t,
            )
        }
        "mod" => {
            call.arity(&args, 2, 2)?;
            remainder(&args)?
        }
        "try_divide" => {
            call.arity(&args, 2, 2)?;
            crate::bind::arithmetic(
                call.expr,
                BinaryOp::Divide,
                args[0].clone(),
                args[1].clone(),
                call.ctx,
                false,
            )?
        }
        "div" => {
            call.arity(&args, 2, 2)?;
            // Integers and decimals (a NULL as either), the quotient truncated to a BIGINT.
            let mut scale = None;
            for (i, a) in args.iter().enumerate() {
                match spark_equivalent(&a.data_type()) {
                    DataType::Null => {}
                    DataType::Decimal128(_, s) => scale = Some(scale.unwrap_or(0).max(s)),
                    t if is_integral(&t) => {}
                    _ => return Err(call.wrong_type(i, a, "the \"BIGINT\" type")),
                }
            }
            // Decimals divide on one scale: both as DECIMAL(38, s), their unscaled values.
            let (t, f) = match scale {
                Some(s) => (
                    DataType::Decimal128(38, s),
                    MathFn::IntDiv {
                        ansi,
                        decimal: true,
                    },
                ),
                None => (
                    DataType::Int64,
                    MathFn::IntDiv {
                        ansi,
                        decimal: false,
                    },
                ),
            };
            call.function(
                ScalarFunction::Math(f),
                vec![cast_to(args[0].clone(), &t), cast_to(args[1].clone(), &t)],
                DataType::Int64,
            )
        }
        "greatest" | "least" => {
            call.arity(&args, 2, usize::MAX)?;
            let t = call.common_type(&args.iter().collect::<Vec<_>>())?;
            call.function(
                ScalarFunction::Math(MathFn::Extreme {
                    greatest: call.name == "greatest",
                }),
                args.into_iter().map(|a| cast_to(a, &t)).collect(),
                t,
            )
        }
        _ => return Ok(Bound::NotMine(args)),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_uses_the_decimal_text() {
        assert_eq!(round_f64(2.675, 2, false), 2.68);
        assert_eq!(round_f64(-2.5, 0, false), -3.0);
        assert_eq!(round_f64(2.5, 0, true), 2.0);
        assert_eq!(round_f64(3.5, 0, true), 4.0);
        assert_eq!(round_f64(1234.5, -2, false), 1200.0);
        assert_eq!(round_f64(9.99, 1, false), 10.0);
        assert_eq!(round_f64(0.004, 2, false), 0.0);
        assert_eq!(round_f64(1e300, 2, false), 1e300);
    }

    #[test]
    fn decimal_round_type_follows_spark() {
        assert_eq!(round_decimal_type(12, 2, 1), DataType::Decimal128(12, 1));
        assert_eq!(round_decimal_type(12, 2, 0), DataType::Decimal128(11, 0));
        assert_eq!(round_decimal_type(12, 2, -1), DataType::Decimal128(11, 0));
        assert_eq!(round_decimal_type(12, 2, 5), DataType::Decimal128(13, 2));
    }
}
