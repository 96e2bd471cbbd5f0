//! Bindings of whole queries on Spark: a plan's stages for the driver, and one stage's task
//! for a Spark Python worker. Cutting and running live in `ferrospark_plan::distributed`.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::RecordBatch;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use pyo3_arrow::{PyRecordBatch, PySchema, PyTable};

use ferrospark_common::{Config, FerroError};
use ferrospark_expr::wire::ipc_to_batches;
use ferrospark_plan::distributed::{
    run_task, ExchangeKeys, Sink, Stage, StagePlan, TaskInput, TaskLayout, TaskOutput,
};
use ferrospark_plan::logical::LogicalPlan;
use ferrospark_plan::physical::shared_build::SharedBuilds;
use ferrospark_plan::QueryEngine;

use crate::{config_from, Detach, IntoPyResult};

/// A query cut into Spark stages (see `ferrospark_plan::distributed`).
#[pyclass(name = "StagePlan", module = "ferrospark._native", frozen)]
pub(crate) struct PyStagePlan {
    plan: StagePlan,
    cfg: Config,
}

impl PyStagePlan {
    /// Optimizes `plan` under `engine`'s configuration with `overrides` and cuts it for
    /// `parallelism` cores.
    pub(crate) fn cut(
        py: Python<'_>,
        engine: &Arc<QueryEngine>,
        plan: &Arc<LogicalPlan>,
        parallelism: usize,
        overrides: HashMap<String, String>,
        decided: HashMap<usize, bool>,
    ) -> PyResult<Self> {
        let mut cfg = engine.config().clone();
        for (k, v) in overrides {
            cfg.set(k, v).py(py)?;
        }
        let engine = engine.clone();
        let plan = plan.clone();
        let c = cfg.clone();
        let plan = py
            .run_detached(move || {
                let (optimized, _) = engine.optimize(&plan)?;
                ferrospark_plan::distributed::plan_stages(&optimized, &c, parallelism, &decided)
            })
            .py(py)?;
        Ok(Self { plan, cfg })
    }
}

fn sink_kind(s: &Sink) -> &'static str {
    match s {
        Sink::Result => "result",
        Sink::Broadcast => "broadcast",
        Sink::Exchange { .. } => "exchange",
    }
}

#[pymethods]
impl PyStagePlan {
    /// How many stages; the last is the result.
    fn num_stages(&self) -> usize {
        self.plan.stages.len()
    }

    /// Stage `i` as its tasks receive it (JSON).
    fn stage_json(&self, py: Python<'_>, i: usize) -> PyResult<String> {
        self.plan.stage_json(i).py(py)
    }

    /// What the driver needs of stage `i`: `tasks` (count, or None for one per partition of
    /// a PySpark DataFrame), `layout` (`splits`, `partitions`, `spark`), `sink` (`result`,
    /// `broadcast`, `exchange`), `partitions` (of the consuming stage, for an exchange),
    /// `inputs` as `(stage, broadcast)` pairs and `external` (the name of the PySpark
    /// DataFrame it reads).
    fn stage_info<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyDict>> {
        let s = self
            .plan
            .stages
            .get(i)
            .ok_or_else(|| FerroError::Internal(format!("no stage {i}")))
            .py(py)?;
        let d = PyDict::new(py);
        let (layout, tasks) = match &s.tasks {
            TaskLayout::Splits(t) => ("splits", Some(t.len())),
            TaskLayout::Partitions(n) => ("partitions", Some(*n)),
            TaskLayout::SparkRows => ("spark", None),
        };
        d.set_item("layout", layout)?;
        d.set_item("tasks", tasks)?;
        d.set_item("sink", sink_kind(&s.sink))?;
        let partitions = match &s.sink {
            Sink::Exchange {
                partitions, keys, ..
            } => match keys {
                ExchangeKeys::Single => 1,
                _ => *partitions,
            },
            _ => 1,
        };
        d.set_item("partitions", partitions)?;
        let tag = match &s.sink {
            Sink::Exchange { tag, .. } => *tag,
            _ => 0,
        };
        d.set_item("tag", tag)?;
        let inputs: Vec<(usize, bool)> = s.inputs.iter().map(|i| (i.from, i.broadcast)).collect();
        d.set_item("inputs", inputs)?;
        d.set_item("external", s.external.as_ref().map(|(n, _)| n.clone()))?;
        let bytes: u64 = match &s.tasks {
            TaskLayout::Splits(t) => t.iter().flatten().map(|s| s.bytes).sum(),
            _ => 0,
        };
        d.set_item("scan_bytes", bytes)?;
        d.set_item("adaptive_join", s.adaptive_join)?;
        Ok(d)
    }

    /// Each join the tasks run: `(strategy, operator and its keys, type and build side)`.
    fn joins(&self, py: Python<'_>) -> PyResult<Vec<(String, String)>> {
        self.plan.joins(&self.cfg).py(py)
    }

    /// The plan in Spark's `explain()` style with each stage boundary.
    fn explain(&self, py: Python<'_>) -> PyResult<String> {
        self.plan.explain(&self.cfg).py(py)
    }
}

/// Rows broadcast to the tasks of a stage: decoded once per Python worker.
#[pyclass(name = "BroadcastRows", module = "ferrospark._native", frozen)]
pub(crate) struct PyBroadcastRows(Arc<Vec<RecordBatch>>);

