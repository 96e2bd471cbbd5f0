//! Joins: the operators of `ferrospark-join` (broadcast / shuffled hash, sort-merge, nested
//! loop, cartesian) behind the operator trait. The build side is read first, then the probe
//! side streams through.

use std::sync::{Arc, Mutex};

use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::SchemaRef;
use ferrospark_common::{FerroError, MetricValue, MetricsSet, Result};
use ferrospark_expr::{bind, evaluate, BindContext, Expr, PhysicalExpr};
use ferrospark_join::{
    join_schema, BuildSide, JoinAlgorithm, JoinExec, JoinStrategy, JoinType, JOIN_METRICS,
};

use super::pipeline::{BatchOp, FnOp, OpFactory, Pipeline};
use super::runtime_filter::Target;
use super::shared_build::SharedBuild;
use super::{counted, metrics_with, BatchStream, ExecutionPlan, TaskContext};
use crate::logical::expr_text;

/// A join operator: equi-keys, a residual condition, the strategy Spark's JoinSelection chose.
#[derive(Debug)]
pub struct JoinPlanExec {
    /// Left input.
    pub left: Arc<dyn ExecutionPlan>,
    /// Right input.
    pub right: Arc<dyn ExecutionPlan>,
    /// Join type.
    pub join_type: JoinType,
    /// Left keys (over the left schema).
    pub left_keys: Vec<Expr>,
    /// Right keys (over the right schema).
    pub right_keys: Vec<Expr>,
    /// `<=>` keys.
    pub null_safe: Vec<bool>,
    /// Residual condition over left then right columns.
    pub condition: Option<Expr>,
    /// The strategy.
    pub strategy: JoinStrategy,
    /// The side built.
    pub build_side: BuildSide,
    /// Runtime filters made from the build keys: (filter id, key position).
    pub runtime_filters: Vec<(usize, usize)>,
    /// The key of its built side among the tasks of a stage that share it (a build side of
    /// broadcast rows only; see [`super::shared_build`]).
    pub shared_build: Option<String>,
    metrics: MetricsSet,
}

impl JoinPlanExec {
    /// Whether the probe side can stream on several threads against one built side (no
    /// build rows kept unmatched, a hash table to share).
    fn forkable(&self) -> bool {
        self.forkable_untracked() || self.forkable_tracked()
    }

    /// Probing keeps no state per build row: forks share nothing but the built table.
    fn forkable_untracked(&self) -> bool {
        self.algorithm() == JoinAlgorithm::Hash
            && matches!(
                (self.join_type, self.build_side),
                (JoinType::Inner, _)
                    | (
                        JoinType::LeftOuter
                            | JoinType::LeftSemi
                            | JoinType::LeftAnti
                            | JoinType::NullAwareAnti,
                        BuildSide::Right,
                    )
                    | (JoinType::RightOuter, BuildSide::Left)
            )
    }

    /// Probing notes which build rows matched (the build side is kept, or is the output of a
    /// semi / anti join): each fork notes its own, and the rows the join keeps come out once
    /// every fork is done (TPC-H Q13's customers without orders).
    fn forkable_tracked(&self) -> bool {
        self.algorithm() == JoinAlgorithm::Hash
            && matches!(
                (self.join_type, self.build_side),
                (
                    JoinType::LeftOuter | JoinType::LeftSemi | JoinType::LeftAnti,
                    BuildSide::Left
                ) | (JoinType::RightOuter, BuildSide::Right)
                    | (JoinType::FullOuter, _)
            )
    }

    /// The operator with its build side read and indexed: a fork of the side another task of
    /// the stage built, when this join shares its build side and one has.
    fn build(&self, ctx: &Arc<TaskContext>) -> Result<JoinExec> {
        let (Some(key), Some(shared)) = (&self.shared_build, &ctx.shared_builds) else {
            return self.build_here(ctx);
        };
        if !self.forkable_untracked() {
            return self.build_here(ctx);
        }
        let (built, fresh) = shared.get_or_build(key, || {
            let exec = self.build_here(ctx)?;
            let filters = self
                .runtime_filters
                .iter()
                .filter_map(|&(id, _)| ctx.runtime_filters.get(id).map(|set| (id, set)))
                .collect();
            Ok(SharedBuild {
                exec: Mutex::new(exec),
                filters,
            })
        })?;
        if !fresh {
            for (id, set) in &built.filters {
                ctx.runtime_filters.insert(*id, set.clone());
            }
            self.metrics.add("build_reused", 1);
        }
        let fork = built
            .exec
            .lock()
            .map_err(|_| FerroError::Internal("join build poisoned".into()))?
            .fork_probe();
        fork
    }

