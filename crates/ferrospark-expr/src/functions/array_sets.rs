//! Arrays as sets and sequences: `array_distinct`, `array_union`, `array_intersect`,
//! `array_except`, `arrays_overlap`, `array_position`, `array_remove`, `array_max` /
//! `array_min`, `array_join`, `slice`, `flatten` and `array_repeat`.
//!
//! Elements are compared by their `arrow-row` encoding, so every element type (structs and
//! nested arrays too) compares one way: NaN equals NaN, as in Spark's `SQLOpenHashSet`. A NULL
//! element is its own value: the set functions keep at most one, in the position Spark keeps
//! it. Results are taken from the input elements ([`super::collections::rebuild`]), in the
//! order of their first appearance.

use std::collections::HashSet;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{Array, ArrayRef, BooleanArray, Int64Array, ListArray, StringArray};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_row::{RowConverter, Rows, SortField};
use arrow_schema::DataType;
use ferrospark_common::{FerroError, Result};

use super::collections::{element_type, list_of, list_parts, rebuild};
use super::{Args, Bound, Call, ScalarFunction};
use crate::bind::cast_to;
use crate::expr::Literal;
use crate::physical::PhysicalExpr;

/// The functions of this family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArraySetFn {
    /// `array_distinct(a)`
    Distinct,
    /// `array_union(a, b)`
    Union,
    /// `array_intersect(a, b)`
    Intersect,
    /// `array_except(a, b)`
    Except,
    /// `arrays_overlap(a, b)`: NULL when no common element but a NULL in either
    Overlap,
    /// `array_position(a, v)`: 1-based, 0 when absent, a BIGINT
    Position,
    /// `array_remove(a, v)`
    Remove,
    /// `array_max(a)`
    Max,
    /// `array_min(a)`
    Min,
    /// `array_join(a, delimiter[, null_replacement])`
    Join,
    /// `slice(a, start, length)`
    Slice,
    /// `flatten(a)`: NULL when an inner array is NULL
    Flatten,
    /// `array_repeat(v, n)`
    Repeat,
}

