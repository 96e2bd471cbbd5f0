//! The window operator as a push / finish / pull state machine.
//!
//! ```text
//!   push(batch)* ─┬─ fits the pool ──────────► finish(): sort everything, every function
//!                 │                                over the sorted rows ──► pull() slices
//!                 └─ refused: sort the buffer,
//!                    spill it as a run ──────► finish(): merge the runs; pull() takes the
//!                                               merged rows a window partition at a time
//!                                               and evaluates each as it completes
//! ```
//!
//! In memory, the whole input is sorted once. Past the pool's limit the input goes to disk as
//! sorted runs (Spark's external sort before its `WindowExec`), and only the window partition
//! being completed is held (Spark's per-partition buffer); one partition larger than the limit
//! is a [`FerroError::MemoryLimit`] naming its size.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{Field, Schema, SchemaRef, SortOptions};
use ferrospark_common::{
    FerroError, MemoryPool, MemoryReservation, MetricValue, MetricsSet, Result, SpillDir,
};
use ferrospark_expr::normalize_key;
use ferrospark_sort::{write_run, Run};

use crate::spill::{MergedPartitions, Piece};

use crate::functions::{evaluate, Layout, WindowCall};
use crate::spec::WindowSpec;

/// Metric names of [`WindowExec`].
pub const WINDOW_METRICS: &[(&str, MetricValue)] = &[
    ("input_rows", MetricValue::Count),
    ("input_batches", MetricValue::Count),
    ("output_rows", MetricValue::Count),
    ("output_batches", MetricValue::Count),
    ("partitions", MetricValue::Count),
    ("buffered_bytes", MetricValue::Bytes),
    ("spill_count", MetricValue::Count),
    ("spilled_rows", MetricValue::Count),
    ("spilled_bytes", MetricValue::Bytes),
    ("wide_partitions", MetricValue::Count),
    ("sort_time_ns", MetricValue::TimeNs),
    ("compute_time_ns", MetricValue::TimeNs),
];

/// Window functions of one specification over batches of one schema.
pub struct WindowExec {
    spec: WindowSpec,
    calls: Vec<WindowCall>,
    input_schema: SchemaRef,
    output_schema: SchemaRef,
    batch_size: usize,
    buffered: Vec<RecordBatch>,
    out: VecDeque<RecordBatch>,
    reservation: MemoryReservation,
    finished: bool,
    ansi: bool,
    exact_floats: bool,
    metrics: MetricsSet,
    spill_dir: SpillDir,
    /// Sorted runs spilled so far (each batch: the sort keys, then the input columns).
    runs: Vec<Run>,
    /// After `finish` with runs: the merged runs, cut into window partitions.
    merged: Option<MergedPartitions>,
    /// A wide partition being handed out: its rows read back, its computed columns attached.
    wide: Option<WideOutput>,
}

/// A partition too large for memory, coming out: its rows read back from its spill file in
/// order, with the slices of the functions' columns computed from its read columns.
struct WideOutput {
    reader: ferrospark_common::SpillReader,
    _file: ferrospark_common::SpillFile,
    computed: Vec<ArrayRef>,
    at: usize,
    num_keys: usize,
}

impl WideOutput {
    /// The next output batch, `None` when the partition is out.
    fn next_batch(&mut self, schema: &SchemaRef) -> Result<Option<RecordBatch>> {
        let Some(batch) = self.reader.next().transpose()? else {
            return Ok(None);
        };
        let n = batch.num_rows();
        let mut columns = batch.columns()[self.num_keys..].to_vec();
        columns.extend(self.computed.iter().map(|c| c.slice(self.at, n)));
        self.at += n;
        Ok(Some(ferrospark_common::batch_with_rows(
            schema.clone(),
            columns,
            n,
        )?))
    }
}

impl WindowExec {
    /// `calls` over `spec` for batches of `input`; output batches of at most `batch_size`
    /// rows.
    pub fn try_new(
        input: SchemaRef,
        spec: WindowSpec,
        calls: Vec<WindowCall>,
        batch_size: usize,
        pool: &MemoryPool,
    ) -> Result<Self> {
        let order_types: Vec<_> = spec.order_by.iter().map(|o| o.expr.data_type()).collect();
        for c in &calls {
            c.function.validate(&order_types)?;
        }
        let mut fields: Vec<_> = input.fields().iter().cloned().collect();
        fields.extend(calls.iter().map(|c| Arc::new(c.function.field(&c.name))));
        Ok(Self {
            output_schema: Arc::new(Schema::new(fields)),
            input_schema: input,
            spec,
            calls,
            batch_size: batch_size.max(1),
            buffered: Vec::new(),
            out: VecDeque::new(),
            reservation: pool.reservation("WindowExec"),
            finished: false,
            ansi: true,
            exact_floats: true,
            metrics: MetricsSet::new(WINDOW_METRICS),
            spill_dir: SpillDir::default(),
            runs: Vec::new(),
            merged: None,
            wide: None,
        })
    }

