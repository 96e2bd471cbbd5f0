//! The memory provider's map from key bytes to value bytes: one hash per operation, each
//! entry's key and value in one allocation (one cache miss to compare the key and read the
//! value), and each entry marked with the version that last changed it, so a store logs a
//! key's old value once per version without a second map of the keys it changed.

use hashbrown::HashTable;

/// Bytes of a key or value.
pub(crate) type Bytes = Box<[u8]>;

/// An entry's key and value, one after the other.
#[derive(Debug)]
pub(crate) struct Entry {
    data: Bytes,
    key_len: u32,
}

impl Entry {
    fn new(key: &[u8], value: &[u8]) -> Self {
        let mut data = Vec::with_capacity(key.len() + value.len());
        data.extend_from_slice(key);
        data.extend_from_slice(value);
        Self {
            data: data.into_boxed_slice(),
            // Keys are at most 4 GiB: the files' record format says so.
            key_len: key.len() as u32,
        }
    }

    /// Its key.
    pub(crate) fn key(&self) -> &[u8] {
        &self.data[..self.key_len as usize]
    }

    /// Its value.
    pub(crate) fn value(&self) -> &[u8] {
        &self.data[self.key_len as usize..]
    }

    fn bytes(&self) -> u64 {
        self.data.len() as u64
    }
}

#[derive(Debug)]
struct Slot {
    /// Its key's hash: growing the table and probing past other keys need not read the
    /// entry (a cache miss each).
    hash: u64,
    entry: Entry,
    /// The version being built when the entry last changed (0: read from files, or undone).
    changed_in: u64,
}

/// What a change found under its key.
pub(crate) enum Before {
    /// The key's first change in this version: its entry before (`None`: absent).
    First(Option<Entry>),
    /// The key had changed in this version already.
    Again,
}

/// Key bytes to value bytes.
#[derive(Debug, Default)]
pub(crate) struct ByteMap {
    table: HashTable<Slot>,
    hasher: foldhash::fast::FixedState,
    /// Bytes of keys and values.
    bytes: u64,
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
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The value of `key`.
    pub(crate) fn get(&self, key: &[u8]) -> Option<&[u8]> {
        let hash = hash_of(&self.hasher, key);
        self.table
            .find(hash, |s| s.hash == hash && s.entry.key() == key)
            .map(|s| s.entry.value())
    }

    /// Sets `key` to `value` as a change of version `version`.
    pub(crate) fn insert(&mut self, key: &[u8], value: &[u8], version: u64) -> Before {
        let hash = hash_of(&self.hasher, key);
        let entry = Entry::new(key, value);
        self.bytes += entry.bytes();
        match self
            .table
            .entry(hash, |s| s.hash == hash && s.entry.key() == key, |s| s.hash)
        {
            hashbrown::hash_table::Entry::Occupied(mut e) => {
                let slot = e.get_mut();
                let old = std::mem::replace(&mut slot.entry, entry);
                self.bytes -= old.bytes();
                if slot.changed_in == version {
                    Before::Again
                } else {
                    slot.changed_in = version;
                    Before::First(Some(old))
                }
            }
            hashbrown::hash_table::Entry::Vacant(e) => {
                e.insert(Slot {
                    hash,
                    entry,
                    changed_in: version,
                });
                Before::First(None)
            }
        }
    }

    /// Removes `key` as a change of version `version`: `None` when it was absent.
    pub(crate) fn remove(&mut self, key: &[u8], version: u64) -> Option<Before> {
        let hash = hash_of(&self.hasher, key);
        let e = self
            .table
            .find_entry(hash, |s| s.hash == hash && s.entry.key() == key)
            .ok()?;
        let (slot, _) = e.remove();
        self.bytes -= slot.entry.bytes();
        Some(if slot.changed_in == version {
            Before::Again
        } else {
            Before::First(Some(slot.entry))
        })
    }

    /// Puts `key` back to `old` (`None`: absent), unmarked: undoing a change, or loading a
    /// record of a file.
    pub(crate) fn restore(&mut self, key: &[u8], old: Option<Entry>) {
        let hash = hash_of(&self.hasher, key);
        if let Ok(e) = self
            .table
            .find_entry(hash, |s| s.hash == hash && s.entry.key() == key)
        {
            let (slot, _) = e.remove();
            self.bytes -= slot.entry.bytes();
        }
        if let Some(entry) = old {
            self.bytes += entry.bytes();
            self.table.insert_unique(
                hash,
                Slot {
                    hash,
                    entry,
                    changed_in: 0,
                },
                |s| s.hash,
            );
        }
    }

    /// Loads a file's record: `key` set to `value`, or removed.
    pub(crate) fn load(&mut self, key: &[u8], value: Option<&[u8]>) {
        self.restore(key, value.map(|v| Entry::new(key, v)));
    }

    /// Every entry, in no order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.table.iter().map(|s| (s.entry.key(), s.entry.value()))
    }
}
