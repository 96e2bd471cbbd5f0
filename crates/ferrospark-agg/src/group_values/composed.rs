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
    /// Ids of every column packed into one integer: a `u64` while the ids fit in it (lanes
    /// as wide as each column needs, see [`Lanes`]), an `i128` of 32-bit lanes after.
    tuples: Box<dyn GroupValues>,
    lanes: Lanes,
    /// Groups announced by [`GroupValues::reserve`], for a tuple table built again.
    reserved: usize,
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

/// How the ids of a tuple are packed.
///
/// ```text
/// Narrow(widths) --a column's ids outgrow its lane--> Narrow(wider), while the sum fits 64
///                                                  \-> Wide
/// ```
///
/// A `u64` key halves the hash table of an `i128` one: TPC-H Q16's 1.2 million (brand, type,
/// size, supplier) tuples at SF10 take 36 bits. Re-packing rebuilds the tuple table from its
/// keys in group order, so group numbers do not change.
#[derive(Debug, Clone, PartialEq)]
enum Lanes {
    /// Column `c`'s id in `widths[c]` bits, the first column in the lowest.
    Narrow(Vec<u32>),
    /// Column `c`'s id in bits `32 c .. 32 c + 32` of an `i128`.
    Wide,
}

impl Lanes {
    /// Lanes for columns holding `counts` ids each: room for four times as many, at least
    /// 2^8, or the 32 bits an id can take; `Wide` when they do not fit in 64 bits together.
    fn for_counts(counts: &[usize]) -> Self {
        if counts.len() == 2 {
            return Lanes::Narrow(vec![32, 32]);
        }
        let widths: Vec<u32> = counts
            .iter()
            .map(|&n| (usize::BITS - n.leading_zeros() + 2).clamp(8, 32))
            .collect();
        if widths.iter().sum::<u32>() <= 64 {
            Lanes::Narrow(widths)
        } else {
            Lanes::Wide
        }
    }

    /// Whether columns holding `counts` ids still fit.
    fn holds(&self, counts: impl Iterator<Item = usize>) -> bool {
        match self {
            Lanes::Narrow(widths) => counts
                .zip(widths)
                .all(|(n, &w)| w >= 32 || n <= 1usize << w),
            Lanes::Wide => true,
        }
    }

    fn table(&self) -> Box<dyn GroupValues> {
        match self {
            Lanes::Narrow(_) => Box::new(PrimitiveGroupValues::<UInt64Type>::new(DataType::UInt64)),
            Lanes::Wide => Box::new(PrimitiveGroupValues::<Decimal128Type>::new(
                DataType::Decimal128(38, 0),
            )),
        }
    }

    /// The id tuples (`ids[c][r]`: column `c`'s id at row `r`) of `rows`, packed into one
    /// integer each: the tuple table's key.
    fn pack<I: AsRef<[u32]>>(&self, ids: &[I], rows: impl Iterator<Item = usize>) -> ArrayRef {
        match self {
            Lanes::Wide => {
                let v: Vec<i128> = rows
                    .map(|r| {
                        ids.iter().enumerate().fold(0i128, |acc, (c, ids)| {
                            acc | ((ids.as_ref()[r] as i128) << (32 * c))
                        })
                    })
                    .collect();
                Arc::new(arrow_array::Decimal128Array::from(v))
            }
            Lanes::Narrow(widths) => {
                let v: Vec<u64> = rows
                    .map(|r| {
                        let mut shift = 0;
                        let mut v = 0u64;
                        for (w, ids) in widths.iter().zip(ids) {
                            v |= u64::from(ids.as_ref()[r]) << shift;
                            shift += w;
                        }
                        v
                    })
                    .collect();
                Arc::new(arrow_array::UInt64Array::from(v))
            }
        }
    }

