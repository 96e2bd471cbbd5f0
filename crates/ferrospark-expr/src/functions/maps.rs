//! Maps built from other values: `map_from_arrays`, `map_from_entries`, `map_entries`,
//! `map_concat` and `str_to_map`, as Spark's `collectionOperations.scala` and
//! `complexTypeCreator.scala` define them.
//!
//! Every map built here goes through [`map_of`], which holds Spark's two rules for keys: a
//! NULL key fails (`NULL_MAP_KEY`), and a key twice in one map fails under Spark's default
//! `spark.sql.mapKeyDedupPolicy=EXCEPTION` (`DUPLICATED_MAP_KEY`).

use std::sync::Arc;

use arrow_array::builder::StringBuilder;
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, ListArray, MapArray, StructArray};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, Fields};
use ferrospark_common::{FerroError, Result};

use super::collections::{element_type, list_of, map_type, map_types};
use super::{Args, Bound, Call, ScalarFunction};
use crate::bind::cast_to;
use crate::expr::Literal;
use crate::physical::PhysicalExpr;
use crate::types::spark_equivalent;

/// The functions of this family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapsFn {
    /// `map_from_arrays(keys, values)`: arrays of one length.
    FromArrays,
    /// `map_from_entries(array<struct<k, v>>)`: NULL when an entry is.
    FromEntries,
    /// `map_entries(m)`: the entries as an array of `struct<key, value>`.
    Entries,
    /// `map_concat(m1, m2, ...)`: NULL when a map is; a key in two maps fails.
    Concat,
    /// `str_to_map(text, pairDelim, keyValueDelim)`: both delimiters regular expressions.
    StrToMap,
}

impl MapsFn {
    /// Spark's name.
    pub fn name(self) -> &'static str {
        match self {
            MapsFn::FromArrays => "map_from_arrays",
            MapsFn::FromEntries => "map_from_entries",
            MapsFn::Entries => "map_entries",
            MapsFn::Concat => "map_concat",
            MapsFn::StrToMap => "str_to_map",
        }
    }

    /// Evaluates over `args` into a result of type `out`.
    pub(crate) fn evaluate(self, args: &Args, out: &DataType) -> Result<ArrayRef> {
        match self {
            MapsFn::FromArrays => from_arrays(&args.full(0)?, &args.full(1)?, out),
            MapsFn::FromEntries => from_entries(&args.full(0)?, out),
            MapsFn::Entries => entries(&args.full(0)?, out),
            MapsFn::Concat => {
                let maps = (0..args.len())
                    .map(|i| args.full(i))
                    .collect::<Result<Vec<_>>>()?;
                concat(&maps, args.rows(), out)
            }
            MapsFn::StrToMap => str_to_map(args, out),
        }
    }
}

/// A map of type `out` whose row `r` holds `keys` / `values` from `offsets[r]` to
/// `offsets[r + 1]` (`nulls`: the NULL rows, whose ranges are empty), after Spark's checks of
/// its keys.
pub(crate) fn map_of(
    keys: ArrayRef,
    values: ArrayRef,
    offsets: Vec<i32>,
    nulls: Option<NullBuffer>,
    out: &DataType,
) -> Result<ArrayRef> {
    let DataType::Map(entries, sorted) = out else {
        return Err(FerroError::Internal(format!("a map built as {out}")));
    };
    let DataType::Struct(kv) = entries.data_type() else {
        return Err(FerroError::Internal("a map without entries".into()));
    };
    if keys.logical_null_count() > 0 {
        return Err(FerroError::Arithmetic(
            "[NULL_MAP_KEY] Cannot use null as map key. SQLSTATE: 2200E".into(),
        ));
    }
    check_unique_keys(&keys, &offsets)?;
    let keys = cast_to_type(keys, kv[0].data_type())?;
    let values = cast_to_type(values, kv[1].data_type())?;
    let entries_array = StructArray::try_new(kv.clone(), vec![keys, values], None)?;
    Ok(Arc::new(MapArray::try_new(
        entries.clone(),
        OffsetBuffer::new(offsets.into()),
        entries_array,
        nulls,
        *sorted,
    )?))
}

fn cast_to_type(a: ArrayRef, to: &DataType) -> Result<ArrayRef> {
    if a.data_type() == to {
        Ok(a)
    } else {
        Ok(arrow_cast::cast(&a, to)?)
    }
}

