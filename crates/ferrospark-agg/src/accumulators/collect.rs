//! `collect_list` / `collect_set`: object buffers (arrays of values per group, NULLs skipped).
//!
//! Values of any type are kept in Arrow's row format, in chunks as they arrive; a log of
//! `(group, chunk, row)` entries remembers which group each belongs to, in input order. Handing
//! groups out is a stable counting sort of the log by group, then one conversion back to
//! columns. `collect_set` keeps only the first entry of each `(group, value)` pair, found
//! through a hash table over the value bytes.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, ListArray};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_row::{RowConverter, Rows, SortField};
use arrow_schema::{DataType, Field};
use ferrospark_common::Result;
use hashbrown::HashTable;

use super::{EmitTo, GroupsAccumulator};

fn hash_entry(hasher: &foldhash::fast::FixedState, group: u32, value: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    hasher.hash_one((group, value))
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    group: u32,
    chunk: u32,
    row: u32,
}

/// The values of every group, as `collect_list` or `collect_set` keeps them.
pub struct CollectAccumulator {
    converter: RowConverter,
    item_type: DataType,
    chunks: Vec<Rows>,
    log: Vec<Entry>,
    /// `collect_set` only: indices into `log`, hashed by (group, value).
    set: Option<HashTable<u32>>,
    state_hasher: foldhash::fast::FixedState,
    /// Groups that exist, including those without any value (they get an empty array).
    seen_groups: usize,
}

impl CollectAccumulator {
    /// Collects values of `item_type`; `distinct` makes it `collect_set`.
    pub fn new(item_type: &DataType, distinct: bool) -> Result<Self> {
        Ok(Self {
            converter: RowConverter::new(vec![SortField::new(item_type.clone())])?,
            item_type: item_type.clone(),
            chunks: Vec::new(),
            log: Vec::new(),
            set: distinct.then(HashTable::new),
            state_hasher: foldhash::fast::FixedState::with_seed(0x5eed),
            seen_groups: 0,
        })
    }

    /// Adds non-NULL `values[i]` to group `groups[i]`.
    fn add(&mut self, values: &ArrayRef, groups: impl Iterator<Item = u32>) -> Result<()> {
        let rows = self
            .converter
            .convert_columns(std::slice::from_ref(values))?;
        let chunk = self.chunks.len() as u32;
        let nulls = values.logical_nulls();
        self.chunks.push(rows);
        for (r, g) in groups.enumerate() {
            if nulls.as_ref().is_some_and(|n| n.is_null(r)) {
                continue;
            }
            let e = Entry {
                group: g,
                chunk,
                row: r as u32,
            };
            if let Some(set) = &mut self.set {
                let (log, chunks, hasher) = (&self.log, &self.chunks, &self.state_hasher);
                let v = chunks[chunk as usize].row(r).data();
                let h = hash_entry(hasher, g, v);
                let same = |&i: &u32| {
                    let o = log[i as usize];
                    o.group == g && chunks[o.chunk as usize].row(o.row as usize).data() == v
                };
                if set.find(h, same).is_some() {
                    continue;
                }
                set.insert_unique(h, log.len() as u32, |&i| {
                    let o = log[i as usize];
                    hash_entry(
                        hasher,
                        o.group,
                        chunks[o.chunk as usize].row(o.row as usize).data(),
                    )
                });
            }
            self.log.push(e);
        }
        Ok(())
    }

    /// Builds the list array of groups `0..n` and keeps the rest (renumbered from 0).
    fn emit_lists(&mut self, emit: EmitTo, total: usize) -> Result<ArrayRef> {
        let n = match emit {
            EmitTo::All => total,
            EmitTo::First(n) => n,
        };
        let mut counts = vec![0usize; n + 1];
        for e in &self.log {
            if (e.group as usize) < n {
                counts[e.group as usize + 1] += 1;
            }
        }
        let mut offsets = counts.clone();
        for i in 1..offsets.len() {
            offsets[i] += offsets[i - 1];
        }
        let len = offsets[n];
        let mut order = vec![0usize; len];
        let mut cursor = offsets.clone();
        let mut kept = Vec::new();
        for (i, e) in self.log.iter().enumerate() {
            let g = e.group as usize;
            if g < n {
                order[cursor[g]] = i;
                cursor[g] += 1;
            } else {
                kept.push(i);
            }
        }
        let parser = self.converter.parser();
        let rows: Vec<_> = order
            .iter()
            .map(|&i| {
                let e = self.log[i];
                parser.parse(self.chunks[e.chunk as usize].row(e.row as usize).data())
            })
            .collect();
        let values = if rows.is_empty() {
            arrow_array::new_empty_array(&self.item_type)
        } else {
            self.converter.convert_rows(rows)?.remove(0)
        };
        let offsets: Vec<i32> = offsets.iter().map(|&o| o as i32).collect();
        let list = ListArray::try_new(
            Arc::new(Field::new_list_field(self.item_type.clone(), true)),
            OffsetBuffer::new(ScalarBuffer::from(offsets)),
            values,
            None,
        )?;
        self.keep(&kept, n)?;
        Ok(Arc::new(list))
    }

