//! One string or binary key: the bytes of every group back to back in one buffer.

use std::hash::BuildHasher;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{ArrowDictionaryKeyType, ByteArrayType};
use arrow_array::{downcast_dictionary_array, Array, ArrayRef, DictionaryArray, GenericByteArray};
use arrow_buffer::{ArrowNativeType, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::DataType;
use ferrospark_common::{FerroError, Result};
use hashbrown::HashTable;

use super::GroupValues;

/// Groups of one `Utf8`, `LargeUtf8`, `Binary` or `LargeBinary` key.
pub struct BytesGroupValues {
    data_type: DataType,
    map: HashTable<u32>,
    bytes: Vec<u8>,
    /// `offsets[g]..offsets[g + 1]` are group `g`'s bytes.
    offsets: Vec<usize>,
    hashes: Vec<u64>,
    null_group: Option<u32>,
    hasher: foldhash::fast::FixedState,
    /// Values of at most 15 bytes, packed into one integer (see [`short_key`]), with their
    /// group: most keys (flags, codes, names) are found by one integer compare.
    short: HashTable<(u128, u32)>,
    /// A direct-mapped cache in front of `short` (see [`recent_slot`]).
    recent: [Option<(u128, u32)>; RECENT],
    /// The dictionary of the last dictionary-encoded batch and the group of each of its
    /// values (`u32::MAX` until a row uses it): consecutive batches of one Parquet column
    /// chunk share their dictionary, so its values are interned once, not once per batch.
    dictionary: Option<(ArrayRef, Vec<u32>)>,
}

const RECENT: usize = 16;

/// The cache slot of a short key: its bytes folded to a few bits.
#[inline]
fn recent_slot(key: u128) -> usize {
    let x = (key as u64) ^ ((key >> 64) as u64);
    let x = x ^ (x >> 29) ^ (x >> 13);
    (x as usize ^ (x >> 7) as usize) % RECENT
}

/// A value of at most 15 bytes as one integer: the bytes, then the length in the top byte
/// (so "a" and "a\0" differ).
#[inline]
fn short_key(data: &[u8], start: usize, len: usize) -> Option<u128> {
    if len > 15 {
        return None;
    }
    let raw = match data.get(start..start + 16) {
        Some(w) => u128::from_le_bytes(w.try_into().ok()?),
        None => {
            let mut b = [0u8; 16];
            b[..len].copy_from_slice(data.get(start..start + len)?);
            u128::from_le_bytes(b)
        }
    };
    let mask = if len == 0 {
        0
    } else {
        u128::MAX >> (128 - 8 * len)
    };
    Some((raw & mask) | ((len as u128) << 120))
}

#[inline]
fn short_hash(key: u128) -> u64 {
    super::mix64((key as u64) ^ ((key >> 64) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

impl BytesGroupValues {
    /// An empty table for keys of `data_type`.
    pub fn new(data_type: DataType) -> Self {
        Self {
            data_type,
            map: HashTable::new(),
            bytes: Vec::new(),
            offsets: vec![0],
            hashes: Vec::new(),
            null_group: None,
            hasher: foldhash::fast::FixedState::with_seed(0x6b65),
            short: HashTable::new(),
            recent: [None; RECENT],
            dictionary: None,
        }
    }

    fn null_group(&mut self) -> u32 {
        match self.null_group {
            Some(g) => g,
            None => {
                let g = self.hashes.len() as u32;
                self.hashes.push(0);
                self.offsets.push(self.bytes.len());
                self.null_group = Some(g);
                g
            }
        }
    }

    /// The group of `v`, added when new (the general path: hash the bytes).
    fn intern_bytes(&mut self, v: &[u8]) -> u32 {
        let h = self.hasher.hash_one(v);
        let (bytes, offsets, hashes) = (&mut self.bytes, &mut self.offsets, &mut self.hashes);
        let found = self.map.find(h, |&g| {
            let g = g as usize;
            hashes[g] == h && &bytes[offsets[g]..offsets[g + 1]] == v
        });
        match found {
            Some(&g) => g,
            None => {
                let g = hashes.len() as u32;
                bytes.extend_from_slice(v);
                offsets.push(bytes.len());
                hashes.push(h);
                self.map.insert_unique(h, g, |&g| hashes[g as usize]);
                g
            }
        }
    }

    fn intern_typed<B: ByteArrayType>(&mut self, a: &GenericByteArray<B>, groups: &mut Vec<u32>) {
        let nulls = a.nulls().filter(|n| n.null_count() > 0);
        let data = a.value_data();
        let offsets = a.value_offsets();
        // The previous row's value (as its short form) and group, when it was short.
        let mut last: Option<(u128, u32)> = None;
        for i in 0..a.len() {
            if nulls.is_some_and(|n| n.is_null(i)) {
                last = None;
                let g = self.null_group();
                groups.push(g);
                continue;
            }
            let start = offsets[i].as_usize();
            let len = offsets[i + 1].as_usize() - start;
            let Some(key) = short_key(data, start, len) else {
                last = None;
                let g = self.intern_bytes(&data[start..start + len]);
                groups.push(g);
                continue;
            };
            // Clustered input repeats a key row after row: compare with the previous row first.
            if let Some((k, g)) = last {
                if k == key {
                    groups.push(g);
                    continue;
                }
            }
            // A few recent short keys, by a cheap slot: flags and codes always hit here.
            let slot = recent_slot(key);
            let g = match self.recent[slot] {
                Some((k, g)) if k == key => g,
                _ => {
                    let h = short_hash(key);
                    let g = match self.short.find(h, |e| e.0 == key) {
                        Some(&(_, g)) => g,
                        None => {
                            let g = self.intern_bytes(&data[start..start + len]);
                            self.short.insert_unique(h, (key, g), |e| short_hash(e.0));
                            g
                        }
                    };
                    self.recent[slot] = Some((key, g));
                    g
                }
            };
            last = Some((key, g));
            groups.push(g);
        }
    }

    /// Groups of a dictionary-encoded batch: each row is a lookup of its code, and a value
    /// of the dictionary is interned the first time a row uses it.
    fn intern_dictionary<K: ArrowDictionaryKeyType>(
        &mut self,
        a: &DictionaryArray<K>,
        groups: &mut Vec<u32>,
    ) -> Result<()> {
        let values = a.values();
        let same =
            matches!(&self.dictionary, Some((v, _)) if v.to_data().ptr_eq(&values.to_data()));
        let (_, ids) = match &mut self.dictionary {
            Some(d) if same => d,
            slot => slot.insert((values.clone(), vec![u32::MAX; values.len()])),
        };
        let mut ids = std::mem::take(ids);
        let keys = a.keys();
        let key_nulls = keys.nulls().filter(|n| n.null_count() > 0);
        if key_nulls.is_none() {
            // Usually every value the batch uses already has its group (from an earlier batch
            // of the same dictionary): one gather, checked afterwards in one scan.
            let start = groups.len();
            groups.extend(
                keys.values()
                    .iter()
                    .map(|c| ids.get(c.as_usize()).copied().unwrap_or(u32::MAX)),
            );
            if !groups[start..].contains(&u32::MAX) {
                if let Some((_, slot)) = &mut self.dictionary {
                    *slot = ids;
                }
                return Ok(());
            }
            groups.truncate(start);
        }
        let mut one = Vec::with_capacity(1);
        for (r, code) in keys.values().iter().enumerate() {
            if key_nulls.is_some_and(|n| n.is_null(r)) {
                groups.push(self.null_group());
                continue;
            }
            let c = code.as_usize();
            let g = match ids.get(c) {
                Some(&g) if g != u32::MAX => g,
                Some(_) => {
                    // A NULL value in the dictionary is the NULL group too.
                    one.clear();
                    self.intern_array(&values.slice(c, 1), &mut one)?;
                    ids[c] = one[0];
                    one[0]
                }
                None => {
                    return Err(FerroError::Internal(format!(
                        "dictionary code {c} past its {} values",
                        values.len()
                    )))
                }
            };
            groups.push(g);
        }
        if let Some((_, slot)) = &mut self.dictionary {
            *slot = ids;
        }
        Ok(())
    }

    /// Appends the groups of a plain or dictionary-encoded array to `groups`.
    fn intern_array(&mut self, k: &ArrayRef, groups: &mut Vec<u32>) -> Result<()> {
        match k.data_type() {
            DataType::Utf8 => self.intern_typed(k.as_string::<i32>(), groups),
            DataType::LargeUtf8 => self.intern_typed(k.as_string::<i64>(), groups),
            DataType::Binary => self.intern_typed(k.as_binary::<i32>(), groups),
            DataType::LargeBinary => self.intern_typed(k.as_binary::<i64>(), groups),
            DataType::Dictionary(_, _) => {
                let dict = k.as_ref();
                downcast_dictionary_array!(
                    dict => self.intern_dictionary(dict, groups)?,
                    other => {
                        return Err(FerroError::Internal(format!(
                            "byte group table given a dictionary of {other}"
                        )))
                    }
                )
            }
            other => {
                return Err(FerroError::Internal(format!(
                    "byte group table given {other}"
                )))
            }
        }
        Ok(())
    }

    fn build<B: ByteArrayType>(&self, nulls: Option<NullBuffer>) -> Result<ArrayRef> {
        let offsets: Vec<B::Offset> = self
            .offsets
            .iter()
            .map(|&o| {
                <B::Offset as arrow_buffer::ArrowNativeType>::from_usize(o).ok_or_else(|| {
                    FerroError::Unsupported(format!(
                        "grouping keys of type {} exceed 2 GiB in one partition; cast the key to a large string",
                        self.data_type
                    ))
                })
            })
            .collect::<Result<_>>()?;
        let a = GenericByteArray::<B>::try_new(
            OffsetBuffer::new(ScalarBuffer::from(offsets)),
            self.bytes.clone().into(),
            nulls,
        )?;
        Ok(Arc::new(a))
    }
}

impl GroupValues for BytesGroupValues {
    fn intern(&mut self, keys: &[ArrayRef], _: usize, groups: &mut Vec<u32>) -> Result<()> {
        groups.clear();
        groups.reserve(keys[0].len());
        self.intern_array(&keys[0], groups)
    }

    fn len(&self) -> usize {
        self.hashes.len()
    }

    fn size(&self) -> usize {
        self.map.capacity() * 5
            + self.short.capacity() * 21
            + self.bytes.capacity()
            + self.offsets.capacity() * 16
            + self
                .dictionary
                .as_ref()
                .map_or(0, |(_, ids)| ids.capacity() * 4)
    }

    fn emit(&mut self) -> Result<Vec<ArrayRef>> {
        use arrow_array::types::{BinaryType, LargeBinaryType, LargeUtf8Type, Utf8Type};
        let nulls = self.null_group.map(|g| {
            let mut valid = vec![true; self.hashes.len()];
            valid[g as usize] = false;
            NullBuffer::from(valid)
        });
        let out = match self.data_type {
            DataType::Utf8 => self.build::<Utf8Type>(nulls),
            DataType::LargeUtf8 => self.build::<LargeUtf8Type>(nulls),
            DataType::Binary => self.build::<BinaryType>(nulls),
            _ => self.build::<LargeBinaryType>(nulls),
        }?;
        // Start again small (see PrimitiveGroupValues::emit).
        self.map = HashTable::new();
        self.bytes = Vec::new();
        self.offsets = vec![0];
        self.hashes = Vec::new();
        self.null_group = None;
        self.short = HashTable::new();
        self.recent = [None; RECENT];
        self.dictionary = None;
        Ok(vec![out])
    }
}
