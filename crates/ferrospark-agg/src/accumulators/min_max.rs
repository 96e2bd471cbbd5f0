//! `min` / `max` in Spark's ordering (NaN above every number, -0.0 equal to 0.0, strings as
//! unsigned bytes), plus [`RowValues`], one value of any type per group kept in Arrow's row
//! format (used by min/max of other types and by first/last).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{
    new_null_array, Array, ArrayRef, ArrowPrimitiveType, GenericByteArray, PrimitiveArray,
};
use arrow_row::{RowConverter, SortField};
use arrow_schema::DataType;
use ferrospark_common::{FerroError, Result};

use super::{for_each_valid, nulls_from, EmitTo, GroupsAccumulator};

pub(crate) use ferrospark_common::order::f64_order_key;

/// min/max over a primitive type, compared by `key`.
pub struct PrimitiveMinMax<T: ArrowPrimitiveType, K: Ord> {
    values: Vec<T::Native>,
    seen: Vec<bool>,
    is_max: bool,
    key: fn(T::Native) -> K,
    data_type: DataType,
}

impl<T: ArrowPrimitiveType, K: Ord> PrimitiveMinMax<T, K> {
    fn new(is_max: bool, key: fn(T::Native) -> K, data_type: DataType) -> Self {
        Self {
            values: Vec::new(),
            seen: Vec::new(),
            is_max,
            key,
            data_type,
        }
    }

    fn add(&mut self, array: &ArrayRef, groups: &[u32], total: usize) {
        self.values.resize(total, T::Native::default());
        self.seen.resize(total, false);
        let a = array.as_primitive::<T>();
        let (vals, seen, src) = (&mut self.values, &mut self.seen, a.values());
        let (key, is_max) = (self.key, self.is_max);
        for_each_valid(a.nulls(), groups, |r, g| {
            let v = src[r];
            let better = !seen[g] || {
                let (n, c) = (key(v), key(vals[g]));
                if is_max {
                    n > c
                } else {
                    n < c
                }
            };
            if better {
                vals[g] = v;
                seen[g] = true;
            }
        });
    }
}

impl<T: ArrowPrimitiveType, K: Ord + Send> GroupsAccumulator for PrimitiveMinMax<T, K> {
    fn update_batch(&mut self, values: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.add(&values[0], groups, total);
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.add(&states[0], groups, total);
        Ok(())
    }

    fn evaluate(&mut self, emit: EmitTo) -> Result<ArrayRef> {
        let values = emit.take(&mut self.values);
        let seen = emit.take(&mut self.seen);
        let a = PrimitiveArray::<T>::new(values.into(), nulls_from(&seen))
            .with_data_type(self.data_type.clone());
        Ok(Arc::new(a))
    }

    fn state(&mut self, emit: EmitTo) -> Result<Vec<ArrayRef>> {
        Ok(vec![self.evaluate(emit)?])
    }

    fn size(&self) -> usize {
        self.values.capacity() * (std::mem::size_of::<T::Native>() + 1)
    }
}

/// min/max of strings or binary, compared as unsigned bytes.
pub struct BytesMinMax {
    values: Vec<Option<Vec<u8>>>,
    bytes: usize,
    is_max: bool,
    data_type: DataType,
}

impl BytesMinMax {
    fn add_typed<B: arrow_array::types::ByteArrayType>(
        &mut self,
        a: &GenericByteArray<B>,
        groups: &[u32],
    ) where
        B::Native: AsRef<[u8]>,
    {
        let (vals, is_max, bytes) = (&mut self.values, self.is_max, &mut self.bytes);
        for_each_valid(a.nulls(), groups, |r, g| {
            let v: &[u8] = a.value(r).as_ref();
            let better = match &vals[g] {
                None => true,
                Some(c) => {
                    if is_max {
                        v > c.as_slice()
                    } else {
                        v < c.as_slice()
                    }
                }
            };
            if better {
                *bytes += v.len();
                if let Some(old) = &mut vals[g] {
                    *bytes -= old.len();
                    old.clear();
                    old.extend_from_slice(v);
                } else {
                    vals[g] = Some(v.to_vec());
                }
            }
        });
    }

