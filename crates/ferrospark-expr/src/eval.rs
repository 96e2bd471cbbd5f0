//! Evaluation of [`PhysicalExpr`] over a [`RecordBatch`] with Spark's semantics:
//! three-valued logic, NaN equal to NaN and above every number, -0.0 equal to 0.0,
//! ANSI overflow and division-by-zero errors, exact decimal arithmetic.

use std::sync::Arc;

use arrow_arith::boolean::{and_kleene, is_not_null, is_null, not, or_kleene};
use arrow_arith::numeric;
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
};
use arrow_array::{
    Array, ArrayRef, BooleanArray, Datum, Float32Array, Float64Array, Int32Array, PrimitiveArray,
    RecordBatch, Scalar, StringArray, StructArray, UInt32Array,
};
use arrow_buffer::{i256, NullBuffer};
use arrow_cast::{cast_with_options, CastOptions};
use arrow_schema::DataType;

use ferrospark_common::{FerroError, Result};

use crate::expr::{BinaryOp, StringMatch};
use crate::physical::PhysicalExpr;
use crate::types::{is_decimal, is_floating, is_integral, is_string};

/// The value of an expression over a batch: a column, or one value standing for every row.
#[derive(Debug, Clone)]
pub enum ColumnarValue {
    /// One value per row.
    Array(ArrayRef),
    /// A length-1 array whose value holds for every row.
    Scalar(Scalar<ArrayRef>),
}

impl ColumnarValue {
    fn from_result(a: ArrayRef, scalar: bool) -> Self {
        if scalar {
            ColumnarValue::Scalar(Scalar::new(a))
        } else {
            ColumnarValue::Array(a)
        }
    }

    /// Whether the value is one literal for every row.
    pub fn is_scalar(&self) -> bool {
        matches!(self, ColumnarValue::Scalar(_))
    }

    /// The text of a literal string (`None` for a column or NULL).
    pub fn const_str(&self) -> Option<&str> {
        match self {
            ColumnarValue::Scalar(s) => single_str(s.get().0),
            ColumnarValue::Array(_) => None,
        }
    }

    fn datum(&self) -> &dyn Datum {
        match self {
            ColumnarValue::Array(a) => a,
            ColumnarValue::Scalar(s) => s,
        }
    }

    /// Materialises the value as an array of `n` rows.
    pub fn into_array(self, n: usize) -> Result<ArrayRef> {
        match self {
            ColumnarValue::Array(a) => Ok(a),
            ColumnarValue::Scalar(s) => expand_scalar(s.into_inner(), n),
        }
    }

    fn map(self, f: impl FnOnce(&ArrayRef) -> Result<ArrayRef>) -> Result<Self> {
        let scalar = self.is_scalar();
        let a = match &self {
            ColumnarValue::Array(a) => f(a)?,
            ColumnarValue::Scalar(s) => f(&s_inner(s))?,
        };
        Ok(Self::from_result(a, scalar))
    }
}

/// The value of a one-row string array, unless NULL.
pub(crate) fn single_str(a: &dyn Array) -> Option<&str> {
    let a = a.as_string_opt::<i32>()?;
    (a.len() == 1 && a.is_valid(0)).then(|| a.value(0))
}

fn s_inner(s: &Scalar<ArrayRef>) -> ArrayRef {
    s.clone().into_inner()
}

fn expand_scalar(a: ArrayRef, n: usize) -> Result<ArrayRef> {
    if a.is_null(0) {
        return Ok(arrow_array::new_null_array(a.data_type(), n));
    }
    let idx = UInt32Array::from(vec![0u32; n]);
    Ok(arrow_select::take::take(&a, &idx, None)?)
}

/// `expr` over each row of `batch` alone, NULL where it raises an ANSI error: Spark's
/// `TryEval` is per row, and only a batch that raised somewhere comes here.
fn try_rows(expr: &PhysicalExpr, batch: &RecordBatch) -> Result<ColumnarValue> {
    let mut parts: Vec<ArrayRef> = Vec::with_capacity(batch.num_rows());
    let t = expr.data_type();
    for i in 0..batch.num_rows() {
        let row = batch.slice(i, 1);
        parts.push(match evaluate(expr, &row) {
            Ok(v) => v.into_array(1)?,
            Err(FerroError::Arithmetic(_)) => arrow_array::new_null_array(&t, 1),
            Err(other) => return Err(other),
        });
    }
    if parts.is_empty() {
        return Ok(ColumnarValue::Array(arrow_array::new_empty_array(&t)));
    }
    let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
    Ok(ColumnarValue::Array(arrow_select::concat::concat(&refs)?))
}

