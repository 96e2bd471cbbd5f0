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
    /// The plan as Spark prints a physical plan, with each stage's boundary and tasks.
    pub fn explain(&self, cfg: &Config) -> Result<String> {
        let mut out = format!("== Physical Plan (on Spark, {} stages) ==\n", self.stages.len());
        let root = self.result()?;
        self.write_stage(root, cfg, "", &mut out)?;
        Ok(out)
    }

    fn write_stage(&self, stage: &Stage, cfg: &Config, indent: &str, out: &mut String) -> Result<()> {
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
                let partial = match agg_steps {
                    Some(_) => ", after partial aggregation",
                    None => "",
                };
                format!("Exchange {part} [stage {}, {tasks}{partial}]", stage.id)
            }
        };
        let _ = writeln!(out, "{indent}{head}");
        let body_indent = format!("{indent}+- ");
        let text = match &stage.fragment {
            Some(f) => explain_physical(&PhysicalPlanner::new(cfg).create(f)?, false),
            None => "HashAggregate (merge steps of a distinct aggregation)\n".to_string(),
        };
        let child_indent = format!("{indent}   ");
        for (i, line) in text.lines().enumerate() {
            let prefix = if i == 0 { &body_indent } else { &child_indent };
            let _ = writeln!(out, "{prefix}{line}");
            for si in &stage.inputs {
                let named = !si.placeholder.is_empty() && line.contains("LocalTableScan")
                    && leaf_names(line, si);
                if named || (stage.fragment.is_none() && i == 0) {
                    let depth = line.len() - line.trim_start_matches([' ', '+', '-', ':']).len();
                    let sub = format!("{child_indent}{}   ", " ".repeat(depth));
                    if let Some(from) = self.stages.get(si.from) {
                        self.write_stage(from, cfg, &sub, out)?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Whether an EXPLAIN line of an in-memory leaf is the one `input` fills (its columns).
fn leaf_names(line: &str, input: &super::StageInput) -> bool {
    let cols: Vec<String> = input.attrs.iter().map(|a| a.key()).collect();
    line.contains(&format!("[{}]", cols.join(", ")))
}
