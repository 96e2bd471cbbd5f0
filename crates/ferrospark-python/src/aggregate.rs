//! Bindings of the aggregation engine: plans, in-process runs (one stream, or fused into a
//! Parquet scan's threads), and step runners for Spark tasks.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, SchemaRef};
use ferrospark_agg::exchange::{partition_blocks, read_block};
use ferrospark_agg::{AggregateCall, AggregatePlan, HashAggregateExec};
use ferrospark_common::{Config, FerroError, MetricsSet};
pub(crate) use ferrospark_plan::conform::{conform, spark_input_schema};
use ferrospark_scan::ParquetScan;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};
use pyo3_arrow::{PyArray, PyRecordBatch, PyRecordBatchReader, PySchema, PyTable};

use crate::{config_from, to_py, Detach, IntoPyResult, PyExpr, PyParquetScan};

/// `(name, args, distinct, ignore_nulls, alias)` as the Python layer sends an aggregate.
pub(crate) type CallSpec = (String, Vec<PyExpr>, bool, bool, Option<String>);

fn calls_from(specs: Vec<CallSpec>) -> Vec<AggregateCall> {
    specs
        .into_iter()
        .map(|(name, args, distinct, ignore_nulls, alias)| {
            let mut c = AggregateCall::new(&name, args.into_iter().map(|a| a.0).collect());
            c.distinct = distinct;
            c.ignore_nulls = ignore_nulls;
            c.alias = alias;
            c
        })
        .collect()
}

/// The scan feeding `first` (the first aggregation step), reading the string keys the step
/// can group on codes dictionary-encoded, and the schema its batches are conformed to (the
/// planned input with those columns left as dictionaries).
fn with_dictionary_keys(
    scan: &Arc<ParquetScan>,
    first: Option<&HashAggregateExec>,
    target: &SchemaRef,
) -> Result<(Arc<ParquetScan>, SchemaRef), FerroError> {
    let columns = first
        .map(|e| e.dictionary_input_columns())
        .unwrap_or_default();
    if columns.is_empty() || scan.schema().fields().len() != target.fields().len() {
        return Ok((scan.clone(), target.clone()));
    }
    let scan = Arc::new(scan.with_dictionary_output(&columns)?);
    let target = ferrospark_plan::conform::with_dictionary_columns(&scan.schema(), target);
    Ok((scan, target))
}

pub(crate) fn metrics_list<'py>(
    py: Python<'py>,
    metrics: &[MetricsSet],
) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for m in metrics {
        let d = PyDict::new(py);
        for (k, v) in m.snapshot() {
            d.set_item(k, v)?;
        }
        out.append(d)?;
    }
    Ok(out)
}

/// A planned aggregation: its steps, bound to an input schema.
#[pyclass(name = "AggregatePlan", module = "ferrospark._native", frozen)]
pub(crate) struct PyAggregatePlan {
    plan: AggregatePlan,
    input_schema: SchemaRef,
    cfg: Config,
}

#[pymethods]
impl PyAggregatePlan {
    /// Number of steps (2, or 4 with distinct aggregates).
    fn num_stages(&self) -> usize {
        self.plan.stages.len()
    }

    /// The output schema of step `i` (the last one is the result).
    fn stage_schema<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyAny>> {
        let stage = self
            .plan
            .stages
            .get(i)
            .ok_or_else(|| to_py(py, FerroError::Config(format!("no aggregation step {i}"))))?;
        let exec = stage.exec(Default::default()).py(py)?;
        PySchema::new(exec.output_schema()).into_pyarrow(py)
    }

    /// The number of leading output columns step `i`'s output is shuffled on, if any.
    fn exchange_keys(&self, i: usize) -> Option<usize> {
        self.plan.stages.get(i).and_then(|s| s.exchange_keys)
    }

