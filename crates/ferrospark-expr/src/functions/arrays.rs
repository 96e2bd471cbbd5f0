//! More array and map functions: `array_insert`, `arrays_zip`, `map_contains_key`.
//!
//! As in `collections.rs`, results are built by taking from the flattened elements
//! (`interleave`), so one code path serves every element type.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{new_null_array, Array, ArrayRef, BooleanArray, ListArray, StructArray};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, Fields};
use ferrospark_common::{FerroError, Result};

use super::collections::{element_type, list_of, map_types};
use super::{Args, Bound, Call, ScalarFunction};
use crate::bind::cast_to;
use crate::expr::Literal;
use crate::physical::PhysicalExpr;
use crate::types::{comparison_type, spark_equivalent, spark_type_name};

/// The functions of this family.
#[derive(Debug, Clone, PartialEq)]
pub enum ArraysFn {
    /// `array_insert(arr, pos, item)`: 1-based, negative from the end (-1 appends), NULLs
    /// padding a position past either end
    Insert,
    /// `arrays_zip(a, b, ...)`: structs of the i-th elements, as long as the longest
    Zip(Fields),
    /// `map_contains_key(m, k)`
    MapContainsKey,
}

impl ArraysFn {
    /// Spark's name.
    pub fn name(&self) -> &'static str {
        match self {
            ArraysFn::Insert => "array_insert",
            ArraysFn::Zip(_) => "arrays_zip",
            ArraysFn::MapContainsKey => "map_contains_key",
        }
    }

    /// Evaluates over `args`.
    pub(crate) fn evaluate(&self, args: &Args) -> Result<ArrayRef> {
        match self {
            ArraysFn::Insert => insert(&args.full(0)?, &args.full(1)?, &args.full(2)?),
            ArraysFn::Zip(fields) => {
                let cols = (0..args.len())
                    .map(|i| args.full(i))
                    .collect::<Result<Vec<_>>>()?;
                zip(&cols, fields)
            }
            ArraysFn::MapContainsKey => contains_key(&args.full(0)?, &args.full(1)?),
        }
    }
}

fn insert(arr: &ArrayRef, pos: &ArrayRef, item: &ArrayRef) -> Result<ArrayRef> {
    let list = arr.as_list::<i32>();
    let pos = pos.as_primitive::<arrow_array::types::Int32Type>();
    let values = list.values();
    let null = new_null_array(values.data_type(), 1);
    let sources: [&dyn Array; 3] = [values.as_ref(), item.as_ref(), null.as_ref()];
    let mut take: Vec<(usize, usize)> = Vec::new();
    let mut offsets: Vec<i32> = vec![0];
    let mut valid: Vec<bool> = Vec::with_capacity(list.len());
    for i in 0..list.len() {
        if list.is_null(i) || pos.is_null(i) {
            valid.push(false);
            offsets.push(take.len() as i32);
            continue;
        }
        let p = pos.value(i) as i64;
        if p == 0 {
            return Err(FerroError::Arithmetic(
                "[INVALID_INDEX_OF_ZERO] The index 0 is invalid. An index shall be either < 0 or > 0 (the first element has index 1).".into(),
            ));
        }
        let start = list.value_offsets()[i] as usize;
        let len = list.value_length(i) as i64;
        let element = |k: i64| (0usize, start + k as usize);
        let at = if p > 0 { p - 1 } else { len + p + 1 };
        if at < 0 {
            // Before the start: the item, then NULLs up to the first element.
            take.push((1, i));
            for _ in 0..(-at) {
                take.push((2, 0));
            }
            for k in 0..len {
                take.push(element(k));
            }
        } else {
            for k in 0..at.min(len) {
                take.push(element(k));
            }
            for _ in len..at {
                take.push((2, 0));
            }
            take.push((1, i));
            for k in at.min(len)..len {
                take.push(element(k));
            }
        }
        valid.push(true);
        offsets.push(take.len() as i32);
    }
    let values = arrow_select::interleave::interleave(&sources, &take)?;
    let field = Arc::new(Field::new("element", values.data_type().clone(), true));
    Ok(Arc::new(ListArray::try_new(
        field,
        OffsetBuffer::new(offsets.into()),
        values,
        Some(NullBuffer::from(valid)),
    )?))
}

