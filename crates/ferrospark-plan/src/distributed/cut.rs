//! Cutting an optimized plan into Spark stages where Spark's physical plan puts an Exchange:
//! below a final aggregation (partial steps before it), on both sides of a shuffled join,
//! under a window's partitions, a global sort or limit; a broadcast join's build side becomes
//! its own stage whose rows are broadcast.
//!
//! Scans, filters, projections, `Expand` and broadcast joins stay inside the stage of their
//! input, so one task runs them fused. Shuffle sizes follow Spark's adaptive execution in
//! spirit: a shuffle gets about one partition per `spark.sql.adaptive.advisoryPartitionSizeInBytes`
//! of estimated input, at least one per core and at most `spark.sql.shuffle.partitions`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_schema::{DataType, SchemaRef};
use ferrospark_agg::AggregatePlan;
use ferrospark_common::{Config, FerroError, Result};
use ferrospark_expr::{bind, BindContext, Expr};
use ferrospark_join::{broadcast_buildable, select_join, BuildSide, JoinStrategy, JoinType};
use ferrospark_scan::{FileFormat, FileScan, ParquetScan, ParquetScanOptions};

use super::{
    AggSpec, AggSteps, ExchangeKeys, Sink, SplitPart, SplitRef, Stage, StageInput, StagePlan,
    TaskLayout,
};
use crate::logical::{attrs_schema, Attr, LogicalPlan, ScanSource};
use crate::physical::aggregate::engine_call;
use crate::physical::planner::join_selection_input;
use crate::physical::stats::local_size_in_bytes;

/// Spark's target size of a shuffle partition after coalescing.
const ADVISORY_PARTITION_SIZE: &str = "spark.sql.adaptive.advisoryPartitionSizeInBytes";
/// Spark's minimum split size on file-open cost.
const OPEN_COST_BYTES: u64 = 4 << 20;

/// How an unfinished stage's tasks are formed so far.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Layout {
    /// Over the splits of its scans.
    Splits,
    /// Over the partitions of its shuffled inputs.
    Partitions(usize),
    /// Nothing partitions it (in-memory rows, one row): one task.
    Local,
    /// The partitions of a PySpark DataFrame.
    External,
}

/// A file scan of a stage, for planning its splits.
#[derive(Debug, Clone)]
struct ScanLeaf {
    paths: Vec<PathBuf>,
    kind: ScanKind,
}

/// What a stage's file scan reads.
#[derive(Debug, Clone)]
enum ScanKind {
    /// Parquet, its row groups pruned by this filter; a catalog table's partitions when
    /// it reads them.
    Parquet(
        Option<Expr>,
        Option<std::sync::Arc<ferrospark_scan::PartitionDirs>>,
    ),
    /// A row format, read with Spark's options as these columns.
    Files {
        format: FileFormat,
        options: HashMap<String, String>,
        schema: SchemaRef,
    },
}

/// A stage being built bottom-up.
struct Open {
    fragment: Arc<LogicalPlan>,
    inputs: Vec<StageInput>,
    scans: Vec<ScanLeaf>,
    layout: Layout,
    external: Option<(String, Vec<Attr>)>,
}

impl Open {
    fn wrap(self, fragment: LogicalPlan) -> Open {
        Open {
            fragment: Arc::new(fragment),
            ..self
        }
    }
}

/// Cuts `plan` (optimized) into stages for a Spark application with `parallelism` cores.
/// `decided` holds the joins (by number, see [`Stage::adaptive_join`]) whose side's real
/// size the driver has measured: `true` broadcasts that side, `false` shuffles the join.
pub fn plan_stages(
    plan: &Arc<LogicalPlan>,
    cfg: &Config,
    parallelism: usize,
    decided: &HashMap<usize, bool>,
) -> Result<StagePlan> {
    let mut joins = HashMap::new();
    number_joins(plan, &mut joins);
    let mut cutter = Cutter {
        cfg,
        parallelism: parallelism.max(1),
        stages: Vec::new(),
        joins,
        decided,
    };
    let root = cutter.visit(plan)?;
    cutter.close(root, Sink::Result)?;
    Ok(StagePlan {
        stages: cutter.stages,
    })
}

