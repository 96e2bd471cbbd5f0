//! Arrays and maps: `array(...)`, `map(k, v, ...)`, `a[i]` / `m[k]`, `element_at`, `get`,
//! `size` / `cardinality` / `array_size`, `array_contains`, `sort_array`, `array_append`,
//! `array_prepend`, `array_compact`, `map_keys`, `map_values`, with Spark's element types,
//! NULL rules and ANSI errors.
//!
//! Each function reads a row's elements through the list's offsets and builds its result by
//! taking from the flattened elements (`take` / `interleave`), so one code path serves every
//! element type. Elements and map keys are compared in Arrow's row format.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BooleanArray, Int32Array, ListArray, MapArray, UInt32Array};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{DataType, Field, Fields};
use ferrospark_common::{FerroError, Result};

use super::{Args, Bound, Call, ScalarFunction};
use crate::expr::Literal;
use crate::physical::PhysicalExpr;
use crate::types::spark_type_name;

/// The function name the parser gives `base[index]`.
pub const SUBSCRIPT_FN: &str = "__subscript";

/// Array and map functions.
#[derive(Debug, Clone, PartialEq)]
pub enum CollectionFn {
    /// `array(a, b, ...)`, of its list type
    MakeArray(DataType),
    /// `map(k1, v1, k2, v2, ...)`, of its map type
    MakeMap(DataType),
    /// `size(x)` / `cardinality(x)`: -1 for NULL unless ANSI (then NULL)
    Size {
        /// NULL input gives -1
        legacy_null: bool,
    },
    /// `arr[i]` (0-based), `get(arr, i)`, `element_at(arr, i)` (1-based, negative from the
    /// end); `map[k]` / `element_at(map, k)`
    Item {
        /// the first element is index 1
        one_based: bool,
        /// an index past the end is an error (else NULL)
        fail_out_of_bounds: bool,
        /// the function, for messages
        name: &'static str,
    },
    /// `array_contains(arr, v)`
    Contains,
    /// `sort_array(arr[, asc])`
    Sort,
    /// `array_append(arr, v)` (`prepend`: `array_prepend`)
    Append {
        /// put the value first
        prepend: bool,
    },
    /// `array_compact(arr)`: the non-NULL elements
    Compact,
    /// `map_keys(m)` (`values`: `map_values`)
    MapPart {
        /// the values rather than the keys
        values: bool,
    },
}

impl CollectionFn {
    /// Spark's name.
    pub fn name(&self) -> &'static str {
        match self {
            CollectionFn::MakeArray(_) => "array",
            CollectionFn::MakeMap(_) => "map",
            CollectionFn::Size { .. } => "size",
            CollectionFn::Item { name, .. } => name,
            CollectionFn::Contains => "array_contains",
            CollectionFn::Sort => "sort_array",
            CollectionFn::Append { prepend: false } => "array_append",
            CollectionFn::Append { prepend: true } => "array_prepend",
            CollectionFn::Compact => "array_compact",
            CollectionFn::MapPart { values: false } => "map_keys",
            CollectionFn::MapPart { values: true } => "map_values",
        }
    }

    /// Evaluates the function over `args`.
    pub(crate) fn evaluate(&self, args: &Args) -> Result<ArrayRef> {
        match self {
            CollectionFn::MakeArray(t) => make_array(args, t),
            CollectionFn::MakeMap(t) => make_map(args, t),
            CollectionFn::Size { legacy_null } => size(&args.full(0)?, *legacy_null),
            CollectionFn::Item {
                one_based,
                fail_out_of_bounds,
                name,
            } => {
                let base = args.full(0)?;
                let key = args.full(1)?;
                if let Some(m) = base.as_map_opt() {
                    return map_lookup(m, &key);
                }
                array_item(&base, &key, *one_based, *fail_out_of_bounds, name)
            }
            CollectionFn::Contains => contains(&args.full(0)?, &args.full(1)?),
            CollectionFn::Sort => {
                let asc = match args.len() {
                    1 => true,
                    _ => args
                        .full(1)?
                        .as_boolean_opt()
                        .map(|b| b.is_valid(0) && b.value(0))
                        .unwrap_or(true),
                };
                sort_array(&args.full(0)?, asc)
            }
            CollectionFn::Append { prepend } => append(&args.full(0)?, &args.full(1)?, *prepend),
            CollectionFn::Compact => compact(&args.full(0)?),
            CollectionFn::MapPart { values } => {
                let m = args.full(0)?;
                let m = m
                    .as_map_opt()
                    .ok_or_else(|| FerroError::Internal("map_keys of a non-map".into()))?;
                let part = if *values { m.values() } else { m.keys() };
                Ok(Arc::new(ListArray::try_new(
                    Arc::new(Field::new("element", part.data_type().clone(), true)),
                    m.offsets().clone(),
                    part.clone(),
                    m.nulls().cloned(),
                )?))
            }
        }
    }
}

