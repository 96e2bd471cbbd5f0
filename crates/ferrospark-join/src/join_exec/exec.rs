//! The hash join operator as a push / finish / pull state machine.
//!
//! ```text
//!   push_build(batch)* ──finish_build()──► Probing ──push_probe(batch)*──► (pull() output)
//!                         table built once    │
//!                                             └──finish()──► unmatched build rows (outer) ─► Done
//! ```
//!
//! Probe rows come out as they stream through; build rows a join keeps unmatched (the build
//! side of an outer join) come out at `finish`, once every probe row has been seen.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions, UInt32Array};
use arrow_row::{RowConverter, SortField};
use arrow_schema::{DataType, SchemaRef};
use ferrospark_common::{
    FerroError, MemoryPool, MemoryReservation, MetricValue, MetricsSet, Result, SpillDir,
};
use ferrospark_expr::{evaluate_predicate, normalize_key, PhysicalExpr};
use ferrospark_sort::Run;

use super::hash_table::{joinable, JoinTable};
use super::sorted_keys::{merge_sorted, SortedKeys};
use crate::join_type::{join_schema, BuildSide, JoinType};

/// Metric names of [`JoinExec`].
pub const JOIN_METRICS: &[(&str, MetricValue)] = &[
    ("build_rows", MetricValue::Count),
    ("build_batches", MetricValue::Count),
    ("probe_rows", MetricValue::Count),
    ("probe_batches", MetricValue::Count),
    ("output_rows", MetricValue::Count),
    ("output_batches", MetricValue::Count),
    ("build_bytes", MetricValue::Bytes),
    ("build_time_ns", MetricValue::TimeNs),
    ("probe_time_ns", MetricValue::TimeNs),
    ("spill_count", MetricValue::Count),
    ("spilled_bytes", MetricValue::Bytes),
    ("spilled_rows", MetricValue::Count),
    ("buffered_spill_count", MetricValue::Count),
    ("fallback_to_sort_merge", MetricValue::Count),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Building,
    Probing,
    Done,
}

/// A join of `left` and `right`, building one side and streaming the other (see
/// [`JoinAlgorithm`] for how build rows are found).
pub struct JoinExec {
    pub(super) join_type: JoinType,
    pub(super) build_side: BuildSide,
    left_keys: Vec<PhysicalExpr>,
    right_keys: Vec<PhysicalExpr>,
    pub(super) null_safe: Vec<bool>,
    condition: Option<PhysicalExpr>,
    /// Left columns then right columns: what the condition is bound to.
    joined_schema: SchemaRef,
    output_schema: SchemaRef,
    pub(super) build_schema: SchemaRef,
    pub(super) key_types: Vec<DataType>,
    pub(super) converter: RowConverter,
    pub(super) batch_size: usize,
    /// Build batches not yet indexed (or, for a sort-merge join, not yet sorted or spilled).
    pub(super) build_batches: Vec<RecordBatch>,
    pub(super) algorithm: JoinAlgorithm,
    /// Probe batches a sort-merge join holds until `finish`.
    pub(super) probe_buffer: Vec<RecordBatch>,
    /// Bytes of `build_batches` and `probe_buffer` reserved.
    pub(super) buffered_bytes: [u64; 2],
    /// Sorted runs (key columns first) a sort-merge join spilled, build side then probe side.
    pub(super) runs: [Vec<Run>; 2],
    pub(super) spill_dir: SpillDir,
    /// Whether a hash join whose build side is refused memory becomes a sort-merge join.
    sort_merge_fallback: bool,
    /// The merge of spilled runs, once a spilling sort-merge join has both sides.
    merge: Option<super::sort_merge::MergeJoin>,
    build: Option<Arc<(RecordBatch, Matcher)>>,
    pool: MemoryPool,
    build_matched: Vec<bool>,
    out: VecDeque<RecordBatch>,
    pub(super) reservation: MemoryReservation,
    phase: Phase,
    pub(super) metrics: MetricsSet,
}

/// The rows one side gives to joined rows: these rows, or as many NULL rows.
#[derive(Debug, Clone, Copy)]
pub(super) enum Pick<'a> {
    Rows(&'a [u32]),
    Nulls(usize),
}

impl<'a> Pick<'a> {
    fn len(&self) -> usize {
        match self {
            Pick::Rows(r) => r.len(),
            Pick::Nulls(n) => *n,
        }
    }

