//! The window operator as a push / finish / pull state machine.
//!
//! ```text
//!   push(batch)* ──finish()──► sort by (partition keys, order keys)
//!                              cut into partitions and peer groups
//!                              every function over the sorted rows ──► pull() slices ─► Done
//! ```
//!
//! The whole input is buffered (reserved from the pool) before anything comes out, as Spark's
//! `WindowExec` buffers a partition; spilling partitions larger than memory is not built yet.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::{ArrayRef, RecordBatch};
use arrow_row::{RowConverter, Rows, SortField};
use arrow_schema::{Schema, SchemaRef, SortOptions};
use ferrospark_common::{
    FerroError, MemoryPool, MemoryReservation, MetricValue, MetricsSet, Result,
};
use ferrospark_expr::normalize_key;

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
    metrics: MetricsSet,
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
            metrics: MetricsSet::new(WINDOW_METRICS),
        })
    }

    /// Whether an aggregate's overflow is an error (`spark.sql.ansi.enabled`, Spark 4's
    /// default) or wraps / gives NULL as Spark's legacy mode does.
    pub fn with_ansi(mut self, ansi: bool) -> Self {
        self.ansi = ansi;
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
        let bytes = batch.get_array_memory_size() as u64;
        if !self.reservation.try_grow(bytes) {
            return Err(FerroError::MemoryLimit(format!(
                "the window's input ({} rows so far) does not fit ferrospark.memory.limit; raise the limit (spilling window partitions is not built yet)",
                self.metrics.get("input_rows")
            )));
        }
        self.metrics.add("buffered_bytes", bytes);
        self.buffered.push(batch.clone());
        Ok(())
    }

    /// Ends the input: sorts, evaluates every function, and queues the output.
    pub fn finish(&mut self) -> Result<()> {
        if self.finished {
            return Ok(());
        }
        self.finished = true;
        let batch = arrow_select::concat::concat_batches(&self.input_schema, &self.buffered)?;
        self.buffered.clear();
        if batch.num_rows() == 0 {
            self.reservation.free();
            return Ok(());
        }
        let started = Instant::now();
        let partition_keys = self.keys(&batch, true)?;
        let order_keys = self.keys(&batch, false)?;
        let converter = |keys: &[ArrayRef], options: &[SortOptions]| -> Result<Option<Rows>> {
            if keys.is_empty() {
                return Ok(None);
            }
            let fields = keys
                .iter()
                .zip(options)
                .map(|(k, o)| SortField::new_with_options(k.data_type().clone(), *o))
                .collect();
            Ok(Some(RowConverter::new(fields)?.convert_columns(keys)?))
        };
        let mut options = vec![SortOptions::default(); partition_keys.len()];
        options.extend(self.spec.order_by.iter().map(|o| SortOptions {
            descending: o.descending,
            nulls_first: o.nulls_first,
        }));
        let all_keys: Vec<ArrayRef> = partition_keys.iter().chain(&order_keys).cloned().collect();
        let n = batch.num_rows();
        let order: Vec<u32> = match ferrospark_sort::sort_dense_keys(&all_keys, &options) {
            Some(order) => order,
            None => match converter(&all_keys, &options)? {
                Some(rows) => ferrospark_sort::sort_rows(&rows),
                None => (0..n as u32).collect(),
            },
        };
        let order = arrow_array::UInt32Array::from(order);
        let sorted = arrow_select::take::take_record_batch(&batch, &order)?;
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
        drop(batch);
        drop(all_keys);
        let num_partition = partition_keys.len();
        let mut layout = Self::layout(
            &sorted_keys,
            partition_keys.len(),
            n,
            !order_keys.is_empty(),
        )?;
        layout.ansi = self.ansi;
        // The single ORDER BY key, sorted and normalised already.
        if let [key] = self.spec.order_by.as_slice() {
            layout.range_key = Some((sorted_keys[num_partition].clone(), key.descending));
        }
        self.metrics.add_elapsed("sort_time_ns", started);
        self.metrics
            .add("partitions", layout.partitions.len() as u64);
        let started = Instant::now();
        let mut columns = sorted.columns().to_vec();
        for c in &self.calls {
            columns.push(evaluate(&c.function, &sorted, &layout)?);
        }
        let out = RecordBatch::try_new(self.output_schema.clone(), columns)?;
        self.metrics.add_elapsed("compute_time_ns", started);
        let mut at = 0;
        while at < n {
            let len = self.batch_size.min(n - at);
            self.out.push_back(out.slice(at, len));
            at += len;
        }
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
        })
    }

    /// The next output batch, if one is ready.
    pub fn pull(&mut self) -> Option<RecordBatch> {
        let b = self.out.pop_front()?;
        self.metrics.add("output_rows", b.num_rows() as u64);
        self.metrics.add("output_batches", 1);
        if self.out.is_empty() {
            self.reservation.free();
        }
        Some(b)
    }
}
