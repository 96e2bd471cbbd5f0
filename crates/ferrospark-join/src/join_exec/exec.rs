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
use arrow_row::{RowConverter, Rows, SortField};
use arrow_schema::{DataType, SchemaRef};
use ferrospark_common::{
    FerroError, MemoryPool, MemoryReservation, MetricValue, MetricsSet, Result,
};
use ferrospark_expr::{evaluate_predicate, normalize_key, PhysicalExpr};

use super::hash_table::{int_key, joinable, JoinTable};
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
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Building,
    Probing,
    Done,
}

/// A hash join of `left` and `right` on equi-keys, building one side.
pub struct JoinExec {
    join_type: JoinType,
    build_side: BuildSide,
    left_keys: Vec<PhysicalExpr>,
    right_keys: Vec<PhysicalExpr>,
    null_safe: Vec<bool>,
    condition: Option<PhysicalExpr>,
    /// Left columns then right columns: what the condition is bound to.
    joined_schema: SchemaRef,
    output_schema: SchemaRef,
    build_schema: SchemaRef,
    key_types: Vec<DataType>,
    converter: RowConverter,
    batch_size: usize,
    build_batches: Vec<RecordBatch>,
    algorithm: JoinAlgorithm,
    /// Probe batches a sort-merge join holds until `finish`.
    probe_buffer: Vec<RecordBatch>,
    build: Option<Arc<(RecordBatch, Matcher)>>,
    pool: MemoryPool,
    build_matched: Vec<bool>,
    out: VecDeque<RecordBatch>,
    reservation: MemoryReservation,
    phase: Phase,
    metrics: MetricsSet,
}

/// One side of a joined row: a row index, or NULLs.
type Side = Vec<Option<u32>>;

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
    /// sides are sorted in memory, reserved from the pool; spilling sorted runs is not built
    /// yet.
    SortMerge,
}

/// The built side's index.
enum Matcher {
    Hash(JoinTable),
    EveryPair,
    /// The build side's joinable rows in key order (rows of one key in arrival order).
    Sorted(SortedKeys),
}

/// Joinable rows of one side in key order, rows of one key in arrival order.
enum SortedKeys {
    /// Any keys, compared in the row format.
    Rows { rows: Rows, order: Vec<u32> },
    /// One integer key compared with `=`: `(key, row)` pairs, sorted as integers.
    Int(Vec<(i64, u32)>),
}

impl SortedKeys {
    /// Sorts the joinable rows of `keys`.
    fn new(converter: &RowConverter, keys: &[ArrayRef], null_safe: &[bool]) -> Result<Self> {
        let n = keys.first().map_or(0, |k| k.len());
        let valid = joinable(keys, null_safe, n);
        let keep = |r: usize| valid.as_ref().is_none_or(|v| v.is_valid(r));
        if let Some(values) = int_key(keys, null_safe) {
            let mut pairs: Vec<(i64, u32)> = values?
                .values()
                .iter()
                .copied()
                .enumerate()
                .filter(|(r, _)| keep(*r))
                .map(|(r, k)| (k, r as u32))
                .collect();
            // Row numbers are distinct, so an unstable sort of the pairs keeps arrival order
            // within a key.
            pairs.sort_unstable();
            return Ok(SortedKeys::Int(pairs));
        }
        let rows = converter.convert_columns(keys)?;
        let mut order: Vec<u32> = (0..n as u32).filter(|&r| keep(r as usize)).collect();
        order.sort_by(|&a, &b| rows.row(a as usize).cmp(&rows.row(b as usize)));
        Ok(SortedKeys::Rows { rows, order })
    }

    fn size(&self) -> usize {
        match self {
            SortedKeys::Rows { rows, order } => rows.size() + order.capacity() * 4,
            SortedKeys::Int(pairs) => pairs.capacity() * 16,
        }
    }
}