pub(super) fn list_of(t: &DataType) -> DataType {
    DataType::List(Arc::new(Field::new("element", t.clone(), true)))
}

pub(super) fn element_type(t: &DataType) -> Option<&DataType> {
    match t {
        DataType::List(f) | DataType::LargeList(f) => Some(f.data_type()),
        _ => None,
    }
}

pub(super) fn map_types(t: &DataType) -> Option<(DataType, DataType)> {
    match t {
        DataType::Map(f, _) => match f.data_type() {
            DataType::Struct(kv) if kv.len() == 2 => {
                Some((kv[0].data_type().clone(), kv[1].data_type().clone()))
            }
            _ => None,
        },
        _ => None,
    }
}

pub(super) fn map_type(k: &DataType, v: &DataType) -> DataType {
    DataType::Map(
        Arc::new(Field::new(
            "entries",
            DataType::Struct(Fields::from(vec![
                Field::new("key", k.clone(), false),
                Field::new("value", v.clone(), true),
            ])),
            false,
        )),
        false,
    )
}

/// Binds this family's functions; other names are returned.
pub(crate) fn bind(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    let ansi = call.ctx.ansi;
    let f = |c: CollectionFn| ScalarFunction::Collection(c);
    let cast = crate::bind::cast_to;
    Ok(Bound::Done(match call.name {
        "array" => {
            let t = call.common_type(&args.iter().collect::<Vec<_>>())?;
            let args: Vec<PhysicalExpr> = args.into_iter().map(|a| cast(a, &t)).collect();
            call.function(f(CollectionFn::MakeArray(list_of(&t))), args, list_of(&t))
        }
        "map" => {
            if args.len() % 2 == 1 {
                return Err(FerroError::Analysis(format!(
                    "[WRONG_NUM_ARGS.WITHOUT_SUGGESTION] The `map` requires 2n (n > 0) parameters but the actual number is {} in \"{}\".",
                    args.len(),
                    call.expr
                )));
            }
            let keys: Vec<&PhysicalExpr> = args.iter().step_by(2).collect();
            let values: Vec<&PhysicalExpr> = args.iter().skip(1).step_by(2).collect();
            let kt = call.common_type(&keys)?;
            let vt = call.common_type(&values)?;
            let args: Vec<PhysicalExpr> = args
                .into_iter()
                .enumerate()
                .map(|(i, a)| cast(a, if i % 2 == 0 { &kt } else { &vt }))
                .collect();
            let out = map_type(&kt, &vt);
            call.function(f(CollectionFn::MakeMap(out.clone())), args, out)
        }
        "size" | "cardinality" | "array_size" => {
            call.arity(&args, 1, 1)?;
            let t = args[0].data_type();
            let is_map = map_types(&t).is_some();
            if element_type(&t).is_none()
                && !(is_map && call.name != "array_size")
                && t != DataType::Null
            {
                let wanted = if call.name == "array_size" {
                    "the \"ARRAY\" type"
                } else {
                    "(\"ARRAY\" or \"MAP\") type"
                };
                return Err(call.wrong_type(0, &args[0], wanted));
            }
            let legacy_null = call.name != "array_size" && !ansi;
            let arg = if t == DataType::Null {
                PhysicalExpr::Literal(Literal::null(&list_of(&DataType::Null)))
            } else {
                args[0].clone()
            };
            call.function(
                f(CollectionFn::Size { legacy_null }),
                vec![arg],
                DataType::Int32,
            )
        }
        SUBSCRIPT_FN | "element_at" | "get" | "try_element_at" => {
            call.arity(&args, 2, 2)?;
            let t = args[0].data_type();
            let name: &'static str = match call.name {
                "element_at" => "element_at",
                "try_element_at" => "try_element_at",
                "get" => "get",
                _ => "[]",
            };
            if let Some((kt, vt)) = map_types(&t) {
                if call.name == "get" {
                    return Err(call.wrong_type(0, &args[0], "the \"ARRAY\" type"));
                }
                let key = cast(args[1].clone(), &kt);
                let item = CollectionFn::Item {
                    one_based: true,
                    fail_out_of_bounds: false,
                    name,
                };
                call.function(f(item), vec![args[0].clone(), key], vt)
            } else if let Some(et) = element_type(&t) {
                let et = et.clone();
                let index = call.int_arg(1, args[1].clone(), &DataType::Int32)?;
                let item = CollectionFn::Item {
                    one_based: matches!(call.name, "element_at" | "try_element_at"),
                    fail_out_of_bounds: ansi && matches!(call.name, "element_at" | SUBSCRIPT_FN),
                    name,
                };
                call.function(f(item), vec![args[0].clone(), index], et)
            } else {
                return Err(FerroError::Analysis(format!(
                    "[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE] Cannot resolve \"{}\" due to data type mismatch: parameter 1 requires (\"ARRAY\" or \"MAP\") type, however \"{}\" has the type {}.",
                    call.expr,
                    args[0],
                    spark_type_name(&t)
                )));
            }
        }
        "array_contains" | "array_append" | "array_prepend" => {
            call.arity(&args, 2, 2)?;
            let t = args[0].data_type();
            let Some(et) = element_type(&t).cloned() else {
                return Err(call.wrong_type(0, &args[0], "the \"ARRAY\" type"));
            };
            let common =
                call.common_type(&[&PhysicalExpr::Literal(Literal::null(&et)), &args[1]])?;
            let arr = cast(args[0].clone(), &list_of(&common));
            let v = cast(args[1].clone(), &common);
            match call.name {
                "array_contains" => {
                    call.function(f(CollectionFn::Contains), vec![arr, v], DataType::Boolean)
                }
                name => call.function(
                    f(CollectionFn::Append {
                        prepend: name == "array_prepend",
                    }),
                    vec![arr, v],
                    list_of(&common),
                ),
            }
        }
        "sort_array" => {
            call.arity(&args, 1, 2)?;
            let t = args[0].data_type();
            if element_type(&t).is_none() {
                return Err(call.wrong_type(0, &args[0], "the \"ARRAY\" type"));
            }
            let mut v = vec![args[0].clone()];
            if let Some(asc) = args.get(1) {
                let constant = matches!(asc, PhysicalExpr::Literal(l) if !l.is_null() && l.data_type() == &DataType::Boolean);
                if !constant {
                    return Err(FerroError::Analysis(format!(
                        "[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE] Cannot resolve \"{}\" due to data type mismatch: parameter 2 requires the \"BOOLEAN\" type, however \"{asc}\" has the type {}.",
                        call.expr,
                        spark_type_name(&asc.data_type())
                    )));
                }
                v.push(asc.clone());
            }
            call.function(f(CollectionFn::Sort), v, t)
        }
        "array_compact" => {
            call.arity(&args, 1, 1)?;
            let t = args[0].data_type();
            if element_type(&t).is_none() {
                return Err(call.wrong_type(0, &args[0], "the \"ARRAY\" type"));
            }
            call.function(f(CollectionFn::Compact), args, t)
        }
        "map_keys" | "map_values" => {
            call.arity(&args, 1, 1)?;
            let t = args[0].data_type();
            let Some((kt, vt)) = map_types(&t) else {
                return Err(call.wrong_type(0, &args[0], "the \"MAP\" type"));
            };
            let values = call.name == "map_values";
            let out = list_of(if values { &vt } else { &kt });
            call.function(f(CollectionFn::MapPart { values }), args, out)
        }
        _ => return Ok(Bound::NotMine(args)),
    }))
}

