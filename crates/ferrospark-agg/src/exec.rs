//! The aggregation operator: Spark's `HashAggregateExec` and `ObjectHashAggregateExec` with
//! their spill and sort-based fall-back, as one push/finish/pull state machine.
//!
//! ```text
//!   push(batch)* ──► Hashing ──finish()──► (no run spilled) ─► Emitting(groups of the map)
//!                      │  ▲                  (runs spilled)  ─► Merging(runs ─► SortAggregator)
//!   pool refuses ──────┘  │ sorted run written, map cleared
//!   object keys > threshold ─► Buffering raw rows (sorted + sort-aggregated into runs)
//! ```
//!
//! Every aggregate has its own mode, so one operator runs Spark's partial, partial-merge and
//! final steps, and the mixed step of a distinct plan.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::{new_empty_array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_row::RowConverter;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use ferrospark_common::{
    Config, FerroError, MemoryPool, MemoryReservation, MetricValue, MetricsSet, Result, SpillDir,
};
use ferrospark_expr::{PhysicalExpr, SharedExprs};

use crate::accumulators::{EmitTo, GroupsAccumulator};
use crate::functions::AggregateExpr;
use crate::group_values::{new_group_values, normalize_key, GroupValues};
use crate::sort_aggregate::{SortAggSlot, SortAggregator};
use ferrospark_sort::{sort_by_keys, Run, RunMerger};

/// Spill files an aggregation keeps before merging them into one.
pub const MAX_SPILL_RUNS: usize = 16;

/// Metric names of [`HashAggregateExec`].
pub const AGG_METRICS: &[(&str, MetricValue)] = &[
    ("input_rows", MetricValue::Count),
    ("input_batches", MetricValue::Count),
    ("output_rows", MetricValue::Count),
    ("output_batches", MetricValue::Count),
    ("groups", MetricValue::Count),
    ("spill_count", MetricValue::Count),
    ("spilled_bytes", MetricValue::Bytes),
    ("spilled_rows", MetricValue::Count),
    ("rows_passed_through", MetricValue::Count),
    ("sort_fallbacks", MetricValue::Count),
    ("peak_memory", MetricValue::Bytes),
    ("compute_time_ns", MetricValue::TimeNs),
];

/// Settings of one aggregation.
#[derive(Debug, Clone)]
pub struct AggregateOptions {
    /// Rows per output batch.
    pub batch_size: usize,
    /// The pool buffers are reserved from.
    pub pool: MemoryPool,
    /// Where runs are spilled.
    pub spill_dir: SpillDir,
    /// Keys an object-buffer aggregation holds before falling back to sort-based aggregation.
    pub object_fallback_threshold: usize,
}

impl AggregateOptions {
    /// Options from a session configuration, reserving from `pool`.
    pub fn from_config(cfg: &Config, pool: MemoryPool) -> Result<Self> {
        Ok(Self {
            batch_size: cfg.batch_size()?,
            pool,
            spill_dir: SpillDir::new(cfg.spill_dir()),
            object_fallback_threshold: cfg.object_agg_fallback_threshold()?,
        })
    }
}

impl Default for AggregateOptions {
    fn default() -> Self {
        Self {
            batch_size: 8192,
            pool: MemoryPool::unbounded(),
            spill_dir: SpillDir::default(),
            object_fallback_threshold: 128,
        }
    }
}

/// A grouping key: an expression over the input and its output name.
#[derive(Debug, Clone)]
pub struct GroupKey {
    /// The key's value.
    pub expr: PhysicalExpr,
    /// Its output column name.
    pub name: String,
}

/// Whether a first step with nothing but keys (the partial step of a DISTINCT) groups its
/// rows or hands them on as they are: when nearly every row is its own group, the next step,
/// which groups them again anyway, does the work once (TPC-H Q16: 118,000 rows, as many
/// groups). Spark's partial aggregation always groups; the answer is the same either way.
///
/// ```text
/// Never
/// Probing --(PASS_PROBE_ROWS rows in, groups > PASS_GROUP_SHARE of them)--> Passing
/// Passing --(the pool refuses a batch to hold)--> Never   (rows held so far stay output)
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PassThrough {
    Never,
    Probing,
    Passing,
}