/// Every pair of equal keys of two sides sorted alike (from the same key types), as
/// `(probe row, build row)`, in key order.
fn merge_sorted(
    probe: &SortedKeys,
    build: &SortedKeys,
    probe_idx: &mut Vec<u32>,
    build_idx: &mut Vec<u32>,
) -> Result<()> {
    match (probe, build) {
        (SortedKeys::Int(p), SortedKeys::Int(b)) => {
            let (mut i, mut j) = (0, 0);
            while i < p.len() && j < b.len() {
                let (pk, bk) = (p[i].0, b[j].0);
                if pk < bk {
                    i += 1;
                } else if pk > bk {
                    j += 1;
                } else {
                    let i_end = i + p[i..].iter().take_while(|x| x.0 == pk).count();
                    let j_end = j + b[j..].iter().take_while(|x| x.0 == bk).count();
                    for &(_, pr) in &p[i..i_end] {
                        for &(_, br) in &b[j..j_end] {
                            probe_idx.push(pr);
                            build_idx.push(br);
                        }
                    }
                    i = i_end;
                    j = j_end;
                }
            }
            Ok(())
        }
        (
            SortedKeys::Rows {
                rows: pr,
                order: po,
            },
            SortedKeys::Rows {
                rows: br,
                order: bo,
            },
        ) => {
            merge_pairs((pr, po), (br, bo), probe_idx, build_idx);
            Ok(())
        }
        _ => Err(FerroError::Internal(
            "the two sides of a sort-merge join were sorted differently".into(),
        )),
    }
}