pub(crate) fn list_parts(a: &ArrayRef) -> Result<&ListArray> {
    a.as_list_opt::<i32>()
        .ok_or_else(|| FerroError::Internal(format!("an array function over {}", a.data_type())))
}

fn make_array(args: &Args, out_type: &DataType) -> Result<ArrayRef> {
    let rows = args.rows();
    let n = args.len();
    let field = match out_type {
        DataType::List(f) => f.clone(),
        _ => return Err(FerroError::Internal("array() bound to a non-list".into())),
    };
    let cols: Vec<ArrayRef> = (0..n).map(|i| args.full(i)).collect::<Result<_>>()?;
    let values = if n == 0 {
        arrow_array::new_empty_array(field.data_type())
    } else {
        let refs: Vec<&dyn Array> = cols.iter().map(|c| c.as_ref()).collect();
        let idx: Vec<(usize, usize)> = (0..rows)
            .flat_map(|r| (0..n).map(move |c| (c, r)))
            .collect();
        arrow_select::interleave::interleave(&refs, &idx)?
    };
    let offsets = OffsetBuffer::from_lengths(std::iter::repeat_n(n, rows));
    Ok(Arc::new(ListArray::try_new(field, offsets, values, None)?))
}

fn make_map(args: &Args, out_type: &DataType) -> Result<ArrayRef> {
    let rows = args.rows();
    let pairs = args.len() / 2;
    let DataType::Map(entries, _) = out_type else {
        return Err(FerroError::Internal("map() bound to a non-map".into()));
    };
    let DataType::Struct(kv) = entries.data_type() else {
        return Err(FerroError::Internal("a map without entries".into()));
    };
    let cols: Vec<ArrayRef> = (0..args.len())
        .map(|i| args.full(i))
        .collect::<Result<_>>()?;
    let pick = |first: usize| -> Result<ArrayRef> {
        if pairs == 0 {
            return Ok(arrow_array::new_empty_array(kv[first].data_type()));
        }
        let refs: Vec<&dyn Array> = cols
            .iter()
            .skip(first)
            .step_by(2)
            .map(|c| c.as_ref())
            .collect();
        let idx: Vec<(usize, usize)> = (0..rows)
            .flat_map(|r| (0..pairs).map(move |c| (c, r)))
            .collect();
        Ok(arrow_select::interleave::interleave(&refs, &idx)?)
    };
    let offsets = (0..=rows).map(|r| (r * pairs) as i32).collect();
    super::maps::map_of(pick(0)?, pick(1)?, offsets, None, out_type)
}

