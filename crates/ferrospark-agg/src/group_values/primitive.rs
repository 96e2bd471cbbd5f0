//! One primitive key (integers, dates, timestamps, decimals, normalised floats).

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, ArrowPrimitiveType, PrimitiveArray};
use arrow_buffer::NullBuffer;
use arrow_schema::DataType;
use ferrospark_common::Result;
use hashbrown::HashTable;

use super::{mix64, GroupValues};

/// Native key values reduced to the 64 bits that are hashed (equal keys, equal bits).
pub trait KeyBits: Copy + Send + Sync + 'static {
    /// The bits hashed.
    fn key_bits(self) -> u64;
    /// Key equality (bitwise for floats, which are normalised first).
    fn key_eq(self, other: Self) -> bool;
    /// A strict order consistent with `key_eq` (any one will do: it only detects sorted input).
    fn key_gt(self, other: Self) -> bool;
}

macro_rules! int_bits {
    ($($t:ty),*) => {$(
        impl KeyBits for $t {
            #[inline]
            fn key_bits(self) -> u64 { self as u64 }
            #[inline]
            fn key_eq(self, other: Self) -> bool { self == other }
            #[inline]
            fn key_gt(self, other: Self) -> bool { self > other }
        }
    )*};
}
int_bits!(i8, i16, i32, i64, u8, u16, u32, u64);

impl KeyBits for i128 {
    #[inline]
    fn key_bits(self) -> u64 {
        (self as u64) ^ mix64((self >> 64) as u64)
    }
    #[inline]
    fn key_eq(self, other: Self) -> bool {
        self == other
    }
    #[inline]
    fn key_gt(self, other: Self) -> bool {
        self > other
    }
}

// Floats are normalised before they are keys, so their bits are the key.
macro_rules! float_bits {
    ($($t:ty),*) => {$(
        impl KeyBits for $t {
            #[inline]
            fn key_bits(self) -> u64 { self.to_bits() as u64 }
            #[inline]
            fn key_eq(self, other: Self) -> bool { self.to_bits() == other.to_bits() }
            #[inline]
            fn key_gt(self, other: Self) -> bool { self.total_cmp(&other).is_gt() }
        }
    )*};
}
float_bits!(f32, f64);

/// Groups of one primitive key.
pub struct PrimitiveGroupValues<T: ArrowPrimitiveType> {
    data_type: DataType,
    /// (key, group): the key is kept inline so probes and rehashes touch only the table.
    map: HashTable<(T::Native, u32)>,
    values: Vec<T::Native>,
    null_group: Option<u32>,
    /// While every new key is larger than all before it (sorted input, such as a table
    /// written in key order), groups are appended without hashing; the table is built the
    /// first time a key breaks the order.
    ascending: bool,
    max: Option<T::Native>,
    /// After the first break of the order, while the keys form a second ascending run (the
    /// next sorted partial result, typically): the groups of the first run are `0..len`, in
    /// key order, and `cursor` walks them alongside the new run, so a key of the second run is
    /// found by a merge step instead of a random probe. A second break builds the hash table.
    merge: Option<MergeRun<T::Native>>,
    /// The last non-NULL key and its group. Sorted or clustered input repeats keys row after
    /// row, also across batches (which often cut through a run of one key).
    last: Option<(T::Native, u32)>,
    /// Groups announced by [`GroupValues::reserve`]: the hash table's size when it is built.
    expected: usize,
}

impl<T: ArrowPrimitiveType> PrimitiveGroupValues<T>
where
    T::Native: KeyBits,
{
    /// Puts every group but the NULL one into the hash table, sized once for as many groups
    /// again (or the announced number).
    fn index_all(
        map: &mut HashTable<(T::Native, u32)>,
        values: &[T::Native],
        null_group: Option<u32>,
        expected: usize,
    ) {
        let size = (values.len() * 2).max(expected);
        map.reserve(size, |&(k, _)| mix64(k.key_bits()));
        for (g, &k) in values.iter().enumerate() {
            if null_group != Some(g as u32) {
                map.insert_unique(mix64(k.key_bits()), (k, g as u32), |&(k, _)| {
                    mix64(k.key_bits())
                });
            }
        }
    }
}

