//! One side's state of a stream-stream join, as Spark's `SymmetricHashJoinStateManager`: a
//! multi-map from join key to the side's buffered rows, kept in two state stores.
//!
//! ```text
//!   <side>-keyToNumValues       key            -> n (u64)
//!   <side>-keyWithIndexToValue  key ++ index   -> matched (u8) ++ time ++ row   index in 0..n
//! ```
//! `time` is the row's watermarked column (a flag byte, then microseconds as a big-endian
//! i64) kept beside the encoded row so evicting by value reads it without decoding the row.
//! A row is appended at index `n`. Removing rows by a condition on their values moves the
//! key's last row into each hole, so a key's indexes stay `0..n` (Spark's compaction). Keys
//! and rows are bytes: the operator encodes Arrow rows (`arrow-row`).

use ferrospark_common::{FerroError, Result};

use crate::state::{StateStore, StateStoreProvider};

/// Which input of the join a state belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinSide {
    /// The left input.
    Left,
    /// The right input.
    Right,
}

impl JoinSide {
    /// Spark's names of the side's two stores.
    pub fn store_names(self) -> [&'static str; 2] {
        match self {
            JoinSide::Left => ["left-keyToNumValues", "left-keyWithIndexToValue"],
            JoinSide::Right => ["right-keyToNumValues", "right-keyWithIndexToValue"],
        }
    }
}

/// A buffered row of a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRow {
    /// Its join key.
    pub key: Vec<u8>,
    /// The row.
    pub row: Vec<u8>,
    /// Its watermarked column's value (microseconds), when it has one and it is not NULL.
    pub time: Option<i64>,
    /// Whether it has joined with a row of the other side (what an outer join needs to know
    /// when the row leaves the state).
    pub matched: bool,
}

/// One side's buffered rows at one version, being changed into the next.
pub struct JoinStateManager<'a> {
    counts: Box<dyn StateStore + 'a>,
    rows: Box<dyn StateStore + 'a>,
    /// A stored key and value being made (kept so appends allocate nothing).
    scratch: (Vec<u8>, Vec<u8>),
}

/// Bytes a stored row key adds to its join key: the key's length (u32) and the index (u64).
const INDEXED: usize = 4 + 8;

/// Appends the stored key of `key`'s row `index` to `out`: the key's length, the key, the
/// index.
fn put_indexed(out: &mut Vec<u8>, key: &[u8], index: u64) -> Result<()> {
    let len = u32::try_from(key.len())
        .map_err(|_| FerroError::Unsupported(format!("a join key of {} bytes", key.len())))?;
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(&index.to_be_bytes());
    Ok(())
}

/// A row to buffer ([`JoinStateManager::append_all`]), or to store again.
#[derive(Debug, Clone, Copy)]
pub struct Append<'a> {
    /// Its join key.
    pub key: &'a [u8],
    /// The row.
    pub row: &'a [u8],
    /// Its watermarked column's value.
    pub time: Option<i64>,
    /// Whether it has joined already.
    pub matched: bool,
}

/// A probe's partners: the stored rows each probing row found, their bytes one after
/// another (filled by [`JoinStateManager::probe_all`] with no allocation per row).
#[derive(Debug, Default)]
pub struct Partners {
    bytes: Vec<u8>,
    found: Vec<Partner>,
}

/// A stored row a probe found.
#[derive(Debug, Clone, Copy)]
pub struct Partner {
    /// The probing row (of the batch) that found it.
    pub probe_row: u32,
    /// Its index under the key.
    pub index: u64,
    /// Whether it had joined before.
    pub matched: bool,
    /// Its watermarked column's value.
    pub time: Option<i64>,
    /// Where its bytes end.
    end: usize,
}

impl Partners {
    /// Forgets every row found, keeping the memory.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.found.clear();
    }

    /// Rows found.
    pub fn len(&self) -> usize {
        self.found.len()
    }

    /// Whether none was found.
    pub fn is_empty(&self) -> bool {
        self.found.is_empty()
    }

    /// The rows found, in the order found.
    pub fn iter(&self) -> impl Iterator<Item = &Partner> {
        self.found.iter()
    }

    /// The bytes of the `i`th row found.
    pub fn row(&self, i: usize) -> &[u8] {
        let start = i.checked_sub(1).map_or(0, |p| self.found[p].end);
        &self.bytes[start..self.found[i].end]
    }

    /// The bytes of every row found, in order.
    pub fn rows(&self) -> impl Iterator<Item = &[u8]> {
        (0..self.found.len()).map(|i| self.row(i))
    }
}