/// Every pair of equal keys of two sorted sides, as `(probe row, build row)`, in key order.
fn merge_pairs(
    probe: (&Rows, &[u32]),
    build: (&Rows, &[u32]),
    probe_idx: &mut Vec<u32>,
    build_idx: &mut Vec<u32>,
) {
    let (prows, porder) = probe;
    let (brows, border) = build;
    let (mut i, mut j) = (0, 0);
    while i < porder.len() && j < border.len() {
        let (pk, bk) = (prows.row(porder[i] as usize), brows.row(border[j] as usize));
        match pk.cmp(&bk) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                let i_end = i + porder[i..]
                    .iter()
                    .take_while(|&&p| prows.row(p as usize) == pk)
                    .count();
                let j_end = j + border[j..]
                    .iter()
                    .take_while(|&&b| brows.row(b as usize) == bk)
                    .count();
                for &p in &porder[i..i_end] {
                    for &b in &border[j..j_end] {
                        probe_idx.push(p);
                        build_idx.push(b);
                    }
                }
                i = i_end;
                j = j_end;
            }
        }
    }
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
            build: self.build.clone(),
            pool: self.pool.clone(),
            build_matched: Vec::new(),
            out: VecDeque::new(),
            reservation: self.pool.reservation("JoinExec probe"),
            phase: Phase::Probing,
            metrics: MetricsSet::new(JOIN_METRICS),
        })
    }

    /// The schema of the streamed side.
    fn probe_schema(&self) -> SchemaRef {
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
        self.phase == Phase::Probing
            && !self.keeps_build()
            && self.algorithm != JoinAlgorithm::SortMerge
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
        format!(
            "{name} {}, build {:?}{keys}{cond}",
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
        let bytes = batch.get_array_memory_size() as u64;
        if !self.reservation.try_grow(bytes) {
            return Err(self.too_big());
        }
        if batch.num_rows() > 0 {
            self.build_batches.push(batch.clone());
        }
        Ok(())
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
        let started = Instant::now();
        let batch = arrow_select::concat::concat_batches(&self.build_schema, &self.build_batches)?;
        self.build_batches.clear();
        let matcher = match self.algorithm {
            JoinAlgorithm::Hash => {
                let exprs = self.build_keys();
                let keys = self.keys_of(exprs, &batch)?;
                Matcher::Hash(JoinTable::build(&self.converter, &keys, &self.null_safe)?)
            }
            JoinAlgorithm::NestedLoop => Matcher::EveryPair,
            JoinAlgorithm::SortMerge => {
                let exprs = self.build_keys();
                let keys = self.keys_of(exprs, &batch)?;
                Matcher::Sorted(SortedKeys::new(&self.converter, &keys, &self.null_safe)?)
            }
        };
        let index_bytes = match &matcher {
            Matcher::Hash(t) => t.size(),
            Matcher::EveryPair => 0,
            Matcher::Sorted(sorted) => sorted.size(),
        };
        let held = (batch.get_array_memory_size() + index_bytes) as u64;
        if !self.reservation.try_resize(held) {
            return Err(self.too_big());
        }
        self.metrics.add("build_bytes", held);
        if self.keeps_build() {
            self.build_matched = vec![false; batch.num_rows()];
        }
        self.build = Some(Arc::new((batch, matcher)));
        self.phase = Phase::Probing;
        self.metrics.add_elapsed("build_time_ns", started);
        Ok(())
    }

    /// Key expressions over the build side.
    fn build_keys(&self) -> &[PhysicalExpr] {
        match self.build_side {
            BuildSide::Left => &self.left_keys,
            BuildSide::Right => &self.right_keys,
        }
    }

    /// Key expressions over the probe side.
    fn probe_keys(&self) -> &[PhysicalExpr] {
        match self.build_side {
            BuildSide::Left => &self.right_keys,
            BuildSide::Right => &self.left_keys,
        }
    }

    /// Whether unmatched build rows come out at the end.
    fn keeps_build(&self) -> bool {
        match self.build_side {
            BuildSide::Left => self.join_type.keeps_left(),
            BuildSide::Right => self.join_type.keeps_right(),
        }
    }

    /// Whether unmatched probe rows come out (NULL-extended).
    fn keeps_probe(&self) -> bool {
        match self.build_side {
            BuildSide::Left => self.join_type.keeps_right(),
            BuildSide::Right => self.join_type.keeps_left(),
        }
    }

    /// Key columns of `batch`: normalised, in the left keys' types.
    fn keys_of(&self, exprs: &[PhysicalExpr], batch: &RecordBatch) -> Result<Vec<ArrayRef>> {
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
        if self.algorithm == JoinAlgorithm::SortMerge {
            // The streamed side is sorted whole at `finish`.
            if !self
                .reservation
                .try_grow(batch.get_array_memory_size() as u64)
            {
                return Err(self.too_big());
            }
            if batch.num_rows() > 0 {
                self.probe_buffer.push(batch.clone());
            }
        } else if batch.num_rows() > 0 {
            self.probe(batch)?;
        }
        self.metrics.add_elapsed("probe_time_ns", started);
        Ok(())
    }

    fn probe(&mut self, probe: &RecordBatch) -> Result<()> {
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
                self.matched_pairs(probe, build, probe_idx, build_idx, &mut hit)?;
            }
            Matcher::Sorted(built_keys) => {
                let exprs = self.probe_keys();
                let keys = self.keys_of(exprs, probe)?;
                let sorted = SortedKeys::new(&self.converter, &keys, &self.null_safe)?;
                let mut probe_idx: Vec<u32> = Vec::new();
                let mut build_idx: Vec<u32> = Vec::new();
                merge_sorted(&sorted, built_keys, &mut probe_idx, &mut build_idx)?;
                self.matched_pairs(probe, build, probe_idx, build_idx, &mut hit)?;
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
                        self.matched_pairs(probe, build, probe_idx, build_idx, &mut hit)?;
                    }
                }
            }
        }
        if self.join_type.left_only() {
            let want = self.join_type == JoinType::LeftSemi;
            let rows: Vec<u32> = (0..n)
                .filter(|&r| hit[r] == want && dropped.as_ref().is_none_or(|v| v.is_valid(r)))
                .map(|r| r as u32)
                .collect();
            return self.emit_probe_rows(rows, probe);
        }
        if self.keeps_probe() {
            let unmatched: Side = (0..n as u32)
                .filter(|&r| !hit[r as usize])
                .map(Some)
                .collect();
            let nulls: Side = vec![None; unmatched.len()];
            self.emit_pairs(probe, build, &unmatched, &nulls)?;
        }
        Ok(())
    }

    /// Keeps the candidate pairs the condition accepts, notes which probe and build rows
    /// matched, and emits the joined rows (not for semi / anti joins, which emit probe rows).
    fn matched_pairs(
        &mut self,
        probe: &RecordBatch,
        build: &RecordBatch,
        mut probe_idx: Vec<u32>,
        mut build_idx: Vec<u32>,
        hit: &mut [bool],
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
        if self.keeps_build() {
            for &b in &build_idx {
                self.build_matched[b as usize] = true;
            }
        }
        for &p in &probe_idx {
            hit[p as usize] = true;
        }
        if self.join_type.left_only() {
            return Ok(());
        }
        let probe_side: Side = probe_idx.into_iter().map(Some).collect();
        let build_side: Side = build_idx.into_iter().map(Some).collect();
        self.emit_pairs(probe, build, &probe_side, &build_side)
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
            let p: Side = probe_idx[start..end].iter().map(|&x| Some(x)).collect();
            let b: Side = build_idx[start..end].iter().map(|&x| Some(x)).collect();
            let joined = self.joined(probe, build, &p, &b, &self.joined_schema)?;
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

    /// Joined rows of `(probe row, build row)` pairs, either side possibly NULL.
    fn emit_pairs(
        &mut self,
        probe: &RecordBatch,
        build: &RecordBatch,
        probe_side: &[Option<u32>],
        build_side: &[Option<u32>],
    ) -> Result<()> {
        for start in (0..probe_side.len()).step_by(self.batch_size) {
            let end = (start + self.batch_size).min(probe_side.len());
            let schema = self.output_schema.clone();
            let joined = self.joined(
                probe,
                build,
                &probe_side[start..end],
                &build_side[start..end],
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
        probe_rows: &[Option<u32>],
        build_rows: &[Option<u32>],
        schema: &SchemaRef,
    ) -> Result<RecordBatch> {
        let take = |b: &RecordBatch, rows: &[Option<u32>]| -> Result<Vec<ArrayRef>> {
            let idx = UInt32Array::from(rows.to_vec());
            Ok(arrow_select::take::take_arrays(b.columns(), &idx, None)?)
        };
        let (mut left, right) = match self.build_side {
            BuildSide::Left => (take(build, build_rows)?, take(probe, probe_rows)?),
            BuildSide::Right => (take(probe, probe_rows)?, take(build, build_rows)?),
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
        if self.algorithm == JoinAlgorithm::SortMerge {
            let started = Instant::now();
            let schema = self
                .probe_buffer
                .first()
                .map(|b| b.schema())
                .unwrap_or_else(|| self.probe_schema());
            let probe = arrow_select::concat::concat_batches(&schema, &self.probe_buffer)?;
            self.probe_buffer.clear();
            if probe.num_rows() > 0 {
                self.probe(&probe)?;
            }
            self.metrics.add_elapsed("probe_time_ns", started);
        }
        self.phase = Phase::Done;
        if !self.keeps_build() {
            return Ok(());
        }
        let Some(built) = self.build.take() else {
            return Ok(());
        };
        let build = &built.0;
        let unmatched: Vec<Option<u32>> = self
            .build_matched
            .iter()
            .enumerate()
            .filter(|(_, m)| !**m)
            .map(|(r, _)| Some(r as u32))
            .collect();
        let nulls: Vec<Option<u32>> = vec![None; unmatched.len()];
        // The probe side has no rows left: its NULLs come from an empty batch of its schema.
        let empty = RecordBatch::new_empty(self.probe_schema());
        self.emit_pairs(&empty, build, &nulls, &unmatched)?;
        self.reservation.free();
        Ok(())
    }

    /// The next output batch, if one is ready.
    pub fn pull(&mut self) -> Option<RecordBatch> {
        self.out.pop_front()
    }
}