fn size(a: &ArrayRef, legacy_null: bool) -> Result<ArrayRef> {
    let (offsets, nulls): (Vec<i32>, Option<&NullBuffer>) = if let Some(l) = a.as_list_opt::<i32>()
    {
        (l.offsets().to_vec(), l.nulls())
    } else if let Some(m) = a.as_map_opt() {
        (m.offsets().to_vec(), m.nulls())
    } else {
        return Err(FerroError::Internal(format!("size of {}", a.data_type())));
    };
    let out: Int32Array = (0..a.len())
        .map(|i| {
            if nulls.is_some_and(|n| n.is_null(i)) {
                legacy_null.then_some(-1)
            } else {
                Some(offsets[i + 1] - offsets[i])
            }
        })
        .collect();
    Ok(Arc::new(out))
}

fn array_item(
    base: &ArrayRef,
    index: &ArrayRef,
    one_based: bool,
    fail: bool,
    name: &str,
) -> Result<ArrayRef> {
    let list = list_parts(base)?;
    let idx = index
        .as_primitive_opt::<arrow_array::types::Int32Type>()
        .ok_or_else(|| FerroError::Internal("an array index that is not INT".into()))?;
    let offsets = list.offsets();
    let mut take: Vec<Option<u32>> = Vec::with_capacity(list.len());
    for r in 0..list.len() {
        if list.is_null(r) || idx.is_null(r) {
            take.push(None);
            continue;
        }
        let (start, len) = (offsets[r] as i64, (offsets[r + 1] - offsets[r]) as i64);
        let i = idx.value(r) as i64;
        let pos = if one_based {
            if i == 0 {
                return Err(FerroError::Arithmetic(
                    "[INVALID_INDEX_OF_ZERO] The index 0 is invalid. An index shall be either < 0 or > 0 (the first element has index 1). SQLSTATE: 22003".into(),
                ));
            }
            if i > 0 {
                i - 1
            } else {
                len + i
            }
        } else {
            i
        };
        if pos < 0 || pos >= len {
            if fail {
                let class = if name == "element_at" {
                    "INVALID_ARRAY_INDEX_IN_ELEMENT_AT"
                } else {
                    "INVALID_ARRAY_INDEX"
                };
                return Err(FerroError::Arithmetic(format!(
                    "[{class}] The index {i} is out of bounds. The array has {len} elements. Use `try_element_at` to tolerate accessing element at invalid index and return NULL instead. If necessary set \"spark.sql.ansi.enabled\" to \"false\" to bypass this error. SQLSTATE: 22003"
                )));
            }
            take.push(None);
            continue;
        }
        take.push(Some((start + pos) as u32));
    }
    Ok(arrow_select::take::take(
        list.values().as_ref(),
        &UInt32Array::from(take),
        None,
    )?)
}

fn map_lookup(m: &MapArray, key: &ArrayRef) -> Result<ArrayRef> {
    let converter = RowConverter::new(vec![SortField::new(m.keys().data_type().clone())])?;
    let keys = converter.convert_columns(std::slice::from_ref(m.keys()))?;
    let wanted = converter.convert_columns(std::slice::from_ref(key))?;
    let offsets = m.offsets();
    let take: UInt32Array = (0..m.len())
        .map(|r| {
            if m.is_null(r) || key.is_null(r) {
                return None;
            }
            (offsets[r] as usize..offsets[r + 1] as usize)
                .find(|&i| keys.row(i) == wanted.row(r))
                .map(|i| i as u32)
        })
        .collect();
    Ok(arrow_select::take::take(m.values().as_ref(), &take, None)?)
}