    fn slice(&self, start: usize, end: usize) -> Pick<'a> {
        match self {
            Pick::Rows(r) => Pick::Rows(&r[start..end]),
            Pick::Nulls(_) => Pick::Nulls(end - start),
        }
    }

    /// The picked rows of `batch`'s columns (NULL columns of its types for `Nulls`).
    fn columns(&self, batch: &RecordBatch) -> Result<Vec<ArrayRef>> {
        Ok(match self {
            Pick::Rows(rows) => {
                let idx = UInt32Array::from(rows.to_vec());
                arrow_select::take::take_arrays(batch.columns(), &idx, None)?
            }
            Pick::Nulls(n) => batch
                .columns()
                .iter()
                .map(|c| arrow_array::new_null_array(c.data_type(), *n))
                .collect(),
        })
    }
}

/// How a join finds the build rows a probe row matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinAlgorithm {
    /// Equal keys, through a hash table of the build side (Spark's broadcast and shuffled
    /// hash joins).
    Hash,
    /// Every build row, the condition deciding (Spark's broadcast nested loop join; without a
    /// condition, the cartesian product).
    NestedLoop,
    /// Equal keys found by merging both sides sorted by key (Spark's sort-merge join). Both
    /// sides are sorted in memory when the pool allows; else each side is sorted in runs
    /// spilled to disk, and the runs are merged and joined a batch at a time.
    SortMerge,
}

/// The built side's index.
enum Matcher {
    Hash(JoinTable),
    EveryPair,
    /// The build side's joinable rows in key order (rows of one key in arrival order).
    Sorted(SortedKeys),
}

impl JoinExec {
    /// A join of batches of `left` and `right`: `left_keys[i] = right_keys[i]` (or `<=>`
    /// where `null_safe[i]`), then `condition` (bound to the left columns followed by the
    /// right ones), building `build_side`.
    #[allow(clippy::too_many_arguments)]
    pub fn try_new(
        left: SchemaRef,
        right: SchemaRef,
        left_keys: Vec<PhysicalExpr>,
        right_keys: Vec<PhysicalExpr>,
        null_safe: Vec<bool>,
        condition: Option<PhysicalExpr>,
        join_type: JoinType,
        algorithm: JoinAlgorithm,
        build_side: BuildSide,
        batch_size: usize,
        pool: &MemoryPool,
    ) -> Result<Self> {
        match algorithm {
            JoinAlgorithm::Hash | JoinAlgorithm::SortMerge
                if left_keys.is_empty() || left_keys.len() != right_keys.len() =>
            {
                return Err(FerroError::Config(format!(
                    "a hash join needs equal numbers of left and right keys, at least one (got {} and {}); use a nested loop join for joins without keys",
                    left_keys.len(),
                    right_keys.len()
                )));
            }
            JoinAlgorithm::NestedLoop if !left_keys.is_empty() || !right_keys.is_empty() => {
                return Err(FerroError::Internal(
                    "a nested loop join takes its equalities as part of the condition".into(),
                ));
            }
            _ => {}
        }
        let allowed = match (algorithm, join_type) {
            (
                _,
                JoinType::Inner | JoinType::LeftOuter | JoinType::RightOuter | JoinType::FullOuter,
            ) => true,
            // A hash join may also build the left side of a semi / anti join (in process, where
            // the left side is the smaller): its rows are kept or dropped once the right side
            // has streamed through, by whether any right row matched them.
            (JoinAlgorithm::Hash, JoinType::LeftSemi | JoinType::LeftAnti) => true,
            (_, JoinType::LeftSemi | JoinType::LeftAnti) => build_side == BuildSide::Right,
            (JoinAlgorithm::Hash, JoinType::NullAwareAnti) => build_side == BuildSide::Right,
            (JoinAlgorithm::NestedLoop | JoinAlgorithm::SortMerge, JoinType::NullAwareAnti) => {
                false
            }
            (JoinAlgorithm::NestedLoop, JoinType::Cross) => true,
            (JoinAlgorithm::Hash | JoinAlgorithm::SortMerge, JoinType::Cross) => false,
        };
        if !allowed {
            return Err(FerroError::Config(format!(
                "a {} join cannot build the {:?} side of a {} join; the right side is built for semi and anti joins, cross joins run as nested loops, and NOT IN as a hash join",
                match algorithm {
                    JoinAlgorithm::Hash => "hash",
                    JoinAlgorithm::NestedLoop => "nested loop",
                    JoinAlgorithm::SortMerge => "sort-merge",
                },
                build_side,
                join_type.name()
            )));
        }
        if join_type == JoinType::NullAwareAnti && left_keys.len() != 1 {
            return Err(FerroError::Config(
                "a null-aware anti join (NOT IN) compares exactly one key".into(),
            ));
        }
        let mut key_types = Vec::with_capacity(left_keys.len());
        for (l, r) in left_keys.iter().zip(&right_keys) {
            let (lt, rt) = (l.data_type(), r.data_type());
            if lt != rt && !arrow_cast::can_cast_types(&rt, &lt) {
                return Err(FerroError::Analysis(format!(
                    "join keys `{}` ({lt}) and `{}` ({rt}) cannot be compared; cast one of them",
                    l, r
                )));
            }
            key_types.push(lt);
        }
        let converter = RowConverter::new(
            key_types
                .iter()
                .map(|t| SortField::new(t.clone()))
                .collect(),
        )?;
        let null_safe = if null_safe.is_empty() {
            vec![false; left_keys.len()]
        } else {
            null_safe
        };
        let build_schema = match build_side {
            BuildSide::Left => left.clone(),
            BuildSide::Right => right.clone(),
        };
        Ok(Self {
            algorithm,
            probe_buffer: Vec::new(),
            buffered_bytes: [0, 0],
            runs: [Vec::new(), Vec::new()],
            spill_dir: SpillDir::default(),
            sort_merge_fallback: false,
            merge: None,
            joined_schema: join_schema(&left, &right, JoinType::Inner),
            output_schema: join_schema(&left, &right, join_type),
            join_type,
            build_side,
            left_keys,
            right_keys,
            null_safe,
            condition,
            build_schema,
            key_types,
            converter,
            batch_size: batch_size.max(1),
            build_batches: Vec::new(),
            build: None,
            build_matched: Vec::new(),
            out: VecDeque::new(),
            reservation: pool.reservation("JoinExec"),
            pool: pool.clone(),
            phase: Phase::Building,
            metrics: MetricsSet::new(JOIN_METRICS),
        })
    }

