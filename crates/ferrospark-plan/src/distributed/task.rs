//! One Spark task of a stage: its inputs decoded, its fragment planned by the in-process
//! planner and run, its output shaped for the stage's sink.
//!
//! ```text
//!   blocks (tag, IPC) --decode--> rows per input --final agg steps?--> in-memory leaves
//!   splits ----------------------------------------------------------> scans restricted
//!   broadcast rows --------------------------------------------------> in-memory leaves
//!                                fragment (physical plan, one TaskContext)
//!                                     |
//!        Result / Broadcast: rows     |     Exchange: partial agg steps?, then
//!                                     |     IPC blocks per partition of the consumer
//! ```

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch};
use ferrospark_agg::exchange::{hash_partition_by, read_block, write_blocks};
use ferrospark_agg::AggregateOptions;
use ferrospark_common::{Config, FerroError, Result};
use ferrospark_expr::{bind, normalize_key, BindContext};
use ferrospark_scan::FileRanges;

use super::cut::agg_plan;
use super::{AggSteps, ExchangeKeys, Sink, SplitPart, SplitRef, Stage};
use crate::logical::{attrs_schema, LogicalPlan, ScanSource};
use crate::physical::planner::{PhysicalPlanner, TaskSplits};
use crate::physical::scan::rename;
use crate::physical::shared_build::SharedBuilds;
use crate::physical::{collect_parallel, explain_physical, TaskContext};

/// What one task is handed.
#[derive(Debug, Default)]
pub struct TaskInput {
    /// Its position among the stage's tasks.
    pub task: usize,
    /// The splits it reads (a stage over scans).
    pub splits: Vec<SplitRef>,
    /// The shuffled blocks of its partition, each with its input's tag.
    pub blocks: Vec<(u8, Vec<u8>)>,
    /// Broadcast rows, by the stage that produced them.
    pub broadcasts: HashMap<usize, Arc<Vec<RecordBatch>>>,
    /// The rows of its partition of the PySpark DataFrame the stage reads.
    pub rows: Vec<RecordBatch>,
    /// Broadcast join sides built by the stage's earlier tasks in this worker.
    pub shared_builds: Option<Arc<SharedBuilds>>,
}

/// What one task hands back.
#[derive(Debug)]
pub enum TaskOutput {
    /// Rows (a result or broadcast stage), fields named `name#id`.
    Rows(Vec<RecordBatch>),
    /// IPC blocks, each with the partition of the consuming stage it belongs to.
    Blocks(Vec<(u32, Vec<u8>)>),
}

/// Runs aggregation `steps` over `input`; each step's metrics line is added to `report`.
fn run_agg_steps(
    steps: &AggSteps,
    input: Vec<RecordBatch>,
    cfg: &Config,
    ctx: &TaskContext,
    report: &mut String,
) -> Result<Vec<RecordBatch>> {
    let plan = agg_plan(&steps.spec, cfg)?;
    let options = AggregateOptions::from_config(cfg, ctx.pool.clone())?;
    let mut batches = input;
    for (n, &i) in steps.steps.iter().enumerate() {
        let stage = plan
            .stages
            .get(i)
            .ok_or_else(|| FerroError::Internal(format!("no aggregation step {i}")))?;
        let mut exec = stage.exec(options.clone())?;
        if n == 0 && i > 0 {
            // Merging partial states: each state row is at most one group.
            exec.expect_groups(batches.iter().map(|b| b.num_rows()).sum())?;
        }
        let (out, m) = exec.run(batches.into_iter().map(Ok))?;
        report.push_str(&format!(
            "{}  [{}]\n",
            stage.describe(),
            crate::physical::metrics_text(&m)
        ));
        batches = out;
    }
    Ok(batches)
}

