//! Bindings of the streaming operators (`ferrospark.streaming`): the state store, the
//! stream-stream join and the session window aggregation. They live in `ferrospark-stream`.

use std::collections::HashMap;
use std::sync::Mutex;

use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::{Field, Schema, SchemaRef};
use ferrospark_common::{FerroError, Result};
use ferrospark_expr::interval::interval_text_micros;
use ferrospark_stream::join::exec::{StreamJoinSpec, StreamJoinType};
use ferrospark_stream::partitioned::{PartitionedSessionWindow, PartitionedStreamJoin};
use ferrospark_stream::session::{OutputMode, SessionGap, SessionWindowSpec};
use ferrospark_stream::spark_routing::split_by_spark_hash;
use ferrospark_stream::state::{
    collect, commit_changes, open_provider, StateStoreConf, StateStoreId, StateStoreMetrics,
    StateStoreProvider,
};
use ferrospark_stream::watermark::{BatchWatermark, BatchWatermarks, WatermarkPolicy};
use pyo3::prelude::*;
use pyo3_arrow::{PySchema, PyTable};

use crate::aggregate::{calls_from, conform, spark_input_schema, CallSpec};
use crate::{config_from, Detach, IntoPyResult, PyExpr};

/// One (operator, partition)'s versioned state store.
#[pyclass(name = "StateStore", module = "ferrospark._native", frozen)]
pub(crate) struct PyStateStore(Mutex<Box<dyn StateStoreProvider>>);

fn locked<'a>(
    m: &'a Mutex<Box<dyn StateStoreProvider>>,
) -> Result<std::sync::MutexGuard<'a, Box<dyn StateStoreProvider>>, FerroError> {
    m.lock()
        .map_err(|_| FerroError::Internal("a state store's lock is poisoned".into()))
}

fn metrics_dict(m: &StateStoreMetrics) -> HashMap<&'static str, f64> {
    HashMap::from([
        ("numRowsTotal", m.num_keys as f64),
        ("numRowsUpdated", m.rows_updated as f64),
        ("numRowsRemoved", m.rows_removed as f64),
        ("memoryUsedBytes", m.memory_bytes as f64),
        ("diskBytes", m.disk_bytes as f64),
        ("commitTimeMs", m.commit_ms),
        ("snapshotsWritten", m.snapshots_written as f64),
        ("spillsToDisk", m.spills as f64),
        ("deltasCaughtUp", m.deltas_caught_up as f64),
        ("deltasWritten", m.deltas_written as f64),
        ("loadedFromFiles", m.loads_from_files as f64),
        ("allUpdatesTimeMs", m.all_updates_ms),
        ("allRemovalsTimeMs", m.all_removals_ms),
    ])
}

#[pymethods]
impl PyStateStore {
    /// Opens store `store_name` of (`operator_id`, `partition_id`) under `checkpoint`, its
    /// provider chosen by `conf` (Spark's state store keys).
    #[new]
    #[pyo3(signature = (checkpoint, operator_id=0, partition_id=0, store_name="default", conf=None))]
    fn new(
        py: Python<'_>,
        checkpoint: String,
        operator_id: u64,
        partition_id: u32,
        store_name: &str,
        conf: Option<HashMap<String, String>>,
    ) -> PyResult<Self> {
        let cfg = config_from(py, conf)?;
        let conf = StateStoreConf::from_config(&cfg).py(py)?;
        let id = StateStoreId::new(checkpoint, operator_id, partition_id).named(store_name);
        let provider = py.run_detached(|| open_provider(&id, &conf)).py(py)?;
        Ok(Self(Mutex::new(provider)))
    }

    /// The latest committed version.
    fn latest_version(&self, py: Python<'_>) -> PyResult<u64> {
        py.run_detached(|| locked(&self.0)?.latest_version()).py(py)
    }

