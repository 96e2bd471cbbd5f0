//! The scalar functions that finish the aggregates of [`crate::collected`]: `__mode` (the
//! most frequent value of a group's list) and `__listagg` (a group's values joined).

use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, ListArray, UInt32Array};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{DataType, Field, Fields, SortOptions};
use ferrospark_common::{FerroError, Result};

use super::collections::{element_type, list_of};
use super::{Args, Bound, Call, ScalarFunction};
use crate::bind::cast_to;
use crate::collected::{LISTAGG_BY_KEY, LISTAGG_FN, MODE_FN};
use crate::physical::PhysicalExpr;
use crate::types::spark_equivalent;

/// A finishing function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CollectedFn {
    /// `mode`: the most frequent value; ties go to the smallest (`highest`: the largest).
    Mode {
        /// ties go to the largest value
        highest: bool,
    },
    /// `listagg`: the values joined with the delimiter, in the list's order or sorted.
    ListAgg {
        /// 0: as collected, 2: by the key of `struct<k, v>` elements
        how: i64,
        /// sort descending
        descending: bool,
        /// NULL keys first
        nulls_first: bool,
        /// the values are bytes (else text)
        binary: bool,
    },
}

impl CollectedFn {
    /// The name as plans print it.
    pub fn name(self) -> &'static str {
        match self {
            CollectedFn::Mode { .. } => "mode",
            CollectedFn::ListAgg { .. } => "listagg",
        }
    }

    pub(crate) fn evaluate(self, args: &Args) -> Result<ArrayRef> {
        let list = args.full(0)?;
        let list = list.as_list::<i32>();
        match self {
            CollectedFn::Mode { highest } => mode(list, highest),
            CollectedFn::ListAgg {
                how,
                descending,
                nulls_first,
                binary,
            } => {
                let delimiter = args.full(1)?;
                let delimiter: Vec<u8> = if delimiter.is_null(0) {
                    Vec::new()
                } else if binary {
                    delimiter.as_binary::<i32>().value(0).to_vec()
                } else {
                    delimiter.as_string::<i32>().value(0).as_bytes().to_vec()
                };
                let options = SortOptions {
                    descending,
                    nulls_first,
                };
                listagg(list, &delimiter, how, options, binary)
            }
        }
    }
}

/// Per row, the positions of its elements in `keys` order (stable), or as they are.
pub(crate) fn ordered_positions(
    list: &ListArray,
    keys: Option<(&ArrayRef, SortOptions)>,
) -> Result<Vec<Vec<u32>>> {
    let o = list.value_offsets();
    let rows = match keys {
        Some((k, options)) => Some(
            RowConverter::new(vec![SortField::new_with_options(
                k.data_type().clone(),
                options,
            )])?
            .convert_columns(std::slice::from_ref(k))?,
        ),
        None => None,
    };
    Ok((0..list.len())
        .map(|r| {
            let mut idx: Vec<u32> = (o[r] as u32..o[r + 1] as u32).collect();
            if let Some(rows) = &rows {
                idx.sort_by(|&a, &b| rows.row(a as usize).cmp(&rows.row(b as usize)));
            }
            idx
        })
        .collect())
}

/// Floating values with -0.0 as 0.0 and every NaN as one NaN, as Spark's aggregation
/// buffers hold them; other values as they are.
pub(crate) fn normalized(values: &ArrayRef) -> ArrayRef {
    use arrow_array::types::{Float32Type, Float64Type};
    match values.data_type() {
        DataType::Float64 => Arc::new(
            values
                .as_primitive::<Float64Type>()
                .unary::<_, Float64Type>(|v| if v.is_nan() { f64::NAN } else { v + 0.0 }),
        ),
        DataType::Float32 => Arc::new(
            values
                .as_primitive::<Float32Type>()
                .unary::<_, Float32Type>(|v| if v.is_nan() { f32::NAN } else { v + 0.0 }),
        ),
        _ => values.clone(),
    }
}

fn mode(list: &ListArray, highest: bool) -> Result<ArrayRef> {
    let values = &normalized(list.values());
    let ascending = SortOptions {
        descending: false,
        nulls_first: true,
    };
    let rows = RowConverter::new(vec![SortField::new(values.data_type().clone())])?
        .convert_columns(std::slice::from_ref(values))?;
    let mut pick: Vec<Option<u32>> = Vec::with_capacity(list.len());
    for idx in ordered_positions(list, Some((values, ascending)))? {
        let (mut best, mut best_count) = (None, 0usize);
        let mut i = 0;
        while i < idx.len() {
            let mut j = i + 1;
            while j < idx.len() && rows.row(idx[j] as usize) == rows.row(idx[i] as usize) {
                j += 1;
            }
            let count = j - i;
            if values.is_valid(idx[i] as usize)
                && (count > best_count || (highest && count == best_count))
            {
                best = Some(idx[i]);
                best_count = count;
            }
            i = j;
        }
        pick.push(best);
    }
    Ok(arrow_select::take::take(
        values.as_ref(),
        &UInt32Array::from(pick),
        None,
    )?)
}

