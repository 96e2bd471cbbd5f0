//! Sorted runs (kept in memory or spilled to Arrow IPC files) and the k-way merge that reads
//! them back as one key-sorted stream.

use arrow_array::{Array, ArrayRef, RecordBatch, UInt32Array};
use arrow_row::{RowConverter, Rows};
use arrow_schema::{SchemaRef, SortOptions};
use ferrospark_common::{Result, SpillDir, SpillFile};

/// One sorted run.
pub enum Run {
    /// Still in memory (and reserved).
    Memory(Vec<RecordBatch>),
    /// On disk.
    File(SpillFile),
}

/// A run's batches, read in order.
type RunBatches = Box<dyn Iterator<Item = Result<RecordBatch>> + Send>;

impl Run {
    fn batches(&self) -> Result<RunBatches> {
        Ok(match self {
            Run::Memory(b) => Box::new(b.clone().into_iter().map(Ok)),
            Run::File(f) => Box::new(f.read()?),
        })
    }

    /// Bytes the run holds in memory (none once on disk).
    pub fn memory_size(&self) -> usize {
        match self {
            Run::Memory(b) => b.iter().map(ferrospark_common::batch_bytes).sum(),
            Run::File(_) => 0,
        }
    }
}

/// Writes `batches` (sorted already) to a new spill file in slices of at most `batch_size`
/// rows, so reading the run back holds one slice at a time.
pub fn write_run(
    dir: &SpillDir,
    schema: &SchemaRef,
    batches: &[RecordBatch],
    batch_size: usize,
) -> Result<SpillFile> {
    let mut w = dir.create(schema)?;
    let bs = batch_size.max(1);
    for b in batches {
        let mut off = 0;
        while off < b.num_rows() {
            let len = bs.min(b.num_rows() - off);
            w.write(&b.slice(off, len))?;
            off += len;
        }
    }
    w.finish()
}

/// The row-format converter of grouping keys of `types`: the order runs are sorted and merged in.
pub fn key_converter(types: &[arrow_schema::DataType]) -> Result<RowConverter> {
    Ok(RowConverter::new(
        types
            .iter()
            .map(|t| arrow_row::SortField::new(t.clone()))
            .collect(),
    )?)
}

/// Sorts `batch` by its first `num_keys` columns (row-format order).
pub fn sort_by_keys(
    batch: &RecordBatch,
    converter: &RowConverter,
    num_keys: usize,
) -> Result<RecordBatch> {
    let idx = sort_indices(&batch.columns()[..num_keys], converter)?;
    ferrospark_common::take_batch(batch, &idx)
}

/// The permutation that sorts rows by `keys`, in the row format's order. The sort is stable: rows with equal keys keep their arrival order, so `collect_list`,
/// `first` and `last` see the same order on the sort path as on the hash path.
pub fn sort_indices(keys: &[ArrayRef], converter: &RowConverter) -> Result<UInt32Array> {
    Ok(match keys {
        // One primitive key: arrow's sort of (value, index) pairs, in the row format's order
        // (ascending, NULLs first, floats by total order; keys are normalised already); then
        // every run of equal keys is put back in arrival order.
        [key] if key.data_type().is_primitive() => {
            let sorted =
                arrow_ord::sort::sort_to_indices(key.as_ref(), Some(SortOptions::default()), None)?;
            let cmp = arrow_ord::ord::make_comparator(
                key.as_ref(),
                key.as_ref(),
                SortOptions::default(),
            )?;
            let mut idx: Vec<u32> = sorted.values().to_vec();
            let mut start = 0;
            for i in 1..=idx.len() {
                let run_ends = i == idx.len()
                    || cmp(idx[i - 1] as usize, idx[i] as usize) != std::cmp::Ordering::Equal;
                if run_ends {
                    idx[start..i].sort_unstable();
                    start = i;
                }
            }
            UInt32Array::from(idx)
        }
        keys => {
            let rows = converter.convert_columns(keys)?;
            let mut idx: Vec<u32> = (0..rows.num_rows() as u32).collect();
            idx.sort_unstable_by(|&a, &b| {
                rows.row(a as usize)
                    .cmp(&rows.row(b as usize))
                    .then(a.cmp(&b))
            });
            UInt32Array::from(idx)
        }
    })
}