/// Evaluates `expr` over `batch`.
pub fn evaluate(expr: &PhysicalExpr, batch: &RecordBatch) -> Result<ColumnarValue> {
    let n = batch.num_rows();
    let ev = |e: &PhysicalExpr| evaluate(e, batch);
    Ok(match expr {
        PhysicalExpr::Column { index, name, .. } => {
            let col = batch.columns().get(*index).ok_or_else(|| {
                FerroError::Internal(format!("column {name} (#{index}) missing from batch"))
            })?;
            ColumnarValue::Array(col.clone())
        }
        PhysicalExpr::Field { input, index, .. } => ev(input)?.map(|a| struct_field(a, *index))?,
        PhysicalExpr::Literal(l) => ColumnarValue::Scalar(Scalar::new(l.array().clone())),
        PhysicalExpr::Not(e) => ev(e)?.map(|a| Ok(Arc::new(not(a.as_boolean())?)))?,
        PhysicalExpr::Negative(e) => ev(e)?.map(|a| Ok(numeric::neg(a)?))?,
        PhysicalExpr::Try(e) => match ev(e) {
            Ok(v) => v,
            Err(FerroError::Arithmetic(_)) => try_rows(e, batch)?,
            Err(other) => return Err(other),
        },
        PhysicalExpr::IsNull(e) => ev(e)?.map(|a| Ok(Arc::new(is_null(a)?)))?,
        PhysicalExpr::IsNotNull(e) => ev(e)?.map(|a| Ok(Arc::new(is_not_null(a)?)))?,
        PhysicalExpr::And(l, r) => {
            if let Some(v) = fused_range(l, r, batch)? {
                return Ok(v);
            }
            let lv = ev(l)?;
            // `false AND x` is false whatever x is; skip x when no row can need it.
            if let Some(done) = all_false(&lv) {
                return Ok(done);
            }
            logical(lv, ev(r)?, n, true)?
        }
        PhysicalExpr::Or(l, r) => logical(ev(l)?, ev(r)?, n, false)?,
        PhysicalExpr::Compare { op, left, right } => compare(*op, ev(left)?, ev(right)?)?,
        PhysicalExpr::Arithmetic {
            op,
            left,
            right,
            data_type,
            fail_on_error,
        } => {
            let (l, r) = (ev(left)?, ev(right)?);
            if *fail_on_error {
                arithmetic(*op, l, r, data_type, n)?
            } else {
                lenient_arithmetic(*op, l, r, data_type, n)?
            }
        }
        PhysicalExpr::Case {
            branches,
            otherwise,
            data_type,
        } => case_when(branches, otherwise.as_deref(), data_type, batch)?,
        PhysicalExpr::InList {
            expr,
            list,
            negated,
        } => {
            let v = normalize_floats(ev(expr)?)?;
            if let ColumnarValue::Array(values) = &v {
                if let Some(set) = literal_key_set(list, values.data_type()) {
                    let found = set.contains(values.as_ref());
                    let out = if *negated { not(&found)? } else { found };
                    return Ok(ColumnarValue::Array(Arc::new(out)));
                }
            }
            let mut acc: Option<ColumnarValue> = None;
            for item in list {
                let item = normalize_floats(ev(item)?)?;
                let hit = cmp_datum(BinaryOp::Eq, &v, &item)?;
                acc = Some(match acc {
                    None => hit,
                    Some(prev) => logical(prev, hit, n, false)?,
                });
            }
            let found = match acc {
                Some(a) => a,
                None => {
                    ColumnarValue::Scalar(Scalar::new(Arc::new(BooleanArray::from(vec![false]))))
                }
            };
            if *negated {
                found.map(|a| Ok(Arc::new(not(a.as_boolean())?)))?
            } else {
                found
            }
        }
        PhysicalExpr::InSet { expr, set } => match ev(expr)? {
            ColumnarValue::Array(a) => ColumnarValue::Array(Arc::new(set.contains(a.as_ref()))),
            ColumnarValue::Scalar(s) => {
                ColumnarValue::Scalar(Scalar::new(Arc::new(set.contains(s.into_inner().as_ref()))))
            }
        },
        PhysicalExpr::Like {
            expr,
            pattern,
            negated,
            case_insensitive,
        } => {
            let (v, p) = (ev(expr)?, ev(pattern)?);
            let scalar = v.is_scalar() && p.is_scalar();
            if let (false, ColumnarValue::Array(values), Some(text)) =
                (*case_insensitive, &v, p.const_str())
            {
                let pieces = crate::like_pieces::LikePieces::parse(text);
                if let Some(found) = pieces.and_then(|p| p.evaluate(values, *negated)) {
                    return Ok(ColumnarValue::Array(Arc::new(found)));
                }
            }
            let out = match (negated, case_insensitive) {
                (false, false) => arrow_string::like::like(v.datum(), p.datum())?,
                (true, false) => arrow_string::like::nlike(v.datum(), p.datum())?,
                (false, true) => arrow_string::like::ilike(v.datum(), p.datum())?,
                (true, true) => arrow_string::like::nilike(v.datum(), p.datum())?,
            };
            ColumnarValue::from_result(Arc::new(out), scalar)
        }
        PhysicalExpr::StringMatch { op, expr, pattern } => {
            let (v, p) = (ev(expr)?, ev(pattern)?);
            let scalar = v.is_scalar() && p.is_scalar();
            let out = match op {
                StringMatch::StartsWith => arrow_string::like::starts_with(v.datum(), p.datum())?,
                StringMatch::EndsWith => arrow_string::like::ends_with(v.datum(), p.datum())?,
                StringMatch::Contains => arrow_string::like::contains(v.datum(), p.datum())?,
            };
            ColumnarValue::from_result(Arc::new(out), scalar)
        }
        PhysicalExpr::Cast { expr, to, mode } => ev(expr)?.map(|a| cast_value(a, to, *mode))?,
        PhysicalExpr::Function {
            func: crate::functions::ScalarFunction::HigherOrder(f),
            args,
            ..
        } => crate::functions::higher_order::evaluate_call(*f, args, batch)?,
        PhysicalExpr::Function {
            func: crate::functions::ScalarFunction::Coalesce,
            args,
            ..
        } if args.len() > 1 => coalesce(args, batch)?,
        PhysicalExpr::LambdaVariable { name, .. } => {
            let at = batch
                .schema()
                .fields()
                .iter()
                .rposition(|f| f.name() == name)
                .ok_or_else(|| {
                    FerroError::Internal(format!("lambda variable {name} missing from batch"))
                })?;
            ColumnarValue::Array(batch.column(at).clone())
        }
        PhysicalExpr::Lambda { .. } => {
            return Err(FerroError::Internal(format!(
                "a lambda ({expr}) runs only inside its higher-order function"
            )))
        }
        PhysicalExpr::Function { func, args, .. } => {
            let vals: Vec<ColumnarValue> = args.iter().map(ev).collect::<Result<_>>()?;
            func.evaluate(&vals, n)?
        }
        PhysicalExpr::Udf {
            udf,
            args,
            session_tz,
        } => {
            let arrays = args
                .iter()
                .map(|a| ev(a)?.into_array(n))
                .collect::<Result<Vec<_>>>()?;
            ColumnarValue::Array(udf.invoke(&arrays, n, session_tz)?)
        }
    })
}

/// Evaluates a boolean expression to one value per row (NULL where the predicate is unknown).
pub fn evaluate_predicate(expr: &PhysicalExpr, batch: &RecordBatch) -> Result<BooleanArray> {
    let v = evaluate(expr, batch)?.into_array(batch.num_rows())?;
    match v.as_boolean_opt() {
        Some(b) => Ok(b.clone()),
        None => Err(FerroError::Internal(format!(
            "predicate {expr} produced {} instead of booleans",
            v.data_type()
        ))),
    }
}

/// Keeps the rows of `batch` where `predicate` is true (NULL drops the row, as in Spark).
pub fn filter_batch(batch: &RecordBatch, predicate: &PhysicalExpr) -> Result<RecordBatch> {
    let mask = evaluate_predicate(predicate, batch)?;
    if mask.true_count() == batch.num_rows() {
        return Ok(batch.clone());
    }
    Ok(arrow_select::filter::filter_record_batch(batch, &mask)?)
}

