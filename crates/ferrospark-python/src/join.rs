//! Bindings of the join operators: `hash_join` joins two Arrow streams in this process.

use std::collections::HashMap;
use std::sync::Mutex;

use arrow_array::cast::AsArray;
use arrow_array::RecordBatch;
use arrow_schema::{Schema, SchemaRef};
use ferrospark_agg::exchange::read_block;
use ferrospark_common::{Config, FerroError, MemoryPool, SpillDir};
use ferrospark_expr::types::{comparison_type, spark_type_name};
use ferrospark_expr::BinaryOp;
use ferrospark_expr::{bind, resolve_column, BindContext, PhysicalExpr};
use ferrospark_join::{
    join_schema, select_join, split_condition, BuildSide, JoinAlgorithm, JoinExec,
    JoinSelectionInput, JoinStrategy, JoinType,
};
use pyo3::prelude::*;
use pyo3::types::PyList;
use pyo3_arrow::{PyArray, PyRecordBatch, PySchema};

use crate::aggregate::{conform, metrics_list, spark_input_schema};
use crate::blocks::{KeySource, PyBlockPartitioner};
use crate::{config_from, Detach, IntoPyResult, PyExpr};

/// Keys named by `using` (one name, found on each side), as Spark's `join(other, "k")`.
fn using_keys(
    using: &[String],
    left: &Schema,
    right: &Schema,
) -> Result<(Vec<PhysicalExpr>, Vec<PhysicalExpr>), FerroError> {
    let column = |schema: &Schema, name: &str, side: &str| -> Result<PhysicalExpr, FerroError> {
        let index = resolve_column(schema, name).map_err(|e| {
            FerroError::Analysis(format!(
                "join key `{name}` is not a column of the {side} side: {e}"
            ))
        })?;
        let f = schema.field(index);
        Ok(PhysicalExpr::Column {
            index,
            name: f.name().clone(),
            data_type: f.data_type().clone(),
        })
    };
    let mut l = Vec::new();
    let mut r = Vec::new();
    for name in using {
        let (a, b) = (column(left, name, "left")?, column(right, name, "right")?);
        let (at, bt) = (a.data_type(), b.data_type());
        // Both sides compare in the type Spark compares them in (int with bigint as bigint).
        let common = comparison_type(&at, &bt).ok_or_else(|| {
            FerroError::Analysis(format!(
                "join key `{name}` is {} on the left and {} on the right, which Spark cannot compare; cast one side",
                spark_type_name(&at),
                spark_type_name(&bt)
            ))
        })?;
        let cast = |e: PhysicalExpr, t: &arrow_schema::DataType| {
            if &e.data_type() == t {
                e
            } else {
                PhysicalExpr::Cast {
                    expr: Box::new(e),
                    to: t.clone(),
                    mode: ferrospark_expr::physical::CastMode::Ansi,
                }
            }
        };
        l.push(cast(a, &common));
        r.push(cast(b, &common));
    }
    Ok((l, r))
}

/// The condition bound to the left columns followed by the right ones; a name found on both
/// sides is refused rather than silently taken from one.
fn bind_condition(
    condition: &ferrospark_expr::Expr,
    left: &Schema,
    right: &Schema,
) -> Result<PhysicalExpr, FerroError> {
    for name in condition.column_refs() {
        let on_left = resolve_column(left, &name).is_ok();
        let on_right = resolve_column(right, &name).is_ok();
        if on_left && on_right {
            return Err(FerroError::Analysis(format!(
                "[AMBIGUOUS_REFERENCE] column `{name}` is on both sides of the join; rename it on one side, or join on it by name (on=\"{name}\")"
            )));
        }
    }
    let joined = join_schema(left, right, JoinType::Inner);
    bind(condition, &BindContext::new(&joined))
}

/// A join planned from both sides' schemas and sizes: its keys, residual condition, the
/// operator Spark would choose and that operator's build side. Planned identically on a Spark
/// driver and in each of its tasks.
#[derive(Clone)]
pub(crate) struct PlannedJoin {
    left: SchemaRef,
    right: SchemaRef,
    left_keys: Vec<PhysicalExpr>,
    right_keys: Vec<PhysicalExpr>,
    null_safe: Vec<bool>,
    residual: Option<PhysicalExpr>,
    join_type: JoinType,
    chosen: JoinStrategy,
    algorithm: JoinAlgorithm,
    build: BuildSide,
    batch_size: usize,
    memory_limit: Option<u64>,
    spill_dir: Option<std::path::PathBuf>,
}

/// What a join is asked: type, `USING` names, condition, strategy (`None`: Spark's choice).
pub(crate) struct JoinRequest<'a> {
    join_type: JoinType,
    using: &'a [String],
    condition: Option<&'a ferrospark_expr::Expr>,
    hint: Option<JoinStrategy>,
}