    /// Where spilled runs go (`ferrospark.spill.dir`; the system's temporary directory by
    /// default).
    pub fn with_spill_dir(mut self, dir: SpillDir) -> Self {
        self.spill_dir = dir;
        self
    }

    /// Whether an aggregate's overflow is an error (`spark.sql.ansi.enabled`, Spark 4's
    /// default) or wraps / gives NULL as Spark's legacy mode does.
    pub fn with_ansi(mut self, ansi: bool) -> Self {
        self.ansi = ansi;
        self
    }

    /// Whether sliding frames of doubles and the variance family are computed in Spark's
    /// order (the default: Spark's last bit, O(n·w)) or from one running buffer (O(n), equal
    /// up to rounding): `ferrospark.window.exactFloatFrames`.
    pub fn with_exact_float_frames(mut self, exact: bool) -> Self {
        self.exact_floats = exact;
        self
    }

    /// The input columns followed by one column per function.
    pub fn output_schema(&self) -> SchemaRef {
        self.output_schema.clone()
    }

    /// The operator's metrics.
    pub fn metrics(&self) -> &MetricsSet {
        &self.metrics
    }

    /// A one-line summary.
    pub fn explain(&self) -> String {
        let names: Vec<&str> = self.calls.iter().map(|c| c.name.as_str()).collect();
        format!("Window [{}] {}", names.join(", "), self.spec)
    }

    /// Adds a batch.
    pub fn push(&mut self, batch: &RecordBatch) -> Result<()> {
        if self.finished {
            return Err(FerroError::Internal("window input after finish".into()));
        }
        self.metrics.add("input_rows", batch.num_rows() as u64);
        self.metrics.add("input_batches", 1);
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let bytes = ferrospark_common::batch_bytes(batch) as u64;
        if !self.reservation.try_grow(bytes) {
            // Refused: the buffer so far goes to disk as a sorted run, then this batch is
            // buffered again (or, alone larger than the limit, is a run of its own).
            self.spill_buffered()?;
            self.buffered.push(batch.clone());
            if self.reservation.try_grow(bytes) {
                self.metrics.add("buffered_bytes", bytes);
            } else {
                self.spill_buffered()?;
            }
            return Ok(());
        }
        self.metrics.add("buffered_bytes", bytes);
        self.buffered.push(batch.clone());
        Ok(())
    }