/// Spark's default `spark.sql.mapKeyDedupPolicy=EXCEPTION`: a key twice in one map fails.
pub(crate) fn check_unique_keys(keys: &ArrayRef, offsets: &[i32]) -> Result<()> {
    let converter =
        arrow_row::RowConverter::new(vec![arrow_row::SortField::new(keys.data_type().clone())])?;
    let rows = converter.convert_columns(std::slice::from_ref(keys))?;
    let mut seen = std::collections::HashSet::new();
    for w in offsets.windows(2) {
        seen.clear();
        for i in w[0] as usize..w[1] as usize {
            if !seen.insert(rows.row(i)) {
                let text = arrow_cast::display::ArrayFormatter::try_new(
                    keys.as_ref(),
                    &Default::default(),
                )
                .map(|f| f.value(i).to_string())
                .unwrap_or_default();
                return Err(FerroError::Arithmetic(format!(
                    "[DUPLICATED_MAP_KEY] Duplicate map key {text} was found, please check the input data. If you want to remove the duplicated keys, you can set \"spark.sql.mapKeyDedupPolicy\" to \"LAST_WIN\" so that the key inserted at last takes precedence. SQLSTATE: 23505"
                )));
            }
        }
    }
    Ok(())
}

/// The rows of `lists` taken whole: `(values taken, offsets, row nulls)`, a row NULL where
/// `null_row` says so (its elements then left out).
fn take_rows(
    lists: &ListArray,
    null_row: impl Fn(usize) -> bool,
) -> Result<(ArrayRef, Vec<i32>, Option<NullBuffer>)> {
    let mut take: Vec<u32> = Vec::new();
    let mut offsets = vec![0i32];
    let mut valid = Vec::with_capacity(lists.len());
    let o = lists.value_offsets();
    for r in 0..lists.len() {
        let ok = lists.is_valid(r) && !null_row(r);
        if ok {
            take.extend(o[r] as u32..o[r + 1] as u32);
        }
        valid.push(ok);
        offsets.push(take.len() as i32);
    }
    let values = arrow_select::take::take(
        lists.values().as_ref(),
        &arrow_array::UInt32Array::from(take),
        None,
    )?;
    Ok((values, offsets, Some(NullBuffer::from(valid))))
}

fn from_arrays(keys: &ArrayRef, values: &ArrayRef, out: &DataType) -> Result<ArrayRef> {
    let (k, v) = (keys.as_list::<i32>(), values.as_list::<i32>());
    for r in 0..k.len() {
        if k.is_valid(r) && v.is_valid(r) && k.value_length(r) != v.value_length(r) {
            return Err(FerroError::Arithmetic(
                "The key array and value array of MapData must have the same length.".into(),
            ));
        }
    }
    let (kv, offsets, nulls) = take_rows(k, |r| v.is_null(r))?;
    let (vv, _, _) = take_rows(v, |r| k.is_null(r))?;
    map_of(kv, vv, offsets, nulls, out)
}

fn from_entries(arr: &ArrayRef, out: &DataType) -> Result<ArrayRef> {
    let list = arr.as_list::<i32>();
    let structs = list.values().as_struct();
    let o = list.value_offsets();
    let (entries, offsets, nulls) = take_rows(list, |r| {
        (o[r] as usize..o[r + 1] as usize).any(|i| structs.is_null(i))
    })?;
    let entries = entries.as_struct();
    map_of(
        entries.column(0).clone(),
        entries.column(1).clone(),
        offsets,
        nulls,
        out,
    )
}

fn entries(m: &ArrayRef, out: &DataType) -> Result<ArrayRef> {
    let m = m.as_map();
    let Some(DataType::Struct(fields)) = element_type(out) else {
        return Err(FerroError::Internal(
            "map_entries bound to a non-array".into(),
        ));
    };
    let e = m.entries();
    let columns = vec![
        cast_to_type(e.column(0).clone(), fields[0].data_type())?,
        cast_to_type(e.column(1).clone(), fields[1].data_type())?,
    ];
    let structs = StructArray::try_new(fields.clone(), columns, None)?;
    let DataType::List(item) = out else {
        return Err(FerroError::Internal(
            "map_entries bound to a non-array".into(),
        ));
    };
    Ok(Arc::new(ListArray::try_new(
        item.clone(),
        m.offsets().clone(),
        Arc::new(structs),
        m.nulls().cloned(),
    )?))
}