    /// Where a sort-merge join spills its sorted runs.
    pub fn with_spill_dir(mut self, dir: SpillDir) -> Self {
        self.spill_dir = dir;
        self
    }

    /// Lets a hash join whose build side does not fit `ferrospark.memory.limit` continue as a
    /// sort-merge join, as a shuffled hash join should, rather than fail. Not for null-aware
    /// anti joins, which only a hash join runs.
    pub fn with_sort_merge_fallback(mut self, on: bool) -> Self {
        self.sort_merge_fallback = on;
        self
    }

    /// The schema of every output batch.
    pub fn output_schema(&self) -> SchemaRef {
        self.output_schema.clone()
    }

    /// Another prober of the same built side, for probing on several threads at once. Only
    /// joins that keep no per-build-row state can be forked (no build side kept unmatched);
    /// the fork has its own output and metrics.
    pub fn fork_probe(&self) -> Result<JoinExec> {
        if !self.can_fork_probe() {
            return Err(FerroError::Internal(
                "only a built join that keeps no build rows unmatched can be forked".into(),
            ));
        }
        self.fork()
    }

    /// Whether [`Self::fork_tracking_probe`] can fork this join: a hash join built in
    /// memory whose build rows are noted as they match (an outer join's kept side, a semi or
    /// anti join built on its left side).
    pub fn can_fork_tracking_probe(&self) -> bool {
        self.phase == Phase::Probing && self.tracks_build() && self.build.is_some()
    }

    /// Another prober of the same built side that notes which build rows its probe rows
    /// matched, for probing on several threads at once. Once every fork is done, their
    /// [`Self::take_build_matched`] flags are combined into this join's with
    /// [`Self::add_build_matched`], and [`Self::finish`] emits the build rows the join keeps.
    pub fn fork_tracking_probe(&self) -> Result<JoinExec> {
        if !self.can_fork_tracking_probe() {
            return Err(FerroError::Internal(
                "only a built join that notes its matched build rows can be forked so".into(),
            ));
        }
        let mut fork = self.fork()?;
        fork.build_matched = vec![false; self.build_matched.len()];
        Ok(fork)
    }

    /// Which build rows this fork's probe rows matched, taken (see
    /// [`Self::fork_tracking_probe`]).
    pub fn take_build_matched(&mut self) -> Vec<bool> {
        std::mem::take(&mut self.build_matched)
    }

    /// Flags as matched the build rows a fork's probe rows matched.
    pub fn add_build_matched(&mut self, matched: &[bool]) -> Result<()> {
        if matched.len() != self.build_matched.len() {
            return Err(FerroError::Internal(format!(
                "a fork matched {} build rows of {}",
                matched.len(),
                self.build_matched.len()
            )));
        }
        for (m, &f) in self.build_matched.iter_mut().zip(matched) {
            *m |= f;
        }
        Ok(())
    }