    /// Keeps only the log entries `kept`, renumbering their groups down by `shift`.
    fn keep(&mut self, kept: &[usize], shift: usize) -> Result<()> {
        if kept.is_empty() {
            self.chunks.clear();
            self.log.clear();
            if let Some(s) = &mut self.set {
                s.clear();
            }
            return Ok(());
        }
        let old_chunks = std::mem::take(&mut self.chunks);
        let old_log = std::mem::take(&mut self.log);
        let parser_rows: Vec<_> = kept
            .iter()
            .map(|&i| {
                let e = old_log[i];
                (
                    e.group - shift as u32,
                    old_chunks[e.chunk as usize].row(e.row as usize),
                )
            })
            .collect();
        let mut rows = self.converter.empty_rows(parser_rows.len(), 0);
        for (_, r) in &parser_rows {
            rows.push(*r);
        }
        let groups: Vec<u32> = parser_rows.iter().map(|(g, _)| *g).collect();
        drop(parser_rows);
        self.chunks.push(rows);
        self.log = groups
            .iter()
            .enumerate()
            .map(|(i, &g)| Entry {
                group: g,
                chunk: 0,
                row: i as u32,
            })
            .collect();
        if let Some(s) = &mut self.set {
            s.clear();
            let (log, chunks, hasher) = (&self.log, &self.chunks, &self.state_hasher);
            let hash_of =
                |e: &Entry| hash_entry(hasher, e.group, chunks[0].row(e.row as usize).data());
            for (i, e) in log.iter().enumerate() {
                s.insert_unique(hash_of(e), i as u32, |&j| hash_of(&log[j as usize]));
            }
        }
        Ok(())
    }

    fn total_groups(&self) -> usize {
        self.log
            .iter()
            .map(|e| e.group as usize + 1)
            .max()
            .unwrap_or(0)
    }
}

impl GroupsAccumulator for CollectAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.seen_groups = self.seen_groups.max(total);
        self.add(&values[0], groups.iter().copied())
    }

    fn merge_batch(&mut self, states: &[ArrayRef], groups: &[u32], total: usize) -> Result<()> {
        self.seen_groups = self.seen_groups.max(total);
        let lists = states[0].as_list::<i32>();
        let offsets = lists.value_offsets();
        let first = offsets[0] as usize;
        let last = offsets[offsets.len() - 1] as usize;
        let values = lists.values().slice(first, last - first);
        let expanded = (0..lists.len()).flat_map(|r| {
            let n = if lists.is_null(r) {
                0
            } else {
                (offsets[r + 1] - offsets[r]) as usize
            };
            std::iter::repeat_n(groups[r], n)
        });
        // NULL lists contribute nothing; their (absent) values take no slot in `values`
        // only when their offsets are equal, which Arrow guarantees for our own states.
        self.add(&values, expanded)
    }

    fn evaluate(&mut self, emit: EmitTo) -> Result<ArrayRef> {
        let total = self.seen_groups.max(self.total_groups());
        let out = self.emit_lists(emit, total)?;
        self.seen_groups = match emit {
            EmitTo::All => 0,
            EmitTo::First(n) => total.saturating_sub(n),
        };
        Ok(out)
    }

    fn state(&mut self, emit: EmitTo) -> Result<Vec<ArrayRef>> {
        Ok(vec![self.evaluate(emit)?])
    }

    fn size(&self) -> usize {
        self.chunks.iter().map(Rows::size).sum::<usize>()
            + self.log.capacity() * 12
            + self.set.as_ref().map_or(0, |s| s.capacity() * 5)
    }
}