impl ArraySetFn {
    /// Spark's name.
    pub fn name(self) -> &'static str {
        match self {
            ArraySetFn::Distinct => "array_distinct",
            ArraySetFn::Union => "array_union",
            ArraySetFn::Intersect => "array_intersect",
            ArraySetFn::Except => "array_except",
            ArraySetFn::Overlap => "arrays_overlap",
            ArraySetFn::Position => "array_position",
            ArraySetFn::Remove => "array_remove",
            ArraySetFn::Max => "array_max",
            ArraySetFn::Min => "array_min",
            ArraySetFn::Join => "array_join",
            ArraySetFn::Slice => "slice",
            ArraySetFn::Flatten => "flatten",
            ArraySetFn::Repeat => "array_repeat",
        }
    }

    pub(crate) fn evaluate(self, args: &Args) -> Result<ArrayRef> {
        match self {
            ArraySetFn::Distinct => {
                let a = args.full(0)?;
                let list = list_parts(&a)?;
                let values = crate::normalize::normalize_key(list.values());
                let e = Elements::of(&values)?;
                let rows = (0..list.len())
                    .map(|r| e.distinct(range(list, r), |_| true))
                    .collect();
                rebuild(list, &values, rows)
            }
            ArraySetFn::Union | ArraySetFn::Intersect | ArraySetFn::Except => {
                set_operation(self, &args.full(0)?, &args.full(1)?)
            }
            ArraySetFn::Overlap => overlap(&args.full(0)?, &args.full(1)?),
            ArraySetFn::Position | ArraySetFn::Remove => {
                let (a, v) = (args.full(0)?, args.full(1)?);
                let list = list_parts(&a)?;
                let both = arrow_select::concat::concat(&[list.values().as_ref(), v.as_ref()])?;
                let e = Elements::of(&both)?;
                let base = list.values().len();
                // A NULL-typed value has no validity buffer: its nulls are logical.
                let v_nulls = v.logical_nulls();
                let wanted = |r: usize| {
                    (!v_nulls.as_ref().is_some_and(|n| n.is_null(r))).then_some(base + r)
                };
                if self == ArraySetFn::Position {
                    let out: Int64Array = (0..list.len())
                        .map(|r| {
                            let w = wanted(r).filter(|_| list.is_valid(r))?;
                            let pos = range(list, r).position(|i| e.valid(i) && e.same(i, w));
                            Some(pos.map_or(0, |p| p as i64 + 1))
                        })
                        .collect();
                    return Ok(Arc::new(out));
                }
                let mut valid = Vec::with_capacity(list.len());
                let rows = (0..list.len())
                    .map(|r| {
                        let w = wanted(r);
                        valid.push(list.is_valid(r) && w.is_some());
                        match w {
                            None => Vec::new(),
                            Some(w) => range(list, r)
                                .filter(|&i| !e.valid(i) || !e.same(i, w))
                                .map(|i| Some(i as u32))
                                .collect(),
                        }
                    })
                    .collect();
                let out = rebuild(list, list.values(), rows)?;
                with_nulls(out, valid)
            }
            ArraySetFn::Max | ArraySetFn::Min => {
                let a = args.full(0)?;
                let list = list_parts(&a)?;
                let e = Elements::of(list.values())?;
                let max = self == ArraySetFn::Max;
                let take: arrow_array::UInt32Array = (0..list.len())
                    .map(|r| {
                        let mut best: Option<usize> = None;
                        for i in range(list, r).filter(|&i| e.valid(i)) {
                            let better = best.is_none_or(|b| {
                                let (x, y) = (e.rows.row(i), e.rows.row(b));
                                if max {
                                    x > y
                                } else {
                                    x < y
                                }
                            });
                            if better {
                                best = Some(i);
                            }
                        }
                        best.map(|b| b as u32)
                    })
                    .collect();
                Ok(arrow_select::take::take(
                    list.values().as_ref(),
                    &take,
                    None,
                )?)
            }
            ArraySetFn::Join => {
                let a = args.full(0)?;
                let list = list_parts(&a)?;
                let values = list.values().as_string::<i32>();
                let delim = args.str(1)?;
                let replacement = if args.len() > 2 {
                    Some(args.str(2)?)
                } else {
                    None
                };
                let out: StringArray = (0..list.len())
                    .map(|r| {
                        if list.is_null(r) {
                            return None;
                        }
                        let d = delim.get(r)?;
                        let rep = match &replacement {
                            Some(s) => Some(s.get(r)?),
                            None => None,
                        };
                        let parts: Vec<&str> = range(list, r)
                            .filter_map(|i| {
                                if values.is_valid(i) {
                                    Some(values.value(i))
                                } else {
                                    rep
                                }
                            })
                            .collect();
                        Some(parts.join(d))
                    })
                    .collect();
                Ok(Arc::new(out))
            }
            ArraySetFn::Slice => slice(args),
            ArraySetFn::Flatten => flatten(&args.full(0)?),
            ArraySetFn::Repeat => repeat(&args.full(0)?, args),
        }
    }
}

fn range(list: &ListArray, r: usize) -> std::ops::Range<usize> {
    let o = list.value_offsets();
    o[r] as usize..o[r + 1] as usize
}

/// The elements of an array column, comparable by value.
struct Elements {
    rows: Rows,
    nulls: Option<NullBuffer>,
}

impl Elements {
    fn of(values: &ArrayRef) -> Result<Self> {
        let values = &crate::normalize::normalize_key(values);
        let converter = RowConverter::new(vec![SortField::new(values.data_type().clone())])?;
        let rows = converter.convert_columns(std::slice::from_ref(values))?;
        Ok(Self {
            rows,
            nulls: values.logical_nulls(),
        })
    }

    fn valid(&self, i: usize) -> bool {
        self.nulls.as_ref().is_none_or(|n| n.is_valid(i))
    }

    fn same(&self, i: usize, j: usize) -> bool {
        self.rows.row(i) == self.rows.row(j)
    }

    /// The first occurrence of each distinct element of `items` that `keep` accepts (one
    /// NULL at most).
    fn distinct(
        &self,
        items: impl Iterator<Item = usize>,
        mut keep: impl FnMut(usize) -> bool,
    ) -> Vec<Option<u32>> {
        // Arrays are mostly short: a scan of the kept elements costs less than a hash set
        // per row; past `SMALL` elements the set takes over.
        let mut seen: Option<HashSet<arrow_row::Row<'_>>> = None;
        let mut null_seen = false;
        let mut out: Vec<Option<u32>> = Vec::new();
        for i in items {
            if !keep(i) {
                continue;
            }
            if !self.valid(i) {
                if !null_seen {
                    null_seen = true;
                    out.push(Some(i as u32));
                }
                continue;
            }
            let row = self.rows.row(i);
            let new = match &mut seen {
                Some(set) => set.insert(row),
                None => {
                    let dup = out
                        .iter()
                        .flatten()
                        .any(|&j| self.valid(j as usize) && self.rows.row(j as usize) == row);
                    if !dup && out.len() >= SMALL {
                        let mut set: HashSet<arrow_row::Row<'_>> = out
                            .iter()
                            .flatten()
                            .filter(|&&j| self.valid(j as usize))
                            .map(|&j| self.rows.row(j as usize))
                            .collect();
                        set.insert(row);
                        seen = Some(set);
                    }
                    !dup
                }
            };
            if new {
                out.push(Some(i as u32));
            }
        }
        out
    }

