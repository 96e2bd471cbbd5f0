//! The memory provider's map from key bytes to value bytes: a hash table of 16-byte slots
//! (a key's hash and where its entry is) over an arena of entries written one after another.
//!
//! Why an arena rather than an allocation per entry: a join batch at a million rows puts
//! millions of small entries, and the time goes to cache and TLB misses. Slots of 16 bytes
//! (not a boxed entry's 40) make the table 2.5x smaller; entries packed in 4 MiB chunks
//! cost no allocator call and no allocator rounding, and a scan of every entry (an
//! eviction, a snapshot) reads memory in order instead of chasing a pointer per entry.
//!
//! ```text
//!   slot:   hash u64 | place u64 (chunk << 32 | offset)
//!   entry:  changed_in u64 (top bit: dead) | key_len u32 | value_len u32 | key | value
//! ```
//! A put writes a new entry and marks the one it replaces dead, unless that one was written in the
//! same version and is as long (a join row marked matched in the batch that stored it): then it is
//! overwritten where it is. A remove marks its entry dead. Dead entries stay until the map is
//! compacted, which is only done between stores ([`ByteMap::compact_if_wasteful`]), so an open
//! store's undo log can point at the entries it replaced. Each entry is marked with the version
//! that wrote it, so a store logs a key's old value once per version without a second map of the
//! keys it changed.

use hashbrown::HashTable;

/// Bytes of a key or value.
pub(crate) type Bytes = Box<[u8]>;

/// Where an entry is in the arena (kept by a store's undo log to put a replaced value back).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry(u64);

#[derive(Debug, Clone, Copy)]
struct Slot {
    /// Its key's hash: growing the table and probing past other keys need not read the
    /// entry.
    hash: u64,
    place: Entry,
}

/// What a change found under its key.
pub(crate) enum Before {
    /// The key's first change in this version.
    First {
        /// Its entry before (`None`: absent).
        old: Option<Entry>,
        /// An entry holding the key's bytes until the map is next compacted (what an undo
        /// log keeps to find the key again: [`ByteMap::key_of`]).
        key: Entry,
    },
    /// The key had changed in this version already.
    Again,
}

/// Bytes of an entry's header: changed_in, key length, value length.
const HEADER: usize = 16;
/// The top bit of `changed_in`: the entry is no longer the map's.
const DEAD: u64 = 1 << 63;
/// Bytes of an arena chunk (an entry larger than this gets a chunk of its own).
const CHUNK: usize = 4 << 20;

/// An entry's header: changed_in (with the dead bit), key length, value length.
fn parse_header(h: &[u8]) -> (u64, usize, usize) {
    let mut w = [0u8; 8];
    w.copy_from_slice(&h[..8]);
    let mut k = [0u8; 4];
    k.copy_from_slice(&h[8..12]);
    let mut v = [0u8; 4];
    v.copy_from_slice(&h[12..16]);
    (
        u64::from_le_bytes(w),
        u32::from_le_bytes(k) as usize,
        u32::from_le_bytes(v) as usize,
    )
}

/// A place in the arena: entries written after it are found from it ([`ByteMap::mark`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Mark {
    chunk: usize,
    offset: usize,
}

/// Entries, one after another, in chunks that never move.
#[derive(Debug, Default)]
struct Arena {
    chunks: Vec<Vec<u8>>,
    /// Bytes of the entries written, live and dead (a chunk's pages are touched as it fills).
    used: u64,
}

impl Arena {
    fn push(&mut self, changed_in: u64, key: &[u8], value: &[u8]) -> Entry {
        let need = HEADER + key.len() + value.len();
        if self
            .chunks
            .last()
            .is_none_or(|c| c.capacity() - c.len() < need)
        {
            self.chunks.push(Vec::with_capacity(CHUNK.max(need)));
        }
        let chunk = self.chunks.len() - 1;
        self.used += need as u64;
        let c = &mut self.chunks[chunk];
        let offset = c.len();
        c.extend_from_slice(&changed_in.to_le_bytes());
        // Keys and values are at most 4 GiB: the files' record format says so.
        c.extend_from_slice(&(key.len() as u32).to_le_bytes());
        c.extend_from_slice(&(value.len() as u32).to_le_bytes());
        c.extend_from_slice(key);
        c.extend_from_slice(value);
        Entry(((chunk as u64) << 32) | offset as u64)
    }

