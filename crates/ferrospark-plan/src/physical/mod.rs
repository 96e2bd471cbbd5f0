//! The physical plan: one [`ExecutionPlan`] trait every operator implements, and batches
//! streamed between them.
//!
//! `execute` returns a pull stream of batches. Streaming operators (filter, projection,
//! limit, union, a join's probe side) transform batches as they pass; operators that must see
//! all their input first (aggregation, sort, a join's build side, window) consume their child
//! when first pulled. One [`TaskContext`] per query carries its configuration and its memory
//! pool, so `ferrospark.memory.limit` bounds the whole query.

pub mod aggregate;
pub mod basic;
pub mod expand;
pub mod file_scan;
pub mod generate;
pub mod join;
pub mod key_equivalence;
pub mod pipeline;
pub mod planner;
pub mod reuse;
pub mod runtime_filter;
pub mod scan;
pub mod selectivity;
pub mod shared_build;
pub mod shared_scan;
pub mod sort;
pub mod stats;
pub mod window;

use std::fmt::{Debug, Write};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use ferrospark_common::{
    Config, MemoryPool, MetricValue, MetricsSet, QueryProgress, Result, SpillDir,
};

/// A stream of batches.
pub type BatchStream = Box<dyn Iterator<Item = Result<RecordBatch>> + Send>;

/// What one query's operators share.
#[derive(Debug)]
pub struct TaskContext {
    /// Session configuration.
    pub cfg: Config,
    /// The query's memory pool (`ferrospark.memory.limit`).
    pub pool: MemoryPool,
    /// Where operators spill.
    pub spill_dir: SpillDir,
    /// Rows per output batch.
    pub batch_size: usize,
    /// The query's progress (its scans' tasks) and its cancellation.
    pub progress: Arc<QueryProgress>,
    /// Runtime filters built so far in this run, by id (see [`runtime_filter`]).
    pub runtime_filters: runtime_filter::RuntimeFilters,
    /// Results kept for reuse in this run, by reuse id (see [`reuse`]).
    pub reused: reuse::ReusedResults,
    /// Rows one scan read for the others of its group, by share id (see [`shared_scan`]).
    pub shared_scans: shared_scan::SharedScans,
    /// Built broadcast join sides shared with the other tasks of the stage this worker runs
    /// (see [`shared_build`]); `None` in process, where a query builds each side once anyway.
    pub shared_builds: Option<Arc<shared_build::SharedBuilds>>,
}

impl TaskContext {
    /// A context for one query under `cfg`.
    pub fn new(cfg: &Config) -> Result<Self> {
        Self::with_progress(cfg, Arc::new(QueryProgress::new()))
    }

    /// A context whose progress the caller watches (and can cancel through).
    pub fn with_progress(cfg: &Config, progress: Arc<QueryProgress>) -> Result<Self> {
        Ok(Self {
            pool: MemoryPool::new(cfg.memory_limit()?),
            spill_dir: SpillDir::new(cfg.spill_dir()),
            batch_size: cfg.batch_size()?,
            cfg: cfg.clone(),
            progress,
            runtime_filters: Default::default(),
            reused: Default::default(),
            shared_scans: Default::default(),
            shared_builds: None,
        })
    }

    /// This context, finding built broadcast sides in `builds` (and keeping its own there).
    pub fn with_shared_builds(mut self, builds: Option<Arc<shared_build::SharedBuilds>>) -> Self {
        self.shared_builds = builds;
        self
    }
}

/// The metrics every operator records.
pub const BASE_METRICS: &[(&str, MetricValue)] = &[
    ("output_rows", MetricValue::Count),
    ("output_batches", MetricValue::Count),
    ("elapsed_compute_ns", MetricValue::TimeNs),
];