/// The first (partial) aggregation step over `input`'s rows as they are produced: one step
/// per scan thread fed straight from the scan when `input` streams inside a scan (string keys
/// grouped on their dictionary codes), else over its stream; no input row is held.
fn partial_aggregate(
    input: &Arc<dyn crate::ExecutionPlan>,
    steps: &AggSteps,
    cfg: &Config,
    ctx: &Arc<TaskContext>,
    report: &mut String,
) -> Result<Vec<RecordBatch>> {
    let plan = agg_plan(&steps.spec, cfg)?;
    let first = plan.first_stage()?;
    let options = AggregateOptions::from_config(cfg, ctx.pool.clone())?;
    let execs = match input.pipeline(ctx)? {
        Some(mut p) => {
            let probe = first.exec(options.clone())?;
            crate::physical::aggregate::dictionary_keys(&mut p, &probe, &input.schema())?;
            // A partial step that does not reduce its rows hands them on as they are, as
            // Spark's partial aggregation skips itself (the final step groups them anyway).
            let make = || Ok(first.exec(options.clone())?.pass_through_when_unreduced());
            p.run(make, |exec, b| exec.push(&b))?
        }
        None => {
            let mut exec = first.exec(options.clone())?.pass_through_when_unreduced();
            for b in input.execute(ctx)? {
                exec.push(&b?)?;
            }
            vec![exec]
        }
    };
    let mut out = Vec::new();
    for exec in execs {
        let (batches, m) = exec.run(std::iter::empty())?;
        report.push_str(&format!(
            "{}  [{}]\n",
            first.describe(),
            crate::physical::metrics_text(&m)
        ));
        out.extend(batches);
    }
    Ok(out)
}

/// `plan` with each in-memory leaf named in `fill` given its rows.
pub(super) fn fill_leaves(
    plan: &Arc<LogicalPlan>,
    fill: &HashMap<String, Arc<Vec<RecordBatch>>>,
) -> Arc<LogicalPlan> {
    if let LogicalPlan::Scan {
        source: ScanSource::Memory { .. } | ScanSource::External { .. },
        attrs,
        projection,
        filters,
        name,
    } = plan.as_ref()
    {
        if let Some(batches) = fill.get(name) {
            return Arc::new(LogicalPlan::Scan {
                source: ScanSource::Memory {
                    batches: batches.clone(),
                },
                attrs: attrs.clone(),
                projection: projection.clone(),
                filters: filters.clone(),
                name: name.clone(),
            });
        }
    }
    let children: Vec<Arc<LogicalPlan>> = plan
        .children()
        .into_iter()
        .map(|c| fill_leaves(c, fill))
        .collect();
    if children.is_empty() {
        plan.clone()
    } else {
        Arc::new(plan.with_children(children))
    }
}

