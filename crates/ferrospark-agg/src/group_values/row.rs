//! Any keys (several columns, nested types) on Arrow's row format: each key tuple becomes one
//! byte string that compares and hashes as a whole.

use std::hash::BuildHasher;

use arrow_array::ArrayRef;
use arrow_row::{RowConverter, Rows};
use arrow_schema::DataType;
use ferrospark_common::Result;
use hashbrown::HashTable;

use super::GroupValues;

/// Groups of any key tuple.
pub struct RowGroupValues {
    converter: RowConverter,
    map: HashTable<u32>,
    rows: Rows,
    hashes: Vec<u64>,
    hasher: foldhash::fast::FixedState,
}

impl RowGroupValues {
    /// An empty table for keys of `types`.
    pub fn new(types: &[DataType]) -> Result<Self> {
        let converter = ferrospark_sort::key_converter(types)?;
        let rows = converter.empty_rows(0, 0);
        Ok(Self {
            converter,
            map: HashTable::new(),
            rows,
            hashes: Vec::new(),
            hasher: foldhash::fast::FixedState::with_seed(0x726f),
        })
    }
}

impl GroupValues for RowGroupValues {
    fn intern(&mut self, keys: &[ArrayRef], _: usize, groups: &mut Vec<u32>) -> Result<()> {
        let input = self.converter.convert_columns(keys)?;
        groups.clear();
        groups.reserve(input.num_rows());
        for row in input.iter() {
            let v = row.data();
            let h = self.hasher.hash_one(v);
            let (rows, hashes) = (&mut self.rows, &mut self.hashes);
            let found = self.map.find(h, |&g| {
                hashes[g as usize] == h && rows.row(g as usize).data() == v
            });
            let g = match found {
                Some(&g) => g,
                None => {
                    let g = hashes.len() as u32;
                    rows.push(row);
                    hashes.push(h);
                    self.map.insert_unique(h, g, |&g| hashes[g as usize]);
                    g
                }
            };
            groups.push(g);
        }
        Ok(())
    }

    fn len(&self) -> usize {
        self.hashes.len()
    }

    fn size(&self) -> usize {
        self.map.capacity() * 5 + self.rows.size() + self.hashes.capacity() * 8
    }

    fn emit(&mut self) -> Result<Vec<ArrayRef>> {
        let rows = std::mem::replace(&mut self.rows, self.converter.empty_rows(0, 0));
        let out = self.converter.convert_rows(rows.iter())?;
        self.map = HashTable::new();
        self.hashes = Vec::new();
        Ok(out)
    }
}