fn indexed(key: &[u8], index: u64) -> Result<Vec<u8>> {
    let mut k = Vec::with_capacity(key.len() + INDEXED);
    put_indexed(&mut k, key, index)?;
    Ok(k)
}

fn count_of(v: Option<&[u8]>) -> u64 {
    v.and_then(|b| b.try_into().ok())
        .map(u64::from_be_bytes)
        .unwrap_or(0)
}

/// Bytes before the row in a stored value: matched, has time, time.
const HEADER: usize = 10;

/// Rows [`JoinStateManager::append_all`] stores at a time: enough for a run's lookups to
/// overlap their cache misses, few enough that the run's keys stay in cache until its puts.
pub(crate) const APPEND_RUN: usize = 2048;

/// Stored keys (and values) made for a batch of lookups or puts, one after another.
#[derive(Debug, Default)]
struct Encoded {
    keys: Vec<u8>,
    values: Vec<u8>,
    /// Where each key and value ends.
    ends: Vec<(usize, usize)>,
}

impl Encoded {
    /// Drops every key and value, keeping the memory.
    fn clear(&mut self) {
        self.keys.clear();
        self.values.clear();
        self.ends.clear();
    }

    /// Room for `n` stored keys of `key_bytes` join-key bytes in all, and values of
    /// `row_bytes` row bytes in all (a batch's buffers grow once, not by doubling).
    fn with_capacity(n: usize, key_bytes: usize, row_bytes: usize) -> Self {
        Self {
            keys: Vec::with_capacity(key_bytes + n * INDEXED),
            values: Vec::with_capacity(if row_bytes == 0 {
                0
            } else {
                row_bytes + n * HEADER
            }),
            ends: Vec::with_capacity(n),
        }
    }

    /// Adds the stored key of `key`'s row `index` (to look it up).
    fn push_key(&mut self, key: &[u8], index: u64) -> Result<()> {
        put_indexed(&mut self.keys, key, index)?;
        self.ends.push((self.keys.len(), self.values.len()));
        Ok(())
    }

    /// Adds `row` as its key's row `index`: its stored key and value.
    fn push_row(&mut self, index: u64, row: &Append<'_>) -> Result<()> {
        put_indexed(&mut self.keys, row.key, index)?;
        put_encoded(&mut self.values, row.row, row.time, row.matched);
        self.ends.push((self.keys.len(), self.values.len()));
        Ok(())
    }

    /// Each stored key and its value (empty when none was given).
    fn entries(&self) -> Vec<(&[u8], &[u8])> {
        let mut start = (0, 0);
        self.ends
            .iter()
            .map(|&(k, v)| {
                let e = (&self.keys[start.0..k], &self.values[start.1..v]);
                start = (k, v);
                e
            })
            .collect()
    }

    /// Each stored key.
    fn keys(&self) -> Vec<&[u8]> {
        let mut start = 0;
        self.ends
            .iter()
            .map(|&(k, _)| {
                let key = &self.keys[start..k];
                start = k;
                key
            })
            .collect()
    }
}

/// A stored value's parts: matched, time, row.
fn parsed(value: &[u8]) -> Result<(bool, Option<i64>, &[u8])> {
    if value.len() < HEADER {
        return Err(FerroError::Internal(format!(
            "a join state row of {} bytes",
            value.len()
        )));
    }
    let mut t = [0u8; 8];
    t.copy_from_slice(&value[2..HEADER]);
    Ok((
        value[0] == 1,
        (value[1] == 1).then(|| i64::from_be_bytes(t)),
        &value[HEADER..],
    ))
}