    /// The schema of the result.
    fn output_schema<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        PySchema::new(self.plan.output_schema().py(py)?).into_pyarrow(py)
    }

    /// The steps in Spark's physical-plan style.
    fn explain(&self) -> String {
        self.plan.explain()
    }

    /// Runs the whole aggregation over an Arrow stream in this process; returns
    /// `(pyarrow.Table, [metrics per step])`.
    fn run<'py>(&self, py: Python<'py>, data: PyRecordBatchReader) -> PyResult<Bound<'py, PyAny>> {
        let reader = data.into_reader()?;
        let target = self.input_schema.clone();
        let result = py.run_detached(|| {
            let input = reader.map(|b| conform(b.map_err(FerroError::from)?, &target));
            self.plan.run_complete(input, &self.cfg)
        });
        self.result(py, result)
    }

    /// A runner of steps `stages` (consecutive) for one Spark task.
    fn runner(&self, py: Python<'_>, stages: Vec<usize>) -> PyResult<PyStageRunner> {
        let options = ferrospark_agg::plan::options_for(&self.cfg).py(py)?;
        let mut execs = Vec::new();
        for &i in &stages {
            let stage =
                self.plan.stages.get(i).ok_or_else(|| {
                    to_py(py, FerroError::Config(format!("no aggregation step {i}")))
                })?;
            execs.push(stage.exec(options.clone()).py(py)?);
        }
        // Batches from Spark may spell types differently (large strings, list field names):
        // each step reads its input in exactly the types it was planned with.
        let target = match stages.first() {
            Some(0) => Some(self.input_schema.clone()),
            Some(&i) => self.plan.stages.get(i).map(|s| s.input_schema.clone()),
            None => None,
        };
        Ok(PyStageRunner(Mutex::new(RunnerState {
            execs,
            target,
            metrics: Vec::new(),
        })))
    }
}

impl PyAggregatePlan {
    fn result<'py>(
        &self,
        py: Python<'py>,
        result: Result<(Vec<RecordBatch>, Vec<MetricsSet>), FerroError>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let (batches, metrics) = result.py(py)?;
        let schema = self.plan.output_schema().py(py)?;
        let table = PyTable::try_new(batches, schema)?.into_pyarrow(py)?;
        let metrics = metrics_list(py, &metrics)?;
        (table, metrics).into_pyobject(py).map(|t| t.into_any())
    }
}

struct RunnerState {
    execs: Vec<HashAggregateExec>,
    target: Option<SchemaRef>,
    metrics: Vec<MetricsSet>,
}

impl RunnerState {
    /// Adds one batch, in the first step's planned types, to the first step.
    fn push(&mut self, batch: RecordBatch) -> Result<(), FerroError> {
        let batch = match &self.target {
            Some(t) => conform(batch, t)?,
            None => batch,
        };
        match self.execs.first_mut() {
            Some(e) => e.push(&batch),
            None => Err(FerroError::Config(
                "this aggregation step runner has already finished; make a new one".into(),
            )),
        }
    }
}

/// Consecutive aggregation steps inside one task: batches pushed in, results out at the end.
#[pyclass(name = "StageRunner", module = "ferrospark._native", frozen)]
pub(crate) struct PyStageRunner(Mutex<RunnerState>);

#[pymethods]
impl PyStageRunner {
    /// Adds one batch to the first step.
    fn push(&self, py: Python<'_>, batch: PyRecordBatch) -> PyResult<()> {
        let batch = batch.into_inner();
        py.run_detached(|| {
            let mut s = self.0.lock().unwrap_or_else(|p| p.into_inner());
            s.push(batch)
        })
        .py(py)
    }

    /// Reads a planned scan (one Spark split) straight into the first step, natively.
    fn push_scan(&self, py: Python<'_>, scan: &PyParquetScan) -> PyResult<()> {
        let scan = scan.0.clone();
        py.run_detached(|| {
            let mut s = self.0.lock().unwrap_or_else(|p| p.into_inner());
            let s = &mut *s;
            let (scan, target) = match &s.target {
                Some(t) => {
                    let (scan, t) = with_dictionary_keys(&scan, s.execs.first(), t)?;
                    (scan, Some(t))
                }
                None => (scan, None),
            };
            for batch in scan.execute() {
                let batch = match &target {
                    Some(t) => conform(batch?, t)?,
                    None => batch?,
                };
                if let Some(e) = s.execs.first_mut() {
                    e.push(&batch)?;
                }
            }
            Ok::<_, FerroError>(())
        })
        .py(py)
    }