    fn fork(&self) -> Result<JoinExec> {
        Ok(Self {
            join_type: self.join_type,
            build_side: self.build_side,
            left_keys: self.left_keys.clone(),
            right_keys: self.right_keys.clone(),
            null_safe: self.null_safe.clone(),
            condition: self.condition.clone(),
            joined_schema: self.joined_schema.clone(),
            output_schema: self.output_schema.clone(),
            build_schema: self.build_schema.clone(),
            key_types: self.key_types.clone(),
            converter: RowConverter::new(
                self.key_types
                    .iter()
                    .map(|t| SortField::new(t.clone()))
                    .collect(),
            )?,
            batch_size: self.batch_size,
            build_batches: Vec::new(),
            algorithm: self.algorithm,
            probe_buffer: Vec::new(),
            buffered_bytes: [0, 0],
            runs: [Vec::new(), Vec::new()],
            spill_dir: self.spill_dir.clone(),
            sort_merge_fallback: false,
            merge: None,
            build: self.build.clone(),
            pool: self.pool.clone(),
            build_matched: Vec::new(),
            out: VecDeque::new(),
            reservation: self.pool.reservation("JoinExec probe"),
            phase: Phase::Probing,
            metrics: MetricsSet::new(JOIN_METRICS),
        })
    }

    /// The schema build batches are pushed in.
    pub fn build_input_schema(&self) -> SchemaRef {
        self.build_schema.clone()
    }

    /// The schema probe batches are pushed in.
    pub fn probe_input_schema(&self) -> SchemaRef {
        self.probe_schema()
    }

    /// The schema of the streamed side.
    pub(super) fn probe_schema(&self) -> SchemaRef {
        let fields = self.joined_schema.fields();
        let build = self.build_schema.fields().len();
        let probe_fields = match self.build_side {
            BuildSide::Left => fields[build..].to_vec(),
            BuildSide::Right => fields[..fields.len() - build].to_vec(),
        };
        Arc::new(arrow_schema::Schema::new(probe_fields))
    }

    /// Whether [`Self::fork_probe`] can fork this join.
    pub fn can_fork_probe(&self) -> bool {
        self.phase == Phase::Probing && !self.tracks_build() && self.build.is_some()
    }

    /// The operator's metrics.
    pub fn metrics(&self) -> &MetricsSet {
        &self.metrics
    }

    /// A one-line summary: type, build side, keys, condition.
    pub fn explain(&self) -> String {
        let pairs: Vec<String> = self
            .left_keys
            .iter()
            .zip(&self.right_keys)
            .zip(&self.null_safe)
            .map(|((l, r), s)| format!("{l} {} {r}", if *s { "<=>" } else { "=" }))
            .collect();
        let cond = self
            .condition
            .as_ref()
            .map(|c| format!(", condition {c}"))
            .unwrap_or_default();
        let keys = if pairs.is_empty() {
            String::new()
        } else {
            format!(", keys [{}]", pairs.join(", "))
        };
        let name = match self.algorithm {
            JoinAlgorithm::Hash => "HashJoin",
            JoinAlgorithm::NestedLoop => "NestedLoopJoin",
            JoinAlgorithm::SortMerge => "SortMergeJoin",
        };
        let fell_back = if self.metrics.get("fallback_to_sort_merge") > 0 {
            " (a hash join whose build side exceeded the memory limit)"
        } else {
            ""
        };
        format!(
            "{name} {}, build {:?}{keys}{cond}{fell_back}",
            self.join_type.name(),
            self.build_side,
        )
    }

    /// Adds a batch of the build side.
    pub fn push_build(&mut self, batch: &RecordBatch) -> Result<()> {
        if self.phase != Phase::Building {
            return Err(FerroError::Internal(
                "build rows after the table was built".into(),
            ));
        }
        self.metrics.add("build_rows", batch.num_rows() as u64);
        self.metrics.add("build_batches", 1);
        if batch.num_rows() == 0 {
            return Ok(());
        }
        let bytes = ferrospark_common::batch_bytes(batch) as u64;
        if self.reservation.try_grow(bytes) {
            self.buffered_bytes[0] += bytes;
            self.build_batches.push(batch.clone());
            return Ok(());
        }
        self.fall_back_to_sort_merge()?;
        self.build_batches.push(batch.clone());
        self.spill_side(0)
    }

    /// A build side refused memory: a sort-merge join spills it, a hash join allowed to
    /// becomes one, any other join fails.
    fn fall_back_to_sort_merge(&mut self) -> Result<()> {
        if self.algorithm == JoinAlgorithm::Hash
            && self.sort_merge_fallback
            && self.join_type != JoinType::NullAwareAnti
        {
            self.algorithm = JoinAlgorithm::SortMerge;
            self.metrics.add("fallback_to_sort_merge", 1);
        }
        if self.algorithm == JoinAlgorithm::SortMerge {
            Ok(())
        } else {
            Err(self.too_big())
        }
    }