/// Appends the stored value of `row` to `out`.
fn put_encoded(out: &mut Vec<u8>, row: &[u8], time: Option<i64>, matched: bool) {
    out.push(u8::from(matched));
    out.push(u8::from(time.is_some()));
    out.extend_from_slice(&time.unwrap_or(0).to_be_bytes());
    out.extend_from_slice(row);
}

impl<'a> JoinStateManager<'a> {
    /// The side's state at `version`, from its two stores' providers.
    pub fn open(
        counts: &'a mut dyn StateStoreProvider,
        rows: &'a mut dyn StateStoreProvider,
        version: u64,
    ) -> Result<Self> {
        Ok(Self {
            counts: counts.get_store(version)?,
            rows: rows.get_store(version)?,
            scratch: (Vec::new(), Vec::new()),
        })
    }

    fn set_count(&mut self, key: &[u8], n: u64) -> Result<()> {
        if n == 0 {
            self.counts.remove(key)
        } else {
            self.counts.put(key, &n.to_be_bytes())
        }
    }

    /// Stores `row` as index `index` of `key` (the stored key and value made in scratch
    /// buffers, so nothing is allocated).
    fn put_row(
        &mut self,
        key: &[u8],
        index: u64,
        row: &[u8],
        time: Option<i64>,
        matched: bool,
    ) -> Result<()> {
        let (k, v) = &mut self.scratch;
        k.clear();
        put_indexed(k, key, index)?;
        v.clear();
        put_encoded(v, row, time, matched);
        self.rows.put(k, v)
    }