/// `x >= lo AND x <= hi` (also `>`/`<`) over an integer, date, timestamp or decimal column in
/// one pass instead of two comparisons and an AND. Floats are left to the general path, which
/// knows Spark's NaN and -0.0 rules.
fn fused_range(
    l: &PhysicalExpr,
    r: &PhysicalExpr,
    batch: &RecordBatch,
) -> Result<Option<ColumnarValue>> {
    fn bound(e: &PhysicalExpr) -> Option<(BinaryOp, &PhysicalExpr, ArrayRef)> {
        match e {
            PhysicalExpr::Compare { op, left, right } => match right.as_ref() {
                PhysicalExpr::Literal(lit) if !lit.is_null() => {
                    Some((*op, left.as_ref(), lit.array().clone()))
                }
                _ => None,
            },
            _ => None,
        }
    }
    let (Some((lop, lx, lo)), Some((hop, hx, hi))) = (bound(l), bound(r)) else {
        return Ok(None);
    };
    let lower_ok = matches!(lop, BinaryOp::GtEq | BinaryOp::Gt);
    let upper_ok = matches!(hop, BinaryOp::LtEq | BinaryOp::Lt);
    if !lower_ok || !upper_ok || lx != hx || !matches!(lx, PhysicalExpr::Column { .. }) {
        return Ok(None);
    }
    let ColumnarValue::Array(x) = evaluate(lx, batch)? else {
        return Ok(None);
    };
    if x.data_type() != lo.data_type() || x.data_type() != hi.data_type() {
        return Ok(None);
    }
    let strict_lo = lop == BinaryOp::Gt;
    let strict_hi = hop == BinaryOp::Lt;
    macro_rules! range {
        ($t:ty, $wide:ty, $unsigned:ty) => {{
            let xs = x.as_primitive::<$t>();
            let a = <$wide>::from(lo.as_primitive::<$t>().value(0));
            let b = <$wide>::from(hi.as_primitive::<$t>().value(0));
            let bits = match inclusive_bounds(a, b, strict_lo, strict_hi) {
                Some((a, b)) => {
                    // One unsigned compare per value: x - a wraps above b - a when x < a.
                    let span = b.wrapping_sub(a) as $unsigned;
                    pack_bits(xs.values(), |v| {
                        (<$wide>::from(v).wrapping_sub(a) as $unsigned) <= span
                    })
                }
                None => arrow_buffer::BooleanBuffer::new_unset(xs.len()),
            };
            BooleanArray::new(bits, xs.nulls().cloned())
        }};
    }
    use arrow_array::types::{
        Date32Type, Date64Type, TimestampMicrosecondType, TimestampMillisecondType,
        TimestampNanosecondType, TimestampSecondType,
    };
    let out = match x.data_type() {
        DataType::Int8 => range!(Int8Type, i32, u32),
        DataType::Int16 => range!(Int16Type, i32, u32),
        DataType::Int32 => range!(Int32Type, i32, u32),
        DataType::Int64 => range!(Int64Type, i64, u64),
        DataType::Date32 => range!(Date32Type, i32, u32),
        DataType::Date64 => range!(Date64Type, i64, u64),
        DataType::Decimal128(..) => range!(Decimal128Type, i128, u128),
        DataType::Timestamp(unit, _) => match unit {
            arrow_schema::TimeUnit::Second => range!(TimestampSecondType, i64, u64),
            arrow_schema::TimeUnit::Millisecond => range!(TimestampMillisecondType, i64, u64),
            arrow_schema::TimeUnit::Microsecond => range!(TimestampMicrosecondType, i64, u64),
            arrow_schema::TimeUnit::Nanosecond => range!(TimestampNanosecondType, i64, u64),
        },
        _ => return Ok(None),
    };
    Ok(Some(ColumnarValue::Array(Arc::new(out))))
}

/// Integer bounds `[a, b]` equivalent to `x >(=) lo AND x <(=) hi`, or `None` when no value
/// can satisfy them.
fn inclusive_bounds<T: RangeBound>(
    lo: T,
    hi: T,
    strict_lo: bool,
    strict_hi: bool,
) -> Option<(T, T)> {
    let a = if strict_lo { lo.succ()? } else { lo };
    let b = if strict_hi { hi.pred()? } else { hi };
    (a <= b).then_some((a, b))
}

/// The integer widths [`fused_range`] compares in.
trait RangeBound: Copy + Ord {
    fn succ(self) -> Option<Self>;
    fn pred(self) -> Option<Self>;
}

macro_rules! range_bound {
    ($($t:ty),*) => {$(
        impl RangeBound for $t {
            fn succ(self) -> Option<Self> {
                self.checked_add(1)
            }
            fn pred(self) -> Option<Self> {
                self.checked_sub(1)
            }
        }
    )*};
}
range_bound!(i32, i64, i128);

/// A bitmap of `pred` over `values`, written so the compiler vectorises it: the predicate
/// fills a byte per value without branches, then eight bytes fold into one with a multiply.
pub fn pack_bits<T: Copy>(values: &[T], pred: impl Fn(T) -> bool) -> arrow_buffer::BooleanBuffer {
    // Byte i of `b` is 0 or 1; the product moves it to bit 56 + i without carries.
    const GATHER: u64 = 0x0102_0408_1020_4080;
    fn word(bytes: &[u8; 64]) -> u64 {
        let mut w = 0u64;
        for (k, eight) in bytes.chunks_exact(8).enumerate() {
            let mut b = [0u8; 8];
            b.copy_from_slice(eight);
            w |= (u64::from_le_bytes(b).wrapping_mul(GATHER) >> 56) << (8 * k);
        }
        w
    }
    let mut words: Vec<u64> = Vec::with_capacity(values.len().div_ceil(64));
    let mut bytes = [0u8; 64];
    let chunks = values.chunks_exact(64);
    let tail = chunks.remainder();
    for chunk in chunks {
        for (o, &v) in bytes.iter_mut().zip(chunk) {
            *o = u8::from(pred(v));
        }
        words.push(word(&bytes));
    }
    if !tail.is_empty() {
        bytes = [0u8; 64];
        for (o, &v) in bytes.iter_mut().zip(tail) {
            *o = u8::from(pred(v));
        }
        words.push(word(&bytes));
    }
    arrow_buffer::BooleanBuffer::new(arrow_buffer::Buffer::from_vec(words), 0, values.len())
}

fn all_false(v: &ColumnarValue) -> Option<ColumnarValue> {
    match v {
        ColumnarValue::Scalar(s) => {
            let a = s_inner(s);
            let b = a.as_boolean();
            (b.is_valid(0) && !b.value(0)).then(|| v.clone())
        }
        ColumnarValue::Array(a) => {
            let b = a.as_boolean();
            (b.null_count() == 0 && b.true_count() == 0 && !b.is_empty()).then(|| v.clone())
        }
    }
}

fn logical(l: ColumnarValue, r: ColumnarValue, n: usize, and: bool) -> Result<ColumnarValue> {
    let scalar = l.is_scalar() && r.is_scalar();
    let len = if scalar { 1 } else { n };
    let la = if scalar { s_of(&l) } else { l.into_array(len)? };
    let ra = if scalar { s_of(&r) } else { r.into_array(len)? };
    let out = if and {
        and_kleene(la.as_boolean(), ra.as_boolean())?
    } else {
        or_kleene(la.as_boolean(), ra.as_boolean())?
    };
    Ok(ColumnarValue::from_result(Arc::new(out), scalar))
}