    fn add(&mut self, array: &ArrayRef, groups: &[u32], total: usize) -> Result<()> {
        self.values.resize(total, None);
        match array.data_type() {
            DataType::Utf8 => self.add_typed(array.as_string::<i32>(), groups),
            DataType::LargeUtf8 => self.add_typed(array.as_string::<i64>(), groups),
            DataType::Binary => self.add_typed(array.as_binary::<i32>(), groups),
            DataType::LargeBinary => self.add_typed(array.as_binary::<i64>(), groups),
            other => return Err(FerroError::Internal(format!("byte min/max given {other}"))),
        }
        Ok(())
    }
}

impl GroupsAccumulator for BytesMinMax {
    fn update_batch(&mut self, values: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.add(&values[0], groups, total)
    }

    fn merge_batch(&mut self, states: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.add(&states[0], groups, total)
    }

    fn evaluate(&mut self, emit: EmitTo) -> Result<ArrayRef> {
        let values = emit.take(&mut self.values);
        self.bytes = self.values.iter().flatten().map(Vec::len).sum();
        Ok(match self.data_type {
            DataType::Utf8 | DataType::LargeUtf8 => {
                let strs = values.iter().map(|v| {
                    v.as_deref()
                        .map(|b| String::from_utf8_lossy(b).into_owned())
                });
                if self.data_type == DataType::Utf8 {
                    Arc::new(arrow_array::StringArray::from_iter(strs))
                } else {
                    Arc::new(arrow_array::LargeStringArray::from_iter(strs))
                }
            }
            DataType::LargeBinary => Arc::new(arrow_array::LargeBinaryArray::from_iter(
                values.iter().map(|v| v.as_deref()),
            )),
            _ => Arc::new(arrow_array::BinaryArray::from_iter(
                values.iter().map(|v| v.as_deref()),
            )),
        })
    }

    fn state(&mut self, emit: EmitTo) -> Result<Vec<ArrayRef>> {
        Ok(vec![self.evaluate(emit)?])
    }

    fn size(&self) -> usize {
        self.values.capacity() * 24 + self.bytes
    }
}

/// One value of any type per group, held in Arrow's row format (its bytes sort like the
/// values, NULLs first).
pub struct RowValues {
    converter: RowConverter,
    pub(crate) values: Vec<Option<Vec<u8>>>,
    bytes: usize,
    data_type: DataType,
}

impl RowValues {
    /// Values of `data_type`.
    pub fn new(data_type: &DataType) -> Result<Self> {
        let converter = RowConverter::new(vec![SortField::new(data_type.clone())])?;
        Ok(Self {
            converter,
            values: Vec::new(),
            bytes: 0,
            data_type: data_type.clone(),
        })
    }

    /// Row-format bytes of every row of `array`.
    pub fn rows(&self, array: &ArrayRef) -> Result<arrow_row::Rows> {
        Ok(self
            .converter
            .convert_columns(std::slice::from_ref(array))?)
    }

    /// Makes room for `total` groups.
    pub fn resize(&mut self, total: usize) {
        self.values.resize(total, None);
    }

    /// Replaces group `g`'s value.
    pub fn set(&mut self, g: usize, row: &[u8]) {
        self.bytes += row.len();
        match &mut self.values[g] {
            Some(old) => {
                self.bytes -= old.len();
                old.clear();
                old.extend_from_slice(row);
            }
            slot => *slot = Some(row.to_vec()),
        }
    }

    /// Hands the values out (groups without a value are NULL).
    pub fn emit(&mut self, emit: EmitTo) -> Result<ArrayRef> {
        let values = emit.take(&mut self.values);
        self.bytes = self.values.iter().flatten().map(Vec::len).sum();
        let null_rows = self.rows(&new_null_array(&self.data_type, 1))?;
        let null_row = null_rows.row(0);
        let parser = self.converter.parser();
        let rows = values.iter().map(|v| match v {
            Some(b) => parser.parse(b),
            None => null_row,
        });
        let mut cols = self.converter.convert_rows(rows)?;
        Ok(cols.remove(0))
    }