    fn header(&self, e: Entry) -> (u64, usize, usize) {
        let c = &self.chunks[(e.0 >> 32) as usize];
        let at = (e.0 & u64::from(u32::MAX)) as usize;
        parse_header(&c[at..at + HEADER])
    }

    /// The entry's key and value.
    fn get(&self, e: Entry) -> (&[u8], &[u8]) {
        let (_, k, v) = self.header(e);
        let c = &self.chunks[(e.0 >> 32) as usize];
        let at = (e.0 & u64::from(u32::MAX)) as usize + HEADER;
        (&c[at..at + k], &c[at + k..at + k + v])
    }

    /// Writes `value` over the value of `e`, which is as long.
    fn overwrite_value(&mut self, e: Entry, value: &[u8]) {
        let (_, k, v) = self.header(e);
        debug_assert_eq!(v, value.len());
        let at = (e.0 & u64::from(u32::MAX)) as usize + HEADER + k;
        self.chunks[(e.0 >> 32) as usize][at..at + v].copy_from_slice(value);
    }

    fn key(&self, e: Entry) -> &[u8] {
        self.get(e).0
    }

    fn changed_in(&self, e: Entry) -> u64 {
        self.header(e).0 & !DEAD
    }

    fn set_changed_in(&mut self, e: Entry, word: u64) {
        let at = (e.0 & u64::from(u32::MAX)) as usize;
        self.chunks[(e.0 >> 32) as usize][at..at + 8].copy_from_slice(&word.to_le_bytes());
    }

    /// Where the next entry will be written.
    fn end(&self) -> Mark {
        Mark {
            chunk: self.chunks.len().saturating_sub(1),
            offset: self.chunks.last().map_or(0, Vec::len),
        }
    }

    /// Every entry not marked dead, in the order written.
    fn live(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.live_since(Mark::default())
    }

    /// Every entry written at or after `mark` not marked dead, in the order written.
    fn live_since(&self, mark: Mark) -> impl Iterator<Item = (&[u8], &[u8])> {
        let chunks = self.chunks.get(mark.chunk..).unwrap_or_default();
        chunks.iter().enumerate().flat_map(move |(i, c)| {
            let mut at = if i == 0 { mark.offset } else { 0 };
            std::iter::from_fn(move || {
                while at + HEADER <= c.len() {
                    let (word, k, v) = parse_header(&c[at..at + HEADER]);
                    let dead = word & DEAD != 0;
                    let start = at + HEADER;
                    at = start + k + v;
                    if !dead {
                        return Some((&c[start..start + k], &c[start + k..start + k + v]));
                    }
                }
                None
            })
        })
    }
}

/// Key bytes to value bytes.
#[derive(Debug, Default)]
pub(crate) struct ByteMap {
    table: HashTable<Slot>,
    arena: Arena,
    hasher: foldhash::fast::FixedState,
    /// Bytes of the keys and values in the map.
    bytes: u64,
    /// Bytes of the arena's dead entries.
    dead: u64,
}

fn hash_of(hasher: &foldhash::fast::FixedState, key: &[u8]) -> u64 {
    use std::hash::BuildHasher;
    hasher.hash_one(key)
}

impl ByteMap {
    /// Entries.
    pub(crate) fn len(&self) -> usize {
        self.table.len()
    }

    /// Bytes of keys and values.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Bytes it holds in memory: its arena's entries, live and dead, with their headers, and
    /// its table's slots (16 bytes and a control byte each).
    pub(crate) fn footprint(&self) -> u64 {
        self.arena.used + (self.table.capacity() * (std::mem::size_of::<Slot>() + 1)) as u64
    }

