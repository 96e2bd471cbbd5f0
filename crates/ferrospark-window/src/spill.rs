//! Spilled window input read back a window partition at a time: the sorted runs are merged,
//! and the merged rows are cut where the partition keys change, so each piece handed out
//! holds whole partitions and the operator never holds more than the partition it is
//! completing (plus one merged batch).
//!
//! ```text
//!   merged batch ─► rows before its last partition start: with the pending rows, whole
//!                   partitions ─► handed out
//!                ─► its last partition (may go on in the next batch) ─► pending
//!   end of runs  ─► pending ─► handed out
//! ```

use arrow_array::RecordBatch;
use arrow_row::{RowConverter, SortField};
use arrow_schema::{SchemaRef, SortOptions};
use ferrospark_common::{FerroError, MemoryReservation, Result};
use ferrospark_sort::{Run, RunMerger};

/// The merged runs of one window operator, cut into whole window partitions.
pub(crate) struct MergedPartitions {
    merger: RunMerger,
    /// Rows of the partition that may go on in the next merged batch.
    pending: Vec<RecordBatch>,
    /// Compares partition keys across batches (row format of the leading key columns).
    partition_keys: Option<RowConverter>,
    num_partition: usize,
    schema: SchemaRef,
    /// The runs, kept open while the merger reads them.
    _runs: Vec<Run>,
}

impl MergedPartitions {
    /// Merges `runs` (batches of `schema`: the sort keys with `options`, then the input).
    pub(crate) fn new(
        runs: Vec<Run>,
        schema: SchemaRef,
        options: &[SortOptions],
        num_partition: usize,
        batch_size: usize,
    ) -> Result<Self> {
        let fields: Vec<SortField> = options
            .iter()
            .enumerate()
            .map(|(i, o)| SortField::new_with_options(schema.field(i).data_type().clone(), *o))
            .collect();
        let converter = RowConverter::new(fields.clone())?;
        let merger = RunMerger::new(&runs, converter, options.len(), batch_size, schema.clone())?;
        let partition_keys = if num_partition > 0 {
            Some(RowConverter::new(fields[..num_partition].to_vec())?)
        } else {
            None
        };
        Ok(Self {
            merger,
            pending: Vec::new(),
            partition_keys,
            num_partition,
            schema,
            _runs: runs,
        })
    }

    /// The next rows holding only whole partitions; `None` at the end. The pending rows are
    /// held in `reservation`: a partition that does not fit is an error.
    pub(crate) fn next_partitions(
        &mut self,
        reservation: &mut MemoryReservation,
    ) -> Result<Option<RecordBatch>> {
        loop {
            let Some(batch) = self.merger.next_batch()? else {
                if self.pending.is_empty() {
                    return Ok(None);
                }
                return self.take_pending(None, reservation).map(Some);
            };
            let last_start = self.last_partition_start(&batch)?;
            if last_start > 0 {
                // Everything before the batch's last partition completes the pending rows.
                let done = self.take_pending(Some(batch.slice(0, last_start)), reservation)?;
                self.hold(
                    batch.slice(last_start, batch.num_rows() - last_start),
                    reservation,
                )?;
                return Ok(Some(done));
            }
            if self.continues_pending(&batch)? {
                self.hold(batch, reservation)?;
                continue;
            }
            let done = self.take_pending(None, reservation)?;
            self.hold(batch, reservation)?;
            return Ok(Some(done));
        }
    }

    /// Where the last window partition of `batch` starts (0: it is all one partition).
    fn last_partition_start(&self, batch: &RecordBatch) -> Result<usize> {
        if self.num_partition == 0 {
            return Ok(0);
        }
        let ranges = arrow_ord::partition::partition(&batch.columns()[..self.num_partition])?;
        Ok(ranges.ranges().last().map_or(0, |r| r.start))
    }

    /// Whether `batch`'s first row is in the pending rows' partition.
    fn continues_pending(&self, batch: &RecordBatch) -> Result<bool> {
        let (Some(converter), Some(last)) = (&self.partition_keys, self.pending.last()) else {
            return Ok(true);
        };
        let np = self.num_partition;
        let tail = last.slice(last.num_rows() - 1, 1);
        let a = converter.convert_columns(&tail.columns()[..np])?;
        let b = converter.convert_columns(&batch.slice(0, 1).columns()[..np])?;
        Ok(a.row(0) == b.row(0))
    }

    /// Adds rows to the pending partition, reserving their memory. Many small pieces are
    /// compacted into one batch first: each piece's buffers cost more than its rows.
    fn hold(&mut self, rows: RecordBatch, reservation: &mut MemoryReservation) -> Result<()> {
        if self.pending.len() >= 8 {
            let one = arrow_select::concat::concat_batches(&self.schema, &self.pending)?;
            reservation.free();
            self.pending = vec![one];
            let bytes = self.pending[0].get_array_memory_size() as u64;
            if !reservation.try_grow(bytes) {
                return Err(self.too_large(rows.num_rows()));
            }
        }
        let bytes = rows.get_array_memory_size() as u64;
        if !reservation.try_grow(bytes) {
            return Err(self.too_large(rows.num_rows()));
        }
        self.pending.push(rows);
        Ok(())
    }

    fn too_large(&self, more: usize) -> FerroError {
        let held: usize = self.pending.iter().map(RecordBatch::num_rows).sum();
        FerroError::MemoryLimit(format!(
            "one window partition has more rows than ferrospark.memory.limit holds ({} rows so far); raise the limit, or partition the window by more keys",
            held + more
        ))
    }

    /// The pending rows (then `more`), as one batch; frees their reservation.
    fn take_pending(
        &mut self,
        more: Option<RecordBatch>,
        reservation: &mut MemoryReservation,
    ) -> Result<RecordBatch> {
        let mut parts = std::mem::take(&mut self.pending);
        parts.extend(more);
        reservation.free();
        Ok(arrow_select::concat::concat_batches(&self.schema, &parts)?)
    }
}