#[pymethods]
impl PyBroadcastRows {
    /// Decodes the Arrow IPC streams a broadcast stage's tasks produced.
    #[new]
    fn new(py: Python<'_>, blobs: Vec<Vec<u8>>) -> PyResult<Self> {
        let batches = py
            .run_detached(move || {
                let mut out = Vec::new();
                for b in &blobs {
                    out.extend(ipc_to_batches(b)?.1);
                }
                Ok::<_, FerroError>(out)
            })
            .py(py)?;
        Ok(Self(Arc::new(batches)))
    }

    /// Rows held.
    fn num_rows(&self) -> usize {
        self.0.iter().map(RecordBatch::num_rows).sum()
    }
}

/// One stage, ready to run its tasks in this Python worker.
#[pyclass(name = "StageTask", module = "ferrospark._native", frozen)]
pub(crate) struct PyStageTask {
    stage: Arc<Stage>,
    cfg: Config,
    /// Broadcast join sides built by this stage's tasks in this worker; dropped by
    /// `release_builds`.
    builds: std::sync::Mutex<Arc<SharedBuilds>>,
}

impl PyStageTask {
    fn shared_builds(&self) -> Arc<SharedBuilds> {
        self.builds
            .lock()
            .map(|b| b.clone())
            .unwrap_or_else(|_| Arc::new(SharedBuilds::new()))
    }
}

#[pymethods]
impl PyStageTask {
    /// The stage from its JSON, under `conf`.
    #[new]
    #[pyo3(signature = (stage_json, conf=None))]
    fn new(
        py: Python<'_>,
        stage_json: &str,
        conf: Option<HashMap<String, String>>,
    ) -> PyResult<Self> {
        let cfg = config_from(py, conf)?;
        let stage = Stage::from_json(stage_json).py(py)?;
        Ok(Self {
            stage: Arc::new(stage),
            cfg,
            builds: std::sync::Mutex::new(Arc::new(SharedBuilds::new())),
        })
    }

    /// How many broadcast join sides this worker's tasks of the stage built, and how many
    /// times a task probed one an earlier task built.
    fn build_counts(&self) -> (usize, usize) {
        let b = self.shared_builds();
        (b.builds(), b.reuses())
    }

    /// Frees the built broadcast sides (a later task builds them again if it needs them).
    fn release_builds(&self) {
        if let Ok(mut b) = self.builds.lock() {
            *b = Arc::new(SharedBuilds::new());
        }
    }

    /// Runs task `task` (`None`: every split of the stage at once, as the driver runs a
    /// small stage): `blocks` are the shuffled `(tag, bytes)` of its partition, `rows`
    /// the batches of its partition of a PySpark DataFrame, `broadcasts` the broadcast rows
    /// by stage. Returns `("blocks", [(partition, bytes)], plan)` or `("rows", table, plan)`,
    /// `plan` the fragment's operators with their metrics.
    #[pyo3(signature = (task, blocks, rows, broadcasts, schema=None))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        task: Option<usize>,
        blocks: Vec<(u8, Vec<u8>)>,
        rows: Vec<PyRecordBatch>,
        broadcasts: HashMap<usize, PyRef<'py, PyBroadcastRows>>,
        schema: Option<PySchema>,
    ) -> PyResult<(String, Bound<'py, PyAny>, String)> {
        let splits = match (&self.stage.tasks, task) {
            (TaskLayout::Splits(all), Some(task)) => all
                .get(task)
                .cloned()
                .ok_or_else(|| FerroError::Internal(format!("no task {task} in this stage")))
                .py(py)?,
            (TaskLayout::Splits(all), None) => all.iter().flatten().cloned().collect(),
            _ => Vec::new(),
        };
        let input = TaskInput {
            task: task.unwrap_or(0),
            splits,
            blocks,
            broadcasts: broadcasts.iter().map(|(k, v)| (*k, v.0.clone())).collect(),
            rows: rows.into_iter().map(PyRecordBatch::into_inner).collect(),
            shared_builds: Some(self.shared_builds()),
        };
        let stage = self.stage.clone();
        let cfg = self.cfg.clone();
        let (out, plan) = py
            .run_detached(move || run_task(&stage, &cfg, input))
            .py(py)?;
        Ok(match out {
            TaskOutput::Blocks(blocks) => {
                let list = PyList::empty(py);
                for (p, bytes) in blocks {
                    list.append((p, PyBytes::new(py, &bytes)))?;
                }
                ("blocks".to_string(), list.into_any(), plan)
            }
            TaskOutput::Rows(batches) => {
                let schema = match (schema, batches.first()) {
                    (Some(s), _) => s.into_inner(),
                    (None, Some(b)) => b.schema(),
                    (None, None) => Arc::new(arrow_schema::Schema::empty()),
                };
                let batches = batches
                    .into_iter()
                    .map(|b| ferrospark_plan::physical::scan::rename(b, &schema))
                    .collect::<Result<Vec<_>, _>>()
                    .py(py)?;
                let table = PyTable::try_new(batches, schema)?.into_pyarrow(py)?;
                ("rows".to_string(), table, plan)
            }
        })
    }
}