    /// Ends the input: in memory, sorts and evaluates everything; with spilled runs, spills
    /// the rest and starts merging (partitions are evaluated as `pull` reaches them).
    pub fn finish(&mut self) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        if !self.runs.is_empty() {
            self.spill_buffered()?;
            let runs = std::mem::take(&mut self.runs);
            let mut read: Vec<usize> = self
                .calls
                .iter()
                .flat_map(|c| c.function.column_indices())
                .collect();
            read.sort_unstable();
            read.dedup();
            self.merged = Some(MergedPartitions::new(
                runs,
                self.run_schema(),
                &self.key_options(),
                self.spec.partition_by.len(),
                self.batch_size,
                &read,
                self.spill_dir.clone(),
            )?);
            return Ok(());
        }
        let batch = arrow_select::concat::concat_batches(&self.input_schema, &self.buffered)?;
        self.buffered.clear();
        if batch.num_rows() == 0 {
            self.reservation.free();
            return Ok(());
        }
        let started = Instant::now();
        let (sorted, sorted_keys) = self.sort(&batch)?;
        drop(batch);
        self.metrics.add_elapsed("sort_time_ns", started);
        let out = self.evaluate_sorted(&sorted, &sorted_keys)?;
        self.queue(&out);
        Ok(())
    }

    /// The sort keys of `batch`: partition keys then order keys, normalised.
    fn all_keys(&self, batch: &RecordBatch) -> Result<Vec<ArrayRef>> {
        let mut keys = self.keys(batch, true)?;
        keys.extend(self.keys(batch, false)?);
        Ok(keys)
    }

    /// Partition keys ascending (any fixed order groups them), order keys as asked.
    fn key_options(&self) -> Vec<SortOptions> {
        let mut options = vec![SortOptions::default(); self.spec.partition_by.len()];
        options.extend(self.spec.order_by.iter().map(|o| SortOptions {
            descending: o.descending,
            nulls_first: o.nulls_first,
        }));
        options
    }

    /// `batch` sorted by its keys (stable), and the keys sorted alike.
    fn sort(&self, batch: &RecordBatch) -> Result<(RecordBatch, Vec<ArrayRef>)> {
        let all_keys = self.all_keys(batch)?;
        let options = self.key_options();
        let n = batch.num_rows();
        let order: Vec<u32> = match ferrospark_sort::sort_dense_keys(&all_keys, &options) {
            Some(order) => order,
            None if all_keys.is_empty() => (0..n as u32).collect(),
            None => {
                let fields = all_keys
                    .iter()
                    .zip(&options)
                    .map(|(k, o)| SortField::new_with_options(k.data_type().clone(), *o))
                    .collect();
                let rows = RowConverter::new(fields)?.convert_columns(&all_keys)?;
                ferrospark_sort::sort_rows(&rows)
            }
        };
        let order = arrow_array::UInt32Array::from(order);
        let sorted = ferrospark_common::take_batch(batch, &order)?;
        // A key that is an input column as it is (not computed, not normalised) is that
        // column sorted already.
        let sorted_keys = all_keys
            .iter()
            .map(
                |k| match batch.columns().iter().position(|c| Arc::ptr_eq(c, k)) {
                    Some(i) => Ok(sorted.column(i).clone()),
                    None => arrow_select::take::take(k.as_ref(), &order, None),
                },
            )
            .collect::<std::result::Result<Vec<_>, _>>()?;
        Ok((sorted, sorted_keys))
    }

    /// Every function over rows sorted by (partition keys, order keys), whole partitions only:
    /// the input columns followed by the functions' columns.
    fn evaluate_sorted(
        &mut self,
        sorted: &RecordBatch,
        sorted_keys: &[ArrayRef],
    ) -> Result<RecordBatch> {
        let columns = self.evaluate_columns(sorted, sorted_keys)?;
        ferrospark_common::batch_with_rows(self.output_schema.clone(), columns, sorted.num_rows())
    }

    /// The columns of [`Self::evaluate_sorted`] (input columns that no function reads may be
    /// NULL-typed placeholders, as a wide partition's are).
    fn evaluate_columns(
        &mut self,
        sorted: &RecordBatch,
        sorted_keys: &[ArrayRef],
    ) -> Result<Vec<ArrayRef>> {
        let num_partition = self.spec.partition_by.len();
        let ordered = !self.spec.order_by.is_empty();
        let mut layout = Self::layout(sorted_keys, num_partition, sorted.num_rows(), ordered)?;
        layout.ansi = self.ansi;
        layout.exact_floats = self.exact_floats;
        // The single ORDER BY key, sorted and normalised already.
        if let [key] = self.spec.order_by.as_slice() {
            layout.range_key = Some((sorted_keys[num_partition].clone(), key.descending));
        }
        self.metrics
            .add("partitions", layout.partitions.len() as u64);
        let started = Instant::now();
        let mut columns = sorted.columns().to_vec();
        for c in &self.calls {
            columns.push(evaluate(&c.function, sorted, &layout)?);
        }
        self.metrics.add_elapsed("compute_time_ns", started);
        Ok(columns)
    }

    /// Queues `out` as output slices of at most `batch_size` rows.
    fn queue(&mut self, out: &RecordBatch) {
        let n = out.num_rows();
        let mut at = 0;
        while at < n {
            let len = self.batch_size.min(n - at);
            self.out.push_back(out.slice(at, len));
            at += len;
        }
    }

    /// The schema of spilled runs: the sort keys (`__key0`, ...), then the input columns.
    fn run_schema(&self) -> SchemaRef {
        let exprs = self
            .spec
            .partition_by
            .iter()
            .chain(self.spec.order_by.iter().map(|o| &o.expr));
        let mut fields: Vec<Field> = exprs
            .enumerate()
            .map(|(i, e)| Field::new(format!("__key{i}"), e.data_type(), true))
            .collect();
        fields.extend(
            self.input_schema
                .fields()
                .iter()
                .map(|f| f.as_ref().clone()),
        );
        Arc::new(Schema::new(fields))
    }

    /// Sorts the buffered batches and writes them to disk as one run; frees their memory.
    fn spill_buffered(&mut self) -> Result<()> {
        if self.buffered.is_empty() {
            return Ok(());
        }
        let batch = arrow_select::concat::concat_batches(&self.input_schema, &self.buffered)?;
        self.buffered.clear();
        let started = Instant::now();
        let (sorted, keys) = self.sort(&batch)?;
        drop(batch);
        self.metrics.add_elapsed("sort_time_ns", started);
        let mut columns = keys;
        columns.extend(sorted.columns().iter().cloned());
        let schema = self.run_schema();
        let keyed = ferrospark_common::batch_with_rows(schema.clone(), columns, sorted.num_rows())?;
        let file = write_run(&self.spill_dir, &schema, &[keyed], self.batch_size)?;
        self.metrics.add("spill_count", 1);
        self.metrics.add("spilled_rows", file.rows() as u64);
        self.metrics.add("spilled_bytes", file.bytes());
        self.runs.push(Run::File(file));
        self.reservation.free();
        Ok(())
    }

    /// Partition keys (`partition`) or order keys, normalised as Spark compares them (one
    /// NaN, -0.0 = 0.0).
    fn keys(&self, batch: &RecordBatch, partition: bool) -> Result<Vec<ArrayRef>> {
        let exprs: Vec<_> = if partition {
            self.spec.partition_by.iter().collect()
        } else {
            self.spec.order_by.iter().map(|o| &o.expr).collect()
        };
        exprs
            .into_iter()
            .map(|e| {
                let a = ferrospark_expr::evaluate(e, batch)?.into_array(batch.num_rows())?;
                Ok(normalize_key(&a))
            })
            .collect()
    }

    /// Partitions and peer groups of `n` sorted rows: partitions where the first
    /// `num_partition` of `sorted_keys` change, peer groups where any of them does.
    fn layout(
        sorted_keys: &[ArrayRef],
        num_partition: usize,
        n: usize,
        ordered: bool,
    ) -> Result<Layout> {
        let ranges = |keys: &[ArrayRef]| -> Result<Vec<(usize, usize)>> {
            if keys.is_empty() {
                return Ok(if n > 0 { vec![(0, n)] } else { vec![] });
            }
            Ok(arrow_ord::partition::partition(keys)?
                .ranges()
                .into_iter()
                .map(|r| (r.start, r.end))
                .collect())
        };
        let partitions = ranges(&sorted_keys[..num_partition])?;
        let mut peer_start = vec![0u32; n];
        let mut peer_end = vec![0u32; n];
        let peers = if ordered {
            ranges(sorted_keys)?
        } else {
            partitions.clone()
        };
        for (start, end) in peers {
            peer_start[start..end].fill(start as u32);
            peer_end[start..end].fill(end as u32);
        }
        Ok(Layout {
            partitions,
            peer_start,
            peer_end,
            range_key: None,
            ansi: true,
            exact_floats: true,
        })
    }

    /// The next output batch; `None` once everything is out. With spilled runs, merged rows
    /// are read and evaluated a window partition at a time here.
    pub fn pull(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            if let Some(b) = self.out.pop_front() {
                self.metrics.add("output_rows", b.num_rows() as u64);
                self.metrics.add("output_batches", 1);
                if self.out.is_empty() && self.merged.is_none() && self.wide.is_none() {
                    self.reservation.free();
                }
                return Ok(Some(b));
            }
            if let Some(wide) = self.wide.as_mut() {
                match wide.next_batch(&self.output_schema)? {
                    Some(out) => self.out.push_back(out),
                    None => {
                        self.wide = None;
                        self.reservation.free();
                    }
                }
                continue;
            }
            let Some(merged) = self.merged.as_mut() else {
                return Ok(None);
            };
            let nk = self.spec.partition_by.len() + self.spec.order_by.len();
            match merged.next_partitions(&mut self.reservation)? {
                Some(Piece::Rows(keyed)) => {
                    let keys = keyed.columns()[..nk].to_vec();
                    let input = ferrospark_common::batch_with_rows(
                        self.input_schema.clone(),
                        keyed.columns()[nk..].to_vec(),
                        keyed.num_rows(),
                    )?;
                    let out = self.evaluate_sorted(&input, &keys)?;
                    self.queue(&out);
                }
                Some(Piece::Wide { file, narrow }) => {
                    self.metrics.add("wide_partitions", 1);
                    let keys = narrow.columns()[..nk].to_vec();
                    let fields: Vec<_> = narrow.schema().fields()[nk..].to_vec();
                    let input = ferrospark_common::batch_with_rows(
                        Arc::new(Schema::new(fields)),
                        narrow.columns()[nk..].to_vec(),
                        narrow.num_rows(),
                    )?;
                    let computed =
                        self.evaluate_columns(&input, &keys)?[input.num_columns()..].to_vec();
                    drop(input);
                    drop(narrow);
                    let bytes: usize = computed.iter().map(|c| c.get_array_memory_size()).sum();
                    // The read columns are gone; the computed ones are held instead.
                    self.reservation.free();
                    self.reservation.grow(bytes as u64)?;
                    self.wide = Some(WideOutput {
                        reader: file.read()?,
                        _file: file,
                        computed,
                        at: 0,
                        num_keys: nk,
                    });
                }
                None => {
                    self.merged = None;
                    self.reservation.free();
                }
            }
        }
    }
}
