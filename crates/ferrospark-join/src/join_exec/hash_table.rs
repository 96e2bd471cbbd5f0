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
    let [k] = keys else { return None };
    if null_safe.first().copied().unwrap_or(false) {
        return None;
    }
    int_column(k)
}

/// An integer column widened to 64 bits; `None` for other types.
fn int_column(k: &ArrayRef) -> Option<Result<Int64Array>> {
    use arrow_schema::DataType as D;
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

/// Every key widened to 64 bits when all are integers; `None` otherwise.
fn int_columns(keys: &[ArrayRef]) -> Option<Result<Vec<Int64Array>>> {
    keys.iter().map(int_column).collect()
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

/// Several integer keys compared with `=`, packed into one `i64`: each key's offset from the
/// build side's least value in its own bits (TPC-H's `(ps_suppkey, ps_partkey)`), so the
/// integer index serves them without encoding rows and comparing bytes.
struct Packing {
    /// Per key: the build side's least and greatest value and the bit it starts at.
    keys: Vec<(i64, i64, u32)>,
}

/// The bits packed keys may take (one short of 64, so every packed key is non-negative).
const PACKED_BITS: u32 = 63;

impl Packing {
    /// A packing for `keys` (several, widened) when their build-side ranges, over the rows
    /// `keep` keeps, fit in [`PACKED_BITS`] together.
    fn of(keys: &[Int64Array], keep: &dyn Fn(usize) -> bool) -> Option<Self> {
        if keys.len() < 2 {
            return None;
        }
        let mut out = Vec::with_capacity(keys.len());
        let mut bit = 0u32;
        for values in keys {
            let (mut lo, mut hi) = (i64::MAX, i64::MIN);
            for (r, &v) in values.values().iter().enumerate() {
                if keep(r) {
                    lo = lo.min(v);
                    hi = hi.max(v);
                }
            }
            let span = if lo > hi { 0 } else { hi.abs_diff(lo) };
            out.push((lo, hi, bit));
            bit += u64::BITS - span.leading_zeros();
            if bit > PACKED_BITS {
                return None;
            }
        }
        Some(Self { keys: out })
    }

    /// Each row's keys (widened) packed, and the rows whose keys all lie within the build
    /// side's ranges (`None` when all do): only those can match.
    fn pack(&self, keys: &[Int64Array]) -> (Int64Array, Option<NullBuffer>) {
        let rows = keys.first().map_or(0, |k| k.len());
        let mut packed = vec![0i64; rows];
        let mut in_range: Option<Vec<bool>> = None;
        for (values, &(lo, hi, bit)) in keys.iter().zip(&self.keys) {
            for (r, (&v, p)) in values.values().iter().zip(packed.iter_mut()).enumerate() {
                if v < lo || v > hi {
                    in_range.get_or_insert_with(|| vec![true; rows])[r] = false;
                } else {
                    *p |= ((v.wrapping_sub(lo)) as u64).wrapping_shl(bit) as i64;
                }
            }
        }
        (Int64Array::from(packed), in_range.map(NullBuffer::from))
    }
}

/// Build rows by key.
pub(crate) struct JoinTable {
    index: KeyIndex,
    /// Set when several integer keys are indexed as one packed integer.
    packing: Option<Packing>,
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
        let keep = |r: usize| valid.as_ref().is_none_or(|v| v.is_valid(r));
        let packable = || {
            if null_safe.iter().any(|s| *s) {
                return Ok(None);
            }
            let Some(columns) = int_columns(keys).transpose()? else {
                return Ok(None);
            };
            Ok::<_, ferrospark_common::FerroError>(
                Packing::of(&columns, &keep).map(|p| (p.pack(&columns).0, p)),
            )
        };
        let (values, packing) = match int_key(keys, null_safe) {
            Some(values) => (Some(values?), None),
            None => match packable()? {
                Some((values, p)) => (Some(values), Some(p)),
                None => (None, None),
            },
        };
        let index = match values {
            Some(values) => {
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
                    KeyIndex::Dense { min: lo, heads }
                } else {
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
            packing,
            next,
            hasher,
            has_null_key,
            num_rows,
        })
    }

    /// The probe side's keys as the one integer the index holds, and the rows whose keys
    /// can be in the index at all (`None`: every row).
    fn probe_values(&self, keys: &[ArrayRef]) -> Result<(Int64Array, Option<NullBuffer>)> {
        let differ = || {
            ferrospark_common::FerroError::Internal("probe keys differ from the build keys".into())
        };
        match &self.packing {
            Some(p) => Ok(p.pack(&int_columns(keys).ok_or_else(differ)??)),
            None => Ok((int_key(keys, &[false]).ok_or_else(differ)??, None)),
        }
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
                let (values, in_range) = self.probe_values(keys)?;
                let valid = NullBuffer::union(valid, in_range.as_ref());
                // Foreign keys often arrive clustered (a table sorted by its key, as lineitem by
                // order): a key equal to the previous row's reuses its chain.
                let mut last: Option<(i64, u32)> = None;
                for (r, &key) in values.values().iter().enumerate() {
                    if valid.as_ref().is_some_and(|v| v.is_null(r)) {
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
                let (values, in_range) = self.probe_values(keys)?;
                let valid = NullBuffer::union(valid, in_range.as_ref());
                for (r, &key) in values.values().iter().enumerate() {
                    if valid.as_ref().is_some_and(|v| v.is_null(r)) {
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int32Array, Int64Array};
    use arrow_row::SortField;
    use arrow_schema::DataType;
    use rand::{rngs::StdRng, Rng, SeedableRng};

    use super::*;

    fn pairs(table: &JoinTable, converter: &RowConverter, probe: &[ArrayRef]) -> Vec<(u32, u32)> {
        let rows = probe[0].len();
        let valid = joinable(probe, &[false, false], rows);
        let mut out = Vec::new();
        table
            .probe(converter, probe, valid.as_ref(), |p, b| out.push((p, b)))
            .expect("probes");
        out
    }

    #[allow(clippy::needless_range_loop)]
    fn brute(build: &[Vec<Option<i64>>], probe: &[Vec<Option<i64>>]) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        for p in 0..probe[0].len() {
            for b in 0..build[0].len() {
                let eq = (0..build.len()).all(|k| match (probe[k][p], build[k][b]) {
                    (Some(x), Some(y)) => x == y,
                    _ => false,
                });
                if eq {
                    out.push((p as u32, b as u32));
                }
            }
        }
        out
    }

    #[test]
    fn packed_integer_keys_match_as_their_tuples_do() {
        let mut rng = StdRng::seed_from_u64(7);
        // Narrow ranges pack (densely or hashed); a full-width key falls back to rows.
        for (lo, hi) in [
            (-3i64, 5i64),
            (-1_000_000, 1_000_000),
            (i64::MIN / 2, i64::MAX / 2),
        ] {
            let column = |n: usize, rng: &mut StdRng, wider: i64| -> Vec<Option<i64>> {
                (0..n)
                    .map(|_| {
                        (rng.random_range(0..10) > 0)
                            .then(|| rng.random_range(lo - wider..=hi + wider))
                    })
                    .collect()
            };
            let build = vec![column(300, &mut rng, 0), column(300, &mut rng, 0)];
            // Probe keys beyond the build side's range must not wrap into another key's bits.
            let wider = if hi - lo < 100 { 40 } else { 2 };
            let probe = vec![column(500, &mut rng, wider), column(500, &mut rng, wider)];
            let arrays = |cols: &[Vec<Option<i64>>]| -> Vec<ArrayRef> {
                vec![
                    Arc::new(Int64Array::from(cols[0].clone())) as ArrayRef,
                    Arc::new(Int32Array::from(
                        cols[1]
                            .iter()
                            .map(|v| v.map(|x| x as i32))
                            .collect::<Vec<_>>(),
                    )) as ArrayRef,
                ]
            };
            // The second key as Int32 (its values truncated the same way on both sides).
            let truncate = |cols: &[Vec<Option<i64>>]| -> Vec<Vec<Option<i64>>> {
                vec![
                    cols[0].clone(),
                    cols[1].iter().map(|v| v.map(|x| x as i32 as i64)).collect(),
                ]
            };
            let converter = RowConverter::new(vec![
                SortField::new(DataType::Int64),
                SortField::new(DataType::Int32),
            ])
            .expect("converter");
            let table =
                JoinTable::build(&converter, &arrays(&build), &[false, false]).expect("builds");
            let mut got = pairs(&table, &converter, &arrays(&probe));
            got.sort_unstable();
            assert_eq!(
                got,
                brute(&truncate(&build), &truncate(&probe)),
                "range {lo}..{hi}"
            );
            assert_eq!(table.packing.is_some(), hi - lo < 1 << 30);
        }
    }
}