    /// Whether a valid element equal to element `i` is among `items`.
    fn contains(&self, items: &Members<'_>, i: usize) -> bool {
        match items {
            Members::Few(v) => v.iter().any(|&j| self.rows.row(j) == self.rows.row(i)),
            Members::Many(set) => set.contains(&self.rows.row(i)),
        }
    }

    /// The valid elements of `items`, to look elements up in.
    fn members(&self, items: impl Iterator<Item = usize>) -> Members<'_> {
        let valid: Vec<usize> = items.filter(|&j| self.valid(j)).collect();
        if valid.len() <= SMALL {
            Members::Few(valid)
        } else {
            Members::Many(valid.iter().map(|&j| self.rows.row(j)).collect())
        }
    }
}

/// Spark's `ByteArrayMethods.MAX_ROUNDED_ARRAY_LENGTH`: the most elements an array holds.
const MAX_ARRAY_LENGTH: i32 = i32::MAX - 15;

/// Up to this many elements, membership is a scan rather than a hash set.
const SMALL: usize = 16;

/// The valid elements of one array side, for membership tests.
enum Members<'a> {
    Few(Vec<usize>),
    Many(HashSet<arrow_row::Row<'a>>),
}

/// `array_union` / `array_intersect` / `array_except` over two arrays of one element type.
fn set_operation(op: ArraySetFn, a: &ArrayRef, b: &ArrayRef) -> Result<ArrayRef> {
    let (la, lb) = (list_parts(a)?, list_parts(b)?);
    let values = arrow_select::concat::concat(&[la.values().as_ref(), lb.values().as_ref()])?;
    let values = crate::normalize::normalize_key(&values);
    let e = Elements::of(&values)?;
    let shift = la.values().len();
    let mut valid = Vec::with_capacity(la.len());
    let rows = (0..la.len())
        .map(|r| {
            if la.is_null(r) || lb.is_null(r) {
                valid.push(false);
                return Vec::new();
            }
            valid.push(true);
            let left = range(la, r);
            let right = range(lb, r).map(|i| i + shift);
            match op {
                ArraySetFn::Union => e.distinct(left.chain(right), |_| true),
                _ => {
                    let other = e.members(right.clone());
                    let other_null = right.clone().any(|i| !e.valid(i));
                    let inside = |i: usize| {
                        if e.valid(i) {
                            e.contains(&other, i)
                        } else {
                            other_null
                        }
                    };
                    let intersect = op == ArraySetFn::Intersect;
                    e.distinct(left, |i| inside(i) == intersect)
                }
            }
        })
        .collect();
    let out = rebuild(la, &values, rows)?;
    with_nulls(out, valid)
}

fn overlap(a: &ArrayRef, b: &ArrayRef) -> Result<ArrayRef> {
    let (la, lb) = (list_parts(a)?, list_parts(b)?);
    let values = arrow_select::concat::concat(&[la.values().as_ref(), lb.values().as_ref()])?;
    let e = Elements::of(&values)?;
    let shift = la.values().len();
    let out: BooleanArray = (0..la.len())
        .map(|r| {
            if la.is_null(r) || lb.is_null(r) {
                return None;
            }
            let left = e.members(range(la, r));
            let mut has_null = range(la, r).any(|i| !e.valid(i));
            for i in range(lb, r).map(|i| i + shift) {
                if !e.valid(i) {
                    has_null = true;
                } else if e.contains(&left, i) {
                    return Some(true);
                }
            }
            // No common element: unknown if either side holds a NULL (and both are non-empty).
            let both = la.value_length(r) > 0 && lb.value_length(r) > 0;
            if has_null && both {
                None
            } else {
                Some(false)
            }
        })
        .collect();
    Ok(Arc::new(out))
}

/// A list column with its validity replaced by `valid`.
fn with_nulls(out: ArrayRef, valid: Vec<bool>) -> Result<ArrayRef> {
    let list = list_parts(&out)?;
    let (field, offsets, values, _) = list.clone().into_parts();
    Ok(Arc::new(ListArray::try_new(
        field,
        offsets,
        values,
        Some(NullBuffer::from(valid)),
    )?))
}

