//! Logical to physical: each node to its operator, Spark's `JoinSelection` on estimated sizes,
//! equi-keys extracted from join conditions (`ExtractEquiJoinKeys`), aggregation fused into a
//! Parquet scan below it, `ORDER BY ... LIMIT` as a top-K.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use ferrospark_common::{Config, FerroError, Result};
use ferrospark_expr::{BinaryOp, Expr};
use ferrospark_join::{select_join, BuildSide, JoinSelectionInput, JoinStrategy, JoinType};

use super::aggregate::{engine_call, HashAggregateExec};
use super::basic::{FilterExec, LimitExec, ProjectExec, UnionExec};
use super::join::JoinPlanExec;
use super::reuse::ReuseExec;
use super::runtime_filter::Target;
use super::scan::{ConstantRowsExec, MemoryScanExec, ParquetScanExec};
use super::sort::SortExec;
use super::stats::{filters_rows, local_size_in_bytes, size_in_bytes};
use super::ExecutionPlan;
use crate::logical::expr_util::{column_keys, conjoin, split_conjuncts};
use crate::logical::{attrs_schema, expr_text, Attr, LogicalPlan, ScanSource};

/// Spark's switch for reusing exchanges and subqueries; here, repeated aggregations.
pub const EXCHANGE_REUSE: &str = "spark.sql.exchange.reuse";

/// Plans physical operators for optimized logical plans under a session configuration.
pub struct PhysicalPlanner<'a> {
    cfg: &'a Config,
    /// Ids of the runtime filters planned so far.
    runtime_filters: std::cell::Cell<usize>,
    /// Reuse ids of the aggregations the plan computes more than once (see [`super::reuse`]).
    reusable: super::reuse::Reusable,
    /// The physical plan of each reused aggregation's first occurrence.
    reused: std::cell::RefCell<HashMap<usize, Arc<dyn ExecutionPlan>>>,
    /// The Parquet scans sharing one read with others of the same files (see
    /// [`super::shared_scan`]).
    shared_scans: HashMap<*const LogicalPlan, super::shared_scan::ScanShare>,
    /// Inside a Spark task: the splits it reads of each set of paths (see
    /// [`crate::distributed`]); a scan of paths without an entry reads them whole.
    splits: HashMap<Vec<std::path::PathBuf>, TaskSplits>,
    /// Inside a Spark task: the in-memory leaves holding broadcast rows, the same in every
    /// task of the stage; a hash join building on them alone shares its build.
    broadcast_leaves: std::collections::HashSet<String>,
    /// Joins planned so far (their position names a shared build).
    joins: std::cell::Cell<usize>,
}

/// What a task reads of one scan's files: the row groups of each Parquet file, the byte
/// ranges of each row-format file.
#[derive(Debug, Clone, Default)]
pub struct TaskSplits {
    /// Parquet files and their row groups.
    pub row_groups: Arc<HashMap<std::path::PathBuf, Vec<usize>>>,
    /// Row-format files and their byte ranges.
    pub ranges: Arc<ferrospark_scan::FileRanges>,
}

/// Equi-keys and the rest of a join condition.
pub struct EquiJoin {
    /// Left keys.
    pub left: Vec<Expr>,
    /// Right keys.
    pub right: Vec<Expr>,
    /// `<=>`?
    pub null_safe: Vec<bool>,
    /// What is left of the condition.
    pub residual: Option<Expr>,
}

/// Splits `condition` into equalities between one side and the other, and the rest.
pub fn extract_equi_keys(condition: Option<&Expr>, left: &[Attr], right: &[Attr]) -> EquiJoin {
    let lk: HashSet<String> = left.iter().map(Attr::key).collect();
    let rk: HashSet<String> = right.iter().map(Attr::key).collect();
    let mut out = EquiJoin {
        left: vec![],
        right: vec![],
        null_safe: vec![],
        residual: None,
    };
    let mut rest = Vec::new();
    for c in condition.map(split_conjuncts).unwrap_or_default() {
        if let Expr::Binary {
            left: a,
            op: op @ (BinaryOp::Eq | BinaryOp::EqNullSafe),
            right: b,
        } = &c
        {
            let (ka, kb) = (column_keys(a), column_keys(b));
            let within =
                |k: &HashSet<String>, side: &HashSet<String>| !k.is_empty() && k.is_subset(side);
            if within(&ka, &lk) && within(&kb, &rk) {
                out.left.push((**a).clone());
                out.right.push((**b).clone());
                out.null_safe.push(*op == BinaryOp::EqNullSafe);
                continue;
            }
            if within(&ka, &rk) && within(&kb, &lk) {
                out.left.push((**b).clone());
                out.right.push((**a).clone());
                out.null_safe.push(*op == BinaryOp::EqNullSafe);
                continue;
            }
        }
        rest.push(c);
    }
    out.residual = conjoin(rest);
    out
}