impl<'a> JoinRequest<'a> {
    fn parse(
        how: &str,
        using: &'a [String],
        condition: Option<&'a ferrospark_expr::Expr>,
        strategy: &str,
    ) -> Result<Self, FerroError> {
        Ok(Self {
            join_type: JoinType::parse(how)?,
            using,
            condition,
            hint: match strategy {
                "auto" => None,
                other => Some(JoinStrategy::parse(other)?),
            },
        })
    }
}

impl PlannedJoin {
    /// Plans `request` over sides of schemas `left` and `right` (Spark's Arrow types) and
    /// estimated sizes, with the settings of `cfg`.
    fn new(
        left: &Schema,
        right: &Schema,
        request: &JoinRequest<'_>,
        cfg: &Config,
        left_bytes: u64,
        right_bytes: u64,
    ) -> Result<Self, FerroError> {
        let ls = spark_input_schema(left);
        let rs = spark_input_schema(right);
        let (mut lk, mut rk) = using_keys(request.using, &ls, &rs)?;
        let mut null_safe = vec![false; lk.len()];
        let mut residual = None;
        if let Some(c) = request.condition {
            let bound = bind_condition(c, &ls, &rs)?;
            let split = split_condition(&bound, ls.fields().len());
            lk.extend(split.left_keys);
            rk.extend(split.right_keys);
            null_safe.extend(split.null_safe);
            residual = split.residual;
        }
        let input = JoinSelectionInput {
            join_type: request.join_type,
            has_equi_keys: !lk.is_empty(),
            keys_orderable: true,
            left_bytes,
            right_bytes,
            broadcast_threshold: cfg.auto_broadcast_threshold()?,
            prefer_sort_merge: cfg.prefer_sort_merge_join()?,
            shuffle_partitions: cfg.shuffle_partitions()? as u64,
            hint: request.hint,
        };
        let (chosen, mut build) = select_join(&input)?;
        let algorithm = match chosen {
            JoinStrategy::BroadcastHash | JoinStrategy::ShuffledHash => JoinAlgorithm::Hash,
            JoinStrategy::BroadcastNestedLoop | JoinStrategy::Cartesian => {
                if chosen == JoinStrategy::Cartesian {
                    build = if left_bytes < right_bytes {
                        BuildSide::Left
                    } else {
                        BuildSide::Right
                    };
                }
                JoinAlgorithm::NestedLoop
            }
            JoinStrategy::SortMerge => JoinAlgorithm::SortMerge,
        };
        if algorithm == JoinAlgorithm::NestedLoop {
            // Every condition part, equalities included, is checked on each pair.
            residual = keys_as_condition(&lk, &rk, &null_safe, ls.fields().len(), residual);
            lk.clear();
            rk.clear();
            null_safe.clear();
        }
        Ok(Self {
            left: ls,
            right: rs,
            left_keys: lk,
            right_keys: rk,
            null_safe,
            residual,
            join_type: request.join_type,
            chosen,
            algorithm,
            build,
            batch_size: cfg.batch_size()?,
            memory_limit: cfg.memory_limit()?,
            spill_dir: cfg.spill_dir(),
        })
    }

    /// A fresh operator for this join, in its own memory pool.
    fn exec(&self) -> Result<JoinExec, FerroError> {
        let pool = MemoryPool::new(self.memory_limit);
        Ok(JoinExec::try_new(
            self.left.clone(),
            self.right.clone(),
            self.left_keys.clone(),
            self.right_keys.clone(),
            self.null_safe.clone(),
            self.residual.clone(),
            self.join_type,
            self.algorithm,
            self.build,
            self.batch_size,
            &pool,
        )?
        .with_spill_dir(SpillDir::new(self.spill_dir.clone()))
        .with_sort_merge_fallback(self.chosen == JoinStrategy::ShuffledHash))
    }

    /// `strategy: operator` of `exec`.
    fn explain(&self, exec: &JoinExec) -> String {
        format!("{}: {}", self.chosen.name(), exec.explain())
    }
}

/// Key pairs as comparisons over the left columns followed by the right ones, ANDed with
/// `rest`.
fn keys_as_condition(
    left: &[PhysicalExpr],
    right: &[PhysicalExpr],
    null_safe: &[bool],
    left_width: usize,
    rest: Option<PhysicalExpr>,
) -> Option<PhysicalExpr> {
    left.iter()
        .zip(right)
        .zip(null_safe)
        .map(|((l, r), safe)| PhysicalExpr::Compare {
            op: if *safe {
                BinaryOp::EqNullSafe
            } else {
                BinaryOp::Eq
            },
            left: Box::new(l.clone()),
            right: Box::new(r.remap_columns(&|i| i + left_width)),
        })
        .chain(rest)
        .reduce(|a, b| PhysicalExpr::And(Box::new(a), Box::new(b)))
}

