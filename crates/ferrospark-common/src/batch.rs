//! Record batches that keep their row count when they have no column: a relation whose
//! columns were all pruned (`SELECT count(*) OVER () FROM t`) still has rows, and arrow's
//! `RecordBatch::try_new` / `take_record_batch` cannot say how many.

use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::SchemaRef;

use crate::Result;

/// A batch of `rows` rows over `columns`.
pub fn batch_with_rows(
    schema: SchemaRef,
    columns: Vec<ArrayRef>,
    rows: usize,
) -> Result<RecordBatch> {
    Ok(RecordBatch::try_new_with_options(
        schema,
        columns,
        &RecordBatchOptions::new().with_row_count(Some(rows)),
    )?)
}

/// The rows of `batch` at `indices`, in their order (`take_record_batch`, keeping the row
/// count).
pub fn take_batch(batch: &RecordBatch, indices: &dyn Array) -> Result<RecordBatch> {
    let columns = batch
        .columns()
        .iter()
        .map(|c| arrow_select::take::take(c.as_ref(), indices, None))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    batch_with_rows(batch.schema(), columns, indices.len())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::UInt32Array;
    use arrow_schema::Schema;

    use super::*;

    #[test]
    fn a_batch_without_columns_keeps_its_rows() {
        let empty = batch_with_rows(Arc::new(Schema::empty()), vec![], 5).expect("batch");
        let taken = take_batch(&empty, &UInt32Array::from(vec![4, 0, 2])).expect("take");
        assert_eq!(taken.num_rows(), 3);
    }
}