/// Rows a first step groups before it may decide to pass the rest through.
const PASS_PROBE_ROWS: u64 = 16 * 1024;

/// Groups per input row above which grouping is judged not to pay.
const PASS_GROUP_SHARE: f64 = 0.8;

enum Phase {
    Hashing,
    /// Output batches: the final map in slices, or the merge of spilled runs.
    Emitting(VecDeque<RecordBatch>),
    Done,
}

/// Hash aggregation with spill and sort-based fall-back.
pub struct HashAggregateExec {
    keys: Vec<GroupKey>,
    key_types: Vec<DataType>,
    aggs: Vec<AggregateExpr>,
    options: AggregateOptions,
    output_schema: SchemaRef,
    /// keys + every aggregate's state: the layout of runs.
    run_schema: SchemaRef,
    group_values: Box<dyn GroupValues>,
    accs: Vec<Box<dyn GroupsAccumulator>>,
    converter: RowConverter,
    reservation: MemoryReservation,
    runs: Vec<Run>,
    /// Raw input kept after the object-hash fall-back, waiting to be sorted.
    fallback: Option<SortBuffer>,
    has_object_buffer: bool,
    phase: Phase,
    metrics: MetricsSet,
    groups: Vec<u32>,
    /// Most bytes reserved at once.
    peak: u64,
    /// Keys and raw arguments with their common parts.
    shared: SharedExprs,
    pass_through: PassThrough,
    /// Rows handed on ungrouped, as key batches, output after the map's groups.
    passed: Vec<RecordBatch>,
}

fn schema_of(fields: Vec<Field>) -> SchemaRef {
    Arc::new(Schema::new(fields))
}

/// Hands every group of `accs` out into `columns`: final values for the aggregates that emit
/// them when `finals`, states otherwise.
fn emit_columns(
    accs: &mut [Box<dyn GroupsAccumulator>],
    aggs: &[AggregateExpr],
    finals: bool,
    columns: &mut Vec<ArrayRef>,
) -> Result<()> {
    for (acc, agg) in accs.iter_mut().zip(aggs) {
        if finals && agg.mode.emits_final() {
            columns.push(acc.evaluate(EmitTo::All)?);
        } else {
            columns.extend(acc.state(EmitTo::All)?);
        }
    }
    Ok(())
}

/// `batch` cut into slices of at most `batch_size` rows.
fn slices(batch: &RecordBatch, batch_size: usize) -> Vec<RecordBatch> {
    let bs = batch_size.max(1);
    (0..batch.num_rows())
        .step_by(bs)
        .map(|off| batch.slice(off, bs.min(batch.num_rows() - off)))
        .collect()
}

/// Raw input held after the object-hash fall-back, as Spark's sort-based aggregator holds it
/// in its external sorter: each aggregate's input columns, and every row's key as an id into a
/// table of the distinct keys (so sorting needs to order only those).
struct SortBuffer {
    keys: Box<dyn GroupValues>,
    batches: Vec<(Vec<Vec<ArrayRef>>, Vec<u32>)>,
}

impl SortBuffer {
    fn new(key_types: &[DataType]) -> Result<Self> {
        Ok(Self {
            keys: new_group_values(key_types)?,
            batches: Vec::new(),
        })
    }

    /// Buffers one batch; returns the bytes it added.
    fn push(&mut self, keys: &[ArrayRef], inputs: Vec<Vec<ArrayRef>>) -> Result<u64> {
        let n = keys.first().map_or(0, |k| k.len());
        let before = self.keys.size();
        let mut ids = Vec::with_capacity(n);
        self.keys.intern(keys, n, &mut ids)?;
        let values: usize = inputs
            .iter()
            .flatten()
            .map(|a| a.get_array_memory_size())
            .sum();
        self.batches.push((inputs, ids));
        Ok((values + n * 4 + self.keys.size().saturating_sub(before)) as u64)
    }
}