/// A metrics set with the base counters and `extra`.
pub fn metrics_with(extra: &[(&'static str, MetricValue)]) -> MetricsSet {
    let mut all: Vec<(&'static str, MetricValue)> = BASE_METRICS.to_vec();
    for e in extra {
        if !all.iter().any(|(n, _)| *n == e.0) {
            all.push(*e);
        }
    }
    MetricsSet::new(&all)
}

/// A physical operator.
pub trait ExecutionPlan: Send + Sync + Debug {
    /// Spark's name for the operator (`Filter`, `HashAggregate`, `BroadcastHashJoin`, ...).
    fn name(&self) -> String;
    /// The rest of its EXPLAIN line (keys, functions, pushed filters, ...).
    fn describe(&self) -> String;
    /// Its output schema (fields named `name#id`).
    fn schema(&self) -> SchemaRef;
    /// Its inputs.
    fn children(&self) -> Vec<Arc<dyn ExecutionPlan>>;
    /// Starts producing its output.
    fn execute(&self, ctx: &Arc<TaskContext>) -> Result<BatchStream>;
    /// Its metrics (meaningful once run).
    fn metrics(&self) -> &MetricsSet;
    /// When the operator can run inside the worker threads of a Parquet scan below it (a
    /// scan, a filter, a projection, a built join's probe side): that parallel pipeline.
    fn pipeline(&self, _ctx: &Arc<TaskContext>) -> Result<Option<pipeline::Pipeline>> {
        Ok(None)
    }
    /// Whether [`ExecutionPlan::pipeline`] gives a pipeline (known before running).
    fn streams_in_scan(&self) -> bool {
        false
    }
    /// Takes join runtime filter `filter` on output column `column` (`name#id`) down to the
    /// scan producing that column, where rows outside the join's build keys are dropped
    /// before their other columns decode. A node passes it on only where such rows reach the
    /// join unchanged or as NULL (which never equals a key), so dropping them early changes
    /// nothing the join outputs. Returns whether a scan took it.
    fn accept_runtime_filter(&self, _column: &str, _filter: &runtime_filter::Target) -> bool {
        false
    }
}

/// Runs `plan` to completion: on every scan thread when it forms a pipeline, else as one
/// stream.
pub fn collect_parallel(
    plan: &Arc<dyn ExecutionPlan>,
    ctx: &Arc<TaskContext>,
) -> Result<Vec<RecordBatch>> {
    match plan.pipeline(ctx)? {
        Some(p) => p.collect(),
        None => plan.execute(ctx)?.collect(),
    }
}

/// Counts a stream's output rows and batches into `metrics`.
pub fn counted(stream: BatchStream, metrics: MetricsSet) -> BatchStream {
    Box::new(stream.inspect(move |b| {
        if let Ok(b) = b {
            metrics.add("output_rows", b.num_rows() as u64);
            metrics.add("output_batches", 1);
        }
    }))
}

/// The names of `schema`'s fields, as plans print them.
pub(crate) fn field_names(schema: &SchemaRef) -> Vec<&str> {
    schema.fields().iter().map(|f| f.name().as_str()).collect()
}

/// Spark-style text of a physical plan: `*`-free operator lines, children under `+- `,
/// each with its metrics when `with_metrics`.
pub fn explain_physical(plan: &Arc<dyn ExecutionPlan>, with_metrics: bool) -> String {
    let mut out = String::new();
    walk(plan.as_ref(), "", "", with_metrics, &mut out);
    out
}

/// One operator's metrics as EXPLAIN prints them (`name=value`, zeros left out).
pub fn metrics_text(m: &MetricsSet) -> String {
    let mut parts = Vec::new();
    for (name, v) in m.snapshot() {
        if v == 0 && name != "output_rows" {
            continue;
        }
        if name.ends_with("_ns") {
            parts.push(format!(
                "{}={:.1} ms",
                name.trim_end_matches("_ns"),
                v as f64 / 1e6
            ));
        } else if name.ends_with("bytes") {
            parts.push(format!("{name}={:.1} MiB", v as f64 / (1024.0 * 1024.0)));
        } else {
            parts.push(format!("{name}={v}"));
        }
    }
    parts.join(", ")
}

fn walk(plan: &dyn ExecutionPlan, first: &str, rest: &str, with_metrics: bool, out: &mut String) {
    let d = plan.describe();
    let _ = write!(out, "{first}{}", plan.name());
    if !d.is_empty() {
        let _ = write!(out, " {d}");
    }
    if with_metrics {
        let _ = write!(out, "  [{}]", metrics_text(plan.metrics()));
    }
    out.push('\n');
    let kids = plan.children();
    let n = kids.len();
    for (i, k) in kids.iter().enumerate() {
        if i + 1 < n {
            walk(
                k.as_ref(),
                &format!("{rest}:- "),
                &format!("{rest}:  "),
                with_metrics,
                out,
            );
        } else {
            walk(
                k.as_ref(),
                &format!("{rest}+- "),
                &format!("{rest}   "),
                with_metrics,
                out,
            );
        }
    }
}

/// Collects a stream.
pub fn collect(stream: BatchStream) -> Result<Vec<RecordBatch>> {
    stream.collect()
}