    fn too_big(&self) -> FerroError {
        FerroError::MemoryLimit(format!(
            "the build side of the hash join ({} rows so far) does not fit ferrospark.memory.limit; raise the limit, or use strategy=\"sort_merge\"",
            self.metrics.get("build_rows")
        ))
    }

    /// Builds the table; probe batches may follow.
    pub fn finish_build(&mut self) -> Result<()> {
        if self.phase != Phase::Building {
            return Ok(());
        }
        self.phase = Phase::Probing;
        // A sort-merge join whose build side fits sorts it now; one that spilled (or cannot
        // sort in memory) spills its build side and buffers the streamed side for `finish`.
        if self.algorithm == JoinAlgorithm::SortMerge {
            if !self.sort_build_in_memory()? {
                self.spill_side(0)?;
            }
            return Ok(());
        }
        let started = Instant::now();
        let batch = arrow_select::concat::concat_batches(&self.build_schema, &self.build_batches)?;
        self.build_batches.clear();
        let matcher = match self.algorithm {
            JoinAlgorithm::Hash => {
                let keys = self.keys_of(self.build_keys(), &batch)?;
                Matcher::Hash(JoinTable::build(&self.converter, &keys, &self.null_safe)?)
            }
            JoinAlgorithm::NestedLoop | JoinAlgorithm::SortMerge => Matcher::EveryPair,
        };
        let index_bytes = match &matcher {
            Matcher::Hash(t) => t.size(),
            Matcher::EveryPair | Matcher::Sorted(_) => 0,
        };
        let held = (ferrospark_common::batch_bytes(&batch) + index_bytes) as u64;
        if !self.reservation.try_resize(held) {
            drop(matcher);
            self.fall_back_to_sort_merge()?;
            self.build_batches.push(batch);
            return self.spill_side(0);
        }
        self.buffered_bytes[0] = 0;
        self.metrics.add("build_bytes", held);
        self.install_build(batch, matcher);
        self.metrics.add_elapsed("build_time_ns", started);
        Ok(())
    }

    fn install_build(&mut self, batch: RecordBatch, matcher: Matcher) {
        if self.tracks_build() {
            self.build_matched = vec![false; batch.num_rows()];
        }
        self.build = Some(Arc::new((batch, matcher)));
    }

    /// A sort-merge join's build side sorted in memory, when nothing of it spilled and the
    /// pool allows its sorted index; `false` (nothing changed) when not. The streamed side is
    /// then sorted and merged a batch at a time, never held whole.
    fn sort_build_in_memory(&mut self) -> Result<bool> {
        let extra = self.metrics.get("build_rows") * 16;
        if !self.runs[0].is_empty() || !self.reservation.try_grow(extra) {
            return Ok(false);
        }
        let started = Instant::now();
        let batch = arrow_select::concat::concat_batches(&self.build_schema, &self.build_batches)?;
        self.build_batches.clear();
        let keys = self.keys_of(self.build_keys(), &batch)?;
        let sorted = SortedKeys::new(&self.converter, &keys, &self.null_safe)?;
        self.metrics.add(
            "build_bytes",
            (ferrospark_common::batch_bytes(&batch) + sorted.size()) as u64,
        );
        self.install_build(batch, Matcher::Sorted(sorted));
        self.metrics.add_elapsed("build_time_ns", started);
        Ok(true)
    }

    /// Key expressions over the build side.
    pub(super) fn build_keys(&self) -> &[PhysicalExpr] {
        match self.build_side {
            BuildSide::Left => &self.left_keys,
            BuildSide::Right => &self.right_keys,
        }
    }

    /// Key expressions over the probe side.
    pub(super) fn probe_keys(&self) -> &[PhysicalExpr] {
        match self.build_side {
            BuildSide::Left => &self.right_keys,
            BuildSide::Right => &self.left_keys,
        }
    }

    /// Whether unmatched build rows come out at the end.
    fn keeps_build(&self) -> bool {
        self.join_type.keeps(self.build_side)
    }

    /// A semi / anti join built on its left side: its output is build rows, decided at the
    /// end.
    fn builds_left_only(&self) -> bool {
        self.build_side == BuildSide::Left
            && matches!(self.join_type, JoinType::LeftSemi | JoinType::LeftAnti)
    }

    /// Whether the join notes which build rows matched (to emit some of them at the end).
    pub(super) fn tracks_build(&self) -> bool {
        self.keeps_build() || self.builds_left_only()
    }

    /// Whether unmatched probe rows come out (NULL-extended).
    fn keeps_probe(&self) -> bool {
        self.join_type.keeps(match self.build_side {
            BuildSide::Left => BuildSide::Right,
            BuildSide::Right => BuildSide::Left,
        })
    }