/// The canonical short name of Spark's join type `how` (`left_outer` -> `left`, ...); a
/// `ConfigError` for an unknown one.
#[pyfunction]
pub(crate) fn join_type_name(py: Python<'_>, how: &str) -> PyResult<&'static str> {
    JoinType::parse(how).map(JoinType::how).py(py)
}

/// The strategy (`broadcast_hash`, ...) Spark's join hint `name` asks for; `None` for hints
/// that are not join hints.
#[pyfunction]
pub(crate) fn join_hint_strategy(name: &str) -> Option<&'static str> {
    JoinStrategy::from_hint(name).map(JoinStrategy::name)
}

/// The strategy (`broadcast_hash`, ...) of Spark's join operator `name`
/// (`BroadcastHashJoin`, ...); `None` for other operators.
#[pyfunction]
pub(crate) fn join_strategy_of_operator(name: &str) -> Option<&'static str> {
    JoinStrategy::of_operator(name).map(JoinStrategy::name)
}

/// Of two hinted strategies, the one Spark honours.
#[pyfunction]
pub(crate) fn stronger_join_hint(py: Python<'_>, a: &str, b: &str) -> PyResult<&'static str> {
    let (a, b) = (
        JoinStrategy::parse(a).py(py)?,
        JoinStrategy::parse(b).py(py)?,
    );
    Ok(a.stronger_hint(b).name())
}

/// A join planned once from both sides' schemas and estimated sizes, for Spark tasks: each
/// task makes its operator from it, and rows are partitioned on its keys to meet.
#[pyclass(name = "JoinPlan", module = "ferrospark._native", frozen)]
pub(crate) struct PyJoinPlan(PlannedJoin);

#[pymethods]
impl PyJoinPlan {
    #[new]
    #[pyo3(signature = (left, right, how, using=None, condition=None, strategy="auto", conf=None, left_bytes=0, right_bytes=0))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        left: PySchema,
        right: PySchema,
        how: &str,
        using: Option<Vec<String>>,
        condition: Option<PyExpr>,
        strategy: &str,
        conf: Option<HashMap<String, String>>,
        left_bytes: u64,
        right_bytes: u64,
    ) -> PyResult<Self> {
        let cfg = config_from(py, conf)?;
        let using = using.unwrap_or_default();
        let condition = condition.map(|c| c.0);
        let planned = JoinRequest::parse(how, &using, condition.as_ref(), strategy)
            .and_then(|r| {
                PlannedJoin::new(
                    left.as_ref(),
                    right.as_ref(),
                    &r,
                    &cfg,
                    left_bytes,
                    right_bytes,
                )
            })
            .py(py)?;
        // An operator that cannot run the plan fails here, on the driver, not in a task.
        planned.exec().py(py)?;
        Ok(Self(planned))
    }

    /// Spark's name of the chosen operator (`broadcast_hash`, `shuffle_hash`, ...).
    fn strategy(&self) -> &'static str {
        self.0.chosen.name()
    }

    /// `"left"` or `"right"`: the side the operator builds.
    fn build_side(&self) -> &'static str {
        match self.0.build {
            BuildSide::Left => "left",
            BuildSide::Right => "right",
        }
    }

    /// Whether a built side can be shared by tasks probing independently: no build row is
    /// ever emitted unmatched, so no task needs another's matches.
    fn shares_build(&self) -> bool {
        !self.0.join_type.keeps(self.0.build) && self.0.algorithm != JoinAlgorithm::SortMerge
    }

    /// The number of key pairs (0 for a nested loop join, whose keys are in its condition).
    fn num_keys(&self) -> usize {
        self.0.left_keys.len()
    }

    /// The operator's output schema (left columns, then right ones).
    fn output_schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let exec = self.0.exec().py(py)?;
        PySchema::new(exec.output_schema()).into_pyarrow(py)
    }

    /// `strategy: operator, build side, keys, condition`.
    fn explain(&self, py: Python<'_>) -> PyResult<String> {
        let exec = self.0.exec().py(py)?;
        Ok(self.0.explain(&exec))
    }

    /// A new operator for one task.
    fn task(&self, py: Python<'_>) -> PyResult<PyJoinTask> {
        let exec = self.0.exec().py(py)?;
        Ok(PyJoinTask(Mutex::new(exec)))
    }

    /// A partitioner of one task's rows of the `left` side (else the right) into
    /// `partitions` by their join keys, for Spark to shuffle.
    fn partitioner(
        &self,
        py: Python<'_>,
        left: bool,
        partitions: usize,
    ) -> PyResult<PyBlockPartitioner> {
        let exec = self.0.exec().py(py)?;
        let schema = if left { &self.0.left } else { &self.0.right };
        Ok(PyBlockPartitioner::from_keys(
            KeySource::JoinSide {
                exec: Box::new(exec),
                left,
            },
            schema.clone(),
            if self.0.left_keys.is_empty() {
                1
            } else {
                partitions
            },
        ))
    }
}