fn s_of(v: &ColumnarValue) -> ArrayRef {
    match v {
        ColumnarValue::Scalar(s) => s_inner(s),
        ColumnarValue::Array(a) => a.clone(),
    }
}

fn struct_field(a: &ArrayRef, index: usize) -> Result<ArrayRef> {
    let s: &StructArray = a
        .as_struct_opt()
        .ok_or_else(|| FerroError::Internal("field access on a non-struct".into()))?;
    let child = s.column(index).clone();
    let nulls = NullBuffer::union(s.nulls(), child.nulls());
    if nulls.as_ref().map(|n| n.null_count()) == child.nulls().map(|n| n.null_count()) {
        return Ok(child);
    }
    let data = child.to_data().into_builder().nulls(nulls).build()?;
    Ok(arrow_array::make_array(data))
}

/// Maps every NaN to one canonical NaN and -0.0 to 0.0, so Arrow's total-order comparisons
/// give Spark's answers (`NormalizeFloatingNumbers`).
fn normalize_floats(v: ColumnarValue) -> Result<ColumnarValue> {
    match v.datum().get().0.data_type() {
        DataType::Float64 => v.map(|a| {
            let p: Float64Array =
                a.as_primitive::<Float64Type>()
                    .unary(|x| if x.is_nan() { f64::NAN } else { x + 0.0 });
            Ok(Arc::new(p))
        }),
        DataType::Float32 => v.map(|a| {
            let p: Float32Array =
                a.as_primitive::<Float32Type>()
                    .unary(|x| if x.is_nan() { f32::NAN } else { x + 0.0 });
            Ok(Arc::new(p))
        }),
        _ => Ok(v),
    }
}

/// The candidates of an `IN` list as one hashed set, when every one is a non-NULL literal of
/// the tested value's type and that type has a [`KeySet`](crate::in_set::KeySet) (not
/// floats, whose NaN and -0.0 need Spark's equality): one lookup per row instead of one
/// comparison per candidate. A NULL candidate keeps the list (it makes misses NULL).
fn literal_key_set(list: &[PhysicalExpr], data_type: &DataType) -> Option<crate::in_set::KeySet> {
    if list.len() < 2 {
        return None;
    }
    let arrays = list
        .iter()
        .map(|item| match item {
            PhysicalExpr::Literal(l) => {
                let a = l.array();
                (same_values(a.data_type(), data_type) && !l.is_null()).then(|| a.clone())
            }
            _ => None,
        })
        .collect::<Option<Vec<ArrayRef>>>()?;
    crate::in_set::KeySet::for_constants(&arrays)
}

/// Whether values of types `a` and `b` are equal exactly when their bytes or integers are
/// (strings of any layout compare as bytes).
fn same_values(a: &DataType, b: &DataType) -> bool {
    a == b || (crate::types::is_string(a) && crate::types::is_string(b))
}

fn cmp_datum(op: BinaryOp, l: &ColumnarValue, r: &ColumnarValue) -> Result<ColumnarValue> {
    use arrow_ord::cmp;
    if crate::nested_cmp::is_nested(l.datum().get().0.data_type()) {
        let n = match (l, r) {
            (ColumnarValue::Array(a), _) | (_, ColumnarValue::Array(a)) => a.len(),
            _ => 1,
        };
        let (la, ra) = (l.clone().into_array(n)?, r.clone().into_array(n)?);
        let out = crate::nested_cmp::compare_nested(op, &la, &ra)?;
        return Ok(ColumnarValue::from_result(
            out,
            l.is_scalar() && r.is_scalar(),
        ));
    }
    let (a, b) = (l.datum(), r.datum());
    let out = match op {
        BinaryOp::Eq => cmp::eq(a, b)?,
        BinaryOp::NotEq => cmp::neq(a, b)?,
        BinaryOp::Lt => cmp::lt(a, b)?,
        BinaryOp::LtEq => cmp::lt_eq(a, b)?,
        BinaryOp::Gt => cmp::gt(a, b)?,
        BinaryOp::GtEq => cmp::gt_eq(a, b)?,
        BinaryOp::EqNullSafe => cmp::not_distinct(a, b)?,
        other => {
            return Err(FerroError::Internal(format!(
                "{} is not a comparison",
                other.sql()
            )))
        }
    };
    Ok(ColumnarValue::from_result(
        Arc::new(out),
        l.is_scalar() && r.is_scalar(),
    ))
}

fn compare(op: BinaryOp, l: ColumnarValue, r: ColumnarValue) -> Result<ColumnarValue> {
    let (l, r) = (normalize_floats(l)?, normalize_floats(r)?);
    cmp_datum(op, &l, &r)
}

fn has_zero(v: &ColumnarValue) -> bool {
    let a = s_of(v);
    let dt = a.data_type().clone();
    macro_rules! any_zero {
        ($t:ty, $zero:expr) => {
            a.as_primitive::<$t>().iter().flatten().any(|x| x == $zero)
        };
    }
    match dt {
        DataType::Float64 => any_zero!(Float64Type, 0.0),
        DataType::Float32 => any_zero!(Float32Type, 0.0),
        DataType::Int8 => any_zero!(Int8Type, 0),
        DataType::Int16 => any_zero!(Int16Type, 0),
        DataType::Int32 => any_zero!(Int32Type, 0),
        DataType::Int64 => any_zero!(Int64Type, 0),
        DataType::Decimal128(..) => any_zero!(Decimal128Type, 0),
        _ => false,
    }
}

fn divide_by_zero() -> FerroError {
    FerroError::Arithmetic(
        "[DIVIDE_BY_ZERO] Division by zero. Use `try_divide` to tolerate divisor being 0 and return NULL instead, or guard the divisor (e.g. NULLIF(x, 0)).".into(),
    )
}

fn remainder_by_zero() -> FerroError {
    FerroError::Arithmetic(
        "[REMAINDER_BY_ZERO] Remainder by zero. Use `try_mod` to tolerate divisor being 0 and return NULL instead, or guard the divisor (e.g. NULLIF(x, 0)).".into(),
    )
}