impl<T: ArrowPrimitiveType> PrimitiveGroupValues<T> {
    /// An empty table for keys of `data_type`.
    pub fn new(data_type: DataType) -> Self {
        Self {
            data_type,
            map: HashTable::new(),
            values: Vec::new(),
            null_group: None,
            ascending: true,
            max: None,
            merge: None,
            last: None,
            expected: 0,
        }
    }
}

/// The state of the merge of a second ascending run against the first (see
/// [`PrimitiveGroupValues`]).
#[derive(Debug, Clone, Copy)]
struct MergeRun<K> {
    /// Groups `0..len` are the first run, ascending.
    len: usize,
    /// The first of those not below the current key.
    cursor: usize,
    /// The last key of the second run (`None` before its first).
    max: Option<K>,
}

impl<T: ArrowPrimitiveType> GroupValues for PrimitiveGroupValues<T>
where
    T::Native: KeyBits,
{
    fn intern(&mut self, keys: &[ArrayRef], _: usize, groups: &mut Vec<u32>) -> Result<()> {
        let a = keys[0].as_primitive::<T>();
        groups.clear();
        groups.reserve(a.len());
        let values = &mut self.values;
        let map = &mut self.map;
        let null_group = &mut self.null_group;
        let nulls = a.nulls().filter(|n| n.null_count() > 0);
        let mut last = self.last;
        for (i, &v) in a.values().iter().enumerate() {
            if nulls.is_some_and(|n| n.is_null(i)) {
                let g = *null_group.get_or_insert_with(|| {
                    values.push(T::Native::default());
                    (values.len() - 1) as u32
                });
                groups.push(g);
                continue;
            }
            if let Some((lv, lg)) = last {
                if lv.key_eq(v) {
                    groups.push(lg);
                    continue;
                }
            }
            if self.ascending {
                if self.max.is_none_or(|m| v.key_gt(m)) {
                    let g = values.len() as u32;
                    values.push(v);
                    self.max = Some(v);
                    last = Some((v, g));
                    groups.push(g);
                    continue;
                }
                self.ascending = false;
                // The order is broken. A second ascending run (no NULL group among the first
                // run's values, which must stay sorted) is merged against the first.
                if null_group.is_none() {
                    let len = values.len();
                    let cursor = values.partition_point(|&k| v.key_gt(k));
                    self.merge = Some(MergeRun {
                        len,
                        cursor,
                        max: None,
                    });
                } else {
                    Self::index_all(map, values, *null_group, self.expected);
                }
            }
            if let Some(m) = &mut self.merge {
                if m.max.is_none_or(|mx| v.key_gt(mx)) {
                    while m.cursor < m.len && v.key_gt(values[m.cursor]) {
                        m.cursor += 1;
                    }
                    let g = if m.cursor < m.len && values[m.cursor].key_eq(v) {
                        m.cursor as u32
                    } else {
                        values.push(v);
                        (values.len() - 1) as u32
                    };
                    m.max = Some(v);
                    last = Some((v, g));
                    groups.push(g);
                    continue;
                }
                // The second run is broken too: hash from here on.
                self.merge = None;
                Self::index_all(map, values, *null_group, self.expected);
            }
            let h = mix64(v.key_bits());
            let g = match map.find(h, |&(k, _)| k.key_eq(v)) {
                Some(&(_, g)) => g,
                None => {
                    let g = values.len() as u32;
                    values.push(v);
                    map.insert_unique(h, (v, g), |&(k, _)| mix64(k.key_bits()));
                    g
                }
            };
            last = Some((v, g));
            groups.push(g);
        }
        self.last = last;
        Ok(())
    }

    fn len(&self) -> usize {
        self.values.len()
    }

    fn size(&self) -> usize {
        self.map.capacity() * (5 + std::mem::size_of::<T::Native>())
            + self.values.capacity() * std::mem::size_of::<T::Native>()
    }

    fn reserve(&mut self, groups: usize) {
        self.values
            .reserve(groups.saturating_sub(self.values.len()));
        self.expected = groups;
    }

    fn emit(&mut self) -> Result<Vec<ArrayRef>> {
        let values = std::mem::take(&mut self.values);
        self.ascending = true;
        self.max = None;
        self.merge = None;
        self.last = None;
        let nulls = self.null_group.take().map(|g| {
            let mut valid = vec![true; values.len()];
            valid[g as usize] = false;
            NullBuffer::from(valid)
        });
        // A spilled table starts again small: keeping its capacity would count against the
        // memory limit and force a spill after every batch.
        self.map = HashTable::new();
        let a =
            PrimitiveArray::<T>::new(values.into(), nulls).with_data_type(self.data_type.clone());
        Ok(vec![Arc::new(a)])
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::types::Int64Type;
    use arrow_array::Int64Array;

    use super::*;

    #[test]
    fn sorted_input_split_inside_a_key_stays_on_the_append_path() {
        // Batches of a sorted table often cut through a run of one key.
        let mut gv = PrimitiveGroupValues::<Int64Type>::new(DataType::Int64);
        let mut g = Vec::new();
        for (batch, want) in [
            (vec![1, 1, 2, 3], vec![0, 0, 1, 2]),
            (vec![3, 3, 4], vec![2, 2, 3]),
            (vec![4, 9], vec![3, 4]),
        ] {
            let a: ArrayRef = Arc::new(Int64Array::from(batch));
            gv.intern(&[a], 0, &mut g).expect("intern");
            assert_eq!(g, want);
        }
        assert!(gv.ascending, "no key broke the order");
        assert!(gv.map.is_empty(), "nothing was hashed");
        let a: ArrayRef = Arc::new(Int64Array::from(vec![2, 10]));
        gv.intern(&[a], 0, &mut g).expect("intern");
        assert_eq!(g, vec![1, 5]);
        assert!(!gv.ascending);
    }

    /// Sorted runs one after another (as the final step receives sorted partial results),
    /// with overlaps, repeats, NULLs and a third run, cut into batches anywhere: the groups
    /// are always the first-seen numbering of a plain map.
    #[test]
    fn ascending_runs_merged_or_hashed_number_groups_as_first_seen() {
        use rand::rngs::StdRng;
        use rand::{Rng, SeedableRng};
        let mut rng = StdRng::seed_from_u64(11);
        for case in 0..200 {
            let runs = 1 + case % 3;
            let mut keys: Vec<Option<i64>> = Vec::new();
            for _ in 0..runs {
                let mut run: Vec<i64> = (0..rng.random_range(0..60))
                    .map(|_| rng.random_range(-20..40))
                    .collect();
                run.sort_unstable();
                keys.extend(run.into_iter().map(Some));
            }
            if case % 4 == 1 {
                let at = rng.random_range(0..=keys.len());
                keys.insert(at, None);
            }
            let mut want_map = std::collections::HashMap::new();
            let want: Vec<u32> = keys
                .iter()
                .map(|k| {
                    let n = want_map.len() as u32;
                    *want_map.entry(*k).or_insert(n)
                })
                .collect();
            let mut gv = PrimitiveGroupValues::<Int64Type>::new(DataType::Int64);
            let mut got = Vec::new();
            let mut at = 0;
            while at < keys.len() {
                let n = rng.random_range(1..=keys.len() - at);
                let a: ArrayRef = Arc::new(Int64Array::from(keys[at..at + n].to_vec()));
                let mut g = Vec::new();
                gv.intern(&[a], n, &mut g).expect("intern");
                got.extend(g);
                at += n;
            }
            assert_eq!(got, want, "case {case}: {keys:?}");
            assert_eq!(gv.len(), want_map.len());
        }
    }
}
