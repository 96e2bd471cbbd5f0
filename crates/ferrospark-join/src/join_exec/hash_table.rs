//! The build side's hash table: every build row's key in Arrow's row format, rows of one key
//! chained in arrival order.

use std::hash::BuildHasher;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, Int64Array};
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

/// A chain of build rows with one integer key.
#[derive(Debug, Clone, Copy)]
struct IntChain {
    key: i64,
    head: u32,
    tail: u32,
}

/// How build rows are found by key.
enum KeyIndex {
    /// Any keys, in Arrow's row format.
    Rows { rows: Rows, map: HashTable<Chain> },
    /// One integer key compared with `=` (the usual foreign key): the key itself, no encoding.
    Int { map: HashTable<IntChain> },
    /// One integer key whose values span a range at most a few times the build rows (dense
    /// surrogate keys, as TPC-H's order keys): each key's chain head at `key - min`, found
    /// without hashing, and in memory order when the probe keys arrive sorted.
    Dense { min: i64, heads: Vec<u32> },
}

/// How many slots per build row a dense index may spend before a hash table is used.
const DENSE_SLOTS_PER_ROW: usize = 4;

/// The most slots a dense index has (a 1 GiB array of heads).
const DENSE_MAX_SLOTS: usize = 1 << 28;

/// One integer key compared with `=`, widened to 64 bits (an `Int64` key as it is); `None`
/// for other keys.
pub(crate) fn int_key(keys: &[ArrayRef], null_safe: &[bool]) -> Option<Result<Int64Array>> {
    use arrow_schema::DataType as D;
    let [k] = keys else { return None };
    if null_safe.first().copied().unwrap_or(false) {
        return None;
    }
    if !matches!(
        k.data_type(),
        D::Int8 | D::Int16 | D::Int32 | D::Int64 | D::UInt8 | D::UInt16 | D::UInt32 | D::Date32
    ) {
        return None;
    }
    Some(
        arrow_cast::cast(k, &D::Int64)
            .map(|wide| wide.as_primitive::<Int64Type>().clone())
            .map_err(Into::into),
    )
}

/// Murmur3's 64-bit finaliser (both the bucket bits and the control bits well mixed).
#[inline]
fn mix(v: i64) -> u64 {
    let mut h = v as u64;
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51afd7ed558ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ceb9fe1a85ec53);
    h ^ (h >> 33)
}

