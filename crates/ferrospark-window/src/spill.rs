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
//!
//! A partition that does not fit the pool goes wide: its full rows are written to a spill
//! file of their own as they come, and only the columns the window functions read (the sort
//! keys and the functions' arguments; the rest are `NullArray`s, which hold no buffers) are
//! kept in memory. The functions run over those; the operator then reads the file back and
//! attaches the computed columns slice by slice. Only when even those columns do not fit is
//! it a [`FerroError::MemoryLimit`].

use std::sync::Arc;

use arrow_array::{new_null_array, ArrayRef, RecordBatch};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{DataType, Field, Schema, SchemaRef, SortOptions};
use ferrospark_common::{FerroError, MemoryReservation, Result, SpillDir, SpillFile};
use ferrospark_sort::{Run, RunMerger};

/// What the merged runs hand out next.
pub(crate) enum Piece {
    /// Whole partitions, in memory (sort keys, then the input columns).
    Rows(RecordBatch),
    /// One partition too large for memory: its full rows in `file`, and in memory the columns
    /// the functions read (`narrow`: the same columns, the others NULL-typed and empty).
    Wide {
        /// The partition's rows, in order.
        file: SpillFile,
        /// Its sort keys and the columns the functions read.
        narrow: RecordBatch,
    },
}

/// The merged runs of one window operator, cut into whole window partitions.
pub(crate) struct MergedPartitions {
    merger: RunMerger,
    /// Rows of the partition that may go on in the next merged batch.
    pending: Vec<RecordBatch>,
    /// Compares partition keys across batches (row format of the leading key columns).
    partition_keys: Option<RowConverter>,
    num_partition: usize,
    schema: SchemaRef,
    /// `schema` with every column the functions do not read typed NULL.
    narrow_schema: SchemaRef,
    spill_dir: SpillDir,
    /// A merged batch read but not handled yet (after a wide partition ended inside it).
    lookahead: Option<RecordBatch>,
    /// Rows of the pending partition that did not fit: the partition goes wide next.
    overflow: Option<RecordBatch>,
    /// The runs, kept open while the merger reads them.
    _runs: Vec<Run>,
}

