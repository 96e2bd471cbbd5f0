//! Several keys, each interned on its own (ids per column), then the tuple of ids interned
//! as one integer. For the usual GROUP BY of a few flat columns this hashes short values
//! instead of encoding whole rows, and low-cardinality columns (flags, statuses) cost one
//! small-table probe each.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Decimal128Type, UInt64Type};
use arrow_array::{Array, ArrayRef, UInt32Array};
use arrow_schema::DataType;
use ferrospark_common::Result;

use super::{new_group_values, GroupValues, PrimitiveGroupValues};

/// Groups of 2 to 4 flat keys.
pub struct ComposedGroupValues {
    columns: Vec<Box<dyn GroupValues>>,
    /// Ids of every column packed into 32-bit lanes: u64 for two keys, i128 for up to four.
    tuples: Box<dyn GroupValues>,
    wide: bool,
    ids: Vec<Vec<u32>>,
    /// While every column has few distinct values (flags, statuses), the group of each tuple
    /// by direct index: the ids laid side by side in `DENSE_BITS` bits. Empty once a column
    /// outgrows its share of the bits; the hash table alone serves from then on.
    dense: Vec<u32>,
    /// Rows the dense table missed in the current batch.
    misses: Vec<u32>,
}

/// Index bits of the dense tuple table (4096 slots, 16 KiB: stays in the L1 cache).
const DENSE_BITS: u32 = 12;

impl ComposedGroupValues {
    /// Whether keys of `types` can be composed (2 to 4 flat columns).
    pub fn supports(types: &[DataType]) -> bool {
        (2..=4).contains(&types.len())
            && types.iter().all(|t| {
                t.is_primitive()
                    || matches!(
                        t,
                        DataType::Utf8
                            | DataType::LargeUtf8
                            | DataType::Binary
                            | DataType::LargeBinary
                    )
            })
    }

    /// An empty table for keys of `types` (see [`Self::supports`]).
    pub fn new(types: &[DataType]) -> Result<Self> {
        let columns = types
            .iter()
            .map(|t| new_group_values(std::slice::from_ref(t)))
            .collect::<Result<Vec<_>>>()?;
        let wide = types.len() > 2;
        let tuples: Box<dyn GroupValues> = if wide {
            Box::new(PrimitiveGroupValues::<Decimal128Type>::new(
                DataType::Decimal128(38, 0),
            ))
        } else {
            Box::new(PrimitiveGroupValues::<UInt64Type>::new(DataType::UInt64))
        };
        Ok(Self {
            ids: vec![Vec::new(); types.len()],
            columns,
            tuples,
            wide,
            dense: vec![u32::MAX; 1 << DENSE_BITS],
            misses: Vec::new(),
        })
    }
}

/// Row `r`'s slot in the dense table: each column's id in its `bits`-wide lane.
#[inline]
fn dense_slot(ids: &[Vec<u32>], r: usize, bits: u32) -> usize {
    ids.iter().enumerate().fold(0usize, |acc, (c, ids)| {
        acc | (ids[r] as usize) << (bits as usize * c)
    })
}

impl ComposedGroupValues {
    /// The id tuples of `rows`, packed into one integer each (the hash table's key).
    fn pack(&self, rows: impl Iterator<Item = usize>) -> ArrayRef {
        if self.wide {
            let v: Vec<i128> = rows
                .map(|r| {
                    self.ids
                        .iter()
                        .enumerate()
                        .fold(0i128, |acc, (c, ids)| acc | ((ids[r] as i128) << (32 * c)))
                })
                .collect();
            Arc::new(arrow_array::Decimal128Array::from(v))
        } else {
            let (a, b) = (&self.ids[0], &self.ids[1]);
            let v: Vec<u64> = rows.map(|r| ((a[r] as u64) << 32) | b[r] as u64).collect();
            Arc::new(arrow_array::UInt64Array::from(v))
        }
    }
}

impl GroupValues for ComposedGroupValues {
    fn intern(&mut self, keys: &[ArrayRef], num_rows: usize, groups: &mut Vec<u32>) -> Result<()> {
        for ((table, key), ids) in self.columns.iter_mut().zip(keys).zip(&mut self.ids) {
            table.intern(std::slice::from_ref(key), num_rows, ids)?;
        }
        let bits = DENSE_BITS / self.columns.len() as u32;
        if !self.dense.is_empty() && self.columns.iter().any(|c| c.len() > 1 << bits) {
            self.dense = Vec::new();
        }
        if self.dense.is_empty() {
            let packed = self.pack(0..num_rows);
            return self.tuples.intern(&[packed], num_rows, groups);
        }
        // Tuples already seen are one lookup; the rest go through the hash table in row
        // order (so new groups are still numbered as first seen) and are remembered.
        groups.clear();
        self.misses.clear();
        let dense = &self.dense;
        let look = |slot: usize| dense.get(slot).copied().unwrap_or(u32::MAX);
        if let [a, b] = self.ids.as_slice() {
            groups.extend(
                a.iter()
                    .zip(b)
                    .map(|(&x, &y)| look(x as usize | (y as usize) << bits)),
            );
        } else {
            groups.extend((0..num_rows).map(|r| look(dense_slot(&self.ids, r, bits))));
        }
        self.misses.extend(
            groups
                .iter()
                .enumerate()
                .filter(|(_, &g)| g == u32::MAX)
                .map(|(r, _)| r as u32),
        );
        if self.misses.is_empty() {
            return Ok(());
        }
        let misses = std::mem::take(&mut self.misses);
        let packed = self.pack(misses.iter().map(|&r| r as usize));
        let mut found = Vec::with_capacity(misses.len());
        self.tuples.intern(&[packed], misses.len(), &mut found)?;
        for (&r, &g) in misses.iter().zip(&found) {
            let r = r as usize;
            let slot = dense_slot(&self.ids, r, bits);
            self.dense[slot] = g;
            groups[r] = g;
        }
        self.misses = misses;
        Ok(())
    }

    fn len(&self) -> usize {
        self.tuples.len()
    }

    fn size(&self) -> usize {
        self.tuples.size()
            + self.columns.iter().map(|c| c.size()).sum::<usize>()
            + self.dense.capacity() * 4
    }

    fn reserve(&mut self, groups: usize) {
        self.tuples.reserve(groups);
    }

    fn emit(&mut self) -> Result<Vec<ArrayRef>> {
        let packed = self.tuples.emit()?.remove(0);
        // Group numbers start again from zero, and so may the dense table.
        self.dense = vec![u32::MAX; 1 << DENSE_BITS];
        let n = self.columns.len();
        let lane = |c: usize| -> UInt32Array {
            if self.wide {
                let p = packed.as_primitive::<Decimal128Type>();
                p.values()
                    .iter()
                    .map(|&v| Some((v >> (32 * c)) as u32))
                    .collect()
            } else {
                let p = packed.as_primitive::<UInt64Type>();
                let shift = if c == 0 { 32 } else { 0 };
                p.values()
                    .iter()
                    .map(|&v| Some((v >> shift) as u32))
                    .collect()
            }
        };
        let lanes: Vec<UInt32Array> = (0..n).map(lane).collect();
        let mut out = Vec::with_capacity(n);
        for (table, ids) in self.columns.iter_mut().zip(&lanes) {
            let values = table.emit()?.remove(0);
            out.push(arrow_select::take::take(values.as_ref(), ids, None)?);
        }
        debug_assert!(out.iter().all(|c| c.len() == packed.len()));
        Ok(out)
    }
}
