//! Hash-partitioning batches on their leading key columns: for the final step of an
//! in-process aggregation on several threads (each thread owns a disjoint set of keys), and
//! for Spark's shuffle, where each partition's rows travel as Arrow IPC blocks.

use std::hash::BuildHasher;
use std::io::Cursor;

use arrow_array::cast::AsArray;
use arrow_array::types::ByteArrayType;
use arrow_array::types::{
    Date32Type, Date64Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type,
    Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrayRef, GenericByteArray, RecordBatch, UInt32Array};
use arrow_buffer::{NullBuffer, ScalarBuffer};
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
///
/// Flat columns are hashed column by column (integers by value, widened with their sign so
/// an `int` and a `bigint` key agree; floats with -0.0 as 0.0 and one NaN; strings by their
/// bytes) and the hashes combined; other types go through the row format. Every producer of
/// one exchange runs the same function, which is all an exchange needs.
fn partitions_of(keys: &[ArrayRef], n: usize, converter: &RowConverter) -> Result<Vec<u32>> {
    let n64 = n as u64;
    let len = keys.first().map_or(0, |k| k.len());
    let state = foldhash::fast::FixedState::with_seed(0x7061);
    let mut hashes = vec![0u64; len];
    if keys.iter().all(|k| fold_column(k, &mut hashes, &state)) {
        return Ok(hashes.into_iter().map(|h| (h % n64) as u32).collect());
    }
    let rows = converter.convert_columns(keys)?;
    Ok(rows
        .iter()
        .map(|row| (state.hash_one(row.data()) % n64) as u32)
        .collect())
}

/// What a NULL key contributes to a row's hash.
const NULL_HASH: u64 = 0x9e37_79b9_7f4a_7c15;

/// Folds `column`'s values into the running `hashes`; `false` (and `hashes` unspecified) for a
/// type left to the row format.
fn fold_column(column: &ArrayRef, hashes: &mut [u64], state: &foldhash::fast::FixedState) -> bool {
    let nulls = column.nulls().filter(|n| n.null_count() > 0);
    macro_rules! ints {
        ($t:ty, $widen:expr) => {{
            let a = column.as_primitive::<$t>();
            fold(hashes, nulls, a.values().iter().map($widen))
        }};
    }
    match column.data_type() {
        DataType::Int8 => ints!(Int8Type, |&v| v as i64 as u64),
        DataType::Int16 => ints!(Int16Type, |&v| v as i64 as u64),
        DataType::Int32 => ints!(Int32Type, |&v| v as i64 as u64),
        DataType::Int64 => ints!(Int64Type, |&v| v as u64),
        DataType::UInt8 => ints!(UInt8Type, |&v| u64::from(v)),
        DataType::UInt16 => ints!(UInt16Type, |&v| u64::from(v)),
        DataType::UInt32 => ints!(UInt32Type, |&v| u64::from(v)),
        DataType::UInt64 => ints!(UInt64Type, |&v| v),
        DataType::Date32 => ints!(Date32Type, |&v| v as i64 as u64),
        DataType::Date64 => ints!(Date64Type, |&v| v as u64),
        DataType::Timestamp(_, _) => {
            // Every unit is an i64 underneath; the unit is the same on every producer.
            let data = column.to_data();
            let values =
                ScalarBuffer::<i64>::new(data.buffers()[0].clone(), data.offset(), data.len());
            fold(hashes, nulls, values.iter().map(|&v| v as u64));
        }
        DataType::Decimal128(_, _) => {
            ints!(Decimal128Type, |&v| mix64(v as u64) ^ (v >> 64) as u64)
        }
        DataType::Float32 => ints!(Float32Type, |&v| normal_bits(f64::from(v))),
        DataType::Float64 => ints!(Float64Type, |&v| normal_bits(v)),
        DataType::Boolean => {
            let a = column.as_boolean();
            fold(hashes, nulls, a.values().iter().map(u64::from));
        }
        DataType::Utf8 => fold_bytes(hashes, nulls, column.as_string::<i32>(), state),
        DataType::LargeUtf8 => fold_bytes(hashes, nulls, column.as_string::<i64>(), state),
        DataType::Binary => fold_bytes(hashes, nulls, column.as_binary::<i32>(), state),
        DataType::LargeBinary => fold_bytes(hashes, nulls, column.as_binary::<i64>(), state),
        _ => return false,
    }
    true
}

/// Folds each row's value (one of `values`, or NULL's hash where `nulls` says) into `hashes`.
fn fold(hashes: &mut [u64], nulls: Option<&NullBuffer>, values: impl Iterator<Item = u64>) {
    for (i, (h, v)) in hashes.iter_mut().zip(values).enumerate() {
        let v = if nulls.is_some_and(|n| n.is_null(i)) {
            NULL_HASH
        } else {
            v
        };
        *h = mix64(h.rotate_left(29) ^ v);
    }
}