    /// The operator with its build side read and indexed by this task.
    fn build_here(&self, ctx: &Arc<TaskContext>) -> Result<JoinExec> {
        let (ls, rs) = (self.left.schema(), self.right.schema());
        let bind_keys = |keys: &[Expr], schema: &SchemaRef| {
            let bctx = BindContext::for_session(schema, &ctx.cfg);
            keys.iter()
                .map(|k| bind(k, &bctx))
                .collect::<Result<Vec<_>>>()
        };
        let lk = bind_keys(&self.left_keys, &ls)?;
        let rk = bind_keys(&self.right_keys, &rs)?;
        let filter_keys: Vec<(usize, PhysicalExpr)> = self
            .runtime_filters
            .iter()
            .map(|&(id, i)| match self.build_side {
                BuildSide::Left => (id, lk[i].clone()),
                BuildSide::Right => (id, rk[i].clone()),
            })
            .collect();
        let joined = join_schema(&ls, &rs, JoinType::Inner);
        let cond = self
            .condition
            .as_ref()
            .map(|c| {
                ferrospark_expr::bind_predicate(c, &BindContext::for_session(&joined, &ctx.cfg))
            })
            .transpose()?;
        let mut exec = JoinExec::try_new(
            ls,
            rs,
            lk,
            rk,
            self.null_safe.clone(),
            cond,
            self.join_type,
            self.algorithm(),
            self.build_side,
            ctx.batch_size,
            &ctx.pool,
        )?
        .with_spill_dir(ctx.spill_dir.clone())
        .with_sort_merge_fallback(self.strategy == JoinStrategy::ShuffledHash);
        let build = match self.build_side {
            BuildSide::Left => &self.left,
            BuildSide::Right => &self.right,
        };
        let mut filters =
            RuntimeFilterBuilder::new(filter_keys, ctx.cfg.runtime_filter_max_items()?);
        for b in super::collect_parallel(build, ctx)? {
            filters.push(&b)?;
            exec.push_build(&b)?;
        }
        exec.finish_build()?;
        filters.publish(&ctx.runtime_filters, &self.metrics);
        for (name, v) in exec.metrics().snapshot() {
            if name.starts_with("build") {
                self.metrics.add(name, v);
            }
        }
        Ok(exec)
    }

    /// A join of `left` and `right`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        left: Arc<dyn ExecutionPlan>,
        right: Arc<dyn ExecutionPlan>,
        join_type: JoinType,
        left_keys: Vec<Expr>,
        right_keys: Vec<Expr>,
        null_safe: Vec<bool>,
        condition: Option<Expr>,
        strategy: JoinStrategy,
        build_side: BuildSide,
    ) -> Self {
        Self {
            left,
            right,
            join_type,
            left_keys,
            right_keys,
            null_safe,
            condition,
            strategy,
            build_side,
            runtime_filters: Vec::new(),
            shared_build: None,
            metrics: metrics_with(
                &[JOIN_METRICS, RUNTIME_FILTER_METRICS, SHARED_BUILD_METRICS].concat(),
            ),
        }
    }

    /// This join with runtime filters `(id, key position)` made from its build keys.
    pub fn with_runtime_filters(mut self, filters: Vec<(usize, usize)>) -> Self {
        self.runtime_filters = filters;
        self
    }

    /// This join, sharing its built side under `key` with the other tasks of its stage.
    pub fn with_shared_build(mut self, key: Option<String>) -> Self {
        self.shared_build = key;
        self
    }

    fn algorithm(&self) -> JoinAlgorithm {
        match self.strategy {
            JoinStrategy::BroadcastHash | JoinStrategy::ShuffledHash => JoinAlgorithm::Hash,
            JoinStrategy::SortMerge => JoinAlgorithm::SortMerge,
            JoinStrategy::BroadcastNestedLoop | JoinStrategy::Cartesian => {
                JoinAlgorithm::NestedLoop
            }
        }
    }
}