/// Whether `s` compares every pair of rows (no keys to hash or sort on).
fn nested_loop(s: JoinStrategy) -> bool {
    matches!(
        s,
        JoinStrategy::BroadcastNestedLoop | JoinStrategy::Cartesian
    )
}

/// A join's equi-keys (implied ones dropped) and what Spark's `JoinSelection` weighs: the
/// sides' sizes by Spark's estimates and the session's join settings.
pub fn join_selection_input(
    cfg: &Config,
    left: &Arc<LogicalPlan>,
    right: &Arc<LogicalPlan>,
    join_type: JoinType,
    condition: Option<&Expr>,
    hint: Option<JoinStrategy>,
) -> Result<(EquiJoin, JoinSelectionInput)> {
    let mut keys = extract_equi_keys(condition, &left.output(), &right.output());
    super::key_equivalence::drop_implied_keys(&mut keys, left, right);
    let input = JoinSelectionInput {
        join_type,
        has_equi_keys: !keys.left.is_empty(),
        keys_orderable: true,
        left_bytes: size_in_bytes(left),
        right_bytes: size_in_bytes(right),
        broadcast_threshold: cfg.auto_broadcast_threshold()?,
        prefer_sort_merge: cfg.prefer_sort_merge_join()?,
        shuffle_partitions: cfg.shuffle_partitions()? as u64,
        hint,
    };
    Ok((keys, input))
}

impl<'a> PhysicalPlanner<'a> {
    /// A planner under `cfg`.
    pub fn new(cfg: &'a Config) -> Self {
        Self {
            cfg,
            runtime_filters: std::cell::Cell::new(0),
            reusable: Default::default(),
            reused: Default::default(),
            shared_scans: HashMap::new(),
            splits: HashMap::new(),
            broadcast_leaves: Default::default(),
            joins: std::cell::Cell::new(0),
        }
    }

    /// This planner, restricting each scan of a set of paths in `splits` to the files and
    /// row groups given there (a Spark task's share of a stage's scans).
    pub fn with_splits(mut self, splits: HashMap<Vec<std::path::PathBuf>, TaskSplits>) -> Self {
        self.splits = splits;
        self
    }

    /// This planner, marking the hash joins that build on nothing but the in-memory leaves
    /// `names` (broadcast rows) as sharing their build with the stage's other tasks in a
    /// worker (see [`super::shared_build`]).
    pub fn sharing_builds_on(mut self, names: impl IntoIterator<Item = String>) -> Self {
        self.broadcast_leaves = names.into_iter().collect();
        self
    }

    /// The side of a join that reads nothing but broadcast rows, when a broadcast join can
    /// build it.
    fn broadcast_side(
        &self,
        left: &LogicalPlan,
        right: &LogicalPlan,
        join_type: JoinType,
    ) -> Option<BuildSide> {
        if self.broadcast_leaves.is_empty() {
            return None;
        }
        [BuildSide::Right, BuildSide::Left]
            .into_iter()
            .find(|&side| {
                let plan = match side {
                    BuildSide::Left => left,
                    BuildSide::Right => right,
                };
                ferrospark_join::broadcast_buildable(join_type, side)
                    && self.on_broadcast_rows(plan)
            })
    }

    /// Whether `plan` reads nothing but the broadcast leaves.
    fn on_broadcast_rows(&self, plan: &LogicalPlan) -> bool {
        match plan {
            LogicalPlan::Scan {
                source: crate::logical::ScanSource::Memory { .. },
                name,
                ..
            } => self.broadcast_leaves.contains(name),
            LogicalPlan::Scan { .. } => false,
            other => {
                let children = other.children();
                !children.is_empty() && children.iter().all(|c| self.on_broadcast_rows(c))
            }
        }
    }