/// Runs one task of `stage` under `cfg`: its output, and its plan with each operator's
/// metrics (for the driver's EXPLAIN after a run).
pub fn run_task(stage: &Stage, cfg: &Config, input: TaskInput) -> Result<(TaskOutput, String)> {
    let ctx = Arc::new(TaskContext::new(cfg)?.with_shared_builds(input.shared_builds.clone()));
    let mut report = String::new();
    let mut by_tag: HashMap<u8, Vec<RecordBatch>> = HashMap::new();
    for (tag, block) in &input.blocks {
        by_tag.entry(*tag).or_default().extend(read_block(block)?);
    }
    drop(input.blocks);
    let mut fill: HashMap<String, Arc<Vec<RecordBatch>>> = HashMap::new();
    let mut only_input: Option<Vec<RecordBatch>> = None;
    for si in &stage.inputs {
        let rows = if si.broadcast {
            input
                .broadcasts
                .get(&si.from)
                .cloned()
                .ok_or_else(|| {
                    FerroError::Internal(format!("stage {} was not broadcast", si.from))
                })?
                .as_ref()
                .clone()
        } else {
            let rows = by_tag.remove(&si.tag).unwrap_or_default();
            match &si.agg_steps {
                Some(steps) => run_agg_steps(steps, rows, cfg, &ctx, &mut report)?,
                None => rows,
            }
        };
        if stage.fragment.is_none() {
            only_input = Some(rows);
            continue;
        }
        let schema = attrs_schema(&si.attrs);
        // A task without rows may have handed over batches of no columns.
        let rows = rows
            .into_iter()
            .filter(|b| b.num_rows() > 0)
            .map(|b| rename(b, &schema))
            .collect::<Result<Vec<_>>>()?;
        fill.insert(si.placeholder.clone(), Arc::new(rows));
    }
    if let Some((name, attrs)) = &stage.external {
        let schema = attrs_schema(attrs);
        let rows = input
            .rows
            .into_iter()
            .map(|b| crate::conform::conform(b, &schema).and_then(|b| rename(b, &schema)))
            .collect::<Result<Vec<_>>>()?;
        fill.insert(name.clone(), Arc::new(rows));
    }
    let mut partial_done = false;
    let (batches, mut explain) = match &stage.fragment {
        Some(fragment) => {
            let fragment = fill_leaves(fragment, &fill);
            let mut splits: HashMap<Vec<PathBuf>, (HashMap<_, Vec<usize>>, FileRanges)> = stage
                .scans
                .iter()
                .map(|p| (p.clone(), Default::default()))
                .collect();
            for s in &input.splits {
                let paths = stage.scans.get(s.scan).ok_or_else(|| {
                    FerroError::Internal(format!(
                        "a split of scan {} of a stage without it",
                        s.scan
                    ))
                })?;
                if let Some((groups, ranges)) = splits.get_mut(paths) {
                    match &s.part {
                        SplitPart::RowGroups(g) => {
                            groups.entry(s.path.clone()).or_default().extend(g)
                        }
                        SplitPart::Bytes { start, end } => ranges
                            .entry(s.path.clone())
                            .or_default()
                            .push((*start, *end)),
                    }
                }
            }
            let splits: HashMap<Vec<PathBuf>, TaskSplits> = splits
                .into_iter()
                .map(|(k, (groups, ranges))| {
                    let t = TaskSplits {
                        row_groups: Arc::new(groups),
                        ranges: Arc::new(ranges),
                    };
                    (k, t)
                })
                .collect();
            let broadcast_leaves = stage
                .inputs
                .iter()
                .filter(|si| si.broadcast)
                .map(|si| si.placeholder.clone());
            let physical = PhysicalPlanner::new(cfg)
                .sharing_builds_on(broadcast_leaves)
                .reusing_results_of(&fragment)?
                .with_splits(splits)
                .create(&fragment)?;
            let batches = match &stage.sink {
                Sink::Exchange {
                    agg_steps: Some(steps),
                    ..
                } if steps.steps == [0] => {
                    let out = partial_aggregate(&physical, steps, cfg, &ctx, &mut report)?;
                    partial_done = true;
                    out
                }
                _ => collect_parallel(&physical, &ctx)?,
            };
            (batches, explain_physical(&physical, true) + &report)
        }
        None => (only_input.unwrap_or_default(), report.clone()),
    };
    let out = match &stage.sink {
        Sink::Result | Sink::Broadcast => TaskOutput::Rows(batches),
        Sink::Exchange {
            partitions,
            keys,
            agg_steps,
            ..
        } => {
            let mut tail = String::new();
            let batches = match agg_steps {
                Some(steps) if !partial_done => {
                    run_agg_steps(steps, batches, cfg, &ctx, &mut tail)?
                }
                _ => batches,
            };
            explain.push_str(&tail);
            TaskOutput::Blocks(exchange(batches, keys, *partitions, input.task, cfg)?)
        }
    };
    Ok((out, explain))
}

/// `batches` as IPC blocks per partition of `n`.
fn exchange(
    batches: Vec<RecordBatch>,
    keys: &ExchangeKeys,
    n: usize,
    task: usize,
    cfg: &Config,
) -> Result<Vec<(u32, Vec<u8>)>> {
    let n = n.max(1);
    let parts = match keys {
        ExchangeKeys::Single => vec![batches],
        ExchangeKeys::RoundRobin => {
            let mut parts: Vec<Vec<RecordBatch>> = vec![Vec::new(); n];
            for (i, b) in batches.into_iter().enumerate() {
                parts[(task + i) % n].push(b);
            }
            parts
        }
        ExchangeKeys::Leading(k) => {
            let keys: Vec<Vec<ArrayRef>> = batches
                .iter()
                .map(|b| b.columns()[..*k].iter().map(normalize_key).collect())
                .collect();
            hash_partition_by(&batches, &keys, n)?
        }
        ExchangeKeys::Hash(exprs) => {
            let Some(schema) = batches.first().map(RecordBatch::schema) else {
                return Ok(Vec::new());
            };
            let ctx = BindContext::for_session(&schema, cfg);
            let bound = exprs
                .iter()
                .map(|(e, t)| Ok((bind(e, &ctx)?, t.clone())))
                .collect::<Result<Vec<_>>>()?;
            let keys = batches
                .iter()
                .map(|b| {
                    bound
                        .iter()
                        .map(|(e, t)| {
                            let a = ferrospark_expr::evaluate(e, b)?.into_array(b.num_rows())?;
                            let a = match t {
                                Some(t) if a.data_type() != t => arrow_cast::cast(&a, t)?,
                                _ => a,
                            };
                            Ok(normalize_key(&a))
                        })
                        .collect::<Result<Vec<_>>>()
                })
                .collect::<Result<Vec<_>>>()?;
            hash_partition_by(&batches, &keys, n)?
        }
    };
    write_blocks(parts)
}