impl HashAggregateExec {
    /// An aggregation of batches of `input_schema`, grouped by `keys`. Merge-mode aggregates
    /// must have their `state_columns` set.
    pub fn try_new(
        input_schema: &Schema,
        keys: Vec<GroupKey>,
        aggs: Vec<AggregateExpr>,
        options: AggregateOptions,
    ) -> Result<Self> {
        // Keys and raw arguments, evaluated together so shared parts are computed once.
        let mut exprs: Vec<PhysicalExpr> = keys.iter().map(|k| k.expr.clone()).collect();
        for a in aggs.iter().filter(|a| a.mode.reads_raw()) {
            exprs.extend(a.args.iter().cloned());
        }
        let shared = SharedExprs::new(&exprs, input_schema.fields().len());
        let key_types: Vec<DataType> = keys.iter().map(|k| k.expr.data_type()).collect();
        let key_fields: Vec<Field> = keys
            .iter()
            .zip(&key_types)
            .map(|(k, t)| Field::new(k.name.clone(), t.clone(), true))
            .collect();
        for a in &aggs {
            if !a.mode.reads_raw() && a.state_columns.len() != a.state_fields().len() {
                return Err(FerroError::Internal(format!(
                    "aggregate {} in mode {:?} without its state columns",
                    a.name, a.mode
                )));
            }
        }
        let mut out = key_fields.clone();
        let mut run = key_fields.clone();
        for a in &aggs {
            out.extend(a.output_fields());
            run.extend(a.state_fields());
        }
        let accs = aggs
            .iter()
            .map(|a| a.create_accumulator())
            .collect::<Result<Vec<_>>>()?;
        let converter = ferrospark_sort::key_converter(&key_types)?;
        let has_object_buffer = aggs
            .iter()
            .any(|a| a.distinct_set || a.func.has_object_buffer());
        let reservation = options.pool.reservation("HashAggregateExec");
        Ok(Self {
            group_values: new_group_values(&key_types)?,
            keys,
            key_types,
            aggs,
            options,
            output_schema: schema_of(out),
            run_schema: schema_of(run),
            accs,
            converter,
            reservation,
            runs: Vec::new(),
            fallback: None,
            has_object_buffer,
            phase: Phase::Hashing,
            metrics: MetricsSet::new(AGG_METRICS),
            groups: Vec::new(),
            peak: 0,
            shared,
            pass_through: PassThrough::Never,
            passed: Vec::new(),
        })
    }

    /// Lets this step hand rows on ungrouped once grouping proves not to reduce them (see
    /// [`PassThrough`]). Only for a first step whose output another step groups by the same
    /// keys; a step with aggregates to compute always groups.
    pub fn pass_through_when_unreduced(mut self) -> Self {
        if self.aggs.is_empty() && !self.keys.is_empty() {
            self.pass_through = PassThrough::Probing;
        }
        self
    }

    /// The schema of every output batch.
    pub fn output_schema(&self) -> SchemaRef {
        self.output_schema.clone()
    }

    /// Input columns that may arrive dictionary-encoded (`Dictionary(_, Utf8 | Binary)` for a
    /// planned `Utf8` or `Binary` column): string keys read only as the bare key, whose group
    /// table maps each code once instead of hashing every row's bytes. A scan feeding this
    /// operator can then hand such columns over without materialising their values.
    pub fn dictionary_input_columns(&self) -> Vec<usize> {
        let supported = self.key_types.len() == 1
            || crate::group_values::ComposedGroupValues::supports(&self.key_types);
        if !supported {
            return Vec::new();
        }
        let mut uses = std::collections::HashMap::<usize, usize>::new();
        for k in &self.keys {
            for c in k.expr.column_indices() {
                *uses.entry(c).or_default() += 1;
            }
        }
        for a in &self.aggs {
            if a.mode.reads_raw() {
                for e in &a.args {
                    for c in e.column_indices() {
                        *uses.entry(c).or_default() += 1;
                    }
                }
            } else {
                for &c in &a.state_columns {
                    *uses.entry(c).or_default() += 1;
                }
            }
        }
        let mut out: Vec<usize> = self
            .keys
            .iter()
            .filter_map(|k| match &k.expr {
                PhysicalExpr::Column {
                    index, data_type, ..
                } if matches!(data_type, DataType::Utf8 | DataType::Binary)
                    && uses.get(index) == Some(&1) =>
                {
                    Some(*index)
                }
                _ => None,
            })
            .collect();
        out.sort_unstable();
        out
    }

