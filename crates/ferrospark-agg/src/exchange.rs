//! Hash-partitioning batches on their leading key columns, so that the final step of an
//! in-process aggregation runs on several threads (each thread owns a disjoint set of keys).

use std::hash::BuildHasher;

use arrow_array::{RecordBatch, UInt32Array};
use arrow_row::{RowConverter, SortField};
use ferrospark_common::Result;

/// Splits `batches` into `n` lists by the hash of their first `num_keys` columns; rows with
/// equal keys land in the same list.
pub fn hash_partition(
    batches: &[RecordBatch],
    num_keys: usize,
    n: usize,
) -> Result<Vec<Vec<RecordBatch>>> {
    let mut out: Vec<Vec<RecordBatch>> = (0..n).map(|_| Vec::new()).collect();
    let Some(first) = batches.first() else {
        return Ok(out);
    };
    if n <= 1 || num_keys == 0 {
        out[0] = batches.to_vec();
        return Ok(out);
    }
    let fields = first.schema().fields()[..num_keys]
        .iter()
        .map(|f| SortField::new(f.data_type().clone()))
        .collect();
    let converter = RowConverter::new(fields)?;
    let hasher = foldhash::fast::FixedState::with_seed(0x7061);
    for b in batches {
        let rows = converter.convert_columns(&b.columns()[..num_keys])?;
        let mut idx: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (i, row) in rows.iter().enumerate() {
            let p = (hasher.hash_one(row.data()) % n as u64) as usize;
            idx[p].push(i as u32);
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
