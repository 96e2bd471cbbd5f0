//! One string or binary key: the bytes of every group back to back in one buffer.

use std::hash::BuildHasher;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::ByteArrayType;
use arrow_array::{Array, ArrayRef, GenericByteArray};
use arrow_buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
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
        }
    }

    fn intern_typed<B: ByteArrayType>(&mut self, a: &GenericByteArray<B>, groups: &mut Vec<u32>)
    where
        B::Native: AsRef<[u8]>,
    {
        let nulls = a.nulls().filter(|n| n.null_count() > 0);
        // Group of the previous row when it was a non-NULL value.
        let mut last: Option<u32> = None;
        for i in 0..a.len() {
            if nulls.is_some_and(|n| n.is_null(i)) {
                let g = match self.null_group {
                    Some(g) => g,
                    None => {
                        let g = self.hashes.len() as u32;
                        self.hashes.push(0);
                        self.offsets.push(self.bytes.len());
                        self.null_group = Some(g);
                        g
                    }
                };
                last = None;
                groups.push(g);
                continue;
            }
            let v: &[u8] = a.value(i).as_ref();
            // Clustered input repeats a key row after row: compare with the previous row first.
            if let Some(prev) = last {
                if i > 0 && a.value(i - 1).as_ref() == v {
                    groups.push(prev);
                    continue;
                }
            }
            let h = self.hasher.hash_one(v);
            let (bytes, offsets, hashes) = (&mut self.bytes, &mut self.offsets, &mut self.hashes);
            let found = self.map.find(h, |&g| {
                let g = g as usize;
                hashes[g] == h && &bytes[offsets[g]..offsets[g + 1]] == v
            });
            let g = match found {
                Some(&g) => g,
                None => {
                    let g = hashes.len() as u32;
                    bytes.extend_from_slice(v);
                    offsets.push(bytes.len());
                    hashes.push(h);
                    self.map.insert_unique(h, g, |&g| hashes[g as usize]);
                    g
                }
            };
            last = Some(g);
            groups.push(g);
        }
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
        let k = &keys[0];
        match k.data_type() {
            DataType::Utf8 => self.intern_typed(k.as_string::<i32>(), groups),
            DataType::LargeUtf8 => self.intern_typed(k.as_string::<i64>(), groups),
            DataType::Binary => self.intern_typed(k.as_binary::<i32>(), groups),
            DataType::LargeBinary => self.intern_typed(k.as_binary::<i64>(), groups),
            other => {
                return Err(FerroError::Internal(format!(
                    "byte group table given {other}"
                )))
            }
        }
        Ok(())
    }

    fn len(&self) -> usize {
        self.hashes.len()
    }

    fn size(&self) -> usize {
        self.map.capacity() * 5 + self.bytes.capacity() + self.offsets.capacity() * 16
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
        Ok(vec![out])
    }
}