fn concat(maps: &[ArrayRef], rows: usize, out: &DataType) -> Result<ArrayRef> {
    let maps: Vec<&MapArray> = maps.iter().map(|m| m.as_map()).collect();
    let keys: Vec<ArrayRef> = maps.iter().map(|m| m.keys().clone()).collect();
    let values: Vec<ArrayRef> = maps.iter().map(|m| m.values().clone()).collect();
    let mut take: Vec<(usize, usize)> = Vec::new();
    let mut offsets = vec![0i32];
    let mut valid = Vec::with_capacity(rows);
    for r in 0..rows {
        let ok = maps.iter().all(|m| m.is_valid(r));
        if ok {
            for (j, m) in maps.iter().enumerate() {
                let o = m.value_offsets();
                take.extend((o[r] as usize..o[r + 1] as usize).map(|i| (j, i)));
            }
        }
        valid.push(ok);
        offsets.push(take.len() as i32);
    }
    let (kt, vt) =
        map_types(out).ok_or_else(|| FerroError::Internal("map_concat to a non-map".into()))?;
    let pick = |parts: &[ArrayRef], t: &DataType| -> Result<ArrayRef> {
        if parts.is_empty() {
            return Ok(arrow_array::new_empty_array(t));
        }
        let cast: Vec<ArrayRef> = parts
            .iter()
            .map(|p| cast_to_type(p.clone(), t))
            .collect::<Result<_>>()?;
        let refs: Vec<&dyn Array> = cast.iter().map(|a| a.as_ref()).collect();
        Ok(arrow_select::interleave::interleave(&refs, &take)?)
    };
    map_of(
        pick(&keys, &kt)?,
        pick(&values, &vt)?,
        offsets,
        Some(NullBuffer::from(valid)),
        out,
    )
}

fn str_to_map(args: &Args, out: &DataType) -> Result<ArrayRef> {
    let text = args.str(0)?;
    let pair = args.str(1)?;
    let kv = args.str(2)?;
    let mut pair_re = super::LastCompiled::new(compile);
    let mut kv_re = super::LastCompiled::new(compile);
    let mut keys = StringBuilder::new();
    let mut values = StringBuilder::new();
    let mut offsets = vec![0i32];
    let mut valid = Vec::with_capacity(args.rows());
    let mut n = 0i32;
    for r in 0..args.rows() {
        let (Some(t), Some(p), Some(k)) = (text.get(r), pair.get(r), kv.get(r)) else {
            valid.push(false);
            offsets.push(n);
            continue;
        };
        let pieces: Vec<&str> = pair_re.get(p)?.split(t).collect();
        let kv_re = kv_re.get(k)?;
        for piece in pieces {
            let mut parts = kv_re.splitn(piece, 2);
            keys.append_value(parts.next().unwrap_or(""));
            values.append_option(parts.next());
            n += 1;
        }
        valid.push(true);
        offsets.push(n);
    }
    map_of(
        Arc::new(keys.finish()),
        Arc::new(values.finish()),
        offsets,
        Some(NullBuffer::from(valid)),
        out,
    )
}

fn compile(pattern: &str) -> Result<regex::Regex> {
    regex::Regex::new(pattern).map_err(|e| {
        FerroError::Arithmetic(format!(
            "[INVALID_PARAMETER_VALUE.PATTERN] The value of parameter(s) `regexp` in `str_to_map` is invalid: '{pattern}': {e}"
        ))
    })
}

/// The key and value types of argument `i`, a map.
fn map_arg(call: &Call<'_, '_>, i: usize, a: &PhysicalExpr) -> Result<(DataType, DataType)> {
    map_types(&a.data_type()).ok_or_else(|| call.wrong_type(i, a, "the \"MAP\" type"))
}

