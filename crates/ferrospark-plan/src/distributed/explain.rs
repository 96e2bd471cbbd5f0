//! A stage plan printed in Spark's `explain()` style: one operator tree, each exchange a
//! stage boundary (`Exchange hashpartitioning(...)`, `BroadcastExchange`) with the stage that
//! ends there and its tasks.

use std::fmt::Write;

use ferrospark_common::{Config, Result};

use super::{ExchangeKeys, Sink, Stage, StagePlan, TaskLayout};
use crate::logical::expr_text;
use crate::physical::explain_physical;
use crate::physical::planner::PhysicalPlanner;

impl StagePlan {
    /// The plan as Spark prints a physical plan, with each stage's boundary and tasks: an
    /// exchange stands where the stage reading it has the leaf its rows fill.
    pub fn explain(&self, cfg: &Config) -> Result<String> {
        let mut out = format!(
            "== Physical Plan (on Spark, {} stages) ==\n",
            self.stages.len()
        );
        let root = self.result()?;
        self.write_stage(root, cfg, "", "", &mut out)?;
        Ok(out)
    }

    /// Each join the stages' tasks run, in stage order: its strategy (`broadcast_hash`,
    /// `shuffle_hash`, ...), then Spark's operator name and its keys, type and build side.
    pub fn joins(&self, cfg: &Config) -> Result<Vec<(String, String)>> {
        fn walk(p: &std::sync::Arc<dyn crate::ExecutionPlan>, out: &mut Vec<(String, String)>) {
            for c in p.children() {
                walk(&c, out);
            }
            let name = p.name();
            if let Some(s) = ferrospark_join::JoinStrategy::of_operator(&name) {
                out.push((s.name().to_string(), format!("{name} {}", p.describe())));
            }
        }
        let mut out = Vec::new();
        for stage in &self.stages {
            if let Some(f) = plannable(stage) {
                walk(&PhysicalPlanner::new(cfg).create(&f)?, &mut out);
            }
        }
        Ok(out)
    }

    /// Writes `stage`: its head after `first`, the lines under it after `rest`.
    fn write_stage(
        &self,
        stage: &Stage,
        cfg: &Config,
        first: &str,
        rest: &str,
        out: &mut String,
    ) -> Result<()> {
        let tasks = match &stage.tasks {
            TaskLayout::Splits(s) => format!("{} tasks over file splits", s.len()),
            TaskLayout::Partitions(n) => format!("{n} task(s)"),
            TaskLayout::SparkRows => "a task per partition of a PySpark DataFrame".into(),
        };
        let head = match &stage.sink {
            Sink::Result => format!("ResultStage {} [{tasks}]", stage.id),
            Sink::Broadcast => format!("BroadcastExchange [stage {}, {tasks}]", stage.id),
            Sink::Exchange {
                partitions,
                keys,
                agg_steps,
                ..
            } => {
                let part = match keys {
                    ExchangeKeys::Hash(k) => {
                        let k: Vec<String> = k.iter().map(|(e, _)| expr_text(e)).collect();
                        format!("hashpartitioning({}, {partitions})", k.join(", "))
                    }
                    ExchangeKeys::Leading(k) => {
                        format!("hashpartitioning(first {k} columns, {partitions})")
                    }
                    ExchangeKeys::Single => "SinglePartition".into(),
                    ExchangeKeys::RoundRobin => format!("RoundRobinPartitioning({partitions})"),
                };
                let partial = match (agg_steps, stage.adaptive_join) {
                    (Some(_), _) => ", after partial aggregation",
                    (None, Some(_)) => ", runs first: broadcast instead if it proves small",
                    (None, None) => "",
                };
                format!("Exchange {part} [stage {}, {tasks}{partial}]", stage.id)
            }
        };
        let _ = writeln!(out, "{first}{head}");
        let text = match plannable(stage) {
            Some(f) => explain_physical(&PhysicalPlanner::new(cfg).create(&f)?, false),
            None => "HashAggregate (merge steps of a distinct aggregation)\n".to_string(),
        };
        for (i, line) in text.lines().enumerate() {
            let lead = if i == 0 {
                format!("{rest}+- ")
            } else {
                format!("{rest}   ")
            };
            let body = line.trim_start_matches([' ', '+', '-', ':']);
            let tree = &line[..line.len() - body.len()];
            let input = stage.inputs.iter().find(|si| {
                (stage.fragment.is_none() && i == 0)
                    || (!si.placeholder.is_empty()
                        && body.starts_with("LocalTableScan")
                        && leaf_names(body, si))
            });
            match input.and_then(|si| self.stages.get(si.from)) {
                Some(from) if stage.fragment.is_some() => {
                    // The producing stage in place of the leaf its rows fill.
                    let first = format!("{lead}{tree}");
                    let rest = format!("{rest}   {}", tree.replace("+-", "  ").replace(":-", ": "));
                    self.write_stage(from, cfg, &first, &rest, out)?;
                }
                Some(from) => {
                    let _ = writeln!(out, "{lead}{line}");
                    let rest = format!("{lead}   ");
                    self.write_stage(from, cfg, &format!("{rest}+- "), &format!("{rest}   "), out)?;
                }
                None => {
                    let _ = writeln!(out, "{lead}{line}");
                }
            }
        }
        Ok(())
    }
}

/// `stage`'s fragment as the driver can plan it: the PySpark DataFrame it reads (whose rows
/// only its tasks get) stands as an in-memory leaf of no rows.
fn plannable(stage: &Stage) -> Option<std::sync::Arc<crate::logical::LogicalPlan>> {
    let fragment = stage.fragment.as_ref()?;
    let Some((name, _)) = &stage.external else {
        return Some(fragment.clone());
    };
    let fill = std::collections::HashMap::from([(name.clone(), Default::default())]);
    Some(super::task::fill_leaves(fragment, &fill))
}

/// Whether an EXPLAIN line of an in-memory leaf is the one `input` fills (its columns).
fn leaf_names(line: &str, input: &super::StageInput) -> bool {
    let cols: Vec<String> = input.attrs.iter().map(|a| a.key()).collect();
    line.contains(&format!("[{}]", cols.join(", ")))
}