/// Folds the byte strings of a string or binary column into `hashes`: a string and its
/// bytes hash alike, whatever their offsets' width.
fn fold_bytes<T: ByteArrayType>(
    hashes: &mut [u64],
    nulls: Option<&NullBuffer>,
    a: &GenericByteArray<T>,
    state: &foldhash::fast::FixedState,
) where
    T::Native: AsRef<[u8]>,
{
    fold(
        hashes,
        nulls,
        (0..a.len()).map(|i| state.hash_one(a.value(i).as_ref())),
    );
}

/// A float's bits with -0.0 as 0.0 and every NaN as one, as Spark groups them.
fn normal_bits(v: f64) -> u64 {
    if v == 0.0 {
        0
    } else if v.is_nan() {
        f64::NAN.to_bits()
    } else {
        v.to_bits()
    }
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
                out[p].push(ferrospark_common::take_batch(b, &take)?);
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

/// Each partition's rows as IPC blocks (`parts[p]` the rows of partition `p`).
pub fn write_blocks(parts: Vec<Vec<RecordBatch>>) -> Result<Vec<(u32, Vec<u8>)>> {
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

    /// The partition of each row of `columns`, through the column-wise hashes, and through
    /// the row format for comparison.
    fn parts(columns: &[ArrayRef], n: usize) -> Result<(Vec<u32>, Vec<u32>)> {
        let converter = converter_for(columns)?;
        let folded = partitions_of(columns, n, &converter)?;
        let state = foldhash::fast::FixedState::with_seed(0x7061);
        let rows = converter.convert_columns(columns)?;
        let by_rows = rows
            .iter()
            .map(|r| (state.hash_one(r.data()) % n as u64) as u32)
            .collect();
        Ok((folded, by_rows))
    }

    #[test]
    fn equal_keys_share_a_partition_whatever_their_width_or_float_spelling() -> Result<()> {
        use arrow_array::{Float32Array, Float64Array, Int32Array, LargeStringArray};
        // The same values as int and bigint, with -0.0 against 0.0 and two NaNs.
        let ints: Vec<Option<i64>> = vec![Some(-3), None, Some(0), Some(1 << 40), Some(7)];
        let narrow: ArrayRef = Arc::new(Int32Array::from(
            ints.iter().map(|v| v.map(|v| v as i32)).collect::<Vec<_>>(),
        ));
        let wide: ArrayRef = Arc::new(Int64Array::from(
            ints.iter()
                .map(|v| v.map(|v| v as i32 as i64))
                .collect::<Vec<_>>(),
        ));
        let a = parts(&[narrow], 7)?.0;
        let b = parts(&[wide], 7)?.0;
        assert_eq!(a, b);
        let f: ArrayRef = Arc::new(Float64Array::from(vec![
            0.0,
            -0.0,
            f64::NAN,
            -f64::NAN,
            1.5,
        ]));
        let g: ArrayRef = Arc::new(Float32Array::from(vec![0.0, -0.0, f32::NAN, 1.5, 1.5]));
        for col in [f, g] {
            let p = parts(&[col], 13)?.0;
            assert_eq!(p[0], p[1], "-0.0 and 0.0");
        }
        let p = parts(
            &[Arc::new(Float64Array::from(vec![f64::NAN, -f64::NAN])) as ArrayRef],
            13,
        )?
        .0;
        assert_eq!(p[0], p[1], "every NaN alike");
        // utf8 and large utf8 of the same strings, with a key beside them.
        let words = [
            "",
            "a",
            "ünï",
            "a much longer string than sixteen bytes",
            "a",
        ];
        let s: ArrayRef = Arc::new(StringArray::from(words.to_vec()));
        let l: ArrayRef = Arc::new(LargeStringArray::from(words.to_vec()));
        let k: ArrayRef = Arc::new(Int64Array::from(vec![1, 2, 3, 4, 2]));
        let (p, _) = parts(&[s.clone(), k.clone()], 5)?;
        assert_eq!(p, parts(&[l, k], 5)?.0);
        assert_eq!(p[1], p[4], "equal (string, key) rows");
        Ok(())
    }

    #[test]
    fn column_hashes_spread_rows_as_evenly_as_the_row_format() -> Result<()> {
        let n = 20_000;
        let k: ArrayRef = Arc::new(Int64Array::from_iter_values(0..n));
        let s: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..n).map(|i| format!("k{}", i % 97)),
        ));
        let (folded, by_rows) = parts(&[s, k], 4)?;
        for p in [folded, by_rows] {
            let mut counts = [0usize; 4];
            for x in p {
                counts[x as usize] += 1;
            }
            assert!(counts.iter().all(|&c| c > 4_000 && c < 6_000), "{counts:?}");
        }
        Ok(())
    }
}