fn arithmetic(
    op: BinaryOp,
    l: ColumnarValue,
    r: ColumnarValue,
    out: &DataType,
    n: usize,
) -> Result<ColumnarValue> {
    if matches!(op, BinaryOp::Divide | BinaryOp::Modulo) && has_zero(&r) {
        return Err(if op == BinaryOp::Modulo {
            remainder_by_zero()
        } else {
            divide_by_zero()
        });
    }
    let scalar = l.is_scalar() && r.is_scalar();
    if let DataType::Decimal128(p, s) = out {
        if !scalar && n > 1 {
            // A literal operand (`1 - discount`) stays one value: the 64-bit loop broadcasts
            // it instead of reading a column of copies.
            let (la, ra) = (s_of(&l), s_of(&r));
            if let Some(a) = decimal_arith_small(op, &la, &ra, *p, *s)? {
                return Ok(ColumnarValue::Array(a));
            }
        }
        let len = if scalar { 1 } else { n };
        let la = if scalar { s_of(&l) } else { l.into_array(len)? };
        let ra = if scalar { s_of(&r) } else { r.into_array(len)? };
        let a = decimal_arith(op, &la, &ra, *p, *s)?;
        return Ok(ColumnarValue::from_result(a, scalar));
    }
    let (a, b) = (l.datum(), r.datum());
    let res = match op {
        BinaryOp::Plus => numeric::add(a, b)?,
        BinaryOp::Minus => numeric::sub(a, b)?,
        BinaryOp::Multiply => numeric::mul(a, b)?,
        BinaryOp::Divide => numeric::div(a, b)?,
        BinaryOp::Modulo => numeric::rem(a, b)?,
        other => {
            return Err(FerroError::Internal(format!(
                "{} is not arithmetic",
                other.sql()
            )))
        }
    };
    if is_floating(out) {
        check_float_overflow(&res, op)?;
    }
    Ok(ColumnarValue::from_result(res, scalar))
}

// Spark lets doubles overflow to infinity without error; nothing to check, kept as the one
// place to change should that ever differ.
fn check_float_overflow(_res: &ArrayRef, _op: BinaryOp) -> Result<()> {
    Ok(())
}

fn pow10(k: u32) -> Option<i256> {
    i256::from_i128(10).checked_pow(k)
}

fn div_half_up(x: i256, d: i256) -> Option<i256> {
    let q = x.checked_div(d)?;
    let rem = x.checked_rem(d)?;
    let twice = rem.checked_mul(i256::from_i128(2))?.wrapping_abs();
    if twice >= d.wrapping_abs() {
        if x.is_negative() != d.is_negative() {
            q.checked_sub(i256::ONE)
        } else {
            q.checked_add(i256::ONE)
        }
    } else {
        Some(q)
    }
}

#[inline]
fn fits_i64(v: i128) -> bool {
    v as i64 as i128 == v
}

fn rescale(v: i256, from: i32, to: i32) -> Option<i256> {
    match to.cmp(&from) {
        std::cmp::Ordering::Equal => Some(v),
        std::cmp::Ordering::Greater => v.checked_mul(pow10((to - from) as u32)?),
        std::cmp::Ordering::Less => div_half_up(v, pow10((from - to) as u32)?),
    }
}

/// Decimal `+ - * / %` computed exactly in 256 bits and rounded HALF_UP to the result scale,
/// as Spark's `Decimal` does; a result beyond the result precision is an ANSI error.
/// One operand of the 64-bit decimal loop: a column, or one value for every row.
#[derive(Clone, Copy)]
enum Small<'a> {
    Column(&'a [i128]),
    Broadcast(i128),
}

/// The operands as [`Small`] when neither has NULLs and every value fits 64 bits; a
/// one-value array facing a longer one is broadcast.
fn small_operands<'a>(
    l: &'a PrimitiveArray<Decimal128Type>,
    r: &'a PrimitiveArray<Decimal128Type>,
) -> Option<(Small<'a>, Small<'a>)> {
    let small = |a: &'a PrimitiveArray<Decimal128Type>, other: usize| -> Option<Small<'a>> {
        // A precision of at most 18 digits fits 64 bits by itself; wider types are checked
        // value by value, without a branch so the check runs at memory speed.
        let fits =
            a.precision() <= 18 || a.values().iter().fold(0u64, |acc, &v| acc | beyond_i64(v)) == 0;
        if a.null_count() > 0 || !fits {
            return None;
        }
        match a.values().as_ref() {
            [v] if other != 1 => Some(Small::Broadcast(*v)),
            vs if vs.len() == other => Some(Small::Column(vs)),
            _ => None,
        }
    };
    Some((small(l, r.len())?, small(r, l.len())?))
}

/// 1 when `v` does not fit 64 bits, else 0, without a branch.
#[inline(always)]
fn beyond_i64(v: i128) -> u64 {
    (((v >> 63) + 1) as u128 > 1) as u64
}

/// `a op b` for 64-bit operands rescaled by `m1` / `m2` (for + and -): one widening multiply
/// per value, in a loop of one shape per operator and operand kind.
fn small_decimal_loop(op: BinaryOp, a: Small, b: Small, m1: i128, m2: i128) -> Option<Vec<i128>> {
    #[inline(always)]
    fn wide(x: i128, y: i128) -> i128 {
        (x as i64 as i128) * (y as i64 as i128)
    }
    #[inline(always)]
    fn run(a: Small, b: Small, f: impl Fn(i128, i128) -> i128) -> Option<Vec<i128>> {
        Some(match (a, b) {
            (Small::Column(x), Small::Column(y)) => {
                x.iter().zip(y.iter()).map(|(&x, &y)| f(x, y)).collect()
            }
            (Small::Column(x), Small::Broadcast(y)) => x.iter().map(|&x| f(x, y)).collect(),
            (Small::Broadcast(x), Small::Column(y)) => y.iter().map(|&y| f(x, y)).collect(),
            (Small::Broadcast(_), Small::Broadcast(_)) => return None,
        })
    }
    match op {
        BinaryOp::Multiply => run(a, b, wide),
        BinaryOp::Plus => run(a, b, |x, y| wide(x, m1) + wide(y, m2)),
        BinaryOp::Minus => run(a, b, |x, y| wide(x, m1) - wide(y, m2)),
        _ => None,
    }
}

fn decimal_scale(a: &ArrayRef) -> Result<i32> {
    match a.data_type() {
        DataType::Decimal128(_, s) => Ok(*s as i32),
        other => Err(FerroError::Internal(format!(
            "decimal arithmetic on {other}"
        ))),
    }
}

fn decimal_overflow(op: BinaryOp, p: u8, s: i32) -> FerroError {
    FerroError::Arithmetic(format!(
        "[NUMERIC_VALUE_OUT_OF_RANGE.WITH_SUGGESTION] a {} result does not fit DECIMAL({p},{s}). Cast the operands to a wider decimal or to DOUBLE.",
        op.sql()
    ))
}