struct Cutter<'a> {
    cfg: &'a Config,
    parallelism: usize,
    stages: Vec<Stage>,
    /// Each join's number: its position in a pre-order walk of the plan, the same whatever
    /// the cut decides.
    joins: HashMap<*const LogicalPlan, usize>,
    decided: &'a HashMap<usize, bool>,
}

fn number_joins(plan: &Arc<LogicalPlan>, out: &mut HashMap<*const LogicalPlan, usize>) {
    if matches!(plan.as_ref(), LogicalPlan::Join { .. }) {
        let n = out.len();
        out.insert(Arc::as_ptr(plan), n);
    }
    for c in plan.children() {
        number_joins(c, out);
    }
}

/// The in-memory leaf a stage input fills.
fn placeholder(name: String, attrs: Vec<Attr>) -> Arc<LogicalPlan> {
    Arc::new(LogicalPlan::Scan {
        source: ScanSource::Memory {
            batches: Arc::new(Vec::new()),
        },
        attrs,
        projection: None,
        filters: Vec::new(),
        name,
    })
}

impl Cutter<'_> {
    /// Shuffle partitions for `bytes` of estimated input.
    fn partitions_for(&self, bytes: u64) -> Result<usize> {
        let advisory = match self.cfg.get(ADVISORY_PARTITION_SIZE) {
            Some(v) => ferrospark_common::parse_byte_size(v)
                .map_err(|e| FerroError::Config(format!("{ADVISORY_PARTITION_SIZE}: {e}")))?,
            None => 64 << 20,
        }
        .max(1);
        let max = self.cfg.shuffle_partitions()?.max(1);
        let want = bytes.div_ceil(advisory) as usize;
        Ok(want.max(self.parallelism).min(max))
    }

    /// Ends `open` as a stage with `sink`; its id.
    fn close(&mut self, open: Open, sink: Sink) -> Result<usize> {
        let id = self.stages.len();
        let mut paths: Vec<Vec<PathBuf>> = Vec::new();
        for s in &open.scans {
            if !paths.contains(&s.paths) {
                paths.push(s.paths.clone());
            }
        }
        let tasks = match open.layout {
            Layout::Splits => TaskLayout::Splits(self.splits(&open.scans, &paths)?),
            Layout::Partitions(n) => TaskLayout::Partitions(n),
            Layout::Local => TaskLayout::Partitions(1),
            Layout::External => TaskLayout::SparkRows,
        };
        self.stages.push(Stage {
            id,
            fragment: Some(open.fragment),
            inputs: open.inputs,
            scans: paths,
            external: open.external,
            tasks,
            adaptive_join: None,
            sink,
        });
        Ok(id)
    }

    /// Spark's split size for `total` bytes of a scan (each file counted with its open
    /// cost): `min(maxPartitionBytes, max(4 MiB, total / cores))`, but at most about two
    /// tasks per core: each Python task costs Spark about 35 ms (an empty mapInArrow of 40
    /// tasks takes 1.4 s on two cores), which a task of Spark's 128 MB pays again and again
    /// on a large table.
    fn max_split_bytes(&self, total: u64) -> Result<u64> {
        let per_core = total / self.parallelism as u64;
        Ok(self
            .cfg
            .max_partition_bytes()?
            .min(per_core.max(OPEN_COST_BYTES))
            .max(total / (2 * self.parallelism as u64)))
    }

    /// The tasks of a stage over `scans`, as Spark's `FilePartition` forms them: each scan's
    /// files in splits of at most [`Cutter::max_split_bytes`] (the surviving row groups of
    /// Parquet files, byte ranges of row-format files), packed largest first into tasks of
    /// about that size (each file costing 4 MiB more, Spark's open cost).
    fn splits(&self, scans: &[ScanLeaf], paths: &[Vec<PathBuf>]) -> Result<Vec<Vec<SplitRef>>> {
        let mut pieces: Vec<SplitRef> = Vec::new();
        let mut max_split = u64::MAX;
        for (i, p) in paths.iter().enumerate() {
            let same: Vec<&ScanLeaf> = scans.iter().filter(|s| &s.paths == p).collect();
            match same.first().map(|s| &s.kind) {
                Some(ScanKind::Files {
                    format,
                    options,
                    schema,
                }) => {
                    let scan = FileScan::try_new(
                        *format,
                        p,
                        Some(schema.clone()),
                        None,
                        None,
                        options,
                        1,
                        self.cfg.clone(),
                    )?;
                    let total: u64 = scan.plan().file_sizes().map(|b| b + OPEN_COST_BYTES).sum();
                    let max = self.max_split_bytes(total)?;
                    max_split = max_split.min(max);
                    for (path, start, end) in scan.splits(max) {
                        pieces.push(SplitRef {
                            scan: i,
                            path,
                            part: SplitPart::Bytes { start, end },
                            bytes: end - start,
                        });
                    }
                }
                _ => {
                    let mut options = ParquetScanOptions::from_config(self.cfg)?;
                    // Several scans of the same files with different filters share one set
                    // of splits: each task prunes again with its own scan's filter.
                    options.filter = match same.as_slice() {
                        [ScanLeaf {
                            kind: ScanKind::Parquet(filter, _),
                            ..
                        }] => filter.clone(),
                        _ => None,
                    };
                    options.partition_dirs = same.iter().find_map(|s| match &s.kind {
                        ScanKind::Parquet(_, parts) => parts.clone(),
                        ScanKind::Files { .. } => None,
                    });
                    let scan = ParquetScan::try_new(p, options)?;
                    let all = scan.splits(u64::MAX);
                    let total: u64 = all.iter().map(|s| s.bytes + OPEN_COST_BYTES).sum();
                    let max = self.max_split_bytes(total)?;
                    max_split = max_split.min(max);
                    for s in scan.splits(max) {
                        pieces.push(SplitRef {
                            scan: i,
                            path: s.path,
                            part: SplitPart::RowGroups(s.row_groups),
                            bytes: s.bytes,
                        });
                    }
                }
            }
        }
        pieces.sort_by_key(|p| std::cmp::Reverse(p.bytes));
        let mut out: Vec<Vec<SplitRef>> = Vec::new();
        let mut current: Vec<SplitRef> = Vec::new();
        let mut size = 0u64;
        for p in pieces {
            if !current.is_empty() && size + p.bytes > max_split {
                out.push(std::mem::take(&mut current));
                size = 0;
            }
            size += p.bytes + OPEN_COST_BYTES;
            current.push(p);
        }
        if !current.is_empty() {
            out.push(current);
        }
        if out.is_empty() {
            // No row group survived: one task reads nothing, so the stage still has output
            // (an aggregate without keys still returns its row).
            out.push(Vec::new());
        }
        Ok(out)
    }

    fn visit(&mut self, plan: &Arc<LogicalPlan>) -> Result<Open> {
        match plan.as_ref() {
            LogicalPlan::Scan {
                source:
                    ScanSource::Parquet {
                        paths, partitions, ..
                    },
                ..
            } => {
                let filter = crate::physical::shared_scan::parquet_read(plan).and_then(|(_, f)| f);
                Ok(Open {
                    fragment: plan.clone(),
                    inputs: Vec::new(),
                    scans: vec![ScanLeaf {
                        paths: paths.clone(),
                        kind: ScanKind::Parquet(
                            filter,
                            partitions.as_ref().map(|p| p.dirs.clone()),
                        ),
                    }],
                    layout: Layout::Splits,
                    external: None,
                })
            }
            LogicalPlan::Scan {
                source:
                    ScanSource::Files {
                        format,
                        paths,
                        options,
                        schema,
                        ..
                    },
                ..
            } => Ok(Open {
                fragment: plan.clone(),
                inputs: Vec::new(),
                scans: vec![ScanLeaf {
                    paths: paths.clone(),
                    kind: ScanKind::Files {
                        format: *format,
                        options: options.clone().into_iter().collect(),
                        schema: schema.clone(),
                    },
                }],
                layout: Layout::Splits,
                external: None,
            }),
            LogicalPlan::Scan {
                source: ScanSource::External { .. },
                attrs,
                name,
                ..
            } => Ok(Open {
                fragment: plan.clone(),
                inputs: Vec::new(),
                scans: Vec::new(),
                layout: Layout::External,
                external: Some((name.clone(), attrs.clone())),
            }),
            LogicalPlan::Scan { .. } | LogicalPlan::OneRow | LogicalPlan::Empty { .. } => {
                Ok(Open {
                    fragment: plan.clone(),
                    inputs: Vec::new(),
                    scans: Vec::new(),
                    layout: Layout::Local,
                    external: None,
                })
            }
            LogicalPlan::Project { input, .. }
            | LogicalPlan::Filter { input, .. }
            | LogicalPlan::Expand { input, .. }
            | LogicalPlan::Generate { input, .. }
            | LogicalPlan::SubqueryAlias { input, .. } => {
                let child = self.visit(input)?;
                let node = plan.with_children(vec![child.fragment.clone()]);
                Ok(child.wrap(node))
            }
            LogicalPlan::Aggregate { input, group, aggs } => {
                self.aggregate(plan, input, group, aggs)
            }
            LogicalPlan::Join {
                left,
                right,
                join_type,
                condition,
                hint,
            } => self.join(plan, left, right, *join_type, condition.as_ref(), *hint),
            LogicalPlan::Window { input, exprs } => {
                let keys = exprs
                    .first()
                    .map(|(w, _)| w.partition_by.clone())
                    .unwrap_or_default();
                let child = self.visit(input)?;
                let exchange = if keys.is_empty() {
                    ExchangeKeys::Single
                } else {
                    ExchangeKeys::Hash(keys.into_iter().map(|k| (k, None)).collect())
                };
                let n = match exchange {
                    ExchangeKeys::Single => 1,
                    _ => self.partitions_for(local_size_in_bytes(input))?,
                };
                let (leaf, open) = self.shuffled(vec![(child, exchange, input.output())], n)?;
                Ok(open.wrap(plan.with_children(leaf)))
            }
            LogicalPlan::Sort { input, .. } => {
                let child = self.single(input)?;
                let node = plan.with_children(vec![child.fragment.clone()]);
                Ok(child.wrap(node))
            }
            LogicalPlan::Limit { input, skip, fetch } => {
                let child = self.visit(input)?;
                if matches!(child.layout, Layout::Local | Layout::Partitions(1)) {
                    let node = plan.with_children(vec![child.fragment.clone()]);
                    return Ok(child.wrap(node));
                }
                // Each task keeps the first skip + fetch rows (Spark's LocalLimit), one task
                // the global limit.
                let local = match fetch {
                    Some(f) => {
                        let node = LogicalPlan::Limit {
                            input: child.fragment.clone(),
                            skip: 0,
                            fetch: Some(skip + f),
                        };
                        child.wrap(node)
                    }
                    None => child,
                };
                let attrs = input.output();
                let (leaf, open) = self.shuffled(vec![(local, ExchangeKeys::Single, attrs)], 1)?;
                Ok(open.wrap(plan.with_children(leaf)))
            }
            LogicalPlan::Union { inputs, .. } => {
                let children = inputs
                    .iter()
                    .map(|i| self.visit(i))
                    .collect::<Result<Vec<_>>>()?;
                if children.iter().all(|c| c.layout == Layout::Splits) {
                    let mut scans = Vec::new();
                    let mut ins = Vec::new();
                    let mut frags = Vec::new();
                    for c in children {
                        scans.extend(c.scans);
                        ins.extend(c.inputs);
                        frags.push(c.fragment);
                    }
                    return Ok(Open {
                        fragment: Arc::new(plan.with_children(frags)),
                        inputs: ins,
                        scans,
                        layout: Layout::Splits,
                        external: None,
                    });
                }
                let n = self.partitions_for(local_size_in_bytes(plan))?;
                let parts = children
                    .into_iter()
                    .zip(inputs)
                    .map(|(c, i)| (c, ExchangeKeys::RoundRobin, i.output()))
                    .collect();
                let (leaves, open) = self.shuffled(parts, n)?;
                Ok(open.wrap(plan.with_children(leaves)))
            }
            LogicalPlan::SetOp { .. } => Err(FerroError::Internal(
                "set operations are rewritten to joins before planning".into(),
            )),
        }
    }

    /// `input` in one task: its own stage's fragment when it already runs in one, else
    /// behind an exchange to a single partition.
    fn single(&mut self, input: &Arc<LogicalPlan>) -> Result<Open> {
        let child = self.visit(input)?;
        if matches!(child.layout, Layout::Local | Layout::Partitions(1)) {
            return Ok(child);
        }
        let (mut leaf, open) =
            self.shuffled(vec![(child, ExchangeKeys::Single, input.output())], 1)?;
        Ok(Open {
            fragment: leaf.remove(0),
            ..open
        })
    }

    /// Closes each of `parts` behind an exchange into `n` partitions; the leaves standing for
    /// them and the new stage reading them.
    fn shuffled(
        &mut self,
        parts: Vec<(Open, ExchangeKeys, Vec<Attr>)>,
        n: usize,
    ) -> Result<(Vec<Arc<LogicalPlan>>, Open)> {
        let mut leaves = Vec::new();
        let mut inputs = Vec::new();
        for (tag, (open, keys, attrs)) in parts.into_iter().enumerate() {
            let tag = tag as u8;
            let from = self.close(
                open,
                Sink::Exchange {
                    partitions: n,
                    keys,
                    tag,
                    agg_steps: None,
                },
            )?;
            let name = format!("stage_input_{tag}");
            leaves.push(placeholder(name.clone(), attrs.clone()));
            inputs.push(StageInput {
                from,
                broadcast: false,
                tag,
                placeholder: name,
                attrs,
                agg_steps: None,
            });
        }
        Ok((
            leaves.clone(),
            Open {
                fragment: leaves[0].clone(),
                inputs,
                scans: Vec::new(),
                layout: Layout::Partitions(n),
                external: None,
            },
        ))
    }

    fn aggregate(
        &mut self,
        plan: &Arc<LogicalPlan>,
        input: &Arc<LogicalPlan>,
        group: &[(Expr, Attr)],
        aggs: &[(crate::logical::AggCall, Attr)],
    ) -> Result<Open> {
        let spec = AggSpec {
            input: input.output(),
            group: group.to_vec(),
            aggs: aggs.to_vec(),
        };
        let steps = agg_plan(&spec, self.cfg)?;
        // Steps between exchanges: [partial ...] | [merge ...] | [final].
        let mut groups: Vec<(Vec<usize>, Option<usize>)> = Vec::new();
        let mut current = Vec::new();
        for (i, s) in steps.stages.iter().enumerate() {
            current.push(i);
            if s.exchange_keys.is_some() || i + 1 == steps.stages.len() {
                groups.push((std::mem::take(&mut current), s.exchange_keys));
            }
        }
        let child = self.visit(input)?;
        if groups.len() < 2 {
            return Err(FerroError::Internal(
                "an aggregation planned without an exchange".into(),
            ));
        }
        let n = if group.is_empty() {
            1
        } else {
            self.partitions_for(local_size_in_bytes(plan))?
        };
        let exchange_of = |keys: Option<usize>| match keys {
            Some(0) | None => ExchangeKeys::Single,
            Some(k) => ExchangeKeys::Leading(k),
        };
        // The partial steps end the input's stage.
        let (first, keys0) = &groups[0];
        let mut from = self.close(
            child,
            Sink::Exchange {
                partitions: n,
                keys: exchange_of(*keys0),
                tag: 0,
                agg_steps: Some(AggSteps {
                    spec: spec.clone(),
                    steps: first.clone(),
                }),
            },
        )?;
        // Middle steps (a distinct aggregation's merge and second partial step) run in a
        // stage of their own.
        for (middle, keys) in &groups[1..groups.len() - 1] {
            let id = self.stages.len();
            self.stages.push(Stage {
                id,
                fragment: None,
                inputs: vec![StageInput {
                    from,
                    broadcast: false,
                    tag: 0,
                    placeholder: String::new(),
                    attrs: Vec::new(),
                    agg_steps: Some(AggSteps {
                        spec: spec.clone(),
                        steps: middle.clone(),
                    }),
                }],
                scans: Vec::new(),
                external: None,
                tasks: TaskLayout::Partitions(n),
                adaptive_join: None,
                sink: Sink::Exchange {
                    partitions: n,
                    keys: exchange_of(*keys),
                    tag: 0,
                    agg_steps: None,
                },
            });
            from = id;
        }
        let (last, _) = &groups[groups.len() - 1];
        let attrs = plan.output();
        let name = "stage_input_0".to_string();
        Ok(Open {
            fragment: placeholder(name.clone(), attrs.clone()),
            inputs: vec![StageInput {
                from,
                broadcast: false,
                tag: 0,
                placeholder: name,
                attrs,
                agg_steps: Some(AggSteps {
                    spec,
                    steps: last.clone(),
                }),
            }],
            scans: Vec::new(),
            layout: Layout::Partitions(n),
            external: None,
        })
    }

    fn join(
        &mut self,
        plan: &Arc<LogicalPlan>,
        left: &Arc<LogicalPlan>,
        right: &Arc<LogicalPlan>,
        join_type: JoinType,
        condition: Option<&Expr>,
        hint: Option<JoinStrategy>,
    ) -> Result<Open> {
        // Spark's own estimates choose the strategy (a filter does not shrink them, so a side
        // is broadcast only when its unfiltered columns are small); the finer in-process
        // estimates pick the side worth measuring when they shuffle.
        let (keys, input) =
            join_selection_input(self.cfg, left, right, join_type, condition, hint)?;
        let (lb, rb) = (local_size_in_bytes(left), local_size_in_bytes(right));
        let smaller = if rb <= lb {
            BuildSide::Right
        } else {
            BuildSide::Left
        };
        let broadcast = match select_join(&input) {
            Ok((JoinStrategy::BroadcastHash | JoinStrategy::BroadcastNestedLoop, side)) => {
                Some(side)
            }
            Ok((JoinStrategy::Cartesian, _)) => Some(smaller),
            Ok(_) if keys.left.is_empty() => Some(broadcastable_side(join_type, smaller)),
            Ok(_) => None,
            // A strategy the user asked for that cannot run this join: said now, on the
            // driver, rather than by every task.
            Err(e) if hint.is_some() => return Err(e),
            Err(_) => Some(broadcastable_side(join_type, smaller)),
        };
        // A null-aware anti join needs every right row in each task (a NULL there empties
        // the result), as Spark's planner requires a broadcast for it. A side the join keeps
        // every row of is never broadcast (each task would emit its unmatched rows): a join
        // with no keys to shuffle on then runs in one task.
        let broadcast = if join_type == JoinType::NullAwareAnti {
            Some(BuildSide::Right)
        } else {
            broadcast.filter(|side| broadcast_buildable(join_type, *side))
        };
        // A join Spark's estimates shuffle, with a side much smaller than the other that the
        // join may build: that side's exchange runs first, and once the driver knows its real
        // size it broadcasts it or keeps the shuffle (Spark's adaptive execution turning a
        // sort-merge join into a broadcast join). Not when broadcasts are off (-1).
        let number = self
            .joins
            .get(&Arc::as_ptr(plan))
            .copied()
            .filter(|_| input.broadcast_threshold > 0 && !keys.left.is_empty())
            // A strategy the user asked for stays, as Spark's adaptive execution keeps it.
            .filter(|_| hint.is_none());
        let tryable = tryable_side(join_type, lb, rb);
        let mut adaptive = None;
        let broadcast = match (broadcast, number, tryable) {
            (None, Some(n), Some(side)) => match self.decided.get(&n) {
                Some(true) => Some(side),
                Some(false) => None,
                None => {
                    adaptive = Some((n, side));
                    None
                }
            },
            (b, _, _) => b,
        };
        match broadcast {
            Some(side) => {
                let (stream_plan, build_plan) = match side {
                    BuildSide::Left => (right, left),
                    BuildSide::Right => (left, right),
                };
                let build = self.visit(build_plan)?;
                let from = self.close(build, Sink::Broadcast)?;
                let stream = self.visit(stream_plan)?;
                let name = format!("broadcast_{from}");
                let attrs = build_plan.output();
                let leaf = placeholder(name.clone(), attrs.clone());
                let children = match side {
                    BuildSide::Left => vec![leaf, stream.fragment.clone()],
                    BuildSide::Right => vec![stream.fragment.clone(), leaf],
                };
                let mut open = stream.wrap(plan.with_children(children));
                open.inputs.push(StageInput {
                    from,
                    broadcast: true,
                    tag: 0,
                    placeholder: name,
                    attrs,
                    agg_steps: None,
                });
                Ok(open)
            }
            None if keys.left.is_empty() => {
                let (l, r) = (self.visit(left)?, self.visit(right)?);
                let (leaves, open) = self.shuffled(
                    vec![
                        (l, ExchangeKeys::Single, left.output()),
                        (r, ExchangeKeys::Single, right.output()),
                    ],
                    1,
                )?;
                Ok(open.wrap(plan.with_children(leaves)))
            }
            None => {
                let n = self.partitions_for(lb.max(rb))?;
                let (lt, rt) = (
                    key_types(&keys.left, left, self.cfg)?,
                    key_types(&keys.right, right, self.cfg)?,
                );
                let lkeys = keys.left.iter().map(|k| (k.clone(), None)).collect();
                let rkeys = keys
                    .right
                    .iter()
                    .zip(lt.iter().zip(&rt))
                    .map(|(k, (l, r))| (k.clone(), (l != r).then(|| l.clone())))
                    .collect();
                let (l, r) = (self.visit(left)?, self.visit(right)?);
                let (leaves, open) = self.shuffled(
                    vec![
                        (l, ExchangeKeys::Hash(lkeys), left.output()),
                        (r, ExchangeKeys::Hash(rkeys), right.output()),
                    ],
                    n,
                )?;
                if let Some((join, side)) = adaptive {
                    let from = open.inputs[usize::from(side == BuildSide::Right)].from;
                    self.stages[from].adaptive_join = Some(join);
                }
                Ok(open.wrap(plan.with_children(leaves)))
            }
        }
    }
}