    /// Applies `puts` then `removes` to `version` and commits: the new version.
    fn commit(
        &self,
        py: Python<'_>,
        version: u64,
        puts: Vec<(Vec<u8>, Vec<u8>)>,
        removes: Vec<Vec<u8>>,
    ) -> PyResult<u64> {
        py.run_detached(|| {
            let mut p = locked(&self.0)?;
            commit_changes(p.as_mut(), version, &puts, &removes)
        })
        .py(py)
    }

    /// `key`'s value at `version`.
    fn get(&self, py: Python<'_>, version: u64, key: Vec<u8>) -> PyResult<Option<Vec<u8>>> {
        py.run_detached(|| {
            let mut p = locked(&self.0)?;
            let store = p.get_store(version)?;
            Ok(store.get(&key)?.map(|v| v.into_owned()))
        })
        .py(py)
    }

    /// The keys starting with `prefix` at `version` and their values, in key order.
    #[pyo3(signature = (version, prefix=Vec::new()))]
    fn scan(
        &self,
        py: Python<'_>,
        version: u64,
        prefix: Vec<u8>,
    ) -> PyResult<Vec<(Vec<u8>, Vec<u8>)>> {
        py.run_detached(|| {
            let mut p = locked(&self.0)?;
            let store = p.get_store(version)?;
            collect(store.as_ref(), &prefix)
        })
        .py(py)
    }

    /// The counters of the last commit, by Spark's names.
    fn metrics(&self, py: Python<'_>) -> PyResult<HashMap<&'static str, f64>> {
        let m = py.run_detached(|| Ok(locked(&self.0)?.metrics())).py(py)?;
        Ok(metrics_dict(&m))
    }
}

/// The schema rows are conformed to: Spark's types, every column nullable.
fn input_schema(schema: PySchema) -> SchemaRef {
    let s = spark_input_schema(&schema.into_inner());
    Arc::new(Schema::new(
        s.fields()
            .iter()
            .map(|f| Field::new(f.name(), f.data_type().clone(), true))
            .collect::<Vec<_>>(),
    ))
}

/// A table as one batch of `schema`.
fn one_batch(table: PyTable, schema: &SchemaRef) -> Result<RecordBatch> {
    let (batches, _) = table.into_inner();
    let conformed = batches
        .into_iter()
        .map(|b| conform(b, schema))
        .collect::<Result<Vec<_>>>()?;
    Ok(arrow_select::concat::concat_batches(schema, &conformed)?)
}

fn table(py: Python<'_>, batch: RecordBatch) -> PyResult<Bound<'_, PyAny>> {
    let schema = batch.schema();
    PyTable::try_new(vec![batch], schema)?.into_pyarrow(py)
}

/// A watermark's `(column, "10 minutes")` with its delay in milliseconds.
fn watermark(w: Option<(String, String)>) -> Result<Option<(String, i64)>> {
    w.map(|(c, delay)| match interval_text_micros(&delay)? {
        Some(m) if m >= 0 => Ok((c, m / 1000)),
        _ => Err(FerroError::Analysis(format!(
            "the watermark delay '{delay}' of `{c}` is not an interval such as '10 minutes'"
        ))),
    })
    .transpose()
}

fn locked_op<'a, T>(m: &'a Mutex<T>) -> Result<std::sync::MutexGuard<'a, T>> {
    m.lock()
        .map_err(|_| FerroError::Internal("a streaming operator's lock is poisoned".into()))
}

/// One partition of a stream-stream join.
#[pyclass(name = "StreamStreamJoin", module = "ferrospark._native", frozen)]
pub(crate) struct PyStreamStreamJoin {
    join: Mutex<PartitionedStreamJoin>,
    left: SchemaRef,
    right: SchemaRef,
}

