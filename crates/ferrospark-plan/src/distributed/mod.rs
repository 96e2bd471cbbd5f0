//! Whole queries on Spark: an optimized plan cut into stages where Spark's physical plan puts
//! an `Exchange`, each stage a plan fragment that every Spark task runs natively.
//!
//! ```text
//!   optimized LogicalPlan
//!        |  cut (cut.rs): JoinSelection on Spark's estimates, partial / final aggregation
//!        v
//!   StagePlan: stages in run order, the last one the result
//!        |  the driver (python/ferrospark/_spark_stages.py) turns each stage into a Spark
//!        |  `mapInArrow` over its input: the splits of its scans, or the shuffled blocks of
//!        |  the stages feeding it; broadcast stages are collected and broadcast first
//!        v
//!   each task: run_task (task.rs) plans the fragment with the in-process planner (its scans
//!   restricted to the task's splits, its inputs filled with the task's rows) and runs it,
//!   then hands Spark what the stage's sink asks for: IPC blocks per shuffle partition
//!   (after partial aggregation where an aggregate sits above), or the result's rows
//! ```
//!
//! A stage's fragment is an ordinary [`LogicalPlan`]: its inputs from other stages are
//! in-memory leaves (named `stage_input_<tag>` and `broadcast_<stage>`) with the attributes of
//! the plan they stand for, so the expressions above them resolve unchanged. Stages travel to
//! tasks as JSON.

mod cut;
mod explain;
mod task;
#[cfg(test)]
mod tests;

use std::path::PathBuf;
use std::sync::Arc;

use arrow_schema::DataType;
use ferrospark_common::{FerroError, Result};
use ferrospark_expr::Expr;
use serde::{Deserialize, Serialize};

use crate::logical::{AggCall, Attr, LogicalPlan};

pub use cut::plan_stages;
pub use task::{run_task, TaskInput, TaskOutput};

/// The stages of one query, in the order they can run (every stage after the stages it
/// reads); the last is the result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StagePlan {
    /// The stages; a stage's id is its position.
    pub stages: Vec<Stage>,
}

/// One stage: the work each of its tasks does and where its output goes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Stage {
    /// Its position in [`StagePlan::stages`].
    pub id: usize,
    /// The plan each task runs; `None` when the stage only runs aggregation steps over its
    /// one input (the middle of a distinct aggregation).
    pub fragment: Option<Arc<LogicalPlan>>,
    /// What it reads from other stages.
    pub inputs: Vec<StageInput>,
    /// The distinct path lists of its file scans (a task restricts each to its splits).
    pub scans: Vec<Vec<PathBuf>>,
    /// The leaf (name and attributes) its tasks fill with the rows of a PySpark DataFrame,
    /// one task per partition of that DataFrame.
    pub external: Option<(String, Vec<Attr>)>,
    /// How its tasks are formed.
    pub tasks: TaskLayout,
    /// Where its output goes.
    pub sink: Sink,
    /// For the exchange of a join's side that Spark's estimates shuffle but that may prove
    /// small: that join (its number in a pre-order walk of the plan). The driver runs this
    /// stage first; if its output is within the broadcast threshold, it cuts the plan again
    /// with the side broadcast (reusing the rows), else it keeps the shuffle (Spark's adaptive
    /// execution turning a sort-merge join into a broadcast join once a side's size is
    /// known).
    pub adaptive_join: Option<usize>,
}

/// How a stage's tasks are formed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum TaskLayout {
    /// One task per list of splits of the stage's scans (Spark's `FileSourceScanExec`
    /// partitions).
    Splits(Vec<Vec<SplitRef>>),
    /// One task per shuffle partition of its inputs.
    Partitions(usize),
    /// One task per partition of the PySpark DataFrame it reads ([`Stage::external`]).
    SparkRows,
}

impl TaskLayout {
    /// How many tasks the stage runs.
    pub fn count(&self) -> usize {
        match self {
            TaskLayout::Splits(s) => s.len(),
            TaskLayout::Partitions(n) => *n,
            TaskLayout::SparkRows => 0,
        }
    }
}

