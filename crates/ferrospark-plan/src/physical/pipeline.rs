//! Parallel pipelines: streaming operators run inside a Parquet scan's worker threads.
//!
//! ```text
//!   scan thread 1: decode row group ─▶ filter ─▶ project ─▶ probe ─▶ probe ─▶ sink 1 (partial agg)
//!   scan thread 2: decode row group ─▶ filter ─▶ project ─▶ probe ─▶ probe ─▶ sink 2
//!                                                                            └─▶ final step
//! ```
//! A node that can stream (filter, projection, the probe side of a built hash join) extends
//! its child's pipeline with a per-thread [`BatchOp`]; a node that must see all its input
//! (aggregation, sort, a join's build side, the query's result) runs the pipeline with one
//! sink per thread. Every thread claims row groups from the same scan, so parallelism comes
//! from row groups, not only from files.

use std::sync::Arc;

use arrow_array::RecordBatch;
use ferrospark_common::{MetricsSet, Result};
use ferrospark_scan::ParquetScan;

use super::{counted, BatchStream};

/// One thread's instance of a streaming operator.
pub trait BatchOp: Send {
    /// Transforms one batch, appending its output to `out`.
    fn apply(&mut self, batch: RecordBatch, out: &mut Vec<RecordBatch>) -> Result<()>;

    /// Called on every thread's instance once every batch has gone through, one thread after
    /// another, `last` on the final one: what the operator emits only at the end (an outer
    /// join's unmatched build rows, once every thread's matches are known) goes to `out`,
    /// through the operators after it on that thread and into its sink.
    fn finish(&mut self, _last: bool, _out: &mut Vec<RecordBatch>) -> Result<()> {
        Ok(())
    }
}

/// Makes one thread's instance of an operator.
pub type OpFactory = Arc<dyn Fn() -> Result<Box<dyn BatchOp>> + Send + Sync>;

/// Where a pipeline's batches come from.
pub enum PipelineSource {
    /// A planned Parquet reader: every scan thread claims its row groups.
    Parquet(ParquetScan),
    /// Batches already read (another scan's kept output, see [`super::shared_scan`]): run
    /// on the calling thread.
    Batches(Vec<RecordBatch>),
}

/// A planned scan and the operators its threads run on each batch.
pub struct Pipeline {
    /// The batches' source.
    pub source: PipelineSource,
    /// Operators, first to last.
    pub ops: Vec<OpFactory>,
    /// Where the reader's counters go when the run ends: (reader's, node's).
    pub scan_metrics: Option<(MetricsSet, MetricsSet)>,
    /// Whether the only operator is the scan's own conversion to its schema, so a consumer
    /// may change how the reader represents columns (dictionary-encoded grouping keys).
    pub bare: bool,
    /// Called once every batch has gone through (a shared scan keeps its output then).
    pub on_done: Option<Arc<dyn Fn() + Send + Sync>>,
}

impl Pipeline {
    /// This pipeline with `op` after its operators.
    pub fn then(mut self, op: OpFactory) -> Self {
        self.ops.push(op);
        self.bare = false;
        self
    }

    /// Runs the pipeline on every scan thread, each feeding its own sink made by
    /// `make_sink`; returns the sinks.
    pub fn run<S, M, C>(&self, make_sink: M, consume: C) -> Result<Vec<S>>
    where
        S: Send,
        M: Fn() -> Result<S> + Sync,
        C: Fn(&mut S, RecordBatch) -> Result<()> + Sync,
    {
        let make = || -> Result<(Vec<Box<dyn BatchOp>>, S)> {
            let ops = self.ops.iter().map(|f| f()).collect::<Result<Vec<_>>>()?;
            Ok((ops, make_sink()?))
        };
        let step = |(ops, sink): &mut (Vec<Box<dyn BatchOp>>, S), batch: RecordBatch| {
            through(ops, vec![batch], sink, &consume)
        };
        let states = match &self.source {
            PipelineSource::Parquet(scan) => scan.fold_tasks(make, step),
            PipelineSource::Batches(batches) => (|| {
                let mut state = make()?;
                for b in batches {
                    step(&mut state, b.clone())?;
                }
                Ok(vec![state])
            })(),
        };
        if let Some((from, to)) = &self.scan_metrics {
            for (name, v) in from.snapshot() {
                to.add(name, v);
            }
        }
        let mut states = states?;
        // Operators that emit at the end, in order, each over every thread's instance; what
        // they emit runs through the later operators of the thread that emitted it.
        let threads = states.len();
        for i in 0..self.ops.len() {
            for (t, state) in states.iter_mut().enumerate() {
                let mut cur = Vec::new();
                state.0[i].finish(t + 1 == threads, &mut cur)?;
                if cur.is_empty() {
                    continue;
                }
                let (ops, sink) = state;
                through(&mut ops[i + 1..], cur, sink, &consume)?;
            }
        }
        let sinks = states.into_iter().map(|(_, s)| s).collect();
        if let Some(done) = &self.on_done {
            done();
        }
        Ok(sinks)
    }