    /// The join key columns of a batch of the left side (`left`) or the right one, as the
    /// join compares them (normalised, in one type): what both sides are partitioned on
    /// when they are shuffled to meet.
    pub fn key_columns(&self, left: bool, batch: &RecordBatch) -> Result<Vec<ArrayRef>> {
        let exprs = if left {
            &self.left_keys
        } else {
            &self.right_keys
        };
        self.keys_of(exprs, batch)
    }

    /// Key columns of `batch`: normalised, in the left keys' types.
    pub(super) fn keys_of(
        &self,
        exprs: &[PhysicalExpr],
        batch: &RecordBatch,
    ) -> Result<Vec<ArrayRef>> {
        exprs
            .iter()
            .zip(&self.key_types)
            .map(|(e, t)| {
                let a = ferrospark_expr::evaluate(e, batch)?.into_array(batch.num_rows())?;
                let a = if a.data_type() == t {
                    a
                } else {
                    arrow_cast::cast(&a, t)?
                };
                Ok(normalize_key(&a))
            })
            .collect()
    }

    /// Streams one probe batch through the table.
    pub fn push_probe(&mut self, batch: &RecordBatch) -> Result<()> {
        if self.phase == Phase::Building {
            self.finish_build()?;
        }
        if self.phase != Phase::Probing {
            return Err(FerroError::Internal("probe rows after finish".into()));
        }
        let started = Instant::now();
        self.metrics.add("probe_rows", batch.num_rows() as u64);
        self.metrics.add("probe_batches", 1);
        if batch.num_rows() == 0 {
        } else if self.algorithm == JoinAlgorithm::SortMerge && self.build.is_none() {
            // The build side spilled: the streamed side is sorted in runs too, merged at
            // `finish`.
            self.buffer_probe(batch)?;
        } else {
            self.probe(batch)?;
        }
        self.metrics.add_elapsed("probe_time_ns", started);
        Ok(())
    }

    fn probe(&mut self, probe: &RecordBatch) -> Result<()> {
        let mut build_hit = std::mem::take(&mut self.build_matched);
        let r = self.probe_with(probe, &mut build_hit);
        self.build_matched = build_hit;
        r
    }

    fn probe_with(&mut self, probe: &RecordBatch, build_hit: &mut [bool]) -> Result<()> {
        let n = probe.num_rows();
        let Some(built) = self.build.clone() else {
            return Err(FerroError::Internal("probe before build".into()));
        };
        let (build, matcher) = (&built.0, &built.1);
        let mut hit = vec![false; n];
        // Probe rows a null-aware anti join drops (NULL keys), when the build side has rows.
        let mut dropped = None;
        match matcher {
            Matcher::Hash(table) => {
                let exprs = self.probe_keys();
                let keys = self.keys_of(exprs, probe)?;
                let valid = joinable(&keys, &self.null_safe, n);
                // Null-aware anti join: an empty build side keeps every row, a NULL build key
                // none.
                if self.join_type == JoinType::NullAwareAnti {
                    if table.num_rows == 0 {
                        return self.emit_probe_rows((0..n as u32).collect(), probe);
                    }
                    if table.has_null_key {
                        return Ok(());
                    }
                    dropped = valid.clone();
                }
                let mut probe_idx: Vec<u32> = Vec::new();
                let mut build_idx: Vec<u32> = Vec::new();
                table.probe(&self.converter, &keys, valid.as_ref(), |p, b| {
                    probe_idx.push(p);
                    build_idx.push(b);
                })?;
                self.matched_pairs(probe, build, probe_idx, build_idx, &mut hit, build_hit)?;
            }
            Matcher::Sorted(built_keys) => {
                let exprs = self.probe_keys();
                let keys = self.keys_of(exprs, probe)?;
                let sorted = SortedKeys::new(&self.converter, &keys, &self.null_safe)?;
                let mut probe_idx: Vec<u32> = Vec::new();
                let mut build_idx: Vec<u32> = Vec::new();
                merge_sorted(&sorted, built_keys, &mut probe_idx, &mut build_idx)?;
                self.matched_pairs(probe, build, probe_idx, build_idx, &mut hit, build_hit)?;
            }
            Matcher::EveryPair => {
                // Every probe row against every build row, a few probe rows at a time so one
                // step holds about a batch of pairs.
                let m = build.num_rows();
                if let Some(step) = self.batch_size.checked_div(m) {
                    let step = step.max(1);
                    for start in (0..n).step_by(step) {
                        let end = (start + step).min(n);
                        let probe_idx: Vec<u32> = (start as u32..end as u32)
                            .flat_map(|p| std::iter::repeat_n(p, m))
                            .collect();
                        let build_idx: Vec<u32> = (start..end).flat_map(|_| 0..m as u32).collect();
                        self.matched_pairs(
                            probe, build, probe_idx, build_idx, &mut hit, build_hit,
                        )?;
                    }
                }
            }
        }
        self.emit_probe_outcome(probe, &hit, dropped.as_ref())
    }

