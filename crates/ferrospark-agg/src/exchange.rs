//! Hash-partitioning batches on their leading key columns: for the final step of an
//! in-process aggregation on several threads (each thread owns a disjoint set of keys), and
//! for Spark's shuffle, where each partition's rows travel as Arrow IPC blocks.

use std::hash::BuildHasher;
use std::io::Cursor;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, RecordBatch, UInt32Array};
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::{IpcWriteOptions, StreamWriter};
use arrow_ipc::CompressionType;
use arrow_row::{RowConverter, SortField};
use arrow_schema::DataType;
use ferrospark_common::{FerroError, Result};

use crate::group_values::mix64;

/// An IPC block grows to about this many bytes before the next one starts, so a block stays
/// far below Spark's 2 GiB limit on one binary value and a task never holds one huge buffer.
pub const BLOCK_BYTES: usize = 32 << 20;

/// Rows per batch inside a block.
const BLOCK_ROWS: usize = 8192;

/// The partition (`0..n`) of every row by its `keys`.
fn partitions_of(keys: &[ArrayRef], n: usize, converter: &RowConverter) -> Result<Vec<u32>> {
    let n64 = n as u64;
    // One integer key (the common GROUP BY id): hash the value itself.
    if let [k] = keys {
        let of = |v: u64| (mix64(v) % n64) as u32;
        match k.data_type() {
            DataType::Int64 => {
                let a = k.as_primitive::<Int64Type>();
                return Ok(a.iter().map(|v| v.map_or(0, |v| of(v as u64))).collect());
            }
            DataType::Int32 => {
                let a = k.as_primitive::<Int32Type>();
                return Ok(a
                    .iter()
                    .map(|v| v.map_or(0, |v| of(v as i64 as u64)))
                    .collect());
            }
            _ => {}
        }
    }
    let hasher = foldhash::fast::FixedState::with_seed(0x7061);
    let rows = converter.convert_columns(keys)?;
    Ok(rows
        .iter()
        .map(|row| (hasher.hash_one(row.data()) % n64) as u32)
        .collect())
}

fn converter_for(keys: &[ArrayRef]) -> Result<RowConverter> {
    let fields = keys
        .iter()
        .map(|k| SortField::new(k.data_type().clone()))
        .collect();
    Ok(RowConverter::new(fields)?)
}

/// Splits `batches` into `n` lists by the hash of their first `num_keys` columns; rows with
/// equal keys land in the same list.
pub fn hash_partition(
    batches: &[RecordBatch],
    num_keys: usize,
    n: usize,
) -> Result<Vec<Vec<RecordBatch>>> {
    let keys: Vec<Vec<ArrayRef>> = batches
        .iter()
        .map(|b| b.columns()[..num_keys].to_vec())
        .collect();
    hash_partition_by(batches, &keys, n)
}

/// Splits `batches` into `n` lists by the hash of `keys` (one key list per batch, computed
/// beside the batch rather than stored in it); rows with equal keys land in the same list.
pub fn hash_partition_by(
    batches: &[RecordBatch],
    keys: &[Vec<ArrayRef>],
    n: usize,
) -> Result<Vec<Vec<RecordBatch>>> {
    let mut out: Vec<Vec<RecordBatch>> = (0..n.max(1)).map(|_| Vec::new()).collect();
    let Some(first) = keys.first() else {
        return Ok(out);
    };
    if n <= 1 || first.is_empty() {
        out[0] = batches.to_vec();
        return Ok(out);
    }
    let converter = converter_for(first)?;
    for (b, k) in batches.iter().zip(keys) {
        let parts = partitions_of(k, n, &converter)?;
        let mut idx: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (i, &p) in parts.iter().enumerate() {
            idx[p as usize].push(i as u32);
        }
        for (p, rows) in idx.into_iter().enumerate() {
            if !rows.is_empty() {
                let take = UInt32Array::from(rows);
                out[p].push(arrow_select::take::take_record_batch(b, &take)?);
            }
        }
    }
    Ok(out)
}

/// Hash-partitions `batches` into `n` partitions and writes each partition's rows as Arrow
/// IPC streams: `(partition, block)` pairs, several blocks for a partition past
/// [`BLOCK_BYTES`], none for an empty one.
pub fn partition_blocks(
    batches: &[RecordBatch],
    num_keys: usize,
    n: usize,
) -> Result<Vec<(u32, Vec<u8>)>> {
    write_blocks(hash_partition(batches, num_keys, n)?)
}