fn slice(args: &Args) -> Result<ArrayRef> {
    let a = args.full(0)?;
    let list = list_parts(&a)?;
    let (start, length) = (args.prim::<Int32Type>(1)?, args.prim::<Int32Type>(2)?);
    let mut valid = Vec::with_capacity(list.len());
    let mut rows = Vec::with_capacity(list.len());
    for r in 0..list.len() {
        let (Some(s), Some(l)) = (start.get(r), length.get(r)) else {
            valid.push(false);
            rows.push(Vec::new());
            continue;
        };
        if list.is_null(r) {
            valid.push(false);
            rows.push(Vec::new());
            continue;
        }
        if s == 0 {
            return Err(FerroError::Arithmetic(format!(
                "[INVALID_PARAMETER_VALUE.START] The value of parameter(s) `start` in `slice` is invalid: Expects a positive or a negative value for `start`, but got {s}. SQLSTATE: 22023"
            )));
        }
        if l < 0 {
            return Err(FerroError::Arithmetic(format!(
                "[INVALID_PARAMETER_VALUE.LENGTH] The value of parameter(s) `length` in `slice` is invalid: Expects `length` greater than or equal to 0, but got {l}. SQLSTATE: 22023"
            )));
        }
        let items = range(list, r);
        let n = items.len() as i64;
        let from = if s > 0 {
            i64::from(s) - 1
        } else {
            n + i64::from(s)
        };
        valid.push(true);
        if from < 0 || from >= n {
            rows.push(Vec::new());
            continue;
        }
        let to = (from + i64::from(l)).min(n);
        rows.push(
            (from..to)
                .map(|k| Some((items.start as i64 + k) as u32))
                .collect(),
        );
    }
    let out = rebuild(list, list.values(), rows)?;
    with_nulls(out, valid)
}

fn flatten(a: &ArrayRef) -> Result<ArrayRef> {
    let outer = list_parts(a)?;
    let inner = list_parts(outer.values())?;
    let mut valid = Vec::with_capacity(outer.len());
    let mut rows = Vec::with_capacity(outer.len());
    for r in 0..outer.len() {
        let parts = range(outer, r);
        if outer.is_null(r) || parts.clone().any(|p| inner.is_null(p)) {
            valid.push(false);
            rows.push(Vec::new());
            continue;
        }
        valid.push(true);
        rows.push(
            parts
                .flat_map(|p| range(inner, p))
                .map(|i| Some(i as u32))
                .collect(),
        );
    }
    let lengths = rows.iter().map(Vec::len);
    let offsets = OffsetBuffer::from_lengths(lengths);
    let take: arrow_array::UInt32Array = rows.into_iter().flatten().collect();
    let values = arrow_select::take::take(inner.values().as_ref(), &take, None)?;
    let field = match inner.data_type() {
        DataType::List(f) => f.clone(),
        _ => return Err(FerroError::Internal("a list without a field".into())),
    };
    Ok(Arc::new(ListArray::try_new(
        field,
        offsets,
        values,
        Some(NullBuffer::from(valid)),
    )?))
}

fn repeat(v: &ArrayRef, args: &Args) -> Result<ArrayRef> {
    let count = args.prim::<Int32Type>(1)?;
    let n = v.len();
    let mut valid = Vec::with_capacity(n);
    let mut lengths = Vec::with_capacity(n);
    let mut take = Vec::new();
    for r in 0..n {
        match count.get(r) {
            None => {
                valid.push(false);
                lengths.push(0);
            }
            Some(c) => {
                if c > MAX_ARRAY_LENGTH || take.len() + c.max(0) as usize > i32::MAX as usize {
                    return Err(FerroError::Arithmetic(format!(
                        "[COLLECTION_SIZE_LIMIT_EXCEEDED.PARAMETER] Can't create array with {c} elements which exceeding the array size limit {MAX_ARRAY_LENGTH}. SQLSTATE: 54000"
                    )));
                }
                let c = c.max(0) as usize;
                valid.push(true);
                lengths.push(c);
                take.extend(std::iter::repeat_n(r as u32, c));
            }
        }
    }
    let values = arrow_select::take::take(v.as_ref(), &arrow_array::UInt32Array::from(take), None)?;
    let field = Arc::new(arrow_schema::Field::new(
        "element",
        v.data_type().clone(),
        true,
    ));
    Ok(Arc::new(ListArray::try_new(
        field,
        OffsetBuffer::from_lengths(lengths),
        values,
        Some(NullBuffer::from(valid)),
    )?))
}