    /// A hint that about `groups` groups are coming (a final step knows its input's rows
    /// before it starts): the map and the buffers are sized once instead of doubling, copying
    /// and faulting in fresh pages step by step. Taken only while nothing has been added, and
    /// only when the pool grants the memory; otherwise the map grows as usual.
    pub fn expect_groups(&mut self, groups: usize) -> Result<()> {
        if !self.group_values.is_empty() || self.keys.is_empty() || groups == 0 {
            return Ok(());
        }
        self.group_values.reserve(groups);
        for acc in &mut self.accs {
            acc.reserve_groups(groups);
        }
        let want = self.held_bytes() as u64;
        if self.reservation.try_resize(want) {
            self.peak = self.peak.max(want);
            return Ok(());
        }
        self.group_values = new_group_values(&self.key_types)?;
        self.accs = self
            .aggs
            .iter()
            .map(|a| a.create_accumulator())
            .collect::<Result<Vec<_>>>()?;
        self.reservation.try_resize(self.held_bytes() as u64);
        Ok(())
    }

    /// The operator's metrics.
    pub fn metrics(&self) -> &MetricsSet {
        &self.metrics
    }

    /// Evaluates keys (normalised) and every aggregate's inputs over `batch`.
    fn prepare(&self, batch: &RecordBatch) -> Result<(Vec<ArrayRef>, Vec<Vec<ArrayRef>>)> {
        let mut values = self.shared.evaluate(batch)?.into_iter();
        let keys: Vec<ArrayRef> = values
            .by_ref()
            .take(self.keys.len())
            .map(|k| normalize_key(&k))
            .collect();
        let inputs = self
            .aggs
            .iter()
            .map(|a| {
                if a.mode.reads_raw() {
                    values.by_ref().take(a.args.len()).collect()
                } else {
                    a.state_columns
                        .iter()
                        .map(|&i| batch.column(i).clone())
                        .collect()
                }
            })
            .collect();
        Ok((keys, inputs))
    }

    /// Adds one input batch.
    pub fn push(&mut self, batch: &RecordBatch) -> Result<()> {
        if !matches!(self.phase, Phase::Hashing) {
            return Err(FerroError::Internal("push after finish".into()));
        }
        let started = Instant::now();
        self.metrics.add("input_rows", batch.num_rows() as u64);
        self.metrics.add("input_batches", 1);
        if batch.num_rows() > 0 {
            let (keys, inputs) = self.prepare(batch)?;
            if self.pass_through == PassThrough::Passing {
                self.pass(keys)?;
            } else if self.fallback.is_some() {
                self.buffer_raw(keys, inputs)?;
            } else {
                self.hash(&keys, &inputs, batch.num_rows())?;
            }
        }
        self.metrics.add_elapsed("compute_time_ns", started);
        Ok(())
    }