fn listagg(
    list: &ListArray,
    delimiter: &[u8],
    how: i64,
    options: SortOptions,
    binary: bool,
) -> Result<ArrayRef> {
    let (values, keys) = if how == LISTAGG_BY_KEY {
        let s = list.values().as_struct();
        (s.column(1).clone(), Some((s.column(0).clone(), options)))
    } else {
        (list.values().clone(), None)
    };
    let order = ordered_positions(list, keys.as_ref().map(|(k, o)| (k, *o)))?;
    let bytes = |i: usize| -> Option<&[u8]> {
        if values.is_null(i) {
            None
        } else if binary {
            Some(values.as_binary::<i32>().value(i))
        } else {
            Some(values.as_string::<i32>().value(i).as_bytes())
        }
    };
    let mut joined: Vec<Option<Vec<u8>>> = Vec::with_capacity(list.len());
    for (r, idx) in order.into_iter().enumerate() {
        let mut out: Option<Vec<u8>> = None;
        if list.is_valid(r) {
            for i in idx {
                if let Some(b) = bytes(i as usize) {
                    match &mut out {
                        None => out = Some(b.to_vec()),
                        Some(o) => {
                            o.extend_from_slice(delimiter);
                            o.extend_from_slice(b);
                        }
                    }
                }
            }
        }
        joined.push(out);
    }
    if binary {
        let mut b = BinaryBuilder::new();
        for v in joined {
            b.append_option(v);
        }
        return Ok(Arc::new(b.finish()));
    }
    let mut b = StringBuilder::new();
    for v in joined {
        match v {
            Some(v) => b.append_value(
                String::from_utf8(v).map_err(|e| FerroError::Internal(e.to_string()))?,
            ),
            None => b.append_null(),
        }
    }
    Ok(Arc::new(b.finish()))
}

fn literal_of<T>(a: &PhysicalExpr, read: impl Fn(&crate::expr::Literal) -> Option<T>) -> Option<T> {
    match a {
        PhysicalExpr::Literal(l) => read(l),
        _ => None,
    }
}

/// Binds `__mode` and `__listagg`; other names are not this family's.
pub(crate) fn bind(call: &Call<'_, '_>, args: Vec<PhysicalExpr>) -> Result<Bound> {
    let bad = || FerroError::Internal(format!("{} bound to other arguments", call.name));
    match call.name {
        MODE_FN => {
            let highest = literal_of(args.get(1).ok_or_else(bad)?, |l| {
                Some(l.to_string() == "true")
            })
            .ok_or_else(bad)?;
            let t = args[0].data_type();
            let out = element_type(&t).cloned().ok_or_else(bad)?;
            Ok(Bound::Done(call.function(
                ScalarFunction::Collected(CollectedFn::Mode { highest }),
                vec![args[0].clone()],
                out,
            )))
        }
        LISTAGG_FN => {
            let [list, delimiter, how, descending, nulls_first] = args.as_slice() else {
                return Err(bad());
            };
            let how = literal_of(how, |l| {
                l.array()
                    .as_primitive_opt::<arrow_array::types::Int64Type>()
                    .filter(|a| a.is_valid(0))
                    .map(|a| a.value(0))
            })
            .ok_or_else(bad)?;
            let flag = |a: &PhysicalExpr| literal_of(a, |l| Some(l.to_string() == "true"));
            let (descending, nulls_first) = (
                flag(descending).ok_or_else(bad)?,
                flag(nulls_first).ok_or_else(bad)?,
            );
            let t = list.data_type();
            let element = element_type(&t).cloned().ok_or_else(bad)?;
            let value_type = match (&element, how == LISTAGG_BY_KEY) {
                (DataType::Struct(f), true) => f[1].data_type().clone(),
                (_, true) => return Err(bad()),
                (other, false) => other.clone(),
            };
            let binary = matches!(spark_equivalent(&value_type), DataType::Binary);
            let text = if binary {
                DataType::Binary
            } else {
                DataType::Utf8
            };
            let list = match &element {
                DataType::Struct(f) if how == LISTAGG_BY_KEY => {
                    let fields = Fields::from(vec![
                        f[0].as_ref().clone(),
                        Field::new("v", text.clone(), true),
                    ]);
                    cast_to(list.clone(), &list_of(&DataType::Struct(fields)))
                }
                _ => cast_to(list.clone(), &list_of(&text)),
            };
            let delimiter = if delimiter.data_type() == DataType::Null {
                PhysicalExpr::Literal(crate::expr::Literal::null(&text))
            } else {
                cast_to(delimiter.clone(), &text)
            };
            Ok(Bound::Done(call.function(
                ScalarFunction::Collected(CollectedFn::ListAgg {
                    how,
                    descending,
                    nulls_first,
                    binary,
                }),
                vec![list, delimiter],
                text,
            )))
        }
        _ => Ok(Bound::NotMine(args)),
    }
}