fn contains(arr: &ArrayRef, value: &ArrayRef) -> Result<ArrayRef> {
    let list = list_parts(arr)?;
    let converter = RowConverter::new(vec![SortField::new(list.values().data_type().clone())])?;
    let elems = converter.convert_columns(std::slice::from_ref(list.values()))?;
    let wanted = converter.convert_columns(std::slice::from_ref(value))?;
    let offsets = list.offsets();
    // A NULL-typed array's elements are all NULL without a validity buffer.
    let nulls = list.values().logical_nulls();
    let valid = |i: usize| nulls.as_ref().is_none_or(|n| n.is_valid(i));
    let value_nulls = value.logical_nulls();
    let out: BooleanArray = (0..list.len())
        .map(|r| {
            if list.is_null(r) || value_nulls.as_ref().is_some_and(|n| n.is_null(r)) {
                return None;
            }
            let range = offsets[r] as usize..offsets[r + 1] as usize;
            if range
                .clone()
                .any(|i| valid(i) && elems.row(i) == wanted.row(r))
            {
                Some(true)
            } else if range.clone().any(|i| !valid(i)) {
                None
            } else {
                Some(false)
            }
        })
        .collect();
    Ok(Arc::new(out))
}

/// A list with `list`'s field and nulls whose row `r` holds the elements `rows[r]` of
/// `values` (`None` for a NULL element).
pub(crate) fn rebuild(
    list: &ListArray,
    values: &ArrayRef,
    rows: Vec<Vec<Option<u32>>>,
) -> Result<ArrayRef> {
    let lengths = rows.iter().map(Vec::len);
    let offsets = OffsetBuffer::from_lengths(lengths);
    let take: UInt32Array = rows.into_iter().flatten().collect();
    let taken = arrow_select::take::take(values.as_ref(), &take, None)?;
    let field = match list.data_type() {
        DataType::List(f) => f.clone(),
        _ => return Err(FerroError::Internal("a list without a field".into())),
    };
    Ok(Arc::new(ListArray::try_new(
        field,
        offsets,
        taken,
        list.nulls().cloned(),
    )?))
}

fn sort_array(arr: &ArrayRef, asc: bool) -> Result<ArrayRef> {
    let list = list_parts(arr)?;
    let options = arrow_schema::SortOptions {
        descending: !asc,
        nulls_first: asc,
    };
    let offsets = list.offsets();
    let mut rows = Vec::with_capacity(list.len());
    for r in 0..list.len() {
        let (start, end) = (offsets[r] as usize, offsets[r + 1] as usize);
        if list.is_null(r) || start == end {
            rows.push(Vec::new());
            continue;
        }
        let slice = list.values().slice(start, end - start);
        let order = arrow_ord::sort::sort_to_indices(slice.as_ref(), Some(options), None)?;
        rows.push(
            order
                .values()
                .iter()
                .map(|&i| Some(start as u32 + i))
                .collect(),
        );
    }
    rebuild(list, list.values(), rows)
}

fn compact(arr: &ArrayRef) -> Result<ArrayRef> {
    let list = list_parts(arr)?;
    let offsets = list.offsets();
    let values = list.values();
    let nulls = values.logical_nulls();
    let valid = |i: usize| nulls.as_ref().is_none_or(|n| n.is_valid(i));
    let rows = (0..list.len())
        .map(|r| {
            (offsets[r] as u32..offsets[r + 1] as u32)
                .filter(|&i| valid(i as usize))
                .map(Some)
                .collect()
        })
        .collect();
    rebuild(list, values, rows)
}

fn append(arr: &ArrayRef, value: &ArrayRef, prepend: bool) -> Result<ArrayRef> {
    let list = list_parts(arr)?;
    let offsets = list.offsets();
    // The new values go after the old ones in one array to take from.
    let base = list.values().len() as u32;
    let both = arrow_select::concat::concat(&[list.values().as_ref(), value.as_ref()])?;
    let rows = (0..list.len())
        .map(|r| {
            let old = (offsets[r] as u32..offsets[r + 1] as u32).map(Some);
            let new = std::iter::once(Some(base + r as u32));
            if prepend {
                new.chain(old).collect()
            } else {
                old.chain(new).collect()
            }
        })
        .collect();
    rebuild(list, &both, rows)
}