#[pymethods]
impl PyStreamStreamJoin {
    /// Opens the join of `left_schema` and `right_schema` rows under `checkpoint`.
    #[new]
    #[pyo3(signature = (checkpoint, left_schema, right_schema, left_keys, right_keys, how, condition=None, left_watermark=None, right_watermark=None, conf=None, operator_id=0, partition_id=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        checkpoint: String,
        left_schema: PySchema,
        right_schema: PySchema,
        left_keys: Vec<String>,
        right_keys: Vec<String>,
        how: &str,
        condition: Option<PyExpr>,
        left_watermark: Option<(String, String)>,
        right_watermark: Option<(String, String)>,
        conf: Option<HashMap<String, String>>,
        operator_id: u64,
        partition_id: Option<u32>,
    ) -> PyResult<Self> {
        let cfg = config_from(py, conf)?;
        let join_type = match how.to_ascii_lowercase().replace('_', "").as_str() {
            "inner" => StreamJoinType::Inner,
            "left" | "leftouter" => StreamJoinType::LeftOuter,
            "right" | "rightouter" => StreamJoinType::RightOuter,
            "full" | "fullouter" | "outer" => StreamJoinType::FullOuter,
            "semi" | "leftsemi" => StreamJoinType::LeftSemi,
            other => {
                return Err(FerroError::Config(format!(
                    "how is '{other}': a stream-stream join is inner, left, right, full or semi"
                )))
                .py(py)
            }
        };
        let (left, right) = (input_schema(left_schema), input_schema(right_schema));
        let spec = StreamJoinSpec {
            left_schema: left.clone(),
            right_schema: right.clone(),
            left_keys,
            right_keys,
            join_type,
            condition: condition.map(|c| c.0),
            left_watermark: watermark(left_watermark).py(py)?,
            right_watermark: watermark(right_watermark).py(py)?,
        };
        let join = py
            .run_detached(|| {
                PartitionedStreamJoin::open(
                    spec,
                    std::path::Path::new(&checkpoint),
                    operator_id,
                    partition_id,
                    &cfg,
                )
            })
            .py(py)?;
        Ok(Self {
            join: Mutex::new(join),
            left,
            right,
        })
    }

    /// The join keys, (left, right), the condition's equalities included.
    fn keys(&self, py: Python<'_>) -> PyResult<(Vec<String>, Vec<String>)> {
        let j = locked_op(&self.join).py(py)?;
        let (l, r) = j.keys();
        Ok((l.to_vec(), r.to_vec()))
    }

    /// The rows batch `batch_id` emits for these inputs.
    #[pyo3(signature = (batch_id, left=None, right=None))]
    fn process<'py>(
        &self,
        py: Python<'py>,
        batch_id: u64,
        left: Option<PyTable>,
        right: Option<PyTable>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let out = py
            .run_detached(|| {
                let l = left.map(|t| one_batch(t, &self.left)).transpose()?;
                let r = right.map(|t| one_batch(t, &self.right)).transpose()?;
                locked_op(&self.join)?.process(batch_id, l.as_ref(), r.as_ref())
            })
            .py(py)?;
        table(py, out)
    }

    /// [`Self::process`] under the query's watermarks `(eviction, late)` in ms (`None`
    /// before it has one), kept by the driver over every partition.
    #[pyo3(signature = (batch_id, left, right, marks))]
    fn process_under<'py>(
        &self,
        py: Python<'py>,
        batch_id: u64,
        left: Option<PyTable>,
        right: Option<PyTable>,
        marks: Option<(i64, i64)>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let out = py
            .run_detached(|| {
                let l = left.map(|t| one_batch(t, &self.left)).transpose()?;
                let r = right.map(|t| one_batch(t, &self.right)).transpose()?;
                locked_op(&self.join)?.process_under(
                    batch_id,
                    l.as_ref(),
                    r.as_ref(),
                    marks.map(batch_marks),
                )
            })
            .py(py)?;
        table(py, out)
    }

    /// The join's counters after the last batch, its four stores' added up, by Spark's
    /// names.
    fn metrics(&self, py: Python<'_>) -> PyResult<HashMap<&'static str, f64>> {
        let m = py
            .run_detached(|| Ok(locked_op(&self.join)?.metrics()))
            .py(py)?;
        Ok(metrics_dict(&m))
    }
}