    /// The ids of column `c` in `packed` keys.
    fn lane(&self, packed: &ArrayRef, c: usize) -> UInt32Array {
        match self {
            Lanes::Narrow(widths) => {
                let shift: u32 = widths[..c].iter().sum();
                let mask = if widths[c] >= 32 {
                    u64::from(u32::MAX)
                } else {
                    (1u64 << widths[c]) - 1
                };
                let p = packed.as_primitive::<UInt64Type>();
                UInt32Array::from_iter_values(
                    p.values().iter().map(|&v| ((v >> shift) & mask) as u32),
                )
            }
            Lanes::Wide => {
                let p = packed.as_primitive::<Decimal128Type>();
                UInt32Array::from_iter_values(p.values().iter().map(|&v| (v >> (32 * c)) as u32))
            }
        }
    }
}

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
        let lanes = Lanes::for_counts(&vec![0; types.len()]);
        Ok(Self {
            ids: vec![Vec::new(); types.len()],
            columns,
            tuples: lanes.table(),
            lanes,
            reserved: 0,
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
    /// Packs the tuples again when a column's ids outgrew its lane: the table is built anew
    /// from its keys in group order, so every group keeps its number.
    fn widen_if_needed(&mut self) -> Result<()> {
        if self.lanes.holds(self.columns.iter().map(|c| c.len())) {
            return Ok(());
        }
        let counts: Vec<usize> = self.columns.iter().map(|c| c.len()).collect();
        let lanes = Lanes::for_counts(&counts);
        let old = self.tuples.emit()?.remove(0);
        let n = old.len();
        let old_ids: Vec<UInt32Array> = (0..counts.len())
            .map(|c| self.lanes.lane(&old, c))
            .collect();
        let old_ids: Vec<&[u32]> = old_ids.iter().map(|l| l.values().as_ref()).collect();
        let mut tuples = lanes.table();
        tuples.reserve(self.reserved.max(n));
        let mut groups = Vec::with_capacity(n);
        tuples.intern(&[lanes.pack(&old_ids, 0..n)], n, &mut groups)?;
        if groups.iter().enumerate().any(|(g, &got)| got as usize != g) {
            return Err(ferrospark_common::FerroError::Internal(
                "re-packed group keys changed their groups".into(),
            ));
        }
        self.tuples = tuples;
        self.lanes = lanes;
        Ok(())
    }
}

impl GroupValues for ComposedGroupValues {
    fn intern(&mut self, keys: &[ArrayRef], num_rows: usize, groups: &mut Vec<u32>) -> Result<()> {
        for ((table, key), ids) in self.columns.iter_mut().zip(keys).zip(&mut self.ids) {
            table.intern(std::slice::from_ref(key), num_rows, ids)?;
        }
        self.widen_if_needed()?;
        let bits = DENSE_BITS / self.columns.len() as u32;
        if !self.dense.is_empty() && self.columns.iter().any(|c| c.len() > 1 << bits) {
            self.dense = Vec::new();
        }
        if self.dense.is_empty() {
            let packed = self.lanes.pack(&self.ids, 0..num_rows);
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
        let packed = self
            .lanes
            .pack(&self.ids, misses.iter().map(|&r| r as usize));
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
        self.reserved = groups;
        self.tuples.reserve(groups);
    }

    fn emit(&mut self) -> Result<Vec<ArrayRef>> {
        let packed = self.tuples.emit()?.remove(0);
        // Group numbers start again from zero, and so may the dense table.
        self.dense = vec![u32::MAX; 1 << DENSE_BITS];
        let n = self.columns.len();
        let lane = |c: usize| self.lanes.lane(&packed, c);
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

#[cfg(test)]
mod tests {
    use arrow_array::{Int32Array, Int64Array, StringArray};
    use rand::{rngs::StdRng, Rng, SeedableRng};

    use super::super::RowGroupValues;
    use super::*;

    /// A batch of `n` rows: a string column of 25 values, then integer columns drawing from
    /// `spread` values (NULLs included), `columns` in all.
    fn batch(rng: &mut StdRng, columns: usize, n: usize, spread: i64) -> Vec<ArrayRef> {
        let mut out: Vec<ArrayRef> = vec![Arc::new(StringArray::from_iter((0..n).map(|_| {
            (rng.random_range(0..20) > 0).then(|| format!("b{}", rng.random_range(0..25)))
        })))];
        out.push(Arc::new(Int32Array::from_iter((0..n).map(|_| {
            (rng.random_range(0..20) > 0).then(|| rng.random_range(-spread..spread) as i32)
        }))));
        while out.len() < columns {
            out.push(Arc::new(Int64Array::from_iter((0..n).map(|_| {
                (rng.random_range(0..50) > 0).then(|| rng.random_range(-spread..spread))
            }))));
        }
        out
    }

    #[test]
    fn widening_lanes_keep_every_group_and_its_number() {
        for columns in 2..=4 {
            let mut rng = StdRng::seed_from_u64(columns as u64);
            let types: Vec<DataType> = batch(&mut rng, columns, 1, 1)
                .iter()
                .map(|a| a.data_type().clone())
                .collect();
            let mut composed = ComposedGroupValues::new(&types).expect("composed");
            let mut rows = RowGroupValues::new(&types).expect("rows");
            let mut layouts = vec![composed.lanes.clone()];
            // Distinct values arrive batch after batch: the lanes widen, for four columns
            // past 64 bits.
            for (i, spread) in [3i64, 200, 5_000, 300_000, 3_000_000]
                .into_iter()
                .enumerate()
            {
                let n = if spread > 1_000_000 {
                    80_000
                } else {
                    20_000 + i
                };
                let keys = batch(&mut rng, columns, n, spread);
                let (mut a, mut b) = (Vec::new(), Vec::new());
                composed
                    .intern(&keys, keys[0].len(), &mut a)
                    .expect("interns");
                rows.intern(&keys, keys[0].len(), &mut b).expect("interns");
                assert_eq!(a, b, "{columns} columns, spread {spread}");
                if layouts.last() != Some(&composed.lanes) {
                    layouts.push(composed.lanes.clone());
                }
            }
            assert_eq!(composed.len(), rows.len());
            let (x, y) = (composed.emit().expect("emits"), rows.emit().expect("emits"));
            assert_eq!(x.len(), y.len());
            for (p, q) in x.iter().zip(&y) {
                assert_eq!(p.as_ref(), q.as_ref());
            }
            if columns > 2 {
                assert!(layouts.len() > 2, "{columns} columns: {layouts:?}");
            }
            assert_eq!(composed.lanes == Lanes::Wide, columns == 4, "{layouts:?}");
        }
    }
}