impl ExecutionPlan for JoinPlanExec {
    fn name(&self) -> String {
        self.strategy.operator_name().into()
    }
    fn describe(&self) -> String {
        let lk: Vec<String> = self.left_keys.iter().map(expr_text).collect();
        let rk: Vec<String> = self.right_keys.iter().map(expr_text).collect();
        let mut s = String::new();
        if !lk.is_empty() {
            s.push_str(&format!("[{}], [{}], ", lk.join(", "), rk.join(", ")));
        }
        s.push_str(self.join_type.name());
        if !matches!(
            self.strategy,
            JoinStrategy::SortMerge | JoinStrategy::Cartesian
        ) {
            s.push_str(match self.build_side {
                BuildSide::Left => ", BuildLeft",
                BuildSide::Right => ", BuildRight",
            });
        }
        if let Some(c) = &self.condition {
            s.push_str(&format!(", {}", expr_text(c)));
        }
        s
    }
    fn schema(&self) -> SchemaRef {
        join_schema(&self.left.schema(), &self.right.schema(), self.join_type)
    }
    fn children(&self) -> Vec<Arc<dyn ExecutionPlan>> {
        vec![self.left.clone(), self.right.clone()]
    }
    fn execute(&self, ctx: &Arc<TaskContext>) -> Result<BatchStream> {
        let exec = self.build(ctx)?;
        let probe = match self.build_side {
            BuildSide::Left => &self.right,
            BuildSide::Right => &self.left,
        };
        let stream = JoinStream {
            exec,
            probe: probe.execute(ctx)?,
            state: ProbeState::Probing,
            metrics: self.metrics.clone(),
        };
        Ok(counted(Box::new(stream), self.metrics.clone()))
    }
    fn streams_in_scan(&self) -> bool {
        self.forkable()
            && match self.build_side {
                BuildSide::Left => self.right.streams_in_scan(),
                BuildSide::Right => self.left.streams_in_scan(),
            }
    }
    fn pipeline(&self, ctx: &Arc<TaskContext>) -> Result<Option<Pipeline>> {
        if !self.forkable() {
            return Ok(None);
        }
        let probe = match self.build_side {
            BuildSide::Left => &self.right,
            BuildSide::Right => &self.left,
        };
        if !probe.streams_in_scan() {
            return Ok(None);
        }
        let exec = self.build(ctx)?;
        if exec.can_fork_tracking_probe() {
            let Some(p) = probe.pipeline(ctx)? else {
                return Ok(None);
            };
            let base = Arc::new(Mutex::new(exec));
            let metrics = self.metrics.clone();
            let op: OpFactory = Arc::new(move || {
                let fork = base
                    .lock()
                    .map_err(|_| FerroError::Internal("join build poisoned".into()))?
                    .fork_tracking_probe()?;
                Ok(Box::new(TrackingProbe {
                    fork,
                    base: base.clone(),
                    metrics: metrics.clone(),
                }))
            });
            return Ok(Some(p.then(op)));
        }
        if !exec.can_fork_probe() {
            return Ok(None);
        }
        let Some(p) = probe.pipeline(ctx)? else {
            return Ok(None);
        };
        let base = Arc::new(Mutex::new(exec));
        let metrics = self.metrics.clone();
        let op: OpFactory = Arc::new(move || {
            let mut fork = base
                .lock()
                .map_err(|_| FerroError::Internal("join build poisoned".into()))?
                .fork_probe()?;
            let probe = metrics.clone();
            Ok(FnOp::boxed(
                move |b, out| probe_fork(&mut fork, &b, out, &probe),
                metrics.clone(),
            ))
        });
        Ok(Some(p.then(op)))
    }
    fn metrics(&self) -> &MetricsSet {
        &self.metrics
    }
    fn accept_runtime_filter(&self, column: &str, filter: &Target) -> bool {
        // A column of either side reaches an upper join unchanged or, where this join
        // null-extends its side, as NULL; either way rows dropped early would not match there.
        // A null-aware anti join must still see its right side's NULL keys, but that side's
        // columns are not in its output, so they never get here.
        let side = |p: &Arc<dyn ExecutionPlan>| {
            p.schema().fields().iter().any(|f| f.name() == column)
                && p.accept_runtime_filter(column, filter)
        };
        side(&self.left) || side(&self.right)
    }
}

/// Probes `fork` with `batch`, its output appended to `out`. A fork's own counters are
/// dropped with it, so its probe side is counted into the join's `metrics` here.
fn probe_fork(
    fork: &mut JoinExec,
    batch: &RecordBatch,
    out: &mut Vec<RecordBatch>,
    metrics: &MetricsSet,
) -> Result<()> {
    let started = std::time::Instant::now();
    metrics.add("probe_rows", batch.num_rows() as u64);
    metrics.add("probe_batches", 1);
    fork.push_probe(batch)?;
    while let Some(o) = fork.pull()? {
        out.push(o);
    }
    metrics.add_elapsed("probe_time_ns", started);
    Ok(())
}

/// One scan thread's prober of a join that notes its matched build rows: at the end each
/// fork adds its matches to the built join's, and the last one emits the build rows the join
/// keeps (see [`BatchOp::finish`]).
struct TrackingProbe {
    fork: JoinExec,
    base: Arc<Mutex<JoinExec>>,
    metrics: MetricsSet,
}

impl TrackingProbe {
    fn count_out(&self, out: &[RecordBatch]) {
        for b in out {
            self.metrics.add("output_rows", b.num_rows() as u64);
            self.metrics.add("output_batches", 1);
        }
    }
}