fn zip(cols: &[ArrayRef], fields: &Fields) -> Result<ArrayRef> {
    let n = cols.first().map_or(0, |c| c.len());
    let lists: Vec<&ListArray> = cols.iter().map(|c| c.as_list::<i32>()).collect();
    let nulls: Vec<ArrayRef> = lists
        .iter()
        .map(|l| new_null_array(l.values().data_type(), 1))
        .collect();
    let mut takes: Vec<Vec<(usize, usize)>> = vec![Vec::new(); lists.len()];
    let mut offsets = vec![0i32];
    let mut valid = Vec::with_capacity(n);
    let mut total = 0;
    for i in 0..n {
        if lists.iter().any(|l| l.is_null(i)) {
            valid.push(false);
            offsets.push(total as i32);
            continue;
        }
        let longest = lists.iter().map(|l| l.value_length(i)).max().unwrap_or(0) as usize;
        for (c, l) in lists.iter().enumerate() {
            let start = l.value_offsets()[i] as usize;
            let len = l.value_length(i) as usize;
            for k in 0..longest {
                takes[c].push(if k < len { (0, start + k) } else { (1, 0) });
            }
        }
        total += longest;
        valid.push(true);
        offsets.push(total as i32);
    }
    let columns = lists
        .iter()
        .zip(&nulls)
        .zip(&takes)
        .map(|((l, null), t)| {
            let sources: [&dyn Array; 2] = [l.values().as_ref(), null.as_ref()];
            arrow_select::interleave::interleave(&sources, t)
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let structs = StructArray::try_new(fields.clone(), columns, None)?;
    let field = Arc::new(Field::new(
        "element",
        DataType::Struct(fields.clone()),
        true,
    ));
    Ok(Arc::new(ListArray::try_new(
        field,
        OffsetBuffer::new(offsets.into()),
        Arc::new(structs),
        Some(NullBuffer::from(valid)),
    )?))
}

fn contains_key(map: &ArrayRef, key: &ArrayRef) -> Result<ArrayRef> {
    let m = map.as_map();
    let keys = arrow_cast::cast(m.keys(), key.data_type())?;
    let owner: Vec<u32> = (0..m.len())
        .flat_map(|i| {
            let n = m.value_length(i) as usize;
            std::iter::repeat_n(i as u32, n)
        })
        .collect();
    let wanted =
        arrow_select::take::take(key, &arrow_array::UInt32Array::from(owner.clone()), None)?;
    let first = m.value_offsets()[0] as usize;
    let span = keys.slice(first, owner.len());
    let eq = arrow_ord::cmp::eq(&span, &wanted)?;
    let mut out: Vec<Option<bool>> = (0..m.len())
        .map(|i| (m.is_valid(i) && key.is_valid(i)).then_some(false))
        .collect();
    for (j, &row) in owner.iter().enumerate() {
        if eq.is_valid(j) && eq.value(j) {
            if let Some(o) = out[row as usize].as_mut() {
                *o = true;
            }
        }
    }
    Ok(Arc::new(BooleanArray::from(out)))
}

/// Binds this family's functions.
pub(crate) fn bind(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    let f = |f: ArraysFn| ScalarFunction::Arrays(f);
    let e = match call.name {
        "array_insert" => {
            call.arity(&args, 3, 3)?;
            let t = spark_equivalent(&args[0].data_type());
            let et = match &t {
                DataType::Null => DataType::Null,
                _ => element_type(&t)
                    .cloned()
                    .ok_or_else(|| call.wrong_type(0, &args[0], "the \"ARRAY\" type"))?,
            };
            let it = spark_equivalent(&args[2].data_type());
            let common = if it == DataType::Null || it == et {
                et.clone()
            } else {
                comparison_type(&et, &it)
                    .filter(|_| crate::types::is_string(&it) == crate::types::is_string(&et))
                    .ok_or_else(|| {
                        FerroError::Analysis(format!(
                            "[DATATYPE_MISMATCH.ARRAY_FUNCTION_DIFF_TYPES] Cannot resolve \"{}\" due to data type mismatch: Input to `array_insert` should have been \"ARRAY\" followed by a value with same element type, but it's [\"{}\", \"{}\"].",
                            call.expr,
                            spark_type_name(&t),
                            spark_type_name(&it)
                        ))
                    })?
            };
            let arr = cast_to(args[0].clone(), &list_of(&common));
            let pos = call.int_arg(1, args[1].clone(), &DataType::Int32)?;
            let item = cast_to(args[2].clone(), &common);
            call.function(f(ArraysFn::Insert), vec![arr, pos, item], list_of(&common))
        }
        "arrays_zip" => {
            let mut fields = Vec::with_capacity(args.len());
            let mut bound = Vec::with_capacity(args.len());
            for (i, a) in args.into_iter().enumerate() {
                let t = spark_equivalent(&a.data_type());
                let et = match &t {
                    DataType::Null => DataType::Null,
                    _ => element_type(&t)
                        .cloned()
                        .ok_or_else(|| call.wrong_type(i, &a, "the \"ARRAY\" type"))?,
                };
                fields.push(Field::new(i.to_string(), et.clone(), true));
                bound.push(cast_to(a, &list_of(&et)));
            }
            let fields = Fields::from(fields);
            let t = list_of(&DataType::Struct(fields.clone()));
            if bound.is_empty() {
                return Ok(Bound::Done(PhysicalExpr::Literal(Literal::null(&t))));
            }
            call.function(f(ArraysFn::Zip(fields)), bound, t)
        }
        "map_contains_key" => {
            call.arity(&args, 2, 2)?;
            let t = spark_equivalent(&args[0].data_type());
            let (kt, _) =
                map_types(&t).ok_or_else(|| call.wrong_type(0, &args[0], "the \"MAP\" type"))?;
            let it = spark_equivalent(&args[1].data_type());
            let common = comparison_type(&kt, &it)
                .filter(|_| {
                    crate::types::is_string(&kt) == crate::types::is_string(&it)
                        || it == DataType::Null
                })
                .ok_or_else(|| {
                    FerroError::Analysis(format!(
                        "[DATATYPE_MISMATCH.MAP_FUNCTION_DIFF_TYPES] Cannot resolve \"{}\" due to data type mismatch: Input to `map_contains_key` should have been \"MAP\" followed by a value with same key type, but it's [\"{}\", \"{}\"].",
                        call.expr,
                        spark_type_name(&t),
                        spark_type_name(&it)
                    ))
                })?;
            // The map's keys are widened when the function runs (a map cast is not needed).
            let k = cast_to(args[1].clone(), &common);
            call.function(
                f(ArraysFn::MapContainsKey),
                vec![args[0].clone(), k],
                DataType::Boolean,
            )
        }
        _ => return Ok(Bound::NotMine(args)),
    };
    Ok(Bound::Done(e))
}
