//! `collect_list` / `collect_set`: object buffers (arrays of values per group, NULLs skipped).
//!
//! Values are logged as `(group, value)` entries in arrival order; handing groups out is a
//! stable counting sort of the log by group. Primitive values are logged as they are; any
//! other type is first interned into a dictionary (the same tables that intern grouping keys)
//! and logged by id, so strings are hashed once per value and `collect_set` deduplicates
//! `(group, id)` pairs as plain integers.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, ArrowPrimitiveType, ListArray, PrimitiveArray, UInt32Array};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, TimeUnit};
use ferrospark_common::Result;
use hashbrown::{HashSet, HashTable};

use super::{EmitTo, GroupsAccumulator};
use crate::group_values::primitive::KeyBits;
use crate::group_values::{mix64, new_group_values, normalize_key, GroupValues};

/// Offsets that put every group's entries together, and where each log entry goes (keeping
/// arrival order within a group): `slot[i]` for entries of groups `< n`, `u32::MAX` for
/// entries of later groups, which are not handed out.
fn group_slots(groups: &[u32], n: usize) -> (Vec<i32>, Vec<u32>) {
    let mut offsets = vec![0i32; n + 1];
    for &g in groups {
        if (g as usize) < n {
            offsets[g as usize + 1] += 1;
        }
    }
    for i in 1..offsets.len() {
        offsets[i] += offsets[i - 1];
    }
    let mut cursor: Vec<u32> = offsets[..n].iter().map(|&o| o as u32).collect();
    let slots = groups
        .iter()
        .map(|&g| match cursor.get_mut(g as usize) {
            Some(c) => {
                *c += 1;
                *c - 1
            }
            None => u32::MAX,
        })
        .collect();
    (offsets, slots)
}

/// Scatters `log` into group order through `slots`; entries of later groups come back
/// separately, in arrival order.
fn scatter<V: Copy + Default>(log: &[V], slots: &[u32], placed: usize) -> (Vec<V>, Vec<V>) {
    let mut out = vec![V::default(); placed];
    let mut kept = Vec::new();
    for (&v, &s) in log.iter().zip(slots) {
        match out.get_mut(s as usize) {
            Some(o) => *o = v,
            None => kept.push(v),
        }
    }
    (out, kept)
}

fn list(item_type: &DataType, offsets: Vec<i32>, values: ArrayRef) -> Result<ArrayRef> {
    Ok(Arc::new(ListArray::try_new(
        Arc::new(Field::new_list_field(item_type.clone(), true)),
        OffsetBuffer::new(ScalarBuffer::from(offsets)),
        values,
        None,
    )?))
}

/// Flattens list states into (values, group of each value) for merging.
fn flatten(states: &ArrayRef, groups: &[u32]) -> (ArrayRef, Vec<u32>) {
    let lists = states.as_list::<i32>();
    let offsets = lists.value_offsets();
    let (first, last) = (offsets[0] as usize, offsets[lists.len()] as usize);
    let mut owner = Vec::with_capacity(last - first);
    for r in 0..lists.len() {
        let n = if lists.is_null(r) {
            0
        } else {
            (offsets[r + 1] - offsets[r]) as usize
        };
        owner.extend(std::iter::repeat_n(groups[r], n));
    }
    (lists.values().slice(first, last - first), owner)
}

/// How many groups an emit hands out.
fn emit_count(emit: EmitTo, total: usize) -> usize {
    match emit {
        EmitTo::All => total,
        EmitTo::First(n) => n,
    }
}

/// collect_list / collect_set of a primitive type.
pub struct PrimitiveCollect<T: ArrowPrimitiveType> {
    /// Group of each logged value, and the value.
    groups_of: Vec<u32>,
    values: Vec<T::Native>,
    /// collect_set: indices into the log, hashed by (group, value).
    set: Option<HashTable<u32>>,
    /// collect_list merges keep incoming lists whole: (group, chunk, row) segments, copied
    /// into the output in one go instead of value by value.
    segments: Vec<(u32, u32, u32)>,
    chunks: Vec<ArrayRef>,
    groups: usize,
    data_type: DataType,
}