    /// The value of `key`.
    pub(crate) fn get(&self, key: &[u8]) -> Option<&[u8]> {
        let hash = hash_of(&self.hasher, key);
        let arena = &self.arena;
        self.table
            .find(hash, |s| s.hash == hash && arena.key(s.place) == key)
            .map(|s| arena.get(s.place).1)
    }

    /// Where each of `keys` is (`None`: absent). The hashes are made first and the lookups
    /// then run in a loop of their own, so the processor has several lookups' cache misses
    /// in flight at once rather than one lookup's after another's.
    pub(crate) fn find_many(&self, keys: &[&[u8]]) -> Vec<Option<Entry>> {
        let hashes = self.hashes(keys);
        self.find_hashed(keys, &hashes)
    }

    /// The hash of `key`, for [`Self::insert_hashed`].
    pub(crate) fn hash(&self, key: &[u8]) -> u64 {
        hash_of(&self.hasher, key)
    }

    /// The hash of each of `keys`, for [`Self::find_hashed`] and [`Self::insert_hashed`].
    pub(crate) fn hashes(&self, keys: &[&[u8]]) -> Vec<u64> {
        keys.iter().map(|k| self.hash(k)).collect()
    }

    /// Where each of `keys` is, their `hashes` made already.
    pub(crate) fn find_hashed(&self, keys: &[&[u8]], hashes: &[u64]) -> Vec<Option<Entry>> {
        let arena = &self.arena;
        keys.iter()
            .zip(hashes)
            .map(|(key, &hash)| {
                self.table
                    .find(hash, |s| s.hash == hash && arena.key(s.place) == *key)
                    .map(|s| s.place)
            })
            .collect()
    }

    /// The key of the entry at `e` (live or dead: the arena keeps both until compacted).
    pub(crate) fn key_of(&self, e: Entry) -> &[u8] {
        self.arena.key(e)
    }

    /// The value at `e`.
    pub(crate) fn value(&self, e: Entry) -> &[u8] {
        self.arena.get(e).1
    }

    /// Marks `e` dead, out of the map's bytes.
    fn kill(&mut self, e: Entry) {
        let (word, k, v) = self.arena.header(e);
        self.arena.set_changed_in(e, word | DEAD);
        self.dead += (HEADER + k + v) as u64;
        self.bytes -= (k + v) as u64;
    }

    /// Marks `e` live (as read from files: changed in no version), in the map's bytes.
    fn revive(&mut self, e: Entry) {
        self.arena.set_changed_in(e, 0);
        let (_, k, v) = self.arena.header(e);
        self.dead -= (HEADER + k + v) as u64;
        self.bytes += (k + v) as u64;
    }

    /// Sets `key` to `value` as a change of version `version`.
    pub(crate) fn insert(&mut self, key: &[u8], value: &[u8], version: u64) -> Before {
        self.insert_hashed(self.hash(key), key, value, version)
    }

    /// [`Self::insert`] of a key whose hash ([`Self::hashes`]) is `hash`.
    pub(crate) fn insert_hashed(
        &mut self,
        hash: u64,
        key: &[u8],
        value: &[u8],
        version: u64,
    ) -> Before {
        match self.upsert_hashed::<std::convert::Infallible>(hash, key, version, |_| Ok(value)) {
            Ok(before) => before,
            Err(never) => match never {},
        }
    }

