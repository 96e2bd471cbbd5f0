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

/// min/max over a primitive type, compared by `key` (a function item or closure, so the
/// comparison inlines into the loop over the rows).
pub struct PrimitiveMinMax<T: ArrowPrimitiveType, K: Ord, F> {
    values: Vec<T::Native>,
    seen: Vec<bool>,
    is_max: bool,
    key: F,
    data_type: DataType,
    _key: std::marker::PhantomData<fn() -> K>,
}

impl<T: ArrowPrimitiveType, K: Ord, F: Fn(T::Native) -> K + Copy> PrimitiveMinMax<T, K, F> {
    fn new(is_max: bool, key: F, data_type: DataType) -> Self {
        Self {
            values: Vec::new(),
            seen: Vec::new(),
            is_max,
            key,
            data_type,
            _key: std::marker::PhantomData,
        }
    }

    fn add(&mut self, array: &ArrayRef, groups: &[u32], total: usize) {
        self.values.resize(total, T::Native::default());
        self.seen.resize(total, false);
        let a = array.as_primitive::<T>();
        let (vals, seen, src) = (&mut self.values, &mut self.seen, a.values());
        let (key, is_max) = (self.key, self.is_max);
        let better = |n: T::Native, c: T::Native| {
            let (n, c) = (key(n), key(c));
            if is_max {
                n > c
            } else {
                n < c
            }
        };
        if total == 1 {
            // One group (a global aggregate): the batch's best value, then one comparison
            // with the group's. Ties keep the first value, as row by row.
            let mut best: Option<T::Native> = None;
            let mut offer = |v: T::Native| match best {
                Some(b) if !better(v, b) => {}
                _ => best = Some(v),
            };
            match a.nulls().filter(|n| n.null_count() > 0) {
                None => src.iter().for_each(|&v| offer(v)),
                Some(n) => n.valid_indices().for_each(|i| offer(src[i])),
            }
            if let Some(b) = best {
                if !seen[0] || better(b, vals[0]) {
                    vals[0] = b;
                    seen[0] = true;
                }
            }
            return;
        }
        for_each_valid(a.nulls(), groups, |r, g| {
            let v = src[r];
            if !seen[g] || better(v, vals[g]) {
                vals[g] = v;
                seen[g] = true;
            }
        });
    }
}

impl<T: ArrowPrimitiveType, K: Ord + Send, F: Fn(T::Native) -> K + Copy + Send> GroupsAccumulator
    for PrimitiveMinMax<T, K, F>
{
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
            Box::new(PrimitiveMinMax::<$t, _, _>::new(is_max, ident, dt.clone()))
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
        DataType::Float64 => Box::new(PrimitiveMinMax::<Float64Type, i64, _>::new(
            is_max,
            f64_order_key,
            dt.clone(),
        )),
        DataType::Float32 => Box::new(PrimitiveMinMax::<Float32Type, i64, _>::new(
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

#[cfg(test)]
mod tests {
    use arrow_array::{Float64Array, Int64Array};
    use rand::{rngs::StdRng, Rng, SeedableRng};

    use super::*;
    use crate::accumulators::count::CountAccumulator;

    /// The result of `acc` over `batches`, every row in group 0 of `total` groups.
    fn one_group(
        mut acc: Box<dyn GroupsAccumulator>,
        batches: &[ArrayRef],
        total: usize,
    ) -> ArrayRef {
        for b in batches {
            let groups = vec![0u32; b.len()];
            acc.update_batch(std::slice::from_ref(b), &groups, total)
                .expect("updates");
        }
        acc.evaluate(EmitTo::All).expect("evaluates").slice(0, 1)
    }

    /// A global min / max / count (one group, its own loop) equals the same rows as group 0
    /// of two (the row-by-row loop): NULLs, NaN, -0.0 against 0.0, ties, all-NULL batches.
    #[test]
    fn one_group_equals_row_by_row() {
        let mut rng = StdRng::seed_from_u64(7);
        let specials = [f64::NAN, -0.0, 0.0, f64::INFINITY, f64::NEG_INFINITY, 1.5];
        for round in 0..20 {
            let n = rng.random_range(0..50);
            let floats: Vec<ArrayRef> = (0..3)
                .map(|b| {
                    Arc::new(Float64Array::from_iter((0..n).map(|_| {
                        (b != 1 || round % 3 != 0)
                            .then(|| specials[rng.random_range(0..specials.len())])
                            .filter(|_| rng.random_range(0..5) > 0)
                    }))) as ArrayRef
                })
                .collect();
            let ints: Vec<ArrayRef> = (0..3)
                .map(|_| {
                    Arc::new(Int64Array::from_iter((0..n).map(|_| {
                        (rng.random_range(0..4) > 0).then(|| rng.random_range(-9..9))
                    }))) as ArrayRef
                })
                .collect();
            for (batches, dt) in [(&floats, DataType::Float64), (&ints, DataType::Int64)] {
                for is_max in [false, true] {
                    let a = one_group(min_max(&dt, is_max).expect("acc"), batches, 1);
                    let b = one_group(min_max(&dt, is_max).expect("acc"), batches, 2);
                    assert_eq!(a.is_null(0), b.is_null(0), "{dt} max={is_max}");
                    if dt == DataType::Float64 && a.is_valid(0) {
                        let (x, y) = (
                            a.as_primitive::<Float64Type>(),
                            b.as_primitive::<Float64Type>(),
                        );
                        assert_eq!(
                            x.value(0).to_bits(),
                            y.value(0).to_bits(),
                            "{dt} max={is_max}"
                        );
                    } else {
                        assert_eq!(a.as_ref(), b.as_ref(), "{dt} max={is_max}");
                    }
                }
                let a = one_group(Box::new(CountAccumulator::default()), batches, 1);
                let b = one_group(Box::new(CountAccumulator::default()), batches, 2);
                assert_eq!(a.as_ref(), b.as_ref(), "count of {dt}");
            }
        }
    }
}