    /// Holds one batch of keys to hand on as it is; goes back to grouping when the pool
    /// refuses the memory.
    fn pass(&mut self, keys: Vec<ArrayRef>) -> Result<()> {
        let rows = keys.first().map_or(0, |k| k.len());
        // String keys may arrive dictionary-encoded from the scan (the group table reads
        // their codes); the output holds their values.
        let keys = keys
            .into_iter()
            .zip(self.output_schema.fields().iter())
            .map(|(k, f)| {
                if k.data_type() == f.data_type() {
                    Ok(k)
                } else {
                    Ok(arrow_cast::cast(&k, f.data_type())?)
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        let batch = RecordBatch::try_new_with_options(self.output_schema.clone(), keys, &options)?;
        if !self
            .reservation
            .try_grow(batch.get_array_memory_size() as u64)
        {
            self.pass_through = PassThrough::Never;
            let keys = batch.columns().to_vec();
            return self.hash(&keys, &[], rows);
        }
        self.peak = self.peak.max(self.reservation.size());
        self.metrics.add("rows_passed_through", rows as u64);
        self.passed.push(batch);
        Ok(())
    }

    fn hash(&mut self, keys: &[ArrayRef], inputs: &[Vec<ArrayRef>], num_rows: usize) -> Result<()> {
        self.group_values.intern(keys, num_rows, &mut self.groups)?;
        let total = self.group_values.len();
        if self.pass_through == PassThrough::Probing {
            let seen = self.metrics.get("input_rows");
            if seen >= PASS_PROBE_ROWS {
                self.pass_through = if total as f64 > seen as f64 * PASS_GROUP_SHARE {
                    PassThrough::Passing
                } else {
                    PassThrough::Never
                };
            }
        }
        for ((acc, agg), input) in self.accs.iter_mut().zip(&self.aggs).zip(inputs) {
            if agg.mode.reads_raw() {
                acc.update_batch(input, &self.groups, total)?;
            } else {
                acc.merge_batch(input, &self.groups, total)?;
            }
        }
        if self.has_object_buffer && total > self.options.object_fallback_threshold {
            // Spark's ObjectHashAggregateExec: past the threshold the map is sorted into a run
            // and the rest of the input is aggregated sort-based.
            self.metrics.add("sort_fallbacks", 1);
            self.spill_map(false)?;
            self.fallback = Some(SortBuffer::new(&self.key_types)?);
            return Ok(());
        }
        // A global aggregate's state is one row: nothing to gain from spilling it.
        let can_spill = !self.keys.is_empty();
        self.account(can_spill)
    }

    fn held_bytes(&self) -> usize {
        self.group_values.size() + self.accs.iter().map(|a| a.size()).sum::<usize>()
    }

    /// Resizes the reservation to what the map holds; spills the map when refused.
    fn account(&mut self, can_spill: bool) -> Result<()> {
        let want = self.held_bytes() as u64 + self.runs_in_memory_bytes();
        if self.reservation.try_resize(want) {
            self.peak = self.peak.max(want);
            return Ok(());
        }
        if !can_spill {
            return Err(FerroError::MemoryLimit(format!(
                "aggregation needs {want} bytes and ferrospark.memory.limit is reached; raise the limit"
            )));
        }
        self.spill_memory_runs()?;
        self.spill_map(true)?;
        Ok(())
    }

    fn runs_in_memory_bytes(&self) -> u64 {
        self.runs.iter().map(|r| r.memory_size() as u64).sum()
    }

    /// The map's groups as state batches sorted by key; the map is empty afterwards.
    fn drain_map_sorted(&mut self) -> Result<Option<RecordBatch>> {
        if self.group_values.is_empty() {
            return Ok(None);
        }
        let mut columns = self.group_values.emit()?;
        emit_columns(&mut self.accs, &self.aggs, false, &mut columns)?;
        let batch = RecordBatch::try_new(self.run_schema.clone(), columns)?;
        sort_by_keys(&batch, &self.converter, self.keys.len()).map(Some)
    }

    /// Turns the map into a sorted run, on disk when `to_disk`.
    fn spill_map(&mut self, to_disk: bool) -> Result<()> {
        let Some(sorted) = self.drain_map_sorted()? else {
            return Ok(());
        };
        if to_disk {
            let run = self.write_run(&[sorted])?;
            self.push_file_run(run)?;
        } else {
            self.runs.push(Run::Memory(vec![sorted]));
        }
        self.reservation
            .try_resize(self.held_bytes() as u64 + self.runs_in_memory_bytes());
        Ok(())
    }

    fn write_run(&mut self, batches: &[RecordBatch]) -> Result<Run> {
        let f = ferrospark_sort::write_run(
            &self.options.spill_dir,
            &self.run_schema,
            batches,
            self.options.batch_size,
        )?;
        self.metrics.add("spill_count", 1);
        self.metrics.add("spilled_bytes", f.bytes());
        self.metrics.add("spilled_rows", f.rows() as u64);
        Ok(Run::File(f))
    }

    /// Keeps the number of spill files (each an open descriptor) bounded: past
    /// [`MAX_SPILL_RUNS`] they are merged into one sorted run of merged states.
    fn push_file_run(&mut self, run: Run) -> Result<()> {
        self.runs.push(run);
        let files = self
            .runs
            .iter()
            .filter(|r| matches!(r, Run::File(_)))
            .count();
        if files <= MAX_SPILL_RUNS {
            return Ok(());
        }
        let (files, rest): (Vec<Run>, Vec<Run>) = std::mem::take(&mut self.runs)
            .into_iter()
            .partition(|r| matches!(r, Run::File(_)));
        self.runs = rest;
        let mut w = self.options.spill_dir.create(&self.run_schema)?;
        self.merge_into(&files, false, &mut |b| w.write(&b))?;
        drop(files);
        let f = w.finish()?;
        self.metrics.add("spill_count", 1);
        self.metrics.add("spilled_bytes", f.bytes());
        self.metrics.add("spilled_rows", f.rows() as u64);
        self.runs.push(Run::File(f));
        Ok(())
    }

    fn spill_memory_runs(&mut self) -> Result<()> {
        let runs = std::mem::take(&mut self.runs);
        for r in runs {
            let r = match r {
                Run::Memory(b) => self.write_run(&b)?,
                f => f,
            };
            self.runs.push(r);
        }
        Ok(())
    }

    /// After the fall-back: keeps raw rows; sorts them into a run when memory is refused.
    fn buffer_raw(&mut self, keys: Vec<ArrayRef>, inputs: Vec<Vec<ArrayRef>>) -> Result<()> {
        let Some(buf) = self.fallback.as_mut() else {
            return Ok(());
        };
        let bytes = buf.push(&keys, inputs)?;
        if self.reservation.try_grow(bytes) {
            self.peak = self.peak.max(self.reservation.size());
        } else {
            self.spill_memory_runs()?;
            let run = self.sort_buffer(false)?;
            let run = self.write_run(&run)?;
            self.push_file_run(run)?;
            self.reservation.try_resize(self.runs_in_memory_bytes());
        }
        Ok(())
    }

    /// Sorts the fall-back buffer by key and aggregates it, after the states of the runs still
    /// in memory (rows that arrived before it), into one key-sorted run: states, or final
    /// values when `emit_final`.
    ///
    /// The sort ranks the distinct keys (interned as rows arrived) instead of moving rows:
    /// every row is aggregated into its key's rank, batch after batch in arrival order. Groups
    /// therefore come out in key order with each group's values in arrival order, which is
    /// what a stable sort of the rows followed by sort aggregation gives, without copying the
    /// rows into sorted order first.
    fn sort_buffer(&mut self, emit_final: bool) -> Result<Vec<RecordBatch>> {
        let fresh = SortBuffer::new(&self.key_types)?;
        let Some(mut buf) = self.fallback.as_mut().map(|b| std::mem::replace(b, fresh)) else {
            return Ok(Vec::new());
        };
        let nk = self.keys.len();
        let (memory, files): (Vec<Run>, Vec<Run>) = std::mem::take(&mut self.runs)
            .into_iter()
            .partition(|r| matches!(r, Run::Memory(_)));
        self.runs = files;
        // Runs in memory hold states of groups the map had before the fall-back.
        let mut earlier = Vec::new();
        for run in memory {
            let Run::Memory(batches) = run else { continue };
            for b in batches {
                let mut ids = Vec::new();
                buf.keys
                    .intern(&b.columns()[..nk], b.num_rows(), &mut ids)?;
                earlier.push((b, ids));
            }
        }
        let distinct = buf.keys.emit()?;
        let groups = distinct.first().map_or(0, |k| k.len());
        if groups == 0 {
            return Ok(Vec::new());
        }
        let order = ferrospark_sort::sort_indices(&distinct, &self.converter)?;
        let mut rank = vec![0u32; groups];
        for (r, &id) in order.values().iter().enumerate() {
            rank[id as usize] = r as u32;
        }
        let mut accs = self
            .aggs
            .iter()
            .map(AggregateExpr::create_accumulator)
            .collect::<Result<Vec<_>>>()?;
        let mut ranked = Vec::new();
        for (b, ids) in &earlier {
            ranked.clear();
            ranked.extend(ids.iter().map(|&id| rank[id as usize]));
            for (acc, states) in accs.iter_mut().zip(self.state_columns(b)) {
                acc.merge_batch(&states, &ranked, groups)?;
            }
        }
        drop(earlier);
        let rows: usize = buf.batches.iter().map(|(_, ids)| ids.len()).sum();
        for acc in &mut accs {
            acc.reserve_rows(rows);
        }
        for (inputs, ids) in std::mem::take(&mut buf.batches) {
            ranked.clear();
            ranked.extend(ids.iter().map(|&id| rank[id as usize]));
            for ((acc, agg), input) in accs.iter_mut().zip(&self.aggs).zip(&inputs) {
                if agg.mode.reads_raw() {
                    acc.update_batch(input, &ranked, groups)?;
                } else {
                    acc.merge_batch(input, &ranked, groups)?;
                }
            }
        }
        let mut columns = distinct
            .iter()
            .map(|k| arrow_select::take::take(k.as_ref(), &order, None))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        emit_columns(&mut accs, &self.aggs, emit_final, &mut columns)?;
        let schema = if emit_final {
            self.output_schema.clone()
        } else {
            self.run_schema.clone()
        };
        let all = RecordBatch::try_new(schema, columns)?;
        Ok(slices(&all, self.options.batch_size))
    }

    /// Ends the input; output is pulled with [`Self::next_output`].
    pub fn finish(&mut self) -> Result<()> {
        if !matches!(self.phase, Phase::Hashing) {
            return Ok(());
        }
        let started = Instant::now();
        if self.keys.is_empty()
            && self.group_values.is_empty()
            && self.runs.is_empty()
            && self.fallback.is_none()
        {
            // A global aggregate has one row even over no input.
            let inputs: Vec<Vec<ArrayRef>> = self
                .aggs
                .iter()
                .map(|a| {
                    if a.mode.reads_raw() {
                        a.args
                            .iter()
                            .map(|e| new_empty_array(&e.data_type()))
                            .collect()
                    } else {
                        a.state_fields()
                            .iter()
                            .map(|f| new_empty_array(f.data_type()))
                            .collect()
                    }
                })
                .collect();
            self.hash(&[], &inputs, 0)?;
        }
        self.metrics.add("peak_memory", self.peak);
        if self.runs.is_empty() && self.fallback.is_none() {
            let groups = self.group_values.len();
            self.metrics.add("groups", groups as u64);
            let mut columns = self.group_values.emit()?;
            emit_columns(&mut self.accs, &self.aggs, true, &mut columns)?;
            let options = RecordBatchOptions::new().with_row_count(Some(groups));
            let all =
                RecordBatch::try_new_with_options(self.output_schema.clone(), columns, &options)?;
            self.phase = Phase::Emitting(slices(&all, self.options.batch_size).into());
        } else if self.runs.iter().all(|r| matches!(r, Run::Memory(_))) {
            // Nothing spilled: the sorted buffer, with the runs in memory folded in, is the
            // output. (After the fall-back the map stays empty.)
            let out = self.sort_buffer(true)?;
            let groups: usize = out.iter().map(RecordBatch::num_rows).sum();
            self.metrics.add("groups", groups as u64);
            self.phase = Phase::Emitting(out.into());
        } else {
            let run = self.sort_buffer(false)?;
            if !run.is_empty() {
                self.runs.push(Run::Memory(run));
            }
            self.spill_map(false)?;
            self.phase = Phase::Emitting(self.merge_runs()?);
        }
        let passed = std::mem::take(&mut self.passed);
        if let Phase::Emitting(out) = &mut self.phase {
            out.extend(passed);
        }
        self.metrics.add_elapsed("compute_time_ns", started);
        Ok(())
    }

    /// Merges every run with a sort aggregator into the output.
    fn merge_runs(&mut self) -> Result<VecDeque<RecordBatch>> {
        let runs = std::mem::take(&mut self.runs);
        let mut out = VecDeque::new();
        self.merge_into(&runs, true, &mut |b| {
            out.push_back(b);
            Ok(())
        })?;
        let groups: usize = out.iter().map(RecordBatch::num_rows).sum();
        self.metrics.add("groups", groups as u64);
        Ok(out)
    }

    /// Each aggregate's state columns in a batch of `run_schema` (keys first).
    fn state_columns(&self, b: &RecordBatch) -> Vec<Vec<ArrayRef>> {
        let mut at = self.keys.len();
        self.aggs
            .iter()
            .map(|a| {
                let w = a.state_fields().len();
                at += w;
                b.columns()[at - w..at].to_vec()
            })
            .collect()
    }

    /// Fresh merging accumulators for a sort aggregator, and whether each hands out final
    /// values.
    fn sort_slots(&self, emit_final: impl Fn(&AggregateExpr) -> bool) -> Result<Vec<SortAggSlot>> {
        self.aggs
            .iter()
            .map(|a| {
                Ok(SortAggSlot {
                    acc: a.create_accumulator()?,
                    raw: false,
                    emit_final: emit_final(a),
                })
            })
            .collect()
    }

    /// Merges sorted `runs` through a sort aggregator, handing each batch to `sink`: output
    /// batches when `output`, else one sorted run of states.
    fn merge_into(
        &self,
        runs: &[Run],
        output: bool,
        sink: &mut dyn FnMut(RecordBatch) -> Result<()>,
    ) -> Result<()> {
        let slots = self.sort_slots(|a| output && a.mode.emits_final())?;
        let schema = if output {
            self.output_schema.clone()
        } else {
            self.run_schema.clone()
        };
        let mut agg = SortAggregator::new(&self.key_types, slots, schema)?;
        let nk = self.keys.len();
        let mut merger = RunMerger::new(
            runs,
            ferrospark_sort::key_converter(&self.key_types)?,
            nk,
            self.options.batch_size.max(1),
            self.run_schema.clone(),
        )?;
        while let Some(b) = merger.next_batch()? {
            let keys = b.columns()[..nk].to_vec();
            if let Some(o) = agg.push(&keys, &self.state_columns(&b))? {
                sink(o)?;
            }
        }
        if let Some(o) = agg.finish()? {
            sink(o)?;
        }
        Ok(())
    }

    /// The next output batch; `None` when all are out. Calls [`Self::finish`] if needed.
    pub fn next_output(&mut self) -> Result<Option<RecordBatch>> {
        if matches!(self.phase, Phase::Hashing) {
            self.finish()?;
        }
        let next = match &mut self.phase {
            Phase::Emitting(q) => q.pop_front(),
            Phase::Hashing | Phase::Done => None,
        };
        match &next {
            Some(b) => {
                self.metrics.add("output_rows", b.num_rows() as u64);
                self.metrics.add("output_batches", 1);
            }
            None => {
                self.phase = Phase::Done;
                self.reservation.free();
            }
        }
        Ok(next)
    }

    /// Runs every batch of `input` through the operator and collects the output.
    pub fn run(
        mut self,
        input: impl IntoIterator<Item = Result<RecordBatch>>,
    ) -> Result<(Vec<RecordBatch>, MetricsSet)> {
        for b in input {
            self.push(&b?)?;
        }
        self.finish()?;
        let mut out = Vec::new();
        while let Some(b) = self.next_output()? {
            out.push(b);
        }
        Ok((out, self.metrics.clone()))
    }
}