fn batch_marks((eviction, late): (i64, i64)) -> BatchWatermark {
    BatchWatermark { eviction, late }
}

/// A query's watermarks across micro-batches, kept by the driver of a query whose operators
/// run in many tasks.
#[pyclass(name = "Watermarks", module = "ferrospark._native", frozen)]
pub(crate) struct PyWatermarks(Mutex<BatchWatermarks>);

#[pymethods]
impl PyWatermarks {
    /// The watermarks of inputs with `delays` (watermark delay strings) kept in `dir`.
    #[new]
    #[pyo3(signature = (dir, delays, conf=None))]
    fn new(
        py: Python<'_>,
        dir: String,
        delays: Vec<String>,
        conf: Option<HashMap<String, String>>,
    ) -> PyResult<Self> {
        let cfg = config_from(py, conf)?;
        let delays = delays
            .into_iter()
            .map(|d| Ok(watermark(Some((String::new(), d)))?.map_or(0, |w| w.1)))
            .collect::<Result<Vec<_>>>()
            .py(py)?;
        let policy = WatermarkPolicy::from_config(&cfg).py(py)?;
        Ok(Self(Mutex::new(BatchWatermarks::new(
            dir.into(),
            delays,
            policy,
        ))))
    }

    /// Starts batch `batch_id`: `(eviction, late)` in ms, `None` without watermarked inputs.
    fn begin(&self, py: Python<'_>, batch_id: u64) -> PyResult<Option<(i64, i64)>> {
        py.run_detached(|| {
            Ok(locked_op(&self.0)?
                .begin(batch_id)?
                .map(|m| (m.eviction, m.late)))
        })
        .py(py)
    }

    /// Notes that input `input` saw an event at `micros` in this batch.
    fn observe(&self, py: Python<'_>, input: usize, micros: i64) -> PyResult<()> {
        locked_op(&self.0).py(py)?.observe_micros(input, micros);
        Ok(())
    }

    /// Ends batch `batch_id`: the next batch's watermark is computed and saved.
    fn end(&self, py: Python<'_>, batch_id: u64) -> PyResult<()> {
        py.run_detached(|| locked_op(&self.0)?.end(batch_id)).py(py)
    }
}

/// One partition of a streaming session window aggregation.
#[pyclass(
    name = "SessionWindowAggregation",
    module = "ferrospark._native",
    frozen
)]
pub(crate) struct PySessionWindowAggregation {
    agg: Mutex<PartitionedSessionWindow>,
    input: SchemaRef,
}