    /// Bytes held.
    pub fn size(&self) -> usize {
        self.values.capacity() * 24 + self.bytes
    }
}

/// min/max of any other orderable type (booleans, nested values) on row-format bytes.
pub struct RowMinMax {
    values: RowValues,
    is_max: bool,
}

impl RowMinMax {
    fn add(&mut self, array: &ArrayRef, groups: &[u32], total: usize) -> Result<()> {
        self.values.resize(total);
        let rows = self.values.rows(array)?;
        for_each_valid(array.logical_nulls().as_ref(), groups, |r, g| {
            let row = rows.row(r);
            let better = match &self.values.values[g] {
                None => true,
                Some(c) => {
                    let cur = row.as_ref();
                    if self.is_max {
                        cur > c.as_slice()
                    } else {
                        cur < c.as_slice()
                    }
                }
            };
            if better {
                self.values.set(g, row.as_ref());
            }
        });
        Ok(())
    }
}

impl GroupsAccumulator for RowMinMax {
    fn update_batch(&mut self, values: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.add(&values[0], groups, total)
    }

    fn merge_batch(&mut self, states: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.add(&states[0], groups, total)
    }

    fn evaluate(&mut self, emit: EmitTo) -> Result<ArrayRef> {
        self.values.emit(emit)
    }

    fn state(&mut self, emit: EmitTo) -> Result<Vec<ArrayRef>> {
        Ok(vec![self.values.emit(emit)?])
    }

    fn size(&self) -> usize {
        self.values.size()
    }
}

fn ident<N>(v: N) -> N {
    v
}

/// The min (`is_max = false`) or max accumulator for values of `dt`.
pub fn min_max(dt: &DataType, is_max: bool) -> Result<Box<dyn GroupsAccumulator>> {
    macro_rules! prim {
        ($t:ty) => {
            Box::new(PrimitiveMinMax::<$t, _>::new(is_max, ident, dt.clone()))
        };
    }
    use arrow_schema::TimeUnit;
    Ok(match dt {
        DataType::Int8 => prim!(Int8Type),
        DataType::Int16 => prim!(Int16Type),
        DataType::Int32 => prim!(Int32Type),
        DataType::Int64 => prim!(Int64Type),
        DataType::UInt8 => prim!(UInt8Type),
        DataType::UInt16 => prim!(UInt16Type),
        DataType::UInt32 => prim!(UInt32Type),
        DataType::UInt64 => prim!(UInt64Type),
        DataType::Date32 => prim!(Date32Type),
        DataType::Date64 => prim!(Date64Type),
        DataType::Timestamp(TimeUnit::Second, _) => prim!(TimestampSecondType),
        DataType::Timestamp(TimeUnit::Millisecond, _) => prim!(TimestampMillisecondType),
        DataType::Timestamp(TimeUnit::Microsecond, _) => prim!(TimestampMicrosecondType),
        DataType::Timestamp(TimeUnit::Nanosecond, _) => prim!(TimestampNanosecondType),
        DataType::Decimal128(_, _) => prim!(Decimal128Type),
        DataType::Float64 => Box::new(PrimitiveMinMax::<Float64Type, i64>::new(
            is_max,
            f64_order_key,
            dt.clone(),
        )),
        DataType::Float32 => Box::new(PrimitiveMinMax::<Float32Type, i64>::new(
            is_max,
            |v: f32| f64_order_key(v as f64),
            dt.clone(),
        )),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Binary | DataType::LargeBinary => {
            Box::new(BytesMinMax {
                values: Vec::new(),
                bytes: 0,
                is_max,
                data_type: dt.clone(),
            })
        }
        other => Box::new(RowMinMax {
            values: RowValues::new(other)?,
            is_max,
        }),
    })
}