    /// Adds the rows of Arrow IPC blocks (a binary array, as `finish_blocks` wrote them and
    /// Spark's shuffle delivered them) to the first step.
    fn push_blocks(&self, py: Python<'_>, blocks: PyArray) -> PyResult<()> {
        let (array, _) = blocks.into_inner();
        py.run_detached(|| {
            let values: Vec<&[u8]> = match array.data_type() {
                DataType::Binary => array.as_binary::<i32>().iter().flatten().collect(),
                DataType::LargeBinary => array.as_binary::<i64>().iter().flatten().collect(),
                other => {
                    return Err(FerroError::Config(format!(
                        "aggregation shuffle blocks must be binary, got {other}"
                    )))
                }
            };
            let mut s = self.0.lock().unwrap_or_else(|p| p.into_inner());
            let s = &mut *s;
            for block in values {
                for batch in read_block(block)? {
                    s.push(batch)?;
                }
            }
            Ok(())
        })
        .py(py)
    }

    /// Ends the input; returns the last step's output, hash-partitioned on its first
    /// `num_keys` columns into `partitions` and written as Arrow IPC blocks:
    /// `(partition, bytes)` pairs, for Spark to shuffle as a few binary values.
    fn finish_blocks<'py>(
        &self,
        py: Python<'py>,
        partitions: usize,
        num_keys: usize,
    ) -> PyResult<Bound<'py, PyList>> {
        let blocks = py
            .run_detached(|| partition_blocks(&self.run_to_end()?, num_keys, partitions))
            .py(py)?;
        let list = PyList::empty(py);
        for (p, bytes) in blocks {
            list.append((p, PyBytes::new(py, &bytes)))?;
        }
        Ok(list)
    }

    /// Ends the input; returns the last step's output batches.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = py.run_detached(|| self.run_to_end()).py(py)?;
        let list = PyList::empty(py);
        for b in out {
            if b.num_rows() > 0 || b.num_columns() == 0 {
                list.append(PyRecordBatch::new(b).into_pyarrow(py)?)?;
            }
        }
        Ok(list)
    }

    /// Metrics of each step (after `finish`).
    fn metrics<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let s = self.0.lock().unwrap_or_else(|p| p.into_inner());
        metrics_list(py, &s.metrics)
    }
}

impl PyStageRunner {
    /// Runs every step to its end; the last step's output.
    fn run_to_end(&self) -> Result<Vec<RecordBatch>, FerroError> {
        let mut s = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let execs = std::mem::take(&mut s.execs);
        let mut batches: Vec<RecordBatch> = Vec::new();
        let mut first = true;
        for e in execs {
            let input = if first {
                Vec::new()
            } else {
                std::mem::take(&mut batches)
            };
            first = false;
            let (out, m) = e.run(input.into_iter().map(Ok))?;
            s.metrics.push(m);
            batches = out;
        }
        Ok(batches)
    }
}

/// The output column name of one aggregate (its alias, or Spark's default name).
#[pyfunction]
pub(crate) fn aggregate_name(spec: CallSpec) -> String {
    calls_from(vec![spec])
        .first()
        .map(AggregateCall::output_name)
        .unwrap_or_default()
}

/// Plans `GROUP BY by` computing `aggs` over batches of `schema`.
#[pyfunction]
#[pyo3(signature = (schema, by, aggs, conf=None))]
pub(crate) fn plan_aggregate(
    py: Python<'_>,
    schema: PySchema,
    by: Vec<PyExpr>,
    aggs: Vec<CallSpec>,
    conf: Option<HashMap<String, String>>,
) -> PyResult<PyAggregatePlan> {
    let cfg = config_from(py, conf)?;
    let input_schema = spark_input_schema(&schema.into_inner());
    let by: Vec<_> = by.into_iter().map(|e| e.0).collect();
    let plan = AggregatePlan::new(&input_schema, &by, &calls_from(aggs), &cfg).py(py)?;
    Ok(PyAggregatePlan {
        plan,
        input_schema,
        cfg,
    })
}
