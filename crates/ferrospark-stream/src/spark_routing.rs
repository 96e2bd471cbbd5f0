//! A batch split as Spark's `repartition(n, keys)` splits it (`pmod(hash(keys), n)`), for the
//! rows of a query on Spark that ferrospark reads itself: each piece joins, in its state
//! partition's task, the rows Spark's own exchange would have sent there.

use arrow_array::{ArrayRef, RecordBatch, UInt32Array};
use ferrospark_common::murmur3::spark_partition_ids;
use ferrospark_common::Result;

/// `batch`'s rows per partition (`n` pieces, in row order), routed by the columns `keys`;
/// with `only`, that partition's piece alone is taken (the others are empty). `None` when a
/// key's type is one Spark's hash is not computed for here
/// ([`ferrospark_common::murmur3::spark_hash`]).
pub fn split_by_spark_hash(
    batch: &RecordBatch,
    keys: &[usize],
    n: usize,
    only: Option<usize>,
) -> Result<Option<Vec<RecordBatch>>> {
    let cols: Vec<ArrayRef> = keys.iter().map(|&i| batch.column(i).clone()).collect();
    let Some(ids) = spark_partition_ids(&cols, n) else {
        return Ok(None);
    };
    let mut rows: Vec<Vec<u32>> = vec![Vec::new(); n.max(1)];
    for (r, &p) in ids.iter().enumerate() {
        if only.is_some_and(|o| o != p as usize) {
            continue;
        }
        if let Some(v) = rows.get_mut(p as usize) {
            v.push(r as u32);
        }
    }
    let out = rows
        .into_iter()
        .map(|idx| {
            if idx.len() == batch.num_rows() {
                return Ok(batch.clone());
            }
            let idx = UInt32Array::from(idx);
            let cols = batch
                .columns()
                .iter()
                .map(|c| arrow_select::take::take(c.as_ref(), &idx, None))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            Ok(RecordBatch::try_new(batch.schema(), cols)?)
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Array, Int64Array, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    use ferrospark_common::murmur3::spark_hash;
    use std::sync::Arc;

    #[test]
    fn every_row_lands_once_where_spark_sends_it() {
        let users: Vec<Option<String>> = (0..100)
            .map(|i| (i % 9 != 0).then(|| format!("user-{}", i % 13)))
            .collect();
        let batch = RecordBatch::try_new(
            Arc::new(Schema::new(vec![
                Field::new("user", DataType::Utf8, true),
                Field::new("i", DataType::Int64, false),
            ])),
            vec![
                Arc::new(StringArray::from(users)),
                Arc::new(Int64Array::from_iter_values(0..100)),
            ],
        )
        .expect("test value");
        let parts = split_by_spark_hash(&batch, &[0], 4, None)
            .expect("test value")
            .expect("test value");
        assert_eq!(parts.len(), 4);
        assert_eq!(parts.iter().map(|p| p.num_rows()).sum::<usize>(), 100);
        for (p, piece) in parts.iter().enumerate() {
            let hashes = spark_hash(&[piece.column(0).clone()]).expect("test value");
            assert!(hashes.iter().all(|h| h.rem_euclid(4) as usize == p));
            let i = piece
                .column(1)
                .as_any()
                .downcast_ref::<Int64Array>()
                .expect("test value");
            assert!(i.values().windows(2).all(|w| w[0] < w[1]), "row order kept");
            let alone = split_by_spark_hash(&batch, &[0], 4, Some(p))
                .expect("test value")
                .expect("test value");
            assert_eq!(&alone[p], piece, "partition {p} taken alone");
            assert!(alone
                .iter()
                .enumerate()
                .all(|(q, b)| q == p || b.num_rows() == 0));
        }
    }
}