    /// What a probe batch adds once all its matches are out: its rows a semi / anti join
    /// keeps (except `dropped` ones), or its unmatched rows NULL-extended for an outer join.
    pub(super) fn emit_probe_outcome(
        &mut self,
        probe: &RecordBatch,
        hit: &[bool],
        dropped: Option<&arrow_buffer::NullBuffer>,
    ) -> Result<()> {
        let n = probe.num_rows();
        if self.builds_left_only() {
            // The probe rows are the right side's: only build rows come out, at the end.
            return Ok(());
        }
        if self.join_type.left_only() {
            let want = self.join_type == JoinType::LeftSemi;
            let rows: Vec<u32> = (0..n)
                .filter(|&r| hit[r] == want && dropped.is_none_or(|v| v.is_valid(r)))
                .map(|r| r as u32)
                .collect();
            return self.emit_probe_rows(rows, probe);
        }
        if self.keeps_probe() {
            let unmatched: Vec<u32> = (0..n as u32).filter(|&r| !hit[r as usize]).collect();
            let no_build = RecordBatch::new_empty(self.build_schema.clone());
            let nulls = Pick::Nulls(unmatched.len());
            self.emit_pairs(probe, &no_build, Pick::Rows(&unmatched), nulls)?;
        }
        Ok(())
    }

    /// Keeps the candidate pairs the condition accepts, notes which probe and build rows
    /// matched, and emits the joined rows (not for semi / anti joins, which emit probe rows).
    pub(super) fn matched_pairs(
        &mut self,
        probe: &RecordBatch,
        build: &RecordBatch,
        mut probe_idx: Vec<u32>,
        mut build_idx: Vec<u32>,
        hit: &mut [bool],
        build_hit: &mut [bool],
    ) -> Result<()> {
        if let Some(cond) = &self.condition {
            let keep = self.condition_holds(cond, probe, build, &probe_idx, &build_idx)?;
            let mut w = 0;
            for (i, k) in keep.into_iter().enumerate() {
                if k {
                    probe_idx[w] = probe_idx[i];
                    build_idx[w] = build_idx[i];
                    w += 1;
                }
            }
            probe_idx.truncate(w);
            build_idx.truncate(w);
        }
        if self.tracks_build() {
            for &b in &build_idx {
                build_hit[b as usize] = true;
            }
        }
        for &p in &probe_idx {
            hit[p as usize] = true;
        }
        if self.join_type.left_only() {
            return Ok(());
        }
        self.emit_pairs(probe, build, Pick::Rows(&probe_idx), Pick::Rows(&build_idx))
    }

    /// The condition over candidate pairs, as one flag per pair (NULL is false).
    fn condition_holds(
        &self,
        cond: &PhysicalExpr,
        probe: &RecordBatch,
        build: &RecordBatch,
        probe_idx: &[u32],
        build_idx: &[u32],
    ) -> Result<Vec<bool>> {
        let mut keep = Vec::with_capacity(probe_idx.len());
        for start in (0..probe_idx.len()).step_by(self.batch_size) {
            let end = (start + self.batch_size).min(probe_idx.len());
            let (p, b) = (
                Pick::Rows(&probe_idx[start..end]),
                Pick::Rows(&build_idx[start..end]),
            );
            let joined = self.joined(probe, build, p, b, &self.joined_schema)?;
            let verdict: BooleanArray = evaluate_predicate(cond, &joined)?;
            keep.extend((0..verdict.len()).map(|i| verdict.is_valid(i) && verdict.value(i)));
        }
        Ok(keep)
    }

    /// Rows of `probe` (the left side) as output.
    fn emit_probe_rows(&mut self, rows: Vec<u32>, probe: &RecordBatch) -> Result<()> {
        for chunk in rows.chunks(self.batch_size) {
            let idx = UInt32Array::from(chunk.to_vec());
            let columns = arrow_select::take::take_arrays(probe.columns(), &idx, None)?;
            self.push_out(columns, chunk.len())?;
        }
        Ok(())
    }

