//! The build side's hash table: every build row's key in Arrow's row format, rows of one key
//! chained in arrival order.

use std::hash::BuildHasher;

use arrow_array::{Array, ArrayRef};
use arrow_buffer::NullBuffer;
use arrow_row::{RowConverter, Rows};
use ferrospark_common::Result;
use hashbrown::HashTable;

/// Rows whose keys can match: for every key compared with `=`, the key is not NULL
/// (`<=>` keys match NULL with NULL, so their NULLs do not exclude a row).
pub(crate) fn joinable(keys: &[ArrayRef], null_safe: &[bool], rows: usize) -> Option<NullBuffer> {
    keys.iter()
        .zip(null_safe)
        .filter(|(_, safe)| !**safe)
        .fold(None, |acc: Option<NullBuffer>, (k, _)| {
            NullBuffer::union(acc.as_ref(), k.logical_nulls().as_ref())
        })
        .filter(|n| n.null_count() > 0 && n.len() == rows)
}

/// A chain of build rows with one key: its first and last row.
#[derive(Debug, Clone, Copy)]
struct Chain {
    hash: u64,
    head: u32,
    tail: u32,
}

/// Build rows by key.
pub(crate) struct JoinTable {
    rows: Rows,
    map: HashTable<Chain>,
    /// The next build row with the same key, `u32::MAX` at the end of a chain.
    next: Vec<u32>,
    hasher: foldhash::fast::FixedState,
    /// Whether some build row was left out for a NULL key (the null-aware anti join needs it).
    pub has_null_key: bool,
    /// Build rows.
    pub num_rows: usize,
}

impl JoinTable {
    /// Indexes the build side's normalised `keys`.
    pub fn build(converter: &RowConverter, keys: &[ArrayRef], null_safe: &[bool]) -> Result<Self> {
        let num_rows = keys.first().map_or(0, |k| k.len());
        let rows = converter.convert_columns(keys)?;
        let valid = joinable(keys, null_safe, num_rows);
        let hasher = foldhash::fast::FixedState::with_seed(0x6a6f);
        let mut map: HashTable<Chain> = HashTable::with_capacity(num_rows);
        let mut next = vec![u32::MAX; num_rows];
        let mut has_null_key = false;
        for r in 0..num_rows {
            if valid.as_ref().is_some_and(|v| v.is_null(r)) {
                has_null_key = true;
                continue;
            }
            let key = rows.row(r);
            let h = hasher.hash_one(key.as_ref());
            match map.find_mut(h, |c| c.hash == h && rows.row(c.head as usize) == key) {
                Some(c) => {
                    next[c.tail as usize] = r as u32;
                    c.tail = r as u32;
                }
                None => {
                    map.insert_unique(
                        h,
                        Chain {
                            hash: h,
                            head: r as u32,
                            tail: r as u32,
                        },
                        |c| c.hash,
                    );
                }
            }
        }
        Ok(Self {
            rows,
            map,
            next,
            hasher,
            has_null_key,
            num_rows,
        })
    }

    /// Calls `matched(probe_row, build_row)` for every pair of equal keys, probe rows in
    /// order, the build rows of one key in arrival order. `probe` are the probe side's keys
    /// in the same row format; rows not in `valid` match nothing.
    pub fn probe(
        &self,
        probe: &Rows,
        valid: Option<&NullBuffer>,
        mut matched: impl FnMut(u32, u32),
    ) {
        for r in 0..probe.num_rows() {
            if valid.is_some_and(|v| v.is_null(r)) {
                continue;
            }
            let key = probe.row(r);
            let h = self.hasher.hash_one(key.as_ref());
            if let Some(c) = self
                .map
                .find(h, |c| c.hash == h && self.rows.row(c.head as usize) == key)
            {
                let mut b = c.head;
                while b != u32::MAX {
                    matched(r as u32, b);
                    b = self.next[b as usize];
                }
            }
        }
    }

    /// Bytes held.
    pub fn size(&self) -> usize {
        self.rows.size() + self.map.capacity() * 24 + self.next.capacity() * 4
    }
}