    /// This planner, computing once each aggregation `plan` repeats (Spark's
    /// `ReuseExchangeAndSubquery`) and reading once the rows its scans of the same files
    /// share, unless `spark.sql.exchange.reuse` is off.
    pub fn reusing_results_of(mut self, plan: &LogicalPlan) -> Result<Self> {
        if self.cfg.get_bool(EXCHANGE_REUSE, true)? {
            self.reusable = super::reuse::find_reusable(plan);
            self.shared_scans = super::shared_scan::find_shared_scans(plan, &self.reusable);
        }
        Ok(self)
    }

    /// A reused aggregation's occurrence, if `plan` is one.
    fn reuse(&self, plan: &Arc<LogicalPlan>) -> Result<Option<Arc<dyn ExecutionPlan>>> {
        let Some(id) = self.reusable.id_of(plan) else {
            return Ok(None);
        };
        let schema = attrs_schema(&plan.output());
        let first = self.reused.borrow().get(&id).cloned();
        let (input, is_first) = match first {
            Some(input) => (input, false),
            None => {
                let input = self.create_node(plan)?;
                self.reused.borrow_mut().insert(id, input.clone());
                (input, true)
            }
        };
        Ok(Some(Arc::new(ReuseExec::new(input, id, schema, is_first))))
    }

    fn parquet_scan(&self, plan: &LogicalPlan) -> Result<Option<Arc<ParquetScanExec>>> {
        let LogicalPlan::Scan {
            source: ScanSource::Parquet {
                paths, partitions, ..
            },
            attrs,
            filters,
            name,
            ..
        } = plan
        else {
            return Ok(None);
        };
        let Some((mut out, filter)) = super::shared_scan::parquet_read(plan) else {
            return Ok(None);
        };
        if out.is_empty() {
            // Row counts still need a column to read: the narrowest one.
            if let Some(a) = attrs
                .iter()
                .min_by_key(|a| super::stats::row_size(std::slice::from_ref(a)))
            {
                out.push(a.clone());
            }
        }
        let columns: Vec<String> = out.iter().map(|a| a.name.clone()).collect();
        let scan = ParquetScanExec::new(
            paths.clone(),
            columns,
            filter,
            filters.iter().map(expr_text).collect(),
            attrs_schema(&out),
            name.clone(),
        )
        .reading_only(self.splits.get(paths).map(|t| t.row_groups.clone()));
        let scan = match partitions {
            Some(p) => scan.reading_partitions(p.dirs.clone(), p.missing.clone()),
            None => scan,
        };
        Ok(Some(Arc::new(
            match self.shared_scans.get(&(plan as *const LogicalPlan)) {
                Some(share) => scan.sharing(share.clone()),
                None => scan,
            },
        )))
    }

    /// The operator tree of `plan`.
    pub fn create(&self, plan: &Arc<LogicalPlan>) -> Result<Arc<dyn ExecutionPlan>> {
        match self.reuse(plan)? {
            Some(reused) => Ok(reused),
            None => self.create_node(plan),
        }
    }