    /// Sets `key` (of `hash`) to the value `make` returns given its value (`None`: absent)
    /// as a change of version `version`, with one lookup; what it replaced. When `make`
    /// fails nothing is changed.
    pub(crate) fn upsert_hashed<'v, E>(
        &mut self,
        hash: u64,
        key: &[u8],
        version: u64,
        make: impl FnOnce(Option<&[u8]>) -> Result<&'v [u8], E>,
    ) -> Result<Before, E> {
        let arena = &self.arena;
        let old = match self.table.entry(
            hash,
            |s| s.hash == hash && arena.key(s.place) == key,
            |s| s.hash,
        ) {
            hashbrown::hash_table::Entry::Occupied(mut e) => {
                let old = e.get().place;
                let (word, _, len) = self.arena.header(old);
                let value = make(Some(self.arena.get(old).1))?;
                // Written in this version already and the same size: overwritten where it
                // is (nothing before this version points at it; the undo log holds the
                // entry it replaced).
                if word == version && len == value.len() {
                    self.arena.overwrite_value(old, value);
                    return Ok(Before::Again);
                }
                let place = self.arena.push(version, key, value);
                e.get_mut().place = place;
                self.bytes += (key.len() + value.len()) as u64;
                old
            }
            hashbrown::hash_table::Entry::Vacant(e) => {
                let value = make(None)?;
                let place = self.arena.push(version, key, value);
                e.insert(Slot { hash, place });
                self.bytes += (key.len() + value.len()) as u64;
                return Ok(Before::First {
                    old: None,
                    key: place,
                });
            }
        };
        let again = self.arena.changed_in(old) == version;
        self.kill(old);
        Ok(if again {
            Before::Again
        } else {
            Before::First {
                old: Some(old),
                key: old,
            }
        })
    }

    /// Takes `key`'s entry out of the table (not killed): where it was.
    fn unlink(&mut self, hash: u64, key: &[u8]) -> Option<Entry> {
        let arena = &self.arena;
        let e = self
            .table
            .find_entry(hash, |s| s.hash == hash && arena.key(s.place) == key)
            .ok()?;
        Some(e.remove().0.place)
    }

    /// Removes `key` as a change of version `version`: what it replaced and the entry that
    /// held it (which keeps the key's bytes until the map is compacted); `None` when it was
    /// absent.
    pub(crate) fn remove(&mut self, key: &[u8], version: u64) -> Option<(Before, Entry)> {
        let hash = hash_of(&self.hasher, key);
        let place = self.unlink(hash, key)?;
        let again = self.arena.changed_in(place) == version;
        self.kill(place);
        let before = if again {
            Before::Again
        } else {
            Before::First {
                old: Some(place),
                key: place,
            }
        };
        Some((before, place))
    }

    /// Puts `key` back to `old` (`None`: absent), unmarked: undoing a change.
    pub(crate) fn restore(&mut self, key: &[u8], old: Option<Entry>) {
        let hash = hash_of(&self.hasher, key);
        if let Some(now) = self.unlink(hash, key) {
            self.kill(now);
        }
        if let Some(place) = old {
            self.revive(place);
            self.table
                .insert_unique(hash, Slot { hash, place }, |s| s.hash);
        }
    }

    /// Loads a file's record: `key` set to `value`, or removed (as changed in no version).
    pub(crate) fn load(&mut self, key: &[u8], value: Option<&[u8]>) {
        match value {
            Some(v) => {
                self.insert(key, v, 0);
            }
            None => {
                self.remove(key, 0);
            }
        }
    }

    /// Where the arena ends now: the entries written after it are [`Self::live_since`]'s.
    pub(crate) fn mark(&self) -> Mark {
        self.arena.end()
    }

    /// The entries written since `mark` that are still the map's, in the order written: a
    /// version's puts, each key once, with its value as last changed (an entry replaced in
    /// the version is dead, one overwritten in place holds the new value). Valid while the
    /// map is not compacted.
    pub(crate) fn live_since(&self, mark: Mark) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.arena.live_since(mark)
    }

    /// Every entry, in no order (the order written: a scan reads memory in order).
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.arena.live()
    }

    /// Rewrites the arena without its dead entries once they outweigh the live ones. Only
    /// between stores: an open store's undo log points at dead entries.
    pub(crate) fn compact_if_wasteful(&mut self) {
        let live = self.bytes + (HEADER * self.table.len()) as u64;
        if self.dead >= (CHUNK as u64).max(live) {
            self.compact();
        }
    }

    /// Rewrites the arena without its dead entries.
    pub(crate) fn compact(&mut self) {
        let mut fresh = Arena::default();
        for slot in self.table.iter_mut() {
            let (k, v) = self.arena.get(slot.place);
            let changed_in = self.arena.changed_in(slot.place);
            slot.place = fresh.push(changed_in, k, v);
        }
        self.arena = fresh;
        self.dead = 0;
    }
}