/// `l op r` for + - * when nothing rounds and every operand fits 64 bits (the usual case,
/// whatever the declared precision: values are far smaller than their types allow): one
/// widening multiply per value, the range checked once over the result. A one-value operand
/// facing a column is broadcast. `None` when the operands do not qualify.
fn decimal_arith_small(
    op: BinaryOp,
    l: &ArrayRef,
    r: &ArrayRef,
    p: u8,
    s: i8,
) -> Result<Option<ArrayRef>> {
    let (s1, s2, s) = (decimal_scale(l)?, decimal_scale(r)?, s as i32);
    let exact_scale = match op {
        BinaryOp::Multiply => s1 + s2,
        BinaryOp::Plus | BinaryOp::Minus => s1.max(s2),
        _ => return Ok(None),
    };
    if exact_scale != s || p > 38 {
        return Ok(None);
    }
    let (m1, m2) = (
        10i128.pow((s - s1).max(0) as u32),
        10i128.pow((s - s2).max(0) as u32),
    );
    if m1 > i64::MAX as i128 || m2 > i64::MAX as i128 {
        return Ok(None);
    }
    let (la, ra) = (
        l.as_primitive::<Decimal128Type>(),
        r.as_primitive::<Decimal128Type>(),
    );
    let Some(values) =
        small_operands(la, ra).and_then(|(a, b)| small_decimal_loop(op, a, b, m1, m2))
    else {
        return Ok(None);
    };
    let lim = 10i128.pow(p as u32);
    if values.iter().any(|&v| v <= -lim || v >= lim) {
        return Err(decimal_overflow(op, p, s));
    }
    let out = PrimitiveArray::<Decimal128Type>::new(values.into(), None);
    Ok(Some(Arc::new(out.with_precision_and_scale(p, s as i8)?)))
}

fn decimal_arith(op: BinaryOp, l: &ArrayRef, r: &ArrayRef, p: u8, s: i8) -> Result<ArrayRef> {
    if let Some(a) = decimal_arith_small(op, l, r, p, s)? {
        return Ok(a);
    }
    let (s1, s2, s) = (decimal_scale(l)?, decimal_scale(r)?, s as i32);
    let limit = pow10(p as u32).ok_or_else(|| FerroError::Internal("precision".into()))?;
    let overflow = || arrow_schema::ArrowError::from(decimal_overflow(op, p, s));
    let la = l.as_primitive::<Decimal128Type>();
    let ra = r.as_primitive::<Decimal128Type>();
    // Fast path: when the result keeps the exact scale (always for + - *, unless Spark had to
    // cut the scale to fit 38 digits) nothing rounds, and 128 bits hold every in-range value.
    let exact_scale = match op {
        BinaryOp::Multiply => Some(s1 + s2),
        BinaryOp::Plus | BinaryOp::Minus => Some(s1.max(s2)),
        _ => None,
    };
    if exact_scale == Some(s) && p <= 38 {
        let lim = 10i128.pow(p as u32);
        let (m1, m2) = (
            10i128.pow((s - s1).max(0) as u32),
            10i128.pow((s - s2).max(0) as u32),
        );
        let scales_small = m1 <= i64::MAX as i128 && m2 <= i64::MAX as i128;
        // Values are usually far smaller than their types allow: operands that fit 64 bits
        // multiply (and rescale) exactly in single widening multiplies, with no overflow
        // possible before the final range check.
        let wide = |x: i128, y: i128| (x as i64 as i128) * (y as i64 as i128);
        let exact = move |a: i128, b: i128| -> Option<i128> {
            let small = fits_i64(a) && fits_i64(b);
            match op {
                BinaryOp::Multiply if small => Some(wide(a, b)),
                BinaryOp::Multiply => a.checked_mul(b),
                BinaryOp::Plus if small && scales_small => Some(wide(a, m1) + wide(b, m2)),
                BinaryOp::Minus if small && scales_small => Some(wide(a, m1) - wide(b, m2)),
                BinaryOp::Plus => a
                    .checked_mul(m1)
                    .zip(b.checked_mul(m2))
                    .and_then(|(x, y)| x.checked_add(y)),
                _ => a
                    .checked_mul(m1)
                    .zip(b.checked_mul(m2))
                    .and_then(|(x, y)| x.checked_sub(y)),
            }
            .filter(|v| *v > -lim && *v < lim)
        };
        let g = |a: i128, b: i128| -> std::result::Result<i128, arrow_schema::ArrowError> {
            exact(a, b).ok_or_else(overflow)
        };
        let out: PrimitiveArray<Decimal128Type> = if la.null_count() == 0 && ra.null_count() == 0 {
            // Without NULLs every slot is a real value: run the loop branch-free and check
            // for overflow once at the end.
            let bad = std::cell::Cell::new(false);
            let out = arrow_arith::arity::binary(la, ra, |a, b| match exact(a, b) {
                Some(v) => v,
                None => {
                    bad.set(true);
                    0
                }
            })?;
            if bad.get() {
                return Err(FerroError::from_arrow(overflow()));
            }
            out
        } else {
            arrow_arith::arity::try_binary(la, ra, g)?
        };
        return Ok(Arc::new(out.with_precision_and_scale(p, s as i8)?));
    }
    let f = |a: i128, b: i128| -> std::result::Result<i128, arrow_schema::ArrowError> {
        let (a, b) = (i256::from_i128(a), i256::from_i128(b));
        let ms = s1.max(s2);
        let exact = match op {
            BinaryOp::Plus => rescale(a, s1, ms)
                .zip(rescale(b, s2, ms))
                .and_then(|(x, y)| x.checked_add(y))
                .and_then(|v| rescale(v, ms, s)),
            BinaryOp::Minus => rescale(a, s1, ms)
                .zip(rescale(b, s2, ms))
                .and_then(|(x, y)| x.checked_sub(y))
                .and_then(|v| rescale(v, ms, s)),
            BinaryOp::Multiply => a.checked_mul(b).and_then(|v| rescale(v, s1 + s2, s)),
            BinaryOp::Divide => {
                if b == i256::ZERO {
                    return Err(divide_by_zero().into());
                }
                // a/10^s1 / (b/10^s2) at scale s = a * 10^(s - s1 + s2) / b
                let k = s - s1 + s2;
                if k >= 0 {
                    pow10(k as u32)
                        .and_then(|m| a.checked_mul(m))
                        .and_then(|x| div_half_up(x, b))
                } else {
                    pow10((-k) as u32)
                        .and_then(|m| b.checked_mul(m))
                        .and_then(|y| div_half_up(a, y))
                }
            }
            BinaryOp::Modulo => {
                if b == i256::ZERO {
                    return Err(remainder_by_zero().into());
                }
                rescale(a, s1, ms)
                    .zip(rescale(b, s2, ms))
                    .and_then(|(x, y)| x.checked_rem(y))
                    .and_then(|v| rescale(v, ms, s))
            }
            _ => None,
        };
        match exact {
            Some(v) if v.wrapping_abs() < limit => v.to_i128().ok_or_else(overflow),
            _ => Err(overflow()),
        }
    };
    let out: PrimitiveArray<Decimal128Type> = arrow_arith::arity::try_binary(la, ra, f)?;
    Ok(Arc::new(out.with_precision_and_scale(p, s as i8)?))
}