    fn create_node(&self, plan: &Arc<LogicalPlan>) -> Result<Arc<dyn ExecutionPlan>> {
        Ok(match plan.as_ref() {
            LogicalPlan::Scan {
                source,
                attrs,
                projection,
                filters,
                ..
            } => match source {
                ScanSource::Parquet { .. } => match self.parquet_scan(plan)? {
                    Some(s) => {
                        let s: Arc<dyn ExecutionPlan> = s;
                        if plan.output().is_empty() {
                            Arc::new(ProjectExec::new(s, vec![], attrs_schema(&[])))
                        } else {
                            s
                        }
                    }
                    None => return Err(FerroError::Internal("not a parquet scan".into())),
                },
                ScanSource::Files {
                    format,
                    paths,
                    options,
                    schema,
                    ..
                } => {
                    let by_name = |k: &str| {
                        attrs
                            .iter()
                            .find(|a| a.key() == k)
                            .map(|a| Expr::Column(a.name.clone()))
                    };
                    let filter = conjoin(
                        filters
                            .iter()
                            .map(|f| crate::logical::expr_util::replace_columns(f, &by_name)),
                    );
                    let out = plan.output();
                    Arc::new(super::file_scan::FileScanExec::new(
                        *format,
                        paths.clone(),
                        options.clone().into_iter().collect(),
                        schema.clone(),
                        out.iter().map(|a| a.name.clone()).collect(),
                        filter,
                        filters.iter().map(expr_text).collect(),
                        attrs_schema(&out),
                    )
                    .reading_only(self.splits.get(paths).map(|t| t.ranges.clone())))
                }
                ScanSource::External { .. } => {
                    return Err(FerroError::Analysis(format!(
                        "`{}` is a PySpark DataFrame: only a session on Spark (fs.Session(spark=...)) can read it",
                        match plan.as_ref() {
                            LogicalPlan::Scan { name, .. } => name.as_str(),
                            _ => "",
                        }
                    )))
                }
                ScanSource::Memory { batches } => {
                    let proj = projection
                        .clone()
                        .unwrap_or_else(|| (0..attrs.len()).collect());
                    Arc::new(MemoryScanExec::new(
                        batches.clone(),
                        proj,
                        conjoin(filters.iter().cloned()),
                        attrs_schema(attrs),
                        attrs_schema(&plan.output()),
                    ))
                }
            },
            LogicalPlan::OneRow => Arc::new(ConstantRowsExec::new(1, attrs_schema(&[]))),
            LogicalPlan::Empty { attrs } => Arc::new(ConstantRowsExec::new(0, attrs_schema(attrs))),
            LogicalPlan::Project { input, exprs } => Arc::new(ProjectExec::new(
                self.create(input)?,
                exprs.iter().map(|(e, _)| e.clone()).collect(),
                attrs_schema(&plan.output()),
            )),
            LogicalPlan::Filter { input, predicate } => {
                Arc::new(FilterExec::new(self.create(input)?, predicate.clone()))
            }
            LogicalPlan::SubqueryAlias { input, .. } => self.create(input)?,
            LogicalPlan::Aggregate { input, group, aggs } => {
                let child = self.create(input)?;
                let group_exprs = group
                    .iter()
                    .map(|(e, a)| Expr::Alias {
                        expr: Box::new(e.clone()),
                        name: a.key(),
                    })
                    .collect();
                let calls = aggs
                    .iter()
                    .map(|(c, a)| engine_call(c, Some(&a.key())))
                    .collect();
                Arc::new(HashAggregateExec::new(
                    child,
                    group_exprs,
                    calls,
                    attrs_schema(&plan.output()),
                ))
            }
            LogicalPlan::Join {
                left,
                right,
                join_type,
                condition,
                hint,
            } => self.join(left, right, *join_type, condition.as_ref(), *hint)?,
            LogicalPlan::Sort { input, keys } => {
                Arc::new(SortExec::new(self.create(input)?, keys.clone(), None))
            }
            LogicalPlan::Limit { input, skip, fetch } => {
                let child = match (input.as_ref(), fetch) {
                    (LogicalPlan::Sort { input: si, keys }, Some(n)) => Arc::new(SortExec::new(
                        self.create(si)?,
                        keys.clone(),
                        Some(skip + n),
                    ))
                        as Arc<dyn ExecutionPlan>,
                    _ => self.create(input)?,
                };
                Arc::new(LimitExec::new(child, *skip, *fetch))
            }
            LogicalPlan::Union { inputs, .. } => Arc::new(UnionExec::new(
                inputs
                    .iter()
                    .map(|i| self.create(i))
                    .collect::<Result<_>>()?,
                attrs_schema(&plan.output()),
            )),
            LogicalPlan::Window { input, exprs } => Arc::new(super::window::WindowPlanExec::new(
                self.create(input)?,
                exprs.clone(),
            )),
            LogicalPlan::Generate {
                input,
                kind,
                args,
                outer,
                ..
            } => Arc::new(super::generate::GenerateExec::new(
                self.create(input)?,
                *kind,
                args.clone(),
                *outer,
                attrs_schema(&plan.output()),
            )),
            LogicalPlan::Expand {
                input, projections, ..
            } => Arc::new(super::expand::ExpandExec::new(
                self.create(input)?,
                projections.clone(),
                attrs_schema(&plan.output()),
            )),
            LogicalPlan::SetOp { .. } => {
                return Err(FerroError::Internal(
                    "set operations are rewritten to joins before planning".into(),
                ))
            }
        })
    }