fn pair_hash<N: KeyBits>(g: u32, v: N) -> u64 {
    mix64(v.key_bits() ^ (g as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

impl<T: ArrowPrimitiveType> PrimitiveCollect<T>
where
    T::Native: KeyBits,
{
    fn new(data_type: DataType, distinct: bool) -> Self {
        Self {
            groups_of: Vec::new(),
            values: Vec::new(),
            set: distinct.then(HashTable::new),
            segments: Vec::new(),
            chunks: Vec::new(),
            groups: 0,
            data_type,
        }
    }

    fn add(&mut self, values: &ArrayRef, groups: &[u32], total: usize) {
        self.groups = self.groups.max(total);
        // collect_set compares doubles as Spark groups them: one NaN, -0.0 = 0.0.
        let normalized;
        let values = if self.set.is_some() {
            normalized = normalize_key(values);
            &normalized
        } else {
            values
        };
        let a = values.as_primitive::<T>();
        let nulls = a.nulls().filter(|n| n.null_count() > 0);
        let Some(set) = &mut self.set else {
            match nulls {
                None => {
                    self.groups_of.extend_from_slice(groups);
                    self.values.extend_from_slice(a.values());
                }
                Some(n) => {
                    for r in n.valid_indices() {
                        self.groups_of.push(groups[r]);
                        self.values.push(a.values()[r]);
                    }
                }
            }
            return;
        };
        let (gs, vs) = (&mut self.groups_of, &mut self.values);
        for (r, (&g, &v)) in groups.iter().zip(a.values().iter()).enumerate() {
            if nulls.is_some_and(|n| n.is_null(r)) {
                continue;
            }
            let h = pair_hash(g, v);
            if set
                .find(h, |&i| gs[i as usize] == g && vs[i as usize].key_eq(v))
                .is_some()
            {
                continue;
            }
            set.insert_unique(h, gs.len() as u32, |&i| {
                pair_hash(gs[i as usize], vs[i as usize])
            });
            gs.push(g);
            vs.push(v);
        }
    }

    /// Turns kept list segments into logged values (needed before logging more values).
    fn flatten_segments(&mut self) {
        let segments = std::mem::take(&mut self.segments);
        let chunks = std::mem::take(&mut self.chunks);
        for (g, c, r) in segments {
            let list = chunks[c as usize].as_list::<i32>();
            let v = list.value(r as usize);
            let groups = vec![g; v.len()];
            let total = self.groups;
            self.add(&v, &groups, total);
        }
    }
}

impl<T: ArrowPrimitiveType> GroupsAccumulator for PrimitiveCollect<T>
where
    T::Native: KeyBits,
{
    fn update_batch(&mut self, values: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        if !self.segments.is_empty() {
            self.flatten_segments();
        }
        self.add(&values[0], groups, total);
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        if self.set.is_none() && self.values.is_empty() {
            self.groups = self.groups.max(total);
            let chunk = self.chunks.len() as u32;
            let lists = states[0].as_list::<i32>();
            for (r, &g) in groups.iter().enumerate() {
                if lists.is_valid(r) && !lists.value(r).is_empty() {
                    self.segments.push((g, chunk, r as u32));
                }
            }
            self.chunks.push(states[0].clone());
            return Ok(());
        }
        if !self.segments.is_empty() {
            self.flatten_segments();
        }
        let (values, owner) = flatten(&states[0], groups);
        self.add(&values, &owner, total);
        Ok(())
    }

    fn evaluate(&mut self, emit: EmitTo) -> Result<ArrayRef> {
        let n = emit_count(emit, self.groups);
        if !self.segments.is_empty() {
            if !self.values.is_empty() || emit != EmitTo::All {
                self.flatten_segments();
            } else {
                return self.emit_segments(n);
            }
        }
        let (offsets, slots) = group_slots(&self.groups_of, n);
        let (values, kept_values) = scatter(&self.values, &slots, offsets[n] as usize);
        let values =
            PrimitiveArray::<T>::new(values.into(), None).with_data_type(self.data_type.clone());
        let shift = n as u32;
        let kept_groups: Vec<u32> = self
            .groups_of
            .iter()
            .filter(|&&g| g >= shift)
            .map(|&g| g - shift)
            .collect();
        self.groups_of = kept_groups;
        self.values = kept_values;
        self.groups = self.groups.saturating_sub(n);
        if let Some(set) = &mut self.set {
            *set = HashTable::new();
            let (gs, vs) = (&self.groups_of, &self.values);
            for i in 0..gs.len() {
                set.insert_unique(pair_hash(gs[i], vs[i]), i as u32, |&j| {
                    pair_hash(gs[j as usize], vs[j as usize])
                });
            }
        }
        list(&self.data_type, offsets, Arc::new(values))
    }

    fn state(&mut self, emit: EmitTo) -> Result<Vec<ArrayRef>> {
        Ok(vec![self.evaluate(emit)?])
    }

    fn reserve_rows(&mut self, rows: usize) {
        if self.set.is_none() {
            self.groups_of.reserve(rows);
            self.values.reserve(rows);
        }
    }

    fn size(&self) -> usize {
        self.values.capacity() * (4 + std::mem::size_of::<T::Native>())
            + self.set.as_ref().map_or(0, |s| s.capacity() * 5)
            + self.segments.capacity() * 12
            + self
                .chunks
                .iter()
                .map(|c| c.get_array_memory_size())
                .sum::<usize>()
    }
}

impl<T: ArrowPrimitiveType> PrimitiveCollect<T>
where
    T::Native: KeyBits,
{
    /// Every group's lists concatenated in arrival order (the merge of collect_list).
    fn emit_segments(&mut self, n: usize) -> Result<ArrayRef> {
        let segments = std::mem::take(&mut self.segments);
        let chunks = std::mem::take(&mut self.chunks);
        let owners: Vec<u32> = segments.iter().map(|s| s.0).collect();
        let (offsets_seg, slots) = group_slots(&owners, n);
        let (ordered, _) = scatter(&segments, &slots, offsets_seg[n] as usize);
        let lists: Vec<_> = chunks.iter().map(|c| c.as_list::<i32>()).collect();
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(0i32);
        let mut values: Vec<T::Native> = Vec::new();
        for g in 0..n {
            for &(_, c, r) in &ordered[offsets_seg[g] as usize..offsets_seg[g + 1] as usize] {
                let l = lists[c as usize];
                let (start, end) = (
                    l.value_offsets()[r as usize] as usize,
                    l.value_offsets()[r as usize + 1] as usize,
                );
                let inner = l.values().as_primitive::<T>();
                match inner.nulls().filter(|x| x.null_count() > 0) {
                    None => values.extend_from_slice(&inner.values()[start..end]),
                    Some(nb) => values.extend(
                        (start..end)
                            .filter(|&j| nb.is_valid(j))
                            .map(|j| inner.values()[j]),
                    ),
                }
            }
            offsets.push(values.len() as i32);
        }
        self.groups = 0;
        let values =
            PrimitiveArray::<T>::new(values.into(), None).with_data_type(self.data_type.clone());
        list(&self.data_type, offsets, Arc::new(values))
    }
}

/// The `(group, value id)` pairs collect_set has kept: one bit per id and group while the
/// dictionary holds at most 64 values (sets of a few distinct values are the common case),
/// a hash set beyond.
enum SeenPairs {
    Bits(Vec<u64>),
    Hashed(HashSet<u64>),
}

impl SeenPairs {
    /// Records the pair; false when it was already there. `entries` are the pairs so far.
    fn insert(&mut self, g: u32, id: u32, entries: &[(u32, u32)]) -> bool {
        if let SeenPairs::Bits(bits) = self {
            if id < 64 {
                let g = g as usize;
                if g >= bits.len() {
                    bits.resize(g + 1, 0);
                }
                let fresh = bits[g] & (1 << id) == 0;
                bits[g] |= 1 << id;
                return fresh;
            }
            *self = SeenPairs::Hashed(entries.iter().map(|&(g, id)| pair_key(g, id)).collect());
        }
        match self {
            SeenPairs::Hashed(set) => set.insert(pair_key(g, id)),
            SeenPairs::Bits(_) => unreachable!("switched to a hash set above"),
        }
    }

    fn size(&self) -> usize {
        match self {
            SeenPairs::Bits(b) => b.capacity() * 8,
            SeenPairs::Hashed(s) => s.capacity() * 9,
        }
    }
}

fn pair_key(g: u32, id: u32) -> u64 {
    ((g as u64) << 32) | id as u64
}

/// collect_list / collect_set of any other type: values interned to ids first.
pub struct InternedCollect {
    dict: Box<dyn GroupValues>,
    entries: Vec<(u32, u32)>,
    set: Option<SeenPairs>,
    ids: Vec<u32>,
    groups: usize,
    item_type: DataType,
}

impl InternedCollect {
    fn new(item_type: &DataType, distinct: bool) -> Result<Self> {
        Ok(Self {
            dict: new_group_values(std::slice::from_ref(item_type))?,
            entries: Vec::new(),
            set: distinct.then(|| SeenPairs::Bits(Vec::new())),
            ids: Vec::new(),
            groups: 0,
            item_type: item_type.clone(),
        })
    }

    fn add(&mut self, values: &ArrayRef, groups: &[u32], total: usize) -> Result<()> {
        self.groups = self.groups.max(total);
        let nulls = values.logical_nulls().filter(|n| n.null_count() > 0);
        self.dict
            .intern(std::slice::from_ref(values), values.len(), &mut self.ids)?;
        for (r, (&g, &id)) in groups.iter().zip(&self.ids).enumerate() {
            if nulls.as_ref().is_some_and(|n| n.is_null(r)) {
                continue;
            }
            if let Some(set) = &mut self.set {
                if !set.insert(g, id, &self.entries) {
                    continue;
                }
            }
            self.entries.push((g, id));
        }
        Ok(())
    }
}

impl GroupsAccumulator for InternedCollect {
    fn update_batch(&mut self, values: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.add(&values[0], groups, total)
    }

    fn merge_batch(&mut self, states: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        let (values, owner) = flatten(&states[0], groups);
        self.add(&values, &owner, total)
    }

    fn evaluate(&mut self, emit: EmitTo) -> Result<ArrayRef> {
        let n = emit_count(emit, self.groups);
        let owners: Vec<u32> = self.entries.iter().map(|e| e.0).collect();
        let (offsets, slots) = group_slots(&owners, n);
        let (placed, kept) = scatter(&self.entries, &slots, offsets[n] as usize);
        let dict = self.dict.emit()?.remove(0);
        let ids = UInt32Array::from_iter_values(placed.iter().map(|e| e.1));
        let values = arrow_select::take::take(dict.as_ref(), &ids, None)?;
        // Entries of groups not handed out keep their values: intern them again.
        let shift = n as u32;
        let kept_groups: Vec<u32> = kept.iter().map(|e| e.0 - shift).collect();
        let kept_ids = UInt32Array::from_iter_values(kept.iter().map(|e| e.1));
        let kept_values = arrow_select::take::take(dict.as_ref(), &kept_ids, None)?;
        // Fresh containers: after a spill, kept capacity would still count against the limit.
        self.entries = Vec::new();
        self.ids = Vec::new();
        if let Some(set) = &mut self.set {
            *set = SeenPairs::Bits(Vec::new());
        }
        self.groups = self.groups.saturating_sub(n);
        if !kept_groups.is_empty() {
            let total = self.groups;
            self.add(&kept_values, &kept_groups, total)?;
        }
        list(&self.item_type, offsets, values)
    }

    fn state(&mut self, emit: EmitTo) -> Result<Vec<ArrayRef>> {
        Ok(vec![self.evaluate(emit)?])
    }

    fn reserve_rows(&mut self, rows: usize) {
        if self.set.is_none() {
            self.entries.reserve(rows);
        }
    }

    fn size(&self) -> usize {
        self.dict.size()
            + self.entries.capacity() * 8
            + self.set.as_ref().map_or(0, SeenPairs::size)
            + self.ids.capacity() * 4
    }
}

/// The collect_list (or, `distinct`, collect_set) accumulator for values of `dt`.
pub fn collect(dt: &DataType, distinct: bool) -> Result<Box<dyn GroupsAccumulator>> {
    macro_rules! prim {
        ($t:ty) => {
            Box::new(PrimitiveCollect::<$t>::new(dt.clone(), distinct))
        };
    }
    Ok(match dt {
        DataType::Int8 => prim!(Int8Type),
        DataType::Int16 => prim!(Int16Type),
        DataType::Int32 => prim!(Int32Type),
        DataType::Int64 => prim!(Int64Type),
        DataType::Float32 => prim!(Float32Type),
        DataType::Float64 => prim!(Float64Type),
        DataType::Date32 => prim!(Date32Type),
        DataType::Timestamp(TimeUnit::Microsecond, _) => prim!(TimestampMicrosecondType),
        DataType::Decimal128(_, _) => prim!(Decimal128Type),
        other => Box::new(InternedCollect::new(other, distinct)?),
    })
}