/// [`partition_blocks`] by `keys` computed beside the batches (see [`hash_partition_by`]).
pub fn partition_blocks_by(
    batches: &[RecordBatch],
    keys: &[Vec<ArrayRef>],
    n: usize,
) -> Result<Vec<(u32, Vec<u8>)>> {
    write_blocks(hash_partition_by(batches, keys, n)?)
}

/// Each partition's rows as IPC blocks.
fn write_blocks(parts: Vec<Vec<RecordBatch>>) -> Result<Vec<(u32, Vec<u8>)>> {
    let mut out = Vec::new();
    for (p, part) in parts.into_iter().enumerate() {
        let Some(schema) = part.first().map(RecordBatch::schema) else {
            continue;
        };
        let mut writer: Option<StreamWriter<Vec<u8>>> = None;
        // Each input batch left a small piece in every partition: they are written as
        // batches of about `BLOCK_ROWS`, not as thousands of tiny IPC messages.
        let mut pieces = part.as_slice();
        while !pieces.is_empty() {
            let mut take = 0;
            let mut rows = 0;
            while take < pieces.len() && rows < BLOCK_ROWS {
                rows += pieces[take].num_rows();
                take += 1;
            }
            let b = arrow_select::concat::concat_batches(&schema, &pieces[..take])?;
            pieces = &pieces[take..];
            let w = match &mut writer {
                Some(w) => w,
                None => {
                    // LZ4 frames: blocks cross into the JVM, through Spark's shuffle and back,
                    // each copy smaller (padded decimals and integer keys compress well).
                    let options = IpcWriteOptions::default()
                        .try_with_compression(Some(CompressionType::LZ4_FRAME))?;
                    writer.insert(StreamWriter::try_new_with_options(
                        Vec::new(),
                        &schema,
                        options,
                    )?)
                }
            };
            w.write(&b)?;
            if w.get_ref().len() >= BLOCK_BYTES {
                if let Some(w) = writer.take() {
                    out.push((p as u32, w.into_inner()?));
                }
            }
        }
        if let Some(w) = writer {
            out.push((p as u32, w.into_inner()?));
        }
    }
    Ok(out)
}

/// The batches of one block written by [`partition_blocks`].
pub fn read_block(block: &[u8]) -> Result<Vec<RecordBatch>> {
    let reader = StreamReader::try_new(Cursor::new(block), None).map_err(|e| {
        FerroError::Internal(format!("an aggregation shuffle block is unreadable: {e}"))
    })?;
    Ok(reader.collect::<std::result::Result<Vec<_>, _>>()?)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int64Array, StringArray};
    use arrow_schema::{Field, Schema};

    use super::*;

    #[test]
    fn blocks_carry_every_row_once_and_each_key_to_one_partition() -> Result<()> {
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
        ]));
        let batches: Vec<RecordBatch> = (0..3)
            .map(|b| {
                let k: Int64Array = (0..500)
                    .map(|i| (i % 7 != 0).then_some((i * 31 + b) % 97))
                    .collect();
                let s: StringArray = (0..500).map(|i| Some(format!("v{i}"))).collect();
                RecordBatch::try_new(schema.clone(), vec![Arc::new(k) as ArrayRef, Arc::new(s)])
            })
            .collect::<std::result::Result<_, _>>()?;
        for keys in [1, 2] {
            let blocks = partition_blocks(&batches, keys, 5)?;
            let mut seen: std::collections::HashMap<(Option<i64>, String), u32> =
                std::collections::HashMap::new();
            let mut part_of_key: std::collections::HashMap<Option<i64>, u32> =
                std::collections::HashMap::new();
            for (p, block) in &blocks {
                assert!(*p < 5);
                for b in read_block(block)? {
                    let k = b.column(0).as_primitive::<Int64Type>();
                    let s = b.column(1).as_string::<i32>();
                    for r in 0..b.num_rows() {
                        let key = k.is_valid(r).then(|| k.value(r));
                        *seen.entry((key, s.value(r).to_string())).or_default() += 1;
                        if keys == 1 {
                            assert_eq!(*part_of_key.entry(key).or_insert(*p), *p);
                        }
                    }
                }
            }
            let total: u32 = seen.values().sum();
            assert_eq!(total, 1500, "every row once ({keys} keys)");
        }
        assert!(read_block(b"not arrow").is_err());
        Ok(())
    }
}