    /// Joined rows of `(probe row, build row)` pairs, one side possibly NULL.
    pub(super) fn emit_pairs(
        &mut self,
        probe: &RecordBatch,
        build: &RecordBatch,
        probe_side: Pick<'_>,
        build_side: Pick<'_>,
    ) -> Result<()> {
        let n = probe_side.len();
        for start in (0..n).step_by(self.batch_size) {
            let end = (start + self.batch_size).min(n);
            let schema = self.output_schema.clone();
            let joined = self.joined(
                probe,
                build,
                probe_side.slice(start, end),
                build_side.slice(start, end),
                &schema,
            )?;
            self.push_out(joined.columns().to_vec(), end - start)?;
        }
        Ok(())
    }

    /// Left columns then right columns of the given rows of each side.
    fn joined(
        &self,
        probe: &RecordBatch,
        build: &RecordBatch,
        probe_rows: Pick<'_>,
        build_rows: Pick<'_>,
        schema: &SchemaRef,
    ) -> Result<RecordBatch> {
        let (mut left, right) = match self.build_side {
            BuildSide::Left => (build_rows.columns(build)?, probe_rows.columns(probe)?),
            BuildSide::Right => (probe_rows.columns(probe)?, build_rows.columns(build)?),
        };
        left.extend(right);
        // Columns a NULL-extended side fills are nullable in the schema; the data may say
        // otherwise (take keeps the field), so build against the schema given.
        let options = RecordBatchOptions::new().with_row_count(Some(probe_rows.len()));
        Ok(RecordBatch::try_new_with_options(
            schema.clone(),
            left,
            &options,
        )?)
    }

    fn push_out(&mut self, columns: Vec<ArrayRef>, rows: usize) -> Result<()> {
        if rows == 0 {
            return Ok(());
        }
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        let batch =
            RecordBatch::try_new_with_options(self.output_schema.clone(), columns, &options)?;
        self.metrics.add("output_rows", rows as u64);
        self.metrics.add("output_batches", 1);
        self.out.push_back(batch);
        Ok(())
    }

    /// Ends the probe side: the build rows an outer join keeps unmatched come out.
    pub fn finish(&mut self) -> Result<()> {
        if self.phase == Phase::Building {
            self.finish_build()?;
        }
        if self.phase == Phase::Done {
            return Ok(());
        }
        if self.algorithm == JoinAlgorithm::SortMerge && self.build.is_none() {
            let started = Instant::now();
            self.merge = Some(self.start_merge()?);
            self.metrics.add_elapsed("probe_time_ns", started);
        }
        self.phase = Phase::Done;
        if !self.tracks_build() {
            return Ok(());
        }
        let Some(built) = self.build.take() else {
            return Ok(());
        };
        let matched = std::mem::take(&mut self.build_matched);
        self.emit_build_outcome(&built.0, &matched)?;
        self.reservation.free();
        Ok(())
    }

    /// The rows of `build` a join keeps once no probe row can match them any more: for a
    /// semi / anti join built on its left side, the rows some probe row matched (semi) or
    /// none did (anti); for an outer join, the unmatched ones, NULL-extended on the probe side.
    pub(super) fn emit_build_outcome(
        &mut self,
        build: &RecordBatch,
        matched: &[bool],
    ) -> Result<()> {
        if self.builds_left_only() {
            let want = self.join_type == JoinType::LeftSemi;
            let rows: Vec<u32> = (0..build.num_rows())
                .filter(|&r| matched.get(r).copied().unwrap_or(false) == want)
                .map(|r| r as u32)
                .collect();
            return self.emit_probe_rows(rows, build);
        }
        self.emit_unmatched_build(build, matched)
    }

    /// Build rows of `build` not flagged in `matched`, NULL-extended on the probe side.
    fn emit_unmatched_build(&mut self, build: &RecordBatch, matched: &[bool]) -> Result<()> {
        let rows: Vec<u32> = matched
            .iter()
            .enumerate()
            .filter(|(_, m)| !**m)
            .map(|(r, _)| r as u32)
            .collect();
        // The probe side has no rows left: its NULLs take the types of an empty batch.
        let empty = RecordBatch::new_empty(self.probe_schema());
        self.emit_pairs(&empty, build, Pick::Nulls(rows.len()), Pick::Rows(&rows))
    }

    /// The next output batch, if one is ready. After `finish` a sort-merge join that spilled
    /// merges its runs here, a batch of the streamed side per step, so its output is not held
    /// whole.
    pub fn pull(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            if let Some(b) = self.out.pop_front() {
                return Ok(Some(b));
            }
            let Some(mut merge) = self.merge.take() else {
                return Ok(None);
            };
            let started = Instant::now();
            let more = self.step_merge(&mut merge)?;
            self.metrics.add_elapsed("probe_time_ns", started);
            if more {
                self.merge = Some(merge);
            } else {
                self.reservation.free();
            }
        }
    }
}