impl BatchOp for TrackingProbe {
    fn apply(&mut self, batch: RecordBatch, out: &mut Vec<RecordBatch>) -> Result<()> {
        let started = std::time::Instant::now();
        let before = out.len();
        probe_fork(&mut self.fork, &batch, out, &self.metrics)?;
        self.metrics.add_elapsed("elapsed_compute_ns", started);
        self.count_out(&out[before..]);
        Ok(())
    }

    fn finish(&mut self, last: bool, out: &mut Vec<RecordBatch>) -> Result<()> {
        let started = std::time::Instant::now();
        let matched = self.fork.take_build_matched();
        let mut base = self
            .base
            .lock()
            .map_err(|_| FerroError::Internal("join build poisoned".into()))?;
        base.add_build_matched(&matched)?;
        if last {
            let before = out.len();
            base.finish()?;
            while let Some(o) = base.pull()? {
                out.push(o);
            }
            self.count_out(&out[before..]);
        }
        self.metrics.add_elapsed("elapsed_compute_ns", started);
        Ok(())
    }
}

/// Collects a join's build keys into its runtime filters while the build side is read.
struct RuntimeFilterBuilder {
    keys: Vec<(usize, PhysicalExpr)>,
    arrays: Vec<Vec<ArrayRef>>,
    rows: usize,
    max_rows: usize,
}

impl RuntimeFilterBuilder {
    fn new(keys: Vec<(usize, PhysicalExpr)>, max_rows: usize) -> Self {
        let arrays = vec![Vec::new(); keys.len()];
        Self {
            keys,
            arrays,
            rows: 0,
            max_rows,
        }
    }

    fn push(&mut self, b: &arrow_array::RecordBatch) -> Result<()> {
        if self.keys.is_empty() {
            return Ok(());
        }
        self.rows += b.num_rows();
        if self.rows > self.max_rows {
            // Too many keys to pay off (Spark's maxNumItems): no filter.
            self.keys.clear();
            self.arrays.clear();
            return Ok(());
        }
        for ((_, k), out) in self.keys.iter().zip(&mut self.arrays) {
            out.push(evaluate(k, b)?.into_array(b.num_rows())?);
        }
        Ok(())
    }

    fn publish(self, to: &super::runtime_filter::RuntimeFilters, metrics: &MetricsSet) {
        for ((id, key), arrays) in self.keys.iter().zip(&self.arrays) {
            // An empty build side: an empty set, so the probe scan reads nothing.
            let empty = [arrow_array::new_empty_array(&key.data_type())];
            let arrays = if arrays.is_empty() {
                &empty[..]
            } else {
                arrays
            };
            if let Some(n) = to.publish(*id, arrays) {
                metrics.add("runtime_filters", 1);
                metrics.add("runtime_filter_keys", n as u64);
            }
        }
    }
}

/// The counters of the runtime filters a join builds.
const RUNTIME_FILTER_METRICS: &[(&str, MetricValue)] = &[
    ("runtime_filters", MetricValue::Count),
    ("runtime_filter_keys", MetricValue::Count),
];

/// Counts a task that probed a side another task of its stage built.
const SHARED_BUILD_METRICS: &[(&str, MetricValue)] = &[("build_reused", MetricValue::Count)];

/// ```text
/// Probing --probe side ends--> Finishing (unmatched build rows) --> Done
/// ```
enum ProbeState {
    Probing,
    Finishing,
    Done,
}

struct JoinStream {
    exec: JoinExec,
    probe: BatchStream,
    state: ProbeState,
    metrics: MetricsSet,
}

impl JoinStream {
    fn step(&mut self) -> Result<Option<arrow_array::RecordBatch>> {
        loop {
            if let Some(b) = self.exec.pull()? {
                return Ok(Some(b));
            }
            match self.state {
                ProbeState::Probing => match self.probe.next() {
                    Some(b) => self.exec.push_probe(&b?)?,
                    None => {
                        self.exec.finish()?;
                        self.state = ProbeState::Finishing;
                    }
                },
                ProbeState::Finishing => {
                    self.state = ProbeState::Done;
                    for (name, v) in self.exec.metrics().snapshot() {
                        if name != "output_rows"
                            && name != "output_batches"
                            && !name.starts_with("build")
                        {
                            self.metrics.add(name, v);
                        }
                    }
                }
                ProbeState::Done => return Ok(None),
            }
        }
    }
}

impl Iterator for JoinStream {
    type Item = Result<arrow_array::RecordBatch>;
    fn next(&mut self) -> Option<Self::Item> {
        match self.step() {
            Ok(Some(b)) => Some(Ok(b)),
            Ok(None) => None,
            Err(e) => {
                self.state = ProbeState::Done;
                Some(Err(e))
            }
        }
    }
}