    /// Buffers each of `rows` under its key, in order: each key's count read and put back
    /// one more, the row put at that index, as Spark's state manager appends. The rows go
    /// in runs of 2048 (`APPEND_RUN`): a run's counts are read and put back together
    /// ([`StateStore::update_many`], one lookup each in memory, a key twice in the run
    /// counted on from its first), then its rows put together ([`StateStore::put_many`]),
    /// so what a run needs is small and made again in the same memory.
    pub fn append_all(&mut self, rows: &[Append<'_>]) -> Result<()> {
        let mut indexes: Vec<u64> = Vec::new();
        let mut stored = Encoded::default();
        let mut keys: Vec<&[u8]> = Vec::new();
        for run in rows.chunks(APPEND_RUN) {
            keys.clear();
            keys.extend(run.iter().map(|a| a.key));
            indexes.clear();
            indexes.resize(run.len(), 0);
            self.counts.update_many(&keys, &mut |i, old, new| {
                let n = count_of(old);
                indexes[i] = n;
                new.extend_from_slice(&(n + 1).to_be_bytes());
                Ok(())
            })?;
            stored.clear();
            for (a, &index) in run.iter().zip(&indexes) {
                stored.push_row(index, a)?;
            }
            self.rows.put_many(&stored.entries())?;
        }
        Ok(())
    }

    #[cfg(test)]
    /// Buffers `row` (whose watermarked column is `time`) under `key`.
    pub fn append(
        &mut self,
        key: &[u8],
        row: &[u8],
        time: Option<i64>,
        matched: bool,
    ) -> Result<()> {
        self.append_all(&[Append {
            key,
            row,
            time,
            matched,
        }])
    }

    /// The rows of `key`, by index.
    pub fn get(&mut self, key: &[u8]) -> Result<Vec<StoredRow>> {
        let mut partners = Partners::default();
        self.probe_all(&[(0, key)], &mut partners)?;
        Ok(partners
            .iter()
            .enumerate()
            .map(|(i, p)| StoredRow {
                key: key.to_vec(),
                row: partners.row(i).to_vec(),
                time: p.time,
                matched: p.matched,
            })
            .collect())
    }

    /// Adds the rows of each probe's key to `out` as partners of its row, in the order of
    /// the probes, then of the rows' indexes. A key's rows are read by point lookups at
    /// index 0, 1, ... up to the first index with none (a key's indexes are `0..n`), as
    /// Spark's state manager reads them, so no store needs to be ordered and a probe reads
    /// one store, not the count's too. All keys' rows at index 0 are looked up together,
    /// then those at index 1 of the keys that had a row 0, and so on
    /// ([`StateStore::get_many`]).
    pub fn probe_all(&mut self, probes: &[(u32, &[u8])], out: &mut Partners) -> Result<()> {
        // (probe, index, where its bytes start and end in `bytes`, matched, time)
        let mut found: Vec<(usize, u64, usize, usize, bool, Option<i64>)> = Vec::new();
        let mut bytes = Vec::new();
        let mut pending: Vec<usize> = (0..probes.len()).collect();
        for index in 0u64.. {
            if pending.is_empty() {
                break;
            }
            let mut lookups = Encoded::with_capacity(
                pending.len(),
                pending.iter().map(|&p| probes[p].1.len()).sum(),
                0,
            );
            for &p in &pending {
                lookups.push_key(probes[p].1, index)?;
            }
            let mut hits = Vec::new();
            self.rows.get_many(&lookups.keys(), &mut |i, v| {
                let (matched, time, row) = parsed(v)?;
                let start = bytes.len();
                bytes.extend_from_slice(row);
                found.push((pending[i], index, start, bytes.len(), matched, time));
                hits.push(pending[i]);
                Ok(())
            })?;
            pending = hits;
        }
        // Found in probe order already unless some key had a second row: then the rows are
        // put in order, and only then their bytes copied again.
        let in_order = found.is_sorted_by_key(|f| (f.0, f.1));
        if !in_order {
            found.sort_unstable_by_key(|f| (f.0, f.1));
        }
        let base = out.bytes.len();
        out.bytes.reserve(bytes.len());
        out.found.reserve(found.len());
        if in_order {
            out.bytes.extend_from_slice(&bytes);
        }
        for (p, index, start, end, matched, time) in found {
            if !in_order {
                out.bytes.extend_from_slice(&bytes[start..end]);
            }
            out.found.push(Partner {
                probe_row: probes[p].0,
                index,
                matched,
                time,
                end: if in_order {
                    base + end
                } else {
                    out.bytes.len()
                },
            });
        }
        Ok(())
    }

    #[cfg(test)]
    /// The rows of `key` that `joins` accepts (skipping matched ones when
    /// `exclude_matched`), each marked matched: Spark's `getJoinedRows`.
    pub fn join_with(
        &mut self,
        key: &[u8],
        exclude_matched: bool,
        joins: &mut dyn FnMut(&[u8]) -> Result<bool>,
    ) -> Result<Vec<Vec<u8>>> {
        let rows = self.get(key)?;
        let mut out = Vec::new();
        for (i, r) in rows.into_iter().enumerate() {
            if !(exclude_matched && r.matched) && joins(&r.row)? {
                self.mark_matched(&r, i as u64)?;
                out.push(r.row);
            }
        }
        Ok(out)
    }

    #[cfg(test)]
    /// Marks `row` (index `index` of its key, as [`Self::get`] gave it) matched.
    pub fn mark_matched(&mut self, row: &StoredRow, index: u64) -> Result<()> {
        if !row.matched {
            self.put_row(&row.key, index, &row.row, row.time, true)?;
        }
        Ok(())
    }

    /// Marks each `(key, i)` of `marks` matched: partner `i` of `partners`, stored under
    /// `key` (the caller knows it was not), the rows put together
    /// ([`StateStore::put_many`]).
    pub fn mark_partners(&mut self, marks: &[(&[u8], usize)], partners: &Partners) -> Result<()> {
        let mut stored = Encoded::with_capacity(
            marks.len(),
            marks.iter().map(|(k, _)| k.len()).sum(),
            marks.iter().map(|&(_, i)| partners.row(i).len()).sum(),
        );
        for &(key, i) in marks {
            let p = &partners.found[i];
            let row = Append {
                key,
                row: partners.row(i),
                time: p.time,
                matched: true,
            };
            stored.push_row(p.index, &row)?;
        }
        self.rows.put_many(&stored.entries())
    }

    /// Every key with buffered rows, in key order (what is evicted leaves in that order).
    pub fn keys(&self) -> Result<Vec<Vec<u8>>> {
        let mut keys = Vec::new();
        self.counts.for_each(&mut |k, _| {
            keys.push(k.to_vec());
            Ok(true)
        })?;
        keys.sort_unstable();
        Ok(keys)
    }

    #[cfg(test)]
    /// Removes every row of each key `condition` holds for (Spark's state key watermark
    /// predicate); the rows removed.
    pub fn remove_by_key(
        &mut self,
        condition: &mut dyn FnMut(&[u8]) -> Result<bool>,
    ) -> Result<Vec<StoredRow>> {
        let mut gone = Vec::new();
        for key in self.keys()? {
            if condition(&key)? {
                gone.push(key);
            }
        }
        self.remove_keys(&gone)
    }

    /// Removes every row of `keys`, in their order; the rows removed.
    pub fn remove_keys(&mut self, keys: &[Vec<u8>]) -> Result<Vec<StoredRow>> {
        let mut removed = Vec::new();
        for key in keys {
            let rows = self.get(key)?;
            for i in 0..rows.len() {
                self.rows.remove(&indexed(key, i as u64)?)?;
            }
            self.set_count(key, 0)?;
            removed.extend(rows);
        }
        Ok(removed)
    }

    #[cfg(test)]
    /// Removes each row `condition` holds for (Spark's state value watermark predicate),
    /// compacting the key's other rows; the rows removed.
    pub fn remove_by_value(
        &mut self,
        condition: &mut dyn FnMut(&StoredRow) -> Result<bool>,
    ) -> Result<Vec<StoredRow>> {
        let mut removed = Vec::new();
        for key in self.keys()? {
            self.compact(&key, condition, &mut removed)?;
        }
        Ok(removed)
    }

    /// Removes the rows of `key` that `gone` holds for into `removed`, the key's other rows
    /// moved down so its indexes stay `0..n`.
    fn compact(
        &mut self,
        key: &[u8],
        gone: &mut dyn FnMut(&StoredRow) -> Result<bool>,
        removed: &mut Vec<StoredRow>,
    ) -> Result<()> {
        let rows = self.get(key)?;
        let before = rows.len();
        let mut kept = 0u64;
        for (i, r) in rows.into_iter().enumerate() {
            if gone(&r)? {
                removed.push(r);
                continue;
            }
            // Only a row with a removed one before it moves down.
            if kept != i as u64 {
                self.put_row(key, kept, &r.row, r.time, r.matched)?;
            }
            kept += 1;
        }
        if kept == before as u64 {
            return Ok(());
        }
        for i in kept..before as u64 {
            self.rows.remove(&indexed(key, i)?)?;
        }
        self.set_count(key, kept)
    }

    /// Removes each row whose event time is at or below `bound` (microseconds): Spark's
    /// state value watermark predicate. One pass over the rows reads only their stored
    /// times; only the keys with such rows are then compacted, in key order. The rows
    /// removed.
    pub fn remove_older(&mut self, bound: i64) -> Result<Vec<StoredRow>> {
        let mut keys: Vec<Vec<u8>> = Vec::new();
        self.rows.for_each(&mut |k, v| {
            let (_, time, _) = parsed(v)?;
            if time.is_some_and(|t| t <= bound) {
                // The stored key: its length, the key, the index.
                let key = k.get(4..k.len().saturating_sub(8)).unwrap_or_default();
                keys.push(key.to_vec());
            }
            Ok(true)
        })?;
        keys.sort_unstable();
        keys.dedup();
        let mut removed = Vec::new();
        for key in keys {
            self.compact(
                &key,
                &mut |r| Ok(r.time.is_some_and(|t| t <= bound)),
                &mut removed,
            )?;
        }
        Ok(removed)
    }

    /// Rows buffered, over all keys.
    pub fn num_rows(&self) -> Result<u64> {
        let mut n = 0;
        self.counts.for_each(&mut |_, v| {
            n += count_of(Some(v));
            Ok(true)
        })?;
        Ok(n)
    }

    /// Commits both stores: the new version.
    pub fn commit(&mut self) -> Result<u64> {
        let v = self.counts.commit()?;
        let w = self.rows.commit()?;
        if v != w {
            return Err(FerroError::Internal(format!(
                "join state stores committed versions {v} and {w}"
            )));
        }
        Ok(v)
    }

    /// Drops the changes of both stores.
    pub fn abort(&mut self) {
        self.counts.abort();
        self.rows.abort();
    }
}