/// Whether ferrospark can cast between the two types.
pub fn can_cast(from: &DataType, to: &DataType) -> bool {
    if let Some(ok) = crate::interval_cast::castable(from, to) {
        return ok;
    }
    from == to || arrow_cast::can_cast_types(from, to)
}

fn parse_spark_double(s: &str) -> Option<f64> {
    let t = s.trim();
    match t.to_ascii_lowercase().as_str() {
        "nan" => Some(f64::NAN),
        "infinity" | "+infinity" | "inf" | "+inf" => Some(f64::INFINITY),
        "-infinity" | "-inf" => Some(f64::NEG_INFINITY),
        _ => {
            let t = t.strip_suffix(['d', 'D', 'f', 'F']).unwrap_or(t);
            t.parse::<f64>().ok()
        }
    }
}

pub(crate) fn cast_value(
    a: &ArrayRef,
    to: &DataType,
    mode: crate::physical::CastMode,
) -> Result<ArrayRef> {
    let safe = mode != crate::physical::CastMode::Ansi;
    if a.data_type() == to {
        return Ok(a.clone());
    }
    if let Some(done) = crate::interval_cast::cast(a, to, mode)? {
        return Ok(done);
    }
    if to == &DataType::Utf8 {
        if let Some(text) = crate::cast::to_spark_string(a)? {
            return Ok(text);
        }
    }
    if let (DataType::Struct(_), DataType::Struct(fields)) = (a.data_type(), to) {
        // Spark casts a struct field by field in order, whatever the names (Arrow's cast
        // matches differing names by name).
        let s = a.as_struct();
        if s.num_columns() == fields.len() {
            let cols = s
                .columns()
                .iter()
                .zip(fields.iter())
                .map(|(c, f)| cast_value(c, f.data_type(), mode))
                .collect::<Result<Vec<_>>>()?;
            let fields: arrow_schema::Fields = fields
                .iter()
                .zip(&cols)
                .map(|(f, c)| {
                    Arc::new(
                        f.as_ref()
                            .clone()
                            .with_nullable(f.is_nullable() || c.null_count() > 0),
                    )
                })
                .collect();
            return Ok(Arc::new(StructArray::try_new(
                fields,
                cols,
                s.nulls().cloned(),
            )?));
        }
    }
    if let Some(done) = crate::cast::spark_cast(a, to, mode)? {
        return Ok(done);
    }
    let options = CastOptions {
        safe,
        ..Default::default()
    };
    // Spark: a timestamp as a number is seconds since the epoch (with the fraction).
    if let (DataType::Timestamp(unit, _), true) = (a.data_type(), is_floating(to)) {
        let per_second = match unit {
            arrow_schema::TimeUnit::Second => 1.0,
            arrow_schema::TimeUnit::Millisecond => 1e3,
            arrow_schema::TimeUnit::Microsecond => 1e6,
            arrow_schema::TimeUnit::Nanosecond => 1e9,
        };
        let raw = cast_with_options(a, &DataType::Int64, &options)?;
        let secs: Float64Array = raw
            .as_primitive::<arrow_array::types::Int64Type>()
            .unary(|v| v as f64 / per_second);
        let secs: ArrayRef = Arc::new(secs);
        return Ok(cast_with_options(&secs, to, &options)?);
    }
    if is_string(a.data_type())
        && (is_floating(to)
            || is_integral(to)
            || is_decimal(to)
            || matches!(to, DataType::Boolean | DataType::Date32))
    {
        let strings = cast_with_options(a, &DataType::Utf8, &options)?;
        let strings = strings.as_string::<i32>();
        if is_floating(to) {
            let parsed: Result<Float64Array> = strings
                .iter()
                .map(|v| match v {
                    None => Ok(None),
                    Some(s) if safe => Ok(parse_spark_double(s)),
                    Some(s) => parse_spark_double(s).map(Some).ok_or_else(|| {
                        FerroError::Arithmetic(format!(
                            "[CAST_INVALID_INPUT] The value '{s}' of the type \"STRING\" cannot be cast to \"DOUBLE\" because it is malformed."
                        ))
                    }),
                })
                .collect();
            let parsed: ArrayRef = Arc::new(parsed?);
            return Ok(cast_with_options(&parsed, to, &options)?);
        }
        // Spark trims surrounding white space before parsing numbers, booleans and dates.
        let trimmed: StringArray = strings.iter().map(|v| v.map(str::trim)).collect();
        let trimmed: ArrayRef = Arc::new(trimmed);
        return cast_with_options(&trimmed, to, &options).map_err(|e| {
            // A number too wide for the decimal is Spark's out-of-range error, not bad text.
            let class = if is_decimal(to) && e.to_string().contains("too large to store") {
                "NUMERIC_VALUE_OUT_OF_RANGE.WITH_SUGGESTION"
            } else {
                "CAST_INVALID_INPUT"
            };
            FerroError::Arithmetic(format!(
                "[{class}] cannot cast STRING to {}: {e}",
                crate::types::spark_type_name(to)
            ))
        });
    }
    Ok(cast_with_options(a, to, &options)?)
}

pub(crate) fn abs(a: &ArrayRef) -> Result<ArrayRef> {
    let overflow =
        || arrow_schema::ArrowError::ArithmeticOverflow("abs of the minimum value".into());
    macro_rules! int_abs {
        ($t:ty) => {
            Arc::new(
                a.as_primitive::<$t>()
                    .try_unary::<_, $t, _>(|x| x.checked_abs().ok_or_else(overflow))?,
            ) as ArrayRef
        };
    }
    Ok(match a.data_type() {
        DataType::Int8 => int_abs!(Int8Type),
        DataType::Int16 => int_abs!(Int16Type),
        DataType::Int32 => int_abs!(Int32Type),
        DataType::Int64 => int_abs!(Int64Type),
        DataType::Float32 => Arc::new(
            a.as_primitive::<Float32Type>()
                .unary::<_, Float32Type>(f32::abs),
        ),
        DataType::Float64 => Arc::new(
            a.as_primitive::<Float64Type>()
                .unary::<_, Float64Type>(f64::abs),
        ),
        DataType::Decimal128(p, s) => Arc::new(
            a.as_primitive::<Decimal128Type>()
                .unary::<_, Decimal128Type>(i128::abs)
                .with_precision_and_scale(*p, *s)?,
        ),
        other => return Err(FerroError::Internal(format!("abs of {other}"))),
    })
}