struct Cursor {
    batches: RunBatches,
    batch: Option<(RecordBatch, Rows)>,
    pos: usize,
}

impl Cursor {
    fn advance_batch(&mut self, converter: &RowConverter, num_keys: usize) -> Result<()> {
        self.pos = 0;
        self.batch = None;
        for b in self.batches.by_ref() {
            let b = b?;
            if b.num_rows() == 0 {
                continue;
            }
            let rows = converter.convert_columns(&b.columns()[..num_keys])?;
            self.batch = Some((b, rows));
            break;
        }
        Ok(())
    }
}

/// Merges sorted runs into key-sorted batches of at most `batch_size` rows. Rows of equal
/// keys come out in run order, so runs written in arrival order merge stably.
pub struct RunMerger {
    cursors: Vec<Cursor>,
    converter: RowConverter,
    num_keys: usize,
    batch_size: usize,
    schema: SchemaRef,
}

impl RunMerger {
    /// Opens every run (a run in memory is shared, not copied). `converter` is the one the
    /// runs were sorted with.
    pub fn new(
        runs: &[Run],
        converter: RowConverter,
        num_keys: usize,
        batch_size: usize,
        schema: SchemaRef,
    ) -> Result<Self> {
        let mut cursors = Vec::with_capacity(runs.len());
        for r in runs {
            let mut c = Cursor {
                batches: r.batches()?,
                batch: None,
                pos: 0,
            };
            c.advance_batch(&converter, num_keys)?;
            cursors.push(c);
        }
        Ok(Self {
            cursors,
            converter,
            num_keys,
            batch_size,
            schema,
        })
    }

    /// The next merged batch, `None` at the end.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        // Batches referenced by this output chunk, and (batch, row) picks into them.
        let mut held: Vec<RecordBatch> = Vec::new();
        let mut held_of: Vec<Option<usize>> = vec![None; self.cursors.len()];
        let mut picks: Vec<(usize, usize)> = Vec::with_capacity(self.batch_size);
        while picks.len() < self.batch_size {
            let mut best: Option<usize> = None;
            for (i, c) in self.cursors.iter().enumerate() {
                let Some((_, rows)) = &c.batch else { continue };
                best = match best {
                    None => Some(i),
                    Some(b) => {
                        let (_, brows) = self.cursors[b].batch.as_ref().expect("best has a batch");
                        if rows.row(c.pos) < brows.row(self.cursors[b].pos) {
                            Some(i)
                        } else {
                            Some(b)
                        }
                    }
                };
            }
            let Some(i) = best else { break };
            let c = &mut self.cursors[i];
            let (batch, _) = c.batch.as_ref().expect("chosen cursor has a batch");
            let h = match held_of[i] {
                Some(h) => h,
                None => {
                    held.push(batch.clone());
                    held_of[i] = Some(held.len() - 1);
                    held.len() - 1
                }
            };
            picks.push((h, c.pos));
            c.pos += 1;
            if c.pos == batch.num_rows() {
                c.advance_batch(&self.converter, self.num_keys)?;
                held_of[i] = None;
            }
        }
        if picks.is_empty() {
            return Ok(None);
        }
        let columns: Vec<ArrayRef> = (0..self.schema.fields().len())
            .map(|col| {
                let arrays: Vec<&dyn Array> = held.iter().map(|b| b.column(col).as_ref()).collect();
                arrow_select::interleave::interleave(&arrays, &picks)
            })
            .collect::<std::result::Result<_, _>>()?;
        Ok(Some(RecordBatch::try_new(self.schema.clone(), columns)?))
    }
}