/// Build rows by key.
pub(crate) struct JoinTable {
    index: KeyIndex,
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
        let valid = joinable(keys, null_safe, num_rows);
        let hasher = foldhash::fast::FixedState::with_seed(0x6a6f);
        let mut next = vec![u32::MAX; num_rows];
        let mut has_null_key = false;
        let skip = |r: usize, has_null: &mut bool| {
            let out = valid.as_ref().is_some_and(|v| v.is_null(r));
            *has_null |= out;
            out
        };
        let index = match int_key(keys, null_safe) {
            Some(values) => {
                let values = values?;
                let keep = |r: usize| valid.as_ref().is_none_or(|v| v.is_valid(r));
                let (mut lo, mut hi, mut n) = (i64::MAX, i64::MIN, 0usize);
                for (r, &key) in values.values().iter().enumerate() {
                    if keep(r) {
                        lo = lo.min(key);
                        hi = hi.max(key);
                        n += 1;
                    }
                }
                let span = (hi as i128 - lo as i128 + 1).max(0) as u128;
                if n > 0 && span <= (n * DENSE_SLOTS_PER_ROW).clamp(1024, DENSE_MAX_SLOTS) as u128 {
                    let mut heads = vec![u32::MAX; span as usize];
                    // Backwards, so each chain lists its rows in arrival order.
                    for (r, &key) in values.values().iter().enumerate().rev() {
                        if skip(r, &mut has_null_key) {
                            continue;
                        }
                        let slot = (key as i128 - lo as i128) as usize;
                        next[r] = heads[slot];
                        heads[slot] = r as u32;
                    }
                    return Ok(Self {
                        index: KeyIndex::Dense { min: lo, heads },
                        next,
                        hasher,
                        has_null_key,
                        num_rows,
                    });
                }
                let mut map: HashTable<IntChain> = HashTable::with_capacity(num_rows);
                for (r, &key) in values.values().iter().enumerate() {
                    if skip(r, &mut has_null_key) {
                        continue;
                    }
                    let h = mix(key);
                    match map.find_mut(h, |c| c.key == key) {
                        Some(c) => {
                            next[c.tail as usize] = r as u32;
                            c.tail = r as u32;
                        }
                        None => {
                            let c = IntChain {
                                key,
                                head: r as u32,
                                tail: r as u32,
                            };
                            map.insert_unique(h, c, |c| mix(c.key));
                        }
                    }
                }
                KeyIndex::Int { map }
            }
            None => {
                let rows = converter.convert_columns(keys)?;
                let mut map: HashTable<Chain> = HashTable::with_capacity(num_rows);
                for r in 0..num_rows {
                    if skip(r, &mut has_null_key) {
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
                            let c = Chain {
                                hash: h,
                                head: r as u32,
                                tail: r as u32,
                            };
                            map.insert_unique(h, c, |c| c.hash);
                        }
                    }
                }
                KeyIndex::Rows { rows, map }
            }
        };
        Ok(Self {
            index,
            next,
            hasher,
            has_null_key,
            num_rows,
        })
    }

    /// Calls `matched(probe_row, build_row)` for every pair of equal keys, probe rows in
    /// order, the build rows of one key in arrival order. `keys` are the probe side's
    /// normalised keys; rows not in `valid` match nothing.
    pub fn probe(
        &self,
        converter: &RowConverter,
        keys: &[ArrayRef],
        valid: Option<&NullBuffer>,
        mut matched: impl FnMut(u32, u32),
    ) -> Result<()> {
        let mut chain = |mut b: u32, r: usize| {
            while b != u32::MAX {
                matched(r as u32, b);
                b = self.next[b as usize];
            }
        };
        match &self.index {
            KeyIndex::Int { map } => {
                let values = match int_key(keys, &[false]) {
                    Some(v) => v?,
                    None => {
                        return Err(ferrospark_common::FerroError::Internal(
                            "probe keys differ from the build keys".into(),
                        ))
                    }
                };
                // Foreign keys often arrive clustered (a table sorted by its key, as lineitem by
                // order): a key equal to the previous row's reuses its chain.
                let mut last: Option<(i64, u32)> = None;
                for (r, &key) in values.values().iter().enumerate() {
                    if valid.is_some_and(|v| v.is_null(r)) {
                        continue;
                    }
                    let head = match last {
                        Some((k, h)) if k == key => h,
                        _ => {
                            let h = map
                                .find(mix(key), |c| c.key == key)
                                .map_or(u32::MAX, |c| c.head);
                            last = Some((key, h));
                            h
                        }
                    };
                    chain(head, r);
                }
            }
            KeyIndex::Dense { min, heads } => {
                let Some(values) = int_key(keys, &[false]) else {
                    return Err(ferrospark_common::FerroError::Internal(
                        "probe keys differ from the build keys".into(),
                    ));
                };
                let values = values?;
                for (r, &key) in values.values().iter().enumerate() {
                    if valid.is_some_and(|v| v.is_null(r)) {
                        continue;
                    }
                    let slot = key as i128 - *min as i128;
                    if (0..heads.len() as i128).contains(&slot) {
                        chain(heads[slot as usize], r);
                    }
                }
            }
            KeyIndex::Rows { rows, map } => {
                let probe = converter.convert_columns(keys)?;
                for r in 0..probe.num_rows() {
                    if valid.is_some_and(|v| v.is_null(r)) {
                        continue;
                    }
                    let key = probe.row(r);
                    let h = self.hasher.hash_one(key.as_ref());
                    if let Some(c) =
                        map.find(h, |c| c.hash == h && rows.row(c.head as usize) == key)
                    {
                        chain(c.head, r);
                    }
                }
            }
        }
        Ok(())
    }

    /// Bytes held.
    pub fn size(&self) -> usize {
        let index = match &self.index {
            KeyIndex::Rows { rows, map } => rows.size() + map.capacity() * 24,
            KeyIndex::Int { map } => map.capacity() * 24,
            KeyIndex::Dense { heads, .. } => heads.capacity() * 4,
        };
        index + self.next.capacity() * 4
    }
}