/// The side of an equi-join worth trying as a broadcast: the smaller by estimate, at most
/// half the other, when the join type lets it be built.
fn tryable_side(join_type: JoinType, left_bytes: u64, right_bytes: u64) -> Option<BuildSide> {
    use JoinType::*;
    if right_bytes.saturating_mul(2) <= left_bytes
        && matches!(join_type, Inner | LeftOuter | LeftSemi | LeftAnti)
    {
        Some(BuildSide::Right)
    } else if left_bytes.saturating_mul(2) <= right_bytes && matches!(join_type, Inner | RightOuter)
    {
        Some(BuildSide::Left)
    } else {
        None
    }
}

/// A side of a join without equi-keys Spark may broadcast: the smaller one, unless the join
/// keeps every row of it.
fn broadcastable_side(join_type: JoinType, smaller: BuildSide) -> BuildSide {
    match join_type {
        JoinType::Inner | JoinType::Cross => smaller,
        JoinType::RightOuter => BuildSide::Left,
        _ => BuildSide::Right,
    }
}

/// The types of a join side's key expressions.
fn key_types(keys: &[Expr], side: &LogicalPlan, cfg: &Config) -> Result<Vec<DataType>> {
    let schema = attrs_schema(&side.output());
    let ctx = BindContext::for_session(&schema, cfg);
    keys.iter()
        .map(|k| Ok(bind(k, &ctx)?.data_type()))
        .collect()
}

/// The steps of `spec`'s aggregation, as each task plans them.
pub(crate) fn agg_plan(spec: &AggSpec, cfg: &Config) -> Result<AggregatePlan> {
    let schema = attrs_schema(&spec.input);
    let by: Vec<Expr> = spec
        .group
        .iter()
        .map(|(e, a)| Expr::Alias {
            expr: Box::new(e.clone()),
            name: a.key(),
        })
        .collect();
    let calls: Vec<_> = spec
        .aggs
        .iter()
        .map(|(c, a)| engine_call(c, Some(&a.key())))
        .collect();
    AggregatePlan::new(&schema, &by, &calls, cfg)
}