    fn join(
        &self,
        left: &Arc<LogicalPlan>,
        right: &Arc<LogicalPlan>,
        join_type: JoinType,
        condition: Option<&Expr>,
        hint: Option<JoinStrategy>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let (keys, input) =
            join_selection_input(self.cfg, left, right, join_type, condition, hint)?;
        let (strategy, build_side) = if self.cfg.prefer_hash_join()? {
            ferrospark_join::select_join_in_process(
                &input,
                (local_size_in_bytes(left), local_size_in_bytes(right)),
            )?
        } else {
            select_join(&input)?
        };
        // Inside a Spark task, a hash join builds the side broadcast to every task (built
        // once per worker), whatever the sizes of this task's share of the other side.
        let (strategy, build_side) = match self.broadcast_side(left, right, join_type) {
            Some(side) if !keys.left.is_empty() && !nested_loop(strategy) => {
                (JoinStrategy::BroadcastHash, side)
            }
            _ => (strategy, build_side),
        };
        let position = self.joins.get();
        self.joins.set(position + 1);
        let (l, r) = (self.create(left)?, self.create(right)?);
        let nested = matches!(
            strategy,
            JoinStrategy::BroadcastNestedLoop | JoinStrategy::Cartesian
        );
        if nested {
            // Nested loops evaluate the whole condition on each pair.
            let build_side = if matches!(join_type, JoinType::RightOuter) {
                BuildSide::Left
            } else {
                build_side
            };
            return Ok(Arc::new(JoinPlanExec::new(
                l,
                r,
                join_type,
                vec![],
                vec![],
                vec![],
                condition.cloned(),
                strategy,
                build_side,
            )));
        }
        let build = match build_side {
            BuildSide::Left => left,
            BuildSide::Right => right,
        };
        let shared = (!self.broadcast_leaves.is_empty() && self.on_broadcast_rows(build))
            .then(|| format!("join {position}"));
        let filters = if self.cfg.runtime_filter_enabled()? && filters_rows(build) {
            self.runtime_filters(join_type, build_side, &keys, &l, &r)
        } else {
            vec![]
        };
        Ok(Arc::new(
            JoinPlanExec::new(
                l,
                r,
                join_type,
                keys.left,
                keys.right,
                keys.null_safe,
                keys.residual,
                strategy,
                build_side,
            )
            .with_runtime_filters(filters)
            .with_shared_build(shared),
        ))
    }

    /// Runtime filters from a join's build keys onto the scans of its probe side: `(id, key
    /// position)` for each probe key (a plain column, `=` not `<=>`) some scan below took.
    /// Only where the join drops probe rows without a partner: not for a side an outer or
    /// anti join keeps, and not for a null-aware anti join, whose NULL keys matter.
    fn runtime_filters(
        &self,
        join_type: JoinType,
        build_side: BuildSide,
        keys: &EquiJoin,
        left: &Arc<dyn ExecutionPlan>,
        right: &Arc<dyn ExecutionPlan>,
    ) -> Vec<(usize, usize)> {
        use JoinType::*;
        let probe_kept = match build_side {
            BuildSide::Right => matches!(join_type, LeftOuter | FullOuter | LeftAnti),
            BuildSide::Left => matches!(join_type, RightOuter | FullOuter),
        };
        if probe_kept || join_type == NullAwareAnti {
            return vec![];
        }
        let (probe, probe_keys, build_keys) = match build_side {
            BuildSide::Left => (right, &keys.right, &keys.left),
            BuildSide::Right => (left, &keys.left, &keys.right),
        };
        let mut out: Vec<(usize, usize)> = Vec::new();
        for (i, k) in probe_keys.iter().enumerate() {
            let Expr::Column(column) = k else { continue };
            // One filter per probe column: a second would test the same column again.
            if keys.null_safe[i] || out.iter().any(|&(_, j)| probe_keys[j] == *k) {
                continue;
            }
            let id = self.runtime_filters.get();
            let target = Target {
                id,
                build_key: expr_text(&build_keys[i]),
            };
            if probe.accept_runtime_filter(column, &target) {
                self.runtime_filters.set(id + 1);
                out.push((id, i));
            }
        }
        out
    }
}