/// One task's join operator: build batches in, then probe batches, output as it comes.
#[pyclass(name = "JoinTask", module = "ferrospark._native", frozen)]
pub(crate) struct PyJoinTask(Mutex<JoinExec>);

impl PyJoinTask {
    fn with<T>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut JoinExec) -> Result<T, FerroError> + Send,
    ) -> PyResult<T>
    where
        T: Send,
    {
        py.run_detached(|| {
            let mut exec = self.0.lock().unwrap_or_else(|p| p.into_inner());
            f(&mut exec)
        })
        .py(py)
    }
}

/// The batches of a binary array of IPC blocks written by a `JoinPartitioner`.
fn block_batches(blocks: PyArray) -> Result<Vec<RecordBatch>, FerroError> {
    let (array, _) = blocks.into_inner();
    let values: Vec<&[u8]> = match array.data_type() {
        arrow_schema::DataType::Binary => array.as_binary::<i32>().iter().flatten().collect(),
        arrow_schema::DataType::LargeBinary => array.as_binary::<i64>().iter().flatten().collect(),
        other => {
            return Err(FerroError::Config(format!(
                "join shuffle blocks must be binary, got {other}"
            )))
        }
    };
    let mut out = Vec::new();
    for block in values {
        out.extend(read_block(block)?);
    }
    Ok(out)
}

fn batch_list<'py>(py: Python<'py>, batches: Vec<RecordBatch>) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for b in batches {
        if b.num_rows() > 0 {
            list.append(PyRecordBatch::new(b).into_pyarrow(py)?)?;
        }
    }
    Ok(list)
}

fn drain_all(exec: &mut JoinExec) -> Result<Vec<RecordBatch>, FerroError> {
    let mut out = Vec::new();
    while let Some(b) = exec.pull()? {
        out.push(b);
    }
    Ok(out)
}

#[pymethods]
impl PyJoinTask {
    /// Adds a batch of the build side.
    fn push_build(&self, py: Python<'_>, batch: PyRecordBatch) -> PyResult<()> {
        let batch = batch.into_inner();
        self.with(py, move |e| {
            let batch = conform(batch, &e.build_input_schema())?;
            e.push_build(&batch)
        })
    }

    /// Adds the build-side rows of shuffle blocks.
    fn push_build_blocks(&self, py: Python<'_>, blocks: PyArray) -> PyResult<()> {
        self.with(py, move |e| {
            for b in block_batches(blocks)? {
                e.push_build(&b)?;
            }
            Ok(())
        })
    }

    /// Ends the build side (builds the hash table).
    fn finish_build(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |e| e.finish_build())
    }

    /// Streams a probe batch through; returns the output ready so far.
    fn probe<'py>(&self, py: Python<'py>, batch: PyRecordBatch) -> PyResult<Bound<'py, PyList>> {
        let batch = batch.into_inner();
        let out = self.with(py, move |e| {
            let batch = conform(batch, &e.probe_input_schema())?;
            e.push_probe(&batch)?;
            drain_all(e)
        })?;
        batch_list(py, out)
    }

    /// Streams the probe-side rows of shuffle blocks through; returns the output so far.
    fn probe_blocks<'py>(&self, py: Python<'py>, blocks: PyArray) -> PyResult<Bound<'py, PyList>> {
        let out = self.with(py, move |e| {
            for b in block_batches(blocks)? {
                e.push_probe(&b)?;
            }
            drain_all(e)
        })?;
        batch_list(py, out)
    }

    /// Ends the probe side; returns the rest of the output.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = self.with(py, |e| {
            e.finish()?;
            drain_all(e)
        })?;
        batch_list(py, out)
    }

    /// Another prober of this task's built side (see `JoinPlan.shares_build`).
    fn fork(&self, py: Python<'_>) -> PyResult<PyJoinTask> {
        let fork = self.with(py, |e| {
            e.finish_build()?;
            e.fork_probe()
        })?;
        Ok(PyJoinTask(Mutex::new(fork)))
    }

    /// The operator's metrics.
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let m = self
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .metrics()
            .clone();
        metrics_list(py, &[m])?.get_item(0)
    }

    /// The operator's one-line summary.
    fn explain(&self) -> String {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).explain()
    }
}