/// Two arrays cast to arrays of their common element type.
fn two_arrays(
    call: &Call<'_, '_>,
    args: &[PhysicalExpr],
) -> Result<(PhysicalExpr, PhysicalExpr, DataType)> {
    call.arity(args, 2, 2)?;
    let mut types = Vec::with_capacity(2);
    for (i, a) in args.iter().enumerate() {
        let t = a.data_type();
        match (element_type(&t), &t) {
            (Some(et), _) => types.push(et.clone()),
            (None, DataType::Null) => types.push(DataType::Null),
            _ => return Err(call.wrong_type(i, a, "the \"ARRAY\" type")),
        }
    }
    let nulls: Vec<PhysicalExpr> = types
        .iter()
        .map(|t| PhysicalExpr::Literal(Literal::null(t)))
        .collect();
    let common = call.common_type(&nulls.iter().collect::<Vec<_>>())?;
    let t = list_of(&common);
    Ok((
        cast_to(args[0].clone(), &t),
        cast_to(args[1].clone(), &t),
        t,
    ))
}

/// Binds this family's calls; other names are returned.
pub(crate) fn bind(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    let f = ScalarFunction::ArraySet;
    let array_arg = |i: usize, args: &[PhysicalExpr]| -> Result<DataType> {
        let t = args[i].data_type();
        match element_type(&t) {
            Some(et) => Ok(et.clone()),
            None => Err(call.wrong_type(i, &args[i], "the \"ARRAY\" type")),
        }
    };
    Ok(Bound::Done(match call.name {
        "array_distinct" | "array_max" | "array_min" => {
            call.arity(&args, 1, 1)?;
            let et = array_arg(0, &args)?;
            let (func, t) = match call.name {
                "array_distinct" => (ArraySetFn::Distinct, args[0].data_type()),
                "array_max" => (ArraySetFn::Max, et),
                _ => (ArraySetFn::Min, et),
            };
            call.function(f(func), args, t)
        }
        "array_union" | "array_intersect" | "array_except" | "arrays_overlap" => {
            let (a, b, t) = two_arrays(call, &args)?;
            let (func, out) = match call.name {
                "array_union" => (ArraySetFn::Union, t),
                "array_intersect" => (ArraySetFn::Intersect, t),
                "array_except" => (ArraySetFn::Except, t),
                _ => (ArraySetFn::Overlap, DataType::Boolean),
            };
            call.function(f(func), vec![a, b], out)
        }
        "array_position" | "array_remove" => {
            call.arity(&args, 2, 2)?;
            let et = array_arg(0, &args)?;
            let common =
                call.common_type(&[&PhysicalExpr::Literal(Literal::null(&et)), &args[1]])?;
            let arr = cast_to(args[0].clone(), &list_of(&common));
            let v = cast_to(args[1].clone(), &common);
            if call.name == "array_position" {
                call.function(f(ArraySetFn::Position), vec![arr, v], DataType::Int64)
            } else {
                call.function(f(ArraySetFn::Remove), vec![arr, v], list_of(&common))
            }
        }
        "array_join" => {
            call.arity(&args, 2, 3)?;
            array_arg(0, &args)?;
            let mut a = vec![cast_to(args[0].clone(), &list_of(&DataType::Utf8))];
            for (i, x) in args.iter().enumerate().skip(1) {
                a.push(call.string_arg(i, x.clone())?);
            }
            call.function(f(ArraySetFn::Join), a, DataType::Utf8)
        }
        "slice" => {
            call.arity(&args, 3, 3)?;
            array_arg(0, &args)?;
            let t = args[0].data_type();
            let s = call.int_arg(1, args[1].clone(), &DataType::Int32)?;
            let l = call.int_arg(2, args[2].clone(), &DataType::Int32)?;
            call.function(f(ArraySetFn::Slice), vec![args[0].clone(), s, l], t)
        }
        "flatten" => {
            call.arity(&args, 1, 1)?;
            let et = array_arg(0, &args)?;
            if element_type(&et).is_none() {
                return Err(call.wrong_type(0, &args[0], "the \"ARRAY\" of \"ARRAY\" type"));
            }
            call.function(f(ArraySetFn::Flatten), args, et)
        }
        "array_repeat" => {
            call.arity(&args, 2, 2)?;
            let t = list_of(&args[0].data_type());
            let c = call.int_arg(1, args[1].clone(), &DataType::Int32)?;
            call.function(f(ArraySetFn::Repeat), vec![args[0].clone(), c], t)
        }
        _ => return Ok(Bound::NotMine(args)),
    }))
}