    /// Runs the pipeline collecting every output batch (in no particular order).
    pub fn collect(&self) -> Result<Vec<RecordBatch>> {
        Ok(self
            .run(
                || Ok(Vec::new()),
                |v: &mut Vec<RecordBatch>, b| {
                    v.push(b);
                    Ok(())
                },
            )?
            .into_iter()
            .flatten()
            .collect())
    }
}

/// Runs `batches` through `ops`, first to last, and what comes out into `sink`.
fn through<S>(
    ops: &mut [Box<dyn BatchOp>],
    mut batches: Vec<RecordBatch>,
    sink: &mut S,
    consume: &impl Fn(&mut S, RecordBatch) -> Result<()>,
) -> Result<()> {
    for op in ops.iter_mut() {
        if batches.is_empty() {
            return Ok(());
        }
        let mut next = Vec::with_capacity(batches.len());
        for b in batches {
            op.apply(b, &mut next)?;
        }
        batches = next;
    }
    for b in batches {
        consume(sink, b)?;
    }
    Ok(())
}

/// A streaming operator's work on one batch (filter, project, expand): its output appended.
pub type BatchFn = Arc<dyn Fn(RecordBatch, &mut Vec<RecordBatch>) -> Result<()> + Send + Sync>;

impl Pipeline {
    /// This pipeline with `f` run on each thread's batches, timed and counted into `metrics`.
    pub fn then_fn(self, f: BatchFn, metrics: MetricsSet) -> Self {
        let op: OpFactory = Arc::new(move || {
            let f = f.clone();
            Ok(FnOp::boxed(move |b, out| f(b, out), metrics.clone()))
        });
        self.then(op)
    }
}

/// `input` with `f` run on every batch, timed (`elapsed_compute_ns`) and counted into
/// `metrics`: the one-stream form of [`Pipeline::then_fn`].
pub fn stream_through(input: BatchStream, f: BatchFn, metrics: MetricsSet) -> BatchStream {
    let m = metrics.clone();
    let stream = input.flat_map(move |b| {
        let t = std::time::Instant::now();
        let mut out = Vec::new();
        let r = b.and_then(|b| f(b, &mut out));
        m.add_elapsed("elapsed_compute_ns", t);
        match r {
            Ok(()) => out.into_iter().map(Ok).collect::<Vec<_>>(),
            Err(e) => vec![Err(e)],
        }
    });
    counted(Box::new(stream), metrics)
}

/// A [`BatchOp`] from a closure, counting its output into `metrics`.
pub struct FnOp<F> {
    f: F,
    metrics: MetricsSet,
}

impl<F> FnOp<F>
where
    F: FnMut(RecordBatch, &mut Vec<RecordBatch>) -> Result<()> + Send + 'static,
{
    /// Boxes `f`.
    pub fn boxed(f: F, metrics: MetricsSet) -> Box<dyn BatchOp> {
        Box::new(FnOp { f, metrics })
    }
}

impl<F> BatchOp for FnOp<F>
where
    F: FnMut(RecordBatch, &mut Vec<RecordBatch>) -> Result<()> + Send,
{
    fn apply(&mut self, batch: RecordBatch, out: &mut Vec<RecordBatch>) -> Result<()> {
        let t = std::time::Instant::now();
        let before = out.len();
        (self.f)(batch, out)?;
        self.metrics.add_elapsed("elapsed_compute_ns", t);
        for b in &out[before..] {
            self.metrics.add("output_rows", b.num_rows() as u64);
            self.metrics.add("output_batches", 1);
        }
        Ok(())
    }
}
