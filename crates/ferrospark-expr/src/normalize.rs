//! Spark's `NormalizeFloatingNumbers` for grouping and join keys: one NaN, and -0.0 equal to
//! 0.0, also inside structs and lists, so equal keys have equal bytes.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float32Type, Float64Type};
use arrow_array::{Array, ArrayRef, ListArray, PrimitiveArray, StructArray};
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
        DataType::Struct(fields) if has_floats(a.data_type()) => {
            let s = a.as_struct();
            let columns = s.columns().iter().map(normalize_key).collect();
            StructArray::try_new(fields.clone(), columns, s.nulls().cloned())
                .map(|n| Arc::new(n) as ArrayRef)
                .unwrap_or_else(|_| a.clone())
        }
        DataType::List(field) if has_floats(a.data_type()) => {
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

fn has_floats(dt: &DataType) -> bool {
    match dt {
        DataType::Float32 | DataType::Float64 => true,
        DataType::Struct(fields) => fields.iter().any(|f| has_floats(f.data_type())),
        DataType::List(f) => has_floats(f.data_type()),
        _ => false,
    }
}