#[pymethods]
impl PySessionWindowAggregation {
    /// Opens the aggregation of `schema` rows under `checkpoint`; `gap` is interval text or
    /// a per-row expression.
    #[new]
    #[pyo3(signature = (checkpoint, schema, time, gap_text, gap_expr, by, aggs, watermark=None, output_mode="append", conf=None, operator_id=0, partition_id=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        checkpoint: String,
        schema: PySchema,
        time: String,
        gap_text: Option<String>,
        gap_expr: Option<PyExpr>,
        by: Vec<String>,
        aggs: Vec<CallSpec>,
        watermark: Option<(String, String)>,
        output_mode: &str,
        conf: Option<HashMap<String, String>>,
        operator_id: u64,
        partition_id: Option<u32>,
    ) -> PyResult<Self> {
        let cfg = config_from(py, conf)?;
        let input = input_schema(schema);
        let gap = match (gap_text, gap_expr) {
            (Some(t), _) => SessionGap::from_text(&t).py(py)?,
            (None, Some(e)) => SessionGap::PerRow(e.0),
            (None, None) => {
                return Err(FerroError::Config("a session window needs a gap".into())).py(py)
            }
        };
        let spec = SessionWindowSpec {
            schema: input.clone(),
            time,
            gap,
            keys: by,
            aggs: calls_from(aggs),
            watermark: self::watermark(watermark).py(py)?,
            output_mode: OutputMode::parse(output_mode).py(py)?,
        };
        let agg = py
            .run_detached(|| {
                PartitionedSessionWindow::open(
                    spec,
                    std::path::Path::new(&checkpoint),
                    operator_id,
                    partition_id,
                    &cfg,
                )
            })
            .py(py)?;
        Ok(Self {
            agg: Mutex::new(agg),
            input,
        })
    }

    /// The sessions batch `batch_id` emits for `table` (`None`: a batch without data).
    #[pyo3(signature = (batch_id, table=None))]
    fn process<'py>(
        &self,
        py: Python<'py>,
        batch_id: u64,
        table: Option<PyTable>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let out = py
            .run_detached(|| {
                let b = table.map(|t| one_batch(t, &self.input)).transpose()?;
                locked_op(&self.agg)?.process(batch_id, b.as_ref())
            })
            .py(py)?;
        self::table(py, out)
    }

    /// [`Self::process`] under the query's watermarks `(eviction, late)` in ms.
    #[pyo3(signature = (batch_id, table, marks))]
    fn process_under<'py>(
        &self,
        py: Python<'py>,
        batch_id: u64,
        table: Option<PyTable>,
        marks: Option<(i64, i64)>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let out = py
            .run_detached(|| {
                let b = table.map(|t| one_batch(t, &self.input)).transpose()?;
                locked_op(&self.agg)?.process_under(batch_id, b.as_ref(), marks.map(batch_marks))
            })
            .py(py)?;
        self::table(py, out)
    }

    /// The state store's counters after the last batch, with the operator's timings, by
    /// Spark's names.
    fn metrics(&self, py: Python<'_>) -> PyResult<HashMap<&'static str, f64>> {
        let m = py
            .run_detached(|| Ok(locked_op(&self.agg)?.metrics().clone()))
            .py(py)?;
        Ok(metrics_dict(&m))
    }
}

/// `table`'s rows per partition as Spark's `repartition(n, *keys)` routes them (one table per
/// partition, each in the input's schema; with `only`, that partition's alone, the others
/// empty); `None` when a key's type is one whose Spark hash ferrospark does not compute, so
/// Spark must route the rows.
#[pyfunction]
#[pyo3(signature = (table, keys, n, only=None))]
pub(crate) fn spark_hash_split(
    py: Python<'_>,
    table: PyTable,
    keys: Vec<String>,
    n: usize,
    only: Option<usize>,
) -> PyResult<Option<Vec<Bound<'_, PyAny>>>> {
    let (batches, schema) = table.into_inner();
    let split = py
        .run_detached(|| -> Result<Option<Vec<Vec<RecordBatch>>>> {
            let idx = keys
                .iter()
                .map(|k| ferrospark_expr::resolve_column(&schema, k))
                .collect::<Result<Vec<_>>>()?;
            let mut parts: Vec<Vec<RecordBatch>> = vec![Vec::new(); n.max(1)];
            for b in &batches {
                let Some(pieces) = split_by_spark_hash(b, &idx, n, only)? else {
                    return Ok(None);
                };
                for (to, piece) in parts.iter_mut().zip(pieces) {
                    if piece.num_rows() > 0 {
                        to.push(piece);
                    }
                }
            }
            Ok(Some(parts))
        })
        .py(py)?;
    let Some(parts) = split else { return Ok(None) };
    parts
        .into_iter()
        .map(|p| PyTable::try_new(p, schema.clone())?.into_pyarrow(py))
        .collect::<PyResult<Vec<_>>>()
        .map(Some)
}

/// Writes `data` to `path` whole or not at all, for a file several processes and threads may
/// write at once: a temporary file of the caller's process and thread, synced, renamed over
/// `path`.
#[pyfunction]
pub(crate) fn write_file_atomic(
    py: Python<'_>,
    path: std::path::PathBuf,
    data: Vec<u8>,
) -> PyResult<()> {
    py.run_detached(move || ferrospark_common::atomic_file::write_atomic_shared(&path, &data))
        .py(py)
}