/// Binds this family's functions; other names are returned.
pub(crate) fn bind(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    let func = |f: MapsFn, out: &DataType| ScalarFunction::Maps(f, out.clone());
    let array_arg = |i: usize, a: &PhysicalExpr| -> Result<DataType> {
        element_type(&spark_equivalent(&a.data_type()))
            .cloned()
            .ok_or_else(|| call.wrong_type(i, a, "the \"ARRAY\" type"))
    };
    let e = match call.name {
        "map_from_arrays" => {
            call.arity(&args, 2, 2)?;
            let kt = array_arg(0, &args[0])?;
            let vt = array_arg(1, &args[1])?;
            let out = map_type(&kt, &vt);
            call.function(func(MapsFn::FromArrays, &out), args, out)
        }
        "map_from_entries" => {
            call.arity(&args, 1, 1)?;
            let et = array_arg(0, &args[0])?;
            let DataType::Struct(kv) = &et else {
                return Err(call.wrong_type(0, &args[0], "the \"ARRAY\" of pair \"STRUCT\" type"));
            };
            if kv.len() != 2 {
                return Err(call.wrong_type(0, &args[0], "the \"ARRAY\" of pair \"STRUCT\" type"));
            }
            let out = map_type(kv[0].data_type(), kv[1].data_type());
            call.function(func(MapsFn::FromEntries, &out), args, out)
        }
        "map_entries" => {
            call.arity(&args, 1, 1)?;
            let (kt, vt) = map_arg(call, 0, &args[0])?;
            let out = list_of(&DataType::Struct(Fields::from(vec![
                Field::new("key", kt, false),
                Field::new("value", vt, true),
            ])));
            call.function(func(MapsFn::Entries, &out), args, out)
        }
        "map_concat" => {
            if args.is_empty() {
                let out = map_type(&DataType::Utf8, &DataType::Utf8);
                return Ok(Bound::Done(PhysicalExpr::Literal(empty_map(&out)?)));
            }
            let mut kinds = Vec::with_capacity(args.len());
            for a in &args {
                match map_types(&a.data_type()) {
                    Some(kv) => kinds.push(kv),
                    None => {
                        let types: Vec<String> = args
                            .iter()
                            .map(|a| {
                                format!(
                                    "\"{}\"",
                                    crate::types::spark_type_name(&a.data_type()).to_uppercase()
                                )
                            })
                            .collect();
                        return Err(FerroError::Analysis(format!(
                            "[DATATYPE_MISMATCH.MAP_CONCAT_DIFF_TYPES] Cannot resolve \"{}\" due to data type mismatch: The `map_concat` should all be of type map, but it's [{}]. SQLSTATE: 42K09",
                            call.expr,
                            types.join(", ")
                        )));
                    }
                }
            }
            let nulls = |pick: fn(&(DataType, DataType)) -> &DataType| -> Vec<PhysicalExpr> {
                kinds
                    .iter()
                    .map(|kv| PhysicalExpr::Literal(Literal::null(pick(kv))))
                    .collect()
            };
            let ks = nulls(|kv| &kv.0);
            let vs = nulls(|kv| &kv.1);
            let kt = call.common_type(&ks.iter().collect::<Vec<_>>())?;
            let vt = call.common_type(&vs.iter().collect::<Vec<_>>())?;
            let out = map_type(&kt, &vt);
            let args = args.into_iter().map(|a| cast_to(a, &out)).collect();
            call.function(func(MapsFn::Concat, &out), args, out)
        }
        "str_to_map" => {
            call.arity(&args, 1, 3)?;
            let mut args = call.string_args(args)?;
            if args.len() < 2 {
                args.push(PhysicalExpr::Literal(Literal::string(",")));
            }
            if args.len() < 3 {
                args.push(PhysicalExpr::Literal(Literal::string(":")));
            }
            let out = map_type(&DataType::Utf8, &DataType::Utf8);
            call.function(func(MapsFn::StrToMap, &out), args, out)
        }
        _ => return Ok(Bound::NotMine(args)),
    };
    Ok(Bound::Done(e))
}

/// An empty map of type `out`, one row.
fn empty_map(out: &DataType) -> Result<Literal> {
    let (kt, vt) =
        map_types(out).ok_or_else(|| FerroError::Internal("an empty map of a non-map".into()))?;
    let a = map_of(
        arrow_array::new_empty_array(&kt),
        arrow_array::new_empty_array(&vt),
        vec![0, 0],
        None,
        out,
    )?;
    Ok(Literal::new(a))
}
