//! Spark's `NormalizeFloatingNumbers` for grouping and join keys: one NaN, and -0.0 equal to
//! 0.0, also inside structs and lists, so equal keys have equal bytes; and Spark 4's map
//! sorting of keys (`InsertMapSortInGroupingExpressions`): a map's entries in key order, so
//! `map(1, 2, 2, 3)` and `map(2, 3, 1, 2)` are one key.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type};
use arrow_array::{Array, ArrayRef, ListArray, MapArray, PrimitiveArray, StructArray};
use arrow_buffer::OffsetBuffer;
use arrow_schema::DataType;

/// Spark's NormalizeFloatingNumbers for a key column: every NaN becomes one NaN, -0.0 becomes
/// 0.0. Other columns pass through.
pub fn normalize_key(a: &ArrayRef) -> ArrayRef {
    fn norm64(v: f64) -> f64 {
        if v.is_nan() {
            f64::NAN
        } else {
            v + 0.0
        }
    }
    fn norm32(v: f32) -> f32 {
        if v.is_nan() {
            f32::NAN
        } else {
            v + 0.0
        }
    }
    match a.data_type() {
        DataType::Float64 => {
            let p: PrimitiveArray<Float64Type> = a.as_primitive::<Float64Type>().unary(norm64);
            Arc::new(p)
        }
        DataType::Float32 => {
            let p: PrimitiveArray<Float32Type> = a.as_primitive::<Float32Type>().unary(norm32);
            Arc::new(p)
        }
        // Inside structs and lists too, as Spark's NormalizeFloatingNumbers does.
        DataType::Struct(fields) if needs_normalizing(a.data_type()) => {
            let s = a.as_struct();
            let columns = s.columns().iter().map(normalize_key).collect();
            StructArray::try_new(fields.clone(), columns, s.nulls().cloned())
                .map(|n| Arc::new(n) as ArrayRef)
                .unwrap_or_else(|_| a.clone())
        }
        DataType::Map(field, sorted) => sorted_map(a, field, *sorted).unwrap_or_else(|| a.clone()),
        DataType::List(field) if needs_normalizing(a.data_type()) => {
            let l = a.as_list::<i32>();
            ListArray::try_new(
                field.clone(),
                l.offsets().clone(),
                normalize_key(l.values()),
                l.nulls().cloned(),
            )
            .map(|n| Arc::new(n) as ArrayRef)
            .unwrap_or_else(|_| a.clone())
        }
        _ => a.clone(),
    }
}

/// A map column with each map's entries in key order (keys and values normalized too).
fn sorted_map(a: &ArrayRef, field: &arrow_schema::FieldRef, sorted: bool) -> Option<ArrayRef> {
    let m = a.as_map();
    let keys = normalize_key(m.keys());
    let values = normalize_key(m.values());
    let rows =
        arrow_row::RowConverter::new(vec![arrow_row::SortField::new(keys.data_type().clone())])
            .ok()?
            .convert_columns(std::slice::from_ref(&keys))
            .ok()?;
    let offsets = m.value_offsets();
    let base = offsets[0];
    let mut order: Vec<u32> = Vec::with_capacity(keys.len());
    for r in 0..m.len() {
        let (start, end) = (offsets[r] as u32, offsets[r + 1] as u32);
        let at = order.len();
        order.extend(start..end);
        order[at..].sort_by(|&x, &y| rows.row(x as usize).cmp(&rows.row(y as usize)));
    }
    let order = arrow_array::UInt32Array::from(order);
    let keys = arrow_select::take::take(keys.as_ref(), &order, None).ok()?;
    let values = arrow_select::take::take(values.as_ref(), &order, None).ok()?;
    let DataType::Struct(entry_fields) = field.data_type() else {
        return None;
    };
    let entries = StructArray::try_new(entry_fields.clone(), vec![keys, values], None).ok()?;
    let shifted: Vec<i32> = offsets.iter().map(|o| o - base).collect();
    MapArray::try_new(
        field.clone(),
        OffsetBuffer::new(shifted.into()),
        entries,
        m.nulls().cloned(),
        sorted,
    )
    .ok()
    .map(|n| Arc::new(n) as ArrayRef)
}

fn needs_normalizing(dt: &DataType) -> bool {
    match dt {
        DataType::Float32 | DataType::Float64 | DataType::Map(..) => true,
        DataType::Struct(fields) => fields.iter().any(|f| needs_normalizing(f.data_type())),
        DataType::List(f) => needs_normalizing(f.data_type()),
        _ => false,
    }
}