/// `CASE`: conditions are evaluated in order on the rows no earlier branch took, and each
/// value only on the rows that take its branch, so an error in a branch no row takes is not
/// raised (Spark evaluates CASE lazily row by row).
fn case_when(
    branches: &[(PhysicalExpr, PhysicalExpr)],
    otherwise: Option<&PhysicalExpr>,
    data_type: &DataType,
    batch: &RecordBatch,
) -> Result<ColumnarValue> {
    let n = batch.num_rows();
    // Which branch each row takes; branches.len() stands for ELSE.
    let mut chosen: Vec<u32> = vec![branches.len() as u32; n];
    let mut open: Vec<usize> = (0..n).collect();
    for (k, (cond, _)) in branches.iter().enumerate() {
        if open.is_empty() {
            break;
        }
        let sub = if open.len() == n {
            batch.clone()
        } else {
            take_rows(batch, &open)?
        };
        let hit = evaluate_predicate(cond, &sub)?;
        let mut still = Vec::with_capacity(open.len());
        for (j, &row) in open.iter().enumerate() {
            if hit.is_valid(j) && hit.value(j) {
                chosen[row] = k as u32;
            } else {
                still.push(row);
            }
        }
        open = still;
    }
    let mut values: Vec<ArrayRef> = Vec::new();
    let mut slot_of: Vec<Option<(usize, Vec<usize>)>> = Vec::new();
    for k in 0..=branches.len() {
        let rows: Vec<usize> = (0..n).filter(|&r| chosen[r] as usize == k).collect();
        if rows.is_empty() {
            slot_of.push(None);
            continue;
        }
        let value = if k < branches.len() {
            Some(&branches[k].1)
        } else {
            otherwise
        };
        let arr = match value {
            Some(v) => {
                let sub = if rows.len() == n {
                    batch.clone()
                } else {
                    take_rows(batch, &rows)?
                };
                let a = evaluate(v, &sub)?.into_array(rows.len())?;
                if a.data_type() != data_type {
                    cast_with_options(&a, data_type, &CastOptions::default())?
                } else {
                    a
                }
            }
            None => arrow_array::new_null_array(data_type, rows.len()),
        };
        if rows.len() == n {
            return Ok(ColumnarValue::Array(arr));
        }
        values.push(arr);
        slot_of.push(Some((values.len() - 1, rows)));
    }
    let mut pos: Vec<(usize, usize)> = vec![(0, 0); n];
    for (idx, rows) in slot_of.into_iter().flatten() {
        for (j, r) in rows.into_iter().enumerate() {
            pos[r] = (idx, j);
        }
    }
    let refs: Vec<&dyn Array> = values.iter().map(|a| a.as_ref()).collect();
    Ok(ColumnarValue::Array(arrow_select::interleave::interleave(
        &refs, &pos,
    )?))
}

/// `coalesce(a, b, ...)` as Spark evaluates it: an argument only for the rows every earlier
/// one left NULL, so `coalesce(1, 1 / 0)` is 1 under ANSI rather than DIVIDE_BY_ZERO.
fn coalesce(args: &[PhysicalExpr], batch: &RecordBatch) -> Result<ColumnarValue> {
    let n = batch.num_rows();
    let first = evaluate(&args[0], batch)?;
    if first.is_scalar() && n > 0 {
        let one = first.clone().into_array(1)?;
        if one.is_valid(0) {
            return Ok(first);
        }
    }
    let mut acc = first.into_array(n)?;
    for e in &args[1..] {
        let open: Vec<usize> = (0..n).filter(|&r| acc.is_null(r)).collect();
        if open.is_empty() {
            break;
        }
        let values = if open.len() == n {
            evaluate(e, batch)?.into_array(n)?
        } else {
            let part = evaluate(e, &take_rows(batch, &open)?)?.into_array(open.len())?;
            // Back to the batch's rows: row `open[j]` takes `part[j]`, the others NULL.
            let mut at = vec![None; n];
            for (j, &r) in open.iter().enumerate() {
                at[r] = Some(j as u32);
            }
            arrow_select::take::take(part.as_ref(), &arrow_array::UInt32Array::from(at), None)?
        };
        let values = if values.data_type() != acc.data_type() {
            cast_with_options(&values, acc.data_type(), &CastOptions::default())?
        } else {
            values
        };
        let keep = arrow_arith::boolean::is_not_null(&acc)?;
        acc = arrow_select::zip::zip(&keep, &acc, &values)?;
    }
    Ok(ColumnarValue::Array(acc))
}

fn take_rows(batch: &RecordBatch, rows: &[usize]) -> Result<RecordBatch> {
    let idx = UInt32Array::from(rows.iter().map(|&r| r as u32).collect::<Vec<_>>());
    let cols = batch
        .columns()
        .iter()
        .map(|c| arrow_select::take::take(c, &idx, None))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(rows.len()));
    Ok(RecordBatch::try_new_with_options(
        batch.schema(),
        cols,
        &options,
    )?)
}

/// Arithmetic with `spark.sql.ansi.enabled=false`: a zero divisor gives NULL, integers wrap
/// on overflow, a decimal that overflows is NULL.
fn lenient_arithmetic(
    op: BinaryOp,
    l: ColumnarValue,
    r: ColumnarValue,
    out: &DataType,
    n: usize,
) -> Result<ColumnarValue> {
    let r = if matches!(op, BinaryOp::Divide | BinaryOp::Modulo) && has_zero(&r) {
        r.map(|a| {
            let zero = arrow_array::new_null_array(a.data_type(), 1);
            let zero = cast_with_options(
                &(Arc::new(Int32Array::from(vec![0])) as ArrayRef),
                a.data_type(),
                &CastOptions::default(),
            )
            .unwrap_or(zero);
            // -0.0 is a zero divisor too.
            let is_zero = arrow_ord::cmp::eq(&crate::normalize_key(a), &Scalar::new(zero))?;
            Ok(arrow_select::nullif::nullif(a, &is_zero)?)
        })?
    } else {
        r
    };
    if is_integral(out) {
        let scalar = l.is_scalar() && r.is_scalar();
        let (a, b) = (l.datum(), r.datum());
        let res = match op {
            BinaryOp::Plus => numeric::add_wrapping(a, b)?,
            BinaryOp::Minus => numeric::sub_wrapping(a, b)?,
            BinaryOp::Multiply => numeric::mul_wrapping(a, b)?,
            _ => return arithmetic(op, l, r, out, n),
        };
        return Ok(ColumnarValue::from_result(res, scalar));
    }
    match arithmetic(op, l, r, out, n) {
        Err(FerroError::Arithmetic(_)) if is_decimal(out) => Ok(ColumnarValue::Scalar(
            Scalar::new(arrow_array::new_null_array(out, 1)),
        )),
        other => other,
    }
}