impl MergedPartitions {
    /// Merges `runs` (batches of `schema`: the sort keys with `options`, then the input).
    /// `read` lists the input columns the window functions read; a wide partition keeps only
    /// those (and the keys) in memory.
    pub(crate) fn new(
        runs: Vec<Run>,
        schema: SchemaRef,
        options: &[SortOptions],
        num_partition: usize,
        batch_size: usize,
        read: &[usize],
        spill_dir: SpillDir,
    ) -> Result<Self> {
        let nk = options.len();
        let narrow_fields: Vec<Field> = schema
            .fields()
            .iter()
            .enumerate()
            .map(|(i, f)| {
                if i < nk || read.contains(&(i - nk)) {
                    f.as_ref().clone()
                } else {
                    Field::new(f.name(), DataType::Null, true)
                }
            })
            .collect();
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
            narrow_schema: Arc::new(Schema::new(narrow_fields)),
            spill_dir,
            lookahead: None,
            overflow: None,
            _runs: runs,
        })
    }

    /// The next rows holding only whole partitions, or one wide partition; `None` at the end.
    /// The pending rows are held in `reservation`.
    pub(crate) fn next_partitions(
        &mut self,
        reservation: &mut MemoryReservation,
    ) -> Result<Option<Piece>> {
        if let Some(rows) = self.overflow.take() {
            return self.wide(rows, reservation).map(Some);
        }
        loop {
            let next = self.next_merged()?;
            let Some(batch) = next else {
                if self.pending.is_empty() {
                    return Ok(None);
                }
                return self
                    .take_pending(None, reservation)
                    .map(|b| Some(Piece::Rows(b)));
            };
            let last_start = self.last_partition_start(&batch)?;
            if last_start > 0 {
                // Everything before the batch's last partition completes the pending rows.
                let done = self.take_pending(Some(batch.slice(0, last_start)), reservation)?;
                let rest = batch.slice(last_start, batch.num_rows() - last_start);
                if let Err(rest) = self.hold(rest, reservation)? {
                    self.overflow = Some(rest);
                }
                return Ok(Some(Piece::Rows(done)));
            }
            if self.continues_pending(&batch)? {
                if let Err(rest) = self.hold(batch, reservation)? {
                    return self.wide(rest, reservation).map(Some);
                }
                continue;
            }
            let done = self.take_pending(None, reservation)?;
            if let Err(rest) = self.hold(batch, reservation)? {
                self.overflow = Some(rest);
            }
            return Ok(Some(Piece::Rows(done)));
        }
    }

    /// The pending partition (which does not fit), then `more` of it, then the rest of it
    /// from the merged runs: full rows to a file, read columns to memory.
    fn wide(&mut self, more: RecordBatch, reservation: &mut MemoryReservation) -> Result<Piece> {
        let mut writer = self.spill_dir.create(&self.schema)?;
        reservation.free();
        let mut narrow: Vec<RecordBatch> = Vec::new();
        let mut tail = more.slice(more.num_rows().saturating_sub(1), 1);
        let parts: Vec<RecordBatch> = std::mem::take(&mut self.pending)
            .into_iter()
            .chain(std::iter::once(more))
            .collect();
        for rows in &parts {
            self.keep_narrow(rows, &mut writer, &mut narrow, reservation)?;
        }
        drop(parts);
        loop {
            let next = self.next_merged()?;
            let Some(batch) = next else { break };
            if !self.same_partition(&tail, &batch)? {
                self.lookahead = Some(batch);
                break;
            }
            let end = self.first_partition_end(&batch)?;
            let rows = batch.slice(0, end);
            tail = rows.slice(end - 1, 1);
            self.keep_narrow(&rows, &mut writer, &mut narrow, reservation)?;
            if end < batch.num_rows() {
                self.lookahead = Some(batch.slice(end, batch.num_rows() - end));
                break;
            }
        }
        let file = writer.finish()?;
        let narrow = arrow_select::concat::concat_batches(&self.narrow_schema, &narrow)?;
        Ok(Piece::Wide { file, narrow })
    }

    /// Writes `rows` to the wide partition's file and keeps their read columns in memory.
    fn keep_narrow(
        &self,
        rows: &RecordBatch,
        writer: &mut ferrospark_common::SpillWriter,
        narrow: &mut Vec<RecordBatch>,
        reservation: &mut MemoryReservation,
    ) -> Result<()> {
        writer.write(rows)?;
        let columns: Vec<ArrayRef> = rows
            .columns()
            .iter()
            .zip(self.narrow_schema.fields())
            .map(|(c, f)| {
                if f.data_type() == &DataType::Null {
                    new_null_array(&DataType::Null, rows.num_rows())
                } else {
                    c.clone()
                }
            })
            .collect();
        // A slice of a merged batch holds the batch's buffers: copy the kept columns out.
        let kept = arrow_select::concat::concat_batches(
            &self.narrow_schema,
            &[ferrospark_common::batch_with_rows(
                self.narrow_schema.clone(),
                columns,
                rows.num_rows(),
            )?],
        )?;
        if !reservation.try_grow(kept.get_array_memory_size() as u64) {
            let held: usize = narrow.iter().map(RecordBatch::num_rows).sum();
            return Err(FerroError::MemoryLimit(format!(
                "one window partition is larger than ferrospark.memory.limit even counting only the columns the window functions read ({} rows so far); raise the limit, or partition the window by more keys",
                held + rows.num_rows()
            )));
        }
        narrow.push(kept);
        Ok(())
    }

    /// The batch put aside after a wide partition, else the next merged batch.
    fn next_merged(&mut self) -> Result<Option<RecordBatch>> {
        match self.lookahead.take() {
            Some(b) => Ok(Some(b)),
            None => self.merger.next_batch(),
        }
    }

    /// Whether `b`'s first row is in the partition of `a`'s (one-row) last row.
    fn same_partition(&self, a: &RecordBatch, b: &RecordBatch) -> Result<bool> {
        let Some(converter) = &self.partition_keys else {
            return Ok(true);
        };
        let np = self.num_partition;
        let x = converter.convert_columns(&a.columns()[..np])?;
        let y = converter.convert_columns(&b.slice(0, 1).columns()[..np])?;
        Ok(x.row(0) == y.row(0))
    }

    /// Where the first window partition of `batch` ends.
    fn first_partition_end(&self, batch: &RecordBatch) -> Result<usize> {
        if self.num_partition == 0 {
            return Ok(batch.num_rows());
        }
        let ranges = arrow_ord::partition::partition(&batch.columns()[..self.num_partition])?;
        Ok(ranges.ranges().first().map_or(batch.num_rows(), |r| r.end))
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
        match self.pending.last() {
            Some(last) => self.same_partition(&last.slice(last.num_rows() - 1, 1), batch),
            None => Ok(true),
        }
    }

    /// Adds rows to the pending partition, reserving their memory; `Err(rows)` (nothing
    /// added) when the pool refuses them. Many small pieces are compacted into one batch
    /// first: each piece's buffers cost more than its rows.
    fn hold(
        &mut self,
        rows: RecordBatch,
        reservation: &mut MemoryReservation,
    ) -> Result<std::result::Result<(), RecordBatch>> {
        if self.pending.len() >= 8 {
            let one = arrow_select::concat::concat_batches(&self.schema, &self.pending)?;
            reservation.free();
            self.pending = vec![one];
            if !reservation.try_grow(self.pending[0].get_array_memory_size() as u64) {
                return Ok(Err(rows));
            }
        }
        if !reservation.try_grow(rows.get_array_memory_size() as u64) {
            return Ok(Err(rows));
        }
        self.pending.push(rows);
        Ok(Ok(()))
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
