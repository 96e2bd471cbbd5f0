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
    /// Counts changed in this batch, written to `counts` before it is read whole or
    /// committed: a key appended to many times is written once.
    pending: hashbrown::HashMap<Vec<u8>, u64>,
    rows: Box<dyn StateStore + 'a>,
    /// A stored key and value being made (kept so appends allocate nothing).
    scratch: (Vec<u8>, Vec<u8>),
}

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

fn indexed(key: &[u8], index: u64) -> Result<Vec<u8>> {
    let mut k = Vec::with_capacity(key.len() + 12);
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

fn stored(key: &[u8], value: &[u8]) -> Result<StoredRow> {
    if value.len() < HEADER {
        return Err(FerroError::Internal(format!(
            "a join state row of {} bytes",
            value.len()
        )));
    }
    let mut t = [0u8; 8];
    t.copy_from_slice(&value[2..HEADER]);
    Ok(StoredRow {
        key: key.to_vec(),
        row: value[HEADER..].to_vec(),
        time: (value[1] == 1).then(|| i64::from_be_bytes(t)),
        matched: value[0] == 1,
    })
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
            pending: hashbrown::HashMap::new(),
            rows: rows.get_store(version)?,
            scratch: (Vec::new(), Vec::new()),
        })
    }

    /// Room for `rows` more appends' counts (a batch's rows are appended one by one).
    pub fn reserve(&mut self, rows: usize) {
        self.pending.reserve(rows);
    }

    fn set_count(&mut self, key: &[u8], n: u64) {
        match self.pending.get_mut(key) {
            Some(c) => *c = n,
            None => {
                self.pending.insert(key.to_vec(), n);
            }
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

    /// Writes the pending counts to their store.
    fn flush(&mut self) -> Result<()> {
        for (k, n) in self.pending.drain() {
            if n == 0 {
                self.counts.remove(&k)?;
            } else {
                self.counts.put(&k, &n.to_be_bytes())?;
            }
        }
        Ok(())
    }

    /// Buffers `row` (whose watermarked column is `time`) under `key`.
    pub fn append(
        &mut self,
        key: &[u8],
        row: &[u8],
        time: Option<i64>,
        matched: bool,
    ) -> Result<()> {
        let n = match self.pending.entry_ref(key) {
            hashbrown::hash_map::EntryRef::Occupied(e) => e.into_mut(),
            hashbrown::hash_map::EntryRef::Vacant(e) => {
                e.insert(count_of(self.counts.get(key)?.as_deref()))
            }
        };
        let index = *n;
        *n += 1;
        self.put_row(key, index, row, time, matched)
    }

    /// The rows of `key`, by index: a point lookup each, up to the first index with none
    /// (a key's indexes are `0..n`), as Spark's state manager reads them, so no store needs to
    /// be ordered and a probe reads one store, not the count's too.
    pub fn get(&self, key: &[u8]) -> Result<Vec<StoredRow>> {
        let mut out = Vec::new();
        let mut k = indexed(key, 0)?;
        let at = k.len() - 8;
        for i in 0u64.. {
            k[at..].copy_from_slice(&i.to_be_bytes());
            match self.rows.get(&k)? {
                Some(v) => out.push(stored(key, &v)?),
                None => break,
            }
        }
        Ok(out)
    }

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

    /// Marks `row` (index `index` of its key, as [`Self::get`] gave it) matched.
    pub fn mark_matched(&mut self, row: &StoredRow, index: u64) -> Result<()> {
        if !row.matched {
            self.put_row(&row.key, index, &row.row, row.time, true)?;
        }
        Ok(())
    }

    /// Every key with buffered rows, in key order (what is evicted leaves in that order).
    pub fn keys(&mut self) -> Result<Vec<Vec<u8>>> {
        self.flush()?;
        let mut keys = Vec::new();
        self.counts.for_each(&mut |k, _| {
            keys.push(k.to_vec());
            Ok(true)
        })?;
        keys.sort_unstable();
        Ok(keys)
    }

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
            self.set_count(key, 0);
            removed.extend(rows);
        }
        Ok(removed)
    }

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
        self.set_count(key, kept);
        Ok(())
    }

    /// Removes each row whose event time is at or below `bound` (microseconds): Spark's
    /// state value watermark predicate. One pass over the rows reads only their stored
    /// times; only the keys with such rows are then compacted, in key order. The rows
    /// removed.
    pub fn remove_older(&mut self, bound: i64) -> Result<Vec<StoredRow>> {
        let mut keys: Vec<Vec<u8>> = Vec::new();
        self.rows.for_each(&mut |k, v| {
            let old = v.len() >= HEADER
                && v[1] == 1
                && v[2..HEADER]
                    .try_into()
                    .map(i64::from_be_bytes)
                    .is_ok_and(|t| t <= bound);
            if old {
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
    pub fn num_rows(&mut self) -> Result<u64> {
        self.flush()?;
        let mut n = 0;
        self.counts.for_each(&mut |_, v| {
            n += count_of(Some(v));
            Ok(true)
        })?;
        Ok(n)
    }

    /// Commits both stores: the new version.
    pub fn commit(&mut self) -> Result<u64> {
        self.flush()?;
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
        self.pending.clear();
        self.counts.abort();
        self.rows.abort();
    }
}