/// A part of one file of one of a stage's scans.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SplitRef {
    /// Which of [`Stage::scans`].
    pub scan: usize,
    /// The file.
    pub path: PathBuf,
    /// What of it to read.
    pub part: SplitPart,
    /// Bytes on disk of that part.
    pub bytes: u64,
}

/// What a split reads of its file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum SplitPart {
    /// These row groups of a Parquet file.
    RowGroups(Vec<usize>),
    /// The records of a row-format file (CSV, JSON, Avro) that this byte range holds
    /// (`ferrospark_scan::FileScan::splits`).
    Bytes {
        /// The range's first byte.
        start: u64,
        /// The byte after its last.
        end: u64,
    },
}

/// Rows a stage reads from another stage.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StageInput {
    /// The stage producing them.
    pub from: usize,
    /// Through Spark's shuffle (tagged blocks) or a broadcast variable.
    pub broadcast: bool,
    /// The tag its blocks carry in the shuffle (the input's position among the stage's
    /// shuffled inputs).
    pub tag: u8,
    /// The name of the in-memory leaf of the fragment it fills.
    pub placeholder: String,
    /// The leaf's attributes.
    pub attrs: Vec<Attr>,
    /// Aggregation steps to run over the blocks first (the final steps of an aggregation
    /// whose partial steps ran before the exchange).
    pub agg_steps: Option<AggSteps>,
}

/// An aggregation, as every task rebuilds its steps (`ferrospark_agg::AggregatePlan`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AggSpec {
    /// The attributes of its input.
    pub input: Vec<Attr>,
    /// Grouping expressions and their output attributes.
    pub group: Vec<(Expr, Attr)>,
    /// Aggregate calls and their output attributes.
    pub aggs: Vec<(AggCall, Attr)>,
}

/// Some consecutive steps of an aggregation.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AggSteps {
    /// The aggregation.
    pub spec: AggSpec,
    /// Positions of the steps in its plan.
    pub steps: Vec<usize>,
}

/// Where a stage's output goes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Sink {
    /// The query's result.
    Result,
    /// Collected on the driver and broadcast to the tasks reading it.
    Broadcast,
    /// Through Spark's shuffle to the stage reading it, as IPC blocks per partition.
    Exchange {
        /// Partitions of the consuming stage.
        partitions: usize,
        /// How rows are assigned to partitions.
        keys: ExchangeKeys,
        /// The tag of the consuming stage's input.
        tag: u8,
        /// Aggregation steps run over the fragment's output first (a partial aggregation).
        agg_steps: Option<AggSteps>,
    },
}

/// Spark's output partitionings.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum ExchangeKeys {
    /// `hashpartitioning(keys)`: each key expression (over the fragment's output) and the
    /// type both sides of a join compare it in, when it must be cast to that.
    Hash(Vec<(Expr, Option<DataType>)>),
    /// `hashpartitioning` of the first this-many columns (aggregation states).
    Leading(usize),
    /// `SinglePartition`.
    Single,
    /// `RoundRobinPartitioning`.
    RoundRobin,
}

impl StagePlan {
    /// The plan as JSON.
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string(self).map_err(|e| FerroError::Internal(format!("stage plan: {e}")))
    }

    /// One stage as JSON (what its tasks receive).
    pub fn stage_json(&self, id: usize) -> Result<String> {
        let stage = self
            .stages
            .get(id)
            .ok_or_else(|| FerroError::Internal(format!("no stage {id}")))?;
        serde_json::to_string(stage).map_err(|e| FerroError::Internal(format!("stage {id}: {e}")))
    }

    /// The result stage.
    pub fn result(&self) -> Result<&Stage> {
        self.stages
            .last()
            .ok_or_else(|| FerroError::Internal("a query without stages".into()))
    }
}

impl Stage {
    /// A stage read back from [`StagePlan::stage_json`].
    pub fn from_json(text: &str) -> Result<Stage> {
        serde_json::from_str(text).map_err(|e| {
            FerroError::Internal(format!("a stage sent to this task is unreadable: {e}"))
        })
    }
}
